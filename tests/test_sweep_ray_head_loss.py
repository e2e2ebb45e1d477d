"""A Ray head killed under a sweep (issue 32, H2), on a head node this test starts itself (tests/ray_cluster.py)
and ends by its process group. Its own file, apart from tests/test_sweep_ray.py: together they were the longest
file of CI's lane 1, which gives each file to one core (`--dist loadfile`), so the other core sat idle at the end.
Needs requirements-ray.txt."""

from __future__ import annotations

import signal
import threading
import time

import pytest

pytest.importorskip("ray")

from ln_viz.sweep.driver import SweepRun  # noqa: E402
from ln_viz.sweep.ray_exec import RayExecutor, disconnect  # noqa: E402
from ln_viz.sweep.spec import SweepError  # noqa: E402

from .ray_cluster import HeadNode  # noqa: E402
from .test_sweep_ray import _spec  # noqa: E402

pytestmark = pytest.mark.slow


def test_a_killed_head_ends_the_sweep_in_one_sentence_and_a_restarted_head_takes_the_next(monkeypatch):
    """Issue 32, H2, the map's sweep: its Ray driver was this process's, which Ray ended 60 s after the head
    died (exit 1) or at once on a head restarted on the same port. Now the head's SIGKILL fails the cells it
    trained and ends the sweep with one sentence within seconds, this process lives on past Ray's GCS timeout,
    and a sweep on the head restarted on the same port trains every cell. The timeout is Ray's 60 s by default;
    here 5 s (RAY_gcs_rpc_server_reconnect_timeout_s, which the Ray host keeps): a driver given 5 s ended its
    process 15 s after the head's SIGKILL (measured), so a driver back in this process would still end it."""
    gcs_timeout_s = 5
    monkeypatch.setenv("RAY_gcs_rpc_server_reconnect_timeout_s", str(gcs_timeout_s))
    head = HeadNode(cpus=2).start()
    try:
        executor = RayExecutor(address=head.address)
        sweep = SweepRun(_spec(steps=5000), executor)
        errors: list[BaseException] = []

        def run() -> None:
            try:
                sweep.run()
            except BaseException as e:  # noqa: BLE001 -- the test reads it
                errors.append(e)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 120
        while len(executor.running_pids()) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(executor.running_pids()) == 2, "no cell trained on the head"
        killed = time.monotonic()
        head.stop(signal.SIGKILL)
        thread.join(30)
        ended = time.monotonic() - killed
        assert not thread.is_alive(), "the sweep did not end after its head died"
        (e,) = errors
        assert isinstance(e, SweepError) and e.key == "sweep.err.ray_lost", e
        assert str(e).count(". ") == 0 and "stopped answering" in str(e) and "응답하지 않아" in e.message("ko")
        p = sweep.progress()
        assert p.state == "failed" and p.running == 0
        assert all(r.status == "failed" for r in p.results)  # the cells it trained: failed, not left running
        # the head restarted at once, not after Ray's timeout: a driver in this process would end on it at once
        # (or, were the restart slower than the timeout, at the timeout), so the sleep after the next sweep still
        # fails such a driver, and the restart and the sweep fill most of the wait (25 s of sleep before them)
        head = HeadNode(cpus=2, port=head.port).start()
        restarted = time.monotonic()
        done = SweepRun(_spec(), RayExecutor(address=head.address)).run()
        assert done.state == "done" and done.done == 4, done
        took = time.monotonic() - restarted
        time.sleep(max(0.0, killed + gcs_timeout_s + 20 - time.monotonic()))  # past where Ray's driver ended us
        print(f"the sweep ended {ended:.1f} s after the head's SIGKILL; a sweep on the restarted head took "
              f"{took:.1f} s; this process lived {time.monotonic() - killed:.1f} s past it")  # fmt: skip
    finally:
        disconnect()
        head.stop()
        assert not head.left, f"Ray processes left: {head.left}"
