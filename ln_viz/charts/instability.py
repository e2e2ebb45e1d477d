"""The instability probes (issue 19): the largest pre-softmax attention logit per layer over the steps
(log y, Wortsman et al. 2023's attention-logit growth, which QK-norm stops), the output normaliser log Z
over the steps (what z-loss pulls to 0), the massive-activation ratio per layer at a step (Sun et al.
2024), and DyT's saturation per norm at a step (Zhu et al. 2025). A run recorded before these probes
existed holds NaN for them: `has_instability_probes` says whether there is anything to draw."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import plotly.graph_objects as go

from ln_viz.charts.axes import _layer_ticks, _log_axis, _nice_log_range
from ln_viz.charts.grads import _ratio_layers, _ratio_lines, _steps_layout
from ln_viz.charts.sample import _probe_index, _run_key
from ln_viz.charts.style import GREY, NORM_COLORS, PARAM_COLORS, _empty_note, _f32, _hover, _layout
from ln_viz.i18n import t
from ln_viz.schema import Stat
from ln_viz.snapshot import RunData

INSTABILITY_PROBES = ("attn_logit_max", "logz_stats", "massive_act")  # dyt_saturation: NaN unless DyT


def has_instability_probes(data: RunData) -> bool:
    """Whether the run measured the instability probes (False for a run recorded before them, or one
    without a probe step yet)."""
    return bool(data.probe_steps) and any(np.isfinite(data.probe(n)).any() for n in INSTABILITY_PROBES)


# --- the largest attention logit per layer over the steps --------------------------------------
class _LogitInfo(NamedTuple):
    """The layers that get a line (at most MAX_RATIO_LAYERS, evenly spread) and the log y range."""

    layers: list[int]
    rng: tuple[float, float]


def _prepare_attn_logits(data: RunData) -> _LogitInfo:
    """Which layers are drawn and a 1-2-5 log range around their logits, at least 1 to 10 (with gains at 1
    QK-norm keeps every logit under sqrt(head width), 4 here)."""
    layers = _ratio_layers(data.info.config.depth)
    values = data.probe("attn_logit_max")[:, [layer - 1 for layer in layers]] if data.probe_steps else np.zeros(0)
    return _LogitInfo(layers, _nice_log_range(values, at_least=(1.0, 10.0)) or (1.0, 10.0))


def attn_logit_chart(data: RunData, lang: str = "en", lecture: bool = False, height: int | None = None) -> go.Figure:
    """The largest |q.k|/sqrt(d_head) of each layer over the probe steps (log y; one line per layer,
    coloured from input, dark, to output, light). `height`: px, None for Plotly's default."""
    info = _prepare_attn_logits(data)
    fig = go.Figure()
    _ratio_lines(fig, data, lang, lecture, height, "attn_logit_max", ("chart.attn_logit", "%{y:.3g}"))
    yaxis = {"title": {"text": t("chart.attn_logit_axis", lang)}, **_log_axis(info.rng)}
    return _over_steps(
        fig, data, ("chart.attn_logit_title", "logit-"), lang, lecture, False, height=height, yaxis=yaxis
    )


def _over_steps(
    fig: go.Figure, data: RunData, names: tuple[str, str], lang: str, lecture: bool, legend: bool, **extra
) -> go.Figure:
    """A chart over the steps: the waiting note before the first probe, a legend under it or none."""
    if not data.probe_steps:
        _empty_note(fig, lang, lecture)
    return _steps_layout(fig, data, names, lang, lecture, {}, legend_below=legend, showlegend=legend, **extra)


# --- log Z over the steps ------------------------------------------------------------------------
class _LogZInfo(NamedTuple):
    steps: np.ndarray  # (P,) probe steps
    mean: np.ndarray  # (P,) mean log Z over the step's tokens
    max_abs: np.ndarray  # (P,) largest |log Z|


def _prepare_log_z(data: RunData) -> _LogZInfo:
    """The probe steps, the mean log Z and the largest |log Z| of each."""
    stats = data.probe("logz_stats") if data.probe_steps else np.zeros((0, len(Stat)))
    return _LogZInfo(np.asarray(data.probe_steps, np.int32), _f32(stats[:, Stat.MEAN]), _f32(stats[:, Stat.MAX_ABS]))


def log_z_chart(data: RunData, lang: str = "en", lecture: bool = False, height: int | None = None) -> go.Figure:
    """Mean log Z (solid) and the largest |log Z| (dashed) of the output logits over the probe steps,
    with a grey line at 0 (the softmax's normaliser Z = 1, where z-loss pulls it). `height`: px."""
    info = _prepare_log_z(data)
    fig = go.Figure()
    mode = "lines" if info.steps.size > 2 else "lines+markers"
    for key, y, dash in (("chart.logz_mean", info.mean, "solid"), ("chart.logz_max", info.max_abs, "dash")):
        name = t(key, lang)
        fig.add_trace(
            go.Scatter(
                x=info.steps,
                y=y,
                mode=mode,
                name=name,
                line={
                    "color": NORM_COLORS["pre"] if dash == "solid" else NORM_COLORS["post"],
                    "width": 2.2,
                    "dash": dash,
                },
                hovertemplate=name + "<br>" + _hover(lang, ("chart.step", "%{x}"), ("chart.logz", "%{y:.3g}")),
            )
        )
    fig.add_hline(y=0, line={"color": GREY, "width": 1.5, "dash": "dot"})
    # under the x axis: above the plot the legend ran into the title's second line
    yaxis = {"title": {"text": t("chart.logz_axis", lang)}, "zeroline": False, "rangemode": "tozero"}
    return _over_steps(fig, data, ("chart.logz_title", "logz-"), lang, lecture, True, height=height, yaxis=yaxis)


# --- per layer at a step: massive activations, DyT saturation -----------------------------------
class _LayerBarsInfo(NamedTuple):
    step: int | None  # the probe step shown; None before the first
    layers: np.ndarray  # (L,) 1-based
    values: np.ndarray  # (L,) or (L, norms): the probe at that step


def _prepare_layer_bars(data: RunData, probe: str, step: int | None) -> _LayerBarsInfo:
    """One probe's values per layer at the probe step nearest `step` (the last when None)."""
    i = _probe_index(data, step)
    L = data.info.config.depth
    values = data.probe(probe)[i] if i is not None else np.full((L,), np.nan)
    return _LayerBarsInfo(None if i is None else data.probe_steps[i], np.arange(1, L + 1), _f32(values))


def _prepare_massive(data: RunData, step: int | None = None) -> tuple[_LayerBarsInfo, tuple[float, float]]:
    """The ratios per layer at the step, and a log range from 1 (|h| all alike) up past the largest."""
    info = _prepare_layer_bars(data, "massive_act", step)
    return info, _nice_log_range(info.values, at_least=(1.0, 10.0)) or (1.0, 10.0)


def _layer_bars_layout(
    fig: go.Figure, data: RunData, info: _LayerBarsInfo, names: tuple[str, str], lang: str, lecture: bool, **extra
) -> go.Figure:
    """Layers on x, the step in the title (`names`: the title's key and the uirevision's prefix)."""
    title_key, key = names
    step = "-" if info.step is None else info.step
    L = len(info.layers)
    xaxis = {"title": {"text": t("chart.layer_axis", lang)}, "range": [0.5, L + 0.5], **_layer_ticks(L)}
    return _layout(fig, t(title_key, lang, step=step), lecture, key + _run_key(data), xaxis=xaxis, **extra)


def massive_act_chart(
    data: RunData, lang: str = "en", step: int | None = None, lecture: bool = False, height: int | None = None
) -> go.Figure:
    """Largest |h| over median |h| of the residual stream after each block at a probe step (bars, log y;
    1 would be a stream whose values are all of one size). `height`: px, None for Plotly's default."""
    info, rng = _prepare_massive(data, step)
    name = t("chart.massive", lang)
    fig = go.Figure(
        go.Bar(
            x=info.layers,
            y=info.values,
            name=name,
            marker={"color": NORM_COLORS["pre"]},
            hovertemplate=_hover(lang, ("chart.layer", "%{x}"), ("chart.massive", "%{y:.3g}")),
        )
    )
    if info.step is None:
        _empty_note(fig, lang, lecture)
    yaxis = {"title": {"text": t("chart.massive_axis", lang)}, **_log_axis(rng)}
    names = ("chart.massive_title", "massive-")
    return _layer_bars_layout(fig, data, info, names, lang, lecture, showlegend=False, height=height, yaxis=yaxis)


def _prepare_dyt(data: RunData, step: int | None = None) -> _LayerBarsInfo:
    """Each DyT norm's saturated share (%) per layer at the step; all NaN for a run without DyT."""
    info = _prepare_layer_bars(data, "dyt_saturation", step)
    if info.values.ndim == 1:  # no probe step yet: one NaN per (layer, norm)
        values = np.full((len(info.layers), len(data.info.norm_names)), np.nan, np.float32)
    else:
        values = info.values
    return info._replace(values=_f32(100 * values))


def is_dyt(data: RunData) -> bool:
    """Whether the run's norms are DyT (only then has it a saturation to draw)."""
    return data.info.config.norm_type == "dyt" and bool(data.info.norm_names)


def dyt_saturation_chart(
    data: RunData, lang: str = "en", step: int | None = None, lecture: bool = False, height: int | None = None
) -> go.Figure:
    """Per layer, the share (%) of each DyT norm's inputs with |alpha x| > 2 (tanh past 0.96, its slope
    under 0.07) at a probe step: grouped bars, one colour per norm. A run without DyT says so in the
    chart. `height`: px, None for Plotly's default."""
    info = _prepare_dyt(data, step)
    fig = go.Figure()
    colours = list(PARAM_COLORS.values())
    for j, norm in enumerate(data.info.norm_names):
        label = t(f"chart.norm_site.{norm}", lang)
        fig.add_trace(
            go.Bar(
                x=info.layers,
                y=info.values[:, j],
                name=label,
                marker={"color": colours[j % len(colours)]},
                hovertemplate=label + "<br>" + _hover(lang, ("chart.layer", "%{x}"), ("chart.dyt_sat", "%{y:.1f} %")),
            )
        )
    if not is_dyt(data):
        _empty_note(fig, lang, lecture, "chart.not_dyt")
    elif info.step is None:
        _empty_note(fig, lang, lecture)
    yaxis = {"title": {"text": t("chart.dyt_axis", lang)}, "range": [0, 100], "ticksuffix": " %"}
    names = ("chart.dyt_title", "dyt-")
    return _layer_bars_layout(
        fig, data, info, names, lang, lecture, barmode="group", showlegend=is_dyt(data), height=height, yaxis=yaxis
    )
