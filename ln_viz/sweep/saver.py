"""A sweep's finished cells into the store, as the runner's RunWriter writes a run: buffered, retried,
said once.

A cell that ends is in the sweep's results (memory) first and queued here; `put` writes the queue at
once, in one transaction, waiting at most WRITE_WAIT_S for a write lock held elsewhere. A refused
write (another process holding the lock, a full disk) never stops the sweep: the cells stay queued and
are retried at the next cell's end, and `problem` says why, the same object for as long as the same
trouble lasts, so a caller says it once (`on_problem` is called when it starts and when it clears).
A store file deleted or replaced under the sweep is noticed as the server's store notices it (one
`stat`): the saver opens the file at the path now, sweep tables and all, and writes every cell this
sweep trained into it. `finish` waits up to `lock_wait_s` for a lock held elsewhere, then says how many
cells were not stored.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable

from ln_viz.store import StoreError
from ln_viz.store.db import write_error
from ln_viz.store.writer import LOCK_WAIT_S
from ln_viz.sweep.results import CellResult
from ln_viz.sweep.spec import SweepConfig
from ln_viz.sweep.storage import SweepStore

WRITE_WAIT_S = 1.0  # a write's busy wait at a cell's end: the executor's thread calls us, workers wait meanwhile
_LOCKED = "sweep.err.store_locked"


class CellSaver:
    """Stores one sweep's finished cells in `store`; never raises for a store that refuses."""

    def __init__(
        self,
        store: SweepStore,
        lock_wait_s: float = LOCK_WAIT_S,
        on_problem: Callable[[StoreError | None], None] | None = None,
    ) -> None:
        self.store = store
        self.lock_wait_s = lock_wait_s
        self.on_problem = on_problem
        self.sweep_id: int | None = None
        self._begin: tuple[SweepConfig, str] | None = None
        self._pending: list[CellResult] = []
        self._trained: list[CellResult] = []  # every cell this sweep trained: a new file gets them all
        self._lock = threading.Lock()
        self._problem: StoreError | None = None
        self._final: StoreError | None = None
        store.set_timeout(WRITE_WAIT_S)

    @property
    def problem(self) -> StoreError | None:
        """Why cells are not (or not all) stored, one sentence; None while all is well."""
        return self._final or self._problem

    @property
    def pending(self) -> int:
        """Cells finished and not yet stored."""
        return len(self._pending)

    def begin(self, spec: SweepConfig, executor: str) -> None:
        """Note the sweep (its row is written with the first write that works)."""
        self._begin = spec, executor
        self.flush()

    def put(self, result: CellResult) -> None:
        """Queue a finished cell and try to store the queue."""
        with self._lock:
            self._pending.append(result)
            self._trained.append(result)
        self.flush()

    def flush(self) -> bool:
        """Write the sweep's row and the queued cells; False (and `problem`) when the store refused."""
        with self._lock:
            try:
                if self.store.reopen_if_moved():  # deleted or replaced: the new file gets every cell of ours
                    self.sweep_id = None
                    self._pending = list(self._trained)
                if self.sweep_id is None and self._begin is not None:
                    self.sweep_id = self.store.begin(*self._begin)
                if self._pending:
                    self.store.put_cells(self._pending)
                    self._pending = []
            except sqlite3.Error as e:
                err = write_error(self.store.path, e)
                key = _LOCKED if err.key == "err.store_locked" else "sweep.err.store_failed"
                self._say(StoreError(key, path=str(self.store.path), reason=err.params.get("reason", str(e))))
                return False
            except StoreError as e:  # what is at the path now cannot be opened as a store
                self._say(e)
                return False
            if self._problem is not None:
                self._problem = None
                self._tell(None)
            return True

    def finish(self, elapsed_s: float) -> StoreError | None:
        """Store the rest (waiting up to `lock_wait_s` for a lock held elsewhere) and the sweep's
        duration; returns `problem`: None when every cell is stored."""
        deadline = time.monotonic() + self.lock_wait_s
        while not self.flush():
            locked = self._problem is not None and self._problem.key == _LOCKED
            if not locked or time.monotonic() >= deadline:
                break
            time.sleep(0.5)
        with self._lock:
            if self._pending:
                self._give_up()
            elif self.sweep_id is not None:
                try:
                    self.store.finish(self.sweep_id, elapsed_s)
                except sqlite3.Error:
                    pass  # every cell is stored; only the sweep's duration is missing
        return self.problem

    def _give_up(self) -> None:
        problem = self._problem
        assert problem is not None
        params = {"path": str(self.store.path), "stored": len(self._trained) - len(self._pending)}
        params["cells"] = len(self._trained)
        if problem.key == _LOCKED:
            self._final = StoreError("sweep.err.store_incomplete_locked", **params, seconds=round(self.lock_wait_s))
        else:
            self._final = StoreError("sweep.err.store_incomplete", **params, reason=problem.params.get("reason", ""))
        self._tell(self._final)

    def _say(self, problem: StoreError) -> None:
        """A new episode of trouble, unless it is the one already said."""
        if self._problem is not None and self._problem.key == problem.key:
            return
        self._problem = problem
        self._tell(problem)

    def _tell(self, problem: StoreError | None) -> None:
        if self.on_problem is not None:
            self.on_problem(problem)
