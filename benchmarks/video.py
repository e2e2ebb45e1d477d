"""Video export times (ln_viz/video.py): a 200-step run to MP4 (1920x1080, 30 fps, ~15 s) and GIF
(960x540), frames drawn and encoded; the target is a 15-second 1080p video in at most 2 minutes on 2 cores.

    .venv/bin/python -m benchmarks.video [--probe-every 10] [--depth 6]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from ln_viz.config import RunConfig
from ln_viz.train import run
from ln_viz.video import export_video, hold


def timed_export(data, fmt: str, out: Path) -> tuple[float, float, int]:
    """(seconds drawing the frames, seconds in all, bytes written)."""
    marks: list[float] = []
    start = time.perf_counter()

    def progress(share: float) -> None:
        if share >= 0.9 and not marks:
            marks.append(time.perf_counter())

    path = export_video(data, out / f"run.{fmt}", fmt, progress=progress)
    end = time.perf_counter()
    return marks[0] - start, end - start, path.stat().st_size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--probe-every", type=int, default=10)
    parser.add_argument("--depth", type=int, default=6)
    args = parser.parse_args(argv)
    cfg = RunConfig(depth=args.depth, d_model=64, steps=200, probe_every=args.probe_every, eval_every=50)
    data = run(cfg)
    n = len(data.probe_steps)
    print(f"a {cfg.steps}-step run, depth {cfg.depth}: {n} probe steps; the MP4 holds each for {hold(n)} frames")
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in ("mp4", "gif"):
            draw, total, size = timed_export(data, fmt, Path(tmp))
            print(
                f"{fmt}: {total:6.1f} s in all ({draw:5.1f} s drawing {n} frames, {draw / n:.2f} s each; "
                f"{total - draw:5.1f} s encoding), {size / 1e6:.2f} MB"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
