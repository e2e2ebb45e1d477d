"""How the residual stream's values are spread after each layer at one probe step: a layer x value
heatmap of the fixed-edge histograms with each layer's ±1 std, and after a run an animation with one
frame per probe step (step slider, Play/Pause), all driven in the browser.

The value axis is symmetric-log: cells are drawn at asinh(value) (linear within ±1, logarithmic
beyond), labelled in real values, so a LayerNorm output of width 1 and a 24-layer Pre-LN stream of
width 60 are both readable on one axis. The probes' bins are evenly spaced in asinh (`names.HIST_EDGES`);
runs recorded with the old linear ±16 edges draw with theirs on the same axis."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from ln_viz.charts.axes import _colorbar, _layer_ticks
from ln_viz.charts.sample import _probe_index, _run_key
from ln_viz.charts.style import _empty_note, _f32, _hover, _layout, _scale, _title_text, _top_margin, scaled_px
from ln_viz.i18n import t
from ln_viz.snapshot import RunData

# Activation histograms go out as uint8 codes of log10(share of values in a bin), so the animation with
# one frame per probe step stays small: code 0 = empty bin (white), 1..250 = log10 share from
# ACT_LOG_MIN to 0 (shares below 10^ACT_LOG_MIN get code 1).
ACT_LOG_MIN = -5.0
ACT_CODES = 249


def _act_codes(hist: np.ndarray) -> np.ndarray:
    """uint8 colour codes of histogram shares: 0 empty, 1..ACT_CODES+1 for log10 share ACT_LOG_MIN..0."""
    h = np.asarray(hist, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        lg = np.log10(np.where(h > 0, h, np.nan))
    frac = np.clip((lg - ACT_LOG_MIN) / -ACT_LOG_MIN, 0.0, 1.0)
    codes = np.where(np.isfinite(lg), 1 + np.round(frac * ACT_CODES), 0)
    return codes.astype(np.uint8)


def _act_colorscale() -> list[list[Any]]:
    """White for empty bins, then viridis: dark = rare values, bright = common ones (bright = large, as
    in the gradient heatmap beside it)."""
    top = ACT_CODES + 1
    cols = sample_colorscale("Viridis", list(np.linspace(0.0, 1.0, 9)))
    scale: list[list[Any]] = [[0.0, "white"], [0.5 / top, "white"]]
    for i, c in enumerate(cols):
        scale.append([(1 + i * ACT_CODES / (len(cols) - 1)) / top, c])
    return scale


def _act_code_ticks() -> tuple[list[float], list[str]]:
    vals, labels = [], []
    for k in range(int(ACT_LOG_MIN), 1):
        vals.append(1 + (k - ACT_LOG_MIN) / -ACT_LOG_MIN * ACT_CODES)
        labels.append(f"{100 * 10.0**k:g}%")
    return vals, labels


VALUE_WIDTHS = (4.0, 16.0, 64.0)  # real units: the value axis spans the smallest of these (or the edges) that fits


def _u(x: Any) -> np.ndarray:
    """Where a value is drawn on the symmetric-log value axis."""
    return np.arcsinh(np.asarray(x, dtype=np.float64))


class _ActGrid:
    """Which bins the distribution chart draws, the same for every probe step of a run (so neither the
    axis nor the frames change shape): the value axis spans ±4, ±16, ±64 or the histogram's edges, the
    smallest that holds every nonempty bin of the run; when any value ever fell beyond the edges, two
    open bins are added at the sides, coloured on the same scale: the share of values beyond. Cell
    edges (`x_edges`) are in drawn units, asinh(value)."""

    def __init__(self, data: RunData) -> None:
        edges = np.asarray(data.info.hist_edges, dtype=np.float64)
        names = list(data.info.stat_names)
        self.i_below, self.i_above = names.index("frac_below"), names.index("frac_above")
        self.edge = float(edges[-1])
        self.overflow = False
        reach = self.edge
        if data.probe_steps:
            over = data.probe("resid_stats")[..., [self.i_below, self.i_above]]
            self.overflow = bool(np.nansum(over) > 0)
            used = np.nansum(data.probe("resid_hist"), axis=(0, 1)) > 0
            if used.any() and not self.overflow:
                reach = max(abs(edges[:-1][used].min()), abs(edges[1:][used].max()))
        self.width = next((w for w in VALUE_WIDTHS if w < self.edge and reach <= w + 1e-9), self.edge)
        self.cols = np.flatnonzero((edges[:-1] >= -self.width - 1e-9) & (edges[1:] <= self.width + 1e-9))
        x = _u(edges[self.cols[0] : self.cols[-1] + 2])  # cell edges (one more than columns)
        self.u_width = float(x[-1])
        self.pad = 0.12 * self.u_width if self.overflow else 0.0  # width of each open bin's cell
        if self.overflow:
            x = np.concatenate([[x[0] - self.pad], x, [x[-1] + self.pad]])
        self.x_edges = x
        centres = (x[:-1] + x[1:]) / 2
        self.values = np.sinh(centres)  # real value at each cell's centre, for the hover

    def shares(self, hist: np.ndarray, stats: np.ndarray) -> np.ndarray:
        """(L, columns) shares of values per drawn cell, open bins included."""
        h = np.asarray(hist, dtype=np.float64)[:, self.cols]
        if not self.overflow:
            return h
        return np.concatenate([stats[:, [self.i_below]], h, stats[:, [self.i_above]]], axis=1)


def _std_trace(stats: np.ndarray, stat_names: Sequence[str], width: float) -> dict[str, Any]:
    """x (drawn units, asinh), y and marker symbols of one line through -std and one through +std, split
    by a gap (one trace, not two). A std beyond the axis sits at its edge as an outward triangle."""
    std = stats[:, list(stat_names).index("std")].astype(np.float64)
    xs: list[Any] = []
    ys: list[Any] = []
    symbols: list[str] = []
    for sign, arrow in ((-1, "triangle-left"), (1, "triangle-right")):
        if xs:
            xs.append(None)
            ys.append(None)
            symbols.append("circle")
        for layer, s in enumerate(std, start=1):
            ok = bool(np.isfinite(s))
            xs.append(round(sign * float(_u(min(s, width))), 3) if ok else None)
            ys.append(layer)
            symbols.append(arrow if ok and s > width else "circle")
    std_real = [round(float(s), 3) if np.isfinite(s) else None for s in std]
    return {"x": xs, "y": ys, "marker": {"symbol": symbols}, "customdata": [*std_real, None, *std_real]}


class _ActInfo(NamedTuple):
    """The distribution chart's cells and the probe step it shows (None before the first probe)."""

    grid: _ActGrid
    p: int | None
    shares: np.ndarray  # (L, cells) share of values per drawn cell at step p
    stats: np.ndarray  # (L, stats) at step p


def _prepare_act(data: RunData, step: int | None) -> _ActInfo:
    grid = _ActGrid(data)
    p = _probe_index(data, step)
    if p is None:
        L = data.info.config.depth
        return _ActInfo(grid, p, np.zeros((L, len(grid.x_edges) - 1)), np.full((L, len(data.info.stat_names)), np.nan))
    stats = data.probe("resid_stats")[p]
    return _ActInfo(grid, p, grid.shares(data.probe("resid_hist")[p], stats), stats)


def _bottom(animate: bool, lecture: bool) -> int:
    """The bottom margin (px): the x axis, and after a run the Play/Pause buttons and step slider under it."""
    return round(180 * _scale(lecture)) if animate else 60


def _controls_fit(height: int | None, lecture: bool) -> bool:
    """Whether Play/Pause and the step slider leave the plot at least 40 % of a chart `height` px tall;
    on a shorter chart (a lecture layout's small panel) they are left out and the page's own step
    control drives the frames."""
    return height is None or height - _bottom(True, lecture) - 100 * _scale(lecture) >= 0.4 * height


def _act_heatmap(
    info: _ActInfo,
    L: int,
    lang: str,
    lecture: bool,
    animate: bool,
    height: int | None,
    controls: bool,
    top_px: int | None = None,
) -> go.Heatmap:
    """The layer x value cells, coloured by code; the hover names the cell's value (real units); the
    share only when not animated (in every frame it would double the animation's size). `controls`:
    Play and the slider take the room under the plot."""
    tick_vals, tick_text = _act_code_ticks()
    if lecture:  # 0.001 % and 10 % only (100 % at the top would meet the bar's title): at 24 px three labels met
        tick_vals, tick_text = [tick_vals[0], tick_vals[-2]], [tick_text[0], tick_text[-2]]
    values = np.broadcast_to(_f32(info.grid.values), info.shares.shape)
    heat: dict[str, Any] = {
        "x": _f32(info.grid.x_edges),
        "y": np.arange(1, L + 1, dtype=np.int16),
        "z": _act_codes(info.shares),
        "zmin": 0,
        "zmax": ACT_CODES + 1,
        "colorscale": _act_colorscale(),
        "colorbar": _colorbar(
            t("chart.act_share", lang),
            tick_vals,
            tick_text,
            lecture,
            ACT_CODES + 1,
            height,
            _bottom(controls, lecture),
            top_px,
        ),
        "showlegend": False,
        "name": "",
    }
    if animate:
        heat["customdata"] = np.ascontiguousarray(values)
        heat["hovertemplate"] = _hover(lang, ("chart.value", "%{customdata:.3g}"), ("chart.layer", "%{y}"))
    else:
        heat["customdata"] = np.stack([values, _f32(info.shares * 100)], axis=-1)
        heat["hovertemplate"] = _hover(
            lang,
            ("chart.value", "%{customdata[0]:.3g}"),
            ("chart.layer", "%{y}"),
            ("chart.share", "%{customdata[1]:.3g}%"),
        )
    return go.Heatmap(**heat)


def _std_scatter(info: _ActInfo, stat_names: Sequence[str], lang: str, lecture: bool) -> go.Scatter:
    std = _std_trace(info.stats, stat_names, info.grid.width)
    return go.Scatter(
        x=std["x"],
        y=std["y"],
        customdata=std["customdata"],
        mode="lines+markers",
        name=t("chart.std_pm_lecture" if lecture else "chart.std_pm", lang),  # at 24 px the long one met the subtitle
        line={"color": "#D55E00", "width": 2},  # thin: at 24 layers thick lines merged into solid bars
        marker={"size": scaled_px(5, lecture), "symbol": std["marker"]["symbol"]},
        hovertemplate=_hover(lang, ("chart.layer", "%{y}"), ("chart.std", "%{customdata:.3g}")),
    )


def _value_ticks(width: float, lecture: bool) -> list[float]:
    """Real values to label on the symmetric-log axis: 0, ±1 and powers of 4 up to `width`. In the lecture
    view, whose 24-px labels in a quarter of the screen crowded and were turned on their side (−1, 0 and 1
    printed over each other), five: 0, ±`width` and the ± value nearest 0.35 of the way out on the axis
    (the outer labels are the widest: ±4 of ±256, where ±16 sat too close to ±256 to stay level)."""
    if lecture:
        inner = [v for v in ((1.0, 2.0) if width <= 8 else (1.0, 4.0, 16.0, 64.0, 256.0)) if v < width * 0.9]
        third = 0.35 * float(_u(width))
        pos = [min(inner, key=lambda v: abs(float(_u(v)) - third)), width] if inner else [width]
        return [-v for v in pos[::-1]] + [0.0] + pos
    steps = [v for v in (1.0, 4.0, 16.0, 64.0, 256.0, 1024.0) if v < width * 0.9]
    if width <= 8:
        steps = [v for v in (1.0, 2.0) if v < width * 0.9]
    pos = [*steps, width]
    return [-v for v in pos[::-1]] + [0.0] + pos


def _value_axis(fig: go.Figure, grid: _ActGrid, lang: str, lecture: bool) -> dict[str, Any]:
    """The symmetric-log value axis, ticks labelled in real values; with open bins, labelled "< −w" and
    "> w" at their cells and the edges marked by white lines."""
    w, uw = grid.width, grid.u_width
    ticks = _value_ticks(w, lecture)
    labels = [f"{v:g}".replace("-", "−") for v in ticks]
    pos = [float(_u(v)) for v in ticks]
    if grid.overflow:
        pos[0], pos[-1] = -uw - grid.pad / 2, uw + grid.pad / 2
        labels[0] = t("chart.below_edge", lang, edge=f"{w:g}")
        labels[-1] = t("chart.above_edge", lang, edge=f"{w:g}")
        for x in (-uw, uw):
            fig.add_vline(x=x, line={"color": "white", "width": 3})
    return {
        # the lecture view's 24-px text: the shorter title, whole in a quarter of a 1920-px screen
        "title": {"text": t("chart.value_axis_lecture" if lecture else "chart.value_axis", lang)},
        "range": [float(grid.x_edges[0]), float(grid.x_edges[-1])],
        "tickmode": "array",
        "tickvals": pos,
        "ticktext": labels,
        "showgrid": False,
        **({"tickangle": 0} if lecture else {}),  # level: its five labels are spaced to fit (a test measures it)
    }


def act_dist(
    data: RunData,
    lang: str = "en",
    step: int | None = None,
    animate: bool = False,
    lecture: bool = False,
    height: int | None = None,
) -> go.Figure:
    """How the residual stream's values are spread after each layer (rows, 1 = input at the bottom) at one
    probe step: a layer x value heatmap of the fixed-edge histograms, coloured by the log share of values
    per bin (bright = common), with each layer's ±1 std marked. The value axis is symmetric-log
    (asinh) and spans ±4, ±16, ±64 or the histogram's edges (±256), the smallest that holds every value
    of the run; values beyond the edges get their own open bin at each side. `animate=True` (after a
    run) adds one frame per probe step, a step slider and Play/Pause buttons, starting at `step` (the
    controls only where `height` leaves room for them). `height`: px, None for Plotly's default."""
    L = data.info.config.depth
    info = _prepare_act(data, step)
    controls = animate and len(data.probe_steps) > 1 and _controls_fit(height, lecture)
    title_of = lambda s: t("chart.act_title", lang, step=s)  # noqa: E731
    title = title_of(data.probe_steps[info.p]) if info.p is not None else t("chart.act_title_empty", lang)
    fig = go.Figure(_act_heatmap(info, L, lang, lecture, animate, height, controls, _top_margin(title, lecture)))
    fig.add_trace(_std_scatter(info, data.info.stat_names, lang, lecture))
    if info.p is None:
        _empty_note(fig, lang, lecture)
    _layout(
        fig,
        title,
        lecture,
        "act-" + _run_key(data),
        legend_below=False,
        height=height,
        margin={"b": _bottom(controls, lecture)},
        xaxis=_value_axis(fig, info.grid, lang, lecture),
        yaxis={
            # the lecture view: one word in one line (its 24-px "(1 = input side)" wrapped to three lines in a
            # 190-px plot); layer 1 is at the bottom, and the profile beside it names layer 0 the embeddings
            "title": {"text": t("chart.layer_axis_lecture" if lecture else "chart.layer_axis", lang)},
            "range": [0.5, L + 0.5],
            "showgrid": False,
            **_layer_ticks(L),
        },
        legend={"orientation": "h", "x": 1, "xanchor": "right", "y": 1.0, "yanchor": "bottom"},
    )
    if animate and info.p is not None:
        _add_frames(fig, data, info.p, title_of, info.grid)
        if controls:
            _play_controls(fig, data.probe_steps, info.p, lang, lecture)
    return fig


def _add_frames(fig: go.Figure, data: RunData, start: int, title_of: Callable[[int], str], grid: _ActGrid) -> None:
    """One frame per probe step (plain dicts: graph_objects validation is slow for hundreds of frames)."""
    hist, stats, names = data.probe("resid_hist"), data.probe("resid_stats"), data.info.stat_names
    fig.frames = [
        {
            "name": str(s),
            "data": [
                {"type": "heatmap", "z": _act_codes(grid.shares(hist[i], stats[i]))},
                {"type": "scatter", **_std_trace(stats[i], names, grid.width)},
            ],
            "traces": [0, 1],
            "layout": {"title": _title_text(title_of(s))},
        }
        for i, s in enumerate(data.probe_steps)
    ]


_JUMP = {"mode": "immediate", "frame": {"duration": 0, "redraw": True}, "transition": {"duration": 0}}
_PLAY = {
    "frame": {"duration": 120, "redraw": True},
    "transition": {"duration": 0},
    "fromcurrent": True,
    "mode": "immediate",
}


def _play_controls(fig: go.Figure, steps: Sequence[int], start: int, lang: str, lecture: bool) -> None:
    """With two or more frames, Play/Pause buttons and under them a step slider, stacked under the x
    axis title (buttons, then the slider) so nothing overlaps at half width."""
    if len(steps) < 2:
        return
    s = _scale(lecture)
    many = len(steps) > 25  # then the tick labels would overlap: the current value names the step
    buttons = {
        "type": "buttons",
        "direction": "left",
        "showactive": False,
        "x": 0,
        "y": 0,
        "xanchor": "left",
        "yanchor": "top",
        "pad": {"t": round(70 * s)},
        "font": {"size": scaled_px(15, lecture)},
        "buttons": [
            {"label": "▶ " + t("chart.play", lang), "method": "animate", "args": [None, _PLAY]},
            {"label": "❚❚ " + t("chart.pause", lang), "method": "animate", "args": [[None], _JUMP]},
        ],
    }
    slider = {
        "active": start,
        "currentvalue": {
            "prefix": t("chart.step", lang) + " ",
            "xanchor": "right",
            "font": {"size": scaled_px(15, lecture), "color": "#222222"},
        },
        "pad": {"t": round(108 * s), "b": 0, "l": 0, "r": 0},
        "len": 1.0,
        "x": 0,
        "y": 0,
        "yanchor": "top",
        "ticklen": 4 if many else 7,
        "minorticklen": 0 if many else 4,
        "font": {"size": scaled_px(14, lecture), "color": "rgba(0,0,0,0)" if many else "#444444"},
        "steps": [{"label": str(st), "method": "animate", "args": [[str(st)], _JUMP]} for st in steps],
    }
    fig.update_layout(updatemenus=[buttons], sliders=[slider])  # the room under the axis: `_bottom`
