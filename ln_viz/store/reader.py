"""Store: one SQLite file of runs, opened to list, read back, label, delete and import them (a training
run is written by ln_viz.store.writer.RunWriter). Opening it for writing migrates the schema and
recovers runs whose writer died (see ln_viz.store for the lock protocol).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Self

from ln_viz.snapshot import RunData
from ln_viz.store.db import (
    StoreError,
    connect,
    file_identity,
    make_parent,
    resolve_store_path,
    store_error,
    write_error,
)
from ln_viz.store.lock import WriterLock
from ln_viz.store.migrations import check_version, migrate
from ln_viz.store.rows import (
    LIVE_SQL,
    LIVE_STATUSES,
    SORT_KEYS,
    SUMMARY_COLUMNS,
    RunFilter,
    RunSummary,
    attached_card,
    check_label,
    insert_run,
    probe_rows,
    read_run,
    scalar_row,
    update_summary,
    write_rows,
)

logger = logging.getLogger(__name__)


class Store:
    """One SQLite file of runs. Thread-safe (one connection behind a lock); use as a context manager.

    `readonly=True` opens without writing anything: no migration, no recovery. Use it where a page
    only lists and shows runs; anything that trains or imports opens it for writing.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, readonly: bool = False) -> None:
        self.path = resolve_store_path(path)
        self.readonly = readonly
        self._lock = threading.RLock()
        self.notice: StoreError | None = None  # set when the file was deleted or replaced under us
        self.usable = True  # False while what replaced the file cannot be opened as a store
        self.generation = 0  # counts the files opened at the path: a run id is only good in its own
        self._logs: list[tuple[int, int] | None] = [None, None]
        self._db, self._identity = self._connect()

    def _connect(self) -> tuple[sqlite3.Connection, tuple[int, int] | None]:
        """Open the file, check it is a store, migrate and recover (for writing); its (dev, inode)."""
        if self.readonly and not self.path.exists():
            raise StoreError("err.store_missing", path=str(self.path))
        if not self.readonly:
            make_parent(self.path)
        db = connect(self.path, readonly=self.readonly)
        self._db = db
        try:
            if self.readonly:
                check_version(db, self.path, readonly=True)
            else:
                migrate(db, self.path)
                self.recover()
        except sqlite3.DatabaseError as e:
            db.close()
            raise store_error(self.path, e) from None
        except BaseException:
            db.close()
            raise
        # the logs this connection reads through (none when a read-only folder made it open the file immutable)
        opens_logs = not self.readonly or os.access(self.path.parent, os.W_OK)
        self._logs = [file_identity(log) if opens_logs else None for log in self._log_paths()]
        return db, file_identity(self.path)

    def moved(self) -> bool:
        """Whether the path no longer names the file this store opened (deleted, or replaced by
        another file): what it reads is then a file nobody else will see again. One `stat`."""
        return file_identity(self.path) != self._identity

    def reopen_if_moved(self) -> bool:
        """When the file was deleted or replaced, open what is at the path now (a new empty store
        where it was deleted) and keep a `notice` that says so; True when it did. The old file's
        runs are no longer listed. Raises StoreError when the new file cannot be opened."""
        with self._lock:
            if not self.moved():
                return False
            gone = not self.path.exists()
            self.notice = StoreError("err.store_deleted" if gone else "err.store_replaced", path=str(self.path))
            stale = self._stale_logs()  # while this connection is open: it keeps their inodes from reuse
            self._db.close()
            for log in stale:
                try:
                    log.unlink(missing_ok=True)
                except OSError as e:  # a folder that turned read-only: SQLite will say what it can
                    logger.warning("ln-viz: cannot remove %s: %s", log, e.strerror or e)
            try:
                self._db, self._identity = self._connect()
            except BaseException as e:
                self._identity, self.usable = file_identity(self.path), False  # retried when it changes again
                self._logs = [None, None]  # the old logs are gone: nothing at the path is this store's now
                if isinstance(e, StoreError):
                    self.notice = e
                raise
            self.usable = True
            self.generation += 1
            return True

    def _log_paths(self) -> list[Path]:
        return [self.path.with_name(self.path.name + suffix) for suffix in ("-wal", "-shm")]

    def _stale_logs(self) -> list[Path]:
        """SQLite pairs a database with the `-wal` and `-shm` files beside it by name, and a connection
        whose file was moved leaves them behind: the file now at the path would be read through the old
        file's log (its runs listed again, or pages mixed). The old file's logs are the very files this
        store's connection opened (the same inode: a file it holds open cannot be replaced by another
        with that inode); a log made since is the new file's own, however old it looks (a checkpoint
        writes the file after its log), and is kept with its partner: another process may be writing
        through them."""
        logs = self._log_paths()
        now = [file_identity(log) for log in logs]
        if any(n is not None and n != mine for n, mine in zip(now, self._logs)):
            return []  # one of the pair is the new file's, and SQLite uses the pair together: keep both
        return [log for log, n, mine in zip(logs, now, self._logs) if mine is not None and n == mine]

    @property
    def lock_dir(self) -> Path:
        return self.path.with_name(self.path.name + ".locks")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """A short read transaction: one consistent view, never blocking the writer (WAL)."""
        with self._lock:
            try:
                self._db.execute("BEGIN")
            except sqlite3.DatabaseError as e:
                raise store_error(self.path, e) from None
            try:
                yield self._db
            except sqlite3.DatabaseError as e:  # a damaged page met while reading: one sentence
                raise store_error(self.path, e) from None
            finally:
                self._end_read()

    def _end_read(self) -> None:
        try:
            self._db.execute("COMMIT")
        except sqlite3.DatabaseError:  # a damaged file can refuse even this; nothing was written
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction, taken up front (IMMEDIATE) so it waits instead of failing midway."""
        if self.readonly:
            raise StoreError("err.store_readonly", path=str(self.path))
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                yield self._db
                self._db.execute("COMMIT")
            except BaseException as e:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                if isinstance(e, sqlite3.Error):
                    raise write_error(self.path, e) from e
                raise

    # --- recovery ---------------------------------------------------------------------------------
    def dead_writers(self) -> list[int]:
        """Ids of live-looking runs whose writer is gone (what `recover` would mark), without writing:
        a lock file that cannot be opened (a read-only folder) counts as alive."""
        with self._read() as db:
            rows = db.execute(f"SELECT id, writer_token FROM runs WHERE status IN {LIVE_SQL}").fetchall()
        dead = []
        for run_id, token in rows:
            try:
                if token is None or WriterLock.is_free(self.lock_dir / f"{token}.lock"):
                    dead.append(run_id)
            except OSError:
                pass
        return dead

    def recover(self) -> list[int]:
        """Mark `interrupted` every live-looking run whose writer is gone; return their ids."""
        with self._read() as db:
            rows = db.execute(f"SELECT id, writer_token FROM runs WHERE status IN {LIVE_SQL}").fetchall()
        dead = []
        for run_id, token in rows:
            lock = self.lock_dir / f"{token}.lock" if token else None
            if lock is not None and not WriterLock.is_free(lock):
                continue  # its writer is alive
            # the cause its writer left (the store stayed locked, the disk was full), else the general one
            message = (WriterLock.read_note(lock) if lock is not None else None) or "msg.interrupted"
            with self._write() as db:
                # conditional: a writer that finished after our SELECT has a final status already
                changed = db.execute(
                    f"UPDATE runs SET status = 'interrupted', message = ?, "
                    f"writer_token = NULL WHERE id = ? AND status IN {LIVE_SQL} "
                    f"AND writer_token IS ?",
                    (message, run_id, token),
                ).rowcount
            if changed:
                dead.append(run_id)
                if lock is not None:
                    lock.unlink(missing_ok=True)
        return dead

    # --- reading ----------------------------------------------------------------------------------
    def list_runs(
        self,
        filters: RunFilter | None = None,
        sort: str = "-created",
        limit: int | None = None,
    ) -> list[RunSummary]:
        """Summaries of the runs matching `filters`, sorted by a SORT_KEYS name ("-" = descending)."""
        key = sort.lstrip("-")
        if key not in SORT_KEYS:
            raise StoreError("err.choice", "sort", value=sort, choices=", ".join(SORT_KEYS))
        order = "DESC" if sort.startswith("-") else "ASC"
        where, args = (filters or RunFilter()).sql()
        # a diverged run's stored final loss is its last finite one: by loss it counts as infinite (last
        # when the lowest come first, first when the highest do), as the table shows it
        diverged = f"status = 'diverged' {order}, " if key == "final_loss" else ""
        sql = (
            f"SELECT {SUMMARY_COLUMNS} FROM runs{where} "
            f"ORDER BY {diverged}{SORT_KEYS[key]} IS NULL, {SORT_KEYS[key]} {order}, id {order}"
        )
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        with self._read() as db:
            return [RunSummary(*row) for row in db.execute(sql, args)]

    def group_sizes(self) -> dict[str, int]:
        """How many stored runs each seed group has."""
        with self._read() as db:
            sql = "SELECT seed_group, count(*) FROM runs WHERE seed_group IS NOT NULL GROUP BY seed_group"
            return {group: n for group, n in db.execute(sql) if isinstance(group, str)}

    def summary(self, run_id: int) -> RunSummary:
        with self._read() as db:
            row = db.execute(f"SELECT {SUMMARY_COLUMNS} FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise self._not_found(run_id)
        return RunSummary(*row)

    def open_run(
        self, run_id: int, max_probe_steps: int | None = None, *, probe_steps: Sequence[int] | None = None
    ) -> RunData:
        """The whole run as RunData, as its writer measured it (probe arrays bit for bit); with
        `max_probe_steps`, at most that many probe steps, evenly thinned (RunData.max_probe_steps); with
        `probe_steps`, only those of its probe steps. Only the probe steps kept are read from the file."""
        with self._read() as db:
            data = read_run(db, run_id, max_probe_steps, name=str(self.path), probe_steps=probe_steps)
        if data is None:
            raise self._not_found(run_id)
        return data

    def model_card(self, run_id: int) -> dict | None:
        """The model card of a run ln_viz.attach recorded (ln_viz.byom.card.ModelCard as a dict); None
        for ln-viz's own runs."""
        with self._read() as db:
            return attached_card(db, run_id)

    def open_attached_run(self, run_id: int) -> tuple[RunData, dict]:
        """A run ln_viz.attach recorded, as RunData with its model's own norm and matrix names, and its
        model card (`open_run` reads it too, the card in `RunInfo.model_card`)."""
        with self._read() as db:
            card = attached_card(db, run_id)
            data = read_run(db, run_id, name=str(self.path)) if card is not None else None
        if data is None or card is None:
            raise self._not_found(run_id)
        return data, card

    def set_planned_steps(self, run_id: int, steps: int) -> None:
        """An attached run's planned steps, known only when its loop ends (ln_viz.attach without steps=)."""
        with self._write() as db:
            update_summary(db, run_id, steps=int(steps))

    def probe_steps(self, run_id: int) -> list[int]:
        """The steps at which the run measured its probes, read without its arrays."""
        with self._read() as db:
            rows = db.execute("SELECT step FROM scalars WHERE run_id = ? AND has_probes ORDER BY step", (run_id,))
            return [step for (step,) in rows]

    def _not_found(self, run_id: int) -> StoreError:
        return StoreError("err.run_not_found", run_id=run_id, path=str(self.path))

    # --- changing ---------------------------------------------------------------------------------
    def label(self, run_id: int, text: str | None) -> None:
        """Set (or with None / "" clear) a run's label."""
        text = (text or "").strip() or None
        check_label(text)
        with self._write() as db:
            if not db.execute("UPDATE runs SET label = ? WHERE id = ?", (text, run_id)).rowcount:
                raise self._not_found(run_id)

    def delete(self, run_id: int) -> None:
        """Delete a run and its data; a run whose writer is alive is refused (stop it first)."""
        self.recover()  # a dead writer's run may be deleted
        with self._write() as db:
            row = db.execute("SELECT status, writer_pid FROM runs WHERE id = ?", (run_id,)).fetchone()
            if row is None:
                raise self._not_found(run_id)
            if row[0] in LIVE_STATUSES:
                raise StoreError("err.run_live", run_id=run_id, pid=row[1])
            # explicit deletes rather than relying on every connection enabling foreign keys
            for table in ("probes", "scalars"):
                db.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))
            db.execute("DELETE FROM runs WHERE id = ?", (run_id,))

    def find_fingerprint(self, fingerprint: str) -> int | None:
        """The id of a run imported from a file with this fingerprint, if it is still here."""
        with self._read() as db:
            row = db.execute(
                "SELECT id FROM runs WHERE fingerprint = ? ORDER BY id LIMIT 1",
                (fingerprint,),
            ).fetchone()
        return None if row is None else row[0]

    def seen(self, fingerprint: str) -> bool:
        """Whether a run with this fingerprint was ever added with `once=True` (even if deleted since)."""
        with self._read() as db:
            return db.execute("SELECT 1 FROM meta WHERE key = ?", (f"seen:{fingerprint}",)).fetchone() is not None

    def add_run(
        self,
        data: RunData,
        *,
        label: str | None = None,
        created: float | None = None,
        source: str = "import",
        fingerprint: str | None = None,
        once: bool = False,
        group: str | None = None,
    ) -> int | None:
        """Store a finished RunData in one transaction (imports, demos, tests); return its id.

        With a `fingerprint`, a run already stored from the same file is returned instead of copied.
        With `once=True`, a fingerprint added before is never added again, even after its run was
        deleted; then None is returned. A run saved while `running` is stored as `interrupted`:
        no writer will ever finish it.
        """
        status = "interrupted" if data.status in LIVE_STATUSES else data.status
        with self._write() as db:
            if fingerprint is not None:
                row = db.execute(
                    "SELECT id FROM runs WHERE fingerprint = ? ORDER BY id LIMIT 1",
                    (fingerprint,),
                ).fetchone()
                if row is not None:
                    return row[0]
                key = f"seen:{fingerprint}"
                if once and db.execute("SELECT 1 FROM meta WHERE key = ?", (key,)).fetchone():
                    return None
                db.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                    (key, str(time.time())),
                )
            run_id = insert_run(db, data.info, label=label, status=status, created=created, group=group)
            rows, blobs = [], []
            for snap in data.snapshots():
                rows.append(scalar_row(run_id, snap))
                blobs.extend(probe_rows(run_id, snap))
            write_rows(db, rows, blobs)
            summary = {**data.summary(), "status": status}
            update_summary(db, run_id, **summary, source=source, fingerprint=fingerprint)
        return run_id
