"""A Live run while another session's Stability-map sweep trains (issue 21, X4): how long a Start takes
to its first point, and how fast the run trains, alone and beside the largest sweep a visitor may start.

    .venv/bin/python -m benchmarks.live_during_sweep            # 3 runs alone, then 3 beside the sweep
    .venv/bin/python -m benchmarks.live_during_sweep --quick    # a short check that it works
    .venv/bin/python -m benchmarks.live_during_sweep --json     # one JSON object

The server's own parts, as the app uses them: one Runner at its defaults (as many runs at once as cores,
one warm worker, one thread a run) trains Live's default preset (Pre-LN, 6 layers, 300 steps); the sweep is
the page's SweepService on the local executor (its workers at nice 15, below the Runner's 10), with the
classroom caps (ln_viz.server.sweeps.sweep_caps): the default grid (16 runs) with as many seeds as the
caps allow (on 2 cores, 3 seeds: 48 runs, an estimate of 23 min; 4 would be over the 30 minutes), the
largest sweep a visitor may start. Figures for the README's "Serving a classroom"."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path


def live_run(runner, cfg, timeout: float = 300.0) -> dict:
    """Start one run and wait for its end: seconds from Start to the first point, and steps per second
    from the first point to the last."""
    t0 = time.perf_counter()
    handle = runner.start(cfg)
    first = None
    while not handle.done and time.perf_counter() - t0 < timeout:
        if first is None and handle.view().steps_done >= 1:
            first = time.perf_counter() - t0
        time.sleep(0.005)
    end = time.perf_counter() - t0
    view = handle.view()
    if not handle.done:
        handle.stop()
        handle.wait(10)
    first = end if first is None else first
    return {
        "first_point_s": first,
        "steps_per_s": (view.steps_done - 1) / max(end - first, 1e-9),
        "status": view.status,
    }


def summary(runs: list[dict]) -> dict:
    out = {"runs": len(runs), "statuses": sorted({r["status"] for r in runs})}
    for key in ("first_point_s", "steps_per_s"):
        values = [r[key] for r in runs]
        out[key] = {"median": statistics.median(values), "min": min(values), "max": max(values)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a 2-layer, 40-step run, once each way")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    os.environ["LN_VIZ_STORE"] = str(Path(tempfile.mkdtemp()) / "runs.sqlite")  # the sweep's cells go here

    from ln_viz.config import preset
    from ln_viz.runner import Runner
    from ln_viz.server.sweeps import SweepService, cap_error, sweep_caps
    from ln_viz.sweep.spec import SweepConfig, estimate

    cfg = preset("pre-ln-no-warmup")
    repeats = 1 if args.quick else args.repeats
    if args.quick:
        cfg = cfg.replace(depth=2, d_model=32, heads=2, steps=40)
    caps = sweep_caps()
    # the default grid with as many seeds as the caps allow (runs, and the estimate's minutes)
    seeds = max(
        s
        for s in range(1, caps.max_runs + 1)
        if cap_error(SweepConfig(seeds=s), estimate(SweepConfig(seeds=s)), caps) is None
    )
    spec = SweepConfig(seeds=seeds)
    work = estimate(spec)
    out: dict = {"cores": os.cpu_count(), "live": f"{cfg.norm_position}-LN, {cfg.depth} layers, {cfg.steps} steps"}
    out["sweep"] = {"runs": spec.n_runs, "steps": spec.steps, "estimate_min": round(work.seconds / 60, 1)}
    with Runner() as runner:
        runner.wait_warm(60)
        out["alone"] = summary([live_run(runner, cfg) for _ in range(repeats)])
        service = SweepService()
        assert service.start(spec, "local", None, owner="another session", caps=caps)
        try:
            deadline = time.monotonic() + 120
            while service.sweep.progress().steps_done < 1 and time.monotonic() < deadline:
                time.sleep(0.1)  # the sweep's workers have started and train
            runner.wait_warm(60)
            out["beside_sweep"] = summary([live_run(runner, cfg) for _ in range(repeats)])
            out["sweep"]["steps_done_meanwhile"] = service.sweep.progress().steps_done
        finally:
            service.shutdown()
    if args.json:
        print(json.dumps(out))
        return
    sweep = out["sweep"]
    print(
        f"{out['cores']} cores; Live: {out['live']}; sweep: {spec.n_runs} runs x {spec.steps} steps "
        f"(estimate {sweep['estimate_min']} min), {sweep['steps_done_meanwhile']} sweep steps meanwhile"
    )
    for name in ("alone", "beside_sweep"):
        s = out[name]
        print(
            f"  {name:12s} first point {s['first_point_s']['median']:.2f} s "
            f"({s['first_point_s']['min']:.2f}-{s['first_point_s']['max']:.2f}), "
            f"{s['steps_per_s']['median']:.1f} steps/s ({s['steps_per_s']['min']:.1f}-{s['steps_per_s']['max']:.1f}), "
            f"{', '.join(s['statuses'])}"
        )


if __name__ == "__main__":
    main()
