"""A run's Ray actor answers its polls in batches (issue 32, speed a room feels): one Ray call per step cost the
server's Ray driver ~1 ms a step. The actor class is plain Python; here it runs without Ray."""

from __future__ import annotations

import time

from ln_viz.config import RunConfig
from ln_viz.runner import ray_actor
from ln_viz.runner.messages import End, Info, Snap


def test_polls_answer_a_quarter_second_batch_and_lose_no_step_and_end_at_once() -> None:
    actor = ray_actor.RunActor()
    steps = 60
    actor.start(RunConfig(depth=1, d_model=16, heads=2, steps=steps, probe_every=10, eval_every=0), 1)
    got, answers, t0, ended_at = [], [], time.monotonic(), None
    while not got or not isinstance(got[-1], End):
        msgs = actor.poll()
        answers.append((time.monotonic(), len(msgs)))
        got += msgs
        assert time.monotonic() - t0 < 60, "the run did not end in a minute"
    ended_at = answers[-1][0]
    assert isinstance(got[0], Info)
    snaps = [m.snapshot.step for m in got if isinstance(m, Snap)]
    assert snaps == list(range(1, steps + 1)), "every step, once, in order"
    # answers that carried messages come at least POLL_EVERY_S apart (the last, the End, at once)
    busy = [t for t, n in answers[:-1] if n]
    gaps = [b - a for a, b in zip(busy, busy[1:], strict=False)]
    assert all(g >= ray_actor.POLL_EVERY_S - 0.02 for g in gaps), gaps
    assert len(answers) <= (ended_at - t0) / ray_actor.POLL_EVERY_S + 3
    assert max(n for _, n in answers) > 1, "a batch holds several steps"
