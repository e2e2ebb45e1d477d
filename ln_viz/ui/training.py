"""The server's one Runner and the runs this browser tab started, held for the server and the tab
(the services themselves: ln_viz.server.runs)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from ln_viz.server.runs import SessionRuns

if TYPE_CHECKING:
    from ln_viz.runner import Runner


def _shutdown(runner: Runner) -> None:
    from ln_viz.ui import reattach

    reattach.drop_all()  # the runs kept for reloads go with the runner
    runner.shutdown()
    getattr(runner.new_worker, "shutdown", lambda: None)()  # a Ray backend's host process


@st.cache_resource(show_spinner=False, on_release=_shutdown)
def get_runner() -> Runner:
    """The server's one Runner (ln_viz.server.runs.make_runner), recording into the server's store."""
    from ln_viz.server.runs import make_runner
    from ln_viz.ui.storage import store_hooks

    return make_runner(**store_hooks())


def _release(runs: SessionRuns) -> None:
    """The tab has gone (closed, or reloaded): its runs are kept a moment for its reload (ln_viz.ui.reattach), then
    stopped and forgotten."""
    from ln_viz.ui import reattach

    reattach.release(runs)


@st.cache_resource(scope="session", on_release=_release, show_spinner=False)
def session_runs() -> SessionRuns:
    """This tab's runs; a reloaded tab's, when its address names them (ln_viz.ui.reattach)."""
    from ln_viz.ui import reattach

    runs = SessionRuns(get_runner())
    reattach.adopt_from_link(runs)
    return runs
