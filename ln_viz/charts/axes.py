"""Axes that hold still while a run streams in: ranges rounded out to whole decades or a 1-2-5 grid,
log axes and colorbars labelled in real units at one readable size, and layer-axis ticks."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from ln_viz.charts.style import (
    _FITTED,
    _MARGIN,
    _fit_y_titles,
    _legend_px,
    _plot_height,
    _scale,
    _text_px,
    _wrap,
    scaled_px,
)

_NICE = (1.0, 2.0, 5.0)
_FINE = (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 7.0)  # ticks within one decade (a loss spans 1-5 nats)


def _positive(values: np.ndarray, at_least: tuple[float, float] | None) -> np.ndarray:
    """The finite positive values, plus `at_least` (two values the range must hold)."""
    v = np.asarray(values, dtype=np.float64).ravel()
    v = v[np.isfinite(v) & (v > 0)]
    if at_least is not None:
        v = np.concatenate([v, np.asarray(at_least, dtype=np.float64)])
    return v


def _decade_range(values: np.ndarray, at_least: tuple[float, float] | None = None) -> tuple[int, int] | None:
    """Whole decades (lo, hi exponents) around the finite positive values: ranges change only when data
    crosses a power of ten, so the axes stay still while a run streams in."""
    v = _positive(values, at_least)
    if v.size == 0:
        return None
    lo, hi = math.floor(math.log10(v.min())), math.ceil(math.log10(v.max()))
    if hi <= lo:
        hi = lo + 1
    return lo, hi


def _nice_log_range(values: np.ndarray, at_least: tuple[float, float] | None = None) -> tuple[float, float] | None:
    """(lo, hi) on a 1-2-5 grid around the finite positive values: tighter than whole decades, and it
    still only moves when the data passes a grid value (so a streaming axis rarely moves)."""
    rng = _decade_range(values, at_least)
    if rng is None:
        return None
    v = _positive(values, at_least)
    grid = [m * 10.0**k for k in range(rng[0] - 1, rng[1] + 1) for m in _NICE]
    lo = max(g for g in grid if g <= v.min() * (1 + 1e-9))
    hi = min(g for g in grid if g >= v.max() * (1 - 1e-9))
    if hi <= lo:
        hi = next(g for g in grid if g > lo)
    return lo, hi


def _short_number(v: float, exponent: bool = False) -> str:
    """0.5, 20, or 5e-4 style (`exponent`, or when very small or large)."""
    if v == 0:
        return "0"
    if not exponent and 1e-3 <= abs(v) < 1e4:
        return f"{v:g}"
    mant, exp = f"{v:.1e}".split("e")
    mant = mant.rstrip("0").rstrip(".")
    return f"{mant}e{int(exp)}"


def _log_axis(rng: tuple[float, float], max_ticks: int | None = None) -> dict[str, Any]:
    """A log axis over `rng` (real units) with ticks at 1-2-5 (or whole decades over a wide range), all
    labels the same size (Plotly's own minor labels are too small to read on a projector); at most
    `max_ticks` of them on a short axis."""
    lo, hi = rng
    ticks = _log_ticks(lo, hi, max_ticks)
    small = min(ticks) < 1e-3  # then every tick below 1 in e-notation, so the column reads evenly
    return {
        "type": "log",
        "range": [math.log10(lo), math.log10(hi)],
        "tickmode": "array",
        "tickvals": ticks,
        "ticktext": [_short_number(v, exponent=small and v < 1) for v in ticks],
    }


def _log_axis_up_to(values: np.ndarray, top: float) -> dict[str, Any]:
    """A log axis from a 1-2-5 grid value under the finite positive `values` (it moves only when a value
    passes one, so the axis holds still while a run streams in) up to a fixed `top`, at least a factor
    of two tall; within one decade, ticks at 1, 1.5, 2, 3, 4, 5, 7."""
    lo = (_nice_log_range(values) or (1.0, top))[0]
    lo = min(lo, top / 2)
    axis = _log_axis((lo, top))
    if math.log10(top / lo) <= 1:
        k = math.floor(math.log10(lo))
        ticks = [m * 10.0**j for j in (k, k + 1) for m in _FINE]
        axis["tickvals"] = [v for v in ticks if lo * (1 - 1e-9) <= v <= top]
        axis["ticktext"] = [_short_number(v) for v in axis["tickvals"]]
    return axis


def _log_annotations(fig: go.Figure) -> None:
    """Labels placed at a value on the y axis moved to a log y axis's coordinates: Plotly takes an
    annotation's y there as log10 of the value."""
    for note in fig.layout.annotations:
        if note.yref in (None, "y") and note.y is not None and note.y > 0:
            note.y = math.log10(note.y)


def _log_ticks(lo: float, hi: float, max_ticks: int | None = None) -> list[float]:
    """1-2-5 ticks over up to 3 decades, whole decades up to 8, then every 2nd, 3rd... decade; with
    `max_ticks`, decades only and as many as fit."""
    k0, k1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    span = k1 - k0
    mults = _NICE if span <= 3 and (max_ticks is None or 3 * span <= max_ticks) else (1.0,)
    every = 1 if span <= 8 else math.ceil(span / 7)
    anchor = k1
    if max_ticks is not None and span + 1 > max_ticks:
        every = max(every, math.ceil(span / max(max_ticks - 1, 1)))
        anchor = math.floor(math.log10(hi) + 1e-9)  # the top label on the axis, not above it
    ticks = [m * 10.0**k for k in range(k0, k1 + 1) if (k - anchor) % every == 0 for m in mults]
    return [v for v in ticks if lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9)]


def _log10(x: np.ndarray) -> np.ndarray:
    """log10 with NaN (not -inf, not a warning) for zero, negative and non-finite values."""
    x = np.asarray(x, dtype=np.float64)
    out = np.full(x.shape, np.nan)
    ok = np.isfinite(x) & (x > 0)
    out[ok] = np.log10(x[ok])
    return out


def _layer_ticks(L: int, start: int = 1) -> dict[str, Any]:
    """Layer-axis ticks: every layer up to 12, else about 8 evenly spread (always the first and last)."""
    if L - start + 1 <= 12:
        return {"tickmode": "array", "tickvals": list(range(start, L + 1))}
    step = next(s for s in (2, 4, 5, 8, 10, 20, 25, 50) if L / s <= 8)
    vals = sorted({start, *range(step, L + 1, step), L})
    if L % step and L - vals[-2] < step / 2:  # the last round tick crowds L
        vals.remove(vals[-2])
    return {"tickmode": "array", "tickvals": vals}


def _colorbar(
    title: str,
    tickvals: Sequence[float],
    ticktext: Sequence[str],
    lecture: bool,
    top: float | None = None,
    height: int | None = None,
    bottom: int = 60,
    top_px: int | None = None,
) -> dict[str, Any]:
    """A vertical colorbar with its title on top, wrapped (on the right side the title is drawn over long
    tick labels and cut by the figure's edge). A tick at the very top (`top`) is left out: its label,
    centred on the bar's end, would run into the title. On a short chart (`height`, px, of the figure)
    only every 2nd, 3rd... label is kept, so labels never sit on top of each other (`bottom`: px under
    the plot, more where a step slider sits there; `top_px`: px over it when the chart knows its title's
    margin, else 70 px scaled as the text is)."""
    if top is not None and len(tickvals) > 2 and math.isclose(tickvals[-1], top, abs_tol=1e-6):
        tickvals, ticktext = tickvals[:-1], ticktext[:-1]
    font = _text_px(14, lecture)
    wrapped = _wrap(title)
    above = round(70 * _scale(lecture)) if top_px is None else top_px
    bar_px = 0.9 * _plot_height(height, above, bottom) - font * 1.3 * (wrapped.count("<br>") + 1)
    every = max(1, math.ceil(1.6 * font * len(tickvals) / max(bar_px, font)))
    keep = list(range(len(tickvals) - 1, -1, -every))[::-1]  # always the largest, the one readers look for
    return {
        "title": {"text": wrapped, "side": "top", "font": {"size": font}},
        "tickvals": [tickvals[i] for i in keep],
        "ticktext": [ticktext[i] for i in keep],
        "tickfont": {"size": font},
        "thickness": scaled_px(16, lecture),
        "len": 0.9,
    }


def _log_colorbar(title: str, lo: float, hi: float, lecture: bool, height: int | None = None) -> dict[str, Any]:
    """A colorbar for log10 colour values, labelled in real units (1-2-5 or decade ticks)."""
    axis = _log_axis((lo, hi))
    ticks = [math.log10(v) for v in axis["tickvals"]]
    return _colorbar(title, ticks, axis["ticktext"], lecture, math.log10(hi), height)


def fit_to_height(fig: go.Figure, height: int, lecture: bool) -> None:
    """Give a figure built without a height (fitted to Plotly's 450 px) the `height` its box has, its y titles
    fitted again to the plot that height leaves: the lecture view's 848-px loss chart had its title shrunk to
    21-22 px as if it were 450 px tall (UX round 4 L4). Each redraw of a live chart comes here: the fit is
    cached and only a changed title is set (about 1 ms a chart, 6 ms with update_layout)."""
    fig.layout.height = height
    meta = fig.layout.meta
    given = meta.get(_FITTED) if isinstance(meta, dict) else None
    if not given:
        return
    margin = fig.layout.margin
    below = fig.layout.legend.yref == "container"
    bottom = (margin.b if margin.b is not None else _MARGIN["b"]) + (_legend_px(fig, lecture) if below else 0)
    plot_px = _plot_height(height, margin.t or 0, bottom + 40)
    for name, (text, size) in given.items():
        title = fig.layout[name].title
        lo, hi = fig.layout[name].domain or (0.0, 1.0)
        text, size = _refitted(text, size, round(plot_px * (hi - lo)), lecture)
        if title.text != text:
            title.text = text
        if size is not None and title.font.size != size:
            title.font.size = size


@functools.lru_cache(maxsize=256)
def _refitted(text: str | None, size: int | None, span_px: int, lecture: bool) -> tuple[str | None, int | None]:
    """A y title as given (`text`, its font `size` or None), fitted to an axis `span_px` long."""
    layout = {"yaxis": {"title": {"text": text, **({"font": {"size": size}} if size else {})}}}
    _fit_y_titles(layout, span_px, lecture)
    title = layout["yaxis"]["title"]
    return title["text"], title.get("font", {}).get("size")
