"""The server's run store, opened once, and the Runner hooks that record into it."""

from __future__ import annotations

import logging
from typing import Any

import streamlit as st

from ln_viz.i18n import LocalizedError
from ln_viz.recorder import Recorder
from ln_viz.store import Store

log = logging.getLogger(__name__)


@st.cache_resource(show_spinner=False)
def get_store() -> Store | None:
    """The store at LN_VIZ_STORE or the user's data directory; None (and a logged reason) when it
    cannot be opened, so the app still trains and shows runs live."""
    try:
        return Store()
    except (LocalizedError, OSError) as e:
        log.warning("ln-viz: runs will not be stored: %s", e)
        return None


@st.cache_resource(show_spinner=False)
def get_recorder() -> Recorder | None:
    store = get_store()
    return Recorder(store) if store is not None else None


def store_hooks() -> dict[str, Any]:
    recorder = get_recorder()
    return recorder.hooks() if recorder is not None else {}
