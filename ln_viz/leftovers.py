"""What a SIGKILLed ln-viz process leaves behind, and how the next one removes it. SIGKILL cannot be caught, so
whatever a process makes that should not outlive it (a video's tile folder and part file, multiprocessing's folder
of the fork server's socket) carries its maker's pid in its name (`ln-viz-<kind>-<pid>-…`, `.…-ln-viz-<pid>-…`)
and is locked while used; `sweep_stale` removes only those: our names, whose process is gone and whose lock no
one holds (a process in another pid namespace sharing the folder still holds its lock), never a link, only the
user's own.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_OWNER = re.compile(r"ln-viz-(?:[a-z]+-)?(\d+)-")


@contextmanager
def owned(path: str | Path, fd: int | None = None) -> Iterator[None]:
    """Hold an advisory lock on `path` (or on the open `fd`, then closed at the end) while the block runs."""
    try:
        import fcntl
    except ImportError:  # Windows: the owner's pid alone decides
        fcntl = None  # type: ignore[assignment]
    fd = os.open(path, os.O_RDONLY) if fd is None else fd
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield
    finally:
        os.close(fd)


def _pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # EPERM: a live process of another user
        return False
    return False


def _stale(path: Path) -> bool:
    """Whether `path` is ours and its maker is gone: our name, its pid no process, its lock free."""
    owner = _OWNER.search(path.name)
    if owner is None or int(owner.group(1)) == os.getpid() or path.is_symlink():
        return False
    try:
        if path.lstat().st_uid != os.getuid() or not _pid_gone(int(owner.group(1))):
            return False
        with owned(path):
            return True
    except OSError:  # gone meanwhile, unreadable, or its lock held: not ours to remove
        return False


def sweep_stale(folder: str | Path, pattern: str) -> list[Path]:
    """Remove what killed processes left in `folder` (`pattern`: the names to look at); the paths removed."""
    removed = []
    for path in Path(folder).glob(pattern):
        if _stale(path):
            shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)
            removed.append(path)
    return removed
