"""What the tests share: a tiny real run (its config, trained once per session and handed out as fresh
copies, so no module can change another's), the shipped demo runs, and run equality bit for bit. The
`tiny_run`, `tiny_snapshots`, `post_run` and `pre_run` fixtures in conftest.py serve these."""

import copy
import functools

import numpy as np

from ln_viz.config import RunConfig
from ln_viz.runfile import read_run_file
from ln_viz.schema import PROBE_NAMES
from ln_viz.snapshot import RunData, RunInfo, Snapshot
from ln_viz.store.transfer import DEMO_DIR
from ln_viz.train import Trainer

TINY = RunConfig(depth=2, d_model=16, heads=2, seq_len=16, batch_size=4, steps=30, probe_every=5, eval_every=10)


@functools.cache
def _trained(norm_position: str) -> tuple[RunInfo, tuple[Snapshot, ...]]:
    trainer = Trainer(TINY.replace(norm_position=norm_position))
    return trainer.info, tuple(trainer)


def tiny_snapshots(norm_position: str = TINY.norm_position) -> tuple[RunInfo, list[Snapshot]]:
    """A real run of TINY (Pre-LN unless told), probes included: its header and every step, a copy."""
    return copy.deepcopy(_trained(norm_position)[0]), copy.deepcopy(list(_trained(norm_position)[1]))


def train_tiny(norm_position: str = TINY.norm_position) -> RunData:
    """The same run as `tiny_snapshots`, gathered (what `ln_viz.train.run(TINY)` returns), a copy."""
    return RunData.from_snapshots(*tiny_snapshots(norm_position))


def demo(name: str) -> RunData:
    """A shipped demo run (ln_viz/data/demo_runs/<name>.json.gz), read now: the caller's own copy."""
    return read_run_file(DEMO_DIR / f"{name}.json.gz").data


def assert_same_run(a: RunData, b: RunData) -> None:
    """Equal scalars and float32 probe arrays, bit for bit (NaN equals NaN), and the same run state."""
    assert a.info.to_dict() == b.info.to_dict()
    for name in a.scalars:
        np.testing.assert_array_equal(
            np.asarray(a.scalars[name], np.float64),
            np.asarray(b.scalars[name], np.float64),
            err_msg=name,
        )
    assert a.probe_steps == b.probe_steps
    for name in PROBE_NAMES:
        x, y = a.probe(name), b.probe(name)
        assert x.dtype == y.dtype == np.float32
        np.testing.assert_array_equal(x, y, err_msg=name)
    assert (a.status, a.message, a.stalled_since, a.diverged_at) == (
        b.status,
        b.message,
        b.stalled_since,
        b.diverged_at,
    )
