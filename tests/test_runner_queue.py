"""The runner's fair queue (ln_viz.runner.queue), without processes: real RunHandles, a scheduler loop
that does what Runner._schedule and _finish do with the queue (take the next run when a slot frees,
end the oldest running run), and the places a queued run's view would show.

The runner's own test of the same rule, with real workers, is tests/test_runner.py::test_owners_take_turns.
"""

from __future__ import annotations

import itertools
import threading
import types

import pytest

from ln_viz.config import RunConfig
from ln_viz.runner.handle import Outcome, RunHandle
from ln_viz.runner.queue import FairQueue

CFG = RunConfig(depth=2, d_model=32, heads=2, seq_len=32, batch_size=8, steps=40)
_ids = itertools.count()
_WORKER = types.SimpleNamespace(warm=False)  # attach() reads only whether the worker is warm


def handle(owner: str | None) -> RunHandle:
    run_id = f"r{next(_ids)}"
    return RunHandle(
        run_id, CFG, lock=threading.RLock(), queue_position=lambda h: None, request_stop=lambda *a: None, owner=owner
    )


class Slots:
    """The runner's use of its queue: `slots` runs train at once; `end_oldest` ends the run that started
    first and gives its slot to the next run, as _finish then _schedule do."""

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self.queue = FairQueue()
        self.active: list[RunHandle] = []  # in the order they started
        self.started: list[RunHandle] = []

    def start(self, *owners: str | None) -> list[RunHandle]:
        runs = [handle(o) for o in owners]
        for h in runs:
            self.queue.append(h)
            self.fill()
        return runs

    def fill(self) -> None:
        while self.queue and len(self.active) < self.slots:
            h = self.queue.pop_next(self.active)
            h.attach(_WORKER, 1, float("inf"))  # type: ignore[arg-type]
            self.active.append(h)
            self.started.append(h)

    def end_oldest(self) -> None:
        h = self.active.pop(0)
        h.finish(Outcome("completed"))
        self.fill()

    def places(self) -> dict[RunHandle, int | None]:
        return {h: self.queue.position(h, self.active, self.slots) for h in self.queue}


def test_a_later_owners_run_starts_second_not_seventh() -> None:
    """The issue's case: owner X queues 6 runs, then owner Y 1, one slot: Y's goes next."""
    s = Slots(1)
    xs = s.start(*["x"] * 6)
    (y,) = s.start("y")
    assert s.started == [xs[0]]
    assert s.queue.position(y, s.active, 1) == 1  # what Y's page says: next
    assert [s.queue.position(x, s.active, 1) for x in xs[1:]] == [2, 3, 4, 5, 6]
    s.end_oldest()
    assert s.started == [xs[0], y]
    while s.queue:
        s.end_oldest()
    assert s.started == [xs[0], y, *xs[1:]]  # one owner's own runs keep their order


def test_without_owners_the_queue_is_first_come_first_served() -> None:
    """A run started without an owner is its own owner: such runs start in the order they came."""
    s = Slots(1)
    runs = s.start(*[None] * 5)
    assert [s.queue.position(h, s.active, 1) for h in runs[1:]] == [1, 2, 3, 4]
    while s.queue:
        s.end_oldest()
    assert s.started == runs


def test_owners_take_turns_and_the_fewest_running_goes_first() -> None:
    s = Slots(2)
    xs = s.start(*["x"] * 4)  # x0 and x1 take both slots
    ys = s.start("y", "y")
    (z,) = s.start("z")
    assert s.started == xs[:2]
    s.end_oldest()  # x:1 running, y and z none, neither served yet: z, with one run queued to y's two
    assert s.started[-1] == z
    s.end_oldest()  # x:0, z:1, y:0: y was never served, x was: y
    assert s.started[-1] == ys[0]
    s.end_oldest()  # z:0 (its run ended), y:1, x:0: x
    assert s.started[-1] == xs[2]


def test_a_visitors_start_is_not_behind_other_tabs_seed_queues() -> None:
    """Issue 32, hostile M6: four tabs (one person's) queue eight seed runs each, then a visitor presses
    Start; two slots. The visitor's run is next (place 1) and starts at the first free slot; it waited
    for three of the tabs' runs (43.8 s), as each new tab, never served, came before it by age."""
    s = Slots(2)
    tabs = [s.start(*[f"tab{i}"] * 8) for i in range(4)]
    (visitor,) = s.start("visitor")
    assert s.started == tabs[0][:2]
    assert s.places()[visitor] == 1
    s.end_oldest()
    assert s.started[-1] is visitor
    while s.queue:  # and the tabs still take turns among themselves
        s.end_oldest()
    assert [h.owner for h in s.started[3:7]] == ["tab1", "tab2", "tab3", "tab0"]


@pytest.mark.parametrize("slots", [1, 2, 3])
def test_queue_places_are_the_order_runs_start_in(slots: int) -> None:
    """Every place shown is kept: with runs ending in the order they started, the run at place 1 is the
    next to start, and each run starts when its place said, across owners queueing at different times."""
    s = Slots(slots)
    s.start(*["x"] * 6)
    s.start("y", "y", "y")
    s.start(None, "z", "x", "z", None)
    promised = s.queue.order(s.active, slots)
    assert [s.places()[h] for h in promised] == list(range(1, len(promised) + 1))
    n = len(s.started)
    while s.queue:
        s.end_oldest()
    assert s.started[n:] == promised


def test_a_stopped_run_leaves_the_queue_and_the_places_close_up() -> None:
    s = Slots(1)
    x0, x1, x2 = s.start("x", "x", "x")
    (y,) = s.start("y")
    assert s.places() == {y: 1, x1: 2, x2: 3}
    s.queue.remove(y)
    assert s.places() == {x1: 1, x2: 2}
    with pytest.raises(IndexError):
        FairQueue().pop_next([])
    assert s.queue.clear() == [x1, x2] and not s.queue
