"""A run's animation as a video (MP4) or GIF: what the lecture view shows, step by step.

    export_video(data, "out/run.mp4", size=(1920, 1080), lang="en")

Each frame is the lecture view at one probe step, drawn by the same builders (ln_viz/charts): a header line
naming the run(s) (the lecture view's header), the loss drawn up to the frame's step on the whole run's
axes (nothing jumps, and the ending is not given away), the gradient heatmap filling up to that step (or,
for a scenario whose lesson is an instability probe, that probe's chart, as the lecture view chooses:
ln_viz.lessons), the layer profile and the activation distribution at that step; under the charts the
scenario's question, and on the last frame its takeaway. A Compare pair (`export_video([a, b], ...,
labels=...)`) is drawn as the lecture view's Compare: both losses on one axis, the two heatmaps on one
colour scale (or both runs on the lesson chart), both runs' ffn.w2 profile.

How many frames: the video lasts `seconds` (15 s by default) and shows STEP_RATE probe steps a second, at
most MAX_FRAMES: a run with more probe steps is thinned evenly, its first and last kept (`video_steps`).
Each drawn frame is held for its share of the video (repeated, not interpolated: an interpolated histogram
would show values no step measured); the last one longer, with the takeaway on it.

Frames: the charts of BATCH probe steps at a time go to kaleido in one call (`plotly.io.write_images`),
each at its tile's size, and the tiles are pasted into the frame (Pillow), which goes to the encoder at
once: memory holds one batch, not the video. Each batch holds the process's export lock
(ln_viz.export._EXPORT_LOCK, handed out in turn) only while it is drawn, so another visitor's video, pack
or chart files are drawn between a long video's batches. The first batch starts its own Chromium, the
rest share one (kaleido's sync server, shared by every video drawing at that moment).

The encoder is imageio-ffmpeg's own ffmpeg binary (a PyPI wheel: no system package, the same ffmpeg on
every machine), fed raw frames on a pipe: H.264, yuv420p (what PowerPoint, Keynote and browsers play). GIFs are written
by Pillow, each frame quantised to its own 256-colour palette, 960x540 by default: small for slides.
Both are written to a hidden file beside the target, renamed at the end and removed on failure: no
truncated video is left. No streamlit here: the CLI, the pages and the tests share it.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import re
import shutil
import tempfile
import unicodedata
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from ln_viz import charts
from ln_viz.export import _EXPORT_LOCK, _plain_template
from ln_viz.i18n import CATALOGS, LocalizedError, t
from ln_viz.lessons import lesson_chart, scenario_of
from ln_viz.words import describe

if TYPE_CHECKING:
    from ln_viz.snapshot import RunData

VIDEO_FORMATS = ("mp4", "gif")
FPS = 30
DEFAULT_SECONDS = 15.0
DEFAULT_SIZE = {"mp4": (1920, 1080), "gif": (960, 540)}
MIN_SIDE, MAX_SIDE = 320, 3840
MIN_SECONDS, MAX_SECONDS = 1.0, 600.0  # a clip for a slide, up to a run told slowly
STEP_RATE = 4  # probe steps shown a second: each for 0.25 s, as the lecture pack's Play
MAX_FRAMES = 120  # frames drawn at most, whatever the run and `seconds`: about 3 min of drawing at 1080p
LAST_HOLD = 2.5  # seconds the last frame (with the takeaway) stays, at most a quarter of the video
BATCH = 4  # probe steps per kaleido call (and per turn of the export lock): about 3-6 s at 1080p
SECONDS_PER_FRAME = {"mp4": 1.6, "gif": 0.8}  # measured on 2 cores at the default sizes: the page's estimate
LAYOUT_HEIGHT = 1080  # CSS pixels the charts are laid out in, whatever the video's size (the lecture view's)
HEADER = 0.06  # the header line's share of the frame's height (34 px at 1080, as the lecture view's title)
FOOTER = 0.085  # the question / takeaway's share (28 px, up to two lines)
# The lecture view's layout (ln_viz/ui/lecture_view.draw_live): the loss on the left, the heatmap (or the
# lesson chart) above the profile and the distribution on the right. Tiles as shares of the charts' band
# of the frame, between the header and the footer: (x, y, width, height).
_TILES = {
    "loss": (0.0, 0.0, 0.465, 1.0),
    "grad_heatmap": (0.465, 0.0, 0.535, 0.5),
    "layer_profile": (0.465, 0.5, 0.297, 0.5),
    "act_dist": (0.762, 0.5, 0.238, 0.5),
}
# A pair, as the lecture view's Compare (ui/lecture_view.draw_compare): both losses on one axis on the left,
# the two heatmaps on one colour scale (or both runs on the lesson chart) above both runs' ffn.w2 profile
# (the paper's Figure 3) on the right.
_PAIR_TILES = {
    "loss": (0.0, 0.0, 0.52, 1.0),
    "heatmap_0": (0.52, 0.0, 0.23, 0.44),
    "heatmap_1": (0.75, 0.0, 0.25, 0.44),
    "profile": (0.52, 0.44, 0.48, 0.56),
}
_PAIR_LESSON_TILES = {
    "loss": (0.0, 0.0, 0.52, 1.0),
    "lesson": (0.52, 0.0, 0.48, 0.44),
    "profile": (0.52, 0.44, 0.48, 0.56),
}
_LESSONS = {"attn_logit": charts.attn_logit_chart, "log_z": charts.log_z_chart}


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
    """The probe steps a video could show: every probe step of a run; of a pair, the steps both measured."""
    steps = set(datas[0].probe_steps)
    for d in datas[1:]:
        steps &= set(d.probe_steps)
    return sorted(steps)


def frame_count(n_steps: int, seconds: float = DEFAULT_SECONDS) -> int:
    """Frames drawn for `n_steps` probe steps in a video of `seconds`: STEP_RATE a second, at most
    MAX_FRAMES, and never more than there are steps."""
    return max(0, min(n_steps, MAX_FRAMES, max(2, round(seconds * STEP_RATE))))


def video_steps(datas: Sequence[RunData], seconds: float = DEFAULT_SECONDS) -> list[int]:
    """The probe steps the video draws (`frame_count` of them): evenly spread, the first and the last kept."""
    steps = frame_steps(datas)
    n = frame_count(len(steps), seconds)
    if len(steps) <= n:
        return steps
    picks = np.unique(np.linspace(0, len(steps) - 1, n).round().astype(int))
    return [steps[i] for i in picks]


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


# --- one frame's charts ------------------------------------------------------------------------------
def until(data: RunData, step: int) -> RunData:
    """The run as it stood at `step` (its scalars and probe steps up to it; a stall or divergence only
    once reached, "running" before its end): what a live lecture view showed then."""
    n = int(np.searchsorted(np.asarray(data.scalars["step"]), step, side="right"))
    if n >= len(data.scalars["step"]):
        return data
    p = int(np.searchsorted(np.asarray(data.probe_steps), step, side="right"))
    return dataclasses.replace(
        data,
        status="running",
        message=None,
        stalled_since=data.stalled_since if data.stalled_since is not None and data.stalled_since <= step else None,
        diverged_at=data.diverged_at if data.diverged_at is not None and data.diverged_at <= step else None,
        scalars={k: v[:n] for k, v in data.scalars.items()},
        probe_steps=data.probe_steps[:p],
        probes={k: v[:p] for k, v in data.probes.items()},
    )


_AXES = ("xaxis", "yaxis", "yaxis2")


def _axes_of(fig: go.Figure) -> dict[str, Any]:
    """A chart's axis ranges (and types), to draw a frame's partial chart on the whole run's axes."""
    out = {}
    for name in _AXES:
        axis = fig.layout[name] if name in fig.layout else None
        if axis is not None and axis.range is not None:
            out[name] = {"range": list(axis.range), "type": axis.type}
    return out


def _on_axes(fig: go.Figure, axes: dict[str, Any]) -> go.Figure:
    if axes:
        fig.update_layout({name: {k: v for k, v in a.items() if v is not None} for name, a in axes.items()})
    return fig


def lr_title_above(fig: go.Figure) -> go.Figure:
    """The learning rate's axis title set above its axis, across: turned on the chart's right edge it read
    as the title of the panel beside it, where tiles (or the pack's boxes) touch (round 4's "stray
    learning rate title")."""
    axis = fig.layout.yaxis2
    text = axis.title.text if axis is not None and axis.title is not None else None
    if not text:
        return fig
    fig.update_layout(yaxis2={"title": {"text": None}})
    fig.add_annotation(
        text=text,
        x=1,
        xref="paper",
        y=1,
        yref="paper",
        xanchor="right",
        yanchor="bottom",
        yshift=4,
        showarrow=False,
        font={"color": "#666666"},
    )
    return fig


class _Frames:
    """The charts of one video at any of its steps: the whole run's axes measured once, each step's chart
    drawn from the run as it stood then (`until`)."""

    def __init__(self, datas: Sequence[RunData], lang: str, labels: Sequence[str] | None) -> None:
        self.datas, self.lang = list(datas), lang
        cfgs = [d.info.config for d in datas]
        self.scenario = scenario_of(cfgs)
        lesson = lesson_chart(self.scenario, cfgs)
        self.lesson = lesson if lesson and all(charts.has_instability_probes(d) for d in datas) else None
        if len(datas) > 1:
            self.names = list(labels) if labels else [charts.norm_label(c.norm_position, lang) for c in cfgs]
            self.tiles = _PAIR_LESSON_TILES if self.lesson else _PAIR_TILES
        else:
            self.names = [None]
            self.tiles = _TILES
        self.zrange = charts.shared_zrange(datas) if len(datas) > 1 else None
        self.loss_axes = _axes_of(self._loss(self.datas))
        self.lesson_axes = _axes_of(self._lesson(self.datas)) if self.lesson else {}

    def _runs(self, datas: list[RunData]) -> Any:
        return datas[0] if len(datas) == 1 else datas

    def _loss(self, datas: list[RunData]) -> go.Figure:
        if len(datas) == 1:
            return lr_title_above(charts.loss_chart(datas[0], self.lang, True))
        return lr_title_above(charts.loss_chart(datas, self.lang, True, self.names))

    def _lesson(self, datas: list[RunData]) -> go.Figure:
        build = _LESSONS[self.lesson]
        if len(datas) == 1:
            return build(datas[0], self.lang, True)
        return build(datas, self.lang, True, labels=self.names)

    def _heatmap(self, i: int, step: int) -> go.Figure:
        data = self.datas[i]
        fig = charts.grad_heatmap(data, self.lang, zrange=self.zrange, lecture=True)
        last = data.probe_steps[-1]
        if step < last:  # the steps not yet reached, hidden: the heatmap fills as the video plays
            fig.add_vrect(x0=step + 0.5, x1=last + 0.5, fillcolor="white", opacity=1, line_width=0, layer="above")
        if len(self.datas) > 1:
            fig.update_layout(title={"text": self.names[i]})  # which run is which
            if i == 0:
                fig.update_traces(showscale=False)  # one colour bar for both, on the right
        return fig

    def figure(self, name: str, step: int) -> go.Figure:
        """Tile `name`'s chart at `step`."""
        lang = self.lang
        if name == "loss":
            return _on_axes(self._loss([until(d, step) for d in self.datas]), self.loss_axes)
        if name == "lesson" or (name == "grad_heatmap" and self.lesson):
            return _on_axes(self._lesson([until(d, step) for d in self.datas]), self.lesson_axes)
        if name == "grad_heatmap":
            return self._heatmap(0, step)
        if name.startswith("heatmap_"):
            return self._heatmap(int(name[-1]), step)
        if name == "layer_profile":
            return charts.layer_profile(self.datas[0], lang, step, True)
        if name == "act_dist":
            return charts.act_dist(self.datas[0], lang, step=step, lecture=True)
        return charts.layer_profile(self.datas, lang, step, True, self.names, std=False)

    def header(self) -> str:
        return describe([d.info.config for d in self.datas], self.lang)

    def footer(self, last: bool) -> str:
        """Under the charts: the scenario's question while it plays, its takeaway on the last frame."""
        if self.scenario is None:
            return ""
        key = f"lecture.takeaway.{self.scenario}" if last else f"lecture.question.{self.scenario}"
        return t(key, self.lang) if key in CATALOGS["en"] else ""


def _text_figure(text: str, size_px: int, bold: bool) -> go.Figure:
    """A line (or two) of text as a chart, so Chromium sets it in the charts' fonts (Korean included)."""
    fig = go.Figure()
    fig.add_annotation(
        text=f"<b>{text}</b>" if bold else text,
        x=0,
        y=0.5,
        xref="paper",
        yref="paper",
        xanchor="left",
        yanchor="middle",
        align="left",
        showarrow=False,
        font={"family": charts.FONT_FAMILY, "size": size_px, "color": "#222222"},
    )
    fig.update_layout(
        margin={"l": 22, "r": 10, "t": 0, "b": 0},
        xaxis={"visible": False},
        yaxis={"visible": False},
        paper_bgcolor="white",
        plot_bgcolor="white",
    )
    return fig


def _wrap(text: str, width_px: float, size_px: int) -> str:
    """`text` broken into lines (<br>) that fit `width_px` at `size_px`: a wide (Hangul) character counts
    as one em, another as about half."""

    def em(s: str) -> float:
        return sum(1.0 if unicodedata.east_asian_width(c) in "WF" else 0.55 for c in s)

    words, lines, line = text.split(" "), [], ""
    for word in words:
        trial = f"{line} {word}".strip()
        if line and em(trial) * size_px > width_px:
            lines.append(line)
            line = word
        else:
            line = trial
    lines.append(line)
    return "<br>".join(lines)


# --- frames: drawn a batch at a time, each handed on at once -----------------------------------------
def _boxes(size: tuple[int, int], tiles: dict, footer: bool) -> dict[str, tuple[int, int, int, int]]:
    """Each tile's pixel box (x, y, w, h) in the frame: the header on top, the charts' band, the footer."""
    w, h = size
    top = round(HEADER * h)
    bottom = h - (round(FOOTER * h) if footer else 0)
    boxes = {"header": (0, 0, w, top)}
    for name, (fx, fy, fw, fh) in tiles.items():
        x0, x1 = round(fx * w), round((fx + fw) * w)
        y0, y1 = top + round(fy * (bottom - top)), top + round((fy + fh) * (bottom - top))
        boxes[name] = (x0, y0, x1 - x0, y1 - y0)
    if footer:
        boxes["footer"] = (0, bottom, w, h - bottom)
    return boxes


def render_frames(
    datas: Sequence[RunData],
    size: tuple[int, int],
    lang: str = "en",
    labels: Sequence[str] | None = None,
    seconds: float = DEFAULT_SECONDS,
    progress: Callable[[float], None] | None = None,
) -> Iterator[np.ndarray]:
    """The video's frames, one RGB array (h, w, 3 uint8) per step of `video_steps(datas, seconds)`, each
    yielded as soon as its batch is drawn (close the iterator to stop early: its tiles are removed)."""
    from PIL import Image

    steps = video_steps(datas, seconds)
    if not steps:
        raise LocalizedError("err.video_no_probes")
    frames = _Frames(datas, lang, labels)
    footers = {False: frames.footer(False), True: frames.footer(True)}
    boxes = _boxes(size, frames.tiles, any(footers.values()))
    scale = size[1] / LAYOUT_HEIGHT
    texts = {"header": _wrap(frames.header(), boxes["header"][2] / scale - 40, 34)}
    if "footer" in boxes:
        width = boxes["footer"][2] / scale - 40
        texts.update({f"footer_{k}": _wrap(v, width, 28) for k, v in footers.items() if v})
    with _temporary_folder() as tmp, ExitStack() as chromium:
        for start in range(0, len(steps), BATCH):
            if start == BATCH:  # the first batch found a browser: one Chromium for the rest
                chromium.enter_context(_shared_chromium())
            batch = steps[start : start + BATCH]
            figs, paths, widths, heights = [], [], [], []
            with _plain_template():  # the export lock, for this batch only
                if start == 0:  # the text lines: drawn once
                    for name, text in texts.items():
                        box = boxes["header" if name == "header" else "footer"]
                        figs.append(_text_figure(text, 34 if name == "header" else 28, name == "header"))
                        paths.append(tmp / f"{name}.png")
                        widths.append(box[2])
                        heights.append(box[3])
                for step in batch:
                    for name, (_, _, w, h) in boxes.items():
                        if name not in ("header", "footer"):
                            figs.append(frames.figure(name, step))
                            paths.append(tmp / f"{step}_{name}.png")
                            widths.append(w)
                            heights.append(h)
                _write_pngs(figs, paths, widths, heights, scale)
            for step in batch:
                last = step == steps[-1]
                canvas = Image.new("RGB", size, "white")
                for name, (x, y, w, h) in boxes.items():
                    if name == "footer":
                        name = f"footer_{last}"
                        if name not in texts:
                            continue
                    tile_path = tmp / (f"{name}.png" if name in texts else f"{step}_{name}.png")
                    canvas.paste(_tile(tile_path, (w, h)), (x, y))
                for name in boxes:
                    (tmp / f"{step}_{name}.png").unlink(missing_ok=True)  # the disk holds one batch
                yield np.asarray(canvas)
            if progress:
                progress(min(1.0, (start + BATCH) / len(steps)) * 0.97)


def _tile(path: Path, size: tuple[int, int]) -> Any:
    """A drawn tile at its box's size; a tile that is gone (the temporary folder was removed meanwhile)
    is one sentence, not a traceback with the server's paths."""
    from PIL import Image

    try:
        with Image.open(path) as tile:
            if tile.size != size:  # a pixel off from rounding the CSS size
                return tile.convert("RGB").resize(size)
            return tile.convert("RGB")
    except OSError as e:
        if not path.parent.is_dir():
            raise LocalizedError("err.video_tiles_lost") from e
        # kaleido says nothing when it cannot write a tile: a full temporary folder, most often
        full = shutil.disk_usage(path.parent).free < 8 * 2**20
        reason = os.strerror(errno.ENOSPC) if full else os_reason(e)
        raise LocalizedError("err.video_temp", path=str(path.parent.parent), reason=reason) from e


@contextmanager
def _temporary_folder() -> Iterator[Path]:
    """The tiles' folder in the system's temporary folder; one that cannot be made (full, read-only) is
    one sentence."""
    try:
        tmp = tempfile.mkdtemp(prefix="ln-viz-video-")
    except OSError as e:
        raise LocalizedError("err.video_temp", path=tempfile.gettempdir(), reason=os_reason(e)) from e
    try:
        yield Path(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# kaleido's sync server (one Chromium), shared by the videos drawing at the same moment: started by the
# first that needs it, stopped by the last to finish; both under the export lock, as every call to it is.
_chromium_users = {"count": 0, "ours": False}


@contextmanager
def _shared_chromium() -> Iterator[None]:
    """kaleido's sync server for the batches inside: one Chromium start instead of one per batch (about 3 s
    each on 2 cores). Left alone if one runs already that no video started. Only once a one-shot batch has
    worked: without a browser the server's thread dies and its next call waits forever, where a one-shot
    call raises the error the user reads (err.export_browser)."""
    import kaleido

    with _EXPORT_LOCK:
        if _chromium_users["count"] == 0:
            running = kaleido._global_server.is_running()  # noqa: SLF001 - kaleido has no public "is it running"
            _chromium_users["ours"] = not running
            if not running:
                kaleido.start_sync_server(silence_warnings=True)
        _chromium_users["count"] += 1
    try:
        with warnings.catch_warnings():  # plotly passes its request headers, which only a one-shot call uses
            warnings.filterwarnings("ignore", "The kopts argument is ignored", UserWarning)
            yield
    finally:
        with _EXPORT_LOCK:
            _chromium_users["count"] -= 1
            if _chromium_users["count"] == 0 and _chromium_users["ours"]:
                kaleido.stop_sync_server(silence_warnings=True)


def _write_pngs(figs: list[go.Figure], paths: list[Path], widths: list[int], heights: list[int], scale: float) -> None:
    """Each figure laid out at (width / scale, height / scale) CSS pixels, drawn at `scale`: a smaller
    video is the 1080p frame scaled down, not the charts crammed into fewer CSS pixels."""
    try:
        css_w = [round(w / scale) for w in widths]
        css_h = [round(h / scale) for h in heights]
        pio.write_images(figs, paths, format="png", width=css_w, height=css_h, scale=scale)
    except OSError as e:
        raise LocalizedError("err.video_temp", path=str(paths[0].parent.parent), reason=os_reason(e)) from e
    except RuntimeError as e:  # kaleido says "Kaleido requires Google Chrome..." when it finds no browser
        if ("Chrome" in str(e) or "Chromium" in str(e)) and not _has_browser():
            raise LocalizedError("err.export_browser") from e
        if not paths[0].parent.is_dir():
            raise LocalizedError("err.video_tiles_lost") from e
        # a browser is there: it could not start or write, most often for a full temporary folder
        raise LocalizedError("err.video_temp", path=tempfile.gettempdir(), reason=os_reason(e)) from e


def _has_browser() -> bool:
    """Whether kaleido finds a Chromium or Chrome (as it looks: BROWSER_PATH, then the usual names)."""
    try:
        from choreographer.browsers.chromium import Chromium

        return Chromium.find_browser(skip_local=False) is not None  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - an older choreographer: look on the PATH
        names = ("chromium", "chromium-browser", "google-chrome", "chrome")
        return bool(os.environ.get("BROWSER_PATH")) or any(shutil.which(n) for n in names)


def os_reason(e: BaseException) -> str:
    """An OS error's own words ("No space left on device"), also when a library wrapped it."""
    while e is not None:
        if isinstance(e, OSError) and e.strerror:
            return e.strerror
        if isinstance(e, OSError) and e.errno:
            return os.strerror(e.errno)
        e = e.__cause__ or e.__context__  # type: ignore[assignment]
    return os.strerror(errno.EIO)


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
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-", suffix=f".part.{fmt}")
    except OSError as e:
        raise LocalizedError("err.write_failed", path=str(path), reason=os_reason(e)) from e
    os.close(fd)
    part = Path(name)
    try:
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
