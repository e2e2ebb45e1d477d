"""The server's run store, opened once, and the Runner hooks that record into it."""

from __future__ import annotations

import logging
from typing import Any

import streamlit as st

from ln_viz.i18n import LocalizedError
from ln_viz.recorder import Recorder
from ln_viz.snapshot import RunData
from ln_viz.store import Store

log = logging.getLogger(__name__)


@st.cache_resource(show_spinner=False)
def _open_store() -> Store | None:
    try:
        return Store()
    except (LocalizedError, OSError) as e:
        log.warning("ln-viz: runs will not be stored: %s", e)
        return None


def get_store() -> Store | None:
    """The store at LN_VIZ_STORE or the user's data directory; None (and a logged reason) when it
    cannot be opened, so the app still trains and shows runs live. A store file deleted or replaced
    under the server is noticed here (one `stat`) and the file at the path now is opened instead,
    so no page keeps listing a file that is gone; `store_notice` says so."""
    store = _open_store()
    if store is None:
        return None
    try:
        if store.reopen_if_moved():
            log.warning("ln-viz: %s", store.notice)
    except LocalizedError as e:  # what is there now is no store we can open (said once, here)
        log.warning("ln-viz: runs will not be stored: %s", e)
    return store if store.usable else None


# A stored run's charts show at most this many probe steps (evenly spaced): the heatmap draws 400 columns at
# most, and at depth 48 with a probe every step a whole 10,000-step run would hold ~750 MB in the cache.
# The downloads read the whole run from the store when they are built.
SHOWN_PROBE_STEPS = 512


@st.cache_resource(show_spinner=False, max_entries=8)
def _read_run(
    _store: Store, store_path: str, generation: int, run_id: int, updated: float | None, cap: int | None
) -> RunData:
    return _store.open_run(run_id, max_probe_steps=cap)


def stored_run(store: Store, run_id: int, updated: float | None = None, whole: bool = False) -> RunData:
    """A stored run as the charts show it (at most SHOWN_PROBE_STEPS probe steps), read once and shared
    by every tab and page (Live's finished runs, Runs, Compare): the charts only read it. Keyed by the
    store's file (its path and `generation`: a file deleted or replaced under the server numbers its runs
    from 1 again, and an old id must not bring back the old file's run) and by the row's last change
    (`updated`; None for a finished run, which no longer changes). `whole`: every probe step (Compare's
    stored pair: two copies thinned apart would share only a few steps)."""
    cap = None if whole else SHOWN_PROBE_STEPS
    return _read_run(store, str(store.path), store.generation, run_id, updated, cap)


def store_notice(lang: str) -> None:
    """One red sentence on every page once the store file was deleted or replaced under the server."""
    store = _open_store()
    if store is not None:
        get_store()  # checks the file
        if store.notice is not None:
            st.error(store.notice.message(lang))


def store_problem(run_id: str) -> LocalizedError | None:
    """Why a runner's run is not (wholly) stored, for its page; None when all is well."""
    recorder = get_recorder()
    return recorder.problem(run_id) if recorder is not None else None


@st.cache_resource(show_spinner=False)
def get_recorder() -> Recorder | None:
    store = get_store()
    return Recorder(store) if store is not None else None


def store_hooks() -> dict[str, Any]:
    recorder = get_recorder()
    return recorder.hooks() if recorder is not None else {}
