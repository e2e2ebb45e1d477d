"""A run's animation as a video (MP4) or GIF: what the lecture view shows, one frame per probe step.

    export_video(data, "out/run.mp4", size=(1920, 1080), lang="en")

Each frame is the lecture view's four charts, drawn by the same builders (ln_viz/charts): the loss with
the frame's step marked (a vertical line), the gradient heatmap filling up to that step (the steps after
it under a white veil), the layer profile and the activation distribution at that step. A Compare pair
(`export_video([a, b], ..., labels=...)`) is drawn as the lecture view's Compare: both losses on one axis,
the two heatmaps on one colour scale (each titled with its run), both runs' ffn.w2 profile.

Frames: the charts of 8 probe steps at a time go to kaleido in one batch (`plotly.io.write_images`), each at
its tile's size, and the tiles are pasted into the frame (Pillow); the first batch starts its own Chromium,
the rest share one (kaleido's sync server), so a video costs two Chromium starts, not one per batch. Timing: the video
lasts `seconds` (15 s by default) at 30 fps: each probe step's frame is held for the same number of video
frames (repeated, not interpolated: an interpolated histogram would show values no step measured), and at
least one frame per probe step. The GIF holds each probe step once, for `seconds / steps`, at 960x540 by
default: it stays small for slides.

The encoder is imageio with imageio-ffmpeg's own ffmpeg binary (a PyPI wheel: no system package, the same
ffmpeg on every machine): H.264, yuv420p (what PowerPoint, Keynote and browsers play). GIFs are written
by Pillow (imageio's pillow plugin), each frame quantised to its own 256-colour palette.
No streamlit here: the CLI, the pages and the tests share it.
"""

from __future__ import annotations

import re
import tempfile
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from ln_viz import charts
from ln_viz.export import _plain_template
from ln_viz.i18n import LocalizedError

if TYPE_CHECKING:
    from ln_viz.snapshot import RunData

VIDEO_FORMATS = ("mp4", "gif")
FPS = 30
DEFAULT_SECONDS = 15.0
DEFAULT_SIZE = {"mp4": (1920, 1080), "gif": (960, 540)}
MIN_SIDE, MAX_SIDE = 320, 3840
MIN_SECONDS, MAX_SECONDS = 1.0, 600.0  # a clip for a slide, up to a run told slowly
LAYOUT_HEIGHT = 1080  # CSS pixels the charts are laid out in, whatever the video's size (the lecture view's)
# The lecture view's layout (ln_viz/ui/lecture_view.draw_live): the loss on the left, the heatmap above
# the profile and the distribution on the right. Tiles as shares of the frame: (x, y, width, height).
_TILES = {
    "loss": (0.0, 0.0, 0.465, 1.0),
    "grad_heatmap": (0.465, 0.0, 0.535, 0.5),
    "layer_profile": (0.465, 0.5, 0.297, 0.5),
    "act_dist": (0.762, 0.5, 0.238, 0.5),
}
# A pair, as the lecture view's Compare (ui/lecture_view.draw_compare): both losses on one axis on the left,
# the two heatmaps on one colour scale above both runs' ffn.w2 profile (the paper's Figure 3) on the right.
# (Each run's four charts side by side at half the width cut and overlapped their titles.)
_PAIR_TILES = {
    "loss": (0.0, 0.0, 0.52, 1.0),
    "heatmap_0": (0.52, 0.0, 0.23, 0.44),
    "heatmap_1": (0.75, 0.0, 0.25, 0.44),
    "profile": (0.52, 0.44, 0.48, 0.56),
}


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
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if MIN_SECONDS <= seconds <= MAX_SECONDS:  # False for nan and inf
        return seconds
    raise LocalizedError("err.video_seconds", value=text, lo=f"{MIN_SECONDS:g}", hi=f"{MAX_SECONDS:g}")


def frame_steps(datas: Sequence[RunData]) -> list[int]:
    """The probe steps a video shows: every probe step of a run; of a pair, the steps both measured."""
    steps = set(datas[0].probe_steps)
    for d in datas[1:]:
        steps &= set(d.probe_steps)
    return sorted(steps)


def _marked_loss(data: RunData, lang: str, step: int, label: str | None) -> go.Figure:
    fig = charts.loss_chart(data, lang, True)
    fig.add_vline(x=step, line={"color": "#222222", "width": 2})
    if label:
        fig.update_layout(title={"text": label})
    return fig


def _filling_heatmap(data: RunData, lang: str, step: int, zrange: tuple[float, float] | None) -> go.Figure:
    fig = charts.grad_heatmap(data, lang, zrange=zrange, lecture=True)
    last = data.probe_steps[-1]
    if step < last:  # the steps not yet reached, veiled: the heatmap fills as the video plays
        fig.add_vrect(x0=step + 0.5, x1=last + 0.5, fillcolor="white", opacity=0.92, line_width=0, layer="above")
    return fig


def _figure(
    name: str, datas: Sequence[RunData], lang: str, step: int, labels: Sequence[str] | None, zrange
) -> go.Figure:
    """One tile's chart at `step`: of one run (_TILES) or of a pair (_PAIR_TILES)."""
    if len(datas) == 1:
        d = datas[0]
        if name == "loss":
            return _marked_loss(d, lang, step, None)
        if name == "grad_heatmap":
            return _filling_heatmap(d, lang, step, None)
        if name == "layer_profile":
            return charts.layer_profile(d, lang, step, True)
        return charts.act_dist(d, lang, step=step, lecture=True)
    names = list(labels) if labels else [charts.norm_label(d.info.config.norm_position, lang) for d in datas]
    if name == "loss":
        fig = charts.loss_chart(list(datas), lang, True, names)
        fig.add_vline(x=step, line={"color": "#222222", "width": 2})
        return fig
    if name.startswith("heatmap_"):
        i = int(name[-1])
        fig = _filling_heatmap(datas[i], lang, step, zrange)
        fig.update_layout(title={"text": names[i]})  # which run is which
        if i == 0:
            fig.update_traces(showscale=False)  # one colour bar for both, on the right
        return fig
    return charts.layer_profile(list(datas), lang, step, True, names, std=False)


def _tiles(size: tuple[int, int], sides: int) -> dict[str, tuple[int, int, int, int]]:
    """Each chart's pixel box (x, y, w, h) in the frame: one run's four, or a pair's (_PAIR_TILES)."""
    w, h = size
    boxes = {}
    for name, (fx, fy, fw, fh) in (_TILES if sides == 1 else _PAIR_TILES).items():
        x0, x1 = round(fx * w), round((fx + fw) * w)
        y0, y1 = round(fy * h), round((fy + fh) * h)
        boxes[name] = (x0, y0, x1 - x0, y1 - y0)
    return boxes


def render_frames(
    datas: Sequence[RunData],
    size: tuple[int, int],
    lang: str = "en",
    labels: Sequence[str] | None = None,
    progress: Callable[[float], None] | None = None,
) -> list[np.ndarray]:
    """One RGB frame (h, w, 3 uint8) per probe step of `frame_steps(datas)`."""
    from PIL import Image

    steps = frame_steps(datas)
    if not steps:
        raise LocalizedError("err.video_no_probes")
    boxes = _tiles(size, len(datas))
    zrange = charts.shared_zrange(datas) if len(datas) > 1 else None
    frames: list[np.ndarray] = []
    chunk = 8  # probe steps per kaleido batch: the progress moves, and memory holds a few figures only
    with tempfile.TemporaryDirectory(prefix="ln-viz-video-") as tmp, _plain_template(), ExitStack() as chromium:
        for start in range(0, len(steps), chunk):
            if start == chunk:  # the first batch found a browser: one Chromium for the rest
                chromium.enter_context(_one_chromium())
            figs, paths, widths, heights = [], [], [], []
            for step in steps[start : start + chunk]:
                for name, (_, _, w, h) in boxes.items():
                    figs.append(_figure(name, datas, lang, step, labels, zrange))
                    paths.append(Path(tmp) / f"{step}_{name}.png")
                    widths.append(w)
                    heights.append(h)
            _write_pngs(figs, paths, widths, heights, size[1] / LAYOUT_HEIGHT)
            for step in steps[start : start + chunk]:
                canvas = Image.new("RGB", size, "white")
                for name, (x, y, w, h) in boxes.items():
                    with Image.open(Path(tmp) / f"{step}_{name}.png") as tile:
                        if tile.size != (w, h):  # a pixel off from rounding the CSS size
                            tile = tile.resize((w, h))
                        canvas.paste(tile.convert("RGB"), (x, y))
                frames.append(np.asarray(canvas))
            if progress:
                progress(min(1.0, (start + chunk) / len(steps)) * 0.9)
    return frames


@contextmanager
def _one_chromium() -> Iterator[None]:
    """kaleido's sync server for the batches inside: one Chromium start instead of one per batch (about 3 s
    each on 2 cores; a 300-step run probed every 5 steps is 8 batches). Left alone if one runs already. Only
    once a one-shot batch has worked: without a browser the server's thread dies and its next call waits
    forever, where a one-shot call raises the error the user reads (err.export_browser)."""
    import kaleido

    if kaleido._global_server.is_running():  # noqa: SLF001 - kaleido has no public "is it running"
        yield
        return
    kaleido.start_sync_server(silence_warnings=True)
    try:
        with warnings.catch_warnings():  # plotly passes its request headers, which only a one-shot call uses
            warnings.filterwarnings("ignore", "The kopts argument is ignored", UserWarning)
            yield
    finally:
        kaleido.stop_sync_server(silence_warnings=True)


def _write_pngs(figs: list[go.Figure], paths: list[Path], widths: list[int], heights: list[int], scale: float) -> None:
    """Each figure laid out at (width / scale, height / scale) CSS pixels, drawn at `scale`: a smaller
    video is the 1080p frame scaled down, not the charts crammed into fewer CSS pixels."""
    try:
        css_w = [round(w / scale) for w in widths]
        css_h = [round(h / scale) for h in heights]
        pio.write_images(figs, paths, format="png", width=css_w, height=css_h, scale=scale)
    except RuntimeError as e:  # kaleido says "Kaleido requires Google Chrome..." when it finds no browser
        if "Chrome" in str(e) or "Chromium" in str(e):
            raise LocalizedError("err.export_browser") from e
        raise


def hold(n_steps: int, seconds: float = DEFAULT_SECONDS, fps: int = FPS) -> int:
    """Video frames per probe step: the video lasts about `seconds`, and every step is shown at least once."""
    return max(1, round(seconds * fps / max(1, n_steps)))


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
    `out/run.<fmt>`); the path written. `progress(share)` is called as frames are drawn and written."""
    import imageio.v2 as imageio

    if fmt not in VIDEO_FORMATS:
        raise LocalizedError("err.choice", "--format", value=fmt, choices=", ".join(VIDEO_FORMATS))
    runs = [datas] if not isinstance(datas, Sequence) else list(datas)
    size = size or DEFAULT_SIZE[fmt]
    path = Path(out)
    if path.is_dir() or not path.suffix:
        path = path / f"run.{fmt}"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise LocalizedError("err.write_failed", path=str(path.parent), reason=e.strerror) from e
    frames = render_frames(runs, size, lang, labels, progress)
    try:
        if fmt == "gif":
            imageio.mimsave(path, frames, format="GIF", duration=1000 * seconds / len(frames), loop=0)
        else:
            per_step = hold(len(frames), seconds)
            # macro_block_size 2: 1080 is not a multiple of 16, and imageio would otherwise resize to 1088
            with imageio.get_writer(
                path, format="FFMPEG", fps=FPS, codec="libx264", quality=7, pixelformat="yuv420p", macro_block_size=2
            ) as writer:
                for frame in frames:
                    for _ in range(per_step):
                        writer.append_data(frame)
    except OSError as e:
        raise LocalizedError("err.write_failed", path=str(path), reason=e.strerror) from e
    if progress:
        progress(1.0)
    return path
