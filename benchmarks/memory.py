"""One memory measurement of ln-viz's server side, in a process of its own that, like the server,
never imports torch (bench.py's `memory` section runs it twice).

    .venv/bin/python -m benchmarks.memory --probe-every 5 [--quick]

A Runner trains the deep Pre-LN preset for 2,000 steps in its worker process while a page-like reader
takes a view and builds the live figures once a second; this process's RSS (the server side: runner,
drain thread, the run's live copy, the figures) and the worker's are sampled every 0.5 s. Prints one
line of figures, then the JSON.

    .venv/bin/python -m benchmarks.memory --stored [--quick] [--store PATH]

Opening stored runs (issue 21 X5): two 10,000-step depth-48 runs probed every step (what a visitor can
train within the caps: d_model 4, batch 1 x 2, about 8 min each), written by the project's RunWriter
(1.6 GB of store), then each read a page makes, in a fresh process: the Runs page's copy
(`open_run(id, 512)`), Compare's pair (`storage.stored_pair`'s steps), and the whole run (what the
thinned read decoded first before issue 21). RSS before, after (the copy still held) and at its peak.
Measured on 2026-12-02 on the shared 2-core machine, under load from other jobs: the Runs page's copy
106 -> 136 MB (peak 136, 1.7 s; before the fix 106 -> 1,648 MB, peak 1,691, 29.6 s), Compare's pair
106 -> 164 MB (3.6 s; before, it read both whole: 762 MB of arrays each), the whole run 106 -> 905 MB.
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


# --- stored runs ----------------------------------------------------------------------------------
def peak_rss_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) / 1024 for line in f if line.startswith("VmHWM:"))


def make_huge(path: Path, steps: int, depth: int, runs: int = 2) -> None:
    """`runs` runs of `steps` steps at `depth`, probed every step, written by RunWriter (the values are one
    random set: memory does not depend on them)."""
    import numpy as np

    from ln_viz.config import RunConfig
    from ln_viz.snapshot import RunInfo, Snapshot
    from ln_viz.store import RunWriter, Store

    cfg = RunConfig(depth=depth, d_model=4, heads=1, batch_size=1, seq_len=2, steps=steps, probe_every=1)
    info = RunInfo.preview(cfg.validate())
    rng = np.random.default_rng(0)
    arrays = {name: rng.random(shape, dtype=np.float32) for name, shape in info.probe_shapes().items()}
    with Store(path) as store:
        for seed in range(runs):
            with RunWriter(store) as writer:
                writer.begin(RunInfo.preview(cfg.replace(seed=seed)), label=f"huge {seed}")
                for t in range(1, steps + 1):
                    status = "completed" if t == steps else "running"
                    writer.add(Snapshot(t, 3.0, 1e-3, 1.0, t * 0.05, 20.0, status=status, probes=arrays))
                    if t % 500 == 0:
                        writer.flush()  # keeps the writer's own buffer small


def stored_case(path: Path, case: str) -> dict:
    """One read a page makes, in this fresh process: RSS (MB) before it, after it (the copy held), peak."""
    from ln_viz.server.store import SHOWN_PROBE_STEPS
    from ln_viz.snapshot import aligned_probe_steps
    from ln_viz.store import Store

    shown = SHOWN_PROBE_STEPS  # what the pages' charts read of a stored run
    with Store(path, readonly=True) as store:
        before = rss_mb(os.getpid())
        t0 = time.perf_counter()
        if case == "open":
            datas = [store.open_run(1, shown)]
        elif case == "pair":  # as storage.stored_pair chooses the steps
            own = [store.probe_steps(run_id) for run_id in (1, 2)]
            common = sorted(set(own[0]) & set(own[1]))
            steps = [aligned_probe_steps(o, common, shown) for o in own]
            datas = [store.open_run(run_id, probe_steps=s) for run_id, s in zip((1, 2), steps)]
        else:
            datas = [store.open_run(1)]
        seconds = time.perf_counter() - t0
        after = rss_mb(os.getpid())
    return {
        "case": case,
        "rss_before_mb": before,
        "rss_after_mb": after,
        "rss_peak_mb": peak_rss_mb(),
        "seconds": seconds,
        "probe_steps": [len(d.probe_steps) for d in datas],
        "held_mb": sum(d.nbytes() for d in datas) / 1024**2,
    }


def stored_runs(quick: bool, store: Path | None) -> dict:
    """make_huge (unless `store` holds the runs already), then each case in a fresh process."""
    import subprocess
    import tempfile

    steps, depth = (600, 8) if quick else (10_000, 48)
    folder = None if store else tempfile.TemporaryDirectory(prefix="ln-viz-memory-")
    path = store or Path(folder.name) / "runs.sqlite"
    try:
        if not path.exists():
            t0 = time.perf_counter()
            make_huge(path, steps, depth)
            print(f"    wrote 2 runs of {steps} steps at depth {depth} in {time.perf_counter() - t0:.0f} s: "
                  f"{path.stat().st_size / 1e9:.2f} GB", flush=True)  # fmt: skip
        out = {"steps": steps, "depth": depth, "store_bytes": path.stat().st_size}
        for case in ("open", "pair", "whole"):
            cmd = [sys.executable, "-m", "benchmarks.memory", "--case", case, "--store", str(path)]
            done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True)
            r = out[case] = json.loads(done.stdout.splitlines()[-1])
            print(f"    {case}: RSS {r['rss_before_mb']:.0f} -> {r['rss_after_mb']:.0f} MB (peak "
                  f"{r['rss_peak_mb']:.0f}) in {r['seconds']:.1f} s, probe steps {r['probe_steps']}, "
                  f"arrays held {r['held_mb']:.0f} MB", flush=True)  # fmt: skip
    finally:
        if folder is not None:
            folder.cleanup()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--probe-every", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--stored", action="store_true", help="measure opening stored runs instead")
    parser.add_argument("--store", type=Path, help="--stored: a store of make_huge's runs (made when missing)")
    parser.add_argument("--case", choices=("open", "pair", "whole"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        out = stored_case(args.store, args.case)
    elif args.stored:
        out = stored_runs(args.quick, args.store)
    else:
        out = memory_run(args.quick, args.probe_every)
    assert "torch" not in sys.modules, "the server side imported torch"
    print(json.dumps(out))


if __name__ == "__main__":
    main()
