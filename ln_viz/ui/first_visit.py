"""A newcomer's first visit: the routing workaround that lets a fresh server's first visit go through app.py, and
the way from Live's first screen to the lesson (issue 32, UX round 4 M5: the first Start on a fresh server trained
Pre-LN alone, a loss going down, with no contrast and no takeaway; the lesson is Compare's Post-LN vs Pre-LN)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from ln_viz.i18n import t
from ln_viz.ui import keys


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


def lead_to_compare(row: Any, lang: str, runs: Any) -> None:
    """Live's way to the lesson, beside Start, until this tab has trained a Compare pair (`runs`: the tab's
    training.SessionRuns): one click opens Compare's lecture view on its first scenario (Post-LN vs Pre-LN, no
    warm-up) and starts both runs, so the first thing a newcomer trains is the contrast, with its question, the
    gap opening, and the takeaway."""
    if any(role.startswith("compare.") for role in runs.runs):
        return
    if row.button(t("first.lead", lang), key="lead_compare", help=t("first.lead_help", lang)):
        go_compare(lang)


def go_compare(lang: str) -> None:
    """Open Compare's lecture view on its default scenario, both runs to start as it draws."""
    from ln_viz.config import DEFAULT_COMPARE
    from ln_viz.ui import compare_view, lecture_switch, nav

    lecture_switch.set_lecture_view(True)
    compare_view.pick_scenario(DEFAULT_COMPARE)
    st.session_state[keys.START_COMPARE] = True
    st.switch_page(nav.COMPARE.file, query_params={"present": "1", "lang": lang, "cpreset": DEFAULT_COMPARE})


def start_requested() -> bool:
    """Whether Compare should start both runs as it draws (once: `go_compare` asked)."""
    return bool(st.session_state.pop(keys.START_COMPARE, False))
