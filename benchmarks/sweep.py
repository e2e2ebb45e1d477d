"""Sweep throughput: runs/min and total steps/s of a `local` sweep against cores x one run's steps/s,
both measured here in the same invocation; and the overhead of the `ray` executor on this machine (a
head node this benchmark starts on 127.0.0.1 and ends) against `local`.

    .venv/bin/python -m benchmarks.sweep                  # 8 runs x 200 steps of the reference cell
    .venv/bin/python -m benchmarks.sweep --quick          # tiny cells, seconds
    .venv/bin/python -m benchmarks.sweep --no-ray         # local only

The reference cell is the stability map's: depth 6, d_model 64, batch 16 x 32, no probes, one thread.
"Steady" throughput counts from the moment every worker has sent its first step (worker start-up, the
imports of torch, excluded) to the last step; "whole" from the call to the end. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import threading
import time
from pathlib import Path

from ln_viz.sweep.executors import Executor
from ln_viz.sweep.local import LocalExecutor
from ln_viz.sweep.presets import BASE
from ln_viz.sweep.spec import SweepConfig


def sweep_rate(executor: Executor, spec: SweepConfig) -> dict[str, float]:
    """Run a sweep's cells on `executor`, timing every step as it arrives."""
    cells = spec.cells()
    firsts: dict[int, float] = {}
    stamps: list[float] = []
    finals: dict[int, str] = {}

    def on_step(index: int, step: int, loss: float, eval_loss: float | None, status: str) -> None:
        now = time.perf_counter()
        firsts.setdefault(index, now)
        stamps.append(now)

    def on_end(index: int, status: str, error: str | None) -> None:
        finals[index] = status if error is None else f"{status}: {error}"

    t0 = time.perf_counter()
    executor.run(cells, on_step, on_end, threading.Event())
    whole = time.perf_counter() - t0
    workers = min(executor.workers, len(cells))
    steady_from = sorted(firsts.values())[workers - 1]  # every worker is training from here on
    steady_steps = sum(1 for t in stamps if t > steady_from)
    return {
        "runs": len(cells),
        "steps": len(stamps),
        "workers": workers,
        "whole_s": whole,
        "runs_per_min": len(cells) / whole * 60,
        "steps_per_s_whole": len(stamps) / whole,
        "steps_per_s_steady": steady_steps / max(stamps[-1] - steady_from, 1e-9),
        "failed": sum(1 for s in finals.values() if s.startswith("failed")),
    }


def ray_rate(spec: SweepConfig, cpus: int) -> dict[str, float]:
    from ln_viz.sweep.ray_exec import RayExecutor, disconnect
    from tests.ray_cluster import HeadNode

    with HeadNode(cpus=cpus) as head:
        try:
            executor = RayExecutor(address=head.address)
            sweep_rate(executor, dataclasses.replace(spec, lr=spec.lr[:1], norm_position=("pre",)))  # connect, warm
            return sweep_rate(executor, spec)
        finally:
            disconnect()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny cells (a smoke run)")
    parser.add_argument("--no-ray", action="store_true", help="skip the ray executor")
    parser.add_argument("--out", help="also write the figures as JSON here")
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    base = BASE.replace(depth=1, d_model=16, heads=2, seq_len=16, batch_size=4) if args.quick else BASE
    steps = 30 if args.quick else 200
    # 8 runs of one setting (lrs and norm positions only change numbers, not the work per step)
    spec = SweepConfig(
        base=base,
        norm_position=("pre", "post"),
        lr=(3e-4, 1e-3, 3e-3, 1e-2),
        warmup_steps=(0,),
        depth=(base.depth,),
        steps=steps,
    )
    # One run's rate in the same kind of worker (same process setup and priority as the sweep's, so an
    # in-process run is no fair reference), before and after the sweep, averaged: on a shared machine
    # the load drifts meanwhile.
    one = dataclasses.replace(spec, norm_position=spec.norm_position[:1], lr=spec.lr[:1])
    before = sweep_rate(LocalExecutor(workers=1), one)["steps_per_s_steady"]
    local = sweep_rate(LocalExecutor(workers=cores), spec)
    after = sweep_rate(LocalExecutor(workers=1), one)["steps_per_s_steady"]
    single = (before + after) / 2
    result = {
        "cores": cores,
        "single_run_steps_per_s": single,
        "single_before_after": [before, after],
        "ideal_steps_per_s": cores * single,
        "local": local,
    }
    result["local_vs_ideal_steady"] = local["steps_per_s_steady"] / (cores * single)
    result["local_vs_ideal_whole"] = local["steps_per_s_whole"] / (cores * single)
    print(
        f"one run, 1 thread: {single:.1f} steps/s (before {before:.1f}, after {after:.1f}); "
        f"{cores} cores x that: {cores * single:.1f} steps/s",
        flush=True,
    )
    print(
        f"local sweep, {local['runs']} runs x {steps} steps on {local['workers']} workers: "
        f"{local['runs_per_min']:.1f} runs/min, {local['steps_per_s_whole']:.1f} steps/s whole, "
        f"{local['steps_per_s_steady']:.1f} steady = {result['local_vs_ideal_steady']:.2f} x ideal "
        f"(whole {result['local_vs_ideal_whole']:.2f} x)",
        flush=True,
    )
    if not args.no_ray:
        ray = ray_rate(spec, cores)
        result["ray"] = ray
        result["ray_overhead_whole"] = ray["whole_s"] / local["whole_s"] - 1
        result["ray_vs_local_steady"] = ray["steps_per_s_steady"] / local["steps_per_s_steady"]
        print(
            f"ray sweep (head node on 127.0.0.1): {ray['runs_per_min']:.1f} runs/min, "
            f"{ray['steps_per_s_whole']:.1f} steps/s whole, {ray['steps_per_s_steady']:.1f} steady; "
            f"wall time {100 * result['ray_overhead_whole']:+.0f} % against local, steady rate "
            f"{result['ray_vs_local_steady']:.2f} x local"
        )
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
