"""The stability map's server side, without Streamlit: the one sweep a server trains at a time, the
classroom caps a visitor's sweep gets, the Ray cluster the operator set, and the cells already stored.

One sweep per server: a grid of 32 runs takes both cores of a 2-core machine for minutes, and two at
once would each take twice as long. Every tab sees the sweep that is training, but only the tab that
started it can stop it; the store keeps every finished cell, so any tab reopens any map without
retraining. A visitor's sweep gets the classroom caps (`sweep_caps`): steps and seconds per run as
Live's, runs per sweep, and an estimate above the bound is refused in one sentence. ln_viz.ui.stability_view
holds the one SweepService for the server and draws the map.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ln_viz.i18n import LocalizedError
from ln_viz.server.runs import MAX_SECONDS_ENV
from ln_viz.sweep.presets import DEFAULT_MAP
from ln_viz.sweep.results import CellResult
from ln_viz.sweep.spec import SweepConfig, SweepError, WorkEstimate, duration_text
from ln_viz.text import error_line

log = logging.getLogger(__name__)

SWEEP_NICE = 15  # below the Runner's workers (nice 10, ln_viz.runner): a user's Start gets the cores first


@dataclass(frozen=True)
class SweepCaps:
    """What one visitor's sweep may ask of the server (the Stability map page; the CLI has none)."""

    RUNS_ENV = "LN_VIZ_MAX_SWEEP_RUNS"
    MINUTES_ENV = "LN_VIZ_MAX_SWEEP_MINUTES"
    max_steps: int  # per run: Live's cap
    max_seconds: float  # per run: Live's cap (LN_VIZ_MAX_SECONDS)
    max_runs: int  # per sweep (LN_VIZ_MAX_SWEEP_RUNS)
    max_minutes: float  # the sweep's estimated wall time (LN_VIZ_MAX_SWEEP_MINUTES)


def sweep_caps() -> SweepCaps:
    """The classroom caps of a page's sweep, from the environment, beside Live's (README, "Serving a
    classroom"): 10,000 steps and LN_VIZ_MAX_SECONDS (600) s per run, LN_VIZ_MAX_SWEEP_RUNS (128) runs,
    and an estimate of at most LN_VIZ_MAX_SWEEP_MINUTES (30) minutes."""
    from ln_viz.runner import DEFAULT_MAX_STEPS

    return SweepCaps(
        max_steps=DEFAULT_MAX_STEPS,
        max_seconds=float(os.environ.get(MAX_SECONDS_ENV, "600")),
        max_runs=int(os.environ.get(SweepCaps.RUNS_ENV, "128")),
        max_minutes=float(os.environ.get(SweepCaps.MINUTES_ENV, "30")),
    )


@dataclass
class SweepService:
    """The server's sweep slot: at most one SweepRun trains, in a thread of its own, and belongs to
    the session that started it (`owner`): only that one may stop it."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    sweep: Any = None  # SweepRun
    thread: threading.Thread | None = None
    error: Exception | None = None  # why the last sweep failed (an unreachable cluster, say)
    owner: str | None = None  # the session that started the sweep (ln_viz.ui.stability_view.session_key())

    def busy(self) -> bool:
        """Whether a sweep is training now."""
        return self.thread is not None and self.thread.is_alive()

    def start(
        self,
        spec: SweepConfig,
        executor: str,
        address: str | None,
        owner: str | None = None,
        caps: SweepCaps | None = None,
    ) -> bool:
        """Start a sweep of `spec` for session `owner`; False when one is already training. A sweep
        above `caps` (default: the server's) is refused with its SweepError; a store that cannot be
        opened with its StoreError."""
        from ln_viz.sweep.chooser import make_executor
        from ln_viz.sweep.driver import SweepRun
        from ln_viz.sweep.spec import estimate
        from ln_viz.sweep.storage import SweepStore

        caps = caps or sweep_caps()
        with self.lock:
            if self.busy():
                return False
            run_on = make_executor(executor, address=address, nice=SWEEP_NICE)
            refused = cap_error(spec, estimate(spec, run_on.workers), caps)
            if refused is not None:
                raise refused
            if hasattr(run_on, "max_seconds"):  # the local executor: each run within Live's time cap
                run_on.max_seconds = caps.max_seconds
            store = SweepStore()  # the app's run store ($LN_VIZ_STORE, else the default path)
            self.sweep = SweepRun(spec, run_on, store, on_problem=_log_problem)
            self.error, self.owner = None, owner
            self.thread = threading.Thread(target=self._run, args=(self.sweep, store), daemon=True, name="ln-viz-sweep")
            self.thread.start()
            return True

    def _run(self, sweep: Any, store: Any) -> None:
        try:
            sweep.run()
        except Exception as e:  # noqa: BLE001 -- shown on the page
            self.error = e
        finally:
            store.close()

    def owned_by(self, session: str | None) -> bool:
        """Whether `session` started the sweep (and so may stop it)."""
        return self.owner is not None and self.owner == session

    def stop(self, session: str | None = None) -> bool:
        """Stop the sweep for the session that started it; False (nothing stopped) for another."""
        if self.sweep is None or not self.owned_by(session):
            return False
        self.sweep.stop()
        return True

    def shutdown(self) -> None:
        if self.sweep is not None:
            self.sweep.stop()
        if self.thread is not None:
            self.thread.join(5)


def _log_problem(problem: LocalizedError | None) -> None:
    """The server log says a sweep's store trouble once when it starts and once when it clears."""
    if problem is not None:
        log.warning("ln-viz: sweep: %s", problem)
    else:
        log.warning("ln-viz: sweep: the store takes its cells again; none was lost")


def cap_error(spec: SweepConfig, work: WorkEstimate, caps: SweepCaps) -> SweepError | None:
    """Why a visitor may not start this sweep on this server (one sentence with the cap and how the
    operator raises it), or None."""
    if spec.steps > caps.max_steps:
        return SweepError("sweep.err.cap_steps", "steps", steps=spec.steps, cap=caps.max_steps)
    if spec.n_runs > caps.max_runs:
        return SweepError("sweep.err.cap_runs", "n_runs", n=spec.n_runs, cap=caps.max_runs, env=caps.RUNS_ENV)
    if work.seconds > caps.max_minutes * 60:
        return SweepError(
            "sweep.err.cap_time", "steps", time=duration_text(work.seconds), cores=work.workers,
            cap=f"{caps.max_minutes:g}", env=caps.MINUTES_ENV,
        )  # fmt: skip
    return None


def read_shipped_default(path: Path = DEFAULT_MAP) -> dict[str, Any] | None:
    """A map measured in advance (scripts/make_stability_map_default.py; by default the warm-up map), or None."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    data["results"] = [CellResult.from_dict(r) for r in data["results"]]
    return data


def stored_results(spec: SweepConfig) -> tuple[list[CellResult], LocalizedError | None]:
    """The cells of `spec` the app's store has (none when there is no store yet), and why the store
    could not be read (damaged sweep tables: one sentence for the page, the map still drawn)."""
    from ln_viz.store import resolve_store_path
    from ln_viz.sweep.storage import SweepStore

    if not resolve_store_path().exists():
        return [], None
    try:
        with SweepStore() as store:
            return store.results(spec), None
    except LocalizedError as e:
        return [], e


def ray_available() -> bool:
    """Whether Ray is installed (the page offers the ray executor only then)."""
    return importlib.util.find_spec("ray") is not None


def ray_cluster() -> tuple[str | None, Exception | None]:
    """The Ray cluster the operator set for this server ($LN_VIZ_RAY_ADDRESS; `local`: a private one),
    or None: the page offers this machine's cores only. A visitor never chooses where the server
    connects (issue 21, S1). The second item says why a set address cannot be used."""
    from ln_viz.sweep.ray_address import configured_address

    address, problem = configured_address()
    if address is not None and not ray_available():
        from ln_viz.sweep.ray_exec import RAY_VERSION

        return None, SweepError("sweep.err.ray_missing", "executor", version=RAY_VERSION)
    return address, problem


def error_text(e: Exception, lang: str) -> str:
    """A sweep's failure in the user's language when it is one of ours, else its first line."""
    return e.message(lang) if isinstance(e, LocalizedError) else error_line(e, named=False)
