"""Several seeds of one setting, drawn as one: the mean training loss with a band over the seeds (min-max
for fewer than 5 seeds, mean +- 1 sd from 5 on, the legend says which), and the median seed, the one whose
final loss is the median, which the heatmaps, the profile and the probes show for the side (issue 20).

The band and the median are prepared apart from the drawing (`seed_band`, `median_seed`); the chart
(`seed_loss_chart`) keeps the compared loss chart's axes, unigram line, title and uirevision, so one seed
per side is the same figure as `loss_chart`'s, byte for byte."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import plotly.graph_objects as go

from ln_viz.charts.init_lab import _band, _rgba
from ln_viz.charts.loss import _divergence_marker, _loss_layout, _prepare_loss, loss_chart
from ln_viz.charts.lr_axis import _lr_key, compare_schedules
from ln_viz.charts.reference import reference_line
from ln_viz.charts.sample import MAX_LOSS_POINTS, downsample_index
from ln_viz.charts.style import GREY, _empty_note, _f32, _hover, _layout, _note_lines
from ln_viz.i18n import t
from ln_viz.snapshot import RunData

SD_FROM = 5  # seeds: from this many on the band is mean +- 1 sd; below, the range (min-max) of the seeds
# The band's fill in the lecture view, and its edges there: at the page's 0.2 a projector washed the Okabe-Ito
# tints out to near white (issue 32); the colours stay the same, colour-blind-safe hues, only stronger, and an
# edge line in the side's own dash keeps a band's outline where the two bands overlap.
LECTURE_FILL = 0.4
LECTURE_EDGE = 0.8


class SeedBand(NamedTuple):
    """One side's seeds over the steps they have all reached: the mean and the band's two edges."""

    steps: np.ndarray  # int, 1..last: the steps every seed still training has reached
    mean: np.ndarray  # nats, over the seeds with a finite loss at that step (nan where none has)
    low: np.ndarray  # nats: the band's lower edge (min, or mean - sd)
    high: np.ndarray  # nats: its upper edge (max, or mean + sd)
    kind: str  # "range" (min-max) or "sd" (mean +- 1 sample sd)
    n: int  # seeds


def band_kind(n: int) -> str:
    """What the band of `n` seeds spans: "range" (min-max) below SD_FROM seeds, else "sd"."""
    return "sd" if n >= SD_FROM else "range"


def _common_last(datas: Sequence[RunData]) -> int:
    """The last step every seed has reached, leaving out a seed that diverged (it ended early: its loss
    stops there, the others' band goes on); when all diverged, the longest."""
    ends = [int(d.scalars["step"][-1]) if d.scalars["step"] else 0 for d in datas]
    going = [e for e, d in zip(ends, datas) if d.diverged_at is None]
    return min(going) if going else max(ends, default=0)


def seed_band(datas: Sequence[RunData], key: str = "loss") -> SeedBand:
    """The mean of scalar `key` over the seeds at each step 1..the last step all have reached, with the
    band of `band_kind(len(datas))`; a non-finite value (a diverged seed) leaves that seed out there."""
    last = _common_last(datas)
    grid = np.full((len(datas), last), np.nan)
    for i, d in enumerate(datas):
        steps = np.asarray(d.scalars["step"], dtype=np.int64)
        values = np.asarray(d.scalars[key], dtype=np.float64)
        keep = (steps >= 1) & (steps <= last)
        grid[i, steps[keep] - 1] = values[keep]
    grid[~np.isfinite(grid)] = np.nan
    counts = np.sum(~np.isnan(grid), axis=0)
    mean = np.where(counts > 0, np.where(np.isnan(grid), 0.0, grid).sum(axis=0) / np.maximum(counts, 1), np.nan)
    kind = band_kind(len(datas))
    if kind == "sd":
        dev = np.where(np.isnan(grid), 0.0, (grid - mean) ** 2)
        sd = np.where(counts > 1, np.sqrt(dev.sum(axis=0) / np.maximum(counts - 1, 1)), 0.0)
        low, high = mean - sd, mean + sd
    else:
        low = np.where(counts > 0, np.where(np.isnan(grid), np.inf, grid).min(axis=0), np.nan)
        high = np.where(counts > 0, np.where(np.isnan(grid), -np.inf, grid).max(axis=0), np.nan)
    return SeedBand(np.arange(1, last + 1), mean, low, high, kind, len(datas))


def median_seed(datas: Sequence[RunData]) -> int:
    """The index of the seed whose final loss is the median (the lower one of an even count); a seed with
    no final loss (diverged at once) counts as the highest."""
    finals = [d.final_loss() for d in datas]
    keys = [f if f is not None and math.isfinite(f) else math.inf for f in finals]
    order = sorted(range(len(datas)), key=lambda i: (keys[i], i))
    return order[(len(order) - 1) // 2]


def seed_line_name(label: str, n: int, lang: str) -> str:
    """The legend's words for one side: "Pre-LN: mean of 3 seeds, band min-max"."""
    band = t(f"chart.seed_band.{band_kind(n)}", lang)
    return t("chart.seeds_mean", lang, run=label, n=n, band=band)


def _band_traces(
    fig: go.Figure, band: SeedBand, name: str, style: tuple[str, str], top: float, lang: str, lecture: bool
) -> None:
    """The band (a filled polygon, no legend entry of its own) and the mean line over it, clipped at `top`;
    in the lecture view the band is stronger, with edges (LECTURE_FILL)."""
    color, dash = style
    if band.steps.size == 0:
        fig.add_trace(go.Scatter(x=[], y=[], mode="lines", name=name, line={"color": color, "dash": dash}))
        return
    idx = downsample_index(np.nan_to_num(band.mean, nan=0.0), MAX_LOSS_POINTS)
    x = band.steps[idx].astype(np.int32)

    def clip(v: np.ndarray) -> np.ndarray:
        return _f32(np.where(np.isfinite(v), np.minimum(v, top * 1.02), np.nan))

    area = _band(x, clip(band.low[idx]), clip(band.high[idx]), color, name, name)  # Init lab's band
    if lecture:
        area.update(fillcolor=_rgba(color, LECTURE_FILL), line={"width": 1, "color": _rgba(color, LECTURE_EDGE),
                                                                "dash": dash})  # fmt: skip
    fig.add_trace(area)
    few = int(np.isfinite(band.mean[idx]).sum()) < 3
    fig.add_trace(
        go.Scatter(
            x=x,
            y=clip(band.mean[idx]),
            customdata=np.stack([_f32(band.mean[idx]), _f32(band.low[idx]), _f32(band.high[idx])], axis=-1),
            mode="lines+markers" if few else "lines",
            name=name,
            legendgroup=name,
            line={"color": color, "width": 3, "dash": dash},
            hovertemplate=_hover(
                lang,
                ("chart.step", "%{x}"),
                ("chart.mean_loss", "%{customdata[0]:.3f}"),
                ("chart.band", "%{customdata[1]:.3f}-%{customdata[2]:.3f}"),
            ),
        )
    )


def seed_loss_chart(
    groups: Sequence[Sequence[RunData]],
    lang: str = "en",
    lecture: bool = False,
    labels: Sequence[str] | None = None,
    height: int | None = None,
    **one_seed: Any,
) -> go.Figure:
    """The compared loss chart of sides with several seeds each (`groups`: one list of RunData per side,
    seed order): per side its mean training loss and the band (`seed_band`), the unigram line, and the
    median seed's divergence mark. One seed per side is `loss_chart` of those runs, unchanged, with
    `one_seed` (its smoothing and log axis; the bands are drawn raw, on a linear axis)."""
    if all(len(g) == 1 for g in groups):
        return loss_chart([g[0] for g in groups], lang, lecture, labels, height, **one_seed)
    medians = [g[median_seed(g)] for g in groups]
    info = _prepare_loss(medians, labels, lang)
    bands = [seed_band(g) for g in groups]
    fig = go.Figure()
    for band, (label, color, dash, _) in zip(bands, info.lines):
        _band_traces(fig, band, seed_line_name(label, band.n, lang), (color, dash), info.top, lang, lecture)
    for u in info.unigrams:
        last = u == info.unigrams[-1]
        reference_line(fig, info.max_steps, u, "chart.unigram", (GREY, "dash"), lang, lecture, last, info.top)
    if info.compared:  # the sides' learning rates on the right axis, as loss_chart draws them
        names = [name for name, *_ in info.lines]
        compare_schedules(fig, info.compared, names, info.colors, lang, _lr_key(info.runs))
    for d, color in zip(medians, info.colors):
        _divergence_marker(fig, d, info.top, lang, lecture, color)
    over = sum(int(np.sum(np.isfinite(b.mean) & (b.mean > info.top))) for b in bands)
    note = _note_lines(t("chart.clipped", lang, count=over, limit=f"{info.top:g}"), lecture) if over else None
    if not any(b.steps.size for b in bands):
        _empty_note(fig, lang, lecture)
    title, key, axes = _loss_layout(info, lang, log_y=False)  # the bands are drawn raw, on a linear axis
    return _layout(fig, title, lecture, "seeds-" + key, height=height, note=note, **axes)
