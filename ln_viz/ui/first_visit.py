"""The one workaround for Streamlit's routing: a fresh server's first visit goes through app.py too."""

from __future__ import annotations


def route_first_visits_through_app() -> None:
    """Make the first visit of a fresh server through a page's own address (a bookmark of /compare)
    run app.py, the router, like every later visit, so the page gets its language switch, translated
    menu and the lecture view. Streamlit 1.67 has no supported way to say so while a pages/ folder
    sits next to the main script: until some session has run st.navigation, it treats that folder
    the old way (multipage v1: `PagesManager.uses_pages_directory`, decided when the first session
    starts, streamlit/runtime/pages_manager.py) and runs the page alone. st.navigation turns that
    mode off for the server; this does the same before any session exists. Called once, by app.py's
    lifespan; tests/test_router.py fails when Streamlit's behaviour changes."""
    from streamlit.runtime.pages_manager import PagesManager

    PagesManager.uses_pages_directory = False
