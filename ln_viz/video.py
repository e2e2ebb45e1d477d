"""A run's animation as a video (MP4) or GIF: what the lecture view shows, step by step.

    export_video(data, "out/run.mp4", size=(1920, 1080), lang="en")

Each frame is the lecture view at one probe step, drawn by the same builders (ln_viz/charts): a header line
naming the run(s) (the lecture view's header), the loss drawn up to the frame's step on the whole run's
axes (nothing jumps, and the ending is not given away), the gradient heatmap filling up to that step (or,
for a scenario whose lesson is an instability probe, that probe's chart, as the lecture view chooses:
ln_viz.lessons), the layer profile and the activation distribution at that step (ln_viz/video_charts.py);
under the charts the
scenario's question, and on the last frame its takeaway. A Compare pair (`export_video([a, b], ...,
labels=...)`) is drawn as the lecture view's Compare: both losses on one axis, the two heatmaps on one
colour scale (or both runs on the lesson chart), both runs' ffn.w2 profile.

How many frames: the video lasts `seconds` (15 s by default) and shows STEP_RATE probe steps a second, at
most MAX_FRAMES: a run with more probe steps is thinned evenly, its first and last kept (`video_steps`).
Each drawn frame is held for its share of the video (repeated, not interpolated: an interpolated histogram
would show values no step measured); the last one longer, with the takeaway on it.

Frames (ln_viz/video_frames.py): the charts of BATCH probe steps at a time go to kaleido in one call, each
at its tile's size, and the tiles are pasted into the frame (Pillow), which goes to the encoder at once:
memory holds one batch, not the video. Each batch holds the process's export lock
(ln_viz.export._EXPORT_LOCK, the least work left first) only while it is drawn, so another visitor's video, pack
or chart files are drawn between a long video's batches. The first batch starts its own Chromium, the
rest share one (kaleido's sync server, shared by every video drawing at that moment).

The encoder is imageio-ffmpeg's own ffmpeg binary (a PyPI wheel: no system package, the same ffmpeg on
every machine), fed raw frames on a pipe: H.264, yuv420p (what PowerPoint, Keynote and browsers play).
GIFs are written by Pillow, each frame quantised to its own 256-colour palette, 960x540 by default.
Both are written to a hidden file beside the target, renamed at the end and removed on failure: no
truncated video is left. No streamlit here: the CLI, the pages and the tests share it.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ln_viz.i18n import LocalizedError
from ln_viz.leftovers import owned, sweep_stale
from ln_viz.text import plain_number
from ln_viz.video_frames import (
    DEFAULT_SECONDS,
    MAX_FRAMES,
    STEP_RATE,
    TILES_PREFIX,
    frame_count,
    frame_steps,
    os_reason,
    render_frames,
    video_steps,
)

if TYPE_CHECKING:
    from ln_viz.snapshot import RunData

__all__ = ["DEFAULT_SECONDS", "FPS", "MAX_FRAMES", "STEP_RATE", "VIDEO_FORMATS", "durations", "estimate_seconds",
           "export_video", "frame_count", "frame_steps", "hold_counts", "os_reason", "parse_seconds", "parse_size",
           "video_steps"]  # fmt: skip

VIDEO_FORMATS = ("mp4", "gif")
FPS = 30
DEFAULT_SIZE = {"mp4": (1920, 1080), "gif": (960, 540)}
MIN_SIDE, MAX_SIDE = 320, 3840
MIN_SECONDS, MAX_SECONDS = 1.0, 600.0  # a clip for a slide, up to a run told slowly
LAST_HOLD = 2.5  # seconds the last frame (with the takeaway) stays, at most a quarter of the video
# seconds to draw a frame at the default sizes on 2 cores at a load of 3-9 (round 4: a 61-frame 1080p MP4 in
# 148 s, a 61-frame GIF in 235 s, a 21-frame MP4 in 72 s): the page's first estimate, before its own frames
SECONDS_PER_FRAME = {"mp4": 2.5, "gif": 3.0}


def parse_size(text: str) -> tuple[int, int]:
    """'1280x720' -> (1280, 720): even sides (H.264's 4:2:0 needs them) from 320 to 3840 pixels; anything
    else is a LocalizedError of one sentence."""
    m = re.fullmatch(r"\s*(\d{1,5})\s*[xX×]\s*(\d{1,5})\s*", text)
    if m:
        w, h = int(m.group(1)), int(m.group(2))
        if MIN_SIDE <= min(w, h) and max(w, h) <= MAX_SIDE and w % 2 == 0 and h % 2 == 0:
            return w, h
    raise LocalizedError("err.video_size", value=text, lo=MIN_SIDE, hi=MAX_SIDE)


def parse_seconds(text: str) -> float:
    """'8' or '2.5' -> seconds the animation lasts, from MIN_SECONDS to MAX_SECONDS; anything else is a
    LocalizedError of one sentence."""
    try:
        seconds = float(plain_number(text))
    except ValueError:
        seconds = float("nan")
    if MIN_SECONDS <= seconds <= MAX_SECONDS:  # False for nan and inf
        return seconds
    raise LocalizedError("err.video_seconds", value=text, lo=f"{MIN_SECONDS:g}", hi=f"{MAX_SECONDS:g}")


def estimate_seconds(datas: Sequence[RunData], fmt: str, seconds: float = DEFAULT_SECONDS) -> float:
    """About how long drawing the video takes on 2 cores (frames x measured seconds a frame)."""
    return frame_count(len(frame_steps(datas)), seconds) * SECONDS_PER_FRAME[fmt]


def durations(n: int, seconds: float) -> list[float]:
    """Seconds each of `n` drawn frames is shown in a video of `seconds`: equal shares, the last (the
    takeaway's) at least LAST_HOLD where that is under a quarter of the video."""
    if n <= 1:
        return [seconds] * n
    last = max(seconds / n, min(LAST_HOLD, seconds / 4))
    return [(seconds - last) / (n - 1)] * (n - 1) + [last]


def hold_counts(n: int, seconds: float, fps: int = FPS) -> list[int]:
    """Video frames each of `n` drawn frames is repeated for (the MP4): `durations` on the frame clock,
    at least one each; they add up to `seconds * fps`."""
    ends = np.cumsum(durations(n, seconds)) * fps
    marks = np.concatenate([[0], np.round(ends).astype(int)])
    return [max(1, int(c)) for c in np.diff(marks)]


# --- the file ----------------------------------------------------------------------------------------
def target_path(out: str | Path, fmt: str) -> Path:
    """The file `out` names (a folder, or a name with no suffix: `out/run.<fmt>`), its folder made; one that
    cannot be written is a LocalizedError of one sentence, before any frame is drawn."""
    path = Path(out)
    if path.exists() and not path.is_dir() and not path.is_file():  # /dev/null, a fifo
        raise LocalizedError("err.video_not_file", path=str(path))
    if path.is_dir() or not path.suffix:
        path = path / f"run.{fmt}"
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise LocalizedError("err.video_parent_file", path=str(parent))
            break
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise LocalizedError("err.write_failed", path=str(path.parent), reason=os_reason(e)) from e
    return path


@contextmanager
def _part_file(path: Path, fmt: str) -> Iterator[Path]:
    """A hidden file beside `path` to write to (made now: an unwritable folder is said before drawing),
    renamed to `path` when the block ends well, removed when it does not."""
    try:
        fd, name = tempfile.mkstemp(
            dir=path.parent, prefix=f".{path.stem}-ln-viz-{os.getpid()}-", suffix=f".part.{fmt}"
        )
    except OSError as e:
        raise LocalizedError("err.write_failed", path=str(path), reason=os_reason(e)) from e
    part = Path(name)
    try:
        with owned(name, fd):  # locked while it is written: a later export sweeps it only once this one is gone
            yield part
            os.replace(part, path)
    except OSError as e:
        part.unlink(missing_ok=True)
        raise LocalizedError("err.write_failed", path=str(path), reason=os_reason(e)) from e
    except BaseException:
        part.unlink(missing_ok=True)
        raise


def _encode_mp4(frames: Iterator[np.ndarray], part: Path, size: tuple[int, int], counts: list[int]) -> None:
    """imageio-ffmpeg's ffmpeg, fed raw frames on its stdin: H.264 (crf 15, what imageio's quality 7 was),
    yuv420p. Run here rather than through imageio's writer, which ignores ffmpeg's exit status: on a full
    disk it returned as if done and left a truncated file (and printed ffmpeg's 30 lines of log)."""
    import subprocess

    from imageio_ffmpeg import get_ffmpeg_exe

    cmd = [get_ffmpeg_exe(), "-y", "-v", "error", "-f", "rawvideo", "-vcodec", "rawvideo", "-s", f"{size[0]}x{size[1]}",
           "-pix_fmt", "rgb24", "-r", str(FPS), "-i", "-", "-an", "-vcodec", "libx264", "-pix_fmt", "yuv420p",
           "-crf", "15", "-f", "mp4", str(part)]  # fmt: skip
    ffmpeg = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for frame, count in zip(frames, counts):
            data = np.ascontiguousarray(frame).tobytes()
            for _ in range(count):
                ffmpeg.stdin.write(data)
        ffmpeg.stdin.close()
        code = ffmpeg.wait()
    except OSError as e:  # ffmpeg stopped: its stdin is a broken pipe
        ffmpeg.kill()
        ffmpeg.wait()
        raise _encode_error(part, e) from e
    except BaseException:  # a frame that could not be drawn, an interrupt: no ffmpeg left behind
        ffmpeg.kill()
        ffmpeg.wait()
        raise
    if code != 0:
        raise _encode_error(part, OSError(errno.EIO, f"ffmpeg stopped with code {code}"))


def _encode_error(part: Path, e: BaseException) -> LocalizedError:
    """ffmpeg's broken pipe says nothing of why it stopped: a full disk is the usual cause, said as such."""
    free = shutil.disk_usage(part.parent).free
    reason = os.strerror(errno.ENOSPC) if free < 8 * 2**20 else os_reason(e)
    return LocalizedError("err.write_failed", path=str(part.parent), reason=reason)


def _encode_gif(frames: Iterator[np.ndarray], part: Path, seconds_each: list[float]) -> None:
    """Pillow's GIF writer, fed one frame at a time; it keeps the frames it has written (palette images,
    a byte a pixel) until the end, so a GIF holds `frame_count` (at most MAX_FRAMES) of them."""
    from PIL import Image

    def paletted() -> Iterator[Any]:
        for frame in frames:
            yield Image.fromarray(frame).convert("P", palette=Image.Palette.ADAPTIVE)

    images = paletted()
    first = next(images)
    try:
        with open(part, "wb") as fh:
            first.save(fh, format="GIF", save_all=True, append_images=images, loop=0,
                       duration=[round(1000 * s) for s in seconds_each])  # fmt: skip
    except OSError as e:
        raise LocalizedError("err.write_failed", path=str(part.parent), reason=os_reason(e)) from e


def export_video(
    datas: RunData | Sequence[RunData],
    out: str | Path,
    fmt: str = "mp4",
    size: tuple[int, int] | None = None,
    lang: str = "en",
    labels: Sequence[str] | None = None,
    seconds: float = DEFAULT_SECONDS,
    progress: Callable[[float], None] | None = None,
) -> Path:
    """Write the animation of one run (or a Compare pair) to `out` (a file, or a folder: then
    `out/run.<fmt>`); the path written. The place is checked before any frame is drawn, and the file
    appears only whole. `progress(share)` is called as frames are drawn and written."""
    if fmt not in VIDEO_FORMATS:
        raise LocalizedError("err.choice", "--format", value=fmt, choices=", ".join(VIDEO_FORMATS))
    runs = [datas] if not isinstance(datas, Sequence) else list(datas)
    size = size or DEFAULT_SIZE[fmt]
    path = target_path(out, fmt)
    sweep_stale(path.parent, f".*-ln-viz-*.part.{fmt}")  # what killed exports left (hostile round 4 L5)
    sweep_stale(tempfile.gettempdir(), f"{TILES_PREFIX}*")
    n = len(video_steps(runs, seconds))
    if not n:
        raise LocalizedError("err.video_no_probes")
    with _part_file(path, fmt) as part:
        with closing(render_frames(runs, size, lang, labels, seconds, progress)) as frames:
            if fmt == "gif":
                _encode_gif(frames, part, durations(n, seconds))
            else:
                _encode_mp4(frames, part, size, hold_counts(n, seconds))
    if progress:
        progress(1.0)
    return path
