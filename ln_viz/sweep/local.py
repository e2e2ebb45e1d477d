"""The `local` executor: this machine's cores, one long-lived worker process per core.

Workers are the project's own: spawned through `ln_viz.runner.worker_context()` (so under Streamlit
they skip the page's `__main__`), `nice` steps below the caller's priority, one torch thread each
(on 2 cores, two 1-thread runs train faster together than one 2-thread run: ln_viz.runner.Runner).
Unlike the Runner's one-process-per-run, a sweep worker trains cell after cell: a fresh process pays
2-4 s of imports, a fifth of a 300-step cell. It has its own workers, not the live page's Runner
slots, so a sweep never queues a user's Start; in the app its workers run at a lower priority than
the Runner's (`nice` 15 against the Runner's 10), so a Start gets the cores first. From the command
line they run at the caller's priority (nice 0), as Ray's workers do.

One duplex pipe per worker, read by the driver thread only. A worker that dies (SIGKILL, a crash in
torch) closes its pipe: its cell is `failed` with how it died, a new worker takes its place.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from multiprocessing.connection import Connection, wait
from typing import Any

from ln_viz.config import RunConfig
from ln_viz.runner import worker_context
from ln_viz.runner.process import exit_description
from ln_viz.sweep.executors import OnEnd, OnStep
from ln_viz.sweep.spec import Cell
from ln_viz.text import error_line

_POLL_S = 0.1
_EXIT_GRACE_S = 0.8  # after a stop, workers get this long to leave by themselves, then SIGKILL


def _worker_main(conn: Connection, parent_pid: int, nice: int) -> None:
    """A sweep worker: train each (index, RunConfig) it is sent, streaming every step back."""
    if nice:
        try:
            os.nice(nice)
        except OSError:
            pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the driver decides when workers end
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see ln_viz.runner._worker_main
    try:
        import torch

        torch.set_num_threads(1)
        while True:
            job = conn.recv()
            if job is None:
                break
            if job == ("stop",):  # a stop that arrived after its cell had ended: nothing to stop
                continue
            _train_cell(conn, job[0], job[1], parent_pid)
    except (EOFError, OSError):
        pass  # the driver is gone
    finally:
        conn.close()
    sys.stdout.flush()
    os._exit(0)  # skip torch's slow interpreter teardown; nothing is left to flush


def _train_cell(conn: Connection, index: int, cfg: RunConfig, parent_pid: int) -> None:
    from ln_viz.train import Trainer

    try:
        status = "failed"
        for snap in Trainer(cfg):
            conn.send(("step", index, snap.step, snap.loss, snap.eval_loss, snap.status))
            status = snap.status
            if conn.poll() or os.getppid() != parent_pid:  # anything the driver sends mid-run is a stop
                conn.send(("end", index, "stopped", None))
                return
        conn.send(("end", index, status, None))
    except (EOFError, OSError):
        raise
    except Exception as e:  # noqa: BLE001 -- a bug or bad input in one cell fails that cell only
        conn.send(("end", index, "failed", error_line(e)))


class _Worker:
    def __init__(self, ctx: Any, nice: int) -> None:
        parent, child = ctx.Pipe(duplex=True)
        self.process = ctx.Process(target=_worker_main, args=(child, os.getpid(), nice), daemon=True)
        self.process.start()
        child.close()  # only the child holds its end now: its death is our EOF
        self.conn = parent
        self.cell: int | None = None

    def send(self, msg: Any) -> None:
        try:
            self.conn.send(msg)
        except OSError:
            pass  # already gone; its EOF says so

    def death(self) -> str:
        """How the worker ended, in words, once its pipe has closed."""
        self.process.join(0.5)
        how = exit_description(self.process.exitcode)
        if how.startswith("killed"):
            return f"the worker process was {how}"
        return f"the worker process ended unexpectedly ({how})"


class LocalExecutor:
    """Cells on this machine: `workers` at once (default: the cores), one torch thread each."""

    name = "local"

    def __init__(self, workers: int | None = None, nice: int = 0) -> None:
        self.workers = max(1, workers or os.cpu_count() or 1)
        self.nice = nice
        self._running: dict[int, int] = {}  # cell index -> worker pid

    def running_pids(self) -> dict[int, int]:
        """The worker process of each cell training now (tests kill one to crash its cell)."""
        return dict(self._running)

    def run(self, cells: Sequence[Cell], on_step: OnStep, on_end: OnEnd, stop: threading.Event) -> None:
        """Train every cell; see ln_viz.sweep.executors for the contract."""
        ctx = worker_context()
        todo = deque(range(len(cells)))
        pool = [_Worker(ctx, self.nice) for _ in range(min(self.workers, len(cells)))]
        try:
            while (todo or any(w.cell is not None for w in pool)) and not stop.is_set():
                for w in pool:
                    if w.cell is None and todo:
                        w.cell = todo.popleft()
                        self._running[w.cell] = w.process.pid
                        w.send((w.cell, cells[w.cell].config))
                busy = {w.conn: w for w in pool if w.cell is not None}
                for conn in wait(list(busy), timeout=_POLL_S):
                    w = busy[conn]
                    if not self._drain(w, on_step, on_end):
                        pool[pool.index(w)] = _Worker(ctx, self.nice)
        finally:
            self._shut_down(pool, on_end)

    def _drain(self, w: _Worker, on_step: OnStep, on_end: OnEnd) -> bool:
        """Read what a worker has sent; False when it has died (its cell is then failed)."""
        try:
            while w.conn.poll():
                msg = w.conn.recv()
                if msg[0] == "step":
                    on_step(*msg[1:])
                else:  # ("end", index, status, error)
                    w.cell = None
                    self._running.pop(msg[1], None)
                    on_end(msg[1], msg[2], msg[3])
        except (EOFError, OSError):
            index, w.cell = w.cell, None
            if index is not None:
                self._running.pop(index, None)
                on_end(index, "failed", w.death())
            w.conn.close()
            return False
        return True

    def _shut_down(self, pool: list[_Worker], on_end: OnEnd) -> None:
        """Stop busy workers, end idle ones, and reap all: within ~1 s, nothing left running."""
        for w in pool:
            if w.cell is not None:
                w.send(("stop",))
            w.send(None)
        deadline = time.monotonic() + _EXIT_GRACE_S
        for w in pool:
            w.process.join(max(0.0, deadline - time.monotonic()))
            if w.process.is_alive():
                w.process.kill()
                w.process.join(1.0)
            w.conn.close()
            if w.cell is not None:
                self._running.pop(w.cell, None)
                on_end(w.cell, "stopped", None)
