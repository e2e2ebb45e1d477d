"""The lecture view's switch: `?present=1` in the URL or the sidebar's toggle, kept for the session."""

from __future__ import annotations

import streamlit as st

from ln_viz.i18n import t
from ln_viz.ui.language import current_lang
from ln_viz.ui.links import note_link
from ln_viz.urlstate import present_from_query


def presenter_mode_on() -> bool:
    """`?present=1` in the URL (kept for the session, since page switches drop query parameters)."""
    if "present" in st.query_params:
        on, notice = present_from_query(st.query_params.get_all("present"))
        st.session_state["_present"] = bool(on)
        note_link(notice)
    return bool(st.session_state.get("_present"))


def set_present(on: bool) -> None:
    """Switch the lecture view on or off for this session, and in the URL (a bookmark keeps it)."""
    st.session_state["_present"] = on
    if on:
        st.query_params["present"] = "1"
    elif "present" in st.query_params:
        del st.query_params["present"]


def _toggle_present() -> None:
    set_present(bool(st.session_state["present_toggle"]))


def presenter_mode() -> bool:
    """The frame's style on every page (whole Korean words, no modebar on touch screens) and, with
    `?present=1`, larger text for a projector; Live and Compare then draw their lecture view
    (ln_viz.ui.stage). The sidebar's toggle switches that view on (the view has its own way out)."""
    from ln_viz.ui import layout

    present = presenter_mode_on()
    layout.css(layout.FRAME_CSS + layout.BOX_CSS + (layout.PRESENTER_CSS if present else ""))
    st.session_state["present_toggle"] = present
    st.sidebar.toggle(t("stage.toggle", current_lang()), key="present_toggle", on_change=_toggle_present,
                      help=t("stage.toggle_help", current_lang()))  # fmt: skip
    return present
