"""The training loss over steps, of one run (the live page: held-out loss, reference lines, the planned
learning rate, stalled and diverged marks) or of several on one axis (the Compare page: colour = norm
position, dash = which run). Axes are fixed from the config and from theory, so nothing jumps while
data streams in."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import plotly.graph_objects as go

from ln_viz.charts.axes import _log_annotations, _log_axis_up_to, _short_number
from ln_viz.charts.lr_axis import _lr_key, compare_schedules, compared_schedules, lr_axis, lr_curve, schedule
from ln_viz.charts.reference import reference_line
from ln_viz.charts.sample import (
    MAX_LOSS_POINTS,
    _run_key,
    _run_styles,
    _runs_key,
    downsample_index,
    step_range,
)
from ln_viz.charts.style import (
    GREY,
    NORM_COLORS,
    _empty_note,
    _f32,
    _hover,
    _layout,
    _note_lines,
    norm_label,
    scaled_px,
    two_lines,
)
from ln_viz.i18n import t
from ln_viz.snapshot import RunData
from ln_viz.stats import ema_debiased
from ln_viz.text import shown

RAW_OPACITY = 0.25  # the raw loss behind a smoothed line: there to see the noise, not to read


class _LossInfo(NamedTuple):
    """What the loss chart draws, prepared from the runs."""

    runs: list[RunData]
    lines: list[tuple[str, str, str, float]]  # per run's loss line: name, colour, dash, width
    colors: list[str]  # per run: the colour of its divergence mark
    top: float  # nats: the fixed top of the loss axis
    max_steps: float  # the step axis's right end (see `step_range`)
    unigrams: list[float]  # nats: one dashed reference line each
    over: int  # loss values beyond `top` (clipped, and a note says so)
    # One run's planned learning rate per step 1..steps; None for a comparison of runs, which draws no
    # held-out loss or stall.
    schedule: np.ndarray | None
    compared: list[np.ndarray]  # a comparison's planned learning rates (one when shared): the right axis


def _loss_top(datas: Sequence[RunData]) -> float:
    """A fixed top for the loss axis: above the uniform-guess loss ln(V), the unigram loss and the first
    loss, rounded up to 0.5 nats; at most twice the larger of ln(V) and the unigram loss."""
    top = 0.0
    for d in datas:
        base = max(math.log(max(d.info.vocab_size, 2)), d.info.unigram_entropy)
        first = next((v for v in d.scalars["loss"] if math.isfinite(v)), base)
        if d.info.attached and d.info.vocab_size < 2:  # a model of the user's own that names no vocabulary
            base = max(base, first)
        top = max(top, min(max(base, first), 2 * base))
    return math.ceil(top * 1.1 * 2) / 2


def _count_over(d: RunData, top: float) -> int:
    loss = np.asarray(d.scalars["loss"], dtype=np.float64)
    return int(np.sum(np.isfinite(loss) & (loss > top)))


def _unigrams(datas: Sequence[RunData]) -> list[float]:
    """The unigram losses to draw, once each: ln-viz's own runs' (an attached run's corpus is the user's)."""
    return sorted({round(d.info.unigram_entropy, 4) for d in datas if not d.info.attached})


def _prepare_loss(runs: RunData | Sequence[RunData], labels: Sequence[str] | None, lang: str) -> _LossInfo:
    datas = [runs] if isinstance(runs, RunData) else list(runs)
    top = _loss_top(datas) if datas else 5.0
    max_steps = step_range(datas) if datas else 1
    if isinstance(runs, RunData):
        color = NORM_COLORS.get(runs.info.placement, GREY)
        lines: list[tuple[str, str, str, float]] = [(t("chart.train_loss", lang), color, "solid", 2.5)]
        # a model of the user's own has no unigram loss ln-viz knows (its corpus is the user's): no line
        colors, schedule = [color], lr_curve(runs)
        unigrams = [] if runs.info.attached else [runs.info.unigram_entropy]
        compared = []
    else:
        if labels is None:
            labels = [norm_label(d.info.placement, lang) for d in datas]
        styles = _run_styles(datas)
        lines = [(label, color, dash, 3) for label, (color, dash) in zip(labels, styles)]
        colors, schedule = [color for color, _ in styles], None
        unigrams = _unigrams(datas)
        compared = compared_schedules(datas) if datas else []
    over = sum(_count_over(d, top) for d in datas)
    return _LossInfo(datas, lines, colors, top, max_steps, unigrams, over, schedule, compared)


def _loss_line(
    fig: go.Figure, d: RunData, name: str, style: tuple[str, str, float], top: float, lang: str, smoothing: float
) -> None:
    """The (downsampled) training loss of one run, clipped just above `top`; with `smoothing` > 0 its
    debiased EMA over every step (then downsampled like the raw values) in the run's colour, the raw
    line faint behind it in the same legend group, and the hover of the smoothed line says both."""
    color, dash, width = style
    steps = np.asarray(d.scalars["step"], dtype=np.int64)
    loss = np.asarray(d.scalars["loss"], dtype=np.float64)
    if steps.size == 0:
        fig.add_trace(go.Scatter(x=[], y=[], mode="lines", name=name, line={"color": color, "dash": dash}))
        return
    idx = downsample_index(loss, MAX_LOSS_POINTS)
    x, y = steps[idx].astype(np.int32), loss[idx]
    few = int(np.isfinite(y).sum()) < 3  # a line through one or two points is invisible
    raw = go.Scatter(
        x=x,
        y=_f32(_clip(y, top)),
        customdata=_f32(y),
        mode="lines+markers" if few else "lines",
        name=name,
        line={"color": color, "width": width, "dash": dash},
        hovertemplate=_hover(lang, ("chart.step", "%{x}"), ("chart.loss", "%{customdata:.3f}")),
    )
    if smoothing <= 0:
        fig.add_trace(raw)
        return
    smooth = np.asarray(ema_debiased(loss, smoothing))[idx]
    group = f"loss-{len(fig.data)}"
    raw.update(opacity=RAW_OPACITY, showlegend=False, legendgroup=group, hoverinfo="skip", hovertemplate=None)
    fig.add_trace(raw)
    hover = _hover(
        lang,
        ("chart.step", "%{x}"),
        ("chart.smoothed_loss", "%{customdata[0]:.3f}"),
        ("chart.raw_loss", "%{customdata[1]:.3f}"),
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=_f32(_clip(smooth, top)),
            customdata=_f32(np.column_stack([smooth, y])),
            mode="lines+markers" if few else "lines",
            name=name,
            legendgroup=group,
            line={"color": color, "width": width, "dash": dash},
            hovertemplate=hover,
        )
    )


def _clip(y: np.ndarray, top: float) -> np.ndarray:
    """Finite values clipped just above `top` (off the chart, visibly up), the rest NaN (a gap)."""
    return np.where(np.isfinite(y), np.minimum(y, top * 1.02), np.nan)


def _eval_markers(fig: go.Figure, data: RunData, top: float, lang: str, lecture: bool, color: str) -> None:
    """Held-out loss as open diamonds, clipped like the training loss."""
    steps = np.asarray(data.scalars["step"], dtype=np.int64)
    ev = np.asarray(data.scalars["eval_loss"], dtype=np.float64)
    has = np.isfinite(ev)
    fig.add_trace(
        go.Scatter(
            x=steps[has].astype(np.int32),
            y=_f32(np.minimum(ev[has], top * 1.02)),
            customdata=_f32(ev[has]),
            mode="markers",
            name=t("chart.eval_loss", lang),
            marker={
                "symbol": "diamond",
                "size": scaled_px(11, lecture),
                "color": "white",
                "line": {"color": color, "width": 2.5},
            },
            hovertemplate=_hover(lang, ("chart.step", "%{x}"), ("chart.eval_loss", "%{customdata:.3f}")),
        )
    )


def _stalled_band(fig: go.Figure, data: RunData, top: float, lang: str, lecture: bool) -> None:
    """A shaded band from the step the loss stalled at the unigram loss, with a label."""
    if data.stalled_since is None:
        return
    x1 = max(data.steps_done, data.stalled_since)
    fig.add_vrect(x0=data.stalled_since, x1=x1, fillcolor="#E69F00", opacity=0.15, line_width=0, layer="below")
    # from the band's start a label would run off the right edge (its first line is ~190 px, three quarters
    # of a phone's plot): past a third of the axis it ends at the plot's right edge, over the band
    late = data.stalled_since > step_range(data) / 3
    fig.add_annotation(
        x=1 if late else data.stalled_since,
        xref="x domain" if late else "x",
        y=top * 0.97,
        xanchor="right" if late else "left",
        yanchor="top",
        showarrow=False,
        text=two_lines(t("chart.stalled_since", lang, step=data.stalled_since)),
        font={"color": "#8A5A00", "size": scaled_px(15, lecture)},
        bgcolor="rgba(255,255,255,0.8)",
    )


def _divergence_marker(fig: go.Figure, d: RunData, top: float, lang: str, lecture: bool, color: str) -> None:
    """A cross and a label where the run diverged; at the last finite loss or near the top."""
    if d.diverged_at is None:
        return
    loss = np.asarray(d.scalars["loss"], dtype=np.float64)
    finite = loss[np.isfinite(loss)]
    y = float(min(finite[-1], top * 0.95)) if finite.size else top * 0.9
    text = t("chart.diverged_at", lang, step=d.diverged_at)
    fig.add_trace(
        go.Scatter(
            x=[d.diverged_at],
            y=[y],
            mode="markers",
            name=text,
            showlegend=False,  # labelled beside it
            marker={"symbol": "x-thin", "size": scaled_px(22, lecture), "line": {"width": 4, "color": color}},
            hovertemplate=text + "<extra></extra>",
        )
    )
    fig.add_vline(x=d.diverged_at, line={"color": color, "dash": "dash", "width": 1.5})
    right = d.diverged_at < step_range(d) / 2  # the label goes where there is room
    # below the cross (inside the plot, off the title; the unigram label sits at the line's right end
    # above a diverging loss), unless the cross is near the bottom
    high = y > top * 0.3
    fig.add_annotation(
        x=d.diverged_at,
        y=y,
        text=text,
        showarrow=True,
        arrowhead=0,
        ax=20 if right else -20,
        ay=40 if high else -40,
        xanchor="left" if right else "right",
        yanchor="top" if high else "bottom",
        font={"color": color, "size": scaled_px(16, lecture)},
        bgcolor="rgba(255,255,255,0.85)",
    )


def _attached_loss_title(card: dict[str, Any], lang: str) -> str:
    """ "Training loss · LlamaForCausalLM: Pre-LN, 2 blocks": a model of the user's own, by its card (its
    optimizer, schedule and warm-up are its loop's: not known here)."""
    placement = norm_label(str(card.get("placement", "unknown")), lang)
    model = shown(str(card.get("family", "?")), 40)
    return t("chart.loss_title_attached", lang, model=model, norm=placement, depth=card.get("depth", "?"))


def _loss_title(cfg: Any, lang: str) -> str:
    """ "Training loss · Pre-LN, 6 layers · lr 3e-3 · no warm-up": what the run is set to, in words and
    numbers, with the optimizer when it is not Adam (the paper's)."""
    parts = [t("chart.loss_title", lang, norm=norm_label(cfg.norm_position, lang), depth=cfg.depth)]
    if cfg.optimizer != "adam":
        parts.append(t(f"optimizer.{cfg.optimizer}", lang))
    parts.append(t("chart.lr_short", lang, lr=_short_number(cfg.lr, exponent=cfg.lr < 0.01)))
    warm = t("chart.warmup_steps", lang, n=cfg.warmup_steps) if cfg.warmup_steps else t("chart.no_warmup", lang)
    return " · ".join([*parts, warm])


def _loss_log_axis(info: _LossInfo) -> dict[str, Any]:
    """The loss on a log axis from under its lowest value and reference line up to the linear axis's top."""
    values = [np.asarray(d.scalars[k], dtype=np.float64) for d in info.runs for k in ("loss", "eval_loss")]
    floors = [d.info.floor for d in info.runs if d.info.floor is not None]
    return _log_axis_up_to(np.concatenate([*values, info.unigrams, floors]), info.top)


def _loss_layout(info: _LossInfo, lang: str, log_y: bool) -> tuple[str, str, dict[str, Any]]:
    """Title, uirevision and axes of the loss chart (a right axis for the learning rate of one run)."""
    xaxis: dict[str, Any] = {"title": {"text": t("chart.step_axis", lang)}, "range": [0, info.max_steps]}
    if info.max_steps <= 12:  # a run that diverged at once: whole steps only
        xaxis["dtick"] = 1
    yaxis = _loss_log_axis(info) if log_y else {"range": [0, info.top]}
    unit = "chart.loss_axis_attached" if any(d.info.attached for d in info.runs) else "chart.loss_axis"  # per token
    axes: dict[str, Any] = {"xaxis": xaxis, "yaxis": {"title": {"text": t(unit, lang)}, **yaxis}}
    if info.schedule is None:
        if info.compared:  # the compared runs' learning rates (issue 21 N28)
            axes["yaxis2"] = lr_axis(np.concatenate(info.compared), info.runs[0].info.config.lr, lang)
        return t("chart.compare_loss_title", lang), _runs_key("cmp-loss-", info.runs), axes
    cfg = info.runs[0].info.config
    xaxis["showgrid"] = True
    axes["yaxis2"] = lr_axis(info.schedule, cfg.lr, lang)
    card = info.runs[0].info.model_card
    title = _loss_title(cfg, lang) if card is None else _attached_loss_title(card, lang)
    return title, "loss-" + _run_key(info.runs[0]), axes


def loss_chart(
    runs: RunData | Sequence[RunData],
    lang: str = "en",
    lecture: bool = False,
    labels: Sequence[str] | None = None,
    height: int | None = None,
    smoothing: float = 0.0,
    log_y: bool = False,
) -> go.Figure:
    """Training loss per step with the unigram loss (dashed grey) and a cross where a run diverged.
    One run (a RunData): also its held-out loss, the entropy floor when known (dash-dot), the planned
    learning-rate schedule on a right axis (dotted) and a shaded band while it is stalled. Several (a
    sequence, named by `labels`, by default their norm positions): one line each, colour = norm
    position, dash = which run. Axes are fixed: steps 0..config.steps, loss 0..a top set by ln(V), the
    unigram loss and the first loss (larger values are clipped, and a note says so); when every run
    has diverged the step axis ends just past the divergence. The title names the run's settings
    (norm, depth, optimizer when not Adam, lr, warm-up); `height`: px, None for Plotly's default.
    `smoothing` (0 to 0.99, TensorBoard's weight; 0: the raw loss alone) draws each loss line smoothed
    over its raw values drawn faint; `log_y` the loss on a log axis (the same top)."""
    info = _prepare_loss(runs, labels, lang)
    fig = go.Figure()
    for d, (name, color, dash, width) in zip(info.runs, info.lines):
        _loss_line(fig, d, name, (color, dash, width), info.top, lang, smoothing)
    if info.schedule is not None:
        _eval_markers(fig, info.runs[0], info.top, lang, lecture, info.colors[0])
    for u in info.unigrams:
        last = u == info.unigrams[-1]
        reference_line(fig, info.max_steps, u, "chart.unigram", (GREY, "dash"), lang, lecture, last, info.top)
    if info.schedule is not None:
        data = info.runs[0]
        if data.info.floor is not None:
            floor_style = ("#009E73", "dashdot")
            floor = data.info.floor
            reference_line(fig, info.max_steps, floor, "chart.floor", floor_style, lang, lecture, True, info.top)
        schedule(fig, data, info.schedule, lang, lecture)
        _stalled_band(fig, data, info.top, lang, lecture)
    elif info.compared:
        names = [name for name, *_ in info.lines]
        compare_schedules(fig, info.compared, names, info.colors, lang, _lr_key(info.runs))
    for d, color in zip(info.runs, info.colors):
        _divergence_marker(fig, d, info.top, lang, lecture, color)
    note = _note_lines(t("chart.clipped", lang, count=info.over, limit=f"{info.top:g}"), lecture) if info.over else None
    if not any(d.scalars["step"] for d in info.runs):
        _empty_note(fig, lang, lecture)
    if log_y:
        _log_annotations(fig)
    title, key, axes = _loss_layout(info, lang, log_y)
    key += "-log" if log_y else ""  # a new axis type, not the zoom kept from the linear one
    return _layout(fig, title, lecture, key, height=height, note=note, **axes)
