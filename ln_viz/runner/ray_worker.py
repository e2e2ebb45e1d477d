"""A run trained by a Ray actor on a cluster, held by the server as it holds a local `WorkerProcess`.

The Runner keeps its queue, caps, drain thread and hooks; only where the run trains changes. Each run
gets one actor, named `ln-viz run <id>` (so `ray list actors` says which run it is), `num_cpus=1`.
The actor trains in a thread of its own and keeps the messages of `messages.py` (Info, Snap, End,
Failed) until the server's drain thread collects them (`poll`, which waits briefly for one); Stop and
SetThreads are actor calls read between two steps, as a local worker reads its pipe. A kill ends the
actor mid-step (`ray.kill`); a lost actor or node reads as the end of the stream, so the run fails
with msg.worker_lost ("its Ray worker or node was lost").

Connecting (the one driver thread, the address rules, `runtime_env` for a foreign cluster) is the
caller's: the server connects through the sweep's Ray driver and hands the connected `ray` module to
`RayBackend`. Ray's remote, wait, get and kill are safe from any thread; only `ray.init` is tied to its
thread (ray issue 45570).
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from typing import Any

from ln_viz.config import RunConfig
from ln_viz.runner.handle import WORKER_LOST as LOST
from ln_viz.runner.messages import End, Failed, Info, Job, ServerMessage, SetThreads, Snap, Stop, WorkerMessage
from ln_viz.text import error_line

ACTOR_PREFIX = "ln-viz run "  # + the run id: what Ray's own tools show
_POLL_WAIT_S = 0.2  # an actor's poll waits this long for a message before answering "none yet"


class RunActor:
    """On a Ray node: trains one run in a thread, keeps its messages until polled."""

    def __init__(self) -> None:
        self._msgs: list[WorkerMessage] = []
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._threads: int | None = None

    def pid(self) -> int:
        return os.getpid()

    def start(self, cfg: RunConfig, threads: int) -> None:
        self._threads = threads
        threading.Thread(target=self._train, args=(cfg,), daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def set_threads(self, threads: int) -> None:
        self._threads = threads

    def poll(self) -> list[WorkerMessage]:
        """The messages since the last poll; waits up to _POLL_WAIT_S for one."""
        with self._cond:
            if not self._msgs:
                self._cond.wait(_POLL_WAIT_S)
            out, self._msgs = self._msgs, []
        return out

    def _put(self, msg: WorkerMessage) -> None:
        with self._cond:
            self._msgs.append(msg)
            self._cond.notify_all()

    def _train(self, cfg: RunConfig) -> None:
        import torch

        from ln_viz.train import Trainer

        try:
            threads = self._threads or 1
            torch.set_num_threads(threads)
            trainer = Trainer(cfg)
            self._put(Info(trainer.info))
            for snap in trainer:
                self._put(Snap(snap))
                if self._stop.is_set():
                    self._put(End(stopped=True))
                    return
                if self._threads and self._threads != threads:
                    threads = self._threads
                    torch.set_num_threads(threads)
        except Exception as e:  # noqa: BLE001 -- any bug or bad input in the run: report it
            self._put(Failed.of(e))
            return
        self._put(End(stopped=False))


class RayWorker:
    """The server's end of one run's actor, with the methods the Runner uses of a `WorkerProcess`."""

    warm = False  # actors are started per run (no warm pool on a cluster)

    def __init__(self, ray: Any, actor_cls: Any, run_id: str) -> None:
        self._ray = ray
        self.name = ACTOR_PREFIX + run_id
        self._actor = actor_cls.options(name=self.name).remote()
        self._pid_ref = self._actor.pid.remote()
        self._pid: int | None = None
        self._buffer: deque[WorkerMessage] = deque()
        self._pending: Any = None  # the poll in flight
        self._lost: str | None = None
        self._ended = False
        self.ready_at: float | None = None

    @property
    def pid(self) -> int | None:
        """The actor's process id on its node, once it has started (None before)."""
        if self._pid is None and not self._lost:
            try:
                ready, _ = self._ray.wait([self._pid_ref], timeout=0)
                if ready:
                    self._pid = self._ray.get(self._pid_ref)
            except self._ray.exceptions.RayError:
                return None
        return self._pid

    def send(self, msg: ServerMessage) -> None:
        """An actor call; one to an actor that is gone is not an error (its poll says so)."""
        match msg:
            case Job(config=cfg, threads=threads):
                self._actor.start.remote(cfg, threads)
            case Stop():
                self._actor.stop.remote()
            case SetThreads(threads=threads):
                self._actor.set_threads.remote(threads)

    def receive(self, timeout: float) -> WorkerMessage | None:
        """The actor's next message, or None within `timeout`; EOFError once the actor is lost."""
        if self._buffer:
            return self._buffer.popleft()
        if self._lost is not None:
            raise EOFError(self._lost)
        if self._pending is None:
            self._pending = self._actor.poll.remote()
        ready, _ = self._ray.wait([self._pending], timeout=timeout)
        if not ready:
            return None
        ref, self._pending = self._pending, None
        try:
            self._buffer.extend(self._ray.get(ref))
            if self._pid is None:  # it answered, so its pid (asked first) is in
                self._pid = self._ray.get(self._pid_ref)
        except self._ray.exceptions.RayError as e:  # RayActorError, ActorDiedError, a lost node
            self._lost = error_line(e, last=True)[:300]
            raise EOFError(self._lost) from None
        return self._buffer.popleft() if self._buffer else None

    def is_ready(self) -> bool:
        return True

    def is_alive(self) -> bool:
        return self._lost is None and not self._ended

    def terminate(self) -> None:
        self.kill()

    def kill(self) -> None:
        """End the actor at once, mid-step (a stop it did not answer in time)."""
        self._ended = True
        try:
            self._ray.kill(self._actor, no_restart=True)
        except Exception:  # noqa: BLE001 -- already gone
            pass

    def reap(self, grace: float = 1.0) -> None:
        """After its last message: end the actor, which frees its CPU on the cluster."""
        self.kill()

    def end(self, grace: float = 0.2) -> None:
        self.kill()

    def close(self) -> None:
        pass

    def exit_description(self) -> str:
        return LOST


class RayBackend:
    """Makes a `RayWorker` per run on the cluster `ray` is connected to; the Runner's `new_worker`."""

    def __init__(self, ray: Any) -> None:
        self._ray = ray
        self._cls = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(RunActor)

    def __call__(self, run_id: str | None, warm: bool) -> RayWorker:
        return RayWorker(self._ray, self._cls, run_id or f"pool-{time.monotonic_ns()}")

    def cpus(self) -> tuple[int, int]:
        """(CPUs busy, CPUs in all) on the cluster, asked of Ray at most once a second (every Live tab
        of a class reads it on each refresh: one query a second, not one per tab)."""
        now = time.monotonic()
        cached = getattr(self, "_cpus_at", None)
        if cached is not None and now - cached[0] < 1.0:
            return cached[1]
        total = int(self._ray.cluster_resources().get("CPU", 0))
        free = int(self._ray.available_resources().get("CPU", 0))
        self._cpus_at = (now, (max(0, total - free), total))
        return self._cpus_at[1]
