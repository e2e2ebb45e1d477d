"""The instability probes (issue 19): the largest pre-softmax attention logit per layer over the steps
(log y, Wortsman et al. 2023's attention-logit growth, which QK-norm stops), the output normaliser log Z
over the steps (what z-loss pulls to 0), the massive-activation ratio per layer at a step (Sun et al.
2024), and DyT's saturation per norm at a step (Zhu et al. 2025). A run recorded before these probes
existed holds NaN for them: `has_instability_probes` says whether there is anything to draw. The two
charts over the steps also take several runs (the Compare page): one line per run, the largest logit
over the layers (Wortsman et al.'s figure) and the mean log Z."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import plotly.graph_objects as go

from ln_viz.charts.axes import _layer_ticks, _log_axis, _nice_log_range
from ln_viz.charts.grads import _ratio_layers, _ratio_lines, _steps_layout
from ln_viz.charts.sample import _probe_index, _run_key, _run_styles, _runs_key, step_range
from ln_viz.charts.style import GREY, NORM_COLORS, PARAM_COLORS, _empty_note, _f32, _hover, _layout, norm_label
from ln_viz.i18n import t
from ln_viz.schema import Stat
from ln_viz.snapshot import RunData

Runs = RunData | Sequence[RunData]  # one run (its own view) or several (compared)
INSTABILITY_PROBES = ("attn_logit_max", "logz_stats", "massive_act")  # dyt_saturation: NaN unless DyT


def measured(data: RunData, probe: str) -> bool:
    """Whether the run holds a finite value of `probe` (False before its first probe step too). A run recorded
    before the probe, or imported from a file without it, holds NaN (or, overflowed, inf) at every step: its
    chart says the run did not measure it, not an empty chart titled as if it had (hostile round 4 L9)."""
    return bool(data.probe_steps) and bool(np.isfinite(data.probe(probe)).any())


def _note_unmeasured(fig: go.Figure, datas: Sequence[RunData], probe: str, lang: str, lecture: bool) -> bool:
    """The "not measured" note where every run has probe steps but none a value of `probe`; whether it was put."""
    if datas and all(d.probe_steps for d in datas) and not any(measured(d, probe) for d in datas):
        _empty_note(fig, lang, lecture, "chart.not_measured")
        return True
    return False


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


def attn_logit_chart(
    runs: Runs, lang: str = "en", lecture: bool = False, height: int | None = None, labels: Sequence[str] | None = None
) -> go.Figure:
    """The largest |q.k|/sqrt(d_head) over the probe steps, log y. One run: a line per layer, coloured
    from input, dark, to output, light. Several (a sequence, named by `labels`, by default their norm
    positions): a line per run, the largest over its layers, styled as on the compared loss chart.
    `height`: px, None for Plotly's default."""
    if not isinstance(runs, RunData):
        return _compared(_prepare_compared_logits(runs, labels, lang), "attn", lang, lecture, height)
    data = runs
    info = _prepare_attn_logits(data)
    fig = go.Figure()
    _ratio_lines(fig, data, lang, lecture, height, "attn_logit_max", ("chart.attn_logit", "%{y:.3g}"))
    _head_hover(fig, data, info.layers, lang)
    yaxis = {"title": {"text": t("chart.attn_logit_axis", lang)}, **_log_axis(info.rng)}
    _note_unmeasured(fig, [data], "attn_logit_max", lang, lecture)
    return _over_steps(
        fig, data, ("chart.attn_logit_title", "logit-"), lang, lecture, False, height=height, yaxis=yaxis
    )


def _head_hover(fig: go.Figure, data: RunData, layers: list[int], lang: str) -> None:
    """Each layer's line also names its heads' largest logits at the step (`attn_logit_max_head`, measured over
    the whole batch: QK-Clip's S), where the run measured them (issue 33; runs from before hold NaN)."""
    heads = data.probe("attn_logit_max_head") if data.probe_steps else np.zeros((0, 0, 0))
    if not np.isfinite(heads).any():
        return
    label = t("chart.attn_logit_heads", lang)
    for trace, layer in zip(fig.data, layers):  # _ratio_lines' first traces: one per shown layer, in order
        trace.customdata = [" · ".join(f"{v:.3g}" for v in row) for row in heads[:, layer - 1]]
        trace.hovertemplate = trace.hovertemplate.replace("<extra>", f"<br>{label} %{{customdata}}<extra>")


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


def log_z_chart(
    runs: Runs, lang: str = "en", lecture: bool = False, height: int | None = None, labels: Sequence[str] | None = None
) -> go.Figure:
    """Mean log Z (solid) and the largest |log Z| (dashed) of the output logits over the probe steps,
    with a grey line at 0 (the softmax's normaliser Z = 1, where z-loss pulls it). Several runs (named by
    `labels`): each run's mean log Z, styled as on the compared loss chart. `height`: px."""
    if not isinstance(runs, RunData):
        return _compared(_prepare_compared_log_z(runs, labels, lang), "logz", lang, lecture, height)
    data = runs
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
    _note_unmeasured(fig, [data], "logz_stats", lang, lecture)
    return _over_steps(fig, data, ("chart.logz_title", "logz-"), lang, lecture, True, height=height, yaxis=yaxis)


# --- several runs over the steps (Compare) ------------------------------------------------------
class _ComparedInfo(NamedTuple):
    """One line per run: its name, (colour, dash), probe steps (P,) and values (P,); and the y range
    (log for the attention logits, None for log Z: from 0, with the data)."""

    runs: list[RunData]
    lines: list[tuple[str, tuple[str, str], np.ndarray, np.ndarray]]
    rng: tuple[float, float] | None


def _compared_lines(
    datas: Sequence[RunData], labels: Sequence[str] | None, lang: str, values
) -> list[tuple[str, tuple[str, str], np.ndarray, np.ndarray]]:
    """(name, style, steps, `values(data)`) per run; a run without a probe step yet has no points."""
    datas = list(datas)
    names = list(labels) if labels is not None else [norm_label(d.info.placement, lang) for d in datas]
    return [
        (
            name,
            style,
            np.asarray(d.probe_steps, np.int32),
            _f32(values(d)) if d.probe_steps else np.zeros(0, np.float32),
        )
        for d, name, style in zip(datas, names, _run_styles(datas))
    ]


def _largest_logit(data: RunData) -> np.ndarray:
    """(P,) the largest attention logit over the layers at each probe step; NaN where no layer has one
    (a diverged step, a run from before the probe)."""
    logits = data.probe("attn_logit_max")
    finite = np.isfinite(logits)
    return np.where(finite.any(axis=1), np.where(finite, logits, -np.inf).max(axis=1), np.nan)


def _prepare_compared_logits(datas: Sequence[RunData], labels: Sequence[str] | None, lang: str) -> _ComparedInfo:
    """Each run's largest logit per probe step, and one 1-2-5 log range for all, at least 1 to 10."""
    lines = _compared_lines(datas, labels, lang, _largest_logit)
    values = np.concatenate([v for *_, v in lines]) if lines else np.zeros(0)
    return _ComparedInfo(list(datas), lines, _nice_log_range(values, at_least=(1.0, 10.0)) or (1.0, 10.0))


def _prepare_compared_log_z(datas: Sequence[RunData], labels: Sequence[str] | None, lang: str) -> _ComparedInfo:
    """Each run's mean log Z per probe step (the axis starts at 0, where z-loss pulls it)."""
    return _ComparedInfo(
        list(datas), _compared_lines(datas, labels, lang, lambda d: d.probe("logz_stats")[:, Stat.MEAN]), None
    )


_COMPARED = {  # which: (title key, y axis title key, hover value, uirevision prefix)
    "attn": ("chart.attn_logit_compare_title", "chart.attn_logit_axis", ("chart.attn_logit", "%{y:.3g}"), "logits-"),
    "logz": ("chart.logz_compare_title", "chart.logz_axis", ("chart.logz_mean", "%{y:.3g}"), "logzs-"),
}


def _compared_traces(lines, runs, value: tuple[str, str], lang: str, lecture: bool) -> tuple[go.Figure, dict]:
    """A figure with a line per run of `lines` (name, (colour, dash), steps, values) as on the compared losses,
    `value` the hover's (key, format), a note where no run has a point; and its step axis over `runs`."""
    fig = go.Figure()
    for name, (color, dash), steps, y in lines:
        fig.add_trace(
            go.Scatter(
                x=steps,
                y=y,
                mode="lines" if steps.size > 2 else "lines+markers",
                name=name,
                line={"color": color, "dash": dash, "width": 3},
                hovertemplate=name + "<br>" + _hover(lang, ("chart.step", "%{x}"), value),
            )
        )
    if not any(steps.size for _, _, steps, _ in lines):
        _empty_note(fig, lang, lecture)
    end = step_range(runs)
    xaxis = {"title": {"text": t("chart.step_axis", lang)}, "range": [0, end], **({"dtick": 1} if end <= 12 else {})}
    return fig, xaxis


def _compared(info: _ComparedInfo, which: str, lang: str, lecture: bool, height: int | None) -> go.Figure:
    """The lines of `info`, a legend under the chart (the runs' names, as on the compared losses)."""
    title_key, axis_key, value, key = _COMPARED[which]
    fig, xaxis = _compared_traces(info.lines, info.runs, value, lang, lecture)
    _note_unmeasured(fig, info.runs, "attn_logit_max" if which == "attn" else "logz_stats", lang, lecture)
    if which == "logz":
        fig.add_hline(y=0, line={"color": GREY, "width": 1.5, "dash": "dot"})
        yaxis = {"zeroline": False, "rangemode": "tozero"}
    else:
        yaxis = _log_axis(info.rng)
    yaxis = {"title": {"text": t(axis_key, lang)}, **yaxis}
    uirevision = _runs_key(key, info.runs)
    return _layout(fig, t(title_key, lang), lecture, uirevision, height=height, xaxis=xaxis, yaxis=yaxis)


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
    else:
        _note_unmeasured(fig, [data], "massive_act", lang, lecture)
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
