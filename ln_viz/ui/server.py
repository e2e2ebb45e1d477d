"""The server's life around the pages: workers started early, garbage collected, a browser opened,
workers ended on shutdown."""

from __future__ import annotations

import logging
import threading
import time

from ln_viz.ui.init_lab_cache import init_lab_pool, warm_init_lab_pool
from ln_viz.ui.training import get_runner

log = logging.getLogger(__name__)


_prewarm_lock = threading.Lock()
_prewarmed = False


def prewarm() -> None:
    """Start the server's worker processes in the background, once per server: the Runner's warm
    worker first (a visitor's first Start waits for it), then, once it is ready, the Init lab's pool.
    Called by app.py's lifespan when the server starts; prints one line when all are ready."""
    global _prewarmed
    with _prewarm_lock:
        if _prewarmed:
            return
        _prewarmed = True
    threading.Thread(target=_prewarm, name="ln-viz-prewarm", daemon=True).start()
    threading.Thread(target=_collect_garbage, name="ln-viz-gc", daemon=True).start()


GC_EVERY_S = 10.0


def _collect_garbage() -> None:
    """A full garbage collection every GC_EVERY_S seconds. Streamlit's own, after every script and
    fragment run, is off (`runner.postScriptGC` in .streamlit/config.toml: with ten tabs it was 39 %
    of the server's time); figures hold reference cycles, so without any full collection memory could
    creep up between Python's rare automatic ones. One costs tens of milliseconds."""
    import gc

    while True:
        time.sleep(GC_EVERY_S)
        gc.collect()


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
    from ln_viz.sweep.ray_exec import disconnect
    from ln_viz.ui.stability_view import service

    get_runner.clear()  # on_release: Runner.shutdown
    init_lab_pool.clear()  # on_release: the pool's shutdown
    service.clear()  # on_release: the sweep stops, so the Ray driver thread is free to end the connection
    disconnect(timeout=5)


def _prewarm() -> None:
    t0 = time.monotonic()
    try:
        runner = get_runner()  # spawns the warm training worker: the default page's Start waits for it
        runner.wait_warm(120)
        runner_s = time.monotonic() - t0
        # Then the Init lab's pool (its default scenario ships measured). Not while a run trains (up to
        # a minute), so a first Start keeps both cores.
        deadline = time.monotonic() + 60
        while runner.busy() and time.monotonic() < deadline:
            time.sleep(0.5)
        warm_init_lab_pool()
        print(
            f"ln-viz: workers ready: training {runner_s:.1f} s, Init lab {time.monotonic() - t0:.1f} s after start",
            flush=True,
        )
    except Exception:  # noqa: BLE001 -- a speed-up only: pages start what they need themselves
        log.exception("ln-viz: could not warm the workers")
