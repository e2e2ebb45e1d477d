"""The `ray` executor on a Ray cluster this test starts itself (`ray start --head` on 127.0.0.1, in its
own process group) and ends by that group: same final losses as `local`, Stop within ~2 s, a killed
worker fails its cell only, and no Ray process is left behind. Needs requirements-ray.txt."""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("ray")

from ln_viz.config import RunConfig  # noqa: E402
from ln_viz.sweep.driver import SweepRun  # noqa: E402
from ln_viz.sweep.local import LocalExecutor  # noqa: E402
from ln_viz.sweep.ray_exec import RayExecutor, disconnect  # noqa: E402
from ln_viz.sweep.spec import SweepConfig  # noqa: E402

pytestmark = pytest.mark.slow
TINY = RunConfig(depth=1, d_model=16, heads=2, seq_len=16, batch_size=4)


def _descendants(root: int) -> set[int]:
    """Every living process below `root` (by parent pid, from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, stack = set(), [root]
    while stack:
        for c in children.get(stack.pop(), []):
            if c not in out:
                out.add(c)
                stack.append(c)
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture(scope="module")
def cluster():
    """`ray start --head --block` on 127.0.0.1 at a random port, 2 CPUs, its own temp dir and session;
    yields its address; then ends its process group and every process it started, by id."""
    ray_bin = Path(sys.executable).with_name("ray")
    port = random.randint(20000, 40000)
    temp = tempfile.mkdtemp(prefix="lnvr")
    cmd = [str(ray_bin), "start", "--head", "--block", "--node-ip-address", "127.0.0.1", "--port", str(port),
           "--num-cpus", "2", "--include-dashboard=false", "--disable-usage-stats", "--temp-dir", temp]  # fmt: skip
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
    env.pop("RAY_ADDRESS", None)
    proc = subprocess.Popen(cmd, start_new_session=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    address = f"127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        assert proc.poll() is None, "ray start exited"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.5)
    time.sleep(3)  # the raylet registers with the GCS after the GCS port opens
    started = set()
    try:
        yield address
    finally:
        disconnect()
        started = _descendants(proc.pid) | {proc.pid}
        os.killpg(proc.pid, signal.SIGTERM)  # the group we started: ray start and its children
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
        time.sleep(1)
        for pid in started:  # a Ray process that left the group (setsid) is still ours, by id
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.5)
        left = [pid for pid in started if _alive(pid)]
        assert not left, f"Ray processes left: {left}"


def _spec(steps: int = 8) -> SweepConfig:
    return SweepConfig(base=TINY, norm_position=("post", "pre"), lr=(1e-3, 1e-2), warmup_steps=(0,), depth=(1,),
                       steps=steps)  # fmt: skip


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
    spec = _spec(steps=3000)  # far longer than the test waits
    executor = RayExecutor(address=cluster)
    sweep = SweepRun(spec, executor)
    thread = threading.Thread(target=sweep.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while len(executor.running_pids()) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    pids = executor.running_pids()
    assert len(pids) == 2, "two cells should be training"
    victim, pid = sorted(pids.items())[0]
    os.kill(pid, signal.SIGKILL)  # a Ray worker of the cluster this test started, by its id
    while sweep.progress().done < 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    failed = [r for r in sweep.progress().results if r.status == "failed"]
    assert len(failed) == 1 and failed[0].key == sweep.cells[victim].key
    assert thread.is_alive(), "the sweep goes on after one cell's crash"
    t0 = time.monotonic()
    sweep.stop()
    thread.join(10)
    assert not thread.is_alive()
    assert time.monotonic() - t0 < 2.0
    assert sweep.progress().state == "stopped"
