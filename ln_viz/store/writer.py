"""RunWriter: one run written to the store while it trains, committed about twice a second.

`add(snap)` only serialises the snapshot into a buffer; a background thread commits the buffer every
`flush_every` seconds, so the training loop never waits on the disk. The run's summary row (steps done,
final loss, status, stall) is the summary of a scalars-only RunData of the committed steps: the same
rules as the run reopened from its rows, computed in one place (RunData.summary).

A write that fails never stops the run and never raises from `add`: the steps stay buffered and are
retried at every flush, and `problem` says why, one sentence per episode (another process holding the
write lock, the disk full, the file deleted under us). When it clears, the buffer is committed and the
run is whole again. `finish` waits up to `lock_wait_s` for a lock held elsewhere; if the store still
refuses, it commits what it can (the final status and the steps stored so far, with a message that
says the rest is missing), freeing the lock file's ballast for it when the disk is full.
"""

from __future__ import annotations

import dataclasses
import os
import sqlite3
import threading
import time
import uuid
from typing import Any, Self

from ln_viz.schema import STATUSES
from ln_viz.snapshot import RunData, RunInfo, Snapshot
from ln_viz.store.db import WRITER_TIMEOUT_S, StoreError, connect, file_identity, write_error
from ln_viz.store.lock import WriterLock
from ln_viz.store.reader import Store
from ln_viz.store.rows import LIVE_STATUSES, insert_run, probe_rows, scalar_row, update_summary, write_rows

LOCK_WAIT_S = 60.0  # how long finish() waits for another process to let go of the store
MSG_STORE_LOCKED = "msg.store_locked"  # the row's message when the lock outlasted LOCK_WAIT_S
MSG_STORE_INCOMPLETE = "msg.store_incomplete"  # ...when writes failed (disk full, I/O error)


class RunWriter:
    """Writes one run to the store while it trains: `begin(info)`, `add(snap)` per step, `finish()`.

    `add` only serialises the snapshot; a background thread commits every `flush_every` seconds. Use
    as a context manager: leaving the block by an exception finishes the run as `failed` (or
    `stopped` on Ctrl-C), so a row is never left `running` by a process that is still alive. Write
    failures are never raised: read `problem` (and `stored_steps` of `added_steps`).
    """

    def __init__(
        self,
        store: Store | str | os.PathLike[str] | None = None,
        *,
        flush_every: float = 0.5,
        lock_wait_s: float = LOCK_WAIT_S,
    ) -> None:
        self._owns_store = not isinstance(store, Store)
        self.store = store if isinstance(store, Store) else Store(store)
        self.flush_every = flush_every
        self.lock_wait_s = lock_wait_s
        self.run_id: int | None = None
        self._db: sqlite3.Connection | None = None
        self._lock: WriterLock | None = None
        self._pending: list[tuple[tuple, list[tuple], Snapshot]] = []
        self._cond = threading.Condition()
        self._io = threading.Lock()  # one flush at a time
        self._thread: threading.Thread | None = None
        self._stop = False
        self._run: RunData | None = None  # the committed steps, scalars only: the row's summary
        self._written: dict[str, Any] | None = None  # the summary last committed
        self._end: tuple[str | None, str | None] | None = None  # finish()'s status and message
        self._last_status = "running"
        self._identity: tuple[int, int] | None = None
        self.added_steps = 0
        self.stored_steps = 0
        self._problem: StoreError | None = None  # why writes fail now (cleared when they work again)
        self._moved: StoreError | None = None  # the file was deleted or replaced under us (for good)
        self._final: StoreError | None = None  # finish() could not store the whole run

    @property
    def problem(self) -> StoreError | None:
        """Why this run is not (or not wholly) in the store, one sentence; None while all is well.
        The same object for as long as the same trouble lasts, so a caller can report it once."""
        return self._final or self._moved or self._problem

    def begin(
        self,
        info: RunInfo,
        label: str | None = None,
        status: str = "running",
        group: str | None = None,
        model_card: dict | None = None,
    ) -> int:
        """Create the run's row (locked as live), in seed group `group`, and start committing; its id.
        `model_card`: a run ln_viz.attach records from the user's own model (rows.insert_run)."""
        if self.run_id is not None:
            raise RuntimeError("begin() was already called")
        token = uuid.uuid4().hex
        # lock before the row exists: a row that names a token always has a held lock or a dead writer
        try:
            self._lock = WriterLock(self.store.lock_dir / f"{token}.lock")
        except OSError as e:
            raise StoreError("err.write_failed", path=str(self.store.lock_dir), reason=e.strerror) from e
        try:
            self._db = connect(self.store.path, timeout=max(self.lock_wait_s, WRITER_TIMEOUT_S))
        except BaseException:
            self._close()
            raise
        self._identity = file_identity(self.store.path)
        self._run = RunData(info, status=status)
        try:
            self._db.execute("BEGIN IMMEDIATE")
            self.run_id = insert_run(
                self._db, info, label=label, status=status, writer_token=token, group=group, model_card=model_card
            )
            self._db.execute("COMMIT")
        except BaseException as e:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            self._close()
            if isinstance(e, sqlite3.Error):
                raise write_error(self.store.path, e) from e
            raise
        # from now on each try waits briefly: the writer retries, and buffers meanwhile, by itself
        self._db.execute(f"PRAGMA busy_timeout = {int(WRITER_TIMEOUT_S * 1000)}")
        self._thread = threading.Thread(target=self._loop, name=f"ln-viz-writer-{self.run_id}", daemon=True)
        self._thread.start()
        return self.run_id

    def add(self, snap: Snapshot) -> None:
        """Queue one step (serialised now, so the caller may drop or change `snap` afterwards)."""
        if self.run_id is None or self._run is None:
            raise RuntimeError("call begin() before add()")
        row, blobs = scalar_row(self.run_id, snap), probe_rows(self.run_id, snap)
        with self._cond:
            self._pending.append((row, blobs, dataclasses.replace(snap, probes=None)))  # the summary needs no probes
            self.added_steps += 1
            self._last_status = snap.status

    def flush(self, final: bool = False) -> bool:
        """Commit everything queued so far (the background thread calls this every flush_every s).
        False when the store refused: the steps stay queued and `problem` says why."""
        with self._io:
            if self._db is None or self._run is None:
                return True
            with self._cond:
                pending = list(self._pending)
                trial = self._trial(pending)
            summary = trial.summary()
            if self._moved is None and file_identity(self.store.path) != self._identity:
                # deleted or replaced: what we write goes to a file nobody will open again
                self._moved = StoreError("err.writer_store_moved", path=str(self.store.path))
            if not final and not pending and summary == self._written:
                return True  # nothing new: no write, so an idle writer leaves the file alone
            try:
                self._commit([p[0] for p in pending], [b for p in pending for b in p[1]], summary, final)
            except sqlite3.Error as e:
                self._failed(e)
                return False
            with self._cond:
                del self._pending[: len(pending)]
                self.stored_steps += len(pending)
                self._run, self._written = trial, summary
                if self._problem is not None:  # working again: the buffer is in
                    self._problem = None
                    self._note(None)
            return True

    def _trial(self, pending: list[tuple[tuple, list[tuple], Snapshot]]) -> RunData:
        """The committed run plus `pending` (a copy: it becomes the run only once committed)."""
        run = self._run
        assert run is not None
        trial = dataclasses.replace(run, scalars={k: list(v) for k, v in run.scalars.items()})
        for _, _, snap in pending:
            trial.append(snap)
        if self._end is not None:
            status, message = self._end
            if status is None:  # the last step's own status; ended without a final step: stopped early
                status = "stopped" if self._last_status in LIVE_STATUSES else self._last_status
            trial.status = status
            if message is not None:
                trial.message = message
        return trial

    def _commit(self, rows: list[tuple], blobs: list[tuple], summary: dict[str, Any], final: bool) -> None:
        db = self._db
        assert db is not None
        try:
            db.execute("BEGIN IMMEDIATE")
            if rows:
                write_rows(db, rows, blobs)
            update_summary(db, self.run_id, **summary)
            if final:
                db.execute("UPDATE runs SET writer_token = NULL WHERE id = ?", (self.run_id,))
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    def _failed(self, e: sqlite3.Error) -> None:
        """A refused write: start a new episode of trouble unless it is the one already reported."""
        err = write_error(self.store.path, e)
        key = "err.writer_locked" if err.key == "err.store_locked" else "err.writer_failed"
        with self._cond:
            if self._problem is not None and self._problem.key == key:
                return
            self._problem = StoreError(key, path=str(self.store.path), reason=err.params.get("reason", ""))
        self._note(MSG_STORE_LOCKED if key == "err.writer_locked" else MSG_STORE_INCOMPLETE)

    def _note(self, key: str | None) -> None:
        if self._lock is not None:
            self._lock.note(key)

    def _loop(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._stop, timeout=self.flush_every)
                if self._stop:
                    return
            self.flush()  # a refusal is kept in `problem` and retried at the next tick

    def finish(self, status: str | None = None, message: str | None = None) -> StoreError | None:
        """Commit the rest and set the final status (default: the last snapshot's); release the lock.
        Returns `problem`: None when the whole run is stored."""
        if self.run_id is None or self._db is None or self._run is None:
            return self.problem
        if status is not None and status not in STATUSES:
            raise ValueError(f"unknown status {status!r}")
        self._stop_thread()
        with self._cond:
            self._end = (status, message)
        try:
            deadline = time.monotonic() + self.lock_wait_s
            while not self.flush(final=True):
                locked = self._problem is not None and self._problem.key == "err.writer_locked"
                if not locked or time.monotonic() >= deadline:
                    self._give_up(locked)
                    break
        finally:
            self._close()  # the lock is dropped only after the final commit
        return self.problem

    def _give_up(self, locked: bool) -> None:
        """The store still refuses: commit the final status over the steps stored so far, saying the
        rest is missing; if even that fails, leave the cause in the lock file for recover()."""
        problem = self._problem
        assert problem is not None and self._lock is not None
        key = MSG_STORE_LOCKED if locked else MSG_STORE_INCOMPLETE
        params = {"path": str(self.store.path), "stored": self.stored_steps, "steps": self.added_steps}
        if locked:
            self._final = StoreError("err.writer_incomplete_locked", **params, seconds=round(self.lock_wait_s))
        else:
            self._final = StoreError("err.writer_incomplete", **params, reason=problem.params.get("reason", ""))
            self._lock.free_ballast()  # room for the last commit on a full disk
        with self._cond:
            self._pending.clear()
            self._end = (self._end or (None, None))[0], key
            summary = self._trial([]).summary()
        try:
            self._commit([], [], summary, final=True)
        except sqlite3.Error:
            self._lock.abandon(key)  # whoever opens the store next marks it interrupted, with this cause

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
