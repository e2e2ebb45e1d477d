"""Live runs on a Ray cluster (issue 23): a Runner whose runs train as actors (`ln-viz run <id>`) on a
head the tests start on 127.0.0.1 (conftest.py's `ray_head`, shared by the test process's Ray tests). The same snapshots
as a local worker, Stop within 2 s, and a killed actor's process fails its run with one sentence."""

from __future__ import annotations

import os
import signal
import time

import pytest

pytest.importorskip("ray")

from ln_viz.config import RunConfig  # noqa: E402
from ln_viz.i18n import t  # noqa: E402
from ln_viz.runner import Runner
from ln_viz.runner.handle import MSG_WORKER_LOST  # noqa: E402
from ln_viz.runner.ray_worker import RayBackend  # noqa: E402
from ln_viz.server.runs import where_line  # noqa: E402
from ln_viz.sweep.ray_address import probe  # noqa: E402
from ln_viz.sweep.ray_exec import connect_here, disconnect  # noqa: E402

from .ray_cluster import alive, descendants  # noqa: E402

pytestmark = pytest.mark.slow
TINY = RunConfig(depth=2, d_model=32, heads=2, seq_len=16, batch_size=4, steps=20, probe_every=5)


@pytest.fixture(scope="module")
def ray_runner(ray_head):
    """A Runner on the session's 2-CPU loopback head (conftest.py's `ray_head`); yields (runner, backend, head)."""
    try:
        backend = RayBackend(ray_head.address, connect_here, probe)
        runner = Runner(max_concurrent=2, warm_workers=0, new_worker=backend)
        yield runner, backend, ray_head
        runner.shutdown()
        backend.shutdown()
    finally:
        disconnect()


def _losses(handle) -> list[float]:
    return list(handle.view().data.scalars["loss"])


def test_a_run_on_ray_trains_in_a_named_actor_with_the_local_workers_snapshots(ray_runner):
    runner, backend, head = ray_runner
    h = runner.start(TINY)
    assert h.wait(60), "the run on Ray did not end"
    view = h.view()
    assert view.status == "completed", view
    with Runner(max_concurrent=1, warm_workers=0) as local:
        ref = local.start(TINY)
        assert ref.wait(60)
        assert _losses(h) == _losses(ref)  # same seed, one thread: the same numbers
    # the ended run's actor gave its CPU back; the Live page's line says so once Ray's resource view has
    # caught up (Ray reports an ended actor's CPU asynchronously: CI once read "1 of 2" right after the run)
    deadline, line = time.monotonic() + 15, ""
    while time.monotonic() < deadline:
        if (line := where_line(runner, "en")) == "Runs train on the cluster, 0 of 2 CPUs busy.":
            break
        time.sleep(0.2)
    assert line == "Runs train on the cluster, 0 of 2 CPUs busy."


def test_stop_ends_a_ray_run_within_two_seconds_and_a_killed_actor_fails_its_run(ray_runner):
    runner, _, head = ray_runner
    long = RunConfig(depth=2, d_model=32, heads=2, seq_len=16, batch_size=4, steps=5000, probe_every=50)
    a, b = runner.start(long), runner.start(long)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (a.view().steps_done > 2 and b.view().steps_done > 2 and b.pid):
        time.sleep(0.1)
    assert a.view().steps_done > 2 and b.pid, "the runs did not start training on Ray"
    assert where_line(runner, "ko") == "실행은 클러스터에서 학습합니다: CPU 2개 중 2개 사용 중."
    t0 = time.monotonic()
    a.stop()
    assert a.wait(2.0), "Stop took over 2 s"
    assert a.view().status == "stopped"
    pid = b.pid
    # it trains in a process of the Ray head (its raylet's worker), not in a worker process of the Runner
    assert alive(pid) and pid in descendants(head.proc.pid)
    ray = connect_here(head.address)  # Ray's own tools find the run's actor by its name (a driver of the test's)
    named = {a["name"] for a in ray.util.list_named_actors(all_namespaces=True)}
    assert f"ln-viz run {b.run_id}" in named
    os.kill(pid, signal.SIGKILL)  # this run's actor process only
    assert b.wait(30), "a killed actor did not end its run"
    view = b.view()
    assert view.status == "failed" and view.message == MSG_WORKER_LOST
    sentence = t(view.message, "en", **view.message_params)
    assert "Ray worker or node" in sentence and "lost" in sentence and sentence.count(". ") == 0
    assert "Ray 워커나 노드를 잃었습니다" in t(view.message, "ko", **view.message_params)
    assert view.steps_done > 2  # the steps received are kept
    print(f"stop took {time.monotonic() - t0:.2f} s")
