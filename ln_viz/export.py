"""A run's charts as files: PNG and SVG (kaleido, with the system's Chromium, offline) and standalone
interactive HTML (plotly.js embedded, so it opens without a network; the distribution chart keeps its
frames, step slider and Play button). Plus zip archives of charts, tables and the run file, the bytes
behind the Runs page's download buttons.

    export_charts(data, "out/", formats=("png", "svg", "html"), lang="en")
    -> out/loss.png, out/loss.svg, out/loss.html, out/grad_heatmap.png, ...

The six charts of every run (CHARTS), then, for a run that measured the instability probes, their
charts (INSTABILITY_CHARTS: attention logits, log Z, massive activations, and DyT's saturation for a DyT
run), and for a run that measured issue 33's update probes theirs (UPDATE_CHARTS: the angular update, Adam's
preconditioner lag, the norms' smallest per-token input scale); `charts_for(data)` says which.

Static images draw the distribution chart, the layer profile and the per-layer instability charts at
the last probe step, without the slider and Play button (they do nothing on paper); the HTML files
animate. Every PNG and SVG of one
call comes from one Chromium start (`plotly.io.write_images`), about 3-4 s on 2 cores.
No streamlit here: the page, the CLI and tests share this module.
"""

from __future__ import annotations

import heapq
import io
import itertools
import tempfile
import threading
import zipfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import plotly.graph_objects as go
import plotly.io as pio

from ln_viz import charts
from ln_viz.i18n import LocalizedError

if TYPE_CHECKING:
    from ln_viz.snapshot import RunData

CHART_FORMATS = ("png", "svg", "html")
IMAGE_FORMATS = ("png", "svg")
PNG_SCALE = 2  # device pixels per CSS pixel: sharp on slides and in print


@dataclass(frozen=True)
class ChartSpec:
    """One chart of a run: its file name, how to build it, and its size in CSS pixels as an image."""

    name: str
    build: Callable[[RunData, str, bool], go.Figure]  # (data, lang, animate) -> figure
    width: int
    height: int


CHARTS: tuple[ChartSpec, ...] = (
    ChartSpec("loss", lambda d, lang, _: charts.loss_chart(d, lang=lang), 1200, 600),
    ChartSpec("grad_heatmap", lambda d, lang, _: charts.grad_heatmap(d, lang=lang), 1000, 650),
    ChartSpec("update_ratio", lambda d, lang, _: charts.update_ratio_chart(d, lang=lang), 1000, 650),
    ChartSpec("act_dist", lambda d, lang, anim: charts.act_dist(d, lang=lang, animate=anim), 1000, 700),
    ChartSpec("layer_profile", lambda d, lang, _: charts.layer_profile(d, lang=lang), 1200, 600),
    ChartSpec("attn_entropy", lambda d, lang, _: charts.attention_entropy_chart(d, lang=lang), 1000, 650),
)
# The instability probes' charts (issue 19; the Live page's expander), at the last probe step where they
# show one step: only for a run that measured those probes, DyT's saturation only for a DyT run.
INSTABILITY_CHARTS: tuple[ChartSpec, ...] = (
    ChartSpec("attn_logit", lambda d, lang, _: charts.attn_logit_chart(d, lang=lang), 1000, 650),
    ChartSpec("log_z", lambda d, lang, _: charts.log_z_chart(d, lang=lang), 1000, 650),
    ChartSpec("massive_act", lambda d, lang, _: charts.massive_act_chart(d, lang=lang), 1000, 600),
    ChartSpec("dyt_saturation", lambda d, lang, _: charts.dyt_saturation_chart(d, lang=lang), 1000, 600),
)
# Issue 33's update probes (the same expander): only for a run that measured them.
UPDATE_CHARTS: tuple[ChartSpec, ...] = (
    ChartSpec("angular_update", lambda d, lang, _: charts.angular_update_chart(d, lang=lang), 1000, 650),
    ChartSpec("precond_lag", lambda d, lang, _: charts.precond_lag_chart(d, lang=lang), 1000, 650),
    ChartSpec("norm_min_rms", lambda d, lang, _: charts.norm_min_rms_chart(d, lang=lang), 1000, 600),
)


def charts_for(data: RunData) -> tuple[ChartSpec, ...]:
    """The charts an export of `data` writes, in order: the six of every run, then the instability
    probes' when the run measured them (a run recorded before them has nothing there to draw)."""
    if not charts.has_instability_probes(data):
        return CHARTS
    extra = [s for s in INSTABILITY_CHARTS if s.name != "dyt_saturation" or charts.is_dyt(data)]
    updates = UPDATE_CHARTS if charts.has_update_probes(data) else ()
    return CHARTS + tuple(extra) + updates


class TurnLock:
    """A lock handed out in turns: to the waiter with the least work left (`priority`: a video's frames still
    to draw; 0 for a one-shot export, a pack or chart files), the earliest first among equals. With
    threading.Lock the thread that releases it may take it again at once, so a long video's next batch
    could starve a second export; in arrival order a small video beside a long one took twice its time."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._waiting: list[tuple[int, int]] = []
        self._arrivals = itertools.count()
        self._held = False

    def acquire(self, priority: int = 0) -> None:
        me = (priority, next(self._arrivals))
        with self._cond:
            heapq.heappush(self._waiting, me)
            try:
                while self._held or self._waiting[0] != me:
                    self._cond.wait()
            except BaseException:  # interrupted while waiting: out of the line, the others not kept waiting
                self._waiting.remove(me)
                heapq.heapify(self._waiting)
                self._cond.notify_all()
                raise
            heapq.heappop(self._waiting)
            self._held = True

    def release(self) -> None:
        with self._cond:
            self._held = False
            self._cond.notify_all()

    def __enter__(self) -> None:
        self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


# One drawing at a time per process: the default template is process-wide state (two overlapping ones would
# restore each other's value), and kaleido's shared Chromium (its sync server) answers one caller at a time.
# A long export (a video) takes it for one batch of frames at a time, so the others' turns come in between
# (hostile round 4, H1: a 512-step video held it for 14 minutes).
_EXPORT_LOCK = TurnLock()


@contextmanager
def _plain_template(priority: int = 0) -> Iterator[None]:
    """No default template while figures are built and written: `import streamlit` sets it to
    "streamlit", and an export must look the same from the app and from the CLI. Holds _EXPORT_LOCK (taken
    with `priority`, the work left: TurnLock): keep it to one short piece of drawing."""
    _EXPORT_LOCK.acquire(priority)
    try:
        old = pio.templates.default
        pio.templates.default = "none"  # the charts bring their own small template (ln_viz/charts/style.py)
        try:
            yield
        finally:
            pio.templates.default = old
    finally:
        _EXPORT_LOCK.release()


def _check_formats(formats: Sequence[str]) -> tuple[str, ...]:
    formats = tuple(dict.fromkeys(formats))  # keep order, drop repeats
    bad = [f for f in formats if f not in CHART_FORMATS]
    if bad or not formats:
        raise LocalizedError("err.choice", "--format", value=bad[0] if bad else "", choices=", ".join(CHART_FORMATS))
    return formats


def out_folder(path: str | Path) -> Path:
    """The --out folder of an export, made if missing; a file in its place, or one that cannot be made, is a
    LocalizedError (one sentence)."""
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise LocalizedError("err.export_charts_not_dir", path=str(out))
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise LocalizedError("err.write_failed", path=str(out), reason=e.strerror) from e
    return out


def export_charts(
    data: RunData,
    out_dir: str | Path,
    formats: Sequence[str] = CHART_FORMATS,
    lang: str = "en",
) -> list[Path]:
    """Write each chart of `data` into `out_dir` as `<chart>.<format>`; the paths written, in order.

    A bad format or an unwritable folder is a LocalizedError (one sentence)."""
    formats = _check_formats(formats)
    out = out_folder(out_dir)
    written: list[Path] = []
    images: list[tuple[go.Figure, Path, ChartSpec]] = []
    specs = charts_for(data)
    with _plain_template():
        for spec in specs:
            if any(f in IMAGE_FORMATS for f in formats):
                static = spec.build(data, lang, False)
                images += [(static, out / f"{spec.name}.{f}", spec) for f in formats if f in IMAGE_FORMATS]
            if "html" in formats:
                path = out / f"{spec.name}.html"
                _write_html(spec.build(data, lang, True), path)
                written.append(path)
        if images:
            _write_images(images)
    written += [path for _, path, _ in images]
    order = {(spec.name, f): i for i, (spec, f) in enumerate((s, f) for s in specs for f in formats)}
    return sorted(written, key=lambda p: order[(p.stem, p.suffix[1:])])


def _write_html(fig: go.Figure, path: Path) -> None:
    """A standalone page: plotly.js inside (no CDN), no MathJax, the animation waiting for Play."""
    try:
        fig.write_html(path, include_plotlyjs=True, include_mathjax=False, full_html=True, auto_play=False)
    except OSError as e:
        raise LocalizedError("err.write_failed", path=str(path), reason=e.strerror) from e


def _write_images(images: list[tuple[go.Figure, Path, ChartSpec]]) -> None:
    """Every PNG and SVG in one kaleido batch: one Chromium start instead of one per file."""
    figs, paths, specs = zip(*images)
    try:
        pio.write_images(
            list(figs),
            list(paths),
            format=[p.suffix[1:] for p in paths],
            width=[s.width for s in specs],
            height=[s.height for s in specs],
            scale=[PNG_SCALE if p.suffix == ".png" else 1 for p in paths],
        )
    except OSError as e:
        raise LocalizedError("err.write_failed", path=str(paths[0].parent), reason=e.strerror) from e
    except RuntimeError as e:  # kaleido says "Kaleido requires Google Chrome..." when it finds no browser
        if "Chrome" in str(e) or "Chromium" in str(e):
            raise LocalizedError("err.export_browser") from e
        raise


# --- zip archives for download buttons ------------------------------------------------------------------
def zip_files(paths: Sequence[Path], root: Path | None = None) -> bytes:
    """A zip archive (deflated) of `paths`, named relative to `root` (default: their file names)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
        for path in paths:
            zf.write(path, arcname=str(path.relative_to(root)) if root else path.name)
    return buf.getvalue()


def named_zip(files: Sequence[tuple[str, bytes]]) -> bytes:
    """A zip archive of (name, bytes) pairs, stored as they are: run files are gzip already."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for name, data in files:
            zf.writestr(name, data)
    return buf.getvalue()


def charts_zip(data: RunData, formats: Sequence[str] = CHART_FORMATS, lang: str = "en") -> bytes:
    """`export_charts` into a temporary folder, returned as one zip archive's bytes."""
    with tempfile.TemporaryDirectory(prefix="ln-viz-charts-") as tmp:
        return zip_files(export_charts(data, tmp, formats, lang))


def tables_zip(data: RunData, fmt: str = "csv", header: dict | None = None) -> bytes:
    """The run's tidy tables (ln_viz.tables.export_tables: csv or parquet, plus info.json) as a zip archive."""
    from ln_viz.tables import export_tables

    with tempfile.TemporaryDirectory(prefix="ln-viz-tables-") as tmp:
        return zip_files(export_tables(data, tmp, fmt, header=header))


def run_file_bytes(data: RunData, label: str | None = None, created: float | None = None) -> bytes:
    """The run file (its format: ln_viz/runfile/__init__.py), gzip-compressed: what `runs export --format run`
    writes."""
    from ln_viz.runfile import encode_run, run_document

    return encode_run(run_document(data, label=label, created=created), compress=True)
