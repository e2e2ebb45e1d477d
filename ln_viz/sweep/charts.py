"""The stability map's figures: sweep results in, `plotly.graph_objects.Figure` out. Pure functions.

- `stability_heatmap`: final loss on a grid (lr x warm-up, or depth x warm-up), one panel per norm
  position side by side on one shared colour scale from the floor to the loss at init (cut at the
  unigram loss + 1 nat). Every cell is drawn: stalled and diverged cells are marked (a frame and a
  word), a diverged one in a pale red outside the scale, never left out (Optuna drops inf/NaN trials
  from its plots: optuna issue 3382); cells
  still to train are grey. Each cell shows its value; the lr axis is logarithmic.
The LR-sensitivity chart and a cell's curve are in ln_viz.sweep.curve_charts.
Data preparation (`map_panels`) is apart from drawing, so tests read the numbers without a figure.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ln_viz.charts.style import norm_label, plain_layout, scaled_px
from ln_viz.i18n import t
from ln_viz.sweep.labels import PANEL_X_TITLE, lr_label, variant_text
from ln_viz.sweep.map_cells import DIVERGED_FILL, PENDING, TEXT_LAYER, dark_text_trace, diverged_trace, pending_trace
from ln_viz.sweep.map_cells import text_on as _text_on
from ln_viz.sweep.results import CellResult
from ln_viz.sweep.spec import VARIANT_AXES, SweepConfig

COLORSCALE = "Viridis"  # perceptually uniform and colour-blind safe; dark = low loss
MARK = "#D55E00"  # the frame of a stalled, diverged or failed cell (Okabe-Ito vermillion)
PICKED, PICKED_HALO = "black", "white"  # the frame of the cell whose curve is shown
MIXED_MARK = "◆"  # the corner mark of a cell whose seeds disagree on the status
TOP_ABOVE_UNIGRAM = 1.0  # the colour scale's top, nats above the unigram loss: a stalled run sits at unigram


# --- data preparation ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Panel:
    """One norm position's grid: x values (lr or depth), warm-ups, and per cell what is drawn."""

    norm_position: str
    xs: tuple[float, ...]
    ys: tuple[int, ...]
    z: list[list[float | None]]  # the colour: final loss (seeds averaged); the loss at init if diverged
    status: list[list[str | None]]  # learned | stalled | diverged | failed | None (not trained yet)
    text: list[list[str]]
    fingerprints: list[list[str | None]]  # of seed 0's cell, for the click
    variant: tuple = ()  # (qk_norm, norm_type, weight_decay): one panel per norm position and variant
    spread: list[list[str]] | None = None  # seeds > 1: the hover's median, range and status counts, else ""
    mixed: list[list[bool]] | None = None  # the cell's seeds disagree on the status (some stalled, some learned)


def map_panels(
    spec: SweepConfig, results: Sequence[CellResult], lang: str, x_axis: str = "lr", fixed: float | None = None
) -> list[Panel]:
    """The grid of every norm position. `x_axis` is "lr" (at depth `fixed`, default the spec's first)
    or "depth" (at lr `fixed`, default the spec's first)."""
    other = "depth" if x_axis == "lr" else "lr"
    fixed = fixed if fixed is not None else getattr(spec, other)[0]
    by_cell: dict[tuple, list[CellResult]] = defaultdict(list)
    for r in results:
        if getattr(r, other) == fixed:
            by_cell[(r.norm_position, r.variant, getattr(r, x_axis), r.warmup_steps)].append(r)
    cells = {(*c.key[:4], c.variant): c.fingerprint for c in spec.cells() if c.seed == 0}
    xs = tuple(sorted(getattr(spec, x_axis)))
    ys = tuple(sorted(spec.warmup_steps))
    panels = []
    for norm, variant in itertools.product(spec.norm_position, itertools.product(*map(spec.values, VARIANT_AXES))):
        z, status, text, fps, spread, mixed = [], [], [], [], [], []
        for y in ys:
            rs = [by_cell.get((norm, variant, x, y), []) for x in xs]
            row = [_cell(r, lang) for r in rs]
            z.append([c[0] for c in row])
            status.append([c[1] for c in row])
            text.append([c[2] for c in row])
            keys = [(norm, x, y, fixed, variant) if x_axis == "lr" else (norm, fixed, y, x, variant) for x in xs]
            fps.append([cells.get(k) for k in keys])
            spread.append([seed_spread(r, lang) for r in rs])
            mixed.append([len({s.status for s in r if s.status != "failed"}) > 1 for r in rs])
        panels.append(Panel(norm, xs, ys, z, status, text, fps, variant, spread, mixed))
    return panels


def seed_spread(rs: Sequence[CellResult], lang: str) -> str:
    """A cell's seeds in words for its hover, "" for one seed: the median final loss and its range over
    the seeds that did not diverge (a diverged run's final loss is not a result), and how each ended."""
    if len({r.seed for r in rs}) < 2:
        return ""
    lines = []
    finals = sorted(r.final_loss for r in rs if r.status not in ("diverged", "failed") and r.final_loss is not None)
    if finals:
        words = {"median": f"{statistics.median(finals):.2f}", "lo": f"{finals[0]:.2f}", "hi": f"{finals[-1]:.2f}"}
        lines.append(t("sweep.cell.spread", lang, **words, n=len(finals)))
    counts = Counter(r.status for r in rs)
    order = [s for s in ("learned", "stalled", "diverged", "failed") if counts[s]]
    each = [t("sweep.cell.count", lang, n=counts[s], status=t(f"sweep.status.{s}", lang)) for s in order]
    lines.append(t("sweep.cell.counts", lang, counts=", ".join(each), n=len(rs)))
    return "<br>".join(lines)


def _cell(rs: list[CellResult], lang: str) -> tuple[float | None, str | None, str]:
    if not rs:
        return None, None, "…"
    ran = [r for r in rs if r.status != "failed"]
    if not ran:
        return None, "failed", t("sweep.status.failed", lang)
    if all(r.status == "diverged" for r in ran):
        init = [r.init_loss for r in ran if r.init_loss is not None]
        step = ran[0].diverged_step
        return (sum(init) / len(init) if init else None), "diverged", t("sweep.cell.diverged", lang, step=step)
    values = [r.final_loss for r in ran if r.status != "diverged" and r.final_loss is not None]
    value = sum(values) / len(values)
    worst = "stalled" if any(r.status == "stalled" for r in ran) else "learned"
    if any(r.status == "diverged" for r in ran):
        worst = "diverged"
    word = t("sweep.status." + worst, lang)
    if worst != "learned" and len({r.status for r in ran}) > 1:  # the seeds disagree: how many of them
        word = t("sweep.cell.of_seeds", lang, status=word, k=sum(r.status == worst for r in ran), n=len(ran))
    label = f"{value:.2f}" if worst == "learned" else f"{value:.2f}<br>{word}"
    return value, worst, label


def colour_range(
    results: Sequence[CellResult], floor: float | None, default_init: float, unigram: float | None = None
) -> tuple[float, float]:
    """The shared colour scale: the corpus's floor (when known; else just below the best final loss)
    up to the loss at init (the cells' own step-1 losses, or ln(vocab) before any has run), cut at the
    unigram loss + 1 nat when `unigram` is given: one no-norm panel starts near 29 nats, and a top that
    high gives a stalled run (at unigram) and a learned one the same colour (issue 21, N6). Cells
    above the top are drawn in the top colour, the colour bar says so."""
    inits = [r.init_loss for r in results if r.init_loss is not None]
    hi = sum(inits) / len(inits) if inits else default_init
    if unigram is not None:
        hi = min(hi, unigram + TOP_ABOVE_UNIGRAM)
    if floor is None:
        finals = [r.final_loss for r in results if r.final_loss is not None and r.status != "diverged"]
        floor = math.floor(min(finals) * 10) / 10 if finals else hi - 2.0
    return (min(floor, hi - 0.1), hi)


# --- figures -------------------------------------------------------------------------------------------
def stability_heatmap(
    spec: SweepConfig,
    results: Sequence[CellResult],
    zrange: tuple[float, float],
    lang: str = "en",
    lecture: bool = False,
    x_axis: str = "lr",
    fixed: float | None = None,
    height: int = 340,
    stacked: bool = False,
    picked: str | None = None,
) -> go.Figure:
    """Final loss per cell, one panel per norm position, one colour scale (`zrange`) for all. The panels
    side by side, or `stacked` one above the other (a phone: side by side, a cell there is ~19 px wide,
    its values and the panels' x titles print over each other, issue 21 N29). `picked`: the fingerprint
    of the cell whose curve is shown, framed in black (N9)."""
    panels = map_panels(spec, results, lang, x_axis, fixed)
    titles = [norm_label(p.norm_position, lang) + variant_text(p.variant, spec.varied(), lang) for p in panels]
    if stacked:
        fig = make_subplots(rows=len(panels), cols=1, shared_xaxes=True, vertical_spacing=0.3 / len(panels),
                            subplot_titles=titles)  # fmt: skip
        height = 110 + len(panels) * (50 + 40 * len(spec.warmup_steps))
    else:
        fig = make_subplots(rows=1, cols=len(panels), shared_yaxes=True, horizontal_spacing=0.04, subplot_titles=titles)
    for k, p in enumerate(panels, start=1):
        where = (k, 1) if stacked else (1, k)
        _draw_panel(fig, p, where, zrange, lang, lecture, x_axis, titled=not stacked or k == len(panels))
        _frame_picked(fig, p, where, picked, x_axis, lecture)
    _warmup_axes(fig, sorted(spec.warmup_steps), lang, rows=len(panels) if stacked else 1)
    for a in fig.layout.annotations:
        a.font = {"size": scaled_px(17, lecture)}
    _notes(fig, panels, lang, lecture)
    if stacked:  # a phone's cell is ~70 px wide: "stalled" at 14 px ran into its frame
        fig.update_traces(textfont_size=12, selector={"type": "heatmap"})
    key = "sweep.chart.map_title" if x_axis == "lr" else "sweep.chart.depth_title"
    value = fixed if fixed is not None else (spec.depth[0] if x_axis == "lr" else spec.lr[0])
    title = t(key, lang, depth=value, lr=lr_label(value) if x_axis == "depth" else "")
    return plain_layout(fig, title, lecture, height, showlegend=False, clickmode="event+select", dragmode=False)


def _warmup_axes(fig: go.Figure, warmups: list[int], lang: str, rows: int) -> None:
    """The warm-up axis: on the first panel's left, or on every panel's when they are stacked."""
    fig.update_yaxes(range=[-0.5, len(warmups) - 0.5], zeroline=False)
    ytitle = t("sweep.axis.warmup", lang)
    for row in range(1, rows + 1):
        fig.update_yaxes(
            tickvals=list(range(len(warmups))),
            ticktext=[str(w) for w in warmups],
            showgrid=False,
            title_text=ytitle,
            row=row,
            col=1,
        )
    fig.update_yaxes(showgrid=False)


def _notes(fig: go.Figure, panels: list[Panel], lang: str, lecture: bool) -> None:
    """Under the colour bar: what a pale red cell and the corner mark mean, when the map has them."""
    notes = []
    if any(s == "diverged" for p in panels for row in p.status for s in row):
        notes.append(t("sweep.chart.diverged_note", lang, colour=DIVERGED_FILL))
    if any(m for p in panels for row in p.mixed or [] for m in row):
        notes.append(t("sweep.chart.mixed_note", lang, colour=MARK, mark=MIXED_MARK))
    if notes:
        note = "<br>".join(notes)
        fig.add_annotation(text=note, x=1.0, y=-0.02, xref="paper", yref="paper", xanchor="left", yanchor="top",
                           showarrow=False, align="left", font={"size": scaled_px(13, lecture)})  # fmt: skip


def _draw_panel(
    fig: go.Figure, p: Panel, where: tuple[int, int], zrange, lang: str, lecture: bool, x_axis: str, titled: bool
) -> None:
    """One panel of the map: its cells (pending, coloured, clickable), the frames of marked cells, its x
    axis (its title where `titled`)."""
    row, col = where
    xs = _cell_xs(p, x_axis)
    ys = list(range(len(p.ys)))
    edges = _edges(xs)
    fig.add_trace(pending_trace(p, xs, ys), row=row, col=col)
    fig.add_trace(diverged_trace(p, xs, ys, lecture), row=row, col=col)
    heat = _heat_trace(p, xs, ys, zrange, lang, lecture, x_axis, row * col)
    fig.add_trace(heat, row=row, col=col)
    fig.add_trace(dark_text_trace(p, xs, ys, zrange, lecture), row=row, col=col)
    if any(any(r) for r in p.mixed or []):
        fig.add_trace(_mixed_trace(p, xs, edges, lecture), row=row, col=col)
    fig.add_trace(_click_trace(p, xs, ys, heat.hovertext), row=row, col=col)
    for j, i in _marked(p):  # a frame inside the cell, whatever its colour
        pad = 0.06 * (edges[i + 1] - edges[i])
        x0, x1 = edges[i] + pad, edges[i + 1] - pad
        frame = {"color": MARK, "width": scaled_px(3, lecture)}
        fig.add_shape(type="rect", x0=x0, x1=x1, y0=j - 0.44, y1=j + 0.44, line=frame, row=row, col=col)
    title = {"title_text": t(PANEL_X_TITLE[x_axis], lang)} if titled else {}
    fig.update_xaxes(
        tickvals=xs,
        ticktext=_x_ticks(p, x_axis),
        showgrid=False,
        zeroline=False,
        range=[edges[0], edges[-1]],
        row=row,
        col=col,
        **title,
    )


def _cell_xs(p: Panel, x_axis: str) -> list[float]:
    """The cells' x positions: log10 of the lr (the axis is logarithmic), else 0, 1, 2 ... (depths)."""
    return [math.log10(x) for x in p.xs] if x_axis == "lr" else list(range(len(p.xs)))


def _frame_picked(fig: go.Figure, p: Panel, where: tuple[int, int], picked: str | None, x_axis, lecture) -> None:
    """A black frame in a white one on the cell whose curve is shown (seen on dark and on light cells), at
    the cell's edge, round a stalled cell's own frame."""
    cells = [(j, i) for j, row in enumerate(p.fingerprints) for i, fp in enumerate(row) if picked and fp == picked]
    edges = _edges(_cell_xs(p, x_axis))
    for (j, i), (colour, width) in itertools.product(cells, ((PICKED_HALO, 7), (PICKED, 3))):
        line = {"color": colour, "width": scaled_px(width, lecture)}
        box = {"x0": edges[i], "x1": edges[i + 1], "y0": j - 0.5, "y1": j + 0.5}
        fig.add_shape(type="rect", **box, line=line, row=where[0], col=where[1])


def _x_ticks(p: Panel, x_axis: str) -> list[str]:
    """The x values as the axis and the hover say them: 3e-4 for an lr, 6 for a depth."""
    return [lr_label(x) for x in p.xs] if x_axis == "lr" else [str(int(x)) for x in p.xs]


def _heat_trace(p: Panel, xs, ys, zrange, lang, lecture, x_axis, col) -> go.Heatmap:
    label = t("sweep.axis.lr" if x_axis == "lr" else "sweep.axis.depth", lang)
    xtext = _x_ticks(p, x_axis)
    warmup = t("sweep.axis.warmup", lang)
    spread = p.spread or [[""] * len(xs) for _ in ys]
    hover = [
        [f"{label} {xtext[i]}<br>{warmup} {p.ys[j]}<br>{p.text[j][i]}" + (spread[j][i] and "<br>" + spread[j][i])
         for i in range(len(xs))]
        for j in range(len(ys))
    ]  # fmt: skip
    off_scale = [[s == "diverged" for s in row] for row in p.status]  # drawn by diverged_trace
    return go.Heatmap(
        x=xs,
        y=ys,
        z=[[None if off else z for z, off in zip(*rows)] for rows in zip(p.z, off_scale)],
        zmin=zrange[0],
        zmax=zrange[1],
        colorscale=COLORSCALE,
        showscale=col == 1,
        colorbar=_colour_bar(zrange, lang, lecture),
        text=[
            [s if _text_on(z, zrange) == "white" and not off else "" for s, z, off in zip(*rows)]
            for rows in zip(p.text, p.z, off_scale)
        ],  # fmt: skip
        texttemplate="%{text}",
        textfont={"size": scaled_px(14, lecture), "color": "white"},
        hovertext=hover,
        hoverinfo="skip",  # the click trace on top shows it
        xgap=2,
        ygap=2,
    )


def _colour_bar(zrange: tuple[float, float], lang: str, lecture: bool) -> dict[str, Any]:
    """Ticks every 0.5 nats, the top one read as "or more" (cells above it share its colour)."""
    lo, hi = zrange
    ticks = [k / 2 for k in range(math.ceil(lo * 2), math.floor(hi * 2) + 1) if k / 2 < hi - 0.15]
    labels = [f"{v:.1f}" for v in ticks] + [t("sweep.chart.scale_top", lang, value=f"{hi:.1f}")]
    return {
        # the unit only, above the bar: the map's title says "final loss", and a rotated "final loss (nats/char)"
        # stood beside the curves' identical y title in the lecture view (UX round 4 L6)
        "title": {"text": t("sweep.axis.colour_unit", lang), "side": "top"},
        # each label just under its tick: the top one, centred on the bar's end, ran into the title above
        "ticklabelposition": "outside bottom",
        "thickness": scaled_px(14, lecture),
        "tickvals": [*ticks, hi],
        "ticktext": labels,
    }


def _edges(xs: list[float]) -> list[float]:
    """Cell boundaries: midway between neighbours, half a gap beyond the ends (as a heatmap draws them)."""
    if len(xs) == 1:
        return [xs[0] - 0.5, xs[0] + 0.5]
    mids = [(a + b) / 2 for a, b in zip(xs, xs[1:])]
    return [xs[0] - (mids[0] - xs[0]), *mids, xs[-1] + (xs[-1] - mids[-1])]


def _marked(p: Panel) -> list[tuple[int, int]]:
    bad = ("stalled", "diverged", "failed")
    return [(j, i) for j, row in enumerate(p.status) for i, s in enumerate(row) if s in bad]


def _mixed_trace(p: Panel, xs, edges: list[float], lecture: bool) -> go.Scatter:
    """A mark in the top right corner of each cell whose seeds disagree on the status: the colour and
    the number are of the seeds together, the mark says they did not all end alike."""
    cells = [(j, i) for j, row in enumerate(p.mixed or []) for i, m in enumerate(row) if m]
    return go.Scatter(
        x=[edges[i + 1] - 0.16 * (edges[i + 1] - edges[i]) for _, i in cells],
        y=[j + 0.28 for j, _ in cells],
        mode="markers",
        marker={
            "symbol": "diamond",
            "size": scaled_px(11, lecture),
            "color": MARK,
            "line": {"width": 1, "color": "white"},
        },
        hoverinfo="skip",
        showlegend=False,
    )


def _click_trace(p: Panel, xs, ys, hover: list[list[str]]) -> go.Scatter:
    """Invisible points on every trained cell, on top: they answer hover (the cell's numbers) and a click
    (customdata: its fingerprint). Not "skip": a trace that skips hover gets no clicks either."""
    px, py, fp, text = [], [], [], []
    for j in range(len(ys)):
        for i in range(len(xs)):
            if p.status[j][i] is not None and p.fingerprints[j][i]:
                px.append(xs[i])
                py.append(ys[j])
                fp.append(p.fingerprints[j][i])
                text.append(hover[j][i])
    return go.Scatter(
        x=px,
        y=py,
        customdata=fp,
        hovertext=text,
        hovertemplate="%{hovertext}<extra></extra>",
        mode="markers",
        marker={"size": 40, "symbol": "square", "opacity": 0.01, "color": "white"},
        showlegend=False,
    )


__all__ = ["DIVERGED_FILL", "PENDING", "TEXT_LAYER"]  # the cells' colours, named here too (tests, pages)
