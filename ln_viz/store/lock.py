"""The lock that says "this run's writer is alive": an exclusive `flock` the OS drops when the process
dies, however it dies (see ln_viz.store for why flock and not lockf)."""

from __future__ import annotations

import os
from pathlib import Path


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
        """Remove the file and drop the lock (idempotent)."""
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
