"""The server's Init lab workers wait for a quiet spell, so a newcomer's first Start, a few seconds after the
training worker is warm, does not share both cores with a pool importing torch (issue 32's "aha" time)."""

from __future__ import annotations

import threading
import time

from ln_viz.server.lifespan import wait_quiet


def test_a_start_soon_after_the_warm_worker_holds_the_pool_back_until_the_runs_end_and_a_quiet_spell_passes() -> None:
    # idle for 0.15 s (a newcomer reading the page), then training for 0.4 s, then idle again
    t0 = time.monotonic()

    def busy() -> bool:
        return 0.15 <= time.monotonic() - t0 < 0.55

    assert wait_quiet(busy, quiet_s=0.3, most_s=5.0, poll_s=0.01)
    waited = time.monotonic() - t0
    assert 0.85 <= waited < 2.0  # after the runs ended (0.55 s) and 0.3 s of quiet; not at 0.3 s, before the Start


def test_a_server_that_never_goes_quiet_warms_the_pool_after_the_longest_wait() -> None:
    t0 = time.monotonic()
    assert not wait_quiet(lambda: True, quiet_s=0.1, most_s=0.3, poll_s=0.01)
    assert 0.3 <= time.monotonic() - t0 < 1.0


def test_an_idle_server_warms_the_pool_after_one_quiet_spell() -> None:
    t0 = time.monotonic()
    done = threading.Event()
    assert wait_quiet(done.is_set, quiet_s=0.2, most_s=5.0, poll_s=0.01)
    assert 0.2 <= time.monotonic() - t0 < 1.0
