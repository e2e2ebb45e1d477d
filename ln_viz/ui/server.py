"""The server's life around the pages: workers started early, garbage collected, a browser opened,
workers ended on shutdown."""

from __future__ import annotations

import logging

from ln_viz.server import lifespan
from ln_viz.ui.init_lab_cache import init_lab_pool, warm_init_lab_pool
from ln_viz.ui.training import get_runner

log = logging.getLogger(__name__)


def prewarm() -> None:
    """Start the server's worker processes in the background, once per server (ln_viz.server.lifespan):
    the Runner's warm worker, then the Init lab's pool. Called by app.py's lifespan when the server starts."""
    lifespan.prewarm(get_runner, warm_init_lab_pool)


def prepare_first_visit() -> None:
    """Make the first visit's script run cheaper, from app.py's lifespan: Streamlit's check that it runs under
    `streamlit run` is skipped (it does: this is the server's lifespan). That check, made once per process on
    the first element a script draws, walks the call stack with `inspect.stack()`, which resolves the file of
    every loaded module: ~0.5 s of the first page's draw on a loaded machine, for a warning never printed."""
    try:
        from streamlit import delta_generator

        delta_generator._use_warning_has_been_displayed = True
    except (ImportError, AttributeError):  # another Streamlit: its check runs, as before
        pass


def open_browser() -> None:
    """Open the app in the user's browser unless the server is headless, as `streamlit run` does for
    a plain script (its launcher for an st.App does not). Never fails the server's start."""
    try:
        from streamlit import cli_util, config
        from streamlit.web.server import server_util

        if config.get_option("server.headless"):
            return
        address = config.get_option("server.address") if config.is_manually_set("server.address") else None
        cli_util.open_browser(server_util.get_url(server_util.get_display_address(address) if address else "localhost"))
    except Exception:  # noqa: BLE001 -- a convenience: the URL is printed anyway
        log.exception("ln-viz: could not open a browser")


def shutdown_workers() -> None:
    """Stop every run and end every worker process of the server (when the server stops), a private Ray
    cluster's too: its helper processes outlived the server by a minute otherwise (issue 21, O1)."""
    from ln_viz.runner.process import remove_multiprocessing_folder
    from ln_viz.sweep.ray_exec import disconnect
    from ln_viz.ui.stability_view import service

    get_runner.clear()  # on_release: Runner.shutdown
    init_lab_pool.clear()  # on_release: the pool's shutdown
    service.clear()  # on_release: the sweep stops, so the Ray driver thread is free to end the connection
    disconnect(timeout=5)
    remove_multiprocessing_folder()  # the fork server's socket: the server's SIGTERM runs no exit code
