"""A sweep in progress: which cells are stored, which train now, how far, and when it will end.

`SweepRun` is what the CLI and the page hold. `run()` (blocking; the page calls it in a thread of its
own) skips the cells the store already has (resume), hands the rest to an executor, turns each
finished run into a CellResult and stores it at once through a CellSaver (ln_viz.sweep.saver), so a
killed sweep keeps what it finished and a store that refuses a write never stops the sweep: the cell
stays in memory, is stored when the store takes it again, and `Progress.store_problem` says why.
`progress()` gives a consistent copy for readers at any moment.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ln_viz.store import StoreError
from ln_viz.sweep.executors import Executor
from ln_viz.sweep.results import CellResult, CellRun, summarize
from ln_viz.sweep.saver import CellSaver
from ln_viz.sweep.spec import Cell, SweepConfig
from ln_viz.sweep.storage import SweepStore
from ln_viz.text import error_line


@dataclass(frozen=True)
class Progress:
    """A sweep at one moment."""

    total: int  # cells in the grid
    done: int  # cells with a result (stored before, or finished now)
    skipped: int  # of those, found in the store at the start (resume)
    running: int
    steps_done: int  # steps trained by this sweep so far, plus those a cell that ended early will not train
    steps_total: int  # steps this sweep has to train
    elapsed_s: float
    eta_s: float | None  # None until a rate is known
    state: str  # pending | running | done | stopped | failed
    error: str | None
    results: tuple[CellResult, ...]  # in the grid's order
    store_problem: StoreError | None = None  # why finished cells are not (all) in the store now

    @property
    def fraction(self) -> float:
        """Steps trained over steps to train, 0..1 (a progress bar)."""
        return self.steps_done / self.steps_total if self.steps_total else 1.0


def eta_seconds(steps_left: int, steps_seen: int, first_step: float | None, until: float) -> float | None:
    """Seconds left at the rate the steps have come in since the first one (at `first_step`, monotonic)
    up to `until`; None until a rate is known. From the first step, not from Start: the workers' start (a
    process each, torch imported) before it made a sweep's first ETA 3-4x too long ("about 4 min left"
    at 6 s, done 50 s later: issue 21 N25)."""
    since = until - first_step if first_step is not None else 0.0
    rate = (steps_seen - 1) / since if since > 1 and steps_seen > 1 else 0.0
    eta = steps_left / rate if rate > 0 else None
    return eta if eta is None or math.isfinite(eta) else None


@dataclass
class SweepRun:
    """One sweep of a spec on an executor, optionally stored."""

    spec: SweepConfig
    executor: Executor
    store: SweepStore | None = None
    stop_event: threading.Event = field(default_factory=threading.Event)
    keep_runs: bool = False  # keep every finished cell's full per-step losses in `runs` (tests, benchmarks)
    on_problem: Callable[[StoreError | None], None] | None = None  # a store trouble starts (or clears): say it once
    lock_wait_s: float | None = None  # at the end, how long to wait for a write lock held elsewhere (default 60 s)

    def __post_init__(self) -> None:
        self.cells: list[Cell] = self.spec.validate().cells()
        self._lock = threading.Lock()
        self._results: dict[str, CellResult] = {}
        self._runs: dict[int, CellRun] = {}
        self._todo: list[int] = list(range(len(self.cells)))
        self._skipped = 0
        self._steps = 0
        self._ended_early = 0  # steps a cell will not train: it diverged, stalled out or failed first
        self._started: float | None = None
        self._first_step: float | None = None  # when the first step came in (the workers have started)
        self._elapsed = 0.0
        self._state = "pending"
        self._error: str | None = None
        self.sweep_id: int | None = None
        self.runs: dict[str, CellRun] = {}
        self.saver: CellSaver | None = None
        if self.store is not None:
            wait = {} if self.lock_wait_s is None else {"lock_wait_s": self.lock_wait_s}
            self.saver = CellSaver(self.store, on_problem=self.on_problem, **wait)
            stored = self.store.cells(c.fingerprint for c in self.cells)
            keep = {fp: r for fp, r in stored.items() if r.status != "failed"}  # failed ones train again
            self._results.update(keep)
            self._todo = [i for i, c in enumerate(self.cells) if c.fingerprint not in keep]
            self._skipped = len(self.cells) - len(self._todo)

    @property
    def todo(self) -> list[Cell]:
        """The cells this sweep still has to train."""
        return [self.cells[i] for i in self._todo]

    def stop(self) -> None:
        """Ask the executor to stop; `run` returns within about 2 s, unfinished cells unstored."""
        self.stop_event.set()

    def run(self) -> Progress:
        """Train what is missing; return the final progress (state done, stopped or failed)."""
        with self._lock:
            self._started = time.monotonic()
            self._state = "running"
        if self.saver is not None:
            self.saver.begin(self.spec, self.executor.name)
        cells = self.todo
        try:
            self.executor.run(cells, self._on_step, self._on_end, self.stop_event)
        except Exception as e:  # noqa: BLE001 -- e.g. a Ray cluster that cannot be reached: the sweep fails, said once
            with self._lock:
                self._error = error_line(e, named=False)
                self._state = "failed"
            raise
        finally:
            with self._lock:
                self._elapsed = time.monotonic() - self._started
                if self._state == "running":
                    self._state = "stopped" if self.stop_event.is_set() else "done"
            if self.saver is not None:
                self.saver.finish(self._elapsed)
                self.sweep_id = self.saver.sweep_id
        return self.progress()

    # --- executor callbacks (the executor's thread) ----------------------------------------------
    def _on_step(self, index: int, step: int, loss: float, eval_loss: float | None, status: str) -> None:
        with self._lock:
            run = self._runs.get(index)
            if run is None:
                run = self._runs[index] = CellRun(self._todo_cell(index), started=time.monotonic())
            run.add_step(step, loss, eval_loss, status)
            self._steps += 1
            if self._first_step is None:
                self._first_step = time.monotonic()

    def _todo_cell(self, index: int) -> Cell:
        return self.cells[self._todo[index]]

    def _on_end(self, index: int, status: str, error: str | None) -> None:
        with self._lock:
            run = self._runs.pop(index, None) or CellRun(self._todo_cell(index), started=time.monotonic())
            if status == "stopped":
                self._steps -= len(run.steps)  # not a result: its steps come back when it is trained again
                return
            run.trainer_status, run.error = status, error
            self._ended_early += max(0, self.spec.steps - len(run.steps))  # no longer work to do
            run.elapsed_s = time.monotonic() - run.started
            result = summarize(run)
            self._results[result.fingerprint] = result
            if self.keep_runs:
                self.runs[result.fingerprint] = run
        if self.saver is not None:
            self.saver.put(result)

    # --- reading ---------------------------------------------------------------------------------------
    def progress(self) -> Progress:
        """A consistent copy of where the sweep is."""
        with self._lock:
            elapsed = self._elapsed if self._state not in ("running",) else time.monotonic() - (self._started or 0)
            steps_total = len(self._todo) * self.spec.steps
            steps_done = self._steps + self._ended_early
            until = (self._started or 0) + elapsed  # now while it runs, else its end
            eta = eta_seconds(steps_total - steps_done, self._steps, self._first_step, until)
            results = tuple(self._results[c.fingerprint] for c in self.cells if c.fingerprint in self._results)
            return Progress(
                total=len(self.cells),
                done=len(results),
                skipped=self._skipped,
                running=len(self._runs),
                steps_done=steps_done,
                steps_total=steps_total,
                elapsed_s=elapsed,
                eta_s=eta,
                state=self._state,
                error=self._error,
                results=results,
                store_problem=self.saver.problem if self.saver is not None else None,
            )
