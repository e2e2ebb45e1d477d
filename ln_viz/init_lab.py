"""The Init lab page's scenarios: gradients and residual growth at initialisation (ln_viz/init_grads.py)
for several norm positions and depths, in parallel worker processes when given an executor, and the
default scenario's measurement shipped with the app. Imports no torch itself, so the server stays
light; the workers load it."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ln_viz.config import RunConfig

log = logging.getLogger(__name__)

# The Init lab page's default scenario (its widgets start from these values).
DEFAULT_SCENARIO: dict[str, Any] = {
    "positions": ("post", "pre"),
    "depth": 12,
    "seeds": 3,
    "param": "ffn.w2",
    "d_model": 64,
    "heads": 4,
    "batch_size": 32,
    "seq_len": 64,
    "depths": (2, 4, 8, 16),
}
# Its measurement, made by scripts/make_init_lab_default.py with this code and torch 2.13 and shipped,
# so the page draws at once on a cold server (measuring takes ~6.5 s of CPU, on top of ~5 s of torch
# imports, on 2 cores); tests/test_init_lab.py measures it again and compares.
BUNDLED_DEFAULT = Path(__file__).with_name("data") / "init_lab_default.json"
BUNDLE_FORMAT = 1


@dataclass
class InitLab:
    """Everything the Init lab page draws, measured at initialisation (no training)."""

    grads: dict[str, pd.DataFrame]  # norm_position -> seed, layer, param, grad_norm
    resid: dict[str, pd.DataFrame]  # norm_position -> seed, layer, mean_sq, std
    vs_depth: pd.DataFrame  # norm_position, depth, seed, grad_norm (the last layer's `param`)

    def pre_ln_profile_ratio(self, param: str = "ffn.w2") -> float | None:
        """Pre-LN's last-layer over first-layer mean gradient of `param`: 1 would be the paper's flat
        profile; small models measure well below it."""
        g = self.grads.get("pre")
        if g is None or g.empty:
            return None
        w = g[g.param == param].groupby("layer").grad_norm.mean()
        return float(w.iloc[-1] / w.iloc[0])


def default_config() -> RunConfig:
    """The RunConfig of DEFAULT_SCENARIO, built as the page builds its own (all else default)."""
    d = DEFAULT_SCENARIO
    return RunConfig(
        depth=d["depth"], d_model=d["d_model"], heads=d["heads"], batch_size=d["batch_size"], seq_len=d["seq_len"]
    )


def is_default(cfg: RunConfig, positions: Iterable[str], seeds: int, depths: Iterable[int], param: str) -> bool:
    """Whether a scenario is DEFAULT_SCENARIO (whose measurement ships with the app)."""
    d = DEFAULT_SCENARIO
    return (
        cfg == default_config()
        and tuple(positions) == d["positions"]
        and seeds == d["seeds"]
        and tuple(depths) == d["depths"]
        and param == d["param"]
    )


def measure_default(executor: Executor | None = None) -> InitLab:
    """Measure DEFAULT_SCENARIO now."""
    d = DEFAULT_SCENARIO
    return init_lab(default_config(), d["positions"], d["seeds"], d["depths"], d["param"], executor)


def lab_to_dict(lab: InitLab) -> dict[str, Any]:
    """JSON-ready columns; floats survive the round trip exactly (json writes their repr)."""
    return {
        "grads": {pos: df.to_dict(orient="list") for pos, df in lab.grads.items()},
        "resid": {pos: df.to_dict(orient="list") for pos, df in lab.resid.items()},
        "vs_depth": lab.vs_depth.to_dict(orient="list"),
    }


def lab_from_dict(d: dict[str, Any]) -> InitLab:
    """The InitLab of `lab_to_dict`'s columns."""
    return InitLab(
        grads={pos: pd.DataFrame(cols) for pos, cols in d["grads"].items()},
        resid={pos: pd.DataFrame(cols) for pos, cols in d["resid"].items()},
        vs_depth=pd.DataFrame(d["vs_depth"]),
    )


def write_bundled_default(path: Path = BUNDLED_DEFAULT, executor: Executor | None = None) -> InitLab:
    """Measure DEFAULT_SCENARIO and write it where `bundled_default` reads it."""
    import torch

    lab = measure_default(executor)
    doc = {
        "format": BUNDLE_FORMAT,
        "scenario": {k: list(v) if isinstance(v, tuple) else v for k, v in DEFAULT_SCENARIO.items()},
        "config": default_config().to_dict(),
        "torch": torch.__version__,
        "made_by": "scripts/make_init_lab_default.py",
        "lab": lab_to_dict(lab),
    }
    path.write_text(json.dumps(doc, indent=None, separators=(",", ":")) + "\n")
    return lab


def bundled_default(path: Path = BUNDLED_DEFAULT) -> InitLab | None:
    """The shipped measurement of DEFAULT_SCENARIO; None (logged) when the file is missing, unreadable
    or made for another scenario or configuration: the caller then measures."""
    try:
        doc = json.loads(path.read_text())
        scenario = {k: tuple(v) if isinstance(v, list) else v for k, v in doc["scenario"].items()}
        same = scenario == DEFAULT_SCENARIO and doc["config"] == default_config().to_dict()
        if doc["format"] != BUNDLE_FORMAT or not same:
            log.warning("ln-viz: %s is for another scenario; measuring instead", path)
            return None
        return lab_from_dict(doc["lab"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        log.warning("ln-viz: cannot read %s (%s); measuring instead", path, e)
        return None


def init_lab(
    cfg: RunConfig,
    positions: Iterable[str],
    seeds: int,
    depths: Iterable[int],
    param: str = "ffn.w2",
    executor: Executor | None = None,
) -> InitLab:
    """Per-layer gradients and residual growth at cfg.depth for each position, and the last layer's
    gradient against depth for each position; the same numbers as `python -m ln_viz init-grads`.
    With an executor (the app passes a pool of worker processes), the measurements run in parallel
    there, one task per norm position and depth, and torch never loads in the caller."""
    positions, depths = list(positions), list(depths)
    profile_jobs = [(cfg.replace(norm_position=pos), seeds) for pos in positions]
    depth_jobs = [(cfg.replace(norm_position=pos, depth=int(depth)), seeds) for pos in positions for depth in depths]
    run = executor.map if executor is not None else map
    results = list(run(_measure, profile_jobs + depth_jobs))
    grads = {pos: g for pos, (g, _) in zip(positions, results)}
    resid = {pos: r for pos, (_, r) in zip(positions, results)}
    rows = []
    for (job_cfg, _), (g, _) in zip(depth_jobs, results[len(positions) :]):
        last = g[(g.layer == job_cfg.depth) & (g.param == param)]
        rows += [(job_cfg.norm_position, job_cfg.depth, int(r.seed), float(r.grad_norm)) for r in last.itertuples()]
    vs_depth = pd.DataFrame(rows, columns=["norm_position", "depth", "seed", "grad_norm"])
    return InitLab(grads, resid, vs_depth)


def _measure(job: tuple[RunConfig, int]) -> tuple[pd.DataFrame, pd.DataFrame]:
    from ln_viz.init_grads import init_grads

    cfg, seeds = job
    return init_grads(cfg, range(seeds))


def _worker_init(parent_pid: int) -> None:
    """One torch thread (two such workers share two cores), and leave when the server is gone: a pool
    worker waits on its task queue forever otherwise, so a killed server would leave it behind."""
    import multiprocessing
    import multiprocessing.connection
    import os
    import threading

    from ln_viz.runner import lower_priority

    lower_priority(below=parent_pid)  # before importing torch: a page's answer comes before a measurement
    import torch

    torch.set_num_threads(1)
    # The server: the process that started this one (a fork of the fork server has the fork server as its
    # parent process, which lives on while any of its forks does). Its sentinel is readable once it is gone.
    server = multiprocessing.parent_process()

    def watch_server(sentinel: int) -> None:
        multiprocessing.connection.wait([sentinel])
        os._exit(0)

    if server is not None:
        threading.Thread(target=watch_server, args=(server.sentinel,), name="ln-viz-parent-watch", daemon=True).start()


def make_executor(workers: int = 2) -> Executor:
    """A pool of worker processes for init_lab (one torch thread each), forked from the runner's fork server
    (torch imported once, `ln_viz.runner.process.fork_context`). Its processes carry the runner's worker name,
    so that starting them from a Streamlit script does not re-run the app's `__main__` (the page) inside each
    of them."""
    import os
    from concurrent.futures import ProcessPoolExecutor

    from ln_viz.runner.process import fork_context

    return ProcessPoolExecutor(workers, mp_context=fork_context(), initializer=_worker_init, initargs=(os.getpid(),))


def warm_up() -> bool:
    """A pool task paying a worker's one-time costs (torch, pandas, the corpus, a first backward)."""
    from ln_viz.init_grads import init_grads

    init_grads(RunConfig(depth=1, d_model=16, heads=2, seq_len=16, batch_size=2), [0])
    return True


def warm_pool(pool: Executor, workers: int = 2) -> None:
    """Start a pool's `workers` processes and pay their one-time costs (`warm_up`), so a first non-default
    scenario takes ~3 s instead of ~5."""
    for future in [pool.submit(warm_up) for _ in range(workers)]:
        future.result(timeout=120)
