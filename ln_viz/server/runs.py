"""The server's one Runner (built from the environment), its Ray backend, and the runs a browser tab started.
ln_viz.ui.training keeps the Runner and each tab's SessionRuns for the server (`st.cache_resource`)."""

from __future__ import annotations

import os
import threading
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ln_viz.config import RunConfig
    from ln_viz.runner import Runner

MAX_CONCURRENT_ENV = "LN_VIZ_MAX_CONCURRENT"
MAX_SECONDS_ENV = "LN_VIZ_MAX_SECONDS"
WARM_WORKERS_ENV = "LN_VIZ_WARM_WORKERS"
EXECUTOR_ENV = "LN_VIZ_EXECUTOR"  # "ray": every Start trains as an actor on the Ray cluster


def make_runner(**hooks: Any) -> Runner:
    """The server's one Runner: at most LN_VIZ_MAX_CONCURRENT runs train at once (default: the number
    of cores), each capped at LN_VIZ_MAX_SECONDS seconds (default 600); LN_VIZ_WARM_WORKERS workers are
    kept warm (default 2, or 1 with a cap of 1: Compare's Start both then starts both runs at once; with
    one, the second run's first point came 1.4-1.7 s after the first's, 0.0-0.1 s with two: issue 21
    N18; the fast tests use 0, as a page that never trains needs none). `hooks`: the store recorder's
    (ln_viz.recorder.Recorder.hooks)."""
    from ln_viz.runner import Runner

    cap = int(os.environ.get(MAX_CONCURRENT_ENV, "0")) or None
    max_seconds = float(os.environ.get(MAX_SECONDS_ENV, "600"))
    raw = os.environ.get(WARM_WORKERS_ENV, "").strip()
    warm = int(raw) if raw else min(2, cap or os.cpu_count() or 1)
    backend = ray_backend() if os.environ.get(EXECUTOR_ENV, "").strip() == "ray" else None
    if backend is not None:  # the cluster's CPUs, still capped by LN_VIZ_MAX_CONCURRENT; no warm pool
        cap, warm = min(cap or 10**6, max(1, backend.cpus()[1] or os.cpu_count() or 1)), 0
    return Runner(max_concurrent=cap, warm_workers=warm, max_seconds=max_seconds, new_worker=backend, **hooks)


def ray_backend():
    """The Ray cluster of $LN_VIZ_RAY_ADDRESS (else $RAY_ADDRESS, else a private one of this server),
    connected as the Stability map's sweeps connect (the address checked first, the ln_viz package sent
    with the job to a cluster the server did not start), from a host process of its own (ray_host.py).
    An address that cannot be used fails each Start with its one sentence, never the page."""
    from ln_viz.runner.ray_worker import RayBackend, UnusableBackend
    from ln_viz.sweep.ray_address import configured_address, parse_address, probe
    from ln_viz.sweep.ray_exec import CONNECT_TIMEOUT_S, connect_here
    from ln_viz.sweep.spec import SweepError

    try:
        address, error = configured_address()
        if error is not None:
            raise error
        address = address or parse_address(os.environ.get("RAY_ADDRESS", "").strip() or "local", "$RAY_ADDRESS")
    except SweepError as e:
        return UnusableBackend(e)
    return RayBackend(address, connect_here, probe, connect_timeout=CONNECT_TIMEOUT_S)


def where_line(runner: Runner, lang: str) -> str:
    """Where this server's runs train: "on the cluster, 3 of 64 CPUs busy", or on this machine."""
    from ln_viz.i18n import t

    backend = getattr(runner, "new_worker", None)
    cpus = getattr(backend, "cpus", None)  # a RayBackend has its CPUs
    if cpus is None:
        return t("ui.where_local", lang, cap=runner.max_concurrent)
    if (problem := getattr(backend, "problem", None)) is not None:  # the cluster is gone: its sentence
        return t(problem.key, lang, **problem.params) if problem.key else problem.line
    busy, total = cpus()
    return t("ui.where_cluster", lang, busy=busy, total=total)


@dataclass
class SessionRuns:
    """The runs this browser tab started, by role ("live", "compare.a", ...). Released (its runs
    stopped) when the tab closes. `owner` names the tab to the runner's queue, so that its runs take
    turns with other tabs' (ln_viz.runner.queue) however many it queues."""

    runner: Runner
    runs: dict[str, str] = field(default_factory=dict)  # role -> run_id
    asked: dict[str, RunConfig] = field(default_factory=dict)  # role -> the form's settings at its Start
    owner: str = field(default_factory=lambda: uuid.uuid4().hex[:12])

    def start(self, role: str, cfg: RunConfig, group: str | None = None) -> str:
        """Start a run in `role` (in seed group `group`, which the store keeps), stopping (and later
        forgetting) the run it replaces."""
        old = self.runs.get(role)
        self.runs[role] = run_id = self.runner.start(cfg, owner=self.owner, group=group).run_id
        self.asked[role] = cfg
        if old:
            self._retire(old)
        return run_id

    def shown(self, role: str, cfg: RunConfig | None) -> str | None:
        """The run in `role` if it was started from these settings, else None: a page shows the run of the
        settings its header names, never the last run under another scenario's name."""
        run_id = self.runs.get(role)
        return run_id if run_id is not None and cfg is not None and self.asked.get(role) == cfg else None

    def running(self, roles: tuple[str, ...]) -> bool:
        """Whether a run in one of these roles has not ended (what Stop would stop)."""
        handles = [self.runner.get(self.runs[r]) for r in roles if self.runs.get(r)]
        return any(h is not None and not h.done for h in handles)

    def stop(self, role: str) -> None:
        if self.runs.get(role):
            self.runner.stop(self.runs[role])

    def stop_all(self) -> None:
        for run_id in self.runs.values():
            self._retire(run_id)

    def _retire(self, run_id: str) -> None:
        """Stop a run and drop its data from the server's memory once it has ended (the store keeps
        it), so a long class does not pile up every run ever started."""
        self.runner.stop(run_id)
        handle = self.runner.get(run_id)
        if handle is not None:
            threading.Thread(target=_forget_when_done, args=(self.runner, handle), daemon=True).start()


def _forget_when_done(runner: Runner, handle) -> None:
    if handle.wait(30):
        runner.forget(handle.run_id)
