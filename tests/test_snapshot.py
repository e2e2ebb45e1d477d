"""RunData's bounded live copy: a long run keeps at most `max_probe_steps` probe steps, evenly spaced
from the first, the latest always in, each array still the one measured at its step."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ln_viz.config import RunConfig
from ln_viz.schema import PROBE_NAMES
from ln_viz.snapshot import RunData, RunInfo, Snapshot, aligned_probe_steps, thin_plan
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


@pytest.mark.parametrize("cap", [1, 2, 3, 5, 8, 100])
def test_the_thin_plan_is_what_a_run_capped_so_keeps_after_each_probe_step(cap: int) -> None:
    """thin_plan(n, cap) works out from n alone what RunData keeps appending n probe steps one by one
    (the store picks the steps to read with it, before decoding any array)."""
    live = RunData(RunInfo.preview(TINY), max_probe_steps=cap)
    for n in range(1, 700):
        live.add_probe(n, {})
        keep, stride = thin_plan(n, cap)
        assert (keep, stride) == (live._probe_ordinals, live.probe_stride), n
        assert [k + 1 for k in keep] == live.probe_steps  # step n is ordinal n - 1
    assert thin_plan(0, cap) == ([], 1) and thin_plan(5, None) == ([0, 1, 2, 3, 4], 1)


def test_aligned_probe_steps_keep_the_shared_steps_within_twice_the_cap() -> None:
    every_step, every_fifth = list(range(1, 1001)), [1, *range(5, 1001, 5)]
    common = sorted(set(every_step) & set(every_fifth))
    a, b = (aligned_probe_steps(own, common, 64) for own in (every_step, every_fifth))
    shared = [common[i] for i in thin_plan(len(common), 64)[0]]
    assert set(shared) <= set(a) & set(b)  # the step control's steps are in both runs
    assert len(a) <= 128 and len(b) <= 128 and set(a) <= set(every_step) and set(b) <= set(every_fifth)
    same = aligned_probe_steps(every_step, every_step, 64)
    assert same == [every_step[i] for i in thin_plan(1000, 64)[0]]  # the runs share every step: the cap alone
