"""RunWriter: one run written to the store while it trains, committed about twice a second.

`add(snap)` only serialises the snapshot into a buffer; a background thread commits the buffer every
`flush_every` seconds, so the training loop never waits on the disk. The run's summary row (steps done,
final loss, status, stall) is the summary of a scalars-only RunData the writer keeps beside the buffer:
the same rules as the run reopened from its rows, computed in one place (RunData.summary).
"""

from __future__ import annotations

import dataclasses
import os
import sqlite3
import threading
import uuid
from typing import Any, Self

from ln_viz.names import STATUSES
from ln_viz.snapshot import RunData, RunInfo, Snapshot
from ln_viz.store.db import StoreError, connect, write_error
from ln_viz.store.lock import WriterLock
from ln_viz.store.reader import Store
from ln_viz.store.rows import LIVE_STATUSES, insert_run, probe_rows, scalar_row, update_summary, write_rows


class RunWriter:
    """Writes one run to the store while it trains: `begin(info)`, `add(snap)` per step, `finish()`.

    `add` only serialises the snapshot; a background thread commits every `flush_every` seconds. Use
    as a context manager: leaving the block by an exception finishes the run as `failed` (or
    `stopped` on Ctrl-C), so a row is never left `running` by a process that is still alive.
    """

    def __init__(self, store: Store | str | os.PathLike[str] | None = None, *, flush_every: float = 0.5) -> None:
        self._owns_store = not isinstance(store, Store)
        self.store = store if isinstance(store, Store) else Store(store)
        self.flush_every = flush_every
        self.run_id: int | None = None
        self._db: sqlite3.Connection | None = None
        self._lock: WriterLock | None = None
        self._pending: list[tuple[tuple, list[tuple]]] = []
        self._cond = threading.Condition()
        self._io = threading.Lock()  # one flush at a time
        self._thread: threading.Thread | None = None
        self._stop = False
        self._error: BaseException | None = None
        self._run: RunData | None = None  # scalars only: the running summary
        self._written: dict[str, Any] | None = None  # the summary last committed

    def begin(self, info: RunInfo, label: str | None = None, status: str = "running") -> int:
        """Create the run's row (locked as live) and start committing; returns the run id."""
        if self.run_id is not None:
            raise RuntimeError("begin() was already called")
        token = uuid.uuid4().hex
        # lock before the row exists: a row that names a token always has a held lock or a dead writer
        try:
            self._lock = WriterLock(self.store.lock_dir / f"{token}.lock")
        except OSError as e:
            raise StoreError("err.write_failed", path=str(self.store.lock_dir), reason=e.strerror) from e
        self._db = connect(self.store.path)
        self._run = RunData(info, status=status)
        try:
            self._db.execute("BEGIN IMMEDIATE")
            self.run_id = insert_run(self._db, info, label=label, status=status, writer_token=token)
            self._db.execute("COMMIT")
        except BaseException as e:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            self._close()
            if isinstance(e, sqlite3.Error):
                raise write_error(self.store.path, e) from e
            raise
        self._thread = threading.Thread(target=self._loop, name=f"ln-viz-writer-{self.run_id}", daemon=True)
        self._thread.start()
        return self.run_id

    def add(self, snap: Snapshot) -> None:
        """Queue one step (serialised now, so the caller may drop or change `snap` afterwards)."""
        if self._error is not None:
            raise self._error
        if self.run_id is None or self._run is None:
            raise RuntimeError("call begin() before add()")
        row, blobs = scalar_row(self.run_id, snap), probe_rows(self.run_id, snap)
        with self._cond:
            self._pending.append((row, blobs))
            self._run.append(dataclasses.replace(snap, probes=None))  # the summary needs no probes

    def flush(self) -> None:
        """Commit everything queued so far (the background thread calls this every flush_every s)."""
        with self._io:
            with self._cond:
                pending, self._pending = self._pending, []
                summary = self._run.summary() if self._run is not None else None
            if self._db is None or (not pending and summary == self._written):
                return  # nothing new: no write, so an idle writer leaves the file alone
            db = self._db
            try:
                db.execute("BEGIN IMMEDIATE")
                write_rows(db, [row for row, _ in pending], [b for _, blobs in pending for b in blobs])
                update_summary(db, self.run_id, **summary)
                db.execute("COMMIT")
                self._written = summary
            except BaseException as e:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                with self._cond:  # keep them for the next try
                    self._pending[:0] = pending
                if isinstance(e, sqlite3.Error):  # disk full, file removed...: a sentence, not a traceback
                    raise write_error(self.store.path, e) from e
                raise

    def _loop(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._stop, timeout=self.flush_every)
                stop = self._stop
            if stop:
                return
            try:
                self.flush()
            except Exception as e:  # reported by the next add() or finish()
                self._error = e
                return

    def finish(self, status: str | None = None, message: str | None = None) -> None:
        """Commit the rest and set the final status (default: the last snapshot's); release the lock."""
        if self.run_id is None or self._db is None or self._run is None:
            return
        if status is not None and status not in STATUSES:
            raise ValueError(f"unknown status {status!r}")
        self._stop_thread()
        try:
            with self._cond:
                if status is not None:
                    self._run.status = status
                elif self._run.status in LIVE_STATUSES:
                    self._run.status = "stopped"  # finished without a final snapshot: stopped early
                if message is not None:
                    self._run.message = message
            self.flush()
            with self._io:
                self._db.execute("UPDATE runs SET writer_token = NULL WHERE id = ?", (self.run_id,))
        finally:
            self._close()  # the lock is dropped only after the final commit
        if self._error is not None:
            raise self._error

    def _stop_thread(self) -> None:
        if self._thread is not None:
            with self._cond:
                self._stop = True
                self._cond.notify_all()
            self._thread.join()
            self._thread = None

    def _close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: object, tb: object) -> None:
        if exc_type is None:
            self.finish()
            return
        try:
            self.finish("stopped" if issubclass(exc_type, KeyboardInterrupt) else "failed")
        except Exception:  # the exception on its way out says more than ours
            pass
