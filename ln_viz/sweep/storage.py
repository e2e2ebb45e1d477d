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
from ln_viz.store.migrations import execute_script, step_up
from ln_viz.sweep.results import CellResult
from ln_viz.sweep.spec import SweepConfig

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
    """The sweep tables of one store file. Thread-safe (one connection behind a lock)."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = resolve_store_path(path)
        Store(self.path).close()  # creates the file and brings the run store's own schema up first
        self._db = connect(self.path)
        self._lock = threading.Lock()
        try:
            self._migrate()
        except StoreError:
            self._db.close()
            raise
        except sqlite3.Error as e:
            self._db.close()
            raise StoreError("err.store_open", path=str(self.path), reason=str(e)) from None

    def _version(self) -> int:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (SCHEMA_KEY,)).fetchone()
        version = int(row[0]) if row else 0
        if version > len(MIGRATIONS):  # never written down to ours: a newer ln-viz's tables stay as they are
            raise StoreError("err.store_newer", path=str(self.path), have=version, know=len(MIGRATIONS))
        return version

    def _migrate(self) -> None:
        def write(version: int) -> None:
            self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (SCHEMA_KEY, str(version)))

        with self._lock:  # up to date: opening writes nothing (a page opens it per rerun)
            step_up(self._db, MIGRATIONS, self._version, write)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (the file stays)."""
        with self._lock:
            self._db.close()

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
        row = [_to_sql(r, c) for c in _CELL_COLUMNS]
        marks = ", ".join("?" * (len(row) + 1))
        with self._lock:
            self._db.execute(
                f"INSERT OR REPLACE INTO sweep_cells ({', '.join(_CELL_COLUMNS)}, created) VALUES ({marks})",
                (*row, time.time()),
            )

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
                    r = _from_row(row)
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
        return [
            {"id": i, "spec": SweepConfig.from_dict(json.loads(s)), "created": c, "executor": e, "elapsed_s": el}
            for i, s, c, e, el in rows
        ]


def _to_sql(r: CellResult, column: str) -> Any:
    value = getattr(r, column)
    if column == "config":
        return json.dumps(value, sort_keys=True)
    if column == "curve":
        return json.dumps([list(p) for p in value])
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _from_row(row: tuple) -> CellResult:
    d = dict(zip(_CELL_COLUMNS, row))
    d["config"] = json.loads(d["config"])
    d["curve"] = json.loads(d["curve"])
    return CellResult.from_dict(d)


# --- export -----------------------------------------------------------------------------------------
def results_frame(results: Iterable[CellResult]) -> pd.DataFrame:
    """One row per cell: the axes, status and losses (no curve, no config)."""
    columns = [c for c in _CELL_COLUMNS if c not in ("config", "curve", "fingerprint")]
    return pd.DataFrame([{c: getattr(r, c) for c in columns} for r in results], columns=columns)


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

        raise SweepError("sweep.err.export_suffix", "out", path=str(path))
    return path
