"""The benchmarks keep running (each as `python -m benchmarks.NAME` from the root, as their docstrings say): their
quick modes, on tiny sizes (the figures themselves are not checked)."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # trains and spawns workers for tens of seconds
def test_benchmark_quick_mode_prints_and_writes_its_table(tmp_path):
    out = tmp_path / "bench.json"
    sections = ["--only", "steps", "--only", "mfu", "--only", "start", "--only", "payload"]
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench", "--quick", "--repeats", "1", *sections, "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert set(result) >= {"steps", "mfu", "start", "payload"}
    row = result["steps"]["depth2_d32"]
    assert row["plain"]["median"] > 0 and row["probes_every_10"]["median"] > 0
    assert "median" in row["tensorboard_every_10"]  # the TensorBoard reference ran too
    assert "median" in row["consecutive_every_10_vs_off_pct"]  # and the probes' cost as a run trains
    assert "median" in row["cycle_cost_every_10_pct"]  # and read off its probe cycles
    assert result["payload"]["live_refresh_bytes"] > 0
    assert "steps/s" in proc.stdout and "first snapshot" in proc.stdout


def test_the_per_cycle_cost_is_the_probe_step_and_its_after_effect_over_each_cycle_s_own_quiet_steps():
    """benchmarks.bench.cycle_share on made-up step times: 10 ms steps, a probe step 15 ms over them, the step after
    it 2 ms over: 17 % of a cycle. A cycle that ran twice as slow throughout (a slow spell) weighs in at its own
    baseline, and leaves the share as it was; a partial cycle at the end is not counted."""
    from benchmarks.bench import cycle_share

    def cycle(scale: float) -> list[tuple[float, bool]]:
        return [(scale * t, k == 0) for k, t in enumerate([0.025, 0.012] + [0.010] * 8)]

    pct, own, after = cycle_share(cycle(1.0) * 3 + [(0.025, True), (0.01, False)])
    assert pct == pytest.approx(17.0) and own == pytest.approx(15.0) and after == pytest.approx(2.0)
    pct, own, after = cycle_share(cycle(1.0) + cycle(2.0))
    assert pct == pytest.approx(17.0) and own == pytest.approx(22.5)  # 15 and 30 ms over their own baselines
    assert all(map(math.isnan, cycle_share([(0.01, False)] * 12)))  # no probe step: nothing to read


def test_the_per_cycle_cost_of_probes_that_cost_nothing_is_nothing_when_step_times_are_skewed():
    """Step times are skewed (a slow step now and then; at 6 x 64 the median quiet step 49.4 ms, the mean 52.7):
    made-up cycles of 10 ms steps with one 20 ms step, the slow one at each position of the cycle in turn, the
    probe step included, so the probes cost nothing. Against a median baseline the slow step in the probe's
    window was charged to the probes (+10 ms a cycle, where its turn among the quiet steps gave nothing back):
    the mean gives 0. A block's first step after the other loop's (`fresh`) is left out of the baseline."""
    from benchmarks.bench import cycle_share

    times = []
    for slow in range(10):
        times += [(0.020 if k == slow else 0.010, k == 0) for k in range(10)]
    pct, own, after = cycle_share(times)
    assert pct == pytest.approx(0.0, abs=1e-9) and own == pytest.approx(0.0, abs=1e-9)
    assert after == pytest.approx(0.0, abs=1e-9)
    cold = [(0.010, k == 0) for k in range(10)] * 3
    fresh = frozenset([5, 15, 25])  # a cold 30 ms first step of a block, among the quiet ones
    cold = [(0.030, p) if i in fresh else (t, p) for i, (t, p) in enumerate(cold)]
    assert cycle_share(cold, fresh=fresh)[0] == pytest.approx(0.0, abs=1e-9)
    assert cycle_share(cold)[0] < -5  # counted (-6.7 %), it would make the probes look cheaper than free


@pytest.mark.slow  # six tiny runs in a subprocess: about 10 s
def test_dyt_table_quick_mode_prints_its_table(tmp_path):
    out = tmp_path / "dyt.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.dyt_table", "--quick", "--jobs", "1", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(out.read_text())["rows"]
    assert sorted((r["norm_type"], r["lr"]) for r in rows) == sorted(
        (n, lr) for n in ("layernorm", "dyt") for lr in (1e-3, 3e-3, 1e-2)
    )
    for r in rows:  # DyT's saturated share is a fraction; LayerNorm has none
        assert (r["saturated"] is None) == (r["norm_type"] == "layernorm")
        assert r["saturated"] is None or 0 <= r["saturated"] <= 1
    lines = proc.stdout.splitlines()
    assert sum(line.startswith("|") for line in lines) == 5 and "s wall" in lines[-1]  # header, rule, 3 lrs
