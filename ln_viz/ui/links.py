"""Notices for the parts of a shared link that no page used."""

from __future__ import annotations

import streamlit as st

from ln_viz.urlstate import Notice, unknown_params


def note_link(notice: Notice | None) -> None:
    """Keep a link's notice for the session, once per parameter (the parsers run on every rerun)."""
    if notice is not None:
        st.session_state.setdefault("_link_notices", {})[notice.param] = notice


def link_notices(lang: str) -> list[str]:
    """The sentences for the parts of this session's first link that no page used: a parameter no page
    reads, a `lang` or `present` that is not one of the choices. The form's parameters have their own
    notices (config_form.apply_query)."""
    if "_link_unknown" not in st.session_state:  # the link the session opened with, read once
        st.session_state["_link_unknown"] = unknown_params({k: st.query_params.get_all(k) for k in st.query_params})
    notes = [*st.session_state.get("_link_notices", {}).values(), *st.session_state["_link_unknown"]]
    return [n.message(lang) for n in notes]
