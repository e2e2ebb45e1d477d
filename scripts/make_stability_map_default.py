"""Measure the stability map page's default (the warm-up map preset) and write
ln_viz/data/stability_map_default.json, which the page draws on a cold server instead of training 32 runs;
with --preset, another shipped map (ln_viz.sweep.presets.SHIPPED_MAPS: the GI-Adam map).
Run it after changing the model, the trainer or the preset (tests/test_sweep.py trains two of its cells
again and says so when the file is stale).

    .venv/bin/python scripts/make_stability_map_default.py [--preset gi-adam-map] [--store PATH]

With --store, cells that store already holds (same config) are taken from it instead of trained again.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from ln_viz.sweep.driver import SweepRun
from ln_viz.sweep.local import LocalExecutor
from ln_viz.sweep.presets import DEFAULT_SWEEP, SHIPPED_MAPS, SWEEP_PRESETS
from ln_viz.sweep.storage import SweepStore

FORMAT = 1


def _rounded(cell: dict) -> dict:
    """The curve to 5 decimals (a third of the file; far below the run-to-run noise of a loss)."""
    cell["curve"] = [[s, round(v, 5)] for s, v in cell["curve"]]
    return cell


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", help="a run store to reuse cells from (and keep them in)")
    parser.add_argument("--preset", default=DEFAULT_SWEEP, choices=list(SHIPPED_MAPS), help="which shipped map")
    args = parser.parse_args()
    import torch

    spec, path = SWEEP_PRESETS[args.preset], SHIPPED_MAPS[args.preset]
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, SweepStore(args.store or Path(tmp) / "runs.sqlite") as store:
        sweep = SweepRun(spec, LocalExecutor(), store)
        print(f"{len(sweep.todo)} of {spec.n_runs} cells to train", file=sys.stderr)
        final = sweep.run()
    if final.state != "done" or final.done != spec.n_runs:
        sys.exit(f"the sweep ended {final.state} with {final.done} of {spec.n_runs} cells; nothing written")
    data = {
        "format": FORMAT,
        "spec": spec.to_dict(),
        "measured": time.strftime("%Y-%m-%d"),
        "torch": torch.__version__,
        "cores": os.cpu_count(),
        "results": [_rounded(r.to_dict()) for r in final.results],
    }
    path.write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KB) in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
