"""A Runner for page tests that need a run on screen but prove nothing about the worker: `ReplayRunner`
has the public API the pages use (start, get, handles, stop, forget, busy, wait_warm, shutdown,
max_concurrent) and the real `RunHandle`s, but instead of training in a worker process a thread replays
a REAL recorded run, the shipped demo run nearest to the config asked for (ln_viz/data/demo_runs, read
with ln_viz.runfile), through the same handle transitions and store hooks as the runner's drain thread.
A run replays in milliseconds; `hold_at=n` keeps every run at step n, running, until it is stopped or
`release()`d, for a test that needs a run in progress. The tests of the real worker stay `slow`."""

from __future__ import annotations

import dataclasses
import functools
import threading
import uuid
from collections.abc import Callable
from typing import Any

from ln_viz.config import RunConfig
from ln_viz.runfile import read_run_file
from ln_viz.runner import RunHandle, Runner
from ln_viz.snapshot import RunData, Snapshot
from ln_viz.store.transfer import DEMO_DIR


@functools.cache
def demo_runs() -> dict[str, RunData]:
    """The shipped demo runs by file name (read once; a replay only reads them)."""
    return {p.name.removesuffix(".json.gz"): read_run_file(p).data for p in sorted(DEMO_DIR.glob("*.json.gz"))}


def nearest_demo(cfg: RunConfig) -> RunData:
    """The demo run whose config differs from `cfg` in the fewest fields (the first one on a tie)."""
    want = cfg.to_dict()

    def distance(data: RunData) -> int:
        have = data.info.config.to_dict()
        return sum(have.get(k) != v for k, v in want.items())

    return min(demo_runs().values(), key=distance)


def recorded_snapshots(data: RunData) -> list[Snapshot]:
    """A recorded run as the trainer streamed it: every step, probes at its probe steps, and its end
    (completed, stalled) on the last step, as the trainer's final snapshot carries it."""
    snaps = list(data.snapshots())
    snaps[-1] = dataclasses.replace(snaps[-1], status=data.status, message=data.message)
    return snaps


class _Replay:
    """What stands in for a run's worker process: the handle reads `warm` when it is attached."""

    warm = True


class ReplayRunner:
    """Runner-compatible; see the module's docstring. `on_start`, `on_snapshot`, `on_finish` are the
    runner's hooks (the app passes the store's: `connect`)."""

    def __init__(self, *, hold_at: int | None = None, max_concurrent: int = 2, live_probe_steps: int | None = 64):
        self.hold_at = hold_at
        self.max_concurrent = max_concurrent
        self.live_probe_steps = live_probe_steps
        self.on_start: Callable[[str, Any, str | None], None] | None = None
        self.on_snapshot: Callable[[str, Snapshot], None] | None = None
        self.on_finish: Callable[[str, Any], None] | None = None
        self.connected = False
        self.started: list[RunConfig] = []  # the configs asked for, in order
        self.errors: list[Exception] = []  # raised by a hook
        self._lock = threading.RLock()
        self._handles: dict[str, RunHandle] = {}
        self._threads: list[threading.Thread] = []
        self._wake = threading.Condition(self._lock)
        self._released = False

    def connect(self, on_start=None, on_snapshot=None, on_finish=None) -> None:
        """Take the runner hooks the app would give its Runner (`ln_viz.ui.storage.store_hooks()`)."""
        self.on_start, self.on_snapshot, self.on_finish = on_start, on_snapshot, on_finish
        self.connected = True

    # --- the Runner's public API -------------------------------------------------------------------
    def start(
        self, cfg: RunConfig, run_id: str | None = None, *, owner: str | None = None, group: str | None = None
    ) -> RunHandle:
        """Validate as the runner does (a ConfigError for the page to show), then replay the nearest
        demo run at once (no queue: `owner` is kept, not used); its handle carries that run's config."""
        cfg.validate()
        data = nearest_demo(cfg)
        run_id = run_id or uuid.uuid4().hex[:12]
        handle = RunHandle(
            run_id,
            data.info.config,
            lock=self._lock,
            queue_position=lambda h: None,
            request_stop=self._request_stop,
            owner=owner,
            group=group,
        )
        with self._lock:
            self.started.append(cfg)
            self._handles[run_id] = handle
            handle.attach(_Replay(), threads=1, max_seconds=float("inf"))  # type: ignore[arg-type]
        thread = threading.Thread(target=self._replay, args=(handle, data), name=f"replay-{run_id}", daemon=True)
        self._threads.append(thread)
        thread.start()
        return handle

    # the runner's own bookkeeping, over the same `_lock` and `_handles`
    get = Runner.get
    handles = Runner.handles
    forget = Runner.forget
    stop = Runner.stop

    def busy(self) -> bool:
        with self._lock:
            return any(not h.done for h in self._handles.values())

    def wait_warm(self, timeout: float = 30.0) -> bool:
        return True  # nothing to warm

    def shutdown(self, timeout: float = 5.0) -> None:
        for h in self.handles():
            h.stop()
        for thread in self._threads:
            thread.join(timeout)

    # --- the replay ---------------------------------------------------------------------------------
    def release(self) -> None:
        """Let held runs go on to their end."""
        with self._lock:
            self._released = True
            self._wake.notify_all()

    def _request_stop(self, h: RunHandle, key: str, params: dict[str, Any]) -> None:
        with self._lock:
            if not h.done:
                h.request_stop(key, params)
                self._wake.notify_all()

    def _replay(self, h: RunHandle, data: RunData) -> None:
        """What the drain thread does with a worker's Info, Snap and End messages."""
        h.record_info(data.info, self.live_probe_steps)
        self._call(self.on_start, h.run_id, data.info, h.group)
        stopped = False
        for snap in recorded_snapshots(data):
            with self._lock:
                if self.hold_at is not None and snap.step > self.hold_at:
                    self._wake.wait_for(lambda: self._released or h.stop_requested)
                stopped = h.stop_requested
            if stopped:
                break
            h.record_snapshot(snap)
            self._call(self.on_snapshot, h.run_id, snap)
        outcome = h.outcome_of_end(stopped)
        if h.finish(outcome):
            self._call(self.on_finish, h.run_id, h.view())
        h.release()

    def _call(self, hook: Callable[..., None] | None, *args: Any) -> None:
        """A hook's exception is kept for the test to fail on (the runner logs it), and the run goes on."""
        if hook is None:
            return
        try:
            hook(*args)
        except Exception as e:  # noqa: BLE001 -- the `replay_runner` fixture fails the test with it
            self.errors.append(e)
