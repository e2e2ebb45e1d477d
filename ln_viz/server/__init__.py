"""What the app's server keeps for every visitor, without Streamlit: the one Runner and its Ray backend,
a browser tab's runs (`runs`), the one sweep slot and the classroom caps (`sweeps`), the run store opened
once and the stored runs the charts share (`store`), the workers started early and the garbage collector
(`lifespan`). ln_viz/ui/ holds each one for the server with `st.cache_resource` and draws it; the
services themselves are plain classes and functions, testable without a browser session."""
