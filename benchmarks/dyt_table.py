"""DyT against LayerNorm in Pre-LN (issue 19's table): held-out loss, the train/held-out gap and DyT's
saturated share at the end of each run, at three learning rates.

    nice -n 10 .venv/bin/python -m benchmarks.dyt_table             # 6 runs x 1,500 steps, 2 at a time
    nice -n 10 .venv/bin/python -m benchmarks.dyt_table --quick     # tiny runs, seconds

The runs: Pre-LN, 6 layers, d_model 64, 4 heads, batch 16 x 32, Adam, no warm-up, 1,500 steps, seed 0,
the English corpus, LayerNorm or DyT (alpha 0.5 at initialisation), lr 1e-3 / 3e-3 / 1e-2. Each run is
`ln_viz.train.run` of its RunConfig on one torch thread (what `python -m ln_viz train` trains), so the
figures are the CLI's. Held-out: the held-out loss at the last step; gap: held-out minus the final
training loss (the mean of the last 10 steps' losses); saturated: the share of DyT's tanh inputs with
|alpha x| > 2 at the last step, averaged over every block's DyT norms (the final norm is not probed);
massive: the largest massive-activation ratio (largest |h| over median |h|, Sun et al. 2024) of any layer
at the last step.
Nothing is asserted: the figures go into the Theory text and the README.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from ln_viz.config import RunConfig

LRS = (1e-3, 3e-3, 1e-2)
NORMS = ("layernorm", "dyt")
BASE = RunConfig(
    norm_position="pre",
    depth=6,
    d_model=64,
    heads=4,
    batch_size=16,
    seq_len=32,
    optimizer="adam",
    warmup_steps=0,
    steps=1500,
    seed=0,
    probe_every=500,  # only the last step's saturation is read; fewer probe steps, less time
    eval_every=500,  # the held-out loss is also measured at the last step
)
QUICK = BASE.replace(depth=2, d_model=16, heads=2, steps=40, probe_every=20, eval_every=20)


def measure(cfg: RunConfig) -> dict[str, float | str | None]:
    """Train one run and read its end: held-out loss, the gap, DyT's saturated share (None for LayerNorm)."""
    import numpy as np
    import torch

    from ln_viz.train import run

    torch.set_num_threads(1)  # two runs at a time on two cores, as a sweep's workers train
    t0 = time.perf_counter()
    data = run(cfg)
    evals = [x for x in data.scalars["eval_loss"] if x is not None and np.isfinite(x)]
    held_out, train = evals[-1], data.final_loss()
    sat = data.probe("dyt_saturation")[-1] if cfg.norm_type == "dyt" else None
    return {
        "norm_type": cfg.norm_type,
        "lr": cfg.lr,
        "status": data.status,
        "final_loss": train,
        "eval_loss": held_out,
        "gap": held_out - train,
        "saturated": None if sat is None else float(np.nanmean(sat)),
        "massive_act_max": float(data.probe("massive_act")[-1].max()),  # largest |h| / median |h|, any layer
        "wall_s": time.perf_counter() - t0,
    }


def table(rows: list[dict]) -> str:
    """The rows as a Markdown table, one line per learning rate, LayerNorm beside DyT."""
    by = {(r["norm_type"], r["lr"]): r for r in rows}
    lines = [
        "| lr | held-out: LayerNorm | held-out: DyT | gap: LayerNorm | gap: DyT | DyT saturated "
        "| massive: LayerNorm | massive: DyT |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for lr in sorted({r["lr"] for r in rows}):
        ln, dyt = by[("layernorm", lr)], by[("dyt", lr)]
        marks = {n: "" if r["status"] == "completed" else f" *{r['status']}*" for n, r in (("ln", ln), ("dyt", dyt))}
        lines.append(
            f"| {lr:g} | {ln['eval_loss']:.2f}{marks['ln']} | {dyt['eval_loss']:.2f}{marks['dyt']} "
            f"| {ln['gap']:.2f} | {dyt['gap']:.2f} | {100 * dyt['saturated']:.0f} % "
            f"| {ln['massive_act_max']:.0f} | {dyt['massive_act_max']:.0f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny runs: a smoke run in seconds")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="runs at a time (default 2)")
    parser.add_argument("--out", type=Path, default=None, help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    base = QUICK if args.quick else BASE
    configs = [base.replace(norm_type=n, lr=lr) for lr in LRS for n in NORMS]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        rows = list(pool.map(measure, configs))
    wall = time.perf_counter() - t0
    print(table(rows))
    print(f"{len(rows)} runs x {base.steps} steps, {args.jobs} at a time: {wall:.0f} s wall")
    if args.out:
        args.out.write_text(json.dumps({"rows": rows, "wall_s": wall}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
