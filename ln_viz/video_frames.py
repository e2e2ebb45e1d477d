"""A video's frames (ln_viz/video.py): which probe steps it draws (`video_steps`: STEP_RATE a second, at
most MAX_FRAMES, thinned evenly, the first and the last kept), and the drawing: the charts of BATCH steps
at a time (ln_viz.video_charts) to kaleido in one call, each at its tile's size, pasted into frames
(Pillow) that are handed on one at a time. Each batch holds the process's export lock
(ln_viz.export._EXPORT_LOCK, the least work left first) only while it is drawn, so other exports are drawn
between a long video's batches; the batches after the first share one Chromium (kaleido's sync server)
with any other video drawing at that moment. No streamlit here."""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from ln_viz.export import _EXPORT_LOCK, _plain_template
from ln_viz.i18n import LocalizedError
from ln_viz.leftovers import owned
from ln_viz.video_charts import FrameCharts, text_figure, wrap

if TYPE_CHECKING:
    from ln_viz.snapshot import RunData

DEFAULT_SECONDS = 15.0
STEP_RATE = 4  # probe steps shown a second: each for 0.25 s, as the lecture pack's Play
MAX_FRAMES = 120  # frames drawn at most, whatever the run and `seconds`: about 3 min of drawing at 1080p
BATCH = 4  # probe steps per kaleido call (and per turn of the export lock): about 3-6 s at 1080p
LAYOUT_HEIGHT = 1080  # CSS pixels the charts are laid out in, whatever the video's size (the lecture view's)
HEADER = 0.06  # the header line's share of the frame's height (34 px at 1080, as the lecture view's title)
FOOTER = 0.085  # the question / takeaway's share (28 px, up to two lines)


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
    frames = FrameCharts(datas, lang, labels)
    footers = {False: frames.footer(False), True: frames.footer(True)}
    boxes = _boxes(size, frames.tiles, any(footers.values()))
    scale = size[1] / LAYOUT_HEIGHT
    texts = {"header": wrap(frames.header(), boxes["header"][2] / scale - 40, 34)}
    if "footer" in boxes:
        width = boxes["footer"][2] / scale - 40
        texts.update({f"footer_{k}": wrap(v, width, 28) for k, v in footers.items() if v})
    with _temporary_folder() as tmp, ExitStack() as chromium:
        for start in range(0, len(steps), BATCH):
            if start == BATCH:  # the first batch found a browser: one Chromium for the rest
                chromium.enter_context(_shared_chromium())
            batch = steps[start : start + BATCH]
            figs, paths, widths, heights = [], [], [], []
            with _plain_template(len(steps) - start):  # the export lock for this batch, the least work first
                if start == 0:  # the text lines: drawn once
                    for name, text in texts.items():
                        box = boxes["header" if name == "header" else "footer"]
                        figs.append(text_figure(text, 34 if name == "header" else 28, name == "header"))
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
def _temporary_folder(tag: str = "") -> Iterator[Path]:
    """The tiles' folder in the system's temporary folder, named with this process's id and locked while it is
    used (`sweep_stale` removes it if the process is killed); one that cannot be made (full, read-only) is
    one sentence."""
    try:
        tmp = tempfile.mkdtemp(prefix=f"{TILES_PREFIX}{os.getpid()}-{tag}")
    except OSError as e:
        raise LocalizedError("err.video_temp", path=tempfile.gettempdir(), reason=os_reason(e)) from e
    try:
        with owned(tmp):
            yield Path(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --- what a SIGKILLed export leaves (hostile round 4 L5): its tile folder and its hidden part file -------------
# SIGKILL cannot be caught, so the next export sweeps them (`ln_viz.leftovers`): only our own names
# (`ln-viz-video-<pid>-…`, `.<stem>-ln-viz-<pid>-….part.<fmt>`), only those whose process is gone and whose lock no
# one holds. kaleido's two folders (the page Chromium loads, Chromium's profile) are made inside ours
# (`kaleido_options`), so they go with it; made by kaleido itself they had Python's `tmp…` names, nothing to say
# whose they were.
TILES_PREFIX = "ln-viz-video-"


# kaleido's sync server (one Chromium), shared by the videos drawing at the same moment: started by the
# first that needs it, stopped by the last to finish; both under the export lock, as every call to it is. Its
# folders are in one of ours (`ln-viz-video-<pid>-chromium-…`), held while it runs: `folder` below.
_chromium_users: dict[str, Any] = {"count": 0, "ours": False, "folder": None}


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
                folder = ExitStack()
                tmp = folder.enter_context(_temporary_folder("chromium-"))
                try:
                    kaleido.start_sync_server(silence_warnings=True, **kaleido_options(tmp))
                except BaseException:
                    folder.close()
                    raise
                _chromium_users["folder"] = folder
        _chromium_users["count"] += 1
    try:
        with warnings.catch_warnings():  # plotly passes its request headers, which only a one-shot call uses
            warnings.filterwarnings("ignore", "The kopts argument is ignored", UserWarning)
            yield
    finally:
        with _EXPORT_LOCK:
            _chromium_users["count"] -= 1
            if _chromium_users["count"] == 0 and _chromium_users["ours"]:
                try:
                    kaleido.stop_sync_server(silence_warnings=True)
                finally:
                    _chromium_users["folder"].close()  # its folders, once Chromium has exited
                    _chromium_users["folder"] = None


def _write_pngs(figs: list[go.Figure], paths: list[Path], widths: list[int], heights: list[int], scale: float) -> None:
    """Each figure laid out at (width / scale, height / scale) CSS pixels, drawn at `scale`: a smaller
    video is the 1080p frame scaled down, not the charts crammed into fewer CSS pixels."""
    import kaleido

    try:
        specs = [
            {"fig": fig.to_dict(), "path": path, "topojson": pio.defaults.topojson,
             "opts": {"format": "png", "width": round(w / scale), "height": round(h / scale), "scale": scale}}
            for fig, path, w, h in zip(figs, paths, widths, heights)
        ]  # fmt: skip
        # as pio.write_images, with kaleido's folders in the tiles' (a shared Chromium has its own: `kopts` unused)
        kaleido.write_fig_from_object_sync(specs, kopts=kaleido_options(paths[0].parent))
    except OSError as e:
        if not paths[0].parent.is_dir():
            raise LocalizedError("err.video_tiles_lost") from e
        raise LocalizedError("err.video_temp", path=str(paths[0].parent.parent), reason=os_reason(e)) from e
    except RuntimeError as e:  # kaleido says "Kaleido requires Google Chrome..." when it finds no browser
        if ("Chrome" in str(e) or "Chromium" in str(e)) and not _has_browser():
            raise LocalizedError("err.export_browser") from e
        if not paths[0].parent.is_dir():
            raise LocalizedError("err.video_tiles_lost") from e
        # a browser is there: it could not start or write, most often for a full temporary folder
        raise LocalizedError("err.video_temp", path=tempfile.gettempdir(), reason=os_reason(e)) from e


def kaleido_options(folder: Path) -> dict[str, Any]:
    """kaleido's options that make its two temporary folders inside `folder` (ours: removed when the export ends,
    swept if it is killed), not in the system's temporary folder under Python's `tmp…` names: the page Chromium
    loads (kaleido writes its index.html to a folder of its own unless it is given one; this is the same page)
    and Chromium's profile (choreographer's `tmp_dir`). Nothing process-wide is changed (`tempfile.tempdir` is
    the whole server's)."""
    from kaleido import PageGenerator

    index = folder / "kaleido-index.html"
    if not index.exists():
        index.write_text(PageGenerator().generate_index(), encoding="utf-8")
    return {"page_generator": str(index), "tmp_dir": str(folder)}


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
