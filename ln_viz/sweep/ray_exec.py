"""The `ray` executor: each cell a Ray Core task (a streaming generator yielding every step's
Snap (the Runner's message for a step), `num_cpus=1`, one torch thread) on a cluster the user names.

Where: `address` (the CLI's `--address`), else $RAY_ADDRESS, else `"local"`: a private cluster of this
process, every port of it on 127.0.0.1, ended with it. Never a bare `ray.init()`, which silently joins
whatever cluster is running on the machine. Usage stats stay off (RAY_USAGE_STATS_ENABLED=0). A
`host:port` is checked first (ray_address.py: refused at once when nothing there speaks gRPC), then asked
whether it takes us (a token it refuses is said as such), and only then given to `ray.init`; a
connection that still hangs is left behind on Stop (or after CONNECT_TIMEOUT_S), so it never holds the
caller.

Where the driver runs: in a Ray host process (ln_viz/runner/ray_host.py), one per address in a process,
shared with Live's runs on the server. Ray's driver ends the process it is in when the cluster's GCS is
gone (60 s after a head dies, or at once when a head restarted on the same port answers), so it is a
child: a dead head fails the cells it trained and ends the sweep with one sentence, and the server or
the CLI lives on. In the host, `ray.init` happens in one daemon thread, `_Driver`, which inits once
per address: Ray ties the head processes it starts to the thread that called `ray.init`, and an init
from a Streamlit script thread (which ends after every rerun) killed the server (ray issue 45570).

Code on the nodes: on a cluster it did not start, the ln_viz package goes with the job
(`runtime_env={"py_modules": [ln_viz]}`); the nodes need torch==2.13.0, numpy, pandas and
ray==2.60.0 installed (README, "The stability map"). A private cluster shares this machine's files.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ln_viz.config import RunConfig
from ln_viz.runner.messages import Snap
from ln_viz.sweep.executors import OnEnd, OnStep
from ln_viz.sweep.ray_address import parse_address, probe
from ln_viz.sweep.spec import Cell, SweepError
from ln_viz.text import error_line

RAY_VERSION = "2.60.0"  # requirements-ray.txt
CONNECT_TIMEOUT_S = 60.0  # a cluster that passed the probe and the GCS check connects in seconds
_GCS_CHECK_MS = 2000
_POLL_S = 0.1
# Ray 2.60 rewrites a node address of 127.0.0.1 to the machine's network address and then listens on
# every interface (issue 21, S2), unless this switch (its macOS/Windows mode) says a node is local only:
# then every port of the private cluster is on 127.0.0.1 (measured with `ss -ltnp`: tests/test_sweep_ray.py)
_LOCAL_ONLY_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
_PACKAGE = Path(__file__).resolve().parents[1]  # ln_viz/


def _import_ray() -> Any:
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    # Ray's driver arms abseil's failure handler on SIGTERM: 3 s after an operator's SIGTERM it aborts the
    # server (exit -6) in the middle of its shutdown (stopping runs, flushing the store), ray PR 64830
    os.environ.setdefault("RAY_DISABLE_FAILURE_SIGNAL_HANDLER", "1")
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

    def call(self, fn: Callable[[], Any], stop: threading.Event | None = None, timeout: float | None = None) -> Any:
        """Run `fn` in the driver thread, wait for it, return its value or raise its exception. With
        `stop`: return None once it is set, leaving `fn` behind (a `ray.init` cannot be interrupted);
        with `timeout`: raise TimeoutError after that many seconds, leaving it behind the same way."""
        box: dict[str, Any] = {}
        done = threading.Event()
        self._jobs.put((fn, box, done))
        deadline = None if timeout is None else time.monotonic() + timeout
        while not done.wait(_POLL_S if stop is not None or deadline is not None else None):
            if stop is not None and stop.is_set():
                return None
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(timeout)
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
        if address not in ("local", "auto"):  # before ending an old connection: a bad address changes nothing
            probe(address)
            _check_gcs(ray, address)
        if ray.is_initialized():
            ray.shutdown()
        _local_only(ray, address == "local")
        # quiet: a sweep's own progress bar is the output; the workers' logs stay in the cluster's files.
        # ERROR, not WARNING: Ray's notes on init (no SIGTERM handler outside the main thread, token auth
        # enabled) would otherwise come before a one-line error (issue 21, M11)
        options: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.ERROR}
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


def _local_only(ray: Any, on: bool) -> None:
    """Bind a private cluster to 127.0.0.1 (`on`), or let a node of a real cluster use its address."""
    from ray._private import ray_constants

    ray_constants.ENABLE_RAY_CLUSTER = not on  # read when Ray picks the node address (ray is imported)
    if on:
        os.environ[_LOCAL_ONLY_ENV] = "0"  # for the processes the private cluster starts
    else:
        os.environ.pop(_LOCAL_ONLY_ENV, None)


@contextlib.contextmanager
def _stderr_muted():
    """File descriptor 2 on /dev/null for a moment (a C++ library writes there directly, past Python)."""
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _check_gcs(ray: Any, address: str) -> None:
    """Ask the cluster's GCS once, briefly, whether it takes us: `ray.init` would retry a refused token
    for 20 s and then say only 'Failed to connect' (issue 21, M1). Ray 2.60's own client (pinned)."""
    from ray._raylet import InnerGcsClient

    try:
        with _stderr_muted():  # its C++ client logs the refusal itself ("gcs_client.cc:210: Failed to get
            # cluster ID ...") before our one sentence, which says it (issue 21, M11)
            InnerGcsClient.standalone(address, None, _GCS_CHECK_MS)
    except ray.exceptions.AuthenticationError as e:  # its own advice after "Note:" is ours, in the catalog
        reason = error_line(e, named=False).split(" Note:")[0][:200]
        raise SweepError("sweep.err.ray_auth", "address", address=address, reason=reason) from None
    except Exception as e:  # noqa: BLE001 -- a gRPC server that is not a Ray GCS (or not answering as one)
        reason = error_line(e, named=False)[:200]
        raise SweepError("sweep.err.ray_not_ray", "address", address=address, reason=reason) from None


class RayExecutor:
    """Cells as Ray tasks on the cluster at `address` ($RAY_ADDRESS, else a private local one), sent
    through this process's Ray host (ln_viz/runner/ray_host.py: Ray's driver ends the process it is in
    when the cluster goes, so it lives in a child): a head that dies fails the cells it was training and
    ends the sweep with one sentence (sweep.err.ray_lost), and the process lives on."""

    name = "ray"

    def __init__(self, address: str | None = None, workers: int | None = None) -> None:
        env = os.environ.get("RAY_ADDRESS", "").strip()
        raw, where = (address, "--address") if address else (env, "$RAY_ADDRESS") if env else ("local", "")
        self.address = parse_address(raw, where)  # a bad one refused now, before any training
        self.workers = max(1, workers or os.cpu_count() or 1)  # the cluster's CPUs, once connected
        self._running: dict[int, int] = {}

    def running_pids(self) -> dict[int, int]:
        """The Ray worker process of each cell that has sent a step (tests kill one to crash it)."""
        return dict(self._running)

    def run(self, cells: Sequence[Cell], on_step: OnStep, on_end: OnEnd, stop: threading.Event) -> None:
        """Train every cell; see ln_viz.sweep.executors for the contract."""
        from ln_viz.runner.ray_host import RayHost

        if self.address not in ("local", "auto"):  # before a host process: nothing there, said at once
            probe(self.address)
        cpus = self.workers if self.address == "local" else None
        host = RayHost.shared(self.address, functools.partial(connect_here, num_cpus=cpus))
        deadline = time.monotonic() + CONNECT_TIMEOUT_S
        while not host.ready.wait(_POLL_S):  # Stop frees the caller even while a connection hangs (issue 21, X3)
            if stop.is_set():
                return
            if time.monotonic() > deadline:
                host.shutdown(timeout=1.0)
                raise SweepError(
                    "sweep.err.ray_stuck",
                    "address",
                    address=self.address,
                    seconds=int(CONNECT_TIMEOUT_S),
                    version=RAY_VERSION,
                )
        if host.error is not None:
            e = host.error
            if e.key:  # the host's SweepError, remade here with its key and values
                raise SweepError(e.key, "address", **{k: v for k, v in e.params.items() if k != "field"})
            raise SweepError("sweep.err.ray_connect", "address", address=self.address, reason=e.line[:200])
        if host.total_cpus:
            self.workers = host.total_cpus
        if not stop.is_set():
            self._follow(host, list(cells), on_step, on_end, stop)

    def _follow(self, host: Any, cells: list[Cell], on_step: OnStep, on_end: OnEnd, stop: threading.Event) -> None:
        """Hand the cells to the host and pass its events on until the sweep is done."""
        sid, events = host.sweep(run_cells, cells)
        started: set[int] = set()
        stop_sent = False
        while True:
            if stop.is_set() and not stop_sent:
                host.stop_sweep(sid)
                stop_sent = True
            try:
                event = events.get(timeout=_POLL_S)
            except queue.Empty:
                continue
            match event:
                case ("step", i, pid, step, loss, eval_loss, status):
                    started.add(i)
                    self._running[i] = pid
                    on_step(i, step, loss, eval_loss, status)
                case ("end", i, status, error):
                    started.discard(i)
                    self._running.pop(i, None)
                    on_end(i, status, error)
                case ("error", line):
                    raise SweepError("sweep.err.ray_connect", "address", address=self.address, reason=line[:200])
                case ("done",):
                    return
                case ("gone",):  # the host ended: the cluster stopped answering
                    for i in sorted(started):
                        self._running.pop(i, None)
                        on_end(i, "failed", "the Ray cluster stopped answering")
                    if stop.is_set():
                        return
                    raise SweepError("sweep.err.ray_lost", "address", address=self.address)


def run_cells(ray: Any, cells: Sequence[Cell], emit: Callable[..., None], stop: threading.Event) -> None:
    """In the Ray host process: every cell a task, at most the cluster's CPUs (+1 queued) at once;
    emit("step", i, pid, step, loss, eval_loss, status) per step and emit("end", i, status, error) per cell
    that started (see ln_viz.runner.ray_host.RunCells)."""
    task = ray.remote(num_cpus=1, max_retries=0)(_train_cell)
    workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
    todo = deque(range(len(cells)))
    gens: dict[Any, int] = {}
    last: dict[int, str] = {}
    try:
        while (todo or gens) and not stop.is_set():
            while todo and len(gens) < workers + 1:  # one queued per cluster, so a core never waits
                i = todo.popleft()
                gens[task.options(name=f"ln-viz-cell-{i}").remote(cells[i].config)] = i
            ready, _ = ray.wait(list(gens), num_returns=len(gens), timeout=_POLL_S)
            for gen in ready:
                _read(ray, gen, gens, last, emit)
    finally:
        for gen, i in gens.items():  # stopped: force ends the worker at once, mid-step
            ray.cancel(gen, force=True)
            emit("end", i, "stopped", None)


def _read(ray: Any, gen: Any, gens: dict[Any, int], last: dict[int, str], emit: Callable[..., None]) -> None:
    """One item of a cell's stream: a step, its end, or its failure."""
    i = gens[gen]
    try:
        ref = next(gen)
        pid, msg = ray.get(ref)
    except StopIteration:
        del gens[gen]
        emit("end", i, last.get(i, "failed"), None if i in last else "the task ended without a step")
        return
    except ray.exceptions.RayError as e:  # the task raised, or its worker died
        del gens[gen]
        emit("end", i, "failed", error_line(e, last=True)[:300])
        return
    snap = msg.snapshot
    last[i] = snap.status
    emit("step", i, pid, snap.step, snap.loss, snap.eval_loss, snap.status)


def connect_here(address: str, num_cpus: int | None = None) -> Any:
    """Join the cluster at `address` (a private one of `num_cpus` for "local") from this process's
    driver thread; the `ray` module, connected (a Ray host process's `Connect`: ln_viz/runner/ray_host.py)."""
    driver = _Driver.get()
    return driver.call(lambda: driver.connect(address, num_cpus))


def disconnect(timeout: float = 10.0) -> None:
    """End this process's Ray hosts and connection (and a private cluster one started, with its helper
    processes); from any thread. Gives up after `timeout` s when the driver thread is stuck in a connection."""
    from ln_viz.runner.ray_host import RayHost

    RayHost.end_all(timeout)
    if _Driver._instance is None:
        return

    def end() -> None:
        import ray

        if ray.is_initialized():
            ray.shutdown()
        _Driver._instance.address = None  # type: ignore[union-attr]

    try:
        _Driver._instance.call(end, timeout=timeout)
    except TimeoutError:
        pass  # stuck in a ray.init that never returns: there is no connection to end
