"""Sweeps in the run store's SQLite file, next to its runs: a map reopens without retraining.

Two tables of our own, created (idempotently) in the same file the run store uses:

    sweeps       one row per sweep spec: the spec as JSON, its fingerprint, when, where it ran
    sweep_cells  one row per trained cell config (fingerprint of the full RunConfig): its axes, status,
                 losses and a thinned loss curve as JSON

A cell row belongs to no one sweep: any sweep whose grid holds the same config finds it, so a
restarted (or overlapping) sweep trains only what is missing (resume). Failed cells are kept for the
map but trained again on resume, since a crash says nothing about the config. Our schema version is
the store's meta key `sweep_schema`; MIGRATIONS bring older files up, through the run store's own
migration steps and statement handling (ln_viz.store.migrations). As there, a released step is never
edited, only followed by a new one.
"""

from __future__ import annotations

import json
import logging
import math
import os
import sqlite3
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Self

import pandas as pd

from ln_viz.store import Store, StoreError, connect, resolve_store_path
from ln_viz.store.db import store_error
from ln_viz.store.migrations import execute_script, step_up
from ln_viz.sweep.results import CellResult
from ln_viz.sweep.spec import SweepConfig

log = logging.getLogger(__name__)
SCHEMA_KEY = "sweep_schema"
_CELL_COLUMNS = (
    "fingerprint",
    "norm_position",
    "lr",
    "warmup_steps",
    "depth",
    "seed",
    "status",
    "final_loss",
    "eval_loss",
    "best_loss",
    "init_loss",
    "diverged_step",
    "steps_done",
    "elapsed_s",
    "error",
    "config",
    "curve",
)
_V1 = """
CREATE TABLE IF NOT EXISTS sweeps (
    id INTEGER PRIMARY KEY,
    fingerprint TEXT NOT NULL UNIQUE,
    spec TEXT NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    executor TEXT,
    elapsed_s REAL
);
CREATE TABLE IF NOT EXISTS sweep_cells (
    fingerprint TEXT PRIMARY KEY,
    norm_position TEXT NOT NULL,
    lr REAL NOT NULL,
    warmup_steps INTEGER NOT NULL,
    depth INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    status TEXT NOT NULL,
    final_loss REAL,
    eval_loss REAL,
    best_loss REAL,
    init_loss REAL,
    diverged_step INTEGER,
    steps_done INTEGER NOT NULL,
    elapsed_s REAL,
    error TEXT,
    config TEXT NOT NULL,
    curve TEXT NOT NULL,
    created REAL NOT NULL
);
"""


def _migrate_1(db: sqlite3.Connection) -> None:
    """Version 1: the sweeps and their cells."""
    execute_script(db, _V1)


MIGRATIONS = [_migrate_1]  # MIGRATIONS[v] takes our tables from version v to v + 1


class SweepStore:
    """The sweep tables of one store file. Thread-safe (one connection behind a lock).

    `timeout`: how long a statement waits for a write lock held elsewhere (a sweep's CellSaver waits
    briefly and retries by itself). A file deleted or replaced under it is noticed as the runner's
    store notices it (`moved`), and `reopen_if_moved` opens what is at the path now, its sweep tables
    made. A damaged row (not JSON, a field out of place) reads as missing, so it is trained again and
    replaced, and a damaged version number is the store's one "damaged" sentence."""

    def __init__(self, path: str | os.PathLike[str] | None = None, timeout: float = 10.0) -> None:
        self.path = resolve_store_path(path)
        self.timeout = timeout
        self._runs = Store(self.path)  # creates the file, brings the run store's schema up, and watches the file
        self._lock = threading.Lock()
        try:
            self._db = self._open()
        except BaseException:
            self._runs.close()
            raise

    def _open(self) -> sqlite3.Connection:
        db = self._db = connect(self.path, timeout=self.timeout)
        try:
            self._migrate()
        except StoreError:
            db.close()
            raise
        except sqlite3.DatabaseError as e:
            db.close()
            raise store_error(self.path, e) from None  # locked, damaged: the sentences the runs commands say
        return db

    def _version(self) -> int:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (SCHEMA_KEY,)).fetchone()
        try:
            version = int(row[0]) if row else 0
        except (TypeError, ValueError):
            raise StoreError("err.store_damaged", path=str(self.path)) from None
        if version > len(MIGRATIONS):  # never written down to ours: a newer ln-viz's tables stay as they are
            raise StoreError("err.store_newer", path=str(self.path), have=version, know=len(MIGRATIONS))
        return version

    def _migrate(self) -> None:
        """Bring our tables up (the caller holds `_lock`, or is the constructor). Up to date, opening
        writes nothing (a page opens it per rerun)."""

        def write(version: int) -> None:
            self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (SCHEMA_KEY, str(version)))

        step_up(self._db, MIGRATIONS, self._version, write)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (the file stays)."""
        with self._lock:
            self._db.close()
            self._runs.close()

    def set_timeout(self, seconds: float) -> None:
        """How long a statement waits for a write lock held elsewhere, from now on (also after a reopen)."""
        with self._lock:
            self.timeout = seconds
            self._db.execute(f"PRAGMA busy_timeout = {int(seconds * 1000)}")

    def moved(self) -> bool:
        """Whether the path no longer names the file this store opened (deleted or replaced): one `stat`."""
        return self._runs.moved() or not self._runs.usable

    def reopen_if_moved(self) -> bool:
        """When the file was deleted or replaced, open what is at the path now (a new store, its sweep
        tables made, where it was deleted), as the server's store does; True when it did. Raises
        StoreError when what is there cannot be opened (tried again at the next call)."""
        with self._lock:
            if not self.moved():
                return False
            self._db.close()
            if self._runs.usable:
                self._runs.reopen_if_moved()  # removes the old file's logs, opens the new file
            else:  # a reopen that failed before: try what is at the path now
                self._runs.close()
                self._runs = Store(self.path)
            self._open()
            return True

    # --- writing ----------------------------------------------------------------------------------
    def begin(self, spec: SweepConfig, executor: str) -> int:
        """The id of the sweep of this spec, made now or found (a restarted sweep is the same sweep)."""
        now = time.time()
        with self._lock:
            self._db.execute(
                "INSERT INTO sweeps (fingerprint, spec, created, updated, executor) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(fingerprint) DO UPDATE SET updated = excluded.updated, executor = excluded.executor",
                (spec.fingerprint, json.dumps(spec.to_dict()), now, now, executor),
            )
            return self._db.execute("SELECT id FROM sweeps WHERE fingerprint = ?", (spec.fingerprint,)).fetchone()[0]

    def finish(self, sweep_id: int, elapsed_s: float) -> None:
        """Note when a sweep run ended and how long it took."""
        with self._lock:
            self._db.execute(
                "UPDATE sweeps SET updated = ?, elapsed_s = ? WHERE id = ?", (time.time(), elapsed_s, sweep_id)
            )

    def put_cell(self, r: CellResult) -> None:
        """Store (or replace) one cell's result, in its own transaction: a killed sweep keeps it."""
        self.put_cells([r])

    def put_cells(self, results: Iterable[CellResult]) -> None:
        """Store (or replace) cells in one transaction: all of them or, when the store refuses
        (sqlite3.Error), none."""
        rows = [(*(_to_sql(r, c) for c in _CELL_COLUMNS), time.time()) for r in results]
        marks = ", ".join("?" * (len(_CELL_COLUMNS) + 1))
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(
                    f"INSERT OR REPLACE INTO sweep_cells ({', '.join(_CELL_COLUMNS)}, created) VALUES ({marks})", rows
                )
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise

    # --- reading ----------------------------------------------------------------------------------
    def cells(self, fingerprints: Iterable[str]) -> dict[str, CellResult]:
        """The stored results among these cell fingerprints."""
        wanted = list(fingerprints)
        out: dict[str, CellResult] = {}
        with self._lock:
            for i in range(0, len(wanted), 500):  # SQLite's limit on ? parameters
                chunk = wanted[i : i + 500]
                rows = self._db.execute(
                    f"SELECT {', '.join(_CELL_COLUMNS)} FROM sweep_cells WHERE fingerprint IN "
                    f"({', '.join('?' * len(chunk))})",
                    chunk,
                ).fetchall()
                for row in rows:
                    r = _from_row(row, self.path)
                    if r is not None:
                        out[r.fingerprint] = r
        return out

    def results(self, spec: SweepConfig) -> list[CellResult]:
        """The stored cells of a spec's grid, in the grid's order."""
        found = self.cells(c.fingerprint for c in spec.cells())
        return [found[c.fingerprint] for c in spec.cells() if c.fingerprint in found]

    def sweeps(self) -> list[dict[str, Any]]:
        """Every stored sweep, newest first: id, spec (SweepConfig), created, executor, elapsed_s."""
        with self._lock:
            rows = self._db.execute(
                "SELECT id, spec, created, executor, elapsed_s FROM sweeps ORDER BY updated DESC"
            ).fetchall()
        out = []
        for i, s, c, e, el in rows:
            try:
                spec = SweepConfig.from_dict(json.loads(s))
            except (TypeError, ValueError, KeyError):
                log.warning("ln-viz: sweep %s in %s is damaged and is left out", i, self.path)
                continue
            out.append({"id": i, "spec": spec, "created": c, "executor": e, "elapsed_s": el})
        return out


def _to_sql(r: CellResult, column: str) -> Any:
    value = getattr(r, column)
    if column == "config":
        return json.dumps(value, sort_keys=True)
    if column == "curve":
        return json.dumps([list(p) for p in value])
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _from_row(row: tuple, path: Path) -> CellResult | None:
    """A stored cell, or None (logged) when its row is damaged: it then reads as not yet trained."""
    d = dict(zip(_CELL_COLUMNS, row))
    try:
        d["config"] = json.loads(d["config"])
        d["curve"] = json.loads(d["curve"])
        return CellResult.from_dict(d)
    except (TypeError, ValueError, KeyError):
        log.warning("ln-viz: a sweep cell in %s is damaged and is trained again: %s", path, d["fingerprint"])
        return None


# --- export -----------------------------------------------------------------------------------------
def results_frame(results: Iterable[CellResult]) -> pd.DataFrame:
    """One row per cell: the axes, status and losses (no curve, no config)."""
    columns = [c for c in _CELL_COLUMNS if c not in ("config", "curve", "fingerprint")]
    return pd.DataFrame([{c: getattr(r, c) for c in columns} for r in results], columns=columns)


EXPORT_SUFFIXES = (".csv", ".parquet")


def check_export_path(path: str | os.PathLike[str]) -> Path:
    """Refuse, in one sentence and before any training, an export path that cannot be written: a
    wrong suffix, a folder, a folder that does not exist or refuses a new file (/proc). Creating the
    file is tried (and undone when it did not exist), so what the kernel refuses is found now."""
    from ln_viz.sweep.spec import SweepError

    path = Path(path)
    if path.suffix not in EXPORT_SUFFIXES:
        raise SweepError("sweep.err.export_suffix", "export", path=str(path))
    if path.is_dir():
        raise SweepError("sweep.err.export_folder", "export", path=str(path))
    existed = path.exists()
    try:
        with open(path, "ab"):
            pass
        if not existed:
            path.unlink()
    except OSError as e:
        raise SweepError("sweep.err.export_path", "export", path=str(path), reason=e.strerror or str(e)) from None
    return path


def export_results(results: Iterable[CellResult], path: str | os.PathLike[str]) -> Path:
    """Write the cells as .csv or .parquet (by the file's suffix); return the path."""
    path = Path(path)
    frame = results_frame(results)
    if path.suffix == ".parquet":
        frame.to_parquet(path, index=False)
    elif path.suffix == ".csv":
        frame.to_csv(path, index=False)
    else:
        from ln_viz.sweep.spec import SweepError

        raise SweepError("sweep.err.export_suffix", "export", path=str(path))
    return path
