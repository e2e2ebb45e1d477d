"""Runs on disk: an embedded SQLite store, written while the run trains, read by pages and the CLI.

Layout (schema version in `PRAGMA user_version`, upgraded by MIGRATIONS):

    runs     one row per run: the header (config and info as JSON) plus summary columns that lists sort
             and filter on without parsing JSON (status, steps_done, final_loss, norm_position, depth...)
    scalars  one row per (run, step): loss, lr, grad_norm, elapsed, steps_per_sec, eval_loss, stalled
    probes   one row per (run, probe array name, step): the array as raw little-endian float32 bytes
             and its shape ("12,128"); never pickle, so a store file can come from anyone
    meta     key-value: the fingerprints of bundled demo runs ever loaded (so a deleted demo stays gone)

Writing. `RunWriter.add(snap)` only serialises the snapshot into a buffer; a background thread
commits the buffer every `flush_every` seconds (0.5 s), so a crash of the training process loses at
most the last half second or so, and the training loop never waits on the disk. SQLite runs in WAL
mode with `synchronous=NORMAL`: a commit survives the process being killed (it is in the WAL file),
though not necessarily a power cut, which is the right trade for a classroom tool.

Reading. Readers use short read transactions; in WAL mode they never block the writer and the writer
never blocks them.

Live or dead? A run whose row says `running` or `queued` may be being written right now, or its
process may have died (closed laptop, SIGKILL, crash). Each RunWriter holds an exclusive `flock` on a
lock file `<store>.locks/<token>.lock` for as long as it writes, and its row names the token. The
kernel drops that lock when the process dies, however it dies. Opening a Store for writing calls
`recover()`, which tries to take each such lock without waiting: if it can, nobody holds it, so the
run is marked `interrupted` (keeping every step it stored); if it cannot, the writer is alive and the
run is left alone. So any number of readers and writers may open the store while runs train.
Details that make this safe:
- the writer locks its file before its row exists and unlocks only after its final commit, and the
  `interrupted` update is conditional on the row still being live, so a writer that finishes while
  `recover()` looks at it is never marked;
- `flock` (not POSIX `lockf`) because flock locks belong to the open file, so a writer thread and a
  reader in the same process (the app) still see each other's locks;
- pids are stored for people to read, never trusted: a pid may be reused by another process.
On network file systems flock may not work across machines; keep the store on a local disk.
"""

from __future__ import annotations

import json
import math
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import numpy as np

from ln_viz.i18n import LocalizedError
from ln_viz.snapshot import RunStatus, track_status

if TYPE_CHECKING:
    from ln_viz.snapshot import RunData, RunInfo, Snapshot

LIVE_STATUSES = ("queued", "running")
_LIVE_SQL = "('queued', 'running')"  # LIVE_STATUSES as an SQL list
FINAL_LOSS_WINDOW = 10  # steps, as RunData.final_loss
MAX_LABEL_CHARS = 200
SCALAR_FIELDS = (
    "loss",
    "lr",
    "grad_norm",
    "elapsed",
    "steps_per_sec",
    "eval_loss",
)  # the scalars table's float columns, in order


class StoreError(LocalizedError):
    """A store problem a user can fix (bad file, unknown run id): one sentence."""


# --- where the store lives ------------------------------------------------------------------------
def default_store_path(env: dict[str, str] | None = None) -> Path:
    """`$LN_VIZ_STORE`, else `$XDG_DATA_HOME/ln-viz/runs.sqlite`, else `~/.local/share/ln-viz/runs.sqlite`."""
    env = os.environ if env is None else env
    if env.get("LN_VIZ_STORE"):
        return Path(env["LN_VIZ_STORE"]).expanduser()
    xdg = env.get("XDG_DATA_HOME")
    base = (
        Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local/share"
    )  # the XDG spec says to ignore a relative XDG_DATA_HOME
    return base / "ln-viz" / "runs.sqlite"


def resolve_store_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    """An explicit path (`--store`) wins over the environment and the default."""
    return Path(explicit).expanduser() if explicit else default_store_path()


# --- schema and migrations ------------------------------------------------------------------------
def _execute_script(db: sqlite3.Connection, script: str) -> None:
    """Run SQL statements one by one: `executescript` would COMMIT the migration's transaction first."""
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            db.execute(statement)
            statement = ""
    if statement.strip():
        raise ValueError(f"incomplete SQL statement: {statement!r}")


def _migrate_1(db: sqlite3.Connection) -> None:
    """Version 1: runs, per-step scalars, probe arrays."""
    _execute_script(
        db,
        """
        CREATE TABLE runs (
            id            INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused, even after delete
            created       REAL NOT NULL,     -- unix seconds
            updated       REAL NOT NULL,     -- unix seconds of the last commit for this run
            label         TEXT,
            status        TEXT NOT NULL,     -- one of train.STATUSES
            message       TEXT,              -- i18n key of the last status message
            config        TEXT NOT NULL,     -- RunConfig JSON, user_text included
            info          TEXT NOT NULL,     -- RunInfo JSON without its config
            steps_done    INTEGER NOT NULL DEFAULT 0,
            final_loss    REAL,              -- mean of the last 10 finite losses, as RunData.final_loss
            stalled_since INTEGER,
            diverged_at   INTEGER,
            norm_position TEXT NOT NULL,     -- copies of config fields, for lists without JSON parsing
            norm_type     TEXT NOT NULL,
            depth         INTEGER NOT NULL,
            d_model       INTEGER NOT NULL,
            lr            REAL NOT NULL,
            warmup_steps  INTEGER NOT NULL,
            steps         INTEGER NOT NULL,  -- planned steps (config.steps)
            corpus        TEXT NOT NULL,
            seed          INTEGER NOT NULL,
            writer_token  TEXT,              -- names the lock file of the process writing it
            writer_pid    INTEGER,           -- for people to read; never trusted (pids are reused)
            writer_host   TEXT
        );
        CREATE INDEX runs_created ON runs(created);
        CREATE TABLE scalars (
            run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            step          INTEGER NOT NULL,
            loss          REAL,              -- NULL is NaN (SQLite stores NaN as NULL); inf stays inf
            lr            REAL,
            grad_norm     REAL,
            elapsed       REAL,
            steps_per_sec REAL,
            eval_loss     REAL,              -- NULL: not measured at this step
            stalled       INTEGER NOT NULL,
            has_probes    INTEGER NOT NULL,
            PRIMARY KEY (run_id, step)
        ) WITHOUT ROWID;
        CREATE TABLE probes (
            run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            step          INTEGER NOT NULL,
            name          TEXT NOT NULL,     -- snapshot.PROBE_ARRAYS
            shape         TEXT NOT NULL,     -- comma-separated dims, "" for a scalar
            data          BLOB NOT NULL,     -- little-endian float32, C order
            PRIMARY KEY (run_id, name, step)
        );
        """,
    )


# MIGRATIONS[i] takes a store from version i to i + 1; append, never edit a released one.
def _migrate_2(db: sqlite3.Connection) -> None:
    """Version 2: where a run came from (train, import, demo), the fingerprint of an imported file
    (so importing it again finds the run instead of copying it), and a key-value `meta` table that
    remembers which bundled demo runs were ever loaded (so a demo the user deleted stays deleted)."""
    _execute_script(
        db,
        """
        ALTER TABLE runs ADD COLUMN source TEXT NOT NULL DEFAULT 'train';
        ALTER TABLE runs ADD COLUMN fingerprint TEXT;  -- sha256 of the imported run file's JSON
        CREATE INDEX runs_fingerprint ON runs(fingerprint);
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        """,
    )


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [_migrate_1, _migrate_2]
SCHEMA_VERSION = len(MIGRATIONS)


def migrate(db: sqlite3.Connection, path: Path, upto: int = SCHEMA_VERSION) -> int:
    """Bring the schema to version `upto`, one transaction per step; refuse a newer store."""
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise StoreError("err.store_newer", path=str(path), have=version, know=SCHEMA_VERSION)
    while version < upto:
        db.execute("BEGIN IMMEDIATE")
        try:
            # re-read inside the write lock: another process may have migrated meanwhile
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version < upto:
                MIGRATIONS[version](db)
                version += 1
                db.execute(f"PRAGMA user_version = {version}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
    return version


# --- arrays ---------------------------------------------------------------------------------------
def array_to_blob(a: np.ndarray) -> tuple[str, bytes]:
    """(shape text, little-endian float32 bytes) of an array."""
    a = np.ascontiguousarray(a, dtype="<f4")
    return ",".join(str(n) for n in a.shape), a.tobytes()


def blob_to_array(shape: str, data: bytes) -> np.ndarray:
    """The float32 array stored as `array_to_blob` wrote it (a writable copy)."""
    dims = tuple(int(n) for n in shape.split(",")) if shape else ()
    return np.frombuffer(data, dtype="<f4").reshape(dims).astype(np.float32)


def _nan_to_none(x: float | None) -> float | None:
    return None if x is None or math.isnan(x) else float(x)


def _none_to_nan(x: float | None) -> float:
    return math.nan if x is None else float(x)


def _iso(t: float | None) -> str | None:
    if t is None:
        return None
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds")


# --- the lock that says "this run's writer is alive" ------------------------------------------------
class WriterLock:
    """An exclusive lock on a file, held while a RunWriter writes; the OS drops it if the process dies."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if not _try_lock(self._fd):  # a fresh uuid: nobody else can hold it
            os.close(self._fd)
            raise RuntimeError(f"lock {path} is already held")

    def release(self) -> None:
        if self._fd is None:
            return
        try:  # remove first, while still holding it, so nobody mistakes the file for a dead writer's
            self.path.unlink(missing_ok=True)
        finally:
            os.close(self._fd)  # closing drops the lock
            self._fd = None

    @staticmethod
    def is_free(path: Path) -> bool:
        """True when no live process holds the lock at `path` (or the file is gone)."""
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            return True
        try:
            return _try_lock(fd)
        finally:
            os.close(fd)  # releases the lock if we took it


try:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False

except ImportError:  # Windows: msvcrt locks are also dropped when the process dies
    import msvcrt

    def _try_lock(fd: int) -> bool:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            return False


# --- summaries --------------------------------------------------------------------------------------
@dataclass
class RunSummary:
    """One row of the runs list: what a table or the CLI shows, without the run's data."""

    id: int
    created: float  # unix seconds
    updated: float
    label: str | None
    status: str
    message: str | None
    norm_position: str
    norm_type: str
    depth: int
    d_model: int
    lr: float
    warmup_steps: int
    steps: int  # planned
    steps_done: int
    final_loss: float | None
    corpus: str
    seed: int
    writer_pid: int | None
    source: str  # train | import | demo

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: times as ISO 8601 UTC strings."""
        d = asdict(self)
        d["created"], d["updated"] = _iso(self.created), _iso(self.updated)
        return d


_SUMMARY_COLUMNS = ", ".join(f.name for f in RunSummary.__dataclass_fields__.values())
SORT_KEYS = {
    "created": "created",
    "updated": "updated",
    "id": "id",
    "final_loss": "final_loss",
    "depth": "depth",
    "status": "status",
    "label": "label",
}


@dataclass
class RunFilter:
    """Which runs `list_runs` returns; None means any."""

    status: tuple[str, ...] | None = None
    norm_position: tuple[str, ...] | None = None
    depth: int | None = None
    label_contains: str | None = None

    def sql(self) -> tuple[str, list[Any]]:
        where, args = [], []
        for column, values in (
            ("status", self.status),
            ("norm_position", self.norm_position),
        ):
            if values:
                where.append(f"{column} IN ({','.join('?' * len(values))})")
                args.extend(values)
        if self.depth is not None:
            where.append("depth = ?")
            args.append(self.depth)
        if self.label_contains:
            where.append("instr(lower(coalesce(label, '')), lower(?)) > 0")
            args.append(self.label_contains)
        return (" WHERE " + " AND ".join(where)) if where else "", args


# --- the store ----------------------------------------------------------------------------------------
class Store:
    """One SQLite file of runs. Thread-safe (one connection behind a lock); use as a context manager.

    `readonly=True` opens without writing anything: no migration, no recovery. Use it where a page
    only lists and shows runs; anything that trains or imports opens it for writing.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, readonly: bool = False) -> None:
        self.path = resolve_store_path(path)
        self.readonly = readonly
        self._lock = threading.RLock()
        if readonly and not self.path.exists():
            raise StoreError("err.store_missing", path=str(self.path))
        if not readonly:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = connect(self.path, readonly=readonly)
        try:
            if readonly:
                version = self._db.execute("PRAGMA user_version").fetchone()[0]
                if version > SCHEMA_VERSION:
                    raise StoreError(
                        "err.store_newer",
                        path=str(self.path),
                        have=version,
                        know=SCHEMA_VERSION,
                    )
                if version < SCHEMA_VERSION:
                    raise StoreError("err.store_old_readonly", path=str(self.path))
            else:
                migrate(self._db, self.path)
                self.recover()
        except sqlite3.DatabaseError as e:
            self._db.close()
            raise _store_error(self.path, e) from None
        except BaseException:
            self._db.close()
            raise

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
                raise _store_error(self.path, e) from None
            try:
                yield self._db
            finally:
                self._db.execute("COMMIT")

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
                    raise _write_error(self.path, e) from e
                raise

    # --- recovery ---------------------------------------------------------------------------------
    def recover(self) -> list[int]:
        """Mark `interrupted` every live-looking run whose writer is gone; return their ids."""
        with self._read() as db:
            rows = db.execute(f"SELECT id, writer_token FROM runs WHERE status IN {_LIVE_SQL}").fetchall()
        dead = []
        for run_id, token in rows:
            lock = self.lock_dir / f"{token}.lock" if token else None
            if lock is not None and not WriterLock.is_free(lock):
                continue  # its writer is alive
            with self._write() as db:
                # conditional: a writer that finished after our SELECT has a final status already
                changed = db.execute(
                    f"UPDATE runs SET status = 'interrupted', message = 'msg.interrupted', "
                    f"writer_token = NULL WHERE id = ? AND status IN {_LIVE_SQL} "
                    f"AND writer_token IS ?",
                    (run_id, token),
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
        sql = (
            f"SELECT {_SUMMARY_COLUMNS} FROM runs{where} "
            f"ORDER BY {SORT_KEYS[key]} IS NULL, {SORT_KEYS[key]} {order}, id {order}"
        )
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        with self._read() as db:
            return [RunSummary(*row) for row in db.execute(sql, args)]

    def summary(self, run_id: int) -> RunSummary:
        with self._read() as db:
            row = db.execute(f"SELECT {_SUMMARY_COLUMNS} FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise self._not_found(run_id)
        return RunSummary(*row)

    def open_run(self, run_id: int, max_probe_steps: int | None = None) -> RunData:
        """The whole run as RunData, as its writer measured it (probe arrays bit for bit); with
        `max_probe_steps`, at most that many probe steps, evenly thinned (RunData.max_probe_steps)."""
        from ln_viz.snapshot import PROBE_ARRAYS, RunData, RunInfo, Snapshot

        with self._read() as db:
            row = db.execute(
                "SELECT config, info, status, message, diverged_at FROM runs WHERE id = ?",
                (run_id,),
            ).fetchone()
            if row is None:
                raise self._not_found(run_id)
            scalars = db.execute(
                "SELECT step, loss, lr, grad_norm, elapsed, steps_per_sec, eval_loss, stalled, "
                "has_probes FROM scalars WHERE run_id = ? ORDER BY step",
                (run_id,),
            ).fetchall()
            probe_rows = db.execute("SELECT step, name, shape, data FROM probes WHERE run_id = ?", (run_id,)).fetchall()
        config, info, status, message, diverged_at = row
        data = RunData(
            RunInfo.from_dict({**json.loads(info), "config": json.loads(config)}), max_probe_steps=max_probe_steps
        )
        by_step: dict[int, dict[str, np.ndarray]] = {}
        for step, name, shape, blob in probe_rows:
            if name in PROBE_ARRAYS:  # a newer writer's extra arrays are not ours to show
                by_step.setdefault(step, {})[name] = blob_to_array(shape, blob)
        for (
            step,
            loss,
            lr,
            grad,
            elapsed,
            rate,
            eval_loss,
            stalled,
            has_probes,
        ) in scalars:
            # replaying through append() rebuilds stalled_since exactly as the live run had it
            data.append(
                Snapshot(
                    step,
                    _none_to_nan(loss),
                    _none_to_nan(lr),
                    _none_to_nan(grad),
                    _none_to_nan(elapsed),
                    _none_to_nan(rate),
                    stalled=bool(stalled),
                    eval_loss=eval_loss,
                    probes=by_step.get(step, {}) if has_probes else None,
                )
            )
        data.status, data.message, data.diverged_at = status, message, diverged_at
        return data

    def _not_found(self, run_id: int) -> StoreError:
        return StoreError("err.run_not_found", run_id=run_id, path=str(self.path))

    # --- changing ---------------------------------------------------------------------------------
    def label(self, run_id: int, text: str | None) -> None:
        """Set (or with None / "" clear) a run's label."""
        text = (text or "").strip() or None
        if text is not None and len(text) > MAX_LABEL_CHARS:
            raise StoreError("err.label_too_long", have=len(text), limit=MAX_LABEL_CHARS)
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
            run_id = _insert_run(db, data.info, label=label, status=status, created=created)
            probe_steps = set(data.probe_steps)
            rows = [_scalar_row(run_id, data, i, probe_steps) for i in range(len(data.scalars["step"]))]
            blobs = []
            for j, step in enumerate(data.probe_steps):
                for name, values in data.probes.items():
                    blobs.append((run_id, step, name, *array_to_blob(values[j])))
            _write_rows(db, rows, blobs)
            _update_summary(
                db,
                run_id,
                steps_done=data.steps_done,
                final_loss=data.final_loss(FINAL_LOSS_WINDOW),
                status=status,
                message=data.message,
                stalled_since=data.stalled_since,
                diverged_at=data.diverged_at,
                source=source,
                fingerprint=fingerprint,
            )
        return run_id


def connect(path: Path, readonly: bool = False) -> sqlite3.Connection:
    """A connection in autocommit mode (we BEGIN ourselves), WAL, waiting up to 10 s for locks."""
    try:
        if readonly:
            db = sqlite3.connect(
                f"{path.resolve().as_uri()}?mode=ro",
                uri=True,
                timeout=10,
                isolation_level=None,
                check_same_thread=False,
            )
        else:
            db = sqlite3.connect(path, timeout=10, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode = WAL")  # persistent: stored in the file
        db.execute("PRAGMA synchronous = NORMAL")  # in WAL: durable across process crashes
        db.execute("PRAGMA foreign_keys = ON")
        return db
    except sqlite3.DatabaseError as e:
        raise _store_error(path, e) from None


def _store_error(path: Path, e: sqlite3.DatabaseError) -> StoreError:
    text = str(e)
    if "not a database" in text or "malformed" in text:
        return StoreError("err.store_not_sqlite", path=str(path))
    return StoreError("err.store_open", path=str(path), reason=text)


def _write_error(path: Path, e: sqlite3.Error) -> StoreError:
    return StoreError("err.write_failed", path=str(path), reason=str(e))


def _insert_run(
    db: sqlite3.Connection,
    info: RunInfo,
    *,
    label: str | None,
    status: str,
    created: float | None = None,
    writer_token: str | None = None,
) -> int:
    info_dict = info.to_dict()
    config = info_dict.pop("config")
    now = time.time()
    cfg = info.config
    if label is not None and len(label) > MAX_LABEL_CHARS:
        raise StoreError("err.label_too_long", have=len(label), limit=MAX_LABEL_CHARS)
    cur = db.execute(
        "INSERT INTO runs (created, updated, label, status, config, info, norm_position, norm_type, "
        "depth, d_model, lr, warmup_steps, steps, corpus, seed, writer_token, writer_pid, writer_host) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            created if created is not None else now,
            now,
            label or None,
            status,
            json.dumps(config),
            json.dumps(info_dict),
            cfg.norm_position,
            cfg.norm_type,
            cfg.depth,
            cfg.d_model,
            cfg.lr,
            cfg.warmup_steps,
            cfg.steps,
            cfg.corpus,
            cfg.seed,
            writer_token,
            os.getpid() if writer_token else None,
            socket.gethostname() if writer_token else None,
        ),
    )
    return int(cur.lastrowid)


def _scalar_row(run_id: int, data: RunData, i: int, probe_steps: set[int]) -> tuple:
    s = data.scalars
    step = s["step"][i]
    stalled = data.stalled_since is not None and step >= data.stalled_since
    return (
        run_id,
        step,
        *(_nan_to_none(s[c][i]) for c in SCALAR_FIELDS),
        int(stalled),
        int(step in probe_steps),
    )


def _write_rows(db: sqlite3.Connection, rows: list[tuple], blobs: list[tuple]) -> None:
    db.executemany(
        "INSERT INTO scalars (run_id, step, loss, lr, grad_norm, elapsed, steps_per_sec, "
        "eval_loss, stalled, has_probes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    db.executemany(
        "INSERT INTO probes (run_id, step, name, shape, data) VALUES (?, ?, ?, ?, ?)",
        blobs,
    )


def _update_summary(db: sqlite3.Connection, run_id: int, **columns: Any) -> int:
    columns["updated"] = time.time()
    if "final_loss" in columns:
        columns["final_loss"] = _nan_to_none(columns["final_loss"])
    sets = ", ".join(f"{k} = ?" for k in columns)
    return db.execute(f"UPDATE runs SET {sets} WHERE id = ?", (*columns.values(), run_id)).rowcount


# --- the writer -------------------------------------------------------------------------------------
class RunWriter:
    """Writes one run to the store while it trains: `begin(info)`, `add(snap)` per step, `finish()`.

    `add` only serialises the snapshot; a background thread commits every `flush_every` seconds. Use
    as a context manager: leaving the block by an exception finishes the run as `failed` (or
    `stopped` on Ctrl-C), so a row is never left `running` by a process that is still alive.
    """

    def __init__(
        self,
        store: Store | str | os.PathLike[str] | None = None,
        *,
        flush_every: float = 0.5,
    ) -> None:
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
        # summary state, kept as RunData would compute it
        self._steps_done = 0
        self._recent: list[float] = []  # last FINAL_LOSS_WINDOW finite losses
        self._run = RunStatus()
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
        self._run.status = status
        try:
            self._db.execute("BEGIN IMMEDIATE")
            self.run_id = _insert_run(self._db, info, label=label, status=status, writer_token=token)
            self._db.execute("COMMIT")
        except BaseException as e:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            self._close()
            if isinstance(e, sqlite3.Error):
                raise _write_error(self.store.path, e) from e
            raise
        self._thread = threading.Thread(target=self._loop, name=f"ln-viz-writer-{self.run_id}", daemon=True)
        self._thread.start()
        return self.run_id

    def add(self, snap: Snapshot) -> None:
        """Queue one step (serialised now, so the caller may drop or change `snap` afterwards)."""
        if self._error is not None:
            raise self._error
        if self.run_id is None:
            raise RuntimeError("call begin() before add()")
        blobs = [
            (self.run_id, snap.step, name, *array_to_blob(values))
            for name, values in (snap.probes or {}).items()
            if values is not None
        ]
        row = (
            self.run_id,
            snap.step,
            _nan_to_none(snap.loss),
            _nan_to_none(snap.lr),
            _nan_to_none(snap.grad_norm),
            _nan_to_none(snap.elapsed),
            _nan_to_none(snap.steps_per_sec),
            _nan_to_none(snap.eval_loss),
            int(snap.stalled),
            int(snap.probes is not None),
        )
        with self._cond:
            self._pending.append((row, blobs))
            # the same rules as RunData.append, so the summary row matches the reopened run
            self._steps_done = snap.step
            if math.isfinite(snap.loss):
                self._recent = (self._recent + [snap.loss])[-FINAL_LOSS_WINDOW:]
            track_status(self._run, snap)

    def flush(self) -> None:
        """Commit everything queued so far (the background thread calls this every flush_every s)."""
        with self._io:
            with self._cond:
                pending, self._pending = self._pending, []
                summary = self._summary()
            if self._db is None or (not pending and summary == self._written):
                return  # nothing new: no write, so an idle writer leaves the file alone
            db = self._db
            try:
                db.execute("BEGIN IMMEDIATE")
                _write_rows(
                    db,
                    [row for row, _ in pending],
                    [b for _, blobs in pending for b in blobs],
                )
                _update_summary(db, self.run_id, **summary)
                db.execute("COMMIT")
                self._written = summary
            except BaseException as e:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                with self._cond:  # keep them for the next try
                    self._pending[:0] = pending
                if isinstance(e, sqlite3.Error):  # disk full, file removed...: a sentence, not a traceback
                    raise _write_error(self.store.path, e) from e
                raise

    def _summary(self) -> dict[str, Any]:
        recent = self._recent
        return {
            "steps_done": self._steps_done,
            "final_loss": sum(recent) / len(recent) if recent else None,
            "status": self._run.status,
            "message": self._run.message,
            "stalled_since": self._run.stalled_since,
            "diverged_at": self._run.diverged_at,
        }

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
        if self.run_id is None or self._db is None:
            return
        from ln_viz.names import STATUSES

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
