"""A run's Ray actor (ln_viz/runner/ray_actor.py) without Ray: its poll batches the steps of a fast run (issue 32:
answered as each step came, a run of 60+ steps/s cost the server's Ray host ~1.2 ms of CPU a step)."""

from __future__ import annotations

import threading
import time

from ln_viz.runner.messages import End
from ln_viz.runner.ray_actor import POLL_EVERY_S, RunActor


def test_a_poll_carries_the_steps_of_a_tenth_of_a_second_and_an_idle_poll_answers_empty():
    actor = RunActor()
    assert actor.poll() == []  # nothing trains: "none yet" after its short wait
    stop = threading.Event()

    def steps() -> None:  # a run of ~200 steps/s
        while not stop.is_set():
            actor._put(End(stopped=False))
            time.sleep(0.005)

    threading.Thread(target=steps, daemon=True).start()
    try:
        answers = []
        for _ in range(6):
            answers.append((time.monotonic(), len(actor.poll())))
    finally:
        stop.set()
    gaps = [b[0] - a[0] for a, b in zip(answers, answers[1:])]
    assert min(gaps) >= POLL_EVERY_S * 0.9, gaps  # one answer a tenth of a second, not one a step
    assert min(n for _, n in answers[1:]) >= 5, answers  # each carries the steps trained meanwhile
