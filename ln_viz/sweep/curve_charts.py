"""The stability map's line charts: sweep results in, `plotly.graph_objects.Figure` out. Pure functions.

- `sensitivity_chart`: final loss against lr, one line per setting, with the unigram line; each
  curve's LR sensitivity (Wortsman et al. 2023) and best loss in its legend entry, the number defined
  in the subtitle; over several seeds, each curve's min-max band.
- `cell_curve_chart`: one cell's loss curve (a click on the map shows it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from ln_viz.charts.style import GREY, GRID, NORM_COLORS, margin, norm_label, plain_layout, scaled_px
from ln_viz.i18n import t
from ln_viz.sweep.charts import TOP_ABOVE_UNIGRAM
from ln_viz.sweep.labels import lr_label, variant_text
from ln_viz.sweep.results import Curve
from ln_viz.sweep.spec import VARIANT_AXES

_WARMUP_DASH = ("solid", "dot", "dash", "longdash", "dashdot", "longdashdot")
# and a marker: 8 curves in two colours told apart by dash alone were hard to tell apart (UX round 4 L6)
_WARMUP_SYMBOL = ("circle", "square", "diamond", "triangle-up", "pentagon", "hexagon")


def sensitivity_chart(
    curves: Sequence[Curve],
    unigram: float,
    lang: str = "en",
    lecture: bool = False,
    height: int = 460,
) -> go.Figure:
    """Final loss against lr (log axis), a line per (norm position, warm-up, depth); a diverged lr is an
    x on the axis's top edge (the y range is the finite points': a diverged run drawn at its loss at
    init, 29 nats without a norm, squashed the rest into the bottom 5 %, issue 21 N7). Each curve's one
    label is its legend entry: its setting, its LR sensitivity and its best loss, next to a sample of
    its line (labels at the lines' ends stacked over each other and the unigram note, issue 21 N8); the
    subtitle defines the number. Each entry has two lines, the setting over its numbers (on one line the
    entries were cut at the plot's width in a laptop's half column, in Korean, and on a phone); outside
    the lecture view's fixed box the figure grows by those lines, so the plot keeps its height."""
    fig = go.Figure()
    styles = sorted({(c.warmup_steps, c.variant) for c in curves})  # a dash per warm-up and variant
    with_depth = len({c.depth for c in curves}) > 1
    varied = [n for i, n in enumerate(VARIANT_AXES) if len({c.variant[i] for c in curves}) > 1]
    bands = _seed_bands(curves, lang)
    fig.add_traces(bands)  # under the lines
    lines = []
    for c in curves:
        k = styles.index((c.warmup_steps, c.variant))
        style = (_WARMUP_DASH[k % len(_WARMUP_DASH)], _WARMUP_SYMBOL[k % len(_WARMUP_SYMBOL)])
        lines.append(_curve_trace(c, lang, lecture, with_depth, style, varied))
    fig.add_traces(lines)
    _unigram_line(fig, unigram, lang, lecture)
    columns = 2 if lecture else 1  # the legend below the axis; two columns on a wide projector screen
    diverged = any(s == "diverged" for c in curves for s in c.statuses)
    # the finite points, up to the map's colour top (unigram + 1 nat): a no-norm run that ended at 30 nats
    # without diverging stretched the axis to 30 and squashed every other curve (issue 21 N7); such points
    # are marked on the top edge, their loss in the hover
    ys = [y for trace in lines for y in trace.y if y is not None] + [unigram]
    top = unigram + TOP_ABOVE_UNIGRAM + 0.1
    lo, hi = min(ys) - 0.08, min(max(ys) + 0.1, top)
    above = [(x, y, trace) for trace in lines for x, y in zip(trace.x, trace.y) if y is not None and y > hi]
    entries = len(curves) + diverged + bool(above) + bool(bands)
    rows = math.ceil(entries / columns) + math.ceil(len(curves) / columns)  # legend lines: two a curve
    room = margin(lecture, top=118, bottom=95 + 21 * rows)  # the title: 4 lines
    height += 0 if lecture else 21 * len(curves) + 80  # the second lines, the subtitle: the plot as tall as before
    plot_px = max(scaled_px(height, lecture) - room["t"] - room["b"], 50)
    if diverged:  # a band reaching a diverged seed's loss at init runs off the top, as it should
        fig.add_trace(_diverged_marks(curves, hi, lang, lecture))
    if above:
        fig.add_trace(_above_marks(above, hi, lang, lecture))
    lrs = sorted({lr for c in curves for lr in c.lrs}) or [1e-3]
    legend = _legend(lecture, columns, plot_px)
    yaxis = {"title": t("sweep.axis.final_loss", lang), "gridcolor": GRID, "range": [lo, hi]}
    title = t("sweep.chart.sens_title", lang)
    fig = plain_layout(fig, title, lecture, height, xaxis=_lr_axis(lrs, lang), yaxis=yaxis, legend=legend, margin=room)
    font = {"size": scaled_px(12, lecture), "color": GREY}
    fig.layout.title.subtitle = {"text": t("sweep.chart.sens_definition", lang), "font": font}
    return fig


def _unigram_line(fig: go.Figure, unigram: float, lang: str, lecture: bool) -> None:
    """The unigram loss, dotted, its note under the line and clear of the axis: above it, at the left, the note
    read as the "3" tick's label (UX round 4 L6)."""
    note = {"text": t("sweep.chart.unigram", lang), "font": {"size": scaled_px(13, lecture)}}
    line = {"color": GREY, "dash": "dot", "width": 2}
    annotation = {**note, "xshift": scaled_px(10, lecture)}
    fig.add_hline(y=unigram, line=line, annotation=annotation, annotation_position="bottom left")


def _legend(lecture: bool, columns: int, plot_px: float) -> dict[str, Any]:
    """The legend under the axis, in `columns` columns (`plot_px`: the plot area's height)."""
    return {
        "font": {"size": scaled_px(13, lecture)},
        "orientation": "h",
        # clear of the x title (at 68 px the seed band's entry was 3 px over it at 1280x720, 12 at 1080)
        "y": -scaled_px(80, lecture) / plot_px,
        "yanchor": "top",
        "entrywidth": 1 / columns,
        "entrywidthmode": "fraction",
    }


def _curve_trace(
    c: Curve, lang: str, lecture: bool, with_depth: bool, style: tuple[str, str], varied: list
) -> go.Scatter:
    """One setting's final loss against lr: a gap at a diverged lr (_diverged_marks marks it); stalled, open.
    `style`: its dash and marker."""
    dash, symbol = style
    ys = [None if v is None or s == "diverged" else v for v, s in zip(c.final_losses, c.statuses)]
    symbols = [symbol + "-open" if s == "stalled" else symbol for s in c.statuses]
    name = _curve_name(c, lang, with_depth) + variant_text(c.variant, varied, lang)
    finite = [y for y in ys if y is not None]
    best = f"{min(finite):.2f}" if finite else "-"
    label = name + "<br>" + t("sweep.chart.sens_numbers", lang, sens=f"{c.lr_sensitivity:.2f}", best=best)
    return go.Scatter(
        x=list(c.lrs),
        y=ys,
        name=label,
        mode="lines+markers",
        line={"color": NORM_COLORS.get(c.norm_position, GREY), "width": 3, "dash": dash},
        marker={"symbol": symbols, "size": scaled_px(11, lecture), "line": {"width": 2}},
        hovertemplate="lr %{x:.0e}<br>%{y:.3f}"
        + ("<br>%{customdata}" if c.seeds > 1 else "")
        + "<extra>"
        + name
        + "</extra>",
        customdata=_range_words(c, lang) if c.seeds > 1 else None,
    )


def _range_words(c: Curve, lang: str) -> list[str]:
    """Each lr's lowest and highest seed, for the hover of a curve over several seeds."""
    return [
        "" if lo is None else t("sweep.chart.seed_range", lang, lo=f"{lo:.3f}", hi=f"{hi:.3f}", n=c.seeds)
        for lo, hi in zip(c.lows, c.highs)
    ]


def _seed_bands(curves: Sequence[Curve], lang: str) -> list[go.Scatter]:
    """Each curve's lowest to highest seed at every lr, a pale band in its colour (none with one seed);
    one legend entry for all of them says what the band is, and over how many seeds."""
    bands = []
    for c in (c for c in curves if c.seeds > 1):
        pts = [(lr, lo, hi) for lr, lo, hi in zip(c.lrs, c.lows, c.highs) if lo is not None and hi is not None]
        colour = NORM_COLORS.get(c.norm_position, GREY).lstrip("#")
        rgb = ", ".join(str(int(colour[k : k + 2], 16)) for k in (0, 2, 4))
        bands.append(
            go.Scatter(
                x=[p[0] for p in pts] + [p[0] for p in reversed(pts)],
                y=[p[2] for p in pts] + [p[1] for p in reversed(pts)],
                fill="toself",
                fillcolor=f"rgba({rgb}, 0.16)",
                line={"width": 0},
                mode="lines",
                hoverinfo="skip",
                legendgroup="seed_band",
                showlegend=False,
                name=t("sweep.chart.seed_band", lang, n=c.seeds),
            )
        )
    if bands:  # the legend's entry, in grey: the bands take their curves' colours
        name = t("sweep.chart.seed_band", lang, n=max(c.seeds for c in curves))
        key = {"fill": "toself", "fillcolor": "rgba(120, 120, 120, 0.3)", "line": {"width": 0}, "mode": "lines"}
        bands.insert(0, go.Scatter(x=[None], y=[None], name=name, legendgroup="seed_band", hoverinfo="skip", **key))
    return bands


def _edge_marks(name: str, symbol: str, xs: list, top: float, colors: list, hover: list, lecture: bool, **kw: Any):
    """Points drawn on the y axis's top edge (outside its range), one legend entry `name`."""
    return go.Scatter(
        x=xs,
        y=[top] * len(xs),
        name=name,
        mode="markers",
        cliponaxis=False,
        marker={
            "symbol": symbol,
            "size": scaled_px(13, lecture),
            "color": colors,
            "line": {"width": 1, "color": "black"},
        },
        hovertext=hover,
        **kw,
    )


def _diverged_marks(curves: Sequence[Curve], top: float, lang: str, lecture: bool) -> go.Scatter:
    """Every diverged (curve, lr) as an x on the y axis's top edge, in its curve's colour: one legend entry."""
    points = [(lr, c) for c in curves for lr, s in zip(c.lrs, c.statuses) if s == "diverged"]
    name = t("sweep.chart.diverged_top", lang)
    colors = [NORM_COLORS.get(c.norm_position, GREY) for _, c in points]
    hover = [_curve_name(c, lang, False) for _, c in points]
    template = "lr %{x:.0e}<br>%{hovertext}<extra>" + name + "</extra>"
    return _edge_marks(name, "x", [lr for lr, _ in points], top, colors, hover, lecture, hovertemplate=template)


def _above_marks(points: list, top: float, lang: str, lecture: bool) -> go.Scatter:
    """Every finite final loss above the axis as a triangle on its top edge, in its line's colour, its
    loss in the hover: one legend entry."""
    name = t("sweep.chart.above_top", lang, top=f"{top:.1f}")
    colors, hover = [tr.line.color for _, _, tr in points], [tr.name for _, _, tr in points]
    template = "lr %{x:.0e}<br>%{hovertext}<br>%{customdata:.2f}<extra>" + name + "</extra>"
    xs = [x for x, _, _ in points]
    return _edge_marks(
        name,
        "triangle-up",
        xs,
        top,
        colors,
        hover,
        lecture,
        customdata=[y for _, y, _ in points],
        hovertemplate=template,
    )


def _lr_axis(lrs: list[float], lang: str) -> dict[str, Any]:
    """A log lr axis ticked at the grid's lrs."""
    return {
        "type": "log",
        "title": t("sweep.axis.lr", lang),
        "tickvals": lrs,
        "ticktext": [lr_label(x) for x in lrs],
        "range": [math.log10(lrs[0]) - 0.15, math.log10(lrs[-1]) + 0.15],
        "gridcolor": GRID,
    }


def _curve_name(c: Curve, lang: str, with_depth: bool) -> str:
    name = t("sweep.chart.curve", lang, norm=norm_label(c.norm_position, lang), warmup=c.warmup_steps)
    return name + (t("sweep.chart.curve_depth", lang, depth=c.depth) if with_depth else "")


def cell_curve_chart(
    curve: Sequence[tuple[int, float]],
    title: str,
    unigram: float,
    lang: str = "en",
    lecture: bool = False,
    norm_position: str | None = None,
) -> go.Figure:
    """One cell's training loss against step, with the unigram line, in its norm position's colour (as
    the map's panels and the LR-sensitivity lines are coloured)."""
    line = {"width": 3, "color": NORM_COLORS.get(norm_position or "", "#0072B2")}
    steps, losses = [s for s, _ in curve], [v for _, v in curve]
    fig = go.Figure(go.Scatter(x=steps, y=losses, mode="lines", line=line, name=t("sweep.chart.train_loss", lang)))
    fig.add_hline(y=unigram, line={"color": GREY, "dash": "dot", "width": 2})
    # the lecture view's box is short: the long y title would run up into the two-line title
    ytitle = t("sweep.axis.loss_short" if lecture else "sweep.axis.loss", lang)
    return plain_layout(
        fig,
        title,
        lecture,
        340,
        plot_bgcolor="white",
        showlegend=False,
        margin=margin(lecture, top=85),
        xaxis={"title": t("sweep.axis.step", lang), "gridcolor": GRID},
        yaxis={"title": ytitle, "gridcolor": GRID},
    )
