"""What the store and run-file tests share: a tiny real run's config, and run equality bit for bit."""

import numpy as np

from ln_viz.config import RunConfig
from ln_viz.schema import PROBE_NAMES
from ln_viz.snapshot import RunData

TINY = RunConfig(depth=2, d_model=16, heads=2, seq_len=16, batch_size=4, steps=30, probe_every=5, eval_every=10)


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
