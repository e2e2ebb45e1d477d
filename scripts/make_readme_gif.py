"""The README's picture: the lecture view's Compare of Post-LN and Pre-LN without warm-up, as a GIF made by
ln-viz's own export (ln_viz/video.py, what `ln-viz runs export A --vs B --format gif` writes).

    PYTHONPATH=. .venv/bin/python scripts/make_readme_gif.py [--out docs/img/post-vs-pre.gif]

Both runs are the Compare page's default scenario ("post-vs-pre": the presets post-ln-no-warmup and
pre-ln-no-warmup, seed 0, the same initial weights and batches), probed every 10 steps so that the GIF has
31 frames and stays under 2 MB. Training both takes about a minute on 2 idle cores, drawing the frames about
as long again.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ln_viz.config import COMPARE_PRESETS, preset
from ln_viz.train import run
from ln_viz.video import export_video

ROOT = Path(__file__).resolve().parents[1]
SIZE = (960, 540)  # the GIF's default: small enough for a README, the lecture view's 16:9
SECONDS = 10.0  # each of the 31 probe steps for about a third of a second


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img" / "post-vs-pre.gif")
    parser.add_argument("--probe-every", type=int, default=10)
    args = parser.parse_args(argv)
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
