"""Where the store lives, how its SQLite file is opened, and the one-sentence errors a user can fix."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from ln_viz.i18n import LocalizedError


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
        raise store_error(path, e) from None


def store_error(path: Path, e: sqlite3.DatabaseError) -> StoreError:
    """The sentence for a file that cannot be opened or read as a store."""
    text = str(e)
    if "not a database" in text or "malformed" in text:
        return StoreError("err.store_not_sqlite", path=str(path))
    return StoreError("err.store_open", path=str(path), reason=text)


def write_error(path: Path, e: sqlite3.Error) -> StoreError:
    """The sentence for a write that failed (disk full, file removed...)."""
    return StoreError("err.write_failed", path=str(path), reason=str(e))
