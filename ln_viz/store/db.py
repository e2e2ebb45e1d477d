"""Where the store lives, how its SQLite file is opened, and the one-sentence errors a user can fix.

Opening never writes before the file is known to be an ln-viz store (or a new, empty one): `connect`
first reads the file's tables and `user_version`, and only then switches an ln-viz store to WAL. So a
`--store` that names another program's database is refused untouched, and a read-only command (`runs
list`, `runs export`) opens with `mode=ro`, or `immutable=1` when its folder is read-only (SQLite
cannot create the `-shm` file a WAL reader needs there; nothing can be writing it there either).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from ln_viz.i18n import LocalizedError

SQLITE_MAGIC = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database file
STORE_TABLES = frozenset({"runs", "scalars", "probes"})  # an ln-viz store has these from version 1
WRITER_TIMEOUT_S = 1.0  # a RunWriter's busy wait per try: it retries (and buffers) itself


class StoreError(LocalizedError):
    """A store problem a user can fix (bad file, unknown run id): one sentence."""


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


def make_parent(path: Path) -> None:
    """Create the store's folder; a path below a regular file is one sentence, not a traceback."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise StoreError("err.store_below_file", path=str(path)) from None
    except OSError as e:
        raise StoreError("err.store_open", path=str(path), reason=e.strerror or str(e)) from None


def file_identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the file at `path` now; None when there is none. A store whose path no
    longer names the file it opened was deleted or replaced under it."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def connect(path: Path, readonly: bool = False, timeout: float = 10.0) -> sqlite3.Connection:
    """A connection in autocommit mode (we BEGIN ourselves), WAL, waiting up to `timeout` s for locks.
    The file is checked to be an ln-viz store (or empty) before anything is written to it."""
    db = None
    try:
        db = _open(path, readonly, timeout)
        check_is_store(db, path)
        if not readonly:
            db.execute("PRAGMA journal_mode = WAL")  # persistent: stored in the file
        db.execute("PRAGMA synchronous = NORMAL")  # in WAL: durable across process crashes
        db.execute("PRAGMA foreign_keys = ON")
        return db
    except sqlite3.DatabaseError as e:
        if db is not None:
            db.close()
        raise store_error(path, e) from None
    except BaseException:
        if db is not None:
            db.close()
        raise


def _open(path: Path, readonly: bool, timeout: float) -> sqlite3.Connection:
    kw = {"timeout": timeout, "isolation_level": None, "check_same_thread": False}
    if not readonly:
        return sqlite3.connect(path, **kw)
    uri = path.resolve().as_uri()
    db = sqlite3.connect(f"{uri}?mode=ro", uri=True, **kw)
    try:
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return db
    except sqlite3.OperationalError:
        db.close()
        if os.access(path.parent, os.W_OK):
            raise
    # a read-only folder: read the file as it is (no -shm can be made; no writer can be at work there)
    return sqlite3.connect(f"{uri}?immutable=1", uri=True, **kw)


def check_is_store(db: sqlite3.Connection, path: Path) -> None:
    """Refuse a database that is not an ln-viz store: one with tables but not ours, or a schema
    version but no tables. An empty file (no tables, version 0) may become a store."""
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if (tables or version) and not STORE_TABLES <= tables:
        raise StoreError("err.store_foreign", path=str(path))


def store_error(path: Path, e: sqlite3.DatabaseError) -> StoreError:
    """The sentence for a file that cannot be opened or read as a store: damaged, not SQLite,
    locked by another process, or another reason SQLite gives."""
    text = str(e)
    if "not a database" in text or "malformed" in text:
        return StoreError("err.store_damaged" if _has_sqlite_header(path) else "err.store_not_sqlite", path=str(path))
    if "locked" in text or "busy" in text:
        return StoreError("err.store_locked", path=str(path))
    if ("disk I/O error" in text or "full" in text) and disk_full(path):
        return StoreError("err.store_full", path=str(path), reason=text)  # not "check the path and its permissions"
    return StoreError("err.store_open", path=str(path), reason=text)


def disk_full(path: Path) -> bool:
    """Whether the disk that holds `path` has no room left (SQLite says only "disk I/O error" when it
    cannot even make a store's -shm file there)."""
    try:
        st = os.statvfs(path.parent)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < 64 * 1024


def _has_sqlite_header(path: Path) -> bool:
    """Whether the file starts like an SQLite database (a truncated or corrupted one still does)."""
    try:
        with open(path, "rb") as f:
            head = f.read(len(SQLITE_MAGIC))
    except OSError:
        return False
    return bool(head) and SQLITE_MAGIC.startswith(head)


def write_error(path: Path, e: sqlite3.Error) -> StoreError:
    """The sentence for a write that failed: another process holds the store, or the disk is full,
    the file was removed, the folder is read-only (SQLite's reason)."""
    text = str(e)
    if "locked" in text or "busy" in text:
        return StoreError("err.store_locked", path=str(path))
    if "malformed" in text or "not a database" in text:
        return store_error(path, e)
    return StoreError("err.write_failed", path=str(path), reason=text)
