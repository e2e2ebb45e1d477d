"""Video export costs (ln_viz/video.py) on a long run: how many frames it draws, its time and the process's
peak memory over its start; and a second visitor's small video (21 probe steps, as hostile round 4's H1),
alone and started while the long one draws (the long one is stopped once the small one is done).

    .venv/bin/python -m benchmarks.video [--probe-steps 100] [--size 1920x1080] [--fmt mp4]

`python -m` imports the ln_viz of the folder it runs in: to measure a version before a change the same way, run
this file from that checkout's root (copied in, if that version lacks it).
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path


class Stopped(Exception):
    """Raised from the long export's progress call to stop it once the small one is done."""


def _peak_rss(stop: threading.Event, out: list[int]) -> None:
    import psutil

    proc = psutil.Process()
    while not stop.wait(0.2):
        out.append(proc.memory_info().rss)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--probe-steps", type=int, default=100)
    parser.add_argument("--size", default="1920x1080")
    parser.add_argument("--fmt", default="mp4", choices=("mp4", "gif"))
    parser.add_argument("--no-long-alone", action="store_true", help="skip the long video alone (its memory)")
    args = parser.parse_args(argv)
    import psutil

    from ln_viz.config import RunConfig
    from ln_viz.train import run
    from ln_viz.video import export_video, parse_size

    size = parse_size(args.size)
    tiny = RunConfig(depth=1, d_model=16, heads=2, batch_size=4, seq_len=16)
    long = run(tiny.replace(steps=args.probe_steps, probe_every=1, eval_every=args.probe_steps))
    small = run(tiny.replace(steps=100, probe_every=5, eval_every=50))
    print(f"{args.fmt} {args.size}; long run: {len(long.probe_steps)} probe steps, "
          f"small: {len(small.probe_steps)}")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        export_video(small, Path(tmp) / f"small.{args.fmt}", args.fmt, size=size)
        alone = time.perf_counter() - t0
        print(f"small video alone: {alone:.1f} s")

        if not args.no_long_alone:
            base = psutil.Process().memory_info().rss
            samples: list[int] = []
            stop = threading.Event()
            sampler = threading.Thread(target=_peak_rss, args=(stop, samples), daemon=True)
            sampler.start()
            t0 = time.perf_counter()
            path = export_video(long, Path(tmp) / f"long.{args.fmt}", args.fmt, size=size)
            took = time.perf_counter() - t0
            stop.set()
            sampler.join()
            frames = _frames_drawn(long)
            print(f"long video alone: {took:.1f} s, {frames} frames drawn, {path.stat().st_size / 1e6:.2f} MB; "
                  f"RSS {base / 2**20:.0f} MB before, peak {max(samples, default=base) / 2**20:.0f} MB")  # fmt: skip

        share = [0.0]
        small_done = threading.Event()
        started = threading.Event()

        def long_progress(s: float) -> None:
            share[0] = s
            started.set()
            if small_done.is_set():
                raise Stopped

        def draw_long() -> None:
            try:
                export_video(long, Path(tmp) / f"long2.{args.fmt}", args.fmt, size=size, progress=long_progress)
            except Stopped:
                pass

        long_thread = threading.Thread(target=draw_long)
        long_thread.start()
        started.wait()
        t0 = time.perf_counter()
        export_video(small, Path(tmp) / f"small2.{args.fmt}", args.fmt, size=size)
        beside = time.perf_counter() - t0
        at = share[0]
        small_done.set()
        long_thread.join()
        print(f"small video started while the long one draws: {beside:.1f} s (alone {alone:.1f} s); "
              f"the long one was at {at:.0%} then")  # fmt: skip
    return 0


def _frames_drawn(data) -> int:
    """Frames the video draws: `video_steps` where the version has it (a cap), else one per probe step."""
    from ln_viz import video

    return len(video.video_steps([data])) if hasattr(video, "video_steps") else len(data.probe_steps)


if __name__ == "__main__":
    raise SystemExit(main())
