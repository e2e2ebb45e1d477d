"""The update probes of issue 33: how far each block's weights turn in one step (the angular update, Kosson et
al. 2024: warm-up holds back its early spikes), how far Adam's second moment lags its gradient (the
preconditioner lag, Bai et al. 2025), both per layer over the steps; and the smallest per-token scale of each
norm's input per layer at a step (Odonnat et al. 2024: LayerNorm's curvature grows as 1 / sigma). The angular
update also takes several runs (a scenario's pair): one line per run, the largest over its layers. A run
recorded before these probes holds NaN for them: `has_update_probes` says whether there is anything to draw.
What each probe measures, exactly: ln_viz/probes.py."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ln_viz.charts.axes import _log_axis, _nice_log_range
from ln_viz.charts.grads import _ratio_layers, _ratio_lines
from ln_viz.charts.instability import (
    _compared_lines,
    _compared_traces,
    _layer_bars_layout,
    _over_steps,
    _prepare_layer_bars,
)
from ln_viz.charts.sample import _runs_key
from ln_viz.charts.style import GREY, PARAM_COLORS, _empty_note, _f32, _hover, _layout
from ln_viz.config import ADAM_BETAS
from ln_viz.i18n import t
from ln_viz.snapshot import RunData

Runs = RunData | Sequence[RunData]
UPDATE_PROBES = ("angular_update", "precond_lag", "norm_in_min_rms")
ANGLE_AT_LEAST = (1e-3, 1e-1)  # radians: the log axis shows at least this much
LAG_BOUND = 1 / math.sqrt(1 - ADAM_BETAS[1])  # |g| / sqrt(v_hat) never passes this once v's bias correction fades


def has_update_probes(data: RunData) -> bool:
    """Whether the run measured the update probes (False for a run recorded before them, or one without a
    probe step yet)."""
    return bool(data.probe_steps) and any(np.isfinite(data.probe(n)).any() for n in UPDATE_PROBES)


# --- the angular update per layer over the steps ---------------------------------------------------------
def _largest_angle(data: RunData) -> np.ndarray:
    """(P,) the largest angular update over the layers at each probe step (NaN where no layer has one)."""
    angles = data.probe("angular_update")
    finite = np.isfinite(angles)
    return np.where(finite.any(axis=1), np.where(finite, angles, -np.inf).max(axis=1), np.nan)


def _prepare_angles(datas: Sequence[RunData], one: bool) -> tuple[float, float]:
    """A 1-2-5 log range (radians) around the drawn angles, at least ANGLE_AT_LEAST."""
    if one:
        data = datas[0]
        layers = [layer - 1 for layer in _ratio_layers(data.info.config.depth)]
        values = data.probe("angular_update")[:, layers] if data.probe_steps else np.zeros(0)
    else:
        values = np.concatenate([_largest_angle(d) for d in datas if d.probe_steps] or [np.zeros(0)])
    return _nice_log_range(values, at_least=ANGLE_AT_LEAST) or ANGLE_AT_LEAST


def angular_update_chart(
    runs: Runs, lang: str = "en", lecture: bool = False, height: int | None = None, labels: Sequence[str] | None = None
) -> go.Figure:
    """The angle (radians, log y) by which each block's most-turned weight matrix moved in one optimizer step,
    over the probe steps. One run: a line per layer, coloured from input (dark) to output (light). Several (a
    sequence, named by `labels`, by default their norm positions): a line per run, the largest over its layers,
    styled as on the compared loss chart. `height`: px, None for Plotly's default."""
    if not isinstance(runs, RunData):
        return _compared_angles(list(runs), lang, lecture, height, labels)
    data = runs
    fig = go.Figure()
    _ratio_lines(fig, data, lang, lecture, height, "angular_update", ("chart.angular", "%{y:.3g}"))
    yaxis = {"title": {"text": t("chart.angular_axis", lang)}, **_log_axis(_prepare_angles([data], True))}
    return _over_steps(fig, data, ("chart.angular_title", "angular-"), lang, lecture, False, height=height, yaxis=yaxis)


def _compared_angles(
    datas: list[RunData], lang: str, lecture: bool, height: int | None, labels: Sequence[str] | None
) -> go.Figure:
    lines = _compared_lines(datas, labels, lang, _largest_angle)
    fig, xaxis = _compared_traces(lines, datas, ("chart.angular", "%{y:.3g}"), lang, lecture)
    yaxis = {"title": {"text": t("chart.angular_axis", lang)}, **_log_axis(_prepare_angles(datas, False))}
    key = _runs_key("angulars-", datas)
    title = t("chart.angular_compare_title", lang)
    return _layout(fig, title, lecture, key, height=height, legend_below=True, xaxis=xaxis, yaxis=yaxis)


# --- Adam's preconditioner lag per layer over the steps ----------------------------------------------------
def is_adam(data: RunData) -> bool:
    """Whether the run has a second moment to lag (Adam, GI-Adam; not SGD, not Muon)."""
    return data.info.config.optimizer == "adam"


def precond_lag_chart(data: RunData, lang: str = "en", lecture: bool = False, height: int | None = None) -> go.Figure:
    """Per layer, the largest |g| / (sqrt(v_hat) + eps) over its weight matrices after each probe step (linear y,
    from 0), with a dotted line at Adam's bound 1 / sqrt(1 - beta2): a line near it is a gradient far larger than
    v remembers. A run without Adam says so in the chart. `height`: px, None for Plotly's default."""
    fig = go.Figure()
    _ratio_lines(fig, data, lang, lecture, height, "precond_lag", ("chart.lag", "%{y:.3g}"))
    fig.add_hline(y=LAG_BOUND, line={"color": GREY, "width": 1.5, "dash": "dot"})
    if data.probe_steps and not is_adam(data):
        _empty_note(fig, lang, lecture, "chart.not_adam")
    yaxis = {"title": {"text": t("chart.lag_axis", lang)}, "range": [0, math.ceil(LAG_BOUND) + 1]}
    return _over_steps(fig, data, ("chart.lag_title", "lag-"), lang, lecture, False, height=height, yaxis=yaxis)


# --- the smallest per-token scale of each norm's input, per layer at a step --------------------------------
def norm_min_rms_chart(
    data: RunData, lang: str = "en", step: int | None = None, lecture: bool = False, height: int | None = None
) -> go.Figure:
    """Per layer, the smallest per-token std (LayerNorm) or RMS (RMSNorm, DyT) of each norm's input at a probe
    step: grouped bars, one colour per norm, log y. The lower a bar, the larger that norm's 1 / sigma gain on
    some token (LayerNorm's curvature). A model without norms says so. `height`: px."""
    info = _prepare_layer_bars(data, "norm_in_min_rms", step)
    norms = data.info.norm_names
    values = info.values if info.values.ndim == 2 else np.full((len(info.layers), len(norms)), np.nan, np.float32)
    fig = go.Figure()
    colours = list(PARAM_COLORS.values())
    for j, norm in enumerate(norms):
        label = t(f"chart.norm_site.{norm}", lang)
        fig.add_trace(
            go.Bar(
                x=info.layers,
                y=_f32(values[:, j]),
                name=label,
                marker={"color": colours[j % len(colours)]},
                hovertemplate=label + "<br>" + _hover(lang, ("chart.layer", "%{x}"), ("chart.min_rms", "%{y:.3g}")),
            )
        )
    if not norms:
        _empty_note(fig, lang, lecture, "chart.no_norms")
    elif info.step is None:
        _empty_note(fig, lang, lecture)
    rng = _nice_log_range(values, at_least=(0.1, 1.0)) or (0.1, 1.0)
    yaxis = {"title": {"text": t("chart.min_rms_axis", lang)}, **_log_axis(rng)}
    names = ("chart.min_rms_title", "minrms-")
    return _layer_bars_layout(
        fig, data, info, names, lang, lecture, barmode="group", showlegend=bool(norms), height=height, yaxis=yaxis
    )
