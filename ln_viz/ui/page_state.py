"""Each page's settings kept for the session, across page switches.

Streamlit drops a widget's session-state key at the end of a run that does not draw the widget, so a
visit to another page sent Live's form, Compare's scenario and the Init lab's depth back to their
defaults, while the charts still showed the run of the old settings. A page names its settings' keys
once (`keep`); on every run the router (`carry`) copies each of them into a plain session entry while
it exists, and puts it back before the page draws when it is gone. The page then writes its URL from
its form as always, so the address bar comes back too."""

from __future__ import annotations

from collections.abc import Iterable

import streamlit as st

from ln_viz.ui import keys

_VALUES = keys.KEPT_SETTINGS  # widget key -> its last value
_KEYS = keys.KEPT_KEYS  # the widget keys the pages visited so far asked to keep
_PAGE = keys.KEPT_PAGE  # the page the last full run drew (its script hash)
_ARRIVED = keys.KEPT_ARRIVED  # this run draws another page than the last one did


def _page_now() -> str:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return ctx.page_script_hash if ctx is not None else ""


def carry() -> None:
    """Save every kept key that exists, restore every one that was dropped. Called by the router on every
    full run, before the page draws (a value set after its widget is drawn would raise); it also notes
    whether this run arrives from another page, whichever it was (Theory and Runs keep nothing)."""
    page = _page_now()
    st.session_state[_ARRIVED] = st.session_state.get(_PAGE) != page
    st.session_state[_PAGE] = page
    carry_values()


def carry_values() -> None:
    """Save every kept key that exists, restore every one that was dropped."""
    values = st.session_state.setdefault(_VALUES, {})
    for key in st.session_state.get(_KEYS, ()):
        if key in st.session_state:
            values[key] = st.session_state[key]
        elif key in values:
            st.session_state[key] = values[key]


def keep(keys: Iterable[str]) -> None:
    """Keep these widget keys across page switches from now on (a page calls it before its widgets).
    On a page's first run after another page's, its kept values are set again: a value put back during
    the other page's runs is, by now, an old one, and Streamlit sends an old value that its widget did not
    draw as no value at all, so the browser showed the widget's first option ("Pre-LN, no warm-up" in
    Live's preset box, after a scenario was picked on Compare) while the server read "your own settings".
    Any other page counts, not only one that keeps settings: after Start, Theory and back, the browser held
    every field at its widget's minimum (Post-LN, 1 layer, d_model 4, lr 1e-5) and sent them with the next
    click (Stop), which wrote them into the form and the address (UX round 4, H1)."""
    keys = list(keys)
    st.session_state.setdefault(_KEYS, set()).update(keys)
    carry_values()
    if st.session_state.get(_ARRIVED, True):
        for key in keys:
            if key in st.session_state:
                st.session_state[key] = st.session_state[key]
        st.session_state[_ARRIVED] = False
