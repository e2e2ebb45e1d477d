"""The one workaround for Streamlit's routing, `first_visit.route_first_visits_through_app` (called by
app.py's lifespan). These tests fail when the Streamlit behaviour it works around changes, so that
the workaround can go (or must change) then; tests/e2e/test_runs_e2e.py opens a fresh server by a
page's own address and finds the router's menu."""

from pathlib import Path

from streamlit.runtime.pages_manager import PagesManager
from streamlit.testing.v1 import AppTest

from ln_viz.ui import first_visit

ROOT = Path(__file__).resolve().parent.parent


def test_streamlit_decides_the_pages_folder_mode_once_on_a_class_attribute():
    saved = PagesManager.uses_pages_directory
    try:
        PagesManager.uses_pages_directory = None  # a fresh server
        PagesManager(str(ROOT / "app.py"))  # its first session
        assert PagesManager.uses_pages_directory is True  # pages/ next to app.py: the old way (v1)
        first_visit.route_first_visits_through_app()
        PagesManager(str(ROOT / "app.py"))  # the first session after the lifespan ran
        assert PagesManager.uses_pages_directory is False
    finally:
        PagesManager.uses_pages_directory = saved


def test_without_the_workaround_a_first_direct_link_bypasses_the_router():
    # AppTest sets uses_pages_directory back to None before every run, as a fresh server has it: a
    # first run at a page's address runs the page alone, without app.py's frame (the language
    # switch, the menu). If this starts failing, Streamlit routes such a visit through st.navigation
    # by itself: remove the workaround.
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=30)
    at.session_state["lang"] = "en"
    at.switch_page("pages/theory.py").run()
    assert not at.exception, at.exception
    assert at.title[0].value.startswith("Theory")
    assert not at.sidebar.radio, "the page ran inside app.py's frame"
