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

_VALUES = "_kept_settings"  # widget key -> its last value
_KEYS = "_kept_keys"  # the widget keys the pages visited so far asked to keep


def carry() -> None:
    """Save every kept key that exists, restore every one that was dropped. Called before a page draws
    (a value set after its widget is drawn would raise)."""
    values = st.session_state.setdefault(_VALUES, {})
    for key in st.session_state.get(_KEYS, ()):
        if key in st.session_state:
            values[key] = st.session_state[key]
        elif key in values:
            st.session_state[key] = values[key]


def keep(keys: Iterable[str]) -> None:
    """Keep these widget keys across page switches from now on (a page calls it before its widgets)."""
    st.session_state.setdefault(_KEYS, set()).update(keys)
    carry()
