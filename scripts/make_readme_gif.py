"""The README's picture: the lecture view's Compare of Post-LN and Pre-LN without warm-up, as a GIF made by
ln-viz's own export (ln_viz/video.py, what `ln-viz runs export A --vs B --format gif` writes).

    .venv/bin/python scripts/make_readme_gif.py [--out docs/img/post-vs-pre.gif]

Both runs are the Compare page's default scenario ("post-vs-pre": the presets post-ln-no-warmup and
pre-ln-no-warmup, seed 0, the same initial weights and batches), probed every 15 steps so that the GIF has
21 frames and stays well under 2 MB. One torch thread, as each of the app's runs has (two threads contending
with other work spin rather than train). Training both takes about 20 s on idle cores, drawing the frames
about a minute.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from ln_viz.config import COMPARE_PRESETS, preset
from ln_viz.train import run
from ln_viz.video import export_video

ROOT = Path(__file__).resolve().parents[1]
SIZE = (960, 540)  # the GIF's default: small enough for a README, the lecture view's 16:9
SECONDS = 10.0  # each of the 21 probe steps for about half a second


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img" / "post-vs-pre.gif")
    parser.add_argument("--probe-every", type=int, default=15)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    a_name, b_name, _ = COMPARE_PRESETS["post-vs-pre"]
    start = time.perf_counter()
    datas = [run(preset(name).replace(probe_every=args.probe_every)) for name in (a_name, b_name)]
    trained = time.perf_counter()
    path = export_video(datas, args.out, "gif", size=SIZE, lang="en", seconds=SECONDS)
    done = time.perf_counter()
    print(
        f"{path}: {path.stat().st_size / 1e6:.2f} MB, {len(datas[0].probe_steps)} frames; "
        f"trained in {trained - start:.0f} s, drawn and written in {done - trained:.0f} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
