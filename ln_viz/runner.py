"""Background execution: each training run in its own worker process, streamed back to the server.

A `Runner` (one per server) starts runs, caps how many train at once (the rest wait in a visible
queue), caps every run in steps and wall time, and stops them on request within a second. Each run
gets a `RunHandle`; a drain thread per running run reads the worker's snapshots into the handle's
`RunData`, and `handle.view()` gives readers (a page refreshing once a second) a consistent copy.

Why processes and not threads: training is CPU-bound Python + torch. In the server process it would
compete with every viewer for the GIL, `torch.set_num_threads` would be process-wide, a stuck step
could not be interrupted, and a crash would take the server with it.

Why plain pipes and not `multiprocessing.Queue`/`Event`: both hold locks that a worker killed at the
wrong moment leaves held (the server's next `put`/`set` would hang), and both start the resource
tracker process. A one-way pipe per direction has no lock, and its reader sees EOF the moment the
worker dies, so a SIGKILLed worker turns into a `failed` run instead of a hang.

Nothing here imports streamlit; the page owns a Runner through `st.cache_resource`.
"""

from __future__ import annotations

import atexit
import dataclasses
import logging
import multiprocessing
import multiprocessing.context
import os
import signal
import sys
import threading
import time
import uuid
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any, Self

from ln_viz.config import ConfigError, RunConfig
from ln_viz.names import TERMINAL
from ln_viz.snapshot import RunData, RunInfo, Snapshot

log = logging.getLogger(__name__)

# i18n keys of the messages the runner itself sets (the trainer's own are msg.diverged / msg.stalled).
MSG_STOPPED = "msg.stopped"  # stopped by the user or at server shutdown
MSG_TIME_CAP = "msg.time_cap"  # params: seconds
MSG_WORKER_ERROR = "msg.worker_error"  # params: error (the exception's one line)
MSG_WORKER_DIED = "msg.worker_died"  # params: how ("killed by SIGKILL", "exit code 1")

DEFAULT_MAX_SECONDS = 600.0
DEFAULT_MAX_STEPS = 10_000
# Probe steps kept in the server's live copy of a run. At depth 24 a probe step is ~37 KB, so a run
# holds at most ~2.4 MB of them; the live charts show 33-64 evenly spaced steps of a long run.
LIVE_PROBE_STEPS = 64
STOP_GRACE_S = 0.5  # a worker gets this long to finish its step and exit by itself...
KILL_AFTER_S = 0.2  # ...then SIGTERM, and this long later SIGKILL: stop always ends within ~0.8 s
_POLL_S = 0.05  # how often a drain thread looks at deadlines when its worker is quiet
# Workers run at this niceness: the server (every tab's page, the health check, a click) comes first
# when the cores are contended, training takes whatever is left. See `lower_priority`.
WORKER_NICE = 10

OnStart = Callable[[str, RunInfo], None]
OnSnapshot = Callable[[str, Snapshot], None]
OnFinish = Callable[[str, "RunView"], None]


def default_threads(n_running: int, cpus: int | None = None) -> int:
    """torch threads per worker: the cores shared evenly by the runs training now (2 cores: one run
    gets 2, two runs get 1 each). More threads than cores only adds contention."""
    cpus = cpus or os.cpu_count() or 1
    return max(1, cpus // max(1, n_running))


# --- the worker process ----------------------------------------------------------------------------
# Messages worker -> server, over `out`:
#   ("ready", wall_time)            imports done (and warm-up, for pool workers); waiting for a job
#   ("info", RunInfo)               trainer built
#   ("snap", Snapshot)              one step
#   ("end", "stopped" | None)       left the loop: told to stop, or the trainer finished
#   ("error", line, key, params)    an exception; key/params when it was a LocalizedError
# Messages server -> worker, over `cmd`: (RunConfig, threads) the job, then ("stop",) or
# ("threads", n) between steps; None tells an idle worker to exit.


def lower_priority() -> None:
    """Make this (worker) process yield the CPU to the server. On 2 cores, two training runs and ten
    tabs' page scripts contend; at equal priority the server's answers waited behind the runs' steps
    for seconds. Best effort: a system that refuses leaves the priority as it is."""
    try:
        os.nice(WORKER_NICE)
    except OSError:
        pass


def _worker_main(cmd: Connection, out: Connection, warm: bool, parent_pid: int) -> None:
    """Entry point of a worker process (spawned: a fresh interpreter, so it imports everything)."""
    lower_priority()
    # Ctrl-C in the terminal reaches the whole process group; the server decides when workers end.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # OpenMP threads spin while waiting for work by default. With two threads per run and anything
    # else busy (the server drawing charts, another run), the spinning ate 3x the CPU and cut steps/s
    # several-fold in our measurements; passive waiting sleeps instead. Read when torch loads.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import torch

        if warm:
            _warm_up()
        out.send(("ready", time.time()))
        job = cmd.recv()
        if job is None:
            return
        cfg, threads = job
        torch.set_num_threads(threads)
        _train(cfg, cmd, out, parent_pid)
    except (EOFError, BrokenPipeError, ConnectionResetError):
        pass  # the server closed our pipes or died: nobody is left to report to
    except Exception as e:  # noqa: BLE001 -- e.g. a broken install failing the imports: say so
        _send_error(out, e)
    finally:
        cmd.close()
        out.close()
    # A normal interpreter exit with torch and pandas loaded takes 0.5-1 s of teardown, which a Stop
    # would wait for; nothing here needs it (no files open, all sent), so leave at once.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _warm_up() -> None:
    """Pay the one-time costs (imports, the english corpus, torch's first forward/backward and the
    probe hooks) before a job arrives, so a Start on a pooled worker shows its first step at once."""
    import torch

    from ln_viz.corpus import english
    from ln_viz.train import Trainer

    torch.set_num_threads(1)  # idle workers should not take cores from running runs
    english()
    tiny = RunConfig(depth=1, d_model=16, heads=2, seq_len=16, batch_size=2, steps=2, probe_every=1)
    for _ in Trainer(tiny):
        pass


def _train(cfg: RunConfig, cmd: Connection, out: Connection, parent_pid: int) -> None:
    from ln_viz.train import Trainer

    try:
        trainer = Trainer(cfg)
        out.send(("info", trainer.info))
        steps = iter(trainer)
        while True:
            # Between two steps is the only safe place to stop: the step's snapshot is complete.
            if _told_to_stop(cmd) or os.getppid() != parent_pid:
                out.send(("end", "stopped"))
                return
            snap = next(steps, None)
            if snap is None:
                break
            out.send(("snap", snap))
    except (EOFError, BrokenPipeError, ConnectionResetError):
        raise
    except Exception as e:  # noqa: BLE001 -- any bug or bad input in the run: report it, never hang the server
        _send_error(out, e)
        return
    out.send(("end", None))


def _told_to_stop(cmd: Connection) -> bool:
    """Apply pending commands; True when one of them was stop."""
    import torch

    while cmd.poll():
        msg = cmd.recv()
        if msg is None or msg[0] == "stop":
            return True
        if msg[0] == "threads":
            torch.set_num_threads(msg[1])
    return False


def _send_error(out: Connection, e: BaseException) -> None:
    lines = str(e).strip().splitlines()
    line = f"{type(e).__name__}: {lines[0]}" if lines else type(e).__name__
    key, params = getattr(e, "key", None), getattr(e, "params", None)
    try:
        out.send(("error", line, key, dict(params) if key and params else {}))
    except OSError:
        raise
    except Exception:  # noqa: BLE001 -- unpicklable params: keep the line
        out.send(("error", line, None, {}))


_WORKER_NAME = "ln-viz-worker"
_PATCH_LOCK = threading.Lock()


def _skip_main_module_in_workers() -> None:
    """Spawn normally re-runs the parent's `__main__` in the child. Under Streamlit that is the page
    being run (its script runner installs the page as `__main__`): every worker would execute the page,
    and one that starts a run would recurse. The worker's code lives in this importable module and
    needs nothing from `__main__`, so drop it from the spawn data of our workers only (by name)."""
    from multiprocessing import spawn

    with _PATCH_LOCK:
        original = spawn.get_preparation_data
        if getattr(original, "ln_viz_skips_main", False):
            return

        def get_preparation_data(name: str) -> dict[str, Any]:
            data = original(name)
            if name == _WORKER_NAME:
                data.pop("init_main_from_path", None)
                data.pop("init_main_from_name", None)
            return data

        get_preparation_data.ln_viz_skips_main = True  # type: ignore[attr-defined]
        spawn.get_preparation_data = get_preparation_data


class _NamedProcess(multiprocessing.context.SpawnProcess):
    """A spawned process named as our workers are, so it skips the parent's `__main__` (see above)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.name = _WORKER_NAME


class _WorkerContext(multiprocessing.context.SpawnContext):
    Process = _NamedProcess


def worker_context() -> multiprocessing.context.SpawnContext:
    """A spawn context whose processes skip the parent's `__main__`; for process pools."""
    _skip_main_module_in_workers()
    return _WorkerContext()


class _Worker:
    """The server's end of one worker process: its pipes and how to end it."""

    def __init__(self, ctx: Any, warm: bool) -> None:
        _skip_main_module_in_workers()
        out_r, out_w = ctx.Pipe(duplex=False)
        cmd_r, cmd_w = ctx.Pipe(duplex=False)
        self.warm = warm
        self.spawned_at = time.time()
        self.ready_at: float | None = None  # wall time of the worker's "ready"
        self.process = ctx.Process(
            target=_worker_main,
            args=(cmd_r, out_w, warm, os.getpid()),
            name=_WORKER_NAME,
            daemon=True,  # multiprocessing's own exit hook terminates it if all else fails
        )
        self.process.start()
        # Close our copies of the child's ends: only then does our reader see EOF when it dies.
        out_w.close()
        cmd_r.close()
        self.out, self.cmd = out_r, cmd_w
        self._send_lock = threading.Lock()  # page thread (stop) and drain threads (threads) send

    def send(self, msg: Any) -> None:
        with self._send_lock:
            try:
                self.cmd.send(msg)
            except OSError:  # it has exited already (BrokenPipeError is an OSError)
                pass

    def is_ready(self) -> bool:
        """True once its "ready" (or EOF, if it died) is waiting; reads nothing."""
        try:
            return self.ready_at is not None or self.out.poll(0)
        except OSError:
            return True

    def end(self, grace: float = 0.2) -> None:
        """Ask an idle worker to exit; kill it if it has not after `grace` seconds (it may still be
        importing torch, and holds nothing worth waiting for); reap it."""
        self.send(None)
        self.process.join(grace)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(1.0)
        self.close()

    def close(self) -> None:
        self.cmd.close()
        self.out.close()


# --- the server side --------------------------------------------------------------------------------
@dataclass(frozen=True)
class RunView:
    """A consistent, private picture of one run at one moment: safe to read without locks.

    `data` is a copy whose lists are the reader's own (the arrays in them are never written after
    they arrive, so they are shared, not copied). It is None until the worker has built the model.
    `version` changes whenever anything here changes: a page can skip redrawing when it has not.
    """

    run_id: str
    config: RunConfig
    status: str  # queued | running | completed | stalled | diverged | stopped | failed
    queue_position: int | None  # 1-based place in the queue; None unless queued
    message: str | None  # i18n key, filled with message_params
    message_params: dict[str, Any]
    error: str | None  # English one-liner of a failure (exception or how the worker died)
    data: RunData | None
    version: int
    first_snapshot_s: float | None  # seconds from getting a slot to the first snapshot

    @property
    def done(self) -> bool:
        return self.status in TERMINAL

    @property
    def steps_done(self) -> int:
        return self.data.steps_done if self.data is not None else 0


class RunHandle:
    """One run as the server sees it. Made by `Runner.start`; all state is guarded by the runner's
    lock and written by the runner (drain thread, scheduler) only."""

    def __init__(self, runner: Runner, run_id: str, cfg: RunConfig) -> None:
        self.run_id = run_id
        self.config = cfg
        self._runner = runner
        self._status = "queued"
        self._message: str | None = None
        self._message_params: dict[str, Any] = {}
        self._error: str | None = None
        self._data: RunData | None = None
        self._version = 0
        self._view: RunView | None = None
        self._worker: _Worker | None = None
        self._threads = 0
        self._started_at: float | None = None  # monotonic, when it got a slot
        self._deadline = float("inf")
        self._first_snapshot_s: float | None = None
        self._stop_key: str | None = None
        self._stop_params: dict[str, Any] = {}
        self._stop_at: float | None = None
        self._done = threading.Event()
        self.warm_start: bool | None = None  # did it get a pre-spawned worker

    # --- reading -----------------------------------------------------------------------------------
    @property
    def status(self) -> str:
        return self._status

    @property
    def done(self) -> bool:
        return self._done.is_set()

    @property
    def queue_position(self) -> int | None:
        return self._runner._queue_position(self)

    @property
    def pid(self) -> int | None:
        """The worker's process id while one is attached."""
        w = self._worker
        return w.process.pid if w is not None else None

    @property
    def first_snapshot_s(self) -> float | None:
        return self._first_snapshot_s

    @property
    def threads(self) -> int:
        """torch threads its worker was last told to use (0 while queued)."""
        return self._threads

    def view(self) -> RunView:
        """A consistent copy for readers. Cheap: O(steps) list copies under the lock (about 0.1 ms
        at 2,000 steps, depth 24), and the same object again while nothing has changed."""
        with self._runner._lock:
            if self._view is not None and self._view.version == self._version:
                return self._view
            data = self._data
            if data is not None:
                # Lists are appended to by the drain thread: copy them; their items are immutable.
                data = dataclasses.replace(
                    data,
                    scalars={k: list(v) for k, v in data.scalars.items()},
                    probe_steps=list(data.probe_steps),
                    probes={k: list(v) for k, v in data.probes.items()},
                )
            self._view = RunView(
                run_id=self.run_id,
                config=self.config,
                status=self._status,
                queue_position=self._runner._queue_position_locked(self),
                message=self._message,
                message_params=dict(self._message_params),
                error=self._error,
                data=data,
                version=self._version,
                first_snapshot_s=self._first_snapshot_s,
            )
            return self._view

    # --- acting ------------------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop the run; returns at once. It ends within about a second with status `stopped`,
        keeping every step measured so far (a queued run is dropped from the queue at once)."""
        self._runner._request_stop(self, MSG_STOPPED, {})

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the run has ended (and on_finish has run); False on timeout."""
        return self._done.wait(timeout)

    def __repr__(self) -> str:
        return f"RunHandle({self.run_id!r}, status={self._status!r})"


@dataclass
class _RunnerState:
    pending: deque[RunHandle] = field(default_factory=deque)
    active: set[RunHandle] = field(default_factory=set)
    idle: list[_Worker] = field(default_factory=list)  # the warm pool
    spawning: int = 0  # pool workers being started outside the lock
    closed: bool = False


class Runner:
    """Starts training runs in worker processes, at most `max_concurrent` at once; one per server.

    - `max_concurrent`: runs training at the same time (default: the number of cores); further
      starts wait in a queue and start in turn.
    - `warm_workers`: idle pre-spawned workers (torch imported, warmed up) kept ready, so a Start
      shows its first step in well under a second instead of after the 2-4 s a fresh process takes.
    - `threads_per_run`: torch threads in each worker. Default 1: on the 2-core machine one run
      trained at 20-23 steps/s on 1 thread and 12.5 on 2 (depth 6, d_model 64; at d_model 128-256
      2 threads gained at most 10 %), and two 1-thread runs gave 37.5 steps/s together. These ops
      are too small to split. None shares the cores between the runs training now (`default_threads`)
      and re-shares them whenever one starts or ends, for larger models or machines.
    - `max_seconds`, `max_steps`: the caps every run gets. Past `max_seconds` a run is stopped with
      message `msg.time_cap`; a config with more than `max_steps` steps is refused by `start`.
    - `on_start(run_id, info)`, `on_snapshot(run_id, snap)`, `on_finish(run_id, view)`: optional
      hooks, called from the run's drain thread, in order, never under a lock; an exception in one
      is logged and ignored. `on_finish` runs for every run that `start` returned, exactly once.
    - `live_probe_steps`: probe steps a handle's data keeps (evenly thinned, the latest always in:
      `RunData.max_probe_steps`), so the server's memory stays flat however long a run is; every
      snapshot still reaches `on_snapshot` (the store keeps them all). None keeps all.
    """

    def __init__(
        self,
        max_concurrent: int | None = None,
        *,
        warm_workers: int = 1,
        threads_per_run: int | None = 1,
        max_seconds: float = DEFAULT_MAX_SECONDS,
        max_steps: int = DEFAULT_MAX_STEPS,
        on_start: OnStart | None = None,
        on_snapshot: OnSnapshot | None = None,
        on_finish: OnFinish | None = None,
        stop_grace_s: float = STOP_GRACE_S,
        live_probe_steps: int | None = LIVE_PROBE_STEPS,
    ) -> None:
        self.max_concurrent = max(1, max_concurrent or os.cpu_count() or 1)
        self.warm_workers = max(0, warm_workers)
        self.threads_per_run = threads_per_run
        self.max_seconds = max_seconds
        self.max_steps = max_steps
        self.on_start, self.on_snapshot, self.on_finish = (
            on_start,
            on_snapshot,
            on_finish,
        )
        self.stop_grace_s = stop_grace_s
        self.live_probe_steps = live_probe_steps
        self._ctx = multiprocessing.get_context("spawn")
        self._lock = threading.RLock()
        self._state = _RunnerState()
        self._handles: dict[str, RunHandle] = {}
        _LIVE_RUNNERS.add(self)
        self._refill_pool()

    # --- public ------------------------------------------------------------------------------------
    def start(self, cfg: RunConfig, run_id: str | None = None) -> RunHandle:
        """Queue a run and start it as soon as a slot is free. A config the user can fix raises at
        once, before anything is spawned: ConfigError (a bad field, more than max_steps steps) or
        CorpusError (unusable user text), both LocalizedError. RuntimeError after shutdown()."""
        cfg.validate()
        if cfg.steps > self.max_steps:
            raise ConfigError("err.range", "steps", value=cfg.steps, lo=1, hi=self.max_steps)
        if cfg.corpus == "user":
            # Bad user text is the user's error: say so now, not as a failed run later.
            from ln_viz.corpus import user_text_corpus

            user_text_corpus(cfg.user_text or "", cfg.seq_len)
        run_id = run_id or uuid.uuid4().hex[:12]
        with self._lock:
            if self._state.closed:
                raise RuntimeError("the runner has been shut down")
            if run_id in self._handles:
                raise ValueError(f"run id {run_id!r} is already in use")
            handle = RunHandle(self, run_id, cfg)
            self._handles[run_id] = handle
            self._state.pending.append(handle)
        self._schedule()
        return handle

    def get(self, run_id: str) -> RunHandle | None:
        with self._lock:
            return self._handles.get(run_id)

    def handles(self) -> list[RunHandle]:
        """Every run started and not forgotten, oldest first."""
        with self._lock:
            return list(self._handles.values())

    def forget(self, run_id: str) -> None:
        """Drop a finished run's handle (and its RunData) from memory, e.g. once it is stored."""
        with self._lock:
            h = self._handles.get(run_id)
            if h is not None and h.done:
                del self._handles[run_id]

    def stop(self, run_id: str) -> None:
        h = self.get(run_id)
        if h is not None:
            h.stop()

    def busy(self) -> bool:
        """Whether any run is training or queued."""
        with self._lock:
            return bool(self._state.active or self._state.pending)

    def wait_warm(self, timeout: float = 30.0) -> bool:
        """Block until the warm pool is full and every pooled worker has finished warming up."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                s = self._state
                full = len(s.idle) >= self.warm_workers and not s.spawning
                if full and all(w.is_ready() for w in s.idle):
                    return True
            time.sleep(0.02)
        return False

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop every run, end the pooled workers, and reap every process (no orphans). Idempotent."""
        with self._lock:
            s = self._state
            s.closed = True
            pending, s.pending = list(s.pending), deque()
            active = list(s.active)
            idle, s.idle = s.idle, []
        for h in pending:
            self._finish(h, "stopped", MSG_STOPPED, {}, None)
        for h in active:
            self._request_stop(h, MSG_STOPPED, {})
        for w in idle:
            w.end()
        deadline = time.monotonic() + timeout
        for h in active:
            h.wait(max(0.0, deadline - time.monotonic()))
        while self._state.spawning and time.monotonic() < deadline:
            time.sleep(0.01)  # a pool worker being spawned right now is ended by its spawner
        _LIVE_RUNNERS.discard(self)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    # --- scheduling ----------------------------------------------------------------------------------
    def _queue_position(self, h: RunHandle) -> int | None:
        with self._lock:
            return self._queue_position_locked(h)

    def _queue_position_locked(self, h: RunHandle) -> int | None:
        if h._status != "queued":
            return None
        try:
            return self._state.pending.index(h) + 1
        except ValueError:
            return None

    def _touch_queue_locked(self) -> None:
        """Queue positions changed: every queued run's view is stale."""
        for h in self._state.pending:
            h._version += 1

    def _schedule(self) -> None:
        """Start queued runs while there are free slots."""
        while True:
            with self._lock:
                s = self._state
                if s.closed or not s.pending or len(s.active) >= self.max_concurrent:
                    break
                h = s.pending.popleft()
                s.active.add(h)
                self._touch_queue_locked()
                worker = None
                while s.idle and worker is None:
                    w = s.idle.pop(0)
                    if w.process.is_alive():
                        worker = w
                    else:  # died while idle (killed from outside): reap and try the next
                        w.process.join(0.1)
                        w.close()
            if worker is None:
                try:
                    worker = _Worker(self._ctx, warm=False)
                except OSError as e:  # out of processes, memory or file descriptors
                    error = f"could not start a worker process ({type(e).__name__}: {e})"
                    self._finish(h, "failed", MSG_WORKER_ERROR, {"error": error}, error)
                    continue
            self._launch(h, worker)
        self._refill_pool()

    def _launch(self, h: RunHandle, worker: _Worker) -> None:
        with self._lock:
            h._worker = worker
            h.warm_start = worker.warm
            h._status = "running"
            h._version += 1
            h._started_at = time.monotonic()
            h._deadline = h._started_at + self.max_seconds
            h._threads = self._threads_for_locked()
            stop_requested = h._stop_key is not None
        worker.send((h.config, h._threads))
        if stop_requested:  # stop() came between leaving the queue and getting a worker
            worker.send(("stop",))
        self._rebalance_threads()
        threading.Thread(target=self._drain, args=(h,), name=f"ln-viz-drain-{h.run_id}", daemon=True).start()

    def _threads_for_locked(self) -> int:
        if self.threads_per_run is not None:
            return self.threads_per_run
        return default_threads(len(self._state.active))

    def _rebalance_threads(self) -> None:
        """With automatic threads, keep every running worker at its share of the cores."""
        if self.threads_per_run is not None:
            return
        with self._lock:
            n = self._threads_for_locked()
            changed = [h for h in self._state.active if h._worker and h._threads != n]
            for h in changed:
                h._threads = n
            workers = [h._worker for h in changed]
        for w in workers:
            w.send(("threads", n))

    def _refill_pool(self) -> None:
        """Top the warm pool up; the spawns happen outside the lock (each takes a few ms here and
        seconds of CPU in the child, which is why the pool exists). Not while a run is starting: on
        2 cores a new worker's imports would slow the first steps the user is waiting for; the drain
        thread calls again at the run's first snapshot (and every run's end calls it too)."""
        while True:
            with self._lock:
                s = self._state
                if s.closed or len(s.idle) + s.spawning >= self.warm_workers:
                    return
                if any(h._first_snapshot_s is None for h in s.active):
                    return
                s.spawning += 1
            try:
                w = _Worker(self._ctx, warm=True)
            except OSError:  # the pool is a speed-up: runs still start (cold) without it
                log.exception("could not start a warm worker")
                with self._lock:
                    s.spawning -= 1
                return
            with self._lock:
                if not s.closed:
                    s.idle.append(w)
                    s.spawning -= 1
                    continue
            w.end()  # shut down while it was being spawned
            with self._lock:
                s.spawning -= 1  # only now: shutdown() waits for this to reach 0
            return

    # --- stopping ------------------------------------------------------------------------------------
    def _request_stop(self, h: RunHandle, key: str, params: dict[str, Any]) -> None:
        with self._lock:
            if h._done.is_set() or h._stop_key is not None:
                return
            if h._status == "queued" and h in self._state.pending:
                self._state.pending.remove(h)
                self._touch_queue_locked()
                queued = True
            else:
                queued = False
                h._stop_key, h._stop_params = key, params
                h._stop_at = time.monotonic()
                worker = h._worker
        if queued:
            self._finish(h, "stopped", key, params, None)
        elif worker is not None:
            worker.send(("stop",))
        # else: between queue and worker; _launch sends the stop with the job

    # --- the drain thread ----------------------------------------------------------------------------
    def _drain(self, h: RunHandle) -> None:
        """Read one worker's messages into its handle until it ends; enforce its caps."""
        worker = h._worker
        assert worker is not None
        ended: tuple[str, str | None, dict[str, Any], str | None] | None = None
        terminated = False
        try:
            while ended is None:
                now = time.monotonic()
                if h._stop_key is None and now >= h._deadline:
                    self._request_stop(h, MSG_TIME_CAP, {"seconds": round(self.max_seconds)})
                if h._stop_at is not None:
                    # Stop is a request first; a worker busy in a long step is ended by signal.
                    late = now - h._stop_at - self.stop_grace_s
                    if late > KILL_AFTER_S and worker.process.is_alive():
                        worker.process.kill()
                    elif late > 0 and not terminated:
                        worker.process.terminate()
                        terminated = True
                if not worker.out.poll(_POLL_S):
                    continue
                ended = self._handle_message(h, worker, worker.out.recv())
        except (EOFError, OSError):
            pass  # the worker is gone; how it ended is decided below
        worker.process.join(1.0)
        if worker.process.is_alive():  # sent "end" but did not exit: do not leave it behind
            worker.process.kill()
            worker.process.join(1.0)
        worker.close()
        if ended is None:
            ended = self._ending_without_end(h, worker)
        status, key, params, error = ended
        self._finish(h, status, key, params, error)

    def _handle_message(
        self, h: RunHandle, worker: _Worker, msg: tuple[Any, ...]
    ) -> tuple[str, str | None, dict[str, Any], str | None] | None:
        kind = msg[0]
        if kind == "snap":
            snap: Snapshot = msg[1]
            first = False
            with self._lock:
                if h._data is not None:
                    h._data.append(snap)
                    if h._first_snapshot_s is None and h._started_at is not None:
                        h._first_snapshot_s = time.monotonic() - h._started_at
                        first = True
                    h._version += 1
            self._call(self.on_snapshot, h.run_id, snap)
            if first:
                self._refill_pool()  # held back while this run was starting
        elif kind == "info":
            info: RunInfo = msg[1]
            with self._lock:
                h._data = RunData(info, status="running", max_probe_steps=self.live_probe_steps)
                h._version += 1
            self._call(self.on_start, h.run_id, info)
        elif kind == "ready":
            worker.ready_at = msg[1]
        elif kind == "end":
            with self._lock:
                status = h._data.status if h._data is not None else "failed"
                message = h._data.message if h._data is not None else None
            if status in TERMINAL:  # the last step came first, even if a stop crossed it
                return (
                    status,
                    message if status in ("stalled", "diverged") else None,
                    {},
                    None,
                )
            if msg[1] == "stopped":
                return "stopped", h._stop_key or MSG_STOPPED, dict(h._stop_params), None
            error = "the worker ended its run without a final step"
            return "failed", MSG_WORKER_ERROR, {"error": error}, error
        elif kind == "error":
            _, line, key, params = msg
            if key:  # a LocalizedError: the page can say it in the user's language
                return "failed", key, dict(params), line
            return "failed", MSG_WORKER_ERROR, {"error": line}, line
        return None

    def _ending_without_end(self, h: RunHandle, worker: _Worker) -> tuple[str, str | None, dict[str, Any], str | None]:
        """The worker's pipe closed before it said goodbye: killed by us (stop) or by something else."""
        if h._stop_key is not None:
            return "stopped", h._stop_key, dict(h._stop_params), None
        code = worker.process.exitcode
        if code is not None and code < 0:
            try:
                how = f"killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"killed by signal {-code}"
        else:
            how = f"exit code {code}"
        error = f"the worker process ended unexpectedly ({how})"
        return "failed", MSG_WORKER_DIED, {"how": how}, error

    def _finish(
        self,
        h: RunHandle,
        status: str,
        key: str | None,
        params: dict[str, Any],
        error: str | None,
    ) -> None:
        with self._lock:
            if h._done.is_set() or h._status in TERMINAL:
                return
            h._status = status
            h._message, h._message_params, h._error = key, params, error
            if h._data is not None:
                h._data.status = status
                if key:
                    h._data.message = key
            h._version += 1
            h._worker = None
            self._state.active.discard(h)
        self._rebalance_threads()
        self._schedule()
        self._call(self.on_finish, h.run_id, h.view())
        h._done.set()

    def _call(self, hook: Callable[..., None] | None, *args: Any) -> None:
        if hook is None:
            return
        try:
            hook(*args)
        except Exception:  # a hook's bug must not stop the stream or leave a run unfinished
            log.exception("runner hook %s failed", getattr(hook, "__name__", hook))


# Runners still alive at interpreter exit are shut down, so no worker outlives the server even when
# nothing released them (st.cache_resource's on_release is not guaranteed at server shutdown).
_LIVE_RUNNERS: weakref.WeakSet[Runner] = weakref.WeakSet()


@atexit.register
def _shutdown_all() -> None:
    for runner in list(_LIVE_RUNNERS):
        runner.shutdown(timeout=2.0)
