"""Notices for the parts of a shared link that no page used."""

from __future__ import annotations

import streamlit as st

from ln_viz.ui import keys
from ln_viz.urlstate import Notice, unknown_params


def note_link(notice: Notice | None) -> None:
    """Keep a link's notice for the session, once per parameter (the parsers run on every rerun)."""
    if notice is not None:
        st.session_state.setdefault(keys.LINK_NOTICES, {})[notice.param] = notice


def link_notices(lang: str) -> list[str]:
    """The sentences for the parts of this session's first link that no page used: a parameter no page
    reads, a `lang` or `present` that is not one of the choices. The form's parameters have their own
    notices (config_form.apply_query)."""
    if keys.LINK_UNKNOWN not in st.session_state:  # the link the session opened with, read once
        st.session_state[keys.LINK_UNKNOWN] = unknown_params({k: st.query_params.get_all(k) for k in st.query_params})
    notes = [*st.session_state.get(keys.LINK_NOTICES, {}).values(), *st.session_state[keys.LINK_UNKNOWN]]
    return [n.message(lang) for n in notes]
