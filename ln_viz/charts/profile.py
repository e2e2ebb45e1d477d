"""The paper's Figure 3 view: per layer, gradient norms above (log y) and the residual stream's std
below (0 = embeddings), at one probe step; of one run (every weight matrix) or of several (one matrix,
one line per run)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import plotly.graph_objects as go

from ln_viz.charts.axes import _layer_ticks, _log_axis, _nice_log_range, _short_number
from ln_viz.charts.sample import _probe_index, _run_key, _run_styles, _runs_key
from ln_viz.charts.style import (
    BASE_FONT,
    DEFAULT_HEIGHT,
    GREY,
    NORM_COLORS,
    ROLE_COLORS,
    _corner_note,
    _empty_note,
    _f32,
    _hover,
    _layout,
    _plot_height,
    _top_margin,
    norm_label,
    scaled_px,
)
from ln_viz.i18n import t
from ln_viz.schema import PARAM_ROLES
from ln_viz.snapshot import RunData

PROFILE_HEIGHTS = (0.62, 0.38)  # gradient panel, std panel
PROFILE_SPACING = 0.13  # of the plot height, between the panels; more on a short chart (`_spacing`)
GRAD_DECADES = 6  # the gradient axis spans at most this many decades below the largest gradient


def _spacing(height: int | None, lecture: bool) -> float:
    """The gap between the panels as a share of the plot height: room for the lower panel's title
    (about 1.6 lines of its font) at any height, at least PROFILE_SPACING."""
    plot_px = _plot_height(height, 110, 70)
    return min(max(PROFILE_SPACING, (scaled_px(16, lecture) * 1.6 + 8) / plot_px), 0.3)


def _profile_figure(grad_title: str, lang: str, lecture: bool, height: int | None, std: bool = True) -> go.Figure:
    """Two panels stacked on one layer axis (side by side they do not fit a half-width column):
    gradient norms above (row 1: axes x, y), the residual stream's std below (row 2: x2, y2); panel
    titles left-aligned above each. The layout make_subplots(rows=2, shared_xaxes=True,
    row_heights=[0.62, 0.38], vertical_spacing=...) makes, written out: it took 15 ms a figure.
    Without `std`, the gradient panel alone, over the whole plot area."""

    def title(text: str, y: float) -> dict[str, Any]:
        return {
            "text": text,
            "x": 0,
            "xanchor": "left",
            "xref": "paper",
            "y": y,
            "yanchor": "bottom",
            "yref": "paper",
            "showarrow": False,
            "font": {"size": scaled_px(16, lecture)},
        }

    if not std:  # the panel's title is the chart's (`layer_profile`)
        return go.Figure()
    std_key = "chart.resid_std_axis" if lecture else "chart.profile_std"
    free = 1 - _spacing(height, lecture)
    top, bottom = PROFILE_HEIGHTS[0] * free, PROFILE_HEIGHTS[1] * free
    return go.Figure(
        layout={
            "xaxis": {"anchor": "y", "domain": [0.0, 1.0], "matches": "x2", "showticklabels": False, "ticks": ""},
            "yaxis": {"anchor": "x", "domain": [1 - top, 1.0]},
            "xaxis2": {"anchor": "y2", "domain": [0.0, 1.0]},
            "yaxis2": {"anchor": "x2", "domain": [0.0, bottom]},
            # the lecture view's shorter one: at 22 px the whole one ran under the legend's entries
            "annotations": [title(grad_title, 1.0), title(t(std_key, lang), bottom)],
        }
    )


def _in_panel(fig: go.Figure, trace: go.Scatter, row: int) -> None:
    """Add a trace to the profile's upper (row 1) or lower (row 2) panel."""
    trace.xaxis, trace.yaxis = ("x", "y") if row == 1 else ("x2", "y2")
    fig.add_trace(trace)


def _profile_axes(
    lang: str,
    L: int,
    grad_rng: tuple[float, float],
    std_top: float,
    lecture: bool,
    title: str,
    height: int | None,
    std: bool = True,
) -> dict[str, Any]:
    """The two panels' axes (row 1: xaxis/yaxis, row 2: xaxis2/yaxis2) and legend, for `_layout`;
    the top margin holds the chart's title and the upper panel's; the gradient axis gets as many
    decade labels as its height holds. Without `std`, the gradient panel's alone, with the layer axis."""
    layers = {"range": [-0.5, L + 0.5], **_layer_ticks(L, 0)}
    share = PROFILE_HEIGHTS[0] * 0.85 if std else 1.0
    panel_px = _plot_height(height, _top_margin(title, lecture) + 30, 100) * share
    max_ticks = max(3, int(panel_px / (scaled_px(BASE_FONT, lecture) * 1.4)))
    legend = {"orientation": "v", "x": 1.02, "xanchor": "left", "y": 1, "yanchor": "top"}
    if lecture:  # the six matrices at 24 px are taller than the plot: down the figure's side, not in a scroll box
        legend["maxheight"] = height or DEFAULT_HEIGHT
    if not std:  # layers 1..L only; no panel title above the plot
        layers = {"range": [0.5, L + 0.5], **_layer_ticks(L), "title": {"text": t("chart.layer_axis", lang)}}
        margin = {"t": _top_margin(title, lecture)}
        return {"xaxis": layers, "yaxis": _log_axis(grad_rng, max_ticks), "legend": legend, "margin": margin}
    margin = {"t": _top_margin(title, lecture) + round(scaled_px(16, lecture) * 1.4)}
    # the lecture view's shorter title: at 24 px the whole one was cut at a 1280-px screen's profile
    bottom_title = t("chart.layer_axis0_lecture" if lecture else "chart.layer_axis0", lang)
    return {
        # shared axis: numbers once, at the bottom; no tick marks under the upper panel (the lower
        # panel's title sits there)
        "xaxis": {**layers, "showticklabels": False, "ticks": ""},
        "xaxis2": {**layers, "title": {"text": bottom_title}},
        "yaxis": _log_axis(grad_rng, max_ticks),
        "yaxis2": {
            "range": [0, std_top],
            "nticks": max(2, int(panel_px * 0.6 / (scaled_px(BASE_FONT, lecture) * 1.5))),
        },
        "legend": legend,
        "margin": margin,
    }


def _grad_range(values: np.ndarray, keep: np.ndarray | None = None) -> tuple[float, float]:
    """The gradient axis: a 1-2-5 range around the values, at most GRAD_DECADES decades below the
    largest (attn.k's gradient reaches 1e-9..1e-17 in deep runs and would squash every other line),
    but always all of `keep` (the ffn.w2 line: a deep Post-LN's vanishing gradient is the point);
    smaller values are drawn at the floor and the chart says so."""
    lo, hi = _nice_log_range(values) or (1e-3, 10.0)
    floor = max(lo, hi / 10**GRAD_DECADES)
    kept = _nice_log_range(keep) if keep is not None else None
    return (min(floor, kept[0]) if kept else floor), hi


def _clip_note(fig: go.Figure, infos: Sequence[np.ndarray], floor: float, lang: str, lecture: bool) -> None:
    """A note inside the gradient panel's lower right corner when any gradient is below the axis."""
    v = np.concatenate([np.asarray(a, dtype=np.float64).ravel() for a in infos]) if infos else np.zeros(0)
    if not np.any(np.isfinite(v) & (v > 0) & (v < floor * (1 - 1e-9))):
        return
    note = t("chart.grad_floor_note", lang, floor=_short_number(floor, exponent=True))
    _corner_note(fig, note, lecture, inside="x y")


class _RunArrays(NamedTuple):
    """One run's probe arrays the profile draws, stacked once per redraw (RunData.probe stacks anew
    on every call)."""

    grad: np.ndarray  # (P, L, n_params) gradient norms
    std: np.ndarray | None  # (P, L + 1) residual std, layer 0 = the embeddings; None before the first probe


def _run_arrays(data: RunData) -> _RunArrays:
    grad = data.probe("grad_norm")
    if not data.probe_steps:
        return _RunArrays(grad, None)
    i_std = list(data.info.stat_names).index("std")
    inputs, resid = data.probe("input_stats")[:, i_std], data.probe("resid_stats")[:, :, i_std]
    return _RunArrays(grad, np.concatenate([inputs[:, None], resid], axis=1))


def _std_top(arrays: Sequence[_RunArrays]) -> float:
    """A fixed top for the std panel: the largest std of any probe step, rounded up to 1, 1.5, 2, ... x 10^k."""
    tops = [1.0]
    for a in arrays:
        if a.std is not None:
            v = a.std[np.isfinite(a.std)]
            if v.size:
                tops.append(float(v.max()))
    top = max(tops) * 1.1
    mag = 10 ** math.floor(math.log10(top))
    return math.ceil(top / mag * 2) / 2 * mag


class _ProfileInfo(NamedTuple):
    """What the profile chart draws, prepared from the runs."""

    runs: list[RunData]
    arrays: list[_RunArrays]  # per run
    picks: list[int | None]  # per run: the probe step index shown (None before its first probe)
    labels: list[str] | None  # per run's lines; None for one run's view of every weight matrix
    suffixes: list[str]  # per run: " (step N)" when the runs show different steps
    grad_title: str
    title: str
    key: str  # uirevision
    depth: int  # the deepest run's
    grad_rng: tuple[float, float]
    std_top: float


def _prepare_one(d: RunData, lang: str, step: int | None) -> _ProfileInfo:
    p = _probe_index(d, step)
    a = _run_arrays(d)
    title = (
        t("chart.profile_title", lang, step=d.probe_steps[p]) if p is not None else t("chart.profile_title_empty", lang)
    )
    g = a.grad
    w2 = _param_index(d, "ffn.w2")
    grad_rng = _grad_range(g, g[..., w2] if w2 is not None and g.size else None)
    return _ProfileInfo(
        [d],
        [a],
        [p],
        None,
        [""],
        t("chart.profile_grad", lang),
        title,
        "profile-" + _run_key(d),
        d.info.config.depth,
        grad_rng,
        _std_top([a]),
    )


def _prepare_profile(
    runs: RunData | Sequence[RunData], labels: Sequence[str] | None, lang: str, step: int | None, param: str
) -> _ProfileInfo:
    if isinstance(runs, RunData):
        return _prepare_one(runs, lang, step)
    datas = list(runs)
    arrays = [_run_arrays(d) for d in datas]
    if labels is None:
        labels = [norm_label(d.info.placement, lang) for d in datas]
    picks = [_probe_index(d, step) for d in datas]
    shown = [d.probe_steps[p] for d, p in zip(datas, picks) if p is not None]
    same_step = len(set(shown)) == 1
    at = [
        f" ({t('chart.step', lang)} {d.probe_steps[p]})" if p is not None and not same_step else ""
        for d, p in zip(datas, picks)
    ]
    index = [_param_index(d, param) for d in datas]
    grads = [a.grad[:, :, j].ravel() for d, a, j in zip(datas, arrays, index) if d.probe_steps and j is not None]
    grad_rng = _grad_range(np.concatenate(grads), np.concatenate(grads)) if grads else (1e-3, 10.0)
    if same_step:
        title = t("chart.compare_profile_title", lang, step=shown[0])
    else:
        title = t("chart.compare_profile_title_any", lang)
    depth = max((d.info.config.depth for d in datas), default=1)
    return _ProfileInfo(
        datas,
        arrays,
        picks,
        list(labels),
        at,
        t("chart.profile_param", lang, param=_param_words(datas, index, param)),
        title,
        _runs_key("cmp-profile-", datas),
        depth,
        grad_rng,
        _std_top(arrays),
    )


def _param_index(d: RunData, param: str) -> int | None:
    """Where `param` sits among the run's matrices: by its name, else by its role (ln-viz's ffn.w2 is a Llama's
    mlp.down_proj: schema.PARAM_ROLES); None when the run has no such matrix."""
    names = list(d.info.param_names)
    if param in names:
        return names.index(param)
    role = PARAM_ROLES.get(param, param)
    return next((j for j, r in enumerate(d.info.param_roles) if r == role), None)


def _param_words(datas: Sequence[RunData], index: Sequence[int | None], param: str) -> str:
    """The compared matrix as the runs name it ("ffn.w2", "mlp.down_proj", or both: "ffn.w2 / mlp.c_proj")."""
    names = [d.info.param_labels[j] for d, j in zip(datas, index) if j is not None]
    return " / ".join(dict.fromkeys(names)) or param


def _param_lines(
    fig: go.Figure, data: RunData, g: np.ndarray, p: int | None, lang: str, lecture: bool, floor: float
) -> None:
    """One run's gradient norm (`g`, stacked) of each weight matrix per layer, named as the run names them
    (a model of the user's own: its paths, a SwiGLU's gate, up and down), coloured by role; the FFN's output
    matrix (ffn.w2: the paper's Figure 3) thick and black, on top; values below the axis' `floor` drawn on it
    (the hover tells the real value)."""
    L = data.info.config.depth
    layers = np.arange(1, L + 1, dtype=np.int16)
    figure3 = _param_index(data, "ffn.w2")
    paths = data.info.param_names  # the hover names a matrix by its whole path
    for j, (name, role) in enumerate(zip(data.info.param_labels, data.info.param_roles)):
        y = g[p, :, j] if p is not None else np.full(L, np.nan)
        w2 = j == figure3
        _in_panel(
            fig,
            go.Scatter(
                x=layers,
                y=_f32(np.maximum(y, floor)),
                customdata=_f32(y),
                mode="lines+markers",
                name=name,
                line={"color": ROLE_COLORS.get(role, GREY), "width": 4 if w2 else 1.8},
                marker={"size": scaled_px(7 if w2 else 5, lecture)},
                opacity=1.0 if w2 else 0.85,
                legendrank=0 if w2 else 10 + j,
                hovertemplate=f"{paths[j]}<br>"
                + _hover(lang, ("chart.layer", "%{x}"), ("chart.grad_norm", "%{customdata:.3g}")),
            ),
            row=1,
        )


def _profile_line(
    fig: go.Figure, row: int, y: np.ndarray, name: str, line: dict[str, Any], lang: str, lecture: bool, **kw: Any
) -> None:
    """A line over the layers of one panel: row 1, a gradient norm at layers 1..L (values below the
    axis' `floor`, in `kw`, drawn on it); row 2, the residual std at 0..L. `legendgroup` (in `kw`) links
    a run's two lines and names the run in the hover."""
    floor = kw.pop("floor", None)
    start, value = (1, "chart.grad_norm") if row == 1 else (0, "chart.std")
    group = kw.get("legendgroup")
    prefix = "" if group is None else group + "<br>"
    trace = go.Scatter(
        x=np.arange(start, start + len(y), dtype=np.int16),
        y=_f32(y if floor is None else np.maximum(y, floor)),
        customdata=_f32(y),
        mode="lines+markers",
        name=name,
        line=line,
        marker={"size": scaled_px(6, lecture)},
        hovertemplate=prefix + _hover(lang, ("chart.layer", "%{x}"), (value, "%{customdata:.3g}")),
        **kw,
    )
    _in_panel(fig, trace, row=row)


def _std_at(d: RunData, a: _RunArrays, p: int | None) -> np.ndarray:
    """The residual std per layer (0 = embeddings) at probe index p; NaN before the first probe."""
    return a.std[p] if p is not None and a.std is not None else np.full(d.info.config.depth + 1, np.nan)


def layer_profile(
    runs: RunData | Sequence[RunData],
    lang: str = "en",
    step: int | None = None,
    lecture: bool = False,
    labels: Sequence[str] | None = None,
    param: str = "ffn.w2",
    height: int | None = None,
    std: bool = True,
) -> go.Figure:
    """The paper's Figure 3 view at the probe step nearest `step` (each run's last when None). One run (a
    RunData): above, the gradient norm of each weight matrix per layer (log y, ffn.w2 thick and black);
    below, the residual stream's std per layer (0 = embeddings). Several (a sequence, named by `labels`,
    by default their norm positions): the `param` gradient norm and the std, one line per run (colour =
    norm position, dash = which run). Axis ranges cover every probe step, so moving the step keeps them;
    the gradient axis spans at most GRAD_DECADES decades (smaller gradients sit on its floor, and a note
    says so). `height`: px, None for Plotly's default. `std=False` leaves out the std panel: the gradient
    panel gets the whole height (the lecture view's Compare, where it is the paper's Figure 3 for a room)."""
    info = _prepare_profile(runs, labels, lang, step, param)
    fig = _profile_figure(info.grad_title, lang, lecture, height, std)
    floor = info.grad_rng[0]
    shown: list[np.ndarray] = []
    if info.labels is None:
        d, a, p = info.runs[0], info.arrays[0], info.picks[0]
        _param_lines(fig, d, a.grad, p, lang, lecture, floor)
        shown += [a.grad[p]] if p is not None else []
        line = {"color": NORM_COLORS.get(d.info.placement, GREY), "width": 3}
        if std:
            _profile_line(fig, 2, _std_at(d, a, p), t("chart.resid_std", lang), line, lang, lecture, showlegend=False)
    else:
        styles = _run_styles(info.runs)
        rows = zip(info.runs, info.arrays, info.labels, info.suffixes, styles, info.picks)
        for d, a, label, at, (color, dash), p in rows:
            line = {"color": color, "dash": dash, "width": 3}
            j = _param_index(d, param)
            y = a.grad[p, :, j] if p is not None and j is not None else np.full(d.info.config.depth, np.nan)
            _profile_line(fig, 1, y, label + at, line, lang, lecture, legendgroup=label, floor=floor)
            shown.append(y)
            if std:
                _profile_line(fig, 2, _std_at(d, a, p), label, line, lang, lecture, legendgroup=label, showlegend=False)
    if all(p is None for p in info.picks):
        _empty_note(fig, lang, lecture, xref="x domain", yref="y domain")
    _clip_note(fig, shown, floor, lang, lecture)
    title = info.title
    if not std:  # the gradient panel's title becomes the chart's, its step (or steps) the subtitle
        title = info.grad_title + ("".join(info.title.partition(" · ")[1:]) if " · " in info.title else "")
    axes = _profile_axes(lang, info.depth, info.grad_rng, info.std_top, lecture, title, height, std)
    return _layout(fig, title, lecture, info.key, legend_below=False, height=height, **axes)
