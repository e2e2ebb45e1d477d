"""The lecture view's switch: `?present=1` in the URL or the sidebar's toggle, kept for the session."""

from __future__ import annotations

import streamlit as st

from ln_viz.i18n import t
from ln_viz.ui import keys
from ln_viz.ui.language import current_lang
from ln_viz.ui.links import note_link
from ln_viz.urlstate import present_from_query


def lecture_view_on() -> bool:
    """Whether the lecture view is on: `?present=1` in the URL (kept for the session, since page switches
    drop query parameters) or the sidebar's toggle."""
    if "present" in st.query_params:
        on, notice = present_from_query(st.query_params.get_all("present"))
        st.session_state[keys.LECTURE_VIEW] = bool(on)
        note_link(notice)
    return bool(st.session_state.get(keys.LECTURE_VIEW))


def set_lecture_view(on: bool) -> None:
    """Switch the lecture view on or off for this session, and in the URL (a bookmark keeps it)."""
    st.session_state[keys.LECTURE_VIEW] = on
    if on:
        st.query_params["present"] = "1"
    elif "present" in st.query_params:
        del st.query_params["present"]


def _toggle_lecture_view() -> None:
    set_lecture_view(bool(st.session_state[keys.LECTURE_TOGGLE]))


def style_and_toggle() -> bool:
    """The frame's style on every page (whole Korean words, no modebar on touch screens, a visible focus,
    charts named for screen readers and their modebars out of the Tab order) and, in the
    lecture view (`?present=1`), larger text for a projector; Live and Compare then draw their one-screen
    layout (ln_viz.ui.lecture_view). The sidebar's toggle switches that view on (the view has its own way out)."""
    from ln_viz.ui import layout

    lecture = lecture_view_on()
    if lecture and "present" not in st.query_params:  # a page switch dropped it: the address stays a bookmark
        st.query_params["present"] = "1"
    layout.css(layout.FRAME_CSS + layout.BOX_CSS + (layout.LECTURE_TEXT_CSS if lecture else ""))
    layout.chart_names()
    st.session_state[keys.LECTURE_TOGGLE] = lecture
    st.sidebar.toggle(t("lecture.toggle", current_lang()), key=keys.LECTURE_TOGGLE, on_change=_toggle_lecture_view,
                      help=t("lecture.toggle_help", current_lang()))  # fmt: skip
    return lecture
