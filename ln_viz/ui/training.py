"""The server's one Runner and the runs this browser tab started, held for the server and the tab
(the services themselves: ln_viz.server.runs)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from ln_viz.server.runs import SessionRuns

if TYPE_CHECKING:
    from ln_viz.runner import Runner


def _shutdown(runner: Runner) -> None:
    runner.shutdown()
    getattr(runner.new_worker, "shutdown", lambda: None)()  # a Ray backend's host process


@st.cache_resource(show_spinner=False, on_release=_shutdown)
def get_runner() -> Runner:
    """The server's one Runner (ln_viz.server.runs.make_runner), recording into the server's store."""
    from ln_viz.server.runs import make_runner
    from ln_viz.ui.storage import store_hooks

    return make_runner(**store_hooks())


def _release(runs: SessionRuns) -> None:
    runs.stop_all()


@st.cache_resource(scope="session", on_release=_release, show_spinner=False)
def session_runs() -> SessionRuns:
    return SessionRuns(get_runner())
