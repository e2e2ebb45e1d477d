"""What the app's pages show, as data and text, without Streamlit: the Runs page's table (`runs_list`).
ln_viz/ui/ draws it; tests and scripts read it without a browser session."""
