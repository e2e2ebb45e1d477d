"""One run as the server sees it: a `RunHandle`, which owns its state and every transition of it, and
the `RunView` readers get of it.

A handle's life: queued -> running (`attach`) -> one terminal status (`finish`), then `wait()`
returns. Only the handle's own methods write its fields; the runner calls them (from the page thread
that starts or stops a run, and from the run's drain thread), always under the runner's lock, which
the handle shares so that a view is consistent with the queue around it.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ln_viz.config import RunConfig
from ln_viz.runner.messages import Failed
from ln_viz.runner.process import WorkerProcess
from ln_viz.schema import TERMINAL
from ln_viz.snapshot import RunData, RunInfo, Snapshot

# i18n keys of the messages the runner itself sets (the trainer's own are msg.diverged / msg.stalled).
MSG_STOPPED = "msg.stopped"  # stopped by the user or at server shutdown
MSG_TIME_CAP = "msg.time_cap"  # params: seconds
MSG_WORKER_ERROR = "msg.worker_error"  # params: error (the exception's one line)
MSG_WORKER_DIED = "msg.worker_died"  # params: how ("killed by SIGKILL", "exit code 1")
MSG_WORKER_LOST = "msg.worker_lost"  # a run's Ray actor, or its node, gone: a sentence of its own in each language
WORKER_LOST = "its Ray worker or node was lost"  # a RayWorker's exit_description


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


@dataclass(frozen=True)
class Outcome:
    """How a run ended: its terminal status, the message for the page, and the English error."""

    status: str
    key: str | None = None
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    error: str | None = None

    @classmethod
    def failed(cls, error: str, key: str = MSG_WORKER_ERROR, params: dict[str, Any] | None = None) -> Outcome:
        """A failure; by default reported as a worker error carrying `error` itself."""
        return cls("failed", key, {"error": error} if params is None else params, error)

    @classmethod
    def of_failure(cls, msg: Failed) -> Outcome:
        """The worker's exception; a LocalizedError keeps its key so the page can say it in the user's
        language."""
        return cls.failed(msg.line, msg.key, dict(msg.params)) if msg.key else cls.failed(msg.line)


QueuePosition = Callable[["RunHandle"], "int | None"]
RequestStop = Callable[["RunHandle", str, dict[str, Any]], None]


class RunHandle:
    """One run as the server sees it. Made by `Runner.start`; read it with `view()`, end it with
    `stop()`, and wait for its end with `wait()`. `owner` (a browser session; by default the run's own
    id) decides its turn in the queue; `group` names the seed group the store files it under."""

    def __init__(
        self,
        run_id: str,
        cfg: RunConfig,
        *,
        lock: threading.RLock,
        queue_position: QueuePosition,
        request_stop: RequestStop,
        owner: str | None = None,
        group: str | None = None,
    ) -> None:
        self.run_id = run_id
        self.config = cfg
        self.owner = owner if owner is not None else run_id  # whose turn it is in the queue: runner.queue
        self.group = group  # the seed group it belongs to, stored with it (None: a run of its own)
        self._lock = lock  # the runner's: a view must agree with the queue
        self._queue_position = queue_position  # called under the lock
        self._request_stop = request_stop
        self._status = "queued"
        self._outcome: Outcome | None = None
        self._data: RunData | None = None
        self._version = 0
        self._view: RunView | None = None
        self._worker: WorkerProcess | None = None
        self._warm_start: bool | None = None
        self._threads = 0
        self._started_at: float | None = None  # monotonic, when it got a slot
        self._deadline = float("inf")
        self._first_snapshot_s: float | None = None
        self._stop: tuple[str, dict[str, Any]] | None = None  # the message a requested stop ends with
        self._stop_at: float | None = None  # monotonic, when the stop was requested
        self._done = threading.Event()

    # --- reading -----------------------------------------------------------------------------------
    @property
    def status(self) -> str:
        return self._status

    @property
    def done(self) -> bool:
        return self._done.is_set()

    @property
    def queue_position(self) -> int | None:
        with self._lock:
            return self._queue_position(self)

    @property
    def pid(self) -> int | None:
        """The worker's process id while one is attached."""
        w = self._worker
        return w.pid if w is not None else None

    @property
    def warm_start(self) -> bool | None:
        """Whether it got a pre-spawned (warm) worker; None until it has a worker."""
        return self._warm_start

    @property
    def first_snapshot_s(self) -> float | None:
        return self._first_snapshot_s

    @property
    def started_at(self) -> float | None:
        """Monotonic time it got a slot; None while queued."""
        return self._started_at

    @property
    def threads(self) -> int:
        """torch threads its worker was last told to use (0 while queued)."""
        return self._threads

    @property
    def stop_requested(self) -> bool:
        return self._stop is not None

    def past_deadline(self, now: float) -> bool:
        """Whether its time cap is due to stop it at monotonic time `now` (and has not yet)."""
        return self._stop is None and now >= self._deadline

    def stop_late_by(self, now: float, grace: float) -> float | None:
        """Seconds past `grace` that a requested stop has waited at `now` (negative while within it);
        None when no stop was requested."""
        return None if self._stop_at is None else now - self._stop_at - grace

    def view(self) -> RunView:
        """A consistent copy for readers. Cheap: O(steps) list copies under the lock (about 0.1 ms
        at 2,000 steps, depth 24), and the same object again while nothing has changed."""
        with self._lock:
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
            outcome = self._outcome or Outcome(self._status)
            self._view = RunView(
                run_id=self.run_id,
                config=self.config,
                status=self._status,
                queue_position=self._queue_position(self),
                message=outcome.key,
                message_params=dict(outcome.params),
                error=outcome.error,
                data=data,
                version=self._version,
                first_snapshot_s=self._first_snapshot_s,
            )
            return self._view

    # --- acting ------------------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop the run; returns at once. It ends within about a second with status `stopped`,
        keeping every step measured so far (a queued run is dropped from the queue at once)."""
        self._request_stop(self, MSG_STOPPED, {})

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the run has ended (and on_finish has run); False on timeout."""
        return self._done.wait(timeout)

    def __repr__(self) -> str:
        return f"RunHandle({self.run_id!r}, status={self._status!r})"

    # --- transitions (the runner's) --------------------------------------------------------------------
    def touch(self) -> None:
        """Something a view shows changed outside the handle (its place in the queue)."""
        with self._lock:
            self._version += 1

    def attach(self, worker: WorkerProcess, threads: int, max_seconds: float) -> bool:
        """queued -> running on `worker`, capped at `max_seconds` from now. True when a stop was
        requested meanwhile (between leaving the queue and getting a worker): send it with the job."""
        with self._lock:
            self._worker = worker
            self._warm_start = worker.warm
            self._status = "running"
            self._version += 1
            self._started_at = time.monotonic()
            self._deadline = self._started_at + max_seconds
            self._threads = threads
            return self._stop is not None

    def set_threads(self, threads: int) -> WorkerProcess | None:
        """Record a new thread count; the worker to tell, or None when there is nothing to tell."""
        with self._lock:
            if self._worker is None or self._threads == threads:
                return None
            self._threads = threads
            return self._worker

    def request_stop(self, key: str, params: dict[str, Any]) -> WorkerProcess | None:
        """Note that the run is to stop, ending with message `key`; the worker to tell, if it has one
        yet. The first request wins."""
        with self._lock:
            if self._stop is None:
                self._stop, self._stop_at = (key, params), time.monotonic()
            return self._worker

    def record_info(self, info: RunInfo, max_probe_steps: int | None) -> None:
        """The worker built its trainer: the run's data starts here."""
        with self._lock:
            self._data = RunData(info, status="running", max_probe_steps=max_probe_steps)
            self._version += 1

    def record_snapshot(self, snap: Snapshot) -> bool:
        """Add one step; True if it was the run's first."""
        with self._lock:
            if self._data is None:
                return False
            self._data.append(snap)
            first = False
            if self._first_snapshot_s is None and self._started_at is not None:
                self._first_snapshot_s = time.monotonic() - self._started_at
                first = True
            self._version += 1
            return first

    def outcome_of_end(self, stopped: bool) -> Outcome:
        """How the run ended, given the worker's End."""
        with self._lock:
            data = self._data
            status = data.status if data is not None else "failed"
            if status in TERMINAL:  # the last step came first, even if a stop crossed it
                message = data.message if data is not None else None
                return Outcome(status, message if status in ("stalled", "diverged") else None)
            if stopped:
                return self._stopped()
        return Outcome.failed("the worker ended its run without a final step")

    def outcome_without_end(self, how: str) -> Outcome:
        """How the run ended when its worker's pipe closed before End: killed by us (a stop) or by
        something else (`how`: "killed by SIGKILL", "exit code 1")."""
        if self._stop is not None:
            return self._stopped()
        if how == WORKER_LOST:  # not "the process ... ended (its Ray worker ...)": English inside a Korean sentence
            return Outcome.failed(f"the run ended unexpectedly ({how})", MSG_WORKER_LOST)
        return Outcome.failed(f"the worker process ended unexpectedly ({how})", MSG_WORKER_DIED, {"how": how})

    def _stopped(self) -> Outcome:
        key, params = self._stop or (MSG_STOPPED, {})
        return Outcome("stopped", key, dict(params))

    def finish(self, outcome: Outcome) -> bool:
        """running or queued -> terminal. False (and nothing changes) if it has ended already."""
        with self._lock:
            if self._done.is_set() or self._status in TERMINAL:
                return False
            self._status = outcome.status
            self._outcome = outcome
            if self._data is not None:
                self._data.status = outcome.status
                if outcome.key:
                    self._data.message = outcome.key
            self._version += 1
            self._worker = None
            return True

    def release(self) -> None:
        """The end is complete (hooks included): wake whoever waits."""
        self._done.set()
