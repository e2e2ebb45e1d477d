"""The server's end of a worker process: starting it (without the parent's `__main__`), its pipes,
and how to end it.

How a worker starts: the Runner's and the Init lab's workers are forks of a fork server (multiprocessing's
`forkserver`; `fork_context`) that imported torch and the trainer once (`runner.fork_server`), so a worker starts
in milliseconds of CPU instead of ~2 s of imports. The fork server is a child of the server; it exits once the
server and every worker it forked are gone (each holds its "alive" pipe). A sweep's workers and the Ray host are
spawned (`worker_context`): fresh interpreters, as before.

Why plain pipes and not `multiprocessing.Queue`/`Event`: both hold locks that a worker killed at the
wrong moment leaves held (the server's next `put`/`set` would hang), and both start the resource
tracker process. A one-way pipe per direction has no lock, and its reader sees EOF the moment the
worker dies, so a SIGKILLed worker turns into a `failed` run instead of a hang.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.context
import os
import shutil
import signal
import tempfile
import threading
import time
from typing import Any

from ln_viz.leftovers import owned, sweep_stale
from ln_viz.runner.messages import Ready, ServerMessage, Stop, WorkerMessage
from ln_viz.runner.worker import WORKER_NICE, worker_main

WORKER_NAME = "ln-viz-worker"
_PATCH_LOCK = threading.Lock()


def _skip_main_module_in_workers() -> None:
    """Spawn normally re-runs the parent's `__main__` in the child. Under Streamlit that is the page
    being run (its script runner installs the page as `__main__`): every worker would execute the page,
    and one that starts a run would recurse. The worker's code lives in this importable package and
    needs nothing from `__main__`, so drop it from the spawn data of our workers only (by name)."""
    from multiprocessing import spawn

    with _PATCH_LOCK:
        original = spawn.get_preparation_data
        if getattr(original, "ln_viz_skips_main", False):
            return

        def get_preparation_data(name: str) -> dict[str, Any]:
            data = original(name)
            if name == WORKER_NAME:
                data.pop("init_main_from_path", None)
                data.pop("init_main_from_name", None)
            return data

        get_preparation_data.ln_viz_skips_main = True  # type: ignore[attr-defined]
        spawn.get_preparation_data = get_preparation_data


class _NamedProcess(multiprocessing.context.SpawnProcess):
    """A spawned process named as our workers are, so it skips the parent's `__main__` (see above)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.name = WORKER_NAME


class _WorkerContext(multiprocessing.context.SpawnContext):
    Process = _NamedProcess


def worker_context() -> multiprocessing.context.SpawnContext:
    """A spawn context whose processes skip the parent's `__main__`; for process pools."""
    _skip_main_module_in_workers()
    return _WorkerContext()


class _ForkedProcess(multiprocessing.context.ForkServerProcess):
    """A fork of the fork server, named as our workers are (it skips the parent's `__main__` too: the fork
    server's children are prepared from the same data as spawned ones)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.name = WORKER_NAME


class _ForkContext(multiprocessing.context.ForkServerContext):
    Process = _ForkedProcess


# what the fork server imports before it forks (replacing multiprocessing's default, the parent's `__main__`:
# under Streamlit, the page)
FORK_SERVER_PRELOAD = ["ln_viz.runner.fork_server"]


def fork_context() -> multiprocessing.context.BaseContext:
    """A context whose processes are forks of a fork server with torch imported (see the module docstring);
    a spawn context (`worker_context`) where there is no fork server (not on Windows). A fork's niceness is at
    least WORKER_NICE (the fork server's). The preload is multiprocessing's, one per process: if something else
    started the fork server first, our workers still start there, only with their own imports."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return worker_context()
    _skip_main_module_in_workers()
    from multiprocessing import forkserver

    with _PATCH_LOCK:
        _own_multiprocessing_folder()
        forkserver.set_forkserver_preload(FORK_SERVER_PRELOAD)
    return _ForkContext()


# multiprocessing's temporary folder (the fork server's socket is made there) as ln-viz names it: `pymp-…`, its
# own name, says nothing of whose it is, and a SIGKILLed server left one behind in the temporary folder for good
MP_PREFIX = "ln-viz-mp-"
_mp_folder_lock = contextlib.ExitStack()  # held while this process lives
_mp_folder: list[str] = []  # its path, once made


def _own_multiprocessing_folder() -> None:
    """Make multiprocessing's temporary folder `ln-viz-mp-<pid>-…`, locked while this process lives and removed
    at its exit as multiprocessing's own is; one a killed server left is swept here first (`ln_viz.leftovers`).
    Left as it is if multiprocessing made its folder already (something else used it first)."""
    from multiprocessing import process, util

    config = process.current_process()._config  # noqa: SLF001 -- where multiprocessing keeps its folder's path
    if config.get("tempdir") is not None:
        return
    sweep_stale(tempfile.gettempdir(), f"{MP_PREFIX}*")
    try:
        folder = tempfile.mkdtemp(prefix=f"{MP_PREFIX}{os.getpid()}-")
        _mp_folder_lock.enter_context(owned(folder))
    except OSError:  # a full or read-only temporary folder: multiprocessing's own attempt will say so
        return
    util.Finalize(None, shutil.rmtree, args=(folder,), kwargs={"ignore_errors": True}, exitpriority=-100)
    config["tempdir"] = folder
    _mp_folder.append(folder)


def remove_multiprocessing_folder() -> None:
    """Remove that folder now: for the server's end, once its workers are ended (no fork is asked for after).
    multiprocessing's exit code would, but a server stopped by SIGTERM or Ctrl-C re-raises the signal once
    uvicorn has shut down, and no exit code runs: the folder was left at every stop."""
    for folder in _mp_folder:
        shutil.rmtree(folder, ignore_errors=True)


class WorkerProcess:
    """One worker process as the server holds it: its pipes and how to end it."""

    def __init__(self, ctx: Any, warm: bool, nice: int = WORKER_NICE, serial: bool = False) -> None:
        """Start it in `ctx` (`fork_context` or `worker_context`); `nice` and `serial` as `worker_main` takes them
        (a sweep's workers set both)."""
        _skip_main_module_in_workers()
        out_r, out_w = ctx.Pipe(duplex=False)
        cmd_r, cmd_w = ctx.Pipe(duplex=False)
        self.warm = warm
        self.spawned_at = time.time()
        self.ready_at: float | None = None  # wall time of the worker's Ready
        self.process = ctx.Process(
            target=worker_main,
            args=(cmd_r, out_w, warm, os.getpid(), nice, serial),
            name=WORKER_NAME,
            daemon=True,  # multiprocessing's own exit hook terminates it if all else fails
        )
        self.process.start()
        # Close our copies of the child's ends: only then does our reader see EOF when it dies.
        out_w.close()
        cmd_r.close()
        self._out, self._cmd = out_r, cmd_w
        self._send_lock = threading.Lock()  # page thread (stop) and drain threads (threads) send

    @property
    def pid(self) -> int | None:
        return self.process.pid

    def fileno(self) -> int:
        """Its messages' pipe: `multiprocessing.connection.wait` waits on several workers by it."""
        return self._out.fileno()

    def send(self, msg: ServerMessage) -> None:
        """Send a command; a worker that has exited already is not an error."""
        with self._send_lock:
            try:
                self._cmd.send(msg)
            except OSError:  # BrokenPipeError is an OSError
                pass

    def receive(self, timeout: float) -> WorkerMessage | None:
        """The worker's next message, or None if it sent none within `timeout` seconds. EOFError or
        OSError once the worker is gone. Notes the time of its Ready."""
        if not self._out.poll(timeout):
            return None
        msg = self._out.recv()
        if isinstance(msg, Ready):
            self.ready_at = msg.wall_time
        return msg

    def is_ready(self) -> bool:
        """True once its Ready (or EOF, if it died) is waiting; reads nothing."""
        try:
            return self.ready_at is not None or self._out.poll(0)
        except OSError:
            return True

    def is_alive(self) -> bool:
        return self.process.is_alive()

    def terminate(self) -> None:
        """SIGTERM: for a worker that did not stop by itself within its grace period."""
        self.process.terminate()

    def kill(self) -> None:
        """SIGKILL, if it is still there: for a worker that did not even answer SIGTERM in time."""
        if self.process.is_alive():
            self.process.kill()

    def reap(self, grace: float = 1.0) -> None:
        """After its last message or EOF: wait for it to exit (kill it if it lingers: it sent End
        but did not exit, and must not be left behind) and close the pipes."""
        self._join_or_kill(grace)
        self.close()

    def end(self, grace: float = 0.2) -> None:
        """Ask an idle worker to exit; kill it if it has not after `grace` seconds (it may still be
        importing torch, and holds nothing worth waiting for); reap it."""
        self.send(Stop())
        self.reap(grace)

    def _join_or_kill(self, grace: float) -> None:
        self.process.join(grace)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(1.0)

    def close(self) -> None:
        self._cmd.close()
        self._out.close()

    def exit_description(self) -> str:
        """How the process ended, in words: "killed by SIGKILL", "exit code 1"."""
        return exit_description(self.process.exitcode)


def start_worker(run_id: str | None, warm: bool) -> WorkerProcess:
    """A local worker process for a run, forked from the fork server (the Runner's default `new_worker`; the id
    is not needed)."""
    return WorkerProcess(fork_context(), warm=warm)


def default_threads(n_running: int, cpus: int | None = None) -> int:
    """torch threads per worker: the cores shared evenly by the runs training now (2 cores: one run
    gets 2, two runs get 1 each). More threads than cores only adds contention."""
    cpus = cpus or os.cpu_count() or 1
    return max(1, cpus // max(1, n_running))


def exit_description(code: int | None) -> str:
    """A process's exit code in words: "killed by SIGKILL" (a negative code), "exit code 1"."""
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def descendants(root: int) -> dict[int, str]:
    """Every living process below `root` (Linux /proc; none elsewhere): pid -> its start time, so that a
    pid reused by another process later is never taken for it."""
    children: dict[int, list[int]] = {}
    for pid in _pids():
        stat = _stat(pid)
        if stat:
            children.setdefault(int(stat[1]), []).append(pid)
    out: dict[int, str] = {}
    stack = [root]
    while stack:
        for c in children.get(stack.pop(), []):
            if c not in out and (stat := _stat(c)):
                out[c] = stat[19]
                stack.append(c)
    return out


def kill_same(procs: dict[int, str]) -> None:
    """SIGKILL each of these processes (ours, from `descendants`) that still runs as the same process."""
    for pid, started in procs.items():
        stat = _stat(pid)
        if stat and stat[19] == started:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:  # gone meanwhile
                pass


def _pids() -> list[int]:
    try:
        return [int(e) for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return []


def _stat(pid: int) -> list[str] | None:
    """/proc/<pid>/stat's fields after the name (state, ppid, ...; [19] the start time), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
