"""The `local` executor: this machine's cores, one long-lived worker process per core.

Workers are the Runner's own (ln_viz.runner.process.WorkerProcess, speaking the typed messages of
ln_viz.runner.messages), spawned without the page's `__main__`, `nice` steps below the caller's
priority, one torch thread each (on 2 cores, two 1-thread runs train faster together than one 2-thread
run: ln_viz.runner.Runner). Unlike the Runner's one-process-per-run, a sweep worker is `serial`: it
trains cell after cell, since a fresh process pays 2-4 s of imports, a fifth of a 300-step cell. It
has its own workers, not the live page's Runner slots, so a sweep never queues a user's Start; in the
app its workers run at a lower priority than the Runner's (`nice` 15 against the Runner's 10), so a
Start gets the cores first. From the command line they run at the caller's priority (nice 0), as
Ray's workers do.

A worker that dies (SIGKILL, a crash in torch) closes its pipe: its cell is `failed` with how it
died, a new worker takes its place.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Sequence
from multiprocessing.connection import wait
from typing import Any

from ln_viz.runner import worker_context
from ln_viz.runner.messages import End, Failed, Job, Snap, Stop
from ln_viz.runner.process import WorkerProcess
from ln_viz.sweep.executors import OnEnd, OnStep
from ln_viz.sweep.spec import Cell

_POLL_S = 0.1
WORKER_MB = 310  # one worker's resident memory (measured: 306-314 MB, torch and a tiny model)
MAX_WORKERS = 256
_EXIT_GRACE_S = 0.8  # after a stop, workers get this long to leave by themselves, then SIGKILL


def max_workers() -> int:
    """How many workers this machine's memory holds, at WORKER_MB each (at least 1, at most 256)."""
    try:
        total_mb = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2**20
    except (ValueError, OSError, AttributeError):  # no sysconf: the fixed cap
        return MAX_WORKERS
    return max(1, min(MAX_WORKERS, total_mb // WORKER_MB))


class _Worker(WorkerProcess):
    """A serial worker, the cell it trains now (an index into the executor's cells, or None) and that
    cell's last verdict so far (the trainer's status at its latest step)."""

    def __init__(self, ctx: Any, nice: int) -> None:
        super().__init__(ctx, warm=False, nice=nice, serial=True)
        self.cell: int | None = None
        self.status = "failed"  # a run that ends before its first step
        self.started: float | None = None  # when its cell's first step came (monotonic): imports are no training
        self.capped = False  # stopped at the time cap: its End is the cell's failure, not a Stop

    def train(self, index: int, cell: Cell) -> None:
        """Hand it a cell to train."""
        self.cell, self.status, self.started, self.capped = index, "failed", None, False
        self.send(Job(cell.config, threads=1))

    def death(self) -> str:
        """How the worker ended, in words, once its pipe has closed."""
        self.reap(0.5)
        how = self.exit_description()
        if how.startswith("killed"):
            return f"the worker process was {how}"
        return f"the worker process ended unexpectedly ({how})"


class LocalExecutor:
    """Cells on this machine: `workers` at once (default: the cores), one torch thread each; a cell
    that trains longer than `max_seconds` (the server's classroom cap; None: no cap) is stopped and
    fails with that cause."""

    name = "local"

    def __init__(self, workers: int | None = None, nice: int = 0, max_seconds: float | None = None) -> None:
        self.workers = max(1, workers or os.cpu_count() or 1)
        self.nice = nice
        self.max_seconds = max_seconds
        self._running: dict[int, int] = {}  # cell index -> worker pid

    def running_pids(self) -> dict[int, int]:
        """The worker process of each cell training now (tests kill one to crash its cell)."""
        return dict(self._running)

    def run(self, cells: Sequence[Cell], on_step: OnStep, on_end: OnEnd, stop: threading.Event) -> None:
        """Train every cell; see ln_viz.sweep.executors for the contract."""
        ctx = worker_context()
        todo = deque(range(len(cells)))
        pool = [_Worker(ctx, self.nice) for _ in range(min(self.workers, len(cells)))]
        try:
            while (todo or any(w.cell is not None for w in pool)) and not stop.is_set():
                for w in pool:
                    if w.cell is None and todo:
                        index = todo.popleft()
                        w.train(index, cells[index])
                        self._running[index] = w.pid
                for w in wait([w for w in pool if w.cell is not None], timeout=_POLL_S):
                    if not self._drain(w, on_step, on_end):
                        pool[pool.index(w)] = _Worker(ctx, self.nice)
                self._cap(pool)
        finally:
            self._shut_down(pool, on_end)

    def _cap(self, pool: list[_Worker]) -> None:
        """Stop each cell that has trained past `max_seconds` (its End then fails it)."""
        if self.max_seconds is None:
            return
        now = time.monotonic()
        for w in pool:
            if w.cell is not None and w.started is not None and not w.capped and now - w.started > self.max_seconds:
                w.capped = True
                w.send(Stop())

    def _drain(self, w: _Worker, on_step: OnStep, on_end: OnEnd) -> bool:
        """Read what a worker has sent; False when it has died (its cell is then failed)."""
        try:
            while (msg := w.receive(0)) is not None:
                if isinstance(msg, Snap):
                    snap = msg.snapshot
                    w.status = snap.status
                    w.started = w.started or time.monotonic()
                    on_step(w.cell, snap.step, snap.loss, snap.eval_loss, snap.status)
                elif isinstance(msg, End | Failed):  # Ready and Info say nothing a sweep keeps
                    index, w.cell = w.cell, None
                    self._running.pop(index, None)
                    if isinstance(msg, Failed):
                        on_end(index, "failed", msg.line)
                    elif w.capped:
                        cap = f"stopped at this server's time limit of {self.max_seconds:g} s per run"
                        on_end(index, "failed", cap)
                    else:
                        on_end(index, "stopped" if msg.stopped else w.status, None)
        except (EOFError, OSError):
            index, w.cell = w.cell, None
            if index is not None:
                self._running.pop(index, None)
                on_end(index, "failed", w.death())
            return False
        return True

    def _shut_down(self, pool: list[_Worker], on_end: OnEnd) -> None:
        """Stop busy workers, end idle ones (a Stop does both), and reap all: within ~1 s, nothing
        left running."""
        for w in pool:
            w.send(Stop())
        deadline = time.monotonic() + _EXIT_GRACE_S
        for w in pool:
            w.reap(max(0.0, deadline - time.monotonic()))
            if w.cell is not None:
                self._running.pop(w.cell, None)
                on_end(w.cell, "stopped", None)
