"""The server's Ray driver, in a child process of its own, so the cluster's death cannot end the server.

Why a child (issue 32, H2): Ray's driver is a core worker of the process that calls `ray.init`. When the
cluster's GCS is gone it ends that process: 60 s after the head died ("Failed to connect to GCS within
60 seconds", exit 1), or at once when a head restarted on the same port answers with another cluster id
(a failed check, abort). With the driver inside Streamlit, every visitor lost the app, Runs and Theory
too. Here the driver is this module's `host_main`, spawned by `RayHost`: the server keeps only pipes.

What the server sees: runs whose actors the host polls (each poll's messages forwarded as they come,
`("msgs", key, [...])`), and the host's end. It ends when its pipe closes (it died) or when the server
finds the cluster gone: the head's GCS port refuses a connection, or takes none, `GONE_AFTER` checks in
a row, one a second. Every run it held then fails with one sentence (msg.cluster_lost), the steps
received kept; the next Start makes a new host, which joins the cluster again once it is back (or fails
that Start with one sentence, msg.cluster_gone, while it is not).

Messages, host -> server: ("ready", cpus) | ("error", key, params) | ("msgs", key, list) |
("pid", key, pid) | ("lost", key, reason) | ("cpus", busy, total). Server -> host: ("start", key, cfg,
threads) | ("send", key, message) | ("kill", key) | ("cpus",) | ("shutdown",).
"""

from __future__ import annotations

import os
import queue
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from ln_viz.runner.messages import Failed, WorkerMessage
from ln_viz.runner.process import descendants, kill_same, worker_context
from ln_viz.runner.ray_actor import RunActor
from ln_viz.text import error_line

GONE_AFTER = 2  # failed checks of the head's port in a row that mean the cluster is gone
CHECK_EVERY_S = 1.0
_CHECK_TIMEOUT_S = 2.0
_HOST_POLL_S = 0.1  # the host's wait on its actors' polls
MSG_CLUSTER_LOST = "msg.cluster_lost"  # the cluster stopped answering while the run trained
MSG_CLUSTER_GONE = "msg.cluster_gone"  # params: address, reason; a Start while it does not answer
# connects this process's Ray to an address and returns the `ray` module (the sweep's driver does it:
# ln_viz.sweep.ray_exec.connect_here); a module-level function, as it goes to the host process by name
Connect = Callable[[str], Any]
# a sweep's cells on the connected `ray` (ray, cells, emit, stop): emit("step", i, pid, step, loss, eval_loss,
# status) and emit("end", i, status, error); ln_viz.sweep.ray_exec.run_cells, sent by name like Connect
RunCells = Callable[[Any, list, Callable[..., None], threading.Event], None]


def cluster_lost() -> Failed:
    return Failed("the Ray cluster stopped answering", MSG_CLUSTER_LOST)


# --- in the host process ----------------------------------------------------------------------------
def host_main(cmd: Any, out: Any, address: str, connect: Connect) -> None:
    """Entry point of the host process: connect, then start, poll and end actors as the server asks."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the group; the server ends us
    # a backstop only: the server ends this process within ~3 s of the head's end (its port check)
    os.environ.setdefault("RAY_gcs_rpc_server_reconnect_timeout_s", "20")
    try:
        ray = connect(address)
    except Exception as e:  # noqa: BLE001 -- said to the server, in its words if it has a key
        key = getattr(e, "key", None)
        out.send(("error", key, dict(getattr(e, "params", {}) or {}), error_line(e)[:300]))
        return
    cls = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(RunActor)
    out.send(("ready", int(ray.cluster_resources().get("CPU", 0))))
    _Host(ray, cls, out).serve(cmd)  # Ray's threads are daemons: nothing of it outlives this


class _Host:
    def __init__(self, ray: Any, cls: Any, out: Any) -> None:
        self.ray, self.cls = ray, cls
        self._out, self._out_lock = out, threading.Lock()  # a sweep's thread sends too
        self.actors: dict[str, Any] = {}
        self.polls: dict[Any, str] = {}  # a poll in flight -> its run's key
        self.pids: dict[Any, str] = {}  # a pid call in flight -> its run's key
        self.sweeps: dict[int, threading.Event] = {}  # a sweep running here -> its stop

    def send(self, m: tuple) -> None:
        with self._out_lock:
            self._out.send(m)

    def serve(self, cmd: Any) -> None:
        # SIGTERM (multiprocessing ends a daemon child so at the server's exit) ends the actors and a
        # private cluster too, as a shutdown does, instead of leaving its processes behind
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        try:
            while True:
                try:
                    while cmd.poll(0 if self.actors else _HOST_POLL_S):
                        if not self.command(cmd.recv()):
                            return
                except (EOFError, OSError):  # the server is gone
                    return
                if self.actors:
                    self.read()
        finally:
            self.end()

    def command(self, c: tuple) -> bool:
        ray = self.ray
        match c:
            case ("start", key, cfg, threads):
                actor = self.cls.options(name=f"ln-viz run {key}").remote()
                self.actors[key] = actor
                self.pids[actor.pid.remote()] = key
                actor.start.remote(cfg, threads)
            case ("send", key, method, arg):
                if key in self.actors:
                    getattr(self.actors[key], method).remote(*arg)
            case ("kill", key):
                actor = self.actors.pop(key, None)
                if actor is not None:
                    try:
                        ray.kill(actor, no_restart=True)
                    except Exception:  # noqa: BLE001 -- already gone
                        pass
            case ("cpus",):
                total = int(ray.cluster_resources().get("CPU", 0))
                free = int(ray.available_resources().get("CPU", 0))
                self.send(("cpus", max(0, total - free), total))
            case ("sweep", sid, fn, cells):
                self.sweeps[sid] = stop = threading.Event()
                threading.Thread(target=self.sweep, args=(sid, fn, cells, stop), daemon=True).start()
            case ("sweep_stop", sid):
                if sid in self.sweeps:
                    self.sweeps[sid].set()
            case ("shutdown",):
                return False
        return True

    def read(self) -> None:
        """One round: a poll in flight for every actor, then whatever answered within _HOST_POLL_S."""
        ray = self.ray
        waiting = set(self.polls.values())
        for key, actor in self.actors.items():
            if key not in waiting:
                self.polls[actor.poll.remote()] = key
        refs = list(self.polls) + list(self.pids)
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=_HOST_POLL_S)
        for ref in ready:
            is_pid = ref in self.pids
            key = self.pids.pop(ref) if is_pid else self.polls.pop(ref)
            if key not in self.actors:
                continue  # killed meanwhile
            try:
                value = ray.get(ref)
            except ray.exceptions.RayError as e:  # RayActorError, ActorDiedError, a lost node
                self.actors.pop(key, None)
                self.send(("lost", key, error_line(e, last=True)[:300]))
                continue
            self.send(("pid", key, value) if is_pid else ("msgs", key, value))

    def sweep(self, sid: int, fn: RunCells, cells: list, stop: threading.Event) -> None:
        """A sweep's cells as Ray tasks (`fn`: ln_viz.sweep.ray_exec's), each event sent as it comes."""
        try:
            fn(self.ray, cells, lambda *event: self.send(("sweep", sid, event)), stop)
        except Exception as e:  # noqa: BLE001 -- said to the server's executor, which raises it
            self.send(("sweep", sid, ("error", error_line(e)[:300])))
        finally:
            self.sweeps.pop(sid, None)
            self.send(("sweep", sid, ("done",)))

    def end(self) -> None:
        for stop in list(self.sweeps.values()):
            stop.set()
        deadline = time.monotonic() + 2.0  # a stopped sweep cancels its tasks within a poll
        while self.sweeps and time.monotonic() < deadline:
            time.sleep(0.05)
        for actor in self.actors.values():
            try:
                self.ray.kill(actor, no_restart=True)
            except Exception:  # noqa: BLE001 -- already gone
                pass
        started = descendants(os.getpid())  # a private cluster's processes: ours
        self.ray.shutdown()
        kill_same(started)  # any that ray.shutdown left (a helper agent outlived it by a minute: issue 21, O1)


# --- in the server ----------------------------------------------------------------------------------
class RayHost:
    """The server's end of one host process: its pipes, the runs and sweeps it holds, and the watch on
    the head. One per address in a process (`shared`): Live's runs and the map's sweeps share it."""

    _shared: dict[str, RayHost] = {}
    _shared_lock = threading.Lock()

    @classmethod
    def shared(cls, address: str, connect: Connect) -> RayHost:
        """This process's host for `address`: the one there is, or a new one when it is gone (or never
        connected); the caller waits on its `ready`."""
        with cls._shared_lock:
            host = cls._shared.get(address)
            if host is None or host.gone or host.error is not None:
                if host is not None:
                    host.shutdown(timeout=2.0)
                host = cls._shared[address] = cls(address, connect)
            return host

    @classmethod
    def end_all(cls, timeout: float = 5.0) -> None:
        """End every host of this process (the server's shutdown)."""
        with cls._shared_lock:
            hosts, cls._shared = list(cls._shared.values()), {}
        for host in hosts:
            host.shutdown(timeout)

    def __init__(self, address: str, connect: Connect) -> None:
        ctx = worker_context()  # spawned, without the page's __main__
        out_r, out_w = ctx.Pipe(duplex=False)
        cmd_r, cmd_w = ctx.Pipe(duplex=False)
        self.address = address
        self.process = ctx.Process(target=host_main, args=(cmd_r, out_w, address, connect), daemon=True)
        self.process.start()
        out_w.close()
        cmd_r.close()
        self._out, self._cmd = out_r, cmd_w
        self._lock = threading.Lock()
        self._inboxes: dict[str, queue.SimpleQueue] = {}  # run key -> its messages
        self.pids: dict[str, int] = {}
        self.total_cpus: int | None = None
        self.error: Failed | None = None  # why it could not connect
        self.gone = False
        self.ready = threading.Event()  # connected, or failed to
        self._cpus: queue.SimpleQueue = queue.SimpleQueue()
        self._sweeps: dict[int, queue.SimpleQueue] = {}  # a sweep -> its events
        self._sweep_ids = iter(range(1, 1 << 62))
        threading.Thread(target=self._read, name="ln-viz-ray-host", daemon=True).start()
        if address not in ("local", "auto"):
            threading.Thread(target=self._watch, name="ln-viz-ray-watch", daemon=True).start()

    # --- what a RayWorker calls ---
    def start(self, key: str, cfg: Any, threads: int) -> queue.SimpleQueue:
        inbox: queue.SimpleQueue = queue.SimpleQueue()
        with self._lock:
            if self.gone:
                inbox.put(self.error or cluster_lost())
                return inbox
            self._inboxes[key] = inbox
        self._send(("start", key, cfg, threads))
        return inbox

    def call(self, key: str, method: str, *arg: Any) -> None:
        self._send(("send", key, method, arg))

    def kill(self, key: str) -> None:
        with self._lock:
            self._inboxes.pop(key, None)
        self._send(("kill", key))

    def cpus(self, timeout: float = 2.0) -> tuple[int, int] | None:
        """(busy, total) CPUs of the cluster, asked now; None when the host does not answer."""
        if self.gone or not self.ready.is_set():
            return None
        while not self._cpus.empty():
            self._cpus.get_nowait()
        self._send(("cpus",))
        try:
            return self._cpus.get(timeout=timeout)
        except queue.Empty:
            return None

    def sweep(self, fn: RunCells, cells: list) -> tuple[int, queue.SimpleQueue]:
        """Run a sweep's cells in the host: (its id, the queue its events come in; ("gone",) if the host
        ends first, ("done",) last)."""
        events: queue.SimpleQueue = queue.SimpleQueue()
        with self._lock:
            sid = next(self._sweep_ids)
            if self.gone:
                events.put(("gone",))
                return sid, events
            self._sweeps[sid] = events
        self._send(("sweep", sid, fn, cells))
        return sid, events

    def stop_sweep(self, sid: int) -> None:
        self._send(("sweep_stop", sid))

    def shutdown(self, timeout: float = 10.0) -> None:
        """End the host (its actors and its Ray connection, a private cluster with it)."""
        self._send(("shutdown",))
        self.process.join(timeout)
        self._end_process()

    # --- the server's threads ---
    def _send(self, c: tuple) -> None:
        with self._lock:
            try:
                self._cmd.send(c)
            except OSError:  # it has ended: its reader fails what it held
                pass

    def _read(self) -> None:
        try:
            while True:
                m = self._out.recv()
                match m:
                    case ("ready", total):
                        self.total_cpus = total
                        self.ready.set()
                    case ("error", key, params, line):
                        self.error = Failed(line, key, params) if key else Failed(line)
                        self.ready.set()
                    case ("cpus", busy, total):
                        self._cpus.put((busy, total))
                    case ("pid", key, pid):
                        self.pids[key] = pid
                    case ("msgs", key, msgs):
                        self._deliver(key, msgs)
                    case ("lost", key, reason):
                        self._deliver(key, [EOFError(reason)])
                    case ("sweep", sid, event):
                        if (events := self._sweeps.get(sid)) is not None:
                            events.put(event)
                            if event[0] == "done":
                                del self._sweeps[sid]
        except (EOFError, OSError):
            pass
        self._fail_all()

    def _deliver(self, key: str, msgs: list[WorkerMessage | EOFError]) -> None:
        inbox = self._inboxes.get(key)
        for m in msgs if inbox is not None else ():
            inbox.put(m)

    def _fail_all(self) -> None:
        """The host ended: every run it held fails with one sentence; later Starts make a new host."""
        with self._lock:
            self.gone = True
            inboxes, self._inboxes = list(self._inboxes.values()), {}
            sweeps, self._sweeps = list(self._sweeps.values()), {}
        for inbox in inboxes:
            inbox.put(cluster_lost())
        for events in sweeps:
            events.put(("gone",))
        self.ready.set()
        self._end_process()

    def _watch(self) -> None:
        """The head's GCS port, once a second: GONE_AFTER failures in a row end the host (its Ray would
        hang for a minute, then exit, or abort on a restarted head)."""
        host, port = self.address.rsplit(":", 1)
        misses = 0
        while not self.gone and self.process.is_alive():
            time.sleep(CHECK_EVERY_S)
            try:
                socket.create_connection((host, int(port)), timeout=_CHECK_TIMEOUT_S).close()
                misses = 0
            except OSError:
                misses += 1
                if misses >= GONE_AFTER:
                    self._end_process()
                    return

    def _end_process(self) -> None:
        if self.process.is_alive():
            below = descendants(self.process.pid)  # a private cluster it started: ours too
            self.process.kill()  # our own child, by its pid
            kill_same(below)
        self.process.join(2.0)
