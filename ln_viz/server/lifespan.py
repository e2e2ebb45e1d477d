"""The server's worker processes started early, once per server, and its garbage collected: what app.py's
lifespan starts (through ln_viz.ui.server, which hands it the server's Runner and Init lab pool)."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ln_viz.runner import Runner

log = logging.getLogger(__name__)

_prewarm_lock = threading.Lock()
_prewarmed = False
# set once the prewarm thread has made the Runner (importing the store, the recorder, pandas), or failed to: a
# visit's script waits for it
_imported = threading.Event()


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


# seconds without a training run before the Init lab's workers start; LN_VIZ_POOL_QUIET_S overrides it (the
# browser tests set 0: their servers would otherwise each wait this long before the workers they count settle)
QUIET_S = float(os.environ.get("LN_VIZ_POOL_QUIET_S", "15"))
# LN_VIZ_WARM_INIT_LAB=0: no Init lab workers at start (they start when its page first measures); the test servers
# that never open the Init lab set it, as each warm pool cost them seconds of both cores at every server start
WARM_INIT_LAB = os.environ.get("LN_VIZ_WARM_INIT_LAB", "1") != "0"


def wait_quiet(busy: Callable[[], bool], quiet_s: float, most_s: float, poll_s: float = 0.25) -> bool:
    """Return once `busy()` has been False for `quiet_s` seconds in a row (True), or after `most_s` (False).
    The Init lab's workers wait for it: a newcomer's first Start comes a few seconds after the training
    worker is warm, and a pool importing torch on both cores then (it used to start the moment the runner
    was idle) cost the first lesson about 3 s of its 10 (benchmarks/aha.py: servers 1 and 4 of 5)."""
    start = time.monotonic()
    quiet_since: float | None = None
    while (now := time.monotonic()) - start < most_s:
        if busy():
            quiet_since = None
        elif quiet_since is None:
            quiet_since = now
        elif now - quiet_since >= quiet_s:
            return True
        time.sleep(poll_s)
    return False


def wait_imported(timeout: float = 60.0) -> None:
    """Wait until the prewarm thread has made the Runner (at once without a prewarm: AppTest). A script that
    ran meanwhile could find a module half imported by that thread: plotly checks `sys.modules` for pandas, and
    called a half-made one's `pd.Series` (an AttributeError on the page, seen on a loaded machine)."""
    if _prewarmed:
        _imported.wait(timeout)


def _prewarm(get_runner: Callable[[], Runner], warm_init_lab_pool: Callable[[], None]) -> None:
    t0 = time.monotonic()
    try:
        try:
            runner = get_runner()  # spawns the warm training worker: the default page's Start waits for it
        finally:
            _imported.set()
        runner.wait_warm(120)
        runner_s = time.monotonic() - t0
        # Then the Init lab's pool (its default scenario ships measured), once no run has trained for
        # QUIET_S (at most a minute's wait), so a first Start keeps both cores.
        if WARM_INIT_LAB:
            wait_quiet(runner.busy, QUIET_S, 60.0)
            warm_init_lab_pool()
        print(
            f"ln-viz: workers ready: training {runner_s:.1f} s, Init lab {time.monotonic() - t0:.1f} s after start",
            flush=True,
        )
    except Exception:  # noqa: BLE001 -- a speed-up only: pages start what they need themselves
        log.exception("ln-viz: could not warm the workers")
