"""The `Runner`: the public API that starts, queues, caps and stops runs, and the threads that manage
them (the scheduler, run from whichever thread frees or fills a slot, and one drain thread per
running run that reads its worker's messages into its handle and enforces its caps).
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Self

from ln_viz.config import ConfigError, RunConfig
from ln_viz.runner.handle import MSG_STOPPED, MSG_TIME_CAP, Outcome, RunHandle, RunView
from ln_viz.runner.messages import End, Failed, Info, Job, SetThreads, Snap, Stop, WorkerMessage
from ln_viz.runner.process import WorkerProcess, default_threads, start_worker
from ln_viz.runner.queue import FairQueue
from ln_viz.snapshot import RunInfo, Snapshot

log = logging.getLogger(__name__)

DEFAULT_MAX_SECONDS = 600.0
DEFAULT_MAX_STEPS = 10_000
# Probe steps kept in the server's live copy of a run. At depth 24 a probe step is ~37 KB, so a run
# holds at most ~2.4 MB of them; the live charts show 33-64 evenly spaced steps of a long run.
LIVE_PROBE_STEPS = 64
STOP_GRACE_S = 0.5  # a worker gets this long to finish its step and exit by itself...
KILL_AFTER_S = 0.2  # ...then SIGTERM, and this long later SIGKILL: stop always ends within ~0.8 s
_POLL_S = 0.05  # how often a drain thread looks at deadlines when its worker is quiet

OnStart = Callable[[str, RunInfo, str | None], None]  # run id, header, seed group
OnSnapshot = Callable[[str, Snapshot], None]
OnFinish = Callable[[str, RunView], None]
NewWorker = Callable[[str | None, bool], Any]  # (run id, warm) -> a WorkerProcess or one like it


@dataclass
class _RunnerState:
    pending: FairQueue = field(default_factory=FairQueue)
    active: set[RunHandle] = field(default_factory=set)
    idle: list[WorkerProcess] = field(default_factory=list)  # the warm pool
    spawning: int = 0  # pool workers being started outside the lock
    closed: bool = False


class Runner:
    """Starts training runs in worker processes, at most `max_concurrent` at once; one per server.

    - `max_concurrent`: runs training at the same time (default: the number of cores); further
      starts wait in a queue and start in turn, taking turns between owners (`runner.queue`).
    - `warm_workers`: idle pre-spawned workers (torch imported, warmed up) kept ready, so a Start
      shows its first step in well under a second instead of after the 2-4 s a fresh process takes.
    - `threads_per_run`: torch threads in each worker. Default 1: on the 2-core machine one run
      trained at 20-23 steps/s on 1 thread and 12.5 on 2 (depth 6, d_model 64; at d_model 128-256
      2 threads gained at most 10 %), and two 1-thread runs gave 37.5 steps/s together. These ops
      are too small to split. None shares the cores between the runs training now (`default_threads`)
      and re-shares them whenever one starts or ends, for larger models or machines.
    - `max_seconds`, `max_steps`: the caps every run gets. Past `max_seconds` a run is stopped with
      message `msg.time_cap`; a config with more than `max_steps` steps is refused by `start`.
    - `on_start(run_id, info, group)`, `on_snapshot(run_id, snap)`, `on_finish(run_id, view)`: optional
      hooks, called from the run's drain thread, in order, never under a lock; an exception in one
      is logged and ignored. `on_finish` runs for every run that `start` returned, exactly once.
    - `live_probe_steps`: probe steps a handle's data keeps (evenly thinned, the latest always in:
      `RunData.max_probe_steps`), so the server's memory stays flat however long a run is; every
      snapshot still reaches `on_snapshot` (the store keeps them all). None keeps all.
    - `new_worker(run_id, warm)`: where a run trains; default a local `WorkerProcess`, or a
      `runner.ray_worker.RayBackend` (an actor per run on a Ray cluster; use warm_workers=0 with it).
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
        new_worker: NewWorker | None = None,
    ) -> None:
        self.max_concurrent = max(1, max_concurrent or os.cpu_count() or 1)
        self.warm_workers = max(0, warm_workers)
        self.threads_per_run = threads_per_run
        self.max_seconds = max_seconds
        self.max_steps = max_steps
        self.on_start, self.on_snapshot, self.on_finish = on_start, on_snapshot, on_finish
        self.stop_grace_s = stop_grace_s
        self.live_probe_steps = live_probe_steps
        self.new_worker = new_worker or start_worker
        self._lock = threading.RLock()  # guards the state below and every handle's (they share it)
        self._state = _RunnerState()
        self._handles: dict[str, RunHandle] = {}
        _LIVE_RUNNERS.add(self)
        # In the background: a fork server's first worker waits for its imports, whoever makes the Runner need not
        threading.Thread(target=self._refill_pool, name="ln-viz-warm-pool", daemon=True).start()

    # --- public ------------------------------------------------------------------------------------
    def start(
        self, cfg: RunConfig, run_id: str | None = None, *, owner: str | None = None, group: str | None = None
    ) -> RunHandle:
        """Queue a run, to start at its `owner`'s turn (`runner.queue`; None: its own owner); `group`: its
        seed group, for the store. A user's error raises before any spawn: ConfigError (a bad field, over
        max_steps steps), CorpusError (unusable user text). RuntimeError after shutdown()."""
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
            handle = RunHandle(
                run_id,
                cfg,
                lock=self._lock,
                queue_position=self._queue_position_locked,
                request_stop=self._request_stop,
                owner=owner,
                group=group,
            )
            self._handles[run_id] = handle
            self._state.pending.append(handle)
            self._touch_queue_locked()  # another owner's run may go ahead of those queued
        self._schedule()
        return handle

    def get(self, run_id: str) -> RunHandle | None:
        """The handle of a run started here and not forgotten."""
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
        """Stop a run by id (see `RunHandle.stop`); an unknown id is ignored."""
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
            pending = s.pending.clear()
            active = list(s.active)
            idle, s.idle = s.idle, []
        for h in pending:
            self._finish(h, Outcome("stopped", MSG_STOPPED))
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
    def _queue_position_locked(self, h: RunHandle) -> int | None:
        queued = h.status == "queued"
        return self._state.pending.position(h, self._state.active, self.max_concurrent) if queued else None

    def _touch_queue_locked(self) -> None:
        """Queue positions changed: every queued run's view is stale."""
        for h in self._state.pending:
            h.touch()

    def _schedule(self) -> None:
        """Start queued runs while there are free slots."""
        while True:
            with self._lock:
                s = self._state
                if s.closed or not s.pending or len(s.active) >= self.max_concurrent:
                    break
                h = s.pending.pop_next(s.active)
                s.active.add(h)
                self._touch_queue_locked()
                worker = self._take_idle_locked()
            if worker is None:
                try:
                    worker = self.new_worker(h.run_id, False)
                except OSError as e:  # out of processes, memory or file descriptors
                    self._finish(h, Outcome.failed(f"could not start a worker process ({type(e).__name__}: {e})"))
                    continue
            self._launch(h, worker)
        self._refill_pool()

    def _take_idle_locked(self) -> WorkerProcess | None:
        """A live worker from the warm pool, if there is one."""
        while self._state.idle:
            w = self._state.idle.pop(0)
            if w.is_alive():
                return w
            w.reap(0.1)  # died while idle (killed from outside): reap and try the next
        return None

    def _launch(self, h: RunHandle, worker: WorkerProcess) -> None:
        with self._lock:
            stop_requested = h.attach(worker, self._threads_for_locked(), self.max_seconds)
        worker.send(Job(h.config, h.threads))
        if stop_requested:  # stop() came between leaving the queue and getting a worker
            worker.send(Stop())
        self._rebalance_threads()
        threading.Thread(target=self._drain, args=(h, worker), name=f"ln-viz-drain-{h.run_id}", daemon=True).start()

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
            workers = [w for h in self._state.active if (w := h.set_threads(n)) is not None]
        for w in workers:
            w.send(SetThreads(n))

    def _refill_pool(self) -> None:
        """Top the warm pool up; the spawns happen outside the lock (each takes a few ms here and
        seconds of CPU in the child, which is why the pool exists). Not while a run is starting: on
        2 cores a new worker's imports would slow the first steps the user is waiting for; the drain
        thread calls again at the run's first snapshot (and every run's end calls it too). Nor while
        `max_concurrent` runs train (by default one per core): a Start would wait in the queue for one of them
        to end, which refills the pool, so a warm worker could not help it, and its seconds of imports would
        slow the pair the room is watching (issue 32: Compare's first pair on 2 cores shared them with two)."""
        while True:
            with self._lock:
                s = self._state
                if s.closed or len(s.idle) + s.spawning >= self.warm_workers:
                    return
                if any(h.first_snapshot_s is None for h in s.active) or len(s.active) >= self.max_concurrent:
                    return
                s.spawning += 1
            try:
                w = self.new_worker(None, True)
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
        worker = None
        with self._lock:
            if h.done or h.stop_requested:
                return
            queued = h.status == "queued" and h in self._state.pending
            if queued:
                self._state.pending.remove(h)
                self._touch_queue_locked()
            else:
                worker = h.request_stop(key, params)
        if queued:
            self._finish(h, Outcome("stopped", key, params))
        elif worker is not None:
            worker.send(Stop())
        # else: between queue and worker; _launch sends the stop with the job

    # --- the drain thread ----------------------------------------------------------------------------
    def _drain(self, h: RunHandle, worker: WorkerProcess) -> None:
        """Read one worker's messages into its handle until it ends; enforce its caps."""
        outcome: Outcome | None = None
        terminated = False
        try:
            while outcome is None:
                terminated = self._enforce_caps(h, worker, terminated)
                msg = worker.receive(_POLL_S)
                if msg is not None:
                    outcome = self._on_message(h, msg)
        except (EOFError, OSError):
            pass  # the worker is gone; how it ended is decided below
        worker.reap()
        self._finish(h, outcome or h.outcome_without_end(worker.exit_description()))

    def _enforce_caps(self, h: RunHandle, worker: WorkerProcess, terminated: bool) -> bool:
        """Stop a run past its time cap; end by signal a worker that does not stop in time (busy in a
        long step: stop is a request first). Returns whether it has been sent SIGTERM."""
        now = time.monotonic()
        if h.past_deadline(now):
            self._request_stop(h, MSG_TIME_CAP, {"seconds": round(self.max_seconds)})
        late = h.stop_late_by(now, self.stop_grace_s)
        if late is None:
            return terminated
        if late > KILL_AFTER_S:
            worker.kill()
        elif late > 0 and not terminated:
            worker.terminate()
            return True
        return terminated

    def _on_message(self, h: RunHandle, msg: WorkerMessage) -> Outcome | None:
        """Apply one message from the worker; the run's outcome once it has ended."""
        match msg:
            case Snap(snapshot=snap):
                first = h.record_snapshot(snap)
                self._call(self.on_snapshot, h.run_id, snap)
                if first:
                    self._refill_pool()  # held back while this run was starting
            case Info(info=info):
                h.record_info(info, self.live_probe_steps)
                self._call(self.on_start, h.run_id, info, h.group)
            case End(stopped=stopped):
                return h.outcome_of_end(stopped)
            case Failed():
                return Outcome.of_failure(msg)
        return None  # Ready: the worker noted its time itself

    def _finish(self, h: RunHandle, outcome: Outcome) -> None:
        with self._lock:
            if not h.finish(outcome):
                return
            self._state.active.discard(h)
        self._rebalance_threads()
        self._schedule()
        self._call(self.on_finish, h.run_id, h.view())
        h.release()

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
