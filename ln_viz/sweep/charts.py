"""The stability map's figures: sweep results in, `plotly.graph_objects.Figure` out. Pure functions.

- `stability_heatmap`: final loss on a grid (lr x warm-up, or depth x warm-up), one panel per norm
  position side by side on one shared colour scale from the floor to the loss at init. Every cell is
  drawn: stalled and diverged cells are marked (a frame and a word), a diverged one coloured as the
  loss at init, never left out (Optuna drops inf/NaN trials from its plots: optuna issue 3382); cells
  still to train are grey. Each cell shows its value; the lr axis is logarithmic.
- `sensitivity_chart`: final loss against lr, one line per setting, with the unigram line and each
  curve's LR sensitivity (Wortsman et al. 2023) written next to it.
- `cell_curve_chart`: one cell's loss curve (a click on the map shows it).
Data preparation (`map_panels`) is apart from drawing, so tests read the numbers without a figure.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ln_viz.charts import BASE_FONT, FONT_FAMILY, NORM_COLORS, PRESENTER_SCALE, norm_label
from ln_viz.i18n import t
from ln_viz.sweep.results import CellResult, Curve
from ln_viz.sweep.spec import SweepConfig

COLORSCALE = "Viridis"  # perceptually uniform and colour-blind safe; dark = low loss
PENDING = "#D9D9D9"
MARK = "#D55E00"  # the frame of a stalled, diverged or failed cell (Okabe-Ito vermillion)
_WARMUP_DASH = ("solid", "dot", "dash", "longdash", "dashdot", "longdashdot")


def lr_label(lr: float) -> str:
    """3e-4, 1e-3, 0.01 -> '3e-4', '1e-3', '1e-2'."""
    mantissa, exp = f"{lr:.0e}".split("e")
    return f"{mantissa}e{int(exp)}" if math.isclose(float(mantissa) * 10 ** int(exp), lr) else f"{lr:.2g}"


def _px(size: float, presenter: bool) -> int:
    return round(size * (PRESENTER_SCALE if presenter else 1.0))


def _style(fig: go.Figure, title: str, presenter: bool, height: int, **extra: Any) -> go.Figure:
    layout: dict[str, Any] = {
        "font": {"family": FONT_FAMILY, "size": _px(BASE_FONT, presenter), "color": "#222222"},
        "title": {"text": title, "font": {"size": _px(19, presenter)}, "x": 0.01, "xanchor": "left"},
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "height": _px(height, presenter),
        "margin": {"l": _px(70, presenter), "r": _px(20, presenter), "t": _px(70, presenter), "b": _px(60, presenter)},
        "hoverlabel": {"font": {"size": _px(14, presenter), "family": FONT_FAMILY}},
    }
    fig.update_layout(**{**layout, **extra})
    return fig


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
            by_cell[(r.norm_position, getattr(r, x_axis), r.warmup_steps)].append(r)
    cells = {c.key[:4]: c.fingerprint for c in spec.cells() if c.seed == 0}
    xs = tuple(sorted(getattr(spec, x_axis)))
    ys = tuple(sorted(spec.warmup_steps))
    panels = []
    for norm in spec.norm_position:
        z, status, text, fps = [], [], [], []
        for y in ys:
            row = [_cell(by_cell.get((norm, x, y), []), lang) for x in xs]
            z.append([c[0] for c in row])
            status.append([c[1] for c in row])
            text.append([c[2] for c in row])
            keys = [(norm, x, y, fixed) if x_axis == "lr" else (norm, fixed, y, x) for x in xs]
            fps.append([cells.get(k) for k in keys])
        panels.append(Panel(norm, xs, ys, z, status, text, fps))
    return panels


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
    label = f"{value:.2f}" if worst == "learned" else f"{value:.2f}<br>{t('sweep.status.' + worst, lang)}"
    return value, worst, label


def colour_range(results: Sequence[CellResult], floor: float | None, default_init: float) -> tuple[float, float]:
    """The shared colour scale: the corpus's floor (when known; else just below the best final loss)
    up to the loss at init (the cells' own step-1 losses, or ln(vocab) before any has run)."""
    inits = [r.init_loss for r in results if r.init_loss is not None]
    hi = sum(inits) / len(inits) if inits else default_init
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
    presenter: bool = False,
    x_axis: str = "lr",
    fixed: float | None = None,
    height: int = 340,
) -> go.Figure:
    """Final loss per cell, one panel per norm position, one colour scale (`zrange`) for all."""
    panels = map_panels(spec, results, lang, x_axis, fixed)
    fig = make_subplots(
        rows=1,
        cols=len(panels),
        shared_yaxes=True,
        horizontal_spacing=0.04,
        subplot_titles=[norm_label(p.norm_position, lang) for p in panels],
    )
    for col, p in enumerate(panels, start=1):
        xs = [math.log10(x) for x in p.xs] if x_axis == "lr" else list(range(len(p.xs)))
        ys = list(range(len(p.ys)))
        edges = _edges(xs)
        fig.add_trace(_pending_trace(p, xs, ys), row=1, col=col)
        heat = _heat_trace(p, xs, ys, zrange, lang, presenter, x_axis, col)
        fig.add_trace(heat, row=1, col=col)
        fig.add_trace(_click_trace(p, xs, ys, heat.hovertext), row=1, col=col)
        for j, i in _marked(p):  # a frame inside the cell, whatever its colour
            pad = 0.06 * (edges[i + 1] - edges[i])
            fig.add_shape(type="rect", x0=edges[i] + pad, x1=edges[i + 1] - pad, y0=j - 0.44, y1=j + 0.44,
                          line={"color": MARK, "width": _px(3, presenter)}, row=1, col=col)  # fmt: skip
        ticktext = [lr_label(x) for x in p.xs] if x_axis == "lr" else [str(int(x)) for x in p.xs]
        fig.update_xaxes(tickvals=xs, ticktext=ticktext, showgrid=False, zeroline=False, range=[edges[0], edges[-1]],
                         row=1, col=col, title_text=t(_PANEL_X_TITLE[x_axis], lang))  # fmt: skip
    fig.update_yaxes(range=[-0.5, len(spec.warmup_steps) - 0.5], zeroline=False)
    fig.update_yaxes(tickvals=list(range(len(spec.warmup_steps))), ticktext=[str(w) for w in sorted(spec.warmup_steps)],
                     showgrid=False, title_text=t("sweep.axis.warmup", lang), row=1, col=1)  # fmt: skip
    fig.update_yaxes(showgrid=False)
    for a in fig.layout.annotations:
        a.font = {"size": _px(17, presenter)}
    key = "sweep.chart.map_title" if x_axis == "lr" else "sweep.chart.depth_title"
    value = fixed if fixed is not None else (spec.depth[0] if x_axis == "lr" else spec.lr[0])
    title = t(key, lang, depth=value, lr=lr_label(value) if x_axis == "depth" else "")
    return _style(fig, title, presenter, height, showlegend=False, clickmode="event+select", dragmode=False)


# One x title under each panel: short enough that two side by side do not run into each other (the log
# scale shows in the ticks 3e-4, 1e-3, ...).
_PANEL_X_TITLE = {"lr": "sweep.axis.lr_panel", "depth": "sweep.axis.depth"}


def _heat_trace(p: Panel, xs, ys, zrange, lang, presenter, x_axis, col) -> go.Heatmap:
    label = t("sweep.axis.lr" if x_axis == "lr" else "sweep.axis.depth", lang)
    xtext = [lr_label(x) for x in p.xs] if x_axis == "lr" else [str(int(x)) for x in p.xs]
    hover = [[f"{label} {xtext[i]}<br>{t('sweep.axis.warmup', lang)} {p.ys[j]}<br>{p.text[j][i]}"
              for i in range(len(xs))] for j in range(len(ys))]  # fmt: skip
    return go.Heatmap(
        x=xs,
        y=ys,
        z=p.z,
        zmin=zrange[0],
        zmax=zrange[1],
        colorscale=COLORSCALE,
        showscale=col == 1,
        colorbar={"title": {"text": t("sweep.axis.final_loss", lang), "side": "right"},
                  "thickness": _px(14, presenter)},  # fmt: skip
        text=p.text,
        texttemplate="%{text}",
        textfont={"size": _px(14, presenter)},
        hovertext=hover,
        hoverinfo="skip",  # the click trace on top shows it
        xgap=2,
        ygap=2,
    )


def _edges(xs: list[float]) -> list[float]:
    """Cell boundaries: midway between neighbours, half a gap beyond the ends (as a heatmap draws them)."""
    if len(xs) == 1:
        return [xs[0] - 0.5, xs[0] + 0.5]
    mids = [(a + b) / 2 for a, b in zip(xs, xs[1:])]
    return [xs[0] - (mids[0] - xs[0]), *mids, xs[-1] + (xs[-1] - mids[-1])]


def _marked(p: Panel) -> list[tuple[int, int]]:
    bad = ("stalled", "diverged", "failed")
    return [(j, i) for j, row in enumerate(p.status) for i, s in enumerate(row) if s in bad]


def _pending_trace(p: Panel, xs, ys) -> go.Heatmap:
    """The cells not trained yet, grey with an ellipsis: the grid's shape shows from the start."""
    z = [[1 if s is None else None for s in row] for row in p.status]
    text = [["…" if s is None else "" for s in row] for row in p.status]
    return go.Heatmap(x=xs, y=ys, z=z, zmin=0, zmax=1, colorscale=[[0, PENDING], [1, PENDING]], showscale=False,
                      text=text, texttemplate="%{text}", hoverinfo="skip", xgap=2, ygap=2)  # fmt: skip


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


def sensitivity_chart(
    curves: Sequence[Curve], unigram: float, lang: str = "en", presenter: bool = False, height: int = 460
) -> go.Figure:
    """Final loss against lr (log axis), a line per (norm position, warm-up, depth); a diverged lr
    sits at the loss at init with an x; each curve's LR sensitivity is written at its right end."""
    fig = go.Figure()
    warmups = sorted({c.warmup_steps for c in curves})
    depths = sorted({c.depth for c in curves})
    labels = []
    for c in curves:
        ys = [c.init_loss if v is None or s == "diverged" else v for v, s in zip(c.final_losses, c.statuses)]
        symbols = ["x" if s == "diverged" else ("circle-open" if s == "stalled" else "circle") for s in c.statuses]
        name = _curve_name(c, lang, len(depths) > 1)  # its LR sensitivity is written at the line's end
        fig.add_trace(
            go.Scatter(
                x=list(c.lrs),
                y=ys,
                name=name,
                mode="lines+markers",
                line={"color": NORM_COLORS.get(c.norm_position, "#555555"), "width": 3,
                      "dash": _WARMUP_DASH[warmups.index(c.warmup_steps) % len(_WARMUP_DASH)]},
                marker={"symbol": symbols, "size": _px(11, presenter), "line": {"width": 2}},
                hovertemplate="lr %{x:.0e}<br>%{y:.3f}<extra>" + name + "</extra>",
            )
        )  # fmt: skip
        labels.append((ys[-1], c))
    fig.add_hline(y=unigram, line={"color": "#555555", "dash": "dot", "width": 2},
                  annotation={"text": t("sweep.chart.unigram", lang), "font": {"size": _px(13, presenter)}},
                  annotation_position="top left")  # fmt: skip
    columns = 2 if presenter else 1  # the legend below the axis; two columns on a wide presenter screen
    rows = math.ceil(len(curves) / columns)
    margin = {"l": _px(70, presenter), "r": _px(20, presenter), "t": _px(50, presenter),
              "b": _px(75 + 21 * rows, presenter)}  # fmt: skip
    ys = [y for y, _ in labels] + [unigram]
    lo, hi = min(ys) - 0.08, max(ys) + 0.1
    plot_px = _px(height, presenter) - margin["t"] - margin["b"]
    hi = _sensitivity_labels(fig, labels, presenter, lang, gap=(hi - lo) * 1.3 * _px(13, presenter) / max(plot_px, 50),
                             top=hi)  # fmt: skip
    lrs = sorted({lr for c in curves for lr in c.lrs}) or [1e-3]
    return _style(
        fig,
        t("sweep.chart.sens_title", lang),
        presenter,
        height,
        plot_bgcolor="white",
        xaxis={"type": "log", "title": t("sweep.axis.lr", lang), "tickvals": lrs,
               "ticktext": [lr_label(x) for x in lrs],
               "range": [math.log10(lrs[0]) - 0.15, math.log10(lrs[-1]) + 0.75], "gridcolor": "#E6E6E6"},
        yaxis={"title": t("sweep.axis.final_loss", lang), "gridcolor": "#E6E6E6", "range": [lo, hi]},
        legend={"font": {"size": _px(13, presenter)}, "orientation": "h", "y": -_px(60, presenter) / max(plot_px, 50),
                "yanchor": "top", "entrywidth": 1 / columns, "entrywidthmode": "fraction"},
        margin=margin,
    )  # fmt: skip


def _curve_name(c: Curve, lang: str, with_depth: bool) -> str:
    name = t("sweep.chart.curve", lang, norm=norm_label(c.norm_position, lang), warmup=c.warmup_steps)
    return name + (t("sweep.chart.curve_depth", lang, depth=c.depth) if with_depth else "")


def _sensitivity_labels(fig: go.Figure, labels: list[tuple[float, Curve]], presenter: bool, lang: str, gap: float,
                        top: float) -> float:  # fmt: skip
    """Each curve's LR sensitivity right of its last point, pushed up (by `gap`, one line of text in data
    units) so none overlap; returns the y range's top, raised if the labels need it."""
    placed: list[float] = []
    for y, c in sorted(labels, key=lambda p: p[0]):
        y = max(y, placed[-1] + gap) if placed else y
        placed.append(y)
        fig.add_annotation(
            x=math.log10(max(c.lrs)),
            y=y,
            xref="x",
            yref="y",
            text=t("sweep.chart.sens_label", lang, value=f"{c.lr_sensitivity:.2f}"),
            showarrow=False,
            xanchor="left",
            xshift=_px(12, presenter),
            font={"size": _px(13, presenter), "color": NORM_COLORS.get(c.norm_position, "#555555")},
        )
    return max([top, *(y + gap / 2 for y in placed)])


def cell_curve_chart(curve: Sequence[tuple[int, float]], title: str, unigram: float, lang: str = "en",
                     presenter: bool = False) -> go.Figure:  # fmt: skip
    """One cell's training loss against step, with the unigram line."""
    fig = go.Figure(
        go.Scatter(x=[s for s, _ in curve], y=[v for _, v in curve], mode="lines",
                   line={"width": 3, "color": "#0072B2"}, name=t("sweep.chart.train_loss", lang))  # fmt: skip
    )
    fig.add_hline(y=unigram, line={"color": "#555555", "dash": "dot", "width": 2})
    return _style(fig, title, presenter, 340, plot_bgcolor="white", showlegend=False,
                  margin={"l": _px(70, presenter), "r": _px(20, presenter), "t": _px(85, presenter),
                          "b": _px(60, presenter)},
                  xaxis={"title": t("sweep.axis.step", lang), "gridcolor": "#E6E6E6"},
                  yaxis={"title": t("sweep.axis.loss", lang), "gridcolor": "#E6E6E6"})  # fmt: skip
