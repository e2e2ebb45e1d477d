"""The `ray` executor on a Ray cluster this test starts itself (`ray start --head` on 127.0.0.1, in its
own process group) and ends by that group: same final losses as `local`, Stop within ~2 s, a killed
worker fails its cell only, and no Ray process is left behind. Needs requirements-ray.txt."""

from __future__ import annotations

import pytest

pytest.importorskip("ray")

from ln_viz.config import RunConfig  # noqa: E402
from ln_viz.sweep.driver import SweepRun  # noqa: E402
from ln_viz.sweep.local import LocalExecutor  # noqa: E402
from ln_viz.sweep.ray_exec import RayExecutor, disconnect  # noqa: E402
from ln_viz.sweep.spec import SweepConfig  # noqa: E402

from .ray_cluster import HeadNode  # noqa: E402
from .test_sweep import crash_one_cell_then_stop  # noqa: E402

pytestmark = pytest.mark.slow
TINY = RunConfig(depth=1, d_model=16, heads=2, seq_len=16, batch_size=4)


@pytest.fixture(scope="module")
def cluster():
    """A head node on 127.0.0.1 (tests/ray_cluster.py: `ray start --head --block` in its own process
    group, 2 CPUs); yields its address; then ends its group and every process it started, by id."""
    head = HeadNode(cpus=2).start()
    try:
        yield head.address
    finally:
        disconnect()
        head.stop()
        assert not head.left, f"Ray processes left: {head.left}"


def _spec(steps: int = 8) -> SweepConfig:
    return SweepConfig(
        base=TINY, norm_position=("post", "pre"), lr=(1e-3, 1e-2), warmup_steps=(0,), depth=(1,), steps=steps
    )


def test_ray_gives_the_same_final_losses_as_local(cluster):
    spec = _spec()
    ray_sweep = SweepRun(spec, RayExecutor(address=cluster), keep_runs=True)
    ray_final = ray_sweep.run()
    local_sweep = SweepRun(spec, LocalExecutor(workers=2), keep_runs=True)
    local_final = local_sweep.run()
    assert ray_final.state == local_final.state == "done"
    assert [r.status for r in ray_final.results] == [r.status for r in local_final.results]
    for a, b in zip(ray_final.results, local_final.results):
        assert a.key == b.key
        assert a.final_loss == pytest.approx(b.final_loss, rel=1e-6, abs=1e-7)
        assert ray_sweep.runs[a.fingerprint].losses == pytest.approx(local_sweep.runs[b.fingerprint].losses, rel=1e-6)


def test_ray_stop_within_two_seconds_and_a_killed_worker_fails_its_cell(cluster):
    crash_one_cell_then_stop(RayExecutor(address=cluster), _spec(steps=3000))
