"""Measure what the presets' and Compare scenarios' texts state, and the output-logit drift table of the
Theory page: train each run to the end (one thread, seed as the preset says) and print a Markdown table.

    .venv/bin/python scripts/measure_scenarios.py scenarios              # every Compare scenario, both runs
    .venv/bin/python scripts/measure_scenarios.py scenarios mix-ln z-loss-logz
    .venv/bin/python scripts/measure_scenarios.py drift --lr 1e-2 --steps 1000

Run it after changing the model, the trainer or a preset, and update the texts (ln_viz/locales/*.toml,
ln_viz/content/theory.*.md) and tests/test_scenarios.py's margins with what it prints.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import torch

from ln_viz.config import COMPARE_PRESETS, PRESETS, RunConfig
from ln_viz.schema import Stat
from ln_viz.snapshot import RunData
from ln_viz.train import run

COLUMNS = ("run", "status", "final", "held-out", "max attn logit", "log Z", "mean log Z", "DyT sat.", "resid std", "s")


def row(label: str, data: RunData, seconds: float) -> list[str]:
    """One table row: the run's end (status, final loss, last held-out loss) and the probes the texts cite at
    the last probe step (the largest attention logit of any layer, the batch's mean log Z, the mean fraction
    of saturated DyT inputs, the residual stream's spread after the last block), with log Z also averaged
    over every probe step."""
    held_out = [e for e in data.scalars["eval_loss"] if math.isfinite(e)]
    logz = data.probe("logz_stats")[:, 0]
    sat = data.probe("dyt_saturation")[-1]
    return [
        label,
        data.status,
        f"{data.final_loss():.3f}",
        f"{held_out[-1]:.3f}" if held_out else "-",
        f"{np.nanmax(data.probe('attn_logit_max')[-1]):,.1f}",
        f"{logz[-1]:.2f}",
        f"{np.nanmean(logz):.2f}",
        "-" if np.isnan(sat).all() else f"{np.nanmean(sat):.2f}",
        f"{data.probe('resid_stats')[-1, -1, Stat.STD]:.1f}",
        f"{seconds:.0f}",
    ]


def measure(label: str, cfg: RunConfig) -> list[str]:
    """Train `cfg` and return its row (and print it at once: a long table is read as it grows)."""
    t0 = time.perf_counter()
    cells = row(label, run(cfg.validate()), time.perf_counter() - t0)
    print("| " + " | ".join(cells) + " |", flush=True)
    return cells


def scenarios(names: list[str]) -> None:
    """Both runs of each named Compare scenario (all of them when none is named)."""
    for name in names or list(COMPARE_PRESETS):
        a, b, _ = COMPARE_PRESETS[name]
        print(f"\n{name}: A {a}, B {b}\n")
        print("| " + " | ".join(COLUMNS) + " |\n|" + "---|" * len(COLUMNS))
        for preset_name in (a, b):
            measure(preset_name, PRESETS[preset_name].config)


def drift(lr: float, steps: int) -> None:
    """Output-logit drift: Pre-LN (the base preset's size) at `lr` for `steps` steps, without and with
    weight decay and z-loss."""
    base = PRESETS["pre-ln-no-warmup"].config.replace(lr=lr, steps=steps, probe_every=10, eval_every=100)
    print(f"\nPre-LN, lr {lr:g}, {steps} steps\n")
    print("| " + " | ".join(COLUMNS) + " |\n|" + "---|" * len(COLUMNS))
    for label, changes in [
        ("plain", {}),
        ("weight decay 0.1", {"weight_decay": 0.1}),
        ("z-loss 1e-4", {"z_loss": 1e-4}),
        ("z-loss 1e-3", {"z_loss": 1e-3}),
        ("z-loss 1e-2", {"z_loss": 1e-2}),
    ]:
        measure(label, base.replace(**changes))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    sc = sub.add_parser("scenarios", help="both runs of Compare scenarios")
    sc.add_argument("names", nargs="*", metavar="NAME", help=f"of: {', '.join(COMPARE_PRESETS)}")
    dr = sub.add_parser("drift", help="log Z without and with weight decay and z-loss")
    dr.add_argument("--lr", type=float, default=1e-2)
    dr.add_argument("--steps", type=int, default=1000)
    args = p.parse_args()
    if args.what == "scenarios" and (unknown := set(args.names) - set(COMPARE_PRESETS)):
        p.error(f"no Compare scenario {', '.join(sorted(unknown))}; the scenarios: {', '.join(COMPARE_PRESETS)}")
    torch.set_num_threads(1)  # the figures the texts cite were measured on one thread
    if args.what == "scenarios":
        scenarios(args.names)
    else:
        drift(args.lr, args.steps)


if __name__ == "__main__":
    main()
