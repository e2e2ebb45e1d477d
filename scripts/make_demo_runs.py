"""Train every preset and write its run file to ln_viz/data/demo_runs/: the runs the app ships with,
so a class sees Post-LN stall and Pre-LN train before anyone has pressed Train.

    .venv/bin/python scripts/make_demo_runs.py                      # every preset (minutes on 2 cores)
    .venv/bin/python scripts/make_demo_runs.py --preset deep-post-ln --preset deep-pre-ln
    .venv/bin/python scripts/make_demo_runs.py --tiny --out /tmp/demo_runs   # seconds: checks the script

Each file is `<preset>.json.gz` (see ln_viz/runfile/__init__.py for the format), labelled with the preset's
name. Every step's scalars are kept; probes are thinned to about one every `--probe-spacing` steps,
which keeps all the presets together under `--budget-mb` (5 MB). `load_demo_runs(store)` imports them.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ln_viz.config import PRESETS, RunConfig
from ln_viz.runfile import write_run_file
from ln_viz.store.transfer import DEMO_DIR


def tiny(cfg: RunConfig) -> RunConfig:
    """A preset shrunk to train in a fraction of a second, keeping its norm placement and warm-up idea."""
    steps = 20
    return cfg.replace(
        depth=2,
        d_model=16,
        heads=2,
        d_ff=None,
        seq_len=16,
        batch_size=4,
        steps=steps,
        warmup_steps=min(cfg.warmup_steps, steps // 2),
        probe_every=2,
        eval_every=10,
    )


def make(name: str, out: Path, *, probe_spacing: int, shrink: bool) -> Path:
    """Train one preset with the engine and write its thinned run file; the path written."""
    from ln_viz.train import run

    cfg = PRESETS[name].config
    if shrink:
        cfg = tiny(cfg)
    started = time.perf_counter()
    data = run(cfg)
    stride = max(1, probe_spacing // cfg.probe_every) if cfg.probe_every else 1
    path = write_run_file(data, out / f"{name}.json.gz", label=name, probe_stride=stride)
    print(
        f"{name:20} {data.status:10} {data.steps_done:>5} steps  final loss {data.final_loss() or float('nan'):.3f}  "
        f"{path.stat().st_size / 1e3:7.0f} kB  {time.perf_counter() - started:5.1f} s",
        flush=True,
    )
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", action="append", choices=list(PRESETS), help="only these (repeatable)")
    parser.add_argument("--out", type=Path, default=DEMO_DIR, help=f"folder (default {DEMO_DIR})")
    parser.add_argument("--probe-spacing", type=int, default=10, help="keep probes about every N steps")
    parser.add_argument("--budget-mb", type=float, default=5.0, help="fail when the files total more")
    parser.add_argument("--tiny", action="store_true", help="shrink every preset (to test this script)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads")
    args = parser.parse_args(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    paths = [
        make(name, args.out, probe_spacing=args.probe_spacing, shrink=args.tiny) for name in args.preset or PRESETS
    ]
    total = sum(p.stat().st_size for p in paths)
    print(f"{len(paths)} run files, {total / 1e6:.2f} MB in {args.out}")
    if total > args.budget_mb * 1e6:
        print(
            f"error: the run files total {total / 1e6:.2f} MB, above the {args.budget_mb} MB budget; "
            "raise --probe-spacing",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
