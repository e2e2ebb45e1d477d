"""One memory measurement of ln-viz's server side, in a process of its own that, like the server,
never imports torch (bench.py's `memory` section runs it twice).

    .venv/bin/python benchmarks/memory.py --probe-every 5 [--quick]

A Runner trains the deep Pre-LN preset for 2,000 steps in its worker process while a page-like reader
takes a view and builds the live figures once a second; this process's RSS (the server side: runner,
drain thread, the run's live copy, the figures) and the worker's are sampled every 0.5 s. Prints one
line of figures, then the JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def memory_run(quick: bool, probe_every: int) -> dict:
    import numpy as np

    from ln_viz import charts
    from ln_viz.config import preset
    from ln_viz.runner import Runner

    cfg = preset("deep-pre-ln").replace(steps=60 if quick else 2000, probe_every=probe_every)
    if quick:
        cfg = cfg.replace(depth=2, d_model=32, heads=2)
    samples = []
    with Runner(warm_workers=0) as runner:
        handle = runner.start(cfg)
        stop = threading.Event()

        def reader() -> None:
            while not stop.is_set():
                view = handle.view()
                if view.data is not None:
                    for build in (charts.loss_chart, charts.grad_heatmap, charts.act_dist, charts.layer_profile):
                        build(view.data).to_json()
                time.sleep(1.0)

        th = threading.Thread(target=reader, daemon=True)
        th.start()
        t0 = time.perf_counter()
        while not handle.done:
            view = handle.view()
            samples.append((time.perf_counter() - t0, view.steps_done, rss_mb(os.getpid()), rss_mb(handle.pid or 0)))
            time.sleep(0.5)
        stop.set()
        th.join()
        kept = len(handle.view().data.probe_steps)
    steps = np.array([s[1] for s in samples])
    server = np.array([s[2] for s in samples])
    worker = np.array([s[3] for s in samples])
    marks = [50, 100] if quick else [500, 1000, 1500]

    def at(step: int) -> float | None:
        after = steps >= step
        return float(server[after][0]) if after.any() else None

    out = {
        "steps": int(steps.max()),
        "seconds": samples[-1][0],
        "live_probe_steps_kept": kept,
        "server_rss_mb": {"start": float(server[0]), "peak": float(np.nanmax(server)), "end": float(server[-1])},
        "server_rss_mb_at": {str(m): at(m) for m in marks},
        "worker_rss_mb_peak": float(np.nanmax(worker)),
        "samples": [list(map(float, s)) for s in samples[:: max(1, len(samples) // 60)]],
    }
    first = out["server_rss_mb_at"][str(marks[0])]
    out["growth_after_first_mark_mb"] = None if first is None else float(server[-1]) - first
    marks_text = ", ".join(f"{m}: {v:.1f}" for m, v in out["server_rss_mb_at"].items() if v is not None)
    rss = out["server_rss_mb"]
    growth = float("nan") if first is None else out["growth_after_first_mark_mb"]
    print(
        f"    {out['steps']} steps at depth {cfg.depth} in {out['seconds']:.0f} s, {kept} probe steps kept live: "
        f"server RSS (MB) start {rss['start']:.1f}, at step {marks_text}, end {rss['end']:.1f} "
        f"(peak {rss['peak']:.1f}; after step {marks[0]}: {growth:+.1f}); "
        f"worker peak {out['worker_rss_mb_peak']:.0f} MB",
        flush=True,
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--probe-every", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    out = memory_run(args.quick, args.probe_every)
    assert "torch" not in sys.modules, "the server side imported torch"
    print(json.dumps(out))


if __name__ == "__main__":
    main()
