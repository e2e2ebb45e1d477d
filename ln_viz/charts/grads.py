"""Gradients and updates over steps: the block gradient norm per layer and probe step as a heatmap
(one colour scale can be shared by several runs), and ||dw|| / ||w|| per block against a rule of thumb."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from ln_viz.charts.axes import _colorbar, _layer_ticks, _log10, _log_axis, _log_colorbar, _nice_log_range
from ln_viz.charts.sample import _run_key, heatmap_columns, step_range
from ln_viz.charts.style import GREY, _empty_note, _f32, _hover, _layout, scaled_px
from ln_viz.i18n import t
from ln_viz.snapshot import RunData

UPDATE_RATIO_REF = 1e-3  # a common rule of thumb for a healthy update size
MAX_RATIO_LAYERS = 8  # lines in the update-ratio chart; deeper models show a spread of layers


def _diverged_line(fig: go.Figure, data: RunData, lang: str, lecture: bool) -> None:
    """A dashed line and a short label at the step where the run diverged (steps on the x axis)."""
    if data.diverged_at is None:
        return
    fig.add_vline(x=data.diverged_at, line={"color": "#B00000", "dash": "dash", "width": 2})
    right = data.diverged_at < step_range(data) / 2
    fig.add_annotation(
        x=data.diverged_at,
        y=1,
        yref="paper",
        yanchor="top",
        xanchor="left" if right else "right",
        xshift=4 if right else -4,
        showarrow=False,
        text=t("chart.diverged_at", lang, step=data.diverged_at),
        font={"color": "#B00000", "size": scaled_px(14, lecture)},
        bgcolor="rgba(255,255,255,0.8)",
    )


def _steps_layout(
    fig: go.Figure,
    data: RunData,
    names: tuple[str, str],
    lang: str,
    lecture: bool,
    xaxis: dict,
    legend_below: bool = False,
    **extra: Any,
) -> go.Figure:
    """The layout of a chart over steps 0..config.steps (or just past a divergence, `step_range`), no
    legend unless `legend_below`. `names`: the title's catalog key and the uirevision's prefix; `xaxis`:
    more of the step axis; `extra`: more layout (`height` among it)."""
    title_key, key = names
    end = step_range(data)
    steps = {
        "title": {"text": t("chart.step_axis", lang)},
        "range": [0, end],
        **({"dtick": 1} if end <= 12 else {}),
        **xaxis,
    }
    uirevision = key + _run_key(data)
    return _layout(fig, t(title_key, lang), lecture, uirevision, legend_below=legend_below, xaxis=steps, **extra)


# --- gradient heatmap ----------------------------------------------------------------------------
def shared_zrange(datas: Sequence[RunData]) -> tuple[float, float] | None:
    """One colour range (gradient norms, real units, whole decades) for the gradient heatmaps of several
    runs, so equal colours mean equal gradients on the Compare page. None when no run has a probe yet."""
    values = [d.probe("block_grad_norm").ravel() for d in datas if d.probe_steps]
    if not values:
        return None
    return _nice_log_range(np.concatenate(values))


class _HeatmapInfo(NamedTuple):
    """The heatmap's colour range (real units) and its columns; no columns before the first probe."""

    lo: float
    hi: float
    steps: np.ndarray  # (P',) the probe steps shown
    grads: np.ndarray  # (L, P') block gradient norms at those steps


def _prepare_heatmap(data: RunData, zrange: tuple[float, float] | None) -> _HeatmapInfo:
    g = data.probe("block_grad_norm")
    lo, hi = zrange if zrange is not None else (_nice_log_range(g) or (1e-3, 10.0))
    if not 0 < lo < hi:
        raise ValueError(f"zrange must be two gradient norms 0 < lo < hi, got {zrange}")
    if not data.probe_steps:
        return _HeatmapInfo(lo, hi, np.zeros(0, np.int64), np.zeros((data.info.config.depth, 0)))
    steps = np.asarray(data.probe_steps, dtype=np.int64)
    cols = heatmap_columns(len(steps))
    return _HeatmapInfo(lo, hi, steps[cols], g[cols].T)


def _heatmap_trace(info: _HeatmapInfo, L: int, lang: str, lecture: bool, height: int | None) -> go.Heatmap:
    """The coloured cells (log10 colours, real units in the hover); before the first probe an invisible
    heatmap that keeps the colorbar in place."""
    color: dict[str, Any] = {
        "zmin": math.log10(info.lo),
        "zmax": math.log10(info.hi),
        "colorscale": "Viridis",
        "colorbar": _log_colorbar(t("chart.grad_norm_axis", lang), info.lo, info.hi, lecture, height),
    }
    if not info.steps.size:
        return go.Heatmap(x=[0], y=[1], z=[[None]], hoverinfo="skip", **color)
    return go.Heatmap(
        x=info.steps.astype(np.int32),
        y=np.arange(1, L + 1, dtype=np.int16),
        z=_f32(_log10(info.grads)),
        customdata=_f32(info.grads),
        hovertemplate=_hover(
            lang, ("chart.step", "%{x}"), ("chart.layer", "%{y}"), ("chart.grad_norm", "%{customdata:.3g}")
        ),
        hoverongaps=False,
        showscale=True,
        **color,
    )


def grad_heatmap(
    data: RunData,
    lang: str = "en",
    zrange: tuple[float, float] | None = None,
    lecture: bool = False,
    height: int | None = None,
) -> go.Figure:
    """Block gradient norm (all of a block's parameters, Frobenius) per layer (rows, 1 = input at the
    bottom) and probe step (columns), coloured by log10 with tick labels in real units. `zrange`
    (gradient norms, real units; see `shared_zrange`) makes two runs share one colour scale; without it
    the range is the data's, rounded out to whole decades. Bright = large, as in every heatmap here.
    NaN (a diverged step's missing gradients) stays blank. `height`: px, None for Plotly's default."""
    cfg = data.info.config
    L = cfg.depth
    info = _prepare_heatmap(data, zrange)
    fig = go.Figure(_heatmap_trace(info, L, lang, lecture, height))
    if not info.steps.size:
        _empty_note(fig, lang, lecture)
    return layer_heatmap_layout(fig, data, ("chart.grad_heatmap_title", "grad-"), lang, lecture, height)


def layer_heatmap_layout(
    fig: go.Figure, data: RunData, names: tuple[str, str], lang: str, lecture: bool, height: int | None
) -> go.Figure:
    """The layout of a layer x step heatmap (gradients, attention entropy): the diverged mark, the step
    axis, layers 1..L upwards, no legend (the colourbar says what colours mean)."""
    _diverged_line(fig, data, lang, lecture)
    L = data.info.config.depth
    return _steps_layout(
        fig,
        data,
        names,
        lang,
        lecture,
        {"showgrid": False},
        showlegend=False,
        height=height,
        yaxis={
            "title": {"text": t("chart.layer_axis", lang)},
            "range": [0.5, L + 0.5],
            "showgrid": False,
            **_layer_ticks(L),
        },
    )


# --- update ratio --------------------------------------------------------------------------------
def _ratio_layers(L: int) -> list[int]:
    """Which layers get a line: all up to MAX_RATIO_LAYERS, else an even spread with the first and last."""
    if L <= MAX_RATIO_LAYERS:
        return list(range(1, L + 1))
    return sorted({int(round(v)) for v in np.linspace(1, L, MAX_RATIO_LAYERS)})


def _ratio_lines(
    fig: go.Figure,
    data: RunData,
    lang: str,
    lecture: bool,
    height: int | None,
    probe: str = "update_ratio",
    value: tuple[str, str] = ("chart.update_ratio", "%{y:.2e}"),
) -> None:
    """One line per shown layer of a (depth,) probe (`value`: its hover label key and format), coloured
    from input (dark) to output (light); which colour is which layer is told by a thin colourbar (a
    legend of eight "layer n" entries took 40 % of a half-width chart)."""
    r = data.probe(probe)
    steps = np.asarray(data.probe_steps, dtype=np.int32)
    L = data.info.config.depth
    layers = _ratio_layers(L)
    shades = [0.85 * (layer - 1) / max(L - 1, 1) for layer in layers]
    colors = sample_colorscale("Viridis", shades)
    for layer, c in zip(layers, colors):
        name = t("chart.layer_n", lang, n=layer)
        fig.add_trace(
            go.Scatter(
                x=steps,
                y=_f32(r[:, layer - 1] if steps.size else np.zeros(0)),
                mode="lines" if steps.size > 2 else "lines+markers",  # one point alone draws no line
                name=name,
                line={"color": c, "width": 2.2},
                hovertemplate=name + "<br>" + _hover(lang, ("chart.step", "%{x}"), value),
            )
        )
    ticks = _layer_ticks(L)["tickvals"]
    scale = [
        [v / 0.85, c]
        for v, c in zip(np.linspace(0, 0.85, 6), sample_colorscale("Viridis", list(np.linspace(0, 0.85, 6))))
    ]
    fig.add_trace(
        go.Scatter(
            x=[None],
            y=[None],
            mode="markers",
            showlegend=False,
            hoverinfo="skip",
            marker={
                "color": [1],
                "cmin": 1,
                "cmax": max(L, 2),
                "colorscale": scale,
                "showscale": True,
                # the last layer's label sits at the bar's top end: below its tick, clear of the title
                "colorbar": {
                    **_colorbar(t("chart.layer", lang), ticks, [str(v) for v in ticks], lecture, None, height),
                    "ticklabelposition": "outside bottom",
                },
            },
        )
    )


def _ref_label(fig: go.Figure, x: float, lang: str, lecture: bool) -> None:
    """The name of the 1e-3 reference at its right end, on the line (not in a legend)."""
    fig.add_annotation(
        x=x,
        y=math.log10(UPDATE_RATIO_REF),
        xanchor="right",
        yanchor="bottom",
        showarrow=False,
        text=t("chart.ratio_ref", lang),
        font={"size": scaled_px(14, lecture), "color": GREY},
        bgcolor="rgba(255,255,255,0.7)",
    )


def update_ratio_chart(data: RunData, lang: str = "en", lecture: bool = False, height: int | None = None) -> go.Figure:
    """||dw|| / ||w|| of each block over the probe steps (log y; up to 8 layers, evenly spread for deep
    models, coloured from input (dark) to output (light), a colourbar says which), with a dashed
    reference at 1e-3 labelled on the line. `height`: px, None for Plotly's default."""
    cfg = data.info.config
    fig = go.Figure()
    _ratio_lines(fig, data, lang, lecture, height)
    end = step_range(data)
    fig.add_trace(
        go.Scatter(
            x=[0, cfg.steps],
            y=[UPDATE_RATIO_REF] * 2,
            mode="lines",
            name=t("chart.ratio_ref", lang),
            line={"color": GREY, "dash": "dash", "width": 2},
            hoverinfo="skip",
        )
    )
    _ref_label(fig, end, lang, lecture)
    if not data.probe_steps:
        _empty_note(fig, lang, lecture)
    _diverged_line(fig, data, lang, lecture)
    rng = _nice_log_range(data.probe("update_ratio"), at_least=(UPDATE_RATIO_REF / 10, UPDATE_RATIO_REF * 10))
    return _steps_layout(
        fig,
        data,
        ("chart.ratio_title", "ratio-"),
        lang,
        lecture,
        {},
        showlegend=False,
        height=height,
        yaxis={"title": {"text": t("chart.ratio_axis", lang)}, **_log_axis(rng)},
    )
