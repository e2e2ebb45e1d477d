"""The server side's single writer: Runner hooks that record every run into the store as it trains.

A page never writes to the store; the runner's drain threads call these hooks, each run with its own
RunWriter (which commits about twice a second), so a crash loses at most the last second.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from ln_viz.snapshot import RunInfo, Snapshot
from ln_viz.store import RunWriter, Store

log = logging.getLogger(__name__)


class Recorder:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._writers: dict[str, RunWriter] = {}
        self._store_ids: dict[str, int] = {}
        self._lock = threading.Lock()

    def on_start(self, run_id: str, info: RunInfo) -> None:
        writer = RunWriter(self.store)
        store_id = writer.begin(info)
        with self._lock:
            self._writers[run_id] = writer
            self._store_ids[run_id] = store_id

    def on_snapshot(self, run_id: str, snap: Snapshot) -> None:
        writer = self._writers.get(run_id)
        if writer is not None:
            writer.add(snap)

    def on_finish(self, run_id: str, view: Any) -> None:
        with self._lock:
            writer = self._writers.pop(run_id, None)
        if writer is not None:
            writer.finish(view.status, view.message)

    def store_id(self, run_id: str) -> int | None:
        """The store's id of a runner's run (None when it was never recorded)."""
        with self._lock:
            return self._store_ids.get(run_id)

    def hooks(self) -> dict[str, Any]:
        return {"on_start": self.on_start, "on_snapshot": self.on_snapshot, "on_finish": self.on_finish}
