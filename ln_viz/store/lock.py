"""The lock that says "this run's writer is alive": an exclusive `flock` the OS drops when the process
dies, however it dies (see ln_viz.store for why flock and not lockf).

The lock file is also the writer's ballast and its last word. It is created BALLAST_BYTES long (real
blocks, not a hole), and a writer whose disk fills frees them (`free_ballast`) to commit the run's
final status. While its writes fail, the writer keeps the message key of why at the start of the file
(`note`, written over bytes the file already has, so it works on a full disk): when the process dies
then, or gives up with the store still locked (`abandon`), `recover()` marks the run `interrupted`
with that cause instead of "crashed or killed".
"""

from __future__ import annotations

import os
from pathlib import Path

BALLAST_BYTES = 64 * 1024  # a final status commit in WAL needs a few 4 KiB pages
_NOTE_BYTES = 64  # the start of the file that holds a message key (NUL-padded)


class WriterLock:
    """An exclusive lock on a file, held while a RunWriter writes; the OS drops it if the process dies."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if not _try_lock(self._fd):  # a fresh uuid: nobody else can hold it
            os.close(self._fd)
            raise RuntimeError(f"lock {path} is already held")
        try:
            os.write(self._fd, bytes(BALLAST_BYTES))
        except OSError:  # no room for ballast: the lock still works, a full disk just has no reserve
            pass

    def free_ballast(self) -> None:
        """Give the reserved blocks back to the file system (the disk is full), keeping any note."""
        if self._fd is not None:
            os.ftruncate(self._fd, _NOTE_BYTES)

    def note(self, key: str | None) -> None:
        """Keep (or with None clear) the message key `recover()` gives the run if this writer ends
        without finishing it."""
        if self._fd is None:
            return
        data = (key or "").encode()[:_NOTE_BYTES].ljust(_NOTE_BYTES, b"\0")
        try:
            os.pwrite(self._fd, data, 0)
        except OSError:
            pass  # best effort: without it the run is "interrupted" with the general message

    def abandon(self, key: str) -> None:
        """Drop the lock but leave the file with its note: the run's row could not be finished."""
        if self._fd is None:
            return
        self.note(key)
        os.close(self._fd)
        self._fd = None

    @staticmethod
    def read_note(path: Path) -> str | None:
        """The message key a writer left in its lock file, if any."""
        try:
            with open(path, "rb") as f:
                key = f.read(_NOTE_BYTES).rstrip(b"\0").decode("ascii", "replace")
        except OSError:
            return None
        return key if key.startswith("msg.") else None

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
