"""The store's schema, one version at a time (as sqlite-utils keeps them): `PRAGMA user_version` says
which version a file is at, and MIGRATIONS[i] takes it from version i to i + 1.

The SQL below is history: a released migration is never edited, only followed by a new one, so every
store ever written still opens. The scalars table's float columns are the schema's scalars (a test
checks the created table against ln_viz.schema.SCALARS).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

from ln_viz.store.db import StoreError


def execute_script(db: sqlite3.Connection, script: str) -> None:
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
    execute_script(
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
            name          TEXT NOT NULL,     -- schema.PROBES
            shape         TEXT NOT NULL,     -- comma-separated dims, "" for a scalar
            data          BLOB NOT NULL,     -- little-endian float32, C order
            PRIMARY KEY (run_id, name, step)
        );
        """,
    )


def _migrate_2(db: sqlite3.Connection) -> None:
    """Version 2: where a run came from (train, import, demo), the fingerprint of an imported file
    (so importing it again finds the run instead of copying it), and a key-value `meta` table that
    remembers which bundled demo runs were ever loaded (so a demo the user deleted stays deleted)."""
    execute_script(
        db,
        """
        ALTER TABLE runs ADD COLUMN source TEXT NOT NULL DEFAULT 'train';
        ALTER TABLE runs ADD COLUMN fingerprint TEXT;  -- sha256 of the imported run file's JSON
        CREATE INDEX runs_fingerprint ON runs(fingerprint);
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        """,
    )


def _migrate_3(db: sqlite3.Connection) -> None:
    """Version 3: the seed group a run belongs to (the runs one Start trained over several seeds), so
    the Runs page lists and exports them together; NULL for a run of its own, as every older run is."""
    execute_script(
        db,
        """
        ALTER TABLE runs ADD COLUMN seed_group TEXT;
        CREATE INDEX runs_seed_group ON runs(seed_group);
        """,
    )


def _migrate_4(db: sqlite3.Connection) -> None:
    """Version 4: a run recorded from a model ln-viz did not build (`ln_viz.attach`, source 'attach')
    keeps its model card (ln_viz.byom.card.ModelCard as JSON: blocks, placement, norms, matrices); NULL
    for ln-viz's own runs, as every older run is."""
    execute_script(db, "ALTER TABLE runs ADD COLUMN model_card TEXT;")


# MIGRATIONS[i] takes a store from version i to i + 1; append, never edit a released one.
MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [_migrate_1, _migrate_2, _migrate_3, _migrate_4]
SCHEMA_VERSION = len(MIGRATIONS)


def migrate(db: sqlite3.Connection, path: Path, upto: int = SCHEMA_VERSION) -> int:
    """Bring the schema to version `upto`, one transaction per step; refuse a newer store."""
    check_version(db, path)

    def write(version: int) -> None:
        db.execute(f"PRAGMA user_version = {version}")

    return step_up(db, MIGRATIONS[:upto], lambda: db.execute("PRAGMA user_version").fetchone()[0], write)


def step_up(
    db: sqlite3.Connection,
    steps: Sequence[Callable[[sqlite3.Connection], None]],
    read_version: Callable[[], int],
    write_version: Callable[[int], None],
) -> int:
    """Apply `steps[v:]` to a schema at version v (`read_version()`), one transaction per step, noting
    each new version (`write_version`); return the version reached. Nothing is written when the schema
    is up to date. The run store's versions are `PRAGMA user_version`, the sweep tables' a `meta` key."""
    version = read_version()
    while version < len(steps):
        db.execute("BEGIN IMMEDIATE")
        try:
            # re-read inside the write lock: another process may have migrated meanwhile
            version = read_version()
            if version < len(steps):
                steps[version](db)
                version += 1
                write_version(version)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
    return version


def check_version(db: sqlite3.Connection, path: Path, readonly: bool = False) -> int:
    """The file's schema version; a newer one is refused, and read-only, so is an older one (reading
    it would need a migration, which is a write)."""
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise StoreError("err.store_newer", path=str(path), have=version, know=SCHEMA_VERSION)
    if readonly and version == 0:  # an empty database: no store yet (a read must not make one)
        raise StoreError("err.store_missing", path=str(path))
    if readonly and version < SCHEMA_VERSION:
        raise StoreError("err.store_old_readonly", path=str(path))
    return version
