"""The server's run store, opened once, the stored runs the charts share, and the Runner hooks that
record into the store, held for the server (the services themselves: ln_viz.server.store)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import streamlit as st

from ln_viz.i18n import LocalizedError
from ln_viz.recorder import Recorder
from ln_viz.server.store import RunCache, open_store, usable_store
from ln_viz.snapshot import RunData
from ln_viz.store import Store


@st.cache_resource(show_spinner=False)
def server_store() -> Store | None:
    """The server's one store, as it was opened (ln_viz.server.store.open_store); pages call `get_store`."""
    return open_store()


def get_store() -> Store | None:
    """The server's store (at LN_VIZ_STORE or the user's data directory) when it can be used now, else
    None: the app still trains and shows runs live (ln_viz.server.store.usable_store); `store_notice`
    says when the file was deleted or replaced under the server."""
    store = server_store()
    return usable_store(store) if store is not None else None


@st.cache_resource(show_spinner=False)
def run_cache() -> RunCache:
    """The server's one RunCache."""
    return RunCache()


def stored_run(store: Store, run_id: int, updated: float | None = None, steps: Sequence[int] | None = None) -> RunData:
    """A stored run as the charts show it, through the server's shared cache (RunCache.stored_run)."""
    return run_cache().stored_run(store, run_id, updated, steps)


def stored_pair(store: Store, run_ids: Sequence[int]) -> list[RunData]:
    """Compare's two stored runs with their probe steps lined up (RunCache.stored_pair)."""
    return run_cache().stored_pair(store, run_ids)


def store_notice(lang: str) -> None:
    """One red sentence on every page once the store file was deleted or replaced under the server."""
    store = server_store()
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
