"""The runner's queue: which queued run takes the next free slot, and each queued run's true place.

Fair across owners (an owner is a browser session; a run started without one is its own owner): when a
slot frees, the run taken is the oldest queued run of the owner with the fewest runs training now;
between owners with as many, the one whose last run got a slot longest ago (never: first); then the
owner with the fewest runs queued; then the owner whose oldest queued run is oldest. So owners take
turns: one session's sixteen queued seed runs never make another session's Start wait behind all of
them, and one owner's runs keep their order.

"Fewest queued" is what keeps a visitor's one Start ahead of other tabs' seed queues (issue 32, hostile
M6): an owner is a tab, so one person's four tabs of eight seeds each were four owners that "never got a
slot", as the visitor who queued after them was, and the oldest head won: the visitor waited for three of
their runs (43.8 s). Now, among owners as far from a slot, the smaller ask goes first: a visitor's one
Start waits for no tab that has more runs queued, however many such tabs one person opens.

"Longest ago" is what makes it round-robin. With the fewest-running rule alone, one slot and owner X's
six runs queued before owner Y's one, every free slot would find X and Y at zero runs training and take
X's older run: Y's would start seventh. Now it starts second.

A queued run's place is where this rule will take it: the rule replayed against the runs training now,
each assumed to end in the order it started. With one slot (or runs that take as long as each other)
the places are exact; otherwise a place can change when runs end sooner or later than that, or when
another owner queues a run, which is why the runner refreshes every queued view on each change.
"""

from __future__ import annotations

import itertools
from collections import Counter, deque
from collections.abc import Iterable, Iterator, Mapping

from ln_viz.runner.handle import RunHandle

_NEVER = -1  # the serial of an owner that never got a slot: before any that did


class FairQueue:
    """The queued runs, in the order they arrived; `pop_next` and `position` apply the fair rule."""

    def __init__(self) -> None:
        self._arrival: dict[RunHandle, int] = {}  # queued run -> its arrival number (dicts keep order)
        self._arrivals = itertools.count()
        self._served: dict[str, int] = {}  # owner -> serial of its last run to get a slot
        self._serial = 0
        self._order: tuple[tuple, list[RunHandle]] | None = None  # the projection, and what it was made of

    def __len__(self) -> int:
        return len(self._arrival)

    def __iter__(self) -> Iterator[RunHandle]:
        return iter(list(self._arrival))

    def __contains__(self, h: object) -> bool:
        return h in self._arrival

    def append(self, h: RunHandle) -> None:
        """Queue a run behind its owner's other queued runs."""
        self._arrival[h] = next(self._arrivals)
        self._order = None

    def remove(self, h: RunHandle) -> None:
        """Drop a queued run (stopped before its turn)."""
        del self._arrival[h]
        self._order = None

    def clear(self) -> list[RunHandle]:
        """Empty the queue; the runs it held, oldest first."""
        held = list(self._arrival)
        self._arrival.clear()
        self._order = None
        return held

    def pop_next(self, active: Iterable[RunHandle]) -> RunHandle:
        """Take the run whose turn it is, given the runs training now (`active`); IndexError if empty."""
        if not self._arrival:
            raise IndexError("the queue is empty")
        counts = Counter(h.owner for h in active)
        by_owner = self._by_owner()
        heads = {owner: runs[0] for owner, runs in by_owner.items()}
        h = self._choose(heads, counts, self._served, {owner: len(runs) for owner, runs in by_owner.items()})
        self._serial += 1
        self._served[h.owner] = self._serial
        del self._arrival[h]
        self._order = None
        self._forget_idle_owners(counts, h.owner)
        return h

    def position(self, h: RunHandle, active: Iterable[RunHandle], slots: int) -> int | None:
        """A queued run's 1-based place in the order runs will get one of `slots` slots, given the
        runs training now (`active`); None when it is not queued."""
        if h not in self._arrival:
            return None
        return self.order(active, slots).index(h) + 1

    def order(self, active: Iterable[RunHandle], slots: int) -> list[RunHandle]:
        """Every queued run in the order the rule will start them (see the module's docstring)."""
        # runs training now, oldest first; one given its slot but not yet its worker counts as newest
        running = sorted(active, key=lambda r: (r.started_at is None, r.started_at or 0.0))
        made_of = (tuple(r.run_id for r in running), slots)
        if self._order is not None and self._order[0] == made_of:
            return self._order[1]
        queue = {owner: deque(runs) for owner, runs in self._by_owner().items()}
        ending = deque(r.owner for r in running)
        counts, served, serial = Counter(ending), dict(self._served), self._serial
        out: list[RunHandle] = []
        while queue:
            if len(ending) >= slots:  # the next slot frees when the oldest running run ends
                counts[ending.popleft()] -= 1
            heads = {o: runs[0] for o, runs in queue.items()}
            h = self._choose(heads, counts, served, {o: len(runs) for o, runs in queue.items()})
            out.append(queue[h.owner].popleft())
            if not queue[h.owner]:
                del queue[h.owner]
            serial += 1
            served[h.owner] = serial
            counts[h.owner] += 1
            ending.append(h.owner)
        self._order = made_of, out
        return out

    # --- the rule ------------------------------------------------------------------------------------
    def _choose(
        self,
        heads: Mapping[str, RunHandle],
        counts: Counter[str],
        served: Mapping[str, int],
        queued: Mapping[str, int],
    ) -> RunHandle:
        """The head (oldest queued run) of the owner with the fewest running, then the least recently
        served, then the fewest queued, then the oldest head."""
        owner = min(heads, key=lambda o: (counts[o], served.get(o, _NEVER), queued[o], self._arrival[heads[o]]))
        return heads[owner]

    def _by_owner(self) -> dict[str, list[RunHandle]]:
        runs: dict[str, list[RunHandle]] = {}
        for h in self._arrival:  # arrival order
            runs.setdefault(h.owner, []).append(h)
        return runs

    def _forget_idle_owners(self, counts: Counter[str], started: str) -> None:
        """Drop the serials of owners with nothing queued or training, so a long class does not keep one
        per run ever started (an ownerless run is an owner of its own)."""
        keep = {h.owner for h in self._arrival} | {o for o, n in counts.items() if n > 0} | {started}
        self._served = {o: s for o, s in self._served.items() if o in keep}
