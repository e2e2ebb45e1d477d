"""The server's worker processes started early, once per server, and its garbage collected: what app.py's
lifespan starts (through ln_viz.ui.server, which hands it the server's Runner and Init lab pool)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ln_viz.runner import Runner

log = logging.getLogger(__name__)

_prewarm_lock = threading.Lock()
_prewarmed = False


def prewarm(get_runner: Callable[[], Runner], warm_init_lab_pool: Callable[[], None]) -> None:
    """Start the server's worker processes in the background, once per server: the Runner's warm
    worker first (a visitor's first Start waits for it), then, once it is ready, the Init lab's pool.
    Prints one line when all are ready."""
    global _prewarmed
    with _prewarm_lock:
        if _prewarmed:
            return
        _prewarmed = True
    args = (get_runner, warm_init_lab_pool)
    threading.Thread(target=_prewarm, args=args, name="ln-viz-prewarm", daemon=True).start()
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


def _prewarm(get_runner: Callable[[], Runner], warm_init_lab_pool: Callable[[], None]) -> None:
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
