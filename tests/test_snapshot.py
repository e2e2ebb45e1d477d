"""RunData's bounded live copy: a long run keeps at most `max_probe_steps` probe steps, evenly spaced
from the first, the latest always in, each array still the one measured at its step."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ln_viz.config import RunConfig
from ln_viz.schema import PROBE_NAMES
from ln_viz.snapshot import RunData, RunInfo, Snapshot
from tests.runs import TINY


def probe_arrays(info: RunInfo, step: int) -> dict[str, np.ndarray]:
    """Arrays whose every value is the step, so a kept array tells which step it came from."""
    return {name: np.full(shape, step, np.float32) for name, shape in info.probe_shapes().items()}


def fill(data: RunData, probe_steps: int, every: int = 10) -> None:
    """Steps 1..(probe_steps - 1) * every, probed at step 1 and every `every`-th (as the Trainer does)."""
    for step in range(1, max(1, (probe_steps - 1) * every) + 1):
        probes = probe_arrays(data.info, step) if step == 1 or step % every == 0 else None
        snap = Snapshot(step=step, loss=2.0, lr=1e-3, grad_norm=1.0, elapsed=step / 10, steps_per_sec=10.0)
        snap.probes = probes
        data.append(snap)


@pytest.mark.parametrize("measured", [1, 2, 7, 8, 9, 64, 65, 200, 1000])
def test_a_long_run_keeps_at_most_the_bound_evenly_spaced_with_the_latest(measured: int) -> None:
    info = RunInfo.preview(TINY)
    full, live = RunData(info), RunData(info, max_probe_steps=8)
    fill(full, measured)
    fill(live, measured)
    assert len(full.probe_steps) == measured and full.probe_stride == 1  # unbounded: everything
    kept = live.probe_steps
    assert 1 <= len(kept) <= 8
    assert kept[0] == full.probe_steps[0] and kept[-1] == full.probe_steps[-1]  # first and latest
    ordinals = [full.probe_steps.index(s) for s in kept]
    stride = live.probe_stride
    assert all(k % stride == 0 for k in ordinals[:-1])  # every stride-th measured one, from the first
    assert ordinals[:-1] == list(range(0, ordinals[-1], stride))[: len(ordinals) - 1]  # none missing
    if measured <= 8:
        assert kept == full.probe_steps and stride == 1  # under the bound nothing is dropped
    else:
        assert len(kept) >= 8 // 2  # thinned by halves: never fewer than half the bound
    for name in PROBE_NAMES:
        stacked = live.probe(name)
        assert stacked.shape[0] == len(kept)
        for row, step in zip(stacked, kept):
            assert np.all(row == step), name  # each array is its own step's
    assert live.scalars["step"] == full.scalars["step"]  # scalars are never thinned


def test_a_readers_copy_survives_thinning() -> None:
    info = RunInfo.preview(TINY)
    live = RunData(info, max_probe_steps=4)
    fill(live, 4)
    copy_steps, copy_hist = list(live.probe_steps), list(live.probes["resid_hist"])
    fill_more = [probe_arrays(info, s) for s in (100, 110, 120)]
    for step, arrays in zip((100, 110, 120), fill_more):
        live.add_probe(step, arrays)
    assert live.probe_stride > 1 and len(live.probe_steps) <= 4
    assert len(copy_hist) == len(copy_steps) == 4
    for row, step in zip(copy_hist, copy_steps):
        assert np.all(row == step)


def test_the_schema_names_each_snapshot_scalar_and_a_shape_for_each_probe() -> None:
    """Snapshot carries every schema scalar; RunInfo gives every probe array its shape, from the
    schema's named dimensions; the stat indices name STAT_NAMES in order."""
    from ln_viz.schema import SCALAR_NAMES, STAT_NAMES, Stat

    assert set(SCALAR_NAMES) <= {f.name for f in dataclasses.fields(Snapshot)}
    info = RunInfo(RunConfig(depth=3), 80, 1, 3.0, None, ["ln1", "ln2"])
    shapes = info.probe_shapes()
    assert list(shapes) == list(PROBE_NAMES)
    assert shapes["norm_in_hist"] == (3, 2, 128) and shapes["grad_norm"] == (3, 6)
    assert shapes["input_stats"] == (len(STAT_NAMES),) and STAT_NAMES[Stat.FRAC_ABOVE] == "frac_above"
    assert list(RunData(info).scalars) == list(SCALAR_NAMES)
