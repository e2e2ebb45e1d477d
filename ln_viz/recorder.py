"""The server side's single writer: Runner hooks that record every run into the store as it trains.

A page never writes to the store; the runner's drain threads call these hooks, each run with its own
RunWriter (which commits about twice a second), so a crash loses at most the last second.
"""

from __future__ import annotations

import atexit
import logging
import sqlite3
import threading
import weakref
from collections.abc import Callable
from typing import Any

from ln_viz.i18n import LocalizedError
from ln_viz.snapshot import RunData, RunInfo, Snapshot
from ln_viz.store import RunWriter, Store

log = logging.getLogger(__name__)


class Recorder:
    """Records each runner run into the store (`hooks()`), and knows which stored run is which.

    A store that refuses a write never stops a run: its RunWriter buffers and retries, and the
    recorder keeps the writer's `problem` for the page (`problem(run_id)`) and logs one line when a
    problem starts and one when it clears, never one per step.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self._writers: dict[str, RunWriter] = {}
        self._store_ids: dict[str, tuple[int, int]] = {}  # run -> (store id, the store's generation)
        self._problems: dict[str, LocalizedError] = {}  # the last problem reported, per runner run
        self._lock = threading.Lock()
        _LIVE_RECORDERS.add(self)

    def close(self) -> None:
        """Finish every run still being written as `stopped` (the server is going away and its runner
        did not get to finish them), so no row stays `running` behind a live process."""
        with self._lock:
            writers, self._writers = dict(self._writers), {}
        for run_id, writer in writers.items():
            self._report(run_id, writer.finish("stopped", "msg.stopped"))

    def on_start(self, run_id: str, info: RunInfo, group: str | None = None) -> None:
        writer = RunWriter(self.store)
        try:
            self.store.reopen_if_moved()  # a store file deleted under the server: record into a new one
            store_id = writer.begin(info, group=group)
        except LocalizedError as e:  # the run trains on unstored; the page and the log say why
            self._report(run_id, e)
            return
        with self._lock:
            self._writers[run_id] = writer
            self._store_ids[run_id] = store_id, self.store.generation

    def on_snapshot(self, run_id: str, snap: Snapshot) -> None:
        writer = self._writers.get(run_id)
        if writer is not None:
            writer.add(snap)
            self._report(run_id, writer.problem)

    def on_finish(self, run_id: str, view: Any) -> None:
        with self._lock:
            writer = self._writers.pop(run_id, None)
        if writer is not None:
            self._report(run_id, writer.finish(view.status, view.message))

    def problem(self, run_id: str) -> LocalizedError | None:
        """Why a runner's run is not (wholly) stored, as its writer says now; None when all is well."""
        with self._lock:
            return self._problems.get(run_id)

    def _report(self, run_id: str, problem: LocalizedError | None) -> None:
        """Keep the writer's problem for the page; log its start and its end, once each."""
        with self._lock:
            before = self._problems.get(run_id)
            if problem is before:
                return
            if problem is None:
                del self._problems[run_id]
            else:
                self._problems[run_id] = problem
        if problem is not None:
            log.warning("ln-viz: run %s: %s", run_id, problem)
        else:
            log.warning("ln-viz: run %s: the store takes its steps again; none was lost", run_id)

    def store_id(self, run_id: str) -> int | None:
        """The store's id of a runner's run (None when it was never recorded, or recorded in a file
        that has been deleted or replaced since: the id would name another run of the new file)."""
        with self._lock:
            store_id, generation = self._store_ids.get(run_id, (None, -1))
        return store_id if generation == self.store.generation else None

    def run_of(self, store_id: int) -> str | None:
        """The runner's id of the run recorded as `store_id` in the store's file now (a watch link names
        the stored run; while it trains, its live copy is the runner's), else None."""
        with self._lock:
            found = [run for run, ids in self._store_ids.items() if ids == (store_id, self.store.generation)]
        return found[-1] if found else None

    def complete_data(
        self,
        run_id: str,
        live: RunData | None,
        done: bool,
        open_stored: Callable[[int], RunData] | None = None,
    ) -> RunData | None:
        """A run's data with every probe step: the live copy while it trains or when it kept them all;
        once it has ended (`done`: its writer has finished), the stored copy when that is whole; the
        live copy again when the store has not got it or cannot read it (logged, never raised).
        `open_stored(store_id)` reads the stored copy (default: `Store.open_run`; a caller may cache)."""
        if live is None or live.probe_stride == 1 or not done:
            return live
        store_id = self.store_id(run_id)
        if store_id is None or not self.store.usable:
            return live
        try:
            stored = (open_stored or self.store.open_run)(store_id)
        except (LocalizedError, OSError, sqlite3.Error) as e:
            log.warning("ln-viz: run %s could not be read back from the store: %s", store_id, e)
            return live
        if stored.steps_done != live.steps_done:  # the writer failed part way (logged): not the whole run
            return live
        return stored

    def hooks(self) -> dict[str, Any]:
        return {"on_start": self.on_start, "on_snapshot": self.on_snapshot, "on_finish": self.on_finish}


# Recorders alive at interpreter exit finish their writers (after SIGTERM the runner stops its runs
# first, through on_finish; this catches whatever it could not reach in time).
_LIVE_RECORDERS: weakref.WeakSet[Recorder] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for recorder in list(_LIVE_RECORDERS):
        recorder.close()
