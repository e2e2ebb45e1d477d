"""The `ray` executor: each cell a Ray Core task (a streaming generator yielding every step's
Snap (the Runner's message for a step), `num_cpus=1`, one torch thread) on a cluster the user names.

Where: `address` (the CLI's `--address`), else $RAY_ADDRESS, else `"local"`: a private cluster of this
process, bound to 127.0.0.1, ended with it. Never a bare `ray.init()`, which silently joins whatever
cluster is running on the machine. Usage stats stay off (RAY_USAGE_STATS_ENABLED=0).

Why one long-lived driver thread: Ray ties the head processes it starts to the thread that called
`ray.init`; inside Streamlit, an init from a script thread (which ends after every rerun) killed the
server on the next rerun (ray issue 45570). So every Ray call of this process happens in one daemon
thread, `_Driver`, which inits once per address and runs the sweeps it is handed one at a time.

Code on the nodes: on a cluster it did not start, the ln_viz package goes with the job
(`runtime_env={"py_modules": [ln_viz]}`); the nodes need torch==2.13.0, numpy, pandas and
ray==2.60.0 installed (README, "The stability map"). A private cluster shares this machine's files.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ln_viz.config import RunConfig
from ln_viz.runner.messages import Snap
from ln_viz.sweep.executors import OnEnd, OnStep
from ln_viz.sweep.spec import Cell, SweepError
from ln_viz.text import error_line

RAY_VERSION = "2.60.0"  # requirements-ray.txt
_POLL_S = 0.1
_PACKAGE = Path(__file__).resolve().parents[1]  # ln_viz/


def _import_ray() -> Any:
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError:
        raise SweepError("sweep.err.ray_missing", "executor", version=RAY_VERSION) from None
    return ray


def _train_cell(cfg: RunConfig):  # a Ray task: runs on a node
    """Train one cell, yielding (the worker's pid, Snap) per step: the Runner's message for a step."""
    import torch

    from ln_viz.train import Trainer

    torch.set_num_threads(1)
    pid = os.getpid()
    for snap in Trainer(cfg):
        yield pid, Snap(snap)


class _Driver:
    """The one thread of this process that talks to Ray (see the module docstring)."""

    _instance: _Driver | None = None
    _instance_lock = threading.Lock()

    def __init__(self) -> None:
        self._jobs: queue.Queue[tuple[Callable[[], Any], dict[str, Any], threading.Event]] = queue.Queue()
        self.address: str | None = None
        self._task: Any = None
        threading.Thread(target=self._loop, name="ln-viz-ray-driver", daemon=True).start()

    @classmethod
    def get(cls) -> _Driver:
        """The process's one driver thread, started on first use."""
        with cls._instance_lock:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance

    def call(self, fn: Callable[[], Any]) -> Any:
        """Run `fn` in the driver thread, wait for it, return its value or raise its exception."""
        box: dict[str, Any] = {}
        done = threading.Event()
        self._jobs.put((fn, box, done))
        done.wait()
        if "error" in box:
            raise box["error"]
        return box.get("value")

    def _loop(self) -> None:
        while True:
            fn, box, done = self._jobs.get()
            try:
                box["value"] = fn()
            except BaseException as e:  # noqa: BLE001 -- handed to the caller
                box["error"] = e
            finally:
                done.set()

    # --- in the driver thread only ------------------------------------------------------------------
    def connect(self, address: str, num_cpus: int | None) -> Any:
        """Init Ray for `address` (once; a different address ends the old connection first)."""
        ray = _import_ray()
        if ray.is_initialized() and self.address == address:
            return ray
        if ray.is_initialized():
            ray.shutdown()
        # quiet: a sweep's own progress bar is the output; the workers' logs stay in the cluster's files
        options: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING}
        try:
            if address == "local":
                cpus = num_cpus or os.cpu_count()
                ray.init(
                    address="local", num_cpus=cpus, _node_ip_address="127.0.0.1", include_dashboard=False, **options
                )
            else:
                runtime_env = {"py_modules": [str(_PACKAGE)], "excludes": ["__pycache__", "data/demo_runs"]}
                ray.init(address=address, runtime_env=runtime_env, **options)
        except (ConnectionError, ValueError, RuntimeError) as e:
            line = error_line(e, named=False)[:200]
            raise SweepError("sweep.err.ray_connect", "address", address=address, reason=line) from None
        self.address = address
        self._task = ray.remote(num_cpus=1, max_retries=0)(_train_cell)
        return ray


class RayExecutor:
    """Cells as Ray tasks on the cluster at `address` ($RAY_ADDRESS, else a private local one)."""

    name = "ray"

    def __init__(self, address: str | None = None, workers: int | None = None) -> None:
        self.address = address or os.environ.get("RAY_ADDRESS") or "local"
        self.workers = max(1, workers or os.cpu_count() or 1)  # the cluster's CPUs, once connected
        self._running: dict[int, int] = {}

    def running_pids(self) -> dict[int, int]:
        """The Ray worker process of each cell that has sent a step (tests kill one to crash it)."""
        return dict(self._running)

    def run(self, cells: Sequence[Cell], on_step: OnStep, on_end: OnEnd, stop: threading.Event) -> None:
        """Train every cell; see ln_viz.sweep.executors for the contract."""
        driver = _Driver.get()
        driver.call(lambda: self._run(driver, cells, on_step, on_end, stop))

    def _run(self, driver: _Driver, cells: Sequence[Cell], on_step: OnStep, on_end: OnEnd, stop: threading.Event):
        ray = driver.connect(self.address, self.workers if self.address == "local" else None)
        self.workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
        todo = deque(range(len(cells)))
        gens: dict[Any, int] = {}
        last: dict[int, str] = {}
        try:
            while (todo or gens) and not stop.is_set():
                while todo and len(gens) < self.workers + 1:  # one queued per cluster, so a core never waits
                    i = todo.popleft()
                    gens[driver._task.options(name=f"ln-viz-cell-{i}").remote(cells[i].config)] = i
                ready, _ = ray.wait(list(gens), num_returns=len(gens), timeout=_POLL_S)
                for gen in ready:
                    self._read(ray, gen, gens, last, on_step, on_end)
        finally:
            for gen, i in gens.items():  # stopped: force ends the worker at once, mid-step
                ray.cancel(gen, force=True)
                self._running.pop(i, None)
                on_end(i, "stopped", None)

    def _read(self, ray: Any, gen: Any, gens: dict[Any, int], last: dict[int, str], on_step: OnStep, on_end: OnEnd):
        """One item of a cell's stream: a step, its end, or its failure."""
        i = gens[gen]
        try:
            ref = next(gen)
            pid, msg = ray.get(ref)
        except StopIteration:
            del gens[gen]
            self._running.pop(i, None)
            on_end(i, last.get(i, "failed"), None if i in last else "the task ended without a step")
            return
        except ray.exceptions.RayError as e:  # the task raised, or its worker died
            del gens[gen]
            self._running.pop(i, None)
            on_end(i, "failed", error_line(e, last=True)[:300])
            return
        self._running[i] = pid
        snap = msg.snapshot
        last[i] = snap.status
        on_step(i, snap.step, snap.loss, snap.eval_loss, snap.status)


def disconnect() -> None:
    """End this process's Ray connection (and a private cluster it started); from any thread."""
    if _Driver._instance is None:
        return

    def end() -> None:
        import ray

        if ray.is_initialized():
            ray.shutdown()
        _Driver._instance.address = None  # type: ignore[union-attr]

    _Driver._instance.call(end)
