"""A run trained by a Ray actor on a cluster, held by the server as it holds a local `WorkerProcess`.

The Runner keeps its queue, caps, drain thread and hooks; only where the run trains changes. Each run
gets one actor, named `ln-viz run <id>` (so `ray list actors` says which run it is), `num_cpus=1`.
The actor trains in a thread of its own and keeps the messages of `messages.py` (Info, Snap, End,
Failed) until the server's drain thread collects them (`poll`, which waits briefly for one); Stop and
SetThreads are actor calls read between two steps, as a local worker reads its pipe. A kill ends the
actor mid-step (`ray.kill`); a lost actor or node reads as the end of the stream, so the run fails
with msg.worker_lost ("its Ray worker or node was lost").

The Ray calls themselves happen in a host process (ray_host.py: Ray's driver ends the process it is in
when the cluster goes); it connects as the sweep's driver does (the address rules, `runtime_env` for a
foreign cluster), and the server reads each actor's messages from the inbox the host fills.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from ln_viz.config import RunConfig
from ln_viz.runner.handle import WORKER_LOST as LOST
from ln_viz.runner.messages import Failed, Job, ServerMessage, SetThreads, Stop, WorkerMessage
from ln_viz.runner.ray_host import MSG_CLUSTER_GONE, Connect, RayHost
from ln_viz.text import error_line

WHERE_GONE = "ui.where_cluster_gone"  # params: address; the Live page's line while the cluster is gone
ACTOR_PREFIX = "ln-viz run "  # + the run id: what Ray's own tools show


class RayWorker:
    """The server's end of one run's actor, with the methods the Runner uses of a `WorkerProcess`; the
    actor is the host process's (ray_host.py), which forwards its messages to this worker's inbox."""

    warm = False  # actors are started per run (no warm pool on a cluster)

    def __init__(self, host: RayHost, run_id: str) -> None:
        self._host = host
        self._key = run_id
        self.name = ACTOR_PREFIX + run_id
        self._inbox: Any = None  # made by the Job: the actor starts with its run
        self._lost: str | None = None
        self._ended = False
        self.ready_at: float | None = None

    @property
    def pid(self) -> int | None:
        """The actor's process id on its node, once it has started (None before)."""
        return self._host.pids.get(self._key)

    def send(self, msg: ServerMessage) -> None:
        """An actor call; one to an actor that is gone is not an error (its poll says so)."""
        match msg:
            case Job(config=cfg, threads=threads):
                self._inbox = self._host.start(self._key, cfg, threads)
            case Stop():
                self._host.call(self._key, "stop")
            case SetThreads(threads=threads):
                self._host.call(self._key, "set_threads", threads)

    def receive(self, timeout: float) -> WorkerMessage | None:
        """The actor's next message, or None within `timeout`; EOFError once the actor is lost."""
        if self._lost is not None:
            raise EOFError(self._lost)
        if self._inbox is None:
            time.sleep(timeout)
            return None
        try:
            msg = self._inbox.get(timeout=timeout)
        except queue.Empty:
            return None
        if isinstance(msg, EOFError):  # RayActorError, ActorDiedError, a lost node
            self._lost = str(msg)
            raise msg
        return msg

    def is_ready(self) -> bool:
        return True

    def is_alive(self) -> bool:
        return self._lost is None and not self._ended

    def terminate(self) -> None:
        self.kill()

    def kill(self) -> None:
        """End the actor at once, mid-step (a stop it did not answer in time)."""
        self._ended = True
        self._host.kill(self._key)

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
    """Makes a `RayWorker` per run on the Ray cluster at `address`; the Runner's `new_worker`. The
    connection lives in a host process (ray_host.py); when the cluster goes, its runs fail with one
    sentence, and the next Start makes a new host: on the cluster once it is back, else that Start
    fails with one sentence (msg.cluster_gone) after a port check, without a new process."""

    def __init__(
        self, address: str, connect: Connect, probe: Callable[[str], None], connect_timeout: float = 60.0
    ) -> None:
        """`connect` joins the cluster in the host process (ray_host.Connect); `probe` raises when
        nothing at `address` speaks gRPC (ln_viz.sweep.ray_address.probe), before a new host is made."""
        self.address = address
        self._connect_fn, self._probe = connect, probe
        self._lock = threading.Lock()
        self._cpus_at: tuple[float, tuple[int, int]] | None = None
        self._host = self._connect(connect_timeout)

    def _connect(self, timeout: float) -> RayHost | _Refused:
        """The host for the address, connected; a stand-in that refuses every Start with one sentence
        when nothing there answers (checked here first: no host process for a closed port)."""
        try:
            if self.address not in ("local", "auto"):
                self._probe(self.address)
        except Exception as e:  # noqa: BLE001 -- the SweepError's reason goes into the sentence
            reason = str(getattr(e, "params", {}).get("reason") or error_line(e, named=False))[:200]
            line = f"the Ray cluster at {self.address} does not answer ({reason})"
            return _Refused(Failed(line, MSG_CLUSTER_GONE, {"address": self.address, "reason": reason}))
        host = RayHost.shared(self.address, self._connect_fn)  # the map's sweeps use the same
        host.ready.wait(timeout)
        return host

    @property
    def problem(self) -> Failed | None:
        """Why the cluster cannot be used now (its sentence), or None while it is connected."""
        host = self._host
        if host.error is not None and host.error.key != MSG_CLUSTER_GONE:  # refused us: a token, not Ray
            return host.error
        if host.gone or host.error is not None:
            return Failed(f"the Ray cluster at {self.address} does not answer", WHERE_GONE, {"address": self.address})
        return None

    def __call__(self, run_id: str | None, warm: bool) -> RayWorker:
        return RayWorker(self._host_for_start(), run_id or f"pool-{time.monotonic_ns()}")

    def _host_for_start(self) -> RayHost | _Refused:
        """The host, or a new one when the last is gone and the head's port answers again."""
        with self._lock:
            host = self._host
            if not (host.gone or host.error is not None):
                return host
            self._host = host = self._connect(60.0)
            self._cpus_at = None
            return host

    def cpus(self) -> tuple[int, int]:
        """(CPUs busy, CPUs in all) on the cluster, asked of Ray at most once a second (every Live tab
        of a class reads it on each refresh: one query a second, not one per tab); (0, 0) while the
        cluster is gone."""
        now = time.monotonic()
        cached = self._cpus_at
        if cached is not None and now - cached[0] < 1.0:
            return cached[1]
        got = self._host.cpus()
        if got is None:
            got = (0, 0) if self.problem is not None else (cached[1] if cached else (0, self._host.total_cpus or 0))
        self._cpus_at = (now, got)
        return got

    def shutdown(self) -> None:
        self._host.shutdown()


class UnusableBackend:
    """The `new_worker` of a server whose Ray address cannot be used ($LN_VIZ_RAY_ADDRESS is not an
    address): every Start fails with the address's one sentence, and the pages still draw."""

    def __init__(self, error: Exception) -> None:
        key, params = getattr(error, "key", None), dict(getattr(error, "params", {}) or {})
        self.problem = Failed(error_line(error, named=False)[:300], key, params)

    def __call__(self, run_id: str | None, warm: bool) -> RayWorker:
        return RayWorker(_Refused(self.problem), run_id or "refused")  # type: ignore[arg-type]

    def cpus(self) -> tuple[int, int]:
        return (0, 0)

    def shutdown(self) -> None:
        pass


class _Refused:
    """A host stand-in for a cluster that cannot be used: each run fails with `error`."""

    gone = True
    total_cpus = 0
    pids: dict[str, int] = {}

    def __init__(self, error: Failed) -> None:
        self.error = error

    def cpus(self) -> None:
        return None

    def shutdown(self, timeout: float = 0.0) -> None:
        pass

    def start(self, key: str, cfg: RunConfig, threads: int) -> queue.SimpleQueue:
        inbox: queue.SimpleQueue = queue.SimpleQueue()
        inbox.put(self.error)
        return inbox

    def call(self, key: str, method: str, *arg: Any) -> None:
        pass

    def kill(self, key: str) -> None:
        pass
