"""Plotly figure builders: RunData (or init-lab DataFrames) in, `plotly.graph_objects.Figure` out.

Pure functions, no streamlit, no tensors. Every visible string comes from the i18n catalog (`chart.*`).
Built for a live page that redraws about once a second and for a projector:
- axis ranges are fixed from the config and from theory (or rounded out to whole decades) so nothing
  jumps while data streams in; `uirevision` keeps the user's zoom across redraws;
- long series are downsampled (`downsample`), arrays go out as float32 numpy (Plotly sends them as
  binary), traces stay few;
- fonts start at 16 px (`presenter=True`: 1.4x), colours are Okabe-Ito (colour-blind safe) and each
  norm position keeps its colour on every chart (`NORM_COLORS`).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

from ln_viz.i18n import t
from ln_viz.names import lr_schedule
from ln_viz.snapshot import RunData

# --- look ----------------------------------------------------------------------------------------
# Okabe & Ito (2008), "Color Universal Design": distinguishable with every common colour-vision deficiency.
NORM_COLORS: dict[str, str] = {
    "post": "#D55E00",  # vermillion
    "pre": "#0072B2",  # blue
    "peri": "#009E73",  # bluish green
    "deepnorm": "#CC79A7",  # reddish purple
    "none": "#E69F00",  # orange
}
PARAM_COLORS: dict[str, str] = {
    "attn.q": "#56B4E9",
    "attn.k": "#009E73",
    "attn.v": "#E69F00",
    "attn.o": "#CC79A7",
    "ffn.w1": "#999999",
    "ffn.w2": "#000000",  # the paper's Figure 3 matrix: drawn thick, on top
}
GREY = "#555555"
FAINT = "#BBBBBB"
FONT_FAMILY = 'Arial, "Noto Sans KR", "Nanum Gothic", "Malgun Gothic", "Apple SD Gothic Neo", sans-serif'
BASE_FONT = 16  # px; legible at 1280x720 on a projector
PRESENTER_SCALE = 1.4
# A small template of our own: the built-in ones add ~8 KB of JSON to every figure on every redraw.
_TEMPLATE: dict[str, Any] = {
    "layout": {
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "colorway": list(NORM_COLORS.values()),
        "xaxis": {
            "gridcolor": "#E6E6E6",
            "linecolor": "#444444",
            "zeroline": False,
            "ticks": "outside",
            "automargin": True,
        },
        "yaxis": {
            "gridcolor": "#E6E6E6",
            "linecolor": "#444444",
            "zeroline": False,
            "ticks": "outside",
            "automargin": True,
        },
    }
}

# Built once: validating the template dict costs ~80 ms per figure, a live redraw makes five.
_TEMPLATE_OBJ = go.layout.Template(_TEMPLATE)

MAX_LOSS_POINTS = 500  # per loss line on the live page
MAX_LR_POINTS = 200  # the planned schedule is smooth: few points draw it
MAX_HEATMAP_COLUMNS = 400  # probe steps shown in the gradient heatmap
UPDATE_RATIO_REF = 1e-3  # a common rule of thumb for a healthy update size
MAX_RATIO_LAYERS = 8  # lines in the update-ratio chart; deeper models show a spread of layers

# Activation histograms go out as uint8 codes of log10(share of values in a bin), so the animation with
# one frame per probe step stays small: code 0 = empty bin (white), 1..250 = log10 share from
# ACT_LOG_MIN to 0 (shares below 10^ACT_LOG_MIN get code 1).
ACT_LOG_MIN = -5.0
ACT_CODES = 249


# --- helpers -------------------------------------------------------------------------------------
def _scale(presenter: bool) -> float:
    return PRESENTER_SCALE if presenter else 1.0


def _px(size: float, presenter: bool) -> int:
    return round(size * _scale(presenter))


def _run_key(data: RunData) -> str:
    """A stable id of a run's configuration: `uirevision` keeps zoom for the same run, resets for a new one."""
    blob = json.dumps(data.info.config.to_dict(), sort_keys=True, default=str)
    return hashlib.sha1(blob.encode()).hexdigest()[:12]


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """`base` updated by `extra` as update_layout would: nested dicts merge, anything else replaces."""
    out = dict(base)
    for k, v in extra.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _layout(
    fig: go.Figure, title: str, presenter: bool, uirevision: str, legend_below: bool = True, **extra: Any
) -> go.Figure:
    """Fonts, margins, legend and template shared by every chart, merged with the chart's own layout
    (`extra`, as update_layout takes it) and set in one assignment: each update_layout call costs
    3-5 ms on a figure with traces, and a live tab redraws five figures a second."""
    s = _scale(presenter)
    layout: dict[str, Any] = {
        "font": {"family": FONT_FAMILY, "size": _px(BASE_FONT, presenter), "color": "#222222"},
        "title": {"text": title, "font": {"size": _px(20, presenter)}, "x": 0.01, "xanchor": "left", "y": 0.98},
        "margin": {"l": round(80 * s), "r": round(30 * s), "t": round(60 * s), "b": round(60 * s)},
        "hoverlabel": {"font": {"size": _px(15, presenter), "family": FONT_FAMILY}},
        "uirevision": uirevision,
        "showlegend": True,
    }
    if legend_below:
        layout["legend"] = {
            "orientation": "h",
            "x": 0,
            "xanchor": "left",
            "y": -0.26 * s,  # clear of the x axis title (seen overlapping at -0.16 in the app)
            "yanchor": "top",
            "font": {"size": _px(14, presenter)},
        }
        layout["margin"]["b"] = round(150 * s)
    current = fig.layout.to_plotly_json()  # axes of subplots, shapes and annotations added so far
    current.pop("template", None)  # plotly's default, replaced by ours
    fig.layout = {**_merge(_merge(current, layout), extra), "template": _TEMPLATE_OBJ}
    return fig


def _decade_range(values: np.ndarray, at_least: tuple[float, float] | None = None) -> tuple[int, int] | None:
    """Whole decades (lo, hi exponents) around the finite positive values: ranges change only when data
    crosses a power of ten, so the axes stay still while a run streams in."""
    v = np.asarray(values, dtype=np.float64).ravel()
    v = v[np.isfinite(v) & (v > 0)]
    if at_least is not None:
        v = np.concatenate([v, np.asarray(at_least, dtype=np.float64)])
    if v.size == 0:
        return None
    lo, hi = math.floor(math.log10(v.min())), math.ceil(math.log10(v.max()))
    if hi <= lo:
        hi = lo + 1
    return lo, hi


_NICE = (1.0, 2.0, 5.0)


def _nice_log_range(values: np.ndarray, at_least: tuple[float, float] | None = None) -> tuple[float, float] | None:
    """(lo, hi) on a 1-2-5 grid around the finite positive values: tighter than whole decades, and it
    still only moves when the data passes a grid value (so a streaming axis rarely moves)."""
    rng = _decade_range(values, at_least)
    if rng is None:
        return None
    v = np.asarray(values, dtype=np.float64).ravel()
    v = v[np.isfinite(v) & (v > 0)]
    if at_least is not None:
        v = np.concatenate([v, np.asarray(at_least, dtype=np.float64)])
    grid = [m * 10.0**k for k in range(rng[0] - 1, rng[1] + 1) for m in _NICE]
    lo = max(g for g in grid if g <= v.min() * (1 + 1e-9))
    hi = min(g for g in grid if g >= v.max() * (1 - 1e-9))
    if hi <= lo:
        hi = next(g for g in grid if g > lo)
    return lo, hi


def _short_number(v: float, exponent: bool = False) -> str:
    """0.5, 20, or 5e-4 style (`exponent`, or when very small or large)."""
    if v == 0:
        return "0"
    if not exponent and 1e-3 <= abs(v) < 1e4:
        return f"{v:g}"
    mant, exp = f"{v:.1e}".split("e")
    mant = mant.rstrip("0").rstrip(".")
    return f"{mant}e{int(exp)}"


def _log_axis(rng: tuple[float, float]) -> dict[str, Any]:
    """A log axis over `rng` (real units) with ticks at 1-2-5 (or whole decades over a wide range), all
    labels the same size (Plotly's own minor labels are too small to read on a projector)."""
    lo, hi = rng
    ticks = _log_ticks(lo, hi)
    small = min(ticks) < 1e-3  # then every tick below 1 in e-notation, so the column reads evenly
    return {
        "type": "log",
        "range": [math.log10(lo), math.log10(hi)],
        "tickmode": "array",
        "tickvals": ticks,
        "ticktext": [_short_number(v, exponent=small and v < 1) for v in ticks],
    }


def _log_ticks(lo: float, hi: float) -> list[float]:
    """1-2-5 ticks over up to 3 decades, whole decades up to 8, then every 2nd, 3rd... decade."""
    k0, k1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    span = k1 - k0
    mults = _NICE if span <= 3 else (1.0,)
    every = 1 if span <= 8 else math.ceil(span / 7)
    ticks = [m * 10.0**k for k in range(k0, k1 + 1) if (k - k1) % every == 0 for m in mults]
    return [v for v in ticks if lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9)]


def _log10(x: np.ndarray) -> np.ndarray:
    """log10 with NaN (not -inf, not a warning) for zero, negative and non-finite values."""
    x = np.asarray(x, dtype=np.float64)
    out = np.full(x.shape, np.nan)
    ok = np.isfinite(x) & (x > 0)
    out[ok] = np.log10(x[ok])
    return out


def _f32(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


def _probe_index(data: RunData, step: int | None) -> int | None:
    """Index of the probe step nearest to `step` (the last one when None); None before the first probe."""
    if not data.probe_steps:
        return None
    if step is None:
        return len(data.probe_steps) - 1
    steps = np.asarray(data.probe_steps)
    return int(np.argmin(np.abs(steps - step)))


def norm_label(position: str, lang: str) -> str:
    """The short name of a norm position on charts ("Post-LN")."""
    return t(f"chart.norm.{position}", lang)


_norm_label = norm_label


def _hover(lang: str, *parts: tuple[str, str]) -> str:
    """A hovertemplate from (label key, value format) pairs, e.g. ("chart.step", "%{x}")."""
    return "<br>".join(f"{t(key, lang)} {fmt}" for key, fmt in parts) + "<extra></extra>"


def _empty_note(
    fig: go.Figure, lang: str, presenter: bool, key: str = "chart.waiting", xref: str = "paper", yref: str = "paper"
) -> None:
    fig.add_annotation(
        text=t(key, lang),
        xref=xref,
        yref=yref,
        x=0.5,
        y=0.5,
        showarrow=False,
        font={"size": _px(18, presenter), "color": GREY},
        bgcolor="white",  # readable over reference lines
    )


def _rgba(hex_color: str, alpha: float) -> str:
    h = hex_color.lstrip("#")
    r, g, b = (int(h[i : i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


# --- downsampling --------------------------------------------------------------------------------
def downsample_index(y: np.ndarray, max_points: int) -> np.ndarray:
    """Indices of at most `max_points` points of `y` to draw: the most recent half at full resolution,
    the older part as the min and max of equal buckets, plus the first point. Keeps the first and last
    points and the global extremes; NaN-safe (an all-NaN bucket keeps its first point)."""
    y = np.asarray(y, dtype=np.float64)
    n = len(y)
    if max_points < 4:
        raise ValueError(f"max_points must be at least 4, got {max_points}")
    if n <= max_points:
        return np.arange(n)
    recent = max_points // 2
    n_old = n - recent
    n_buckets = max(1, (max_points - recent - 1) // 2)  # 2 points per bucket, +1 for the first point
    bounds = np.linspace(0, n_old, n_buckets + 1).astype(np.int64)
    keep = [0]
    for a, b in zip(bounds[:-1], bounds[1:]):
        if b <= a:
            continue
        chunk = y[a:b]
        finite = np.isfinite(chunk)
        if not finite.any():
            keep.append(a)
            continue
        masked_lo = np.where(finite, chunk, np.inf)
        masked_hi = np.where(finite, chunk, -np.inf)
        keep += [a + int(np.argmin(masked_lo)), a + int(np.argmax(masked_hi))]
    idx = np.unique(np.concatenate([np.asarray(keep, dtype=np.int64), np.arange(n_old, n)]))
    return idx


def downsample(
    x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, max_points: int
) -> tuple[np.ndarray, np.ndarray]:
    """At most `max_points` (x, y) points for display: recent points all, older ones min/max-preserving
    (see `downsample_index`). First and last points and the extremes of y are always kept."""
    x, y = np.asarray(x), np.asarray(y)
    idx = downsample_index(y, max_points)
    return x[idx], y[idx]


# --- 1. loss -------------------------------------------------------------------------------------
def _loss_top(datas: Sequence[RunData]) -> float:
    """A fixed top for the loss axis: above the uniform-guess loss ln(V), the unigram loss and the first
    loss, rounded up to 0.5 nats; at most twice the larger of ln(V) and the unigram loss."""
    top = 0.0
    for d in datas:
        base = max(math.log(max(d.info.vocab_size, 2)), d.info.unigram_entropy)
        first = next((v for v in d.scalars["loss"] if math.isfinite(v)), base)
        top = max(top, min(max(base, first), 2 * base))
    return math.ceil(top * 1.1 * 2) / 2


def _loss_lines(
    fig: go.Figure, d: RunData, name: str, color: str, top: float, lang: str, dash: str = "solid", width: float = 2.5
) -> int:
    """The (downsampled) training loss of one run, clipped just above `top`; returns how many values
    were beyond `top` (or not finite)."""
    steps = np.asarray(d.scalars["step"], dtype=np.int64)
    loss = np.asarray(d.scalars["loss"], dtype=np.float64)
    if steps.size == 0:
        fig.add_trace(go.Scatter(x=[], y=[], mode="lines", name=name, line={"color": color, "dash": dash}))
        return 0
    idx = downsample_index(loss, MAX_LOSS_POINTS)
    x, y = steps[idx], loss[idx]
    over = int(np.sum(np.isfinite(loss) & (loss > top)))
    shown = np.where(np.isfinite(y), np.minimum(y, top * 1.02), np.nan)  # off the chart, visibly up
    few = int(np.isfinite(y).sum()) < 3  # a line through one or two points is invisible
    fig.add_trace(
        go.Scatter(
            x=x.astype(np.int32),
            y=_f32(shown),
            customdata=_f32(y),
            mode="lines+markers" if few else "lines",
            name=name,
            line={"color": color, "width": width, "dash": dash},
            hovertemplate=_hover(lang, ("chart.step", "%{x}"), ("chart.loss", "%{customdata:.3f}")),
        )
    )
    return over


def _divergence_marker(fig: go.Figure, d: RunData, top: float, lang: str, presenter: bool, color: str) -> None:
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
            marker={"symbol": "x-thin", "size": _px(22, presenter), "line": {"width": 4, "color": color}},
            hovertemplate=text + "<extra></extra>",
        )
    )
    fig.add_vline(x=d.diverged_at, line={"color": color, "dash": "dash", "width": 1.5})
    right = d.diverged_at < d.info.config.steps / 2  # the label goes where there is room
    fig.add_annotation(
        x=d.diverged_at,
        y=y,
        text=text,
        showarrow=True,
        arrowhead=0,
        ax=20 if right else -20,
        ay=-40,
        xanchor="left" if right else "right",
        font={"color": color, "size": _px(16, presenter)},
        bgcolor="rgba(255,255,255,0.85)",
    )


def _diverged_line(fig: go.Figure, data: RunData, lang: str, presenter: bool) -> None:
    """A dashed line and a short label at the step where the run diverged (steps on the x axis)."""
    if data.diverged_at is None:
        return
    fig.add_vline(x=data.diverged_at, line={"color": "#B00000", "dash": "dash", "width": 2})
    right = data.diverged_at < data.info.config.steps / 2
    fig.add_annotation(
        x=data.diverged_at,
        y=1,
        yref="paper",
        yanchor="top",
        xanchor="left" if right else "right",
        xshift=4 if right else -4,
        showarrow=False,
        text=t("chart.diverged_at", lang, step=data.diverged_at),
        font={"color": "#B00000", "size": _px(14, presenter)},
        bgcolor="rgba(255,255,255,0.8)",
    )


def loss_chart(data: RunData, lang: str = "en", presenter: bool = False) -> go.Figure:
    """Training loss per step, held-out loss markers, the unigram loss (dashed), the entropy floor when
    known (dash-dot), the planned learning-rate schedule on a right axis (dotted), a marker where the run
    diverged and a shaded band while it is stalled. Axes are fixed: steps 0..config.steps, loss 0..a top
    set by ln(V), the unigram loss and the first loss (larger values are clipped, and a note says so)."""
    info, cfg = data.info, data.info.config
    color = NORM_COLORS.get(cfg.norm_position, GREY)
    top = _loss_top([data])
    fig = go.Figure()
    over = _loss_lines(fig, data, t("chart.train_loss", lang), color, top, lang)

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
                "size": _px(11, presenter),
                "color": "white",
                "line": {"color": color, "width": 2.5},
            },
            hovertemplate=_hover(lang, ("chart.step", "%{x}"), ("chart.eval_loss", "%{customdata:.3f}")),
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[0, cfg.steps],
            y=[info.unigram_entropy] * 2,
            mode="lines",
            name=t("chart.unigram", lang),
            line={"color": GREY, "dash": "dash", "width": 2},
            hovertemplate=t("chart.unigram", lang) + ": %{y:.3f}<extra></extra>",
        )
    )
    if info.floor is not None:
        fig.add_trace(
            go.Scatter(
                x=[0, cfg.steps],
                y=[info.floor] * 2,
                mode="lines",
                name=t("chart.floor", lang),
                line={"color": "#009E73", "dash": "dashdot", "width": 2},
                hovertemplate=t("chart.floor", lang) + ": %{y:.3f}<extra></extra>",
            )
        )
    # The whole planned schedule, so the warm-up ramp is visible before the run gets there.
    sched = lr_schedule(cfg)
    lr_steps = np.arange(1, cfg.steps + 1)
    idx = downsample_index(sched, MAX_LR_POINTS)
    fig.add_trace(
        go.Scatter(
            x=lr_steps[idx].astype(np.int32),
            y=_f32(sched[idx]),
            yaxis="y2",
            mode="lines",
            name=t("chart.lr", lang),
            line={"color": "#888888", "dash": "dot", "width": 2},
            opacity=0.8,
            hovertemplate=_hover(lang, ("chart.step", "%{x}"), ("chart.lr", "%{y:.2e}")),
        )
    )
    if steps.size:
        fig.add_trace(
            go.Scatter(
                x=[int(steps[-1])],
                y=[float(data.scalars["lr"][-1])],
                yaxis="y2",
                mode="markers",
                showlegend=False,
                marker={"color": "#888888", "size": _px(9, presenter)},
                hovertemplate=_hover(lang, ("chart.step", "%{x}"), ("chart.lr", "%{y:.2e}")),
            )
        )
    if data.stalled_since is not None:
        x1 = max(data.steps_done, data.stalled_since)
        fig.add_vrect(x0=data.stalled_since, x1=x1, fillcolor="#E69F00", opacity=0.15, line_width=0, layer="below")
        fig.add_annotation(
            x=data.stalled_since,
            y=top * 0.97,
            xanchor="left",
            yanchor="top",
            showarrow=False,
            text=t("chart.stalled_since", lang, step=data.stalled_since),
            font={"color": "#8A5A00", "size": _px(15, presenter)},
            bgcolor="rgba(255,255,255,0.8)",
        )
    _divergence_marker(fig, data, top, lang, presenter, color)
    if over:
        fig.add_annotation(
            xref="paper",
            yref="paper",
            x=1,
            y=1,
            xanchor="right",
            yanchor="bottom",
            showarrow=False,
            text=t("chart.clipped", lang, count=over, limit=f"{top:g}"),
            font={"size": _px(14, presenter), "color": GREY},
        )
    if steps.size == 0:
        _empty_note(fig, lang, presenter)

    lr_peak = float(np.nanmax(sched)) if sched.size else cfg.lr
    lr_ticks = [0.0, lr_peak / 2, lr_peak]  # three ticks: zero, half and the peak the run is set to
    _layout(
        fig,
        t("chart.loss_title", lang, norm=_norm_label(cfg.norm_position, lang), depth=cfg.depth),
        presenter,
        "loss-" + _run_key(data),
        xaxis={"title": {"text": t("chart.step_axis", lang)}, "range": [0, cfg.steps], "showgrid": True},
        yaxis={"title": {"text": t("chart.loss_axis", lang)}, "range": [0, top]},
        yaxis2={
            "title": {"text": t("chart.lr_axis", lang), "font": {"color": "#666666"}},
            "overlaying": "y",
            "side": "right",
            "range": [0, lr_peak * 1.1],
            "showgrid": False,
            "tickfont": {"color": "#666666"},
            "tickmode": "array",
            "tickvals": lr_ticks,
            "ticktext": [_short_number(v, exponent=0 < v < 0.01) for v in lr_ticks],
        },
        margin={"r": round(110 * _scale(presenter))},
    )
    return fig


# --- 2. gradient heatmap -------------------------------------------------------------------------
def shared_zrange(datas: Sequence[RunData]) -> tuple[float, float] | None:
    """One colour range (gradient norms, real units, whole decades) for the gradient heatmaps of several
    runs, so equal colours mean equal gradients on the Compare page. None when no run has a probe yet."""
    values = [d.probe("block_grad_norm").ravel() for d in datas if d.probe_steps]
    if not values:
        return None
    return _nice_log_range(np.concatenate(values))


def _wrap(text: str, width: int = 12) -> str:
    """Break a short label into lines of about `width` characters at spaces (Plotly's <br>)."""
    lines: list[str] = []
    for word in text.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "<br>".join(lines)


def _colorbar(
    title: str, tickvals: Sequence[float], ticktext: Sequence[str], presenter: bool, top: float | None = None
) -> dict[str, Any]:
    """A vertical colorbar with its title on top, wrapped (on the right side the title is drawn over long
    tick labels and cut by the figure's edge). A tick at the very top (`top`) is left out: its label,
    centred on the bar's end, would run into the title."""
    if top is not None and len(tickvals) > 2 and math.isclose(tickvals[-1], top, abs_tol=1e-6):
        tickvals, ticktext = tickvals[:-1], ticktext[:-1]
    return {
        "title": {"text": _wrap(title), "side": "top", "font": {"size": _px(14, presenter)}},
        "tickvals": list(tickvals),
        "ticktext": list(ticktext),
        "tickfont": {"size": _px(14, presenter)},
        "thickness": _px(16, presenter),
        "len": 0.9,
    }


def _log_colorbar(title: str, lo: float, hi: float, presenter: bool) -> dict[str, Any]:
    """A colorbar for log10 colour values, labelled in real units (1-2-5 or decade ticks)."""
    axis = _log_axis((lo, hi))
    return _colorbar(title, [math.log10(v) for v in axis["tickvals"]], axis["ticktext"], presenter, math.log10(hi))


def grad_heatmap(
    data: RunData, lang: str = "en", zrange: tuple[float, float] | None = None, presenter: bool = False
) -> go.Figure:
    """Block gradient norm (all of a block's parameters, Frobenius) per layer (rows, 1 = input at the
    bottom) and probe step (columns), coloured by log10 with tick labels in real units. `zrange`
    (gradient norms, real units; see `shared_zrange`) makes two runs share one colour scale; without it
    the range is the data's, rounded out to whole decades. NaN (a diverged step's missing gradients)
    stays blank."""
    cfg = data.info.config
    L = cfg.depth
    fig = go.Figure()
    title = t("chart.grad_heatmap_title", lang)
    g = data.probe("block_grad_norm")
    lo, hi = zrange if zrange is not None else (_nice_log_range(g) or (1e-3, 10.0))
    if not 0 < lo < hi:
        raise ValueError(f"zrange must be two gradient norms 0 < lo < hi, got {zrange}")
    if data.probe_steps:
        steps = np.asarray(data.probe_steps, dtype=np.int64)
        cols = np.arange(len(steps))
        if len(cols) > MAX_HEATMAP_COLUMNS:  # even stride, always ending at the latest probe
            cols = cols[::-1][:: math.ceil(len(cols) / MAX_HEATMAP_COLUMNS)][::-1]
        z = _log10(g[cols].T)  # (L, P)
        fig.add_trace(
            go.Heatmap(
                x=steps[cols].astype(np.int32),
                y=np.arange(1, L + 1, dtype=np.int16),
                z=_f32(z),
                customdata=_f32(g[cols].T),
                zmin=math.log10(lo),
                zmax=math.log10(hi),
                colorscale="Viridis",
                colorbar=_log_colorbar(t("chart.grad_norm_axis", lang), lo, hi, presenter),
                hovertemplate=_hover(
                    lang, ("chart.step", "%{x}"), ("chart.layer", "%{y}"), ("chart.grad_norm", "%{customdata:.3g}")
                ),
                hoverongaps=False,
                showscale=True,
            )
        )
    else:
        # An invisible heatmap keeps the colorbar in place before the first probe.
        fig.add_trace(
            go.Heatmap(
                x=[0],
                y=[1],
                z=[[None]],
                zmin=math.log10(lo),
                zmax=math.log10(hi),
                colorscale="Viridis",
                colorbar=_log_colorbar(t("chart.grad_norm_axis", lang), lo, hi, presenter),
                hoverinfo="skip",
            )
        )
        _empty_note(fig, lang, presenter)
    _diverged_line(fig, data, lang, presenter)
    _layout(
        fig,
        title,
        presenter,
        "grad-" + _run_key(data),
        legend_below=False,
        showlegend=False,
        xaxis={"title": {"text": t("chart.step_axis", lang)}, "range": [0, cfg.steps], "showgrid": False},
        yaxis={
            "title": {"text": t("chart.layer_axis", lang)},
            "range": [0.5, L + 0.5],
            "showgrid": False,
            **_layer_ticks(L),
        },
    )
    return fig


def _layer_ticks(L: int, start: int = 1) -> dict[str, Any]:
    """Layer-axis ticks: every layer up to 12, else about 8 evenly spread (always the first and last)."""
    if L - start + 1 <= 12:
        return {"tickmode": "array", "tickvals": list(range(start, L + 1))}
    step = next(s for s in (2, 4, 5, 8, 10, 20, 25, 50) if L / s <= 8)
    vals = sorted({start, *range(step, L + 1, step), L})
    if L % step and L - vals[-2] < step / 2:  # the last round tick crowds L
        vals.remove(vals[-2])
    return {"tickmode": "array", "tickvals": vals}


# --- 3. activation distributions -----------------------------------------------------------------
def _act_codes(hist: np.ndarray) -> np.ndarray:
    """uint8 colour codes of histogram shares: 0 empty, 1..ACT_CODES+1 for log10 share ACT_LOG_MIN..0."""
    h = np.asarray(hist, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        lg = np.log10(np.where(h > 0, h, np.nan))
    frac = np.clip((lg - ACT_LOG_MIN) / -ACT_LOG_MIN, 0.0, 1.0)
    codes = np.where(np.isfinite(lg), 1 + np.round(frac * ACT_CODES), 0)
    return codes.astype(np.uint8)


def _act_colorscale() -> list[list[Any]]:
    """White for empty bins, then viridis reversed (pale = rare values, dark = common ones)."""
    top = ACT_CODES + 1
    cols = sample_colorscale("Viridis", list(np.linspace(1.0, 0.0, 9)))
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


class _ActGrid:
    """Which bins the distribution chart draws, the same for every probe step of a run (so neither the
    axis nor the frames change shape): the value axis spans ±4, ±8 or the histogram's ±16, the smallest
    that holds every nonempty bin of the run; when any value ever fell beyond ±16, two open bins
    (< −16, > 16) are added at the sides, coloured on the same scale: the share of values beyond."""

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
        self.width = next((w for w in (4.0, 8.0) if w < self.edge and reach <= w + 1e-9), self.edge)
        self.cols = np.flatnonzero((edges[:-1] >= -self.width - 1e-9) & (edges[1:] <= self.width + 1e-9))
        x = edges[self.cols[0] : self.cols[-1] + 2]  # cell edges (one more than columns)
        self.pad = 0.15 * self.width if self.overflow else 0.0  # width of each open bin's cell
        if self.overflow:
            x = np.concatenate([[x[0] - self.pad], x, [x[-1] + self.pad]])
        self.x_edges = x

    def shares(self, hist: np.ndarray, stats: np.ndarray) -> np.ndarray:
        """(L, columns) shares of values per drawn cell, open bins included."""
        h = np.asarray(hist, dtype=np.float64)[:, self.cols]
        if not self.overflow:
            return h
        return np.concatenate([stats[:, [self.i_below]], h, stats[:, [self.i_above]]], axis=1)


def _std_trace(stats: np.ndarray, stat_names: Sequence[str], width: float) -> dict[str, Any]:
    """x, y and marker symbols of one line through -std and one through +std, split by a gap (one trace,
    not two). A std beyond the axis sits at its edge as an outward triangle, never as a circle."""
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
            xs.append(round(sign * float(min(s, width)), 3) if ok else None)
            ys.append(layer)
            symbols.append(arrow if ok and s > width else "circle")
    return {"x": xs, "y": ys, "marker": {"symbol": symbols}}


def act_dist(
    data: RunData, lang: str = "en", step: int | None = None, animate: bool = False, presenter: bool = False
) -> go.Figure:
    """How the residual stream's values are spread after each layer (rows, 1 = input at the bottom) at one
    probe step: a layer x value heatmap of the fixed-edge histograms, coloured by the log share of values
    per bin, with each layer's ±1 std marked. The value axis spans ±4, ±8 or the histogram's ±16, the
    smallest that holds every value of the run; values beyond ±16 get their own open bin at each side.
    `animate=True` (after a run) adds one frame per probe step, a step slider and Play/Pause buttons,
    starting at `step`."""
    info, cfg = data.info, data.info.config
    L = cfg.depth
    grid = _ActGrid(data)
    p = _probe_index(data, step)
    hist, stats = data.probe("resid_hist"), data.probe("resid_stats")
    if p is None:
        shares = np.zeros((L, len(grid.x_edges) - 1))
        stats_p = np.full((L, len(info.stat_names)), np.nan)
    else:
        shares, stats_p = grid.shares(hist[p], stats[p]), stats[p]
    tick_vals, tick_text = _act_code_ticks()
    heat: dict[str, Any] = {
        "x": _f32(grid.x_edges),
        "y": np.arange(1, L + 1, dtype=np.int16),
        "z": _act_codes(shares),
        "zmin": 0,
        "zmax": ACT_CODES + 1,
        "colorscale": _act_colorscale(),
        "colorbar": _colorbar(t("chart.act_share", lang), tick_vals, tick_text, presenter, ACT_CODES + 1),
        "showlegend": False,
        "name": "",
    }
    if animate:
        # Frames carry only the colour codes; a share in the hover would double the animation's size.
        heat["hovertemplate"] = _hover(lang, ("chart.value", "%{x:.2f}"), ("chart.layer", "%{y}"))
    else:
        heat["customdata"] = _f32(shares * 100)
        heat["hovertemplate"] = _hover(
            lang, ("chart.value", "%{x:.2f}"), ("chart.layer", "%{y}"), ("chart.share", "%{customdata:.3g}%")
        )
    fig = go.Figure(go.Heatmap(**heat))
    std = _std_trace(stats_p, info.stat_names, grid.width)
    fig.add_trace(
        go.Scatter(
            x=std["x"],
            y=std["y"],
            mode="lines+markers",
            name=t("chart.std_pm", lang),
            line={"color": "#D55E00", "width": 2.5},
            marker={"size": _px(7, presenter), "symbol": std["marker"]["symbol"]},
            hovertemplate=_hover(lang, ("chart.layer", "%{y}"), ("chart.std", "%{x:.2f}")),
        )
    )
    if p is None:
        _empty_note(fig, lang, presenter)
    title_of = lambda s: t("chart.act_title", lang, step=s)  # noqa: E731
    title = title_of(data.probe_steps[p]) if p is not None else t("chart.act_title_empty", lang)
    w = grid.width
    ticks = [-w, -w / 2, 0.0, w / 2, w]
    labels = [f"{v:g}".replace("-", "−") for v in ticks]
    if grid.overflow:  # the open bins are labelled where ±16 would be; the white lines mark ±16
        ticks = [-w - grid.pad / 2, -w / 2, 0.0, w / 2, w + grid.pad / 2]
        labels = [t("chart.below_edge", lang, edge=f"{w:g}"), labels[1], "0", labels[3]]
        labels.append(t("chart.above_edge", lang, edge=f"{w:g}"))
        for x in (-w, w):
            fig.add_vline(x=x, line={"color": "white", "width": 3})
    _layout(
        fig,
        title,
        presenter,
        "act-" + _run_key(data),
        legend_below=False,
        xaxis={
            "title": {"text": t("chart.value_axis", lang)},
            "range": [float(grid.x_edges[0]), float(grid.x_edges[-1])],
            "tickmode": "array",
            "tickvals": ticks,
            "ticktext": labels,
            "showgrid": False,
        },
        yaxis={
            "title": {"text": t("chart.layer_axis", lang)},
            "range": [0.5, L + 0.5],
            "showgrid": False,
            **_layer_ticks(L),
        },
        legend={"orientation": "h", "x": 1, "xanchor": "right", "y": 1.0, "yanchor": "bottom"},
    )
    if animate and p is not None:
        _add_frames(fig, data, lang, presenter, p, title_of, grid)
    return fig


def _add_frames(
    fig: go.Figure, data: RunData, lang: str, presenter: bool, start: int, title_of: Any, grid: _ActGrid
) -> None:
    """One frame per probe step (plain dicts: graph_objects validation is slow for hundreds of frames);
    with two or more, Play/Pause buttons and under them a step slider, all driven in the browser."""
    hist, stats, names = data.probe("resid_hist"), data.probe("resid_stats"), data.info.stat_names
    fig.frames = [
        {
            "name": str(s),
            "data": [
                {"type": "heatmap", "z": _act_codes(grid.shares(hist[i], stats[i]))},
                {"type": "scatter", **_std_trace(stats[i], names, grid.width)},
            ],
            "traces": [0, 1],
            "layout": {"title": {"text": title_of(s)}},
        }
        for i, s in enumerate(data.probe_steps)
    ]
    if len(data.probe_steps) < 2:
        return
    anim = {"mode": "immediate", "frame": {"duration": 0, "redraw": True}, "transition": {"duration": 0}}
    play = {
        "frame": {"duration": 120, "redraw": True},
        "transition": {"duration": 0},
        "fromcurrent": True,
        "mode": "immediate",
    }
    s = _scale(presenter)
    many = len(data.probe_steps) > 25  # then the tick labels would overlap: the current value names the step
    # Stacked under the x axis title: buttons, then the slider, so nothing overlaps at half width.
    fig.update_layout(
        updatemenus=[
            {
                "type": "buttons",
                "direction": "left",
                "showactive": False,
                "x": 0,
                "y": 0,
                "xanchor": "left",
                "yanchor": "top",
                "pad": {"t": round(62 * s)},
                "font": {"size": _px(15, presenter)},
                "buttons": [
                    {"label": "▶ " + t("chart.play", lang), "method": "animate", "args": [None, play]},
                    {"label": "❚❚ " + t("chart.pause", lang), "method": "animate", "args": [[None], anim]},
                ],
            }
        ],
        sliders=[
            {
                "active": start,
                "currentvalue": {
                    "prefix": t("chart.step", lang) + " ",
                    "xanchor": "right",
                    "font": {"size": _px(15, presenter), "color": "#222222"},
                },
                "pad": {"t": round(100 * s), "b": 0, "l": 0, "r": 0},
                "len": 1.0,
                "x": 0,
                "y": 0,
                "yanchor": "top",
                "ticklen": 4 if many else 7,
                "minorticklen": 0 if many else 4,
                "font": {"size": _px(14, presenter), "color": "rgba(0,0,0,0)" if many else "#444444"},
                "steps": [
                    {"label": str(st), "method": "animate", "args": [[str(st)], anim]} for st in data.probe_steps
                ],
            }
        ],
        margin={"b": round(175 * s)},
    )


# --- 4. per-layer profile ------------------------------------------------------------------------
PROFILE_HEIGHTS = (0.62, 0.38)  # gradient panel, std panel
PROFILE_SPACING = 0.13


def _profile_figure(grad_title: str, lang: str, presenter: bool) -> go.Figure:
    """Two panels stacked on one layer axis (side by side they do not fit a half-width column):
    gradient norms above (row 1: axes x, y), the residual stream's std below (row 2: x2, y2); panel
    titles left-aligned above each. The layout make_subplots(rows=2, shared_xaxes=True,
    row_heights=[0.62, 0.38], vertical_spacing=0.13) makes, written out: it took 15 ms a figure."""
    free = 1 - PROFILE_SPACING
    top, bottom = PROFILE_HEIGHTS[0] * free, PROFILE_HEIGHTS[1] * free

    def title(text: str, y: float) -> dict[str, Any]:
        return {"text": text, "x": 0, "xanchor": "left", "xref": "paper", "y": y, "yanchor": "bottom",
                "yref": "paper", "showarrow": False, "font": {"size": _px(16, presenter)}}  # fmt: skip

    return go.Figure(
        layout={
            "xaxis": {"anchor": "y", "domain": [0.0, 1.0], "matches": "x2", "showticklabels": False},
            "yaxis": {"anchor": "x", "domain": [1 - top, 1.0]},
            "xaxis2": {"anchor": "y2", "domain": [0.0, 1.0]},
            "yaxis2": {"anchor": "x2", "domain": [0.0, bottom]},
            "annotations": [title(grad_title, 1.0), title(t("chart.profile_std", lang), bottom)],
        }
    )


def _in_panel(fig: go.Figure, trace: go.Scatter, row: int) -> None:
    """Add a trace to the profile's upper (row 1) or lower (row 2) panel."""
    trace.xaxis, trace.yaxis = ("x", "y") if row == 1 else ("x2", "y2")
    fig.add_trace(trace)


def _profile_axes(lang: str, L: int, grad_rng: tuple[float, float], std_top: float, presenter: bool) -> dict[str, Any]:
    """The two panels' axes (row 1: xaxis/yaxis, row 2: xaxis2/yaxis2) and legend, for `_layout`."""
    layers = {"range": [-0.5, L + 0.5], **_layer_ticks(L, 0)}
    return {
        "xaxis": {**layers, "showticklabels": False},  # shared axis: numbers once, at the bottom
        "xaxis2": {**layers, "title": {"text": t("chart.layer_axis0", lang)}},
        "yaxis": _log_axis(grad_rng),
        "yaxis2": {"range": [0, std_top]},
        "legend": {"orientation": "v", "x": 1.02, "xanchor": "left", "y": 1, "yanchor": "top"},
        "margin": {"t": round(85 * _scale(presenter))},
    }


def _std_with_input(data: RunData, p: int) -> np.ndarray:
    """Residual std at layer 0 (the embeddings into block 1), then after each block."""
    i_std = list(data.info.stat_names).index("std")
    return np.concatenate([[data.probe("input_stats")[p, i_std]], data.probe("resid_stats")[p, :, i_std]])


def _std_top(datas: Sequence[RunData]) -> float:
    """A fixed top for the std panel: the largest std of any probe step, rounded up to 1, 1.5, 2, ... x 10^k."""
    tops = [1.0]
    for d in datas:
        if d.probe_steps:
            i_std = list(d.info.stat_names).index("std")
            v = np.concatenate([d.probe("resid_stats")[:, :, i_std].ravel(), d.probe("input_stats")[:, i_std]])
            v = v[np.isfinite(v)]
            if v.size:
                tops.append(float(v.max()))
    top = max(tops) * 1.1
    mag = 10 ** math.floor(math.log10(top))
    return math.ceil(top / mag * 2) / 2 * mag


def layer_profile(data: RunData, lang: str = "en", step: int | None = None, presenter: bool = False) -> go.Figure:
    """The paper's Figure 3 view at one probe step (the last when None): above, the gradient norm of each
    weight matrix per layer (log y, ffn.w2 thick and black); below, the residual stream's std per layer
    (0 = embeddings). Axis ranges cover every probe step, so moving the step slider keeps them."""
    info, cfg = data.info, data.info.config
    L = cfg.depth
    p = _probe_index(data, step)
    fig = _profile_figure(t("chart.profile_grad", lang), lang, presenter)
    layers = np.arange(1, L + 1, dtype=np.int16)
    g = data.probe("grad_norm")
    for j, name in enumerate(info.param_names):
        y = g[p, :, j] if p is not None else np.full(L, np.nan)
        w2 = name == "ffn.w2"
        _in_panel(
            fig,
            go.Scatter(
                x=layers,
                y=_f32(y),
                mode="lines+markers",
                name=name,
                line={"color": PARAM_COLORS.get(name, GREY), "width": 4 if w2 else 1.8},
                marker={"size": _px(7 if w2 else 5, presenter)},
                opacity=1.0 if w2 else 0.85,
                legendrank=0 if w2 else 10 + j,
                hovertemplate=f"{name}<br>" + _hover(lang, ("chart.layer", "%{x}"), ("chart.grad_norm", "%{y:.3g}")),
            ),
            row=1,
        )
    std = _std_with_input(data, p) if p is not None else np.full(L + 1, np.nan)
    _in_panel(
        fig,
        go.Scatter(
            x=np.arange(0, L + 1, dtype=np.int16),
            y=_f32(std),
            mode="lines+markers",
            name=t("chart.resid_std", lang),
            line={"color": NORM_COLORS.get(cfg.norm_position, GREY), "width": 3},
            marker={"size": _px(6, presenter)},
            showlegend=False,
            hovertemplate=_hover(lang, ("chart.layer", "%{x}"), ("chart.std", "%{y:.3g}")),
        ),
        row=2,
    )
    if p is None:
        _empty_note(fig, lang, presenter, xref="x domain", yref="y domain")
    title = (
        t("chart.profile_title", lang, step=data.probe_steps[p])
        if p is not None
        else t("chart.profile_title_empty", lang)
    )
    axes = _profile_axes(lang, L, _nice_log_range(g) or (1e-3, 10.0), _std_top([data]), presenter)
    _layout(fig, title, presenter, "profile-" + _run_key(data), legend_below=False, **axes)
    return fig


# --- 5. update ratio -----------------------------------------------------------------------------
def _ratio_layers(L: int) -> list[int]:
    """Which layers get a line: all up to MAX_RATIO_LAYERS, else an even spread with the first and last."""
    if L <= MAX_RATIO_LAYERS:
        return list(range(1, L + 1))
    return sorted({int(round(v)) for v in np.linspace(1, L, MAX_RATIO_LAYERS)})


def update_ratio_chart(data: RunData, lang: str = "en", presenter: bool = False) -> go.Figure:
    """||dw|| / ||w|| of each block over the probe steps (log y; up to 8 layers, evenly spread for deep
    models, coloured from input (dark) to output (light)), with a dashed reference at 1e-3."""
    cfg = data.info.config
    L = cfg.depth
    r = data.probe("update_ratio")
    steps = np.asarray(data.probe_steps, dtype=np.int32)
    layers = _ratio_layers(L)
    colors = sample_colorscale("Viridis", list(np.linspace(0.0, 0.85, len(layers))))
    fig = go.Figure()
    for layer, c in zip(layers, colors):
        y = r[:, layer - 1] if steps.size else np.zeros(0)
        fig.add_trace(
            go.Scatter(
                x=steps,
                y=_f32(y),
                mode="lines" if steps.size > 2 else "lines+markers",  # one point alone draws no line
                name=t("chart.layer_n", lang, n=layer),
                line={"color": c, "width": 2.2},
                hovertemplate=t("chart.layer_n", lang, n=layer)
                + "<br>"
                + _hover(lang, ("chart.step", "%{x}"), ("chart.update_ratio", "%{y:.2e}")),
            )
        )
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
    if not steps.size:
        _empty_note(fig, lang, presenter)
    _diverged_line(fig, data, lang, presenter)
    rng = _nice_log_range(r, at_least=(UPDATE_RATIO_REF / 10, UPDATE_RATIO_REF * 10))
    _layout(
        fig,
        t("chart.ratio_title", lang),
        presenter,
        "ratio-" + _run_key(data),
        legend_below=False,
        xaxis={"title": {"text": t("chart.step_axis", lang)}, "range": [0, cfg.steps]},
        yaxis={
            "title": {"text": t("chart.ratio_axis", lang)},
            **_log_axis(rng),
        },
        legend={"font": {"size": _px(14, presenter)}, "x": 1.02, "y": 1, "xanchor": "left", "yanchor": "top"},
        margin={"r": round(150 * _scale(presenter))},
    )
    return fig


# --- 6. comparison -------------------------------------------------------------------------------
_DASHES = ("solid", "dash", "dot", "dashdot", "longdash")


def _run_styles(datas: Sequence[RunData]) -> list[tuple[str, str]]:
    """(colour, dash) per run: the norm position's colour; runs sharing a position get distinct dashes."""
    seen: dict[str, int] = {}
    out = []
    for d in datas:
        pos = d.info.config.norm_position
        n = seen.get(pos, 0)
        seen[pos] = n + 1
        out.append((NORM_COLORS.get(pos, GREY), _DASHES[n % len(_DASHES)]))
    return out


def compare_loss(
    datas: Sequence[RunData], labels: Sequence[str], lang: str = "en", presenter: bool = False
) -> go.Figure:
    """Training loss of several runs on one axis (colour = norm position, dash = which run), the unigram
    loss of each distinct corpus (dashed grey) and a cross where a run diverged."""
    fig = go.Figure()
    top = _loss_top(datas) if datas else 5.0
    over = 0
    for d, label, (color, dash) in zip(datas, labels, _run_styles(datas)):
        over += _loss_lines(fig, d, label, color, top, lang, dash=dash, width=3)
    max_steps = max((d.info.config.steps for d in datas), default=1)
    unigrams = sorted({round(d.info.unigram_entropy, 4) for d in datas})
    for u in unigrams:
        fig.add_trace(
            go.Scatter(
                x=[0, max_steps],
                y=[u, u],
                mode="lines",
                name=t("chart.unigram", lang),
                line={"color": GREY, "dash": "dash", "width": 2},
                showlegend=u == unigrams[0],
                hovertemplate=t("chart.unigram", lang) + ": %{y:.3f}<extra></extra>",
            )
        )
    for d, (color, _) in zip(datas, _run_styles(datas)):
        _divergence_marker(fig, d, top, lang, presenter, color)
    if over:
        fig.add_annotation(
            xref="paper",
            yref="paper",
            x=1,
            y=1,
            xanchor="right",
            yanchor="bottom",
            showarrow=False,
            text=t("chart.clipped", lang, count=over, limit=f"{top:g}"),
            font={"size": _px(14, presenter), "color": GREY},
        )
    if not any(d.scalars["step"] for d in datas):
        _empty_note(fig, lang, presenter)
    key = "cmp-loss-" + "-".join(_run_key(d) for d in datas)
    _layout(
        fig,
        t("chart.compare_loss_title", lang),
        presenter,
        key,
        xaxis={"title": {"text": t("chart.step_axis", lang)}, "range": [0, max_steps]},
        yaxis={"title": {"text": t("chart.loss_axis", lang)}, "range": [0, top]},
    )
    return fig


def compare_layer_profile(
    datas: Sequence[RunData],
    labels: Sequence[str],
    lang: str = "en",
    step: int | None = None,
    param: str = "ffn.w2",
    presenter: bool = False,
) -> go.Figure:
    """The paper's Figure 3 for several runs: above, the `param` gradient norm per layer at the probe step
    nearest `step` (each run's last when None; log y); below, each run's residual std per layer."""
    fig = _profile_figure(t("chart.profile_param", lang, param=param), lang, presenter)
    max_L = max((d.info.config.depth for d in datas), default=1)
    grads = []
    picks = [_probe_index(d, step) for d in datas]
    shown_steps = [d.probe_steps[p] for d, p in zip(datas, picks) if p is not None]
    same_step = len(set(shown_steps)) == 1
    for d, label, (color, dash), p in zip(datas, labels, _run_styles(datas), picks):
        L = d.info.config.depth
        j = list(d.info.param_names).index(param)
        g = d.probe("grad_norm")
        if d.probe_steps:
            grads.append(g[:, :, j].ravel())
        y = g[p, :, j] if p is not None else np.full(L, np.nan)
        std = _std_with_input(d, p) if p is not None else np.full(L + 1, np.nan)
        at = f" ({t('chart.step', lang)} {d.probe_steps[p]})" if p is not None and not same_step else ""
        line = {"color": color, "dash": dash, "width": 3}
        _in_panel(
            fig,
            go.Scatter(
                x=np.arange(1, L + 1, dtype=np.int16),
                y=_f32(y),
                mode="lines+markers",
                name=label + at,
                legendgroup=label,
                line=line,
                marker={"size": _px(6, presenter)},
                hovertemplate=label + "<br>" + _hover(lang, ("chart.layer", "%{x}"), ("chart.grad_norm", "%{y:.3g}")),
            ),
            row=1,
        )
        _in_panel(
            fig,
            go.Scatter(
                x=np.arange(0, L + 1, dtype=np.int16),
                y=_f32(std),
                mode="lines+markers",
                name=label,
                legendgroup=label,
                showlegend=False,
                line=line,
                marker={"size": _px(6, presenter)},
                hovertemplate=label + "<br>" + _hover(lang, ("chart.layer", "%{x}"), ("chart.std", "%{y:.3g}")),
            ),
            row=2,
        )
    if not shown_steps:
        _empty_note(fig, lang, presenter, xref="x domain", yref="y domain")
    grad_rng = _nice_log_range(np.concatenate(grads)) if grads else None
    if same_step:
        title = t("chart.compare_profile_title", lang, step=shown_steps[0])
    else:
        title = t("chart.compare_profile_title_any", lang)
    axes = _profile_axes(lang, max_L, grad_rng or (1e-3, 10.0), _std_top(datas), presenter)
    key = "cmp-profile-" + "-".join(_run_key(d) for d in datas)
    _layout(fig, title, presenter, key, legend_below=False, **axes)
    return fig


# --- 7. init lab ---------------------------------------------------------------------------------
def _band(x: np.ndarray, lo: np.ndarray, hi: np.ndarray, color: str, name: str, group: str) -> go.Scatter:
    """A filled min-max band as one closed polygon (one trace, not two)."""
    return go.Scatter(
        x=np.concatenate([x, x[::-1]]),
        y=_f32(np.concatenate([hi, lo[::-1]])),
        fill="toself",
        fillcolor=_rgba(color, 0.2),
        line={"width": 0},
        mode="lines",
        name=name,
        legendgroup=group,
        showlegend=False,
        hoverinfo="skip",
    )


def _seed_band_and_mean(
    fig: go.Figure, df: pd.DataFrame, column: str, pos: str, color: str, lang: str, presenter: bool
) -> pd.DataFrame:
    """Per layer, the mean of `column` over seeds as a line, and their min-max as a band when there
    are several seeds; returns the per-layer mean/min/max."""
    agg = df.groupby("layer")[column].agg(["mean", "min", "max"]).sort_index()
    x = agg.index.to_numpy(dtype=np.int16)
    name = _norm_label(pos, lang)
    n_seeds = df["seed"].nunique()
    if n_seeds > 1:
        fig.add_trace(_band(x, agg["min"].to_numpy(), agg["max"].to_numpy(), color, name, pos))
    fig.add_trace(
        go.Scatter(
            x=x,
            y=_f32(agg["mean"]),
            mode="lines+markers",
            name=t("chart.seed_mean", lang, name=name, n=n_seeds),
            legendgroup=pos,
            line={"color": color, "width": 3},
            marker={"size": _px(7, presenter)},
            hovertemplate=name + "<br>" + _hover(lang, ("chart.layer", "%{x}"), (f"chart.{column}", "%{y:.3g}")),
        )
    )
    return agg


def init_grad_profile(
    dfs_by_position: dict[str, pd.DataFrame], lang: str = "en", param: str = "ffn.w2", presenter: bool = False
) -> go.Figure:
    """Gradient norm of `param` per layer at initialisation (log y), one line per norm position: the mean
    over seeds, with the min-max over seeds as a band. Input: `init_grads(...)[0]` per position."""
    fig = go.Figure()
    max_L = 1
    values = []
    for pos, df in dfs_by_position.items():
        color = NORM_COLORS.get(pos, GREY)
        sub = df[df["param"] == param]
        if sub.empty:
            continue
        agg = _seed_band_and_mean(fig, sub, "grad_norm", pos, color, lang, presenter)
        max_L = max(max_L, int(agg.index.max()))
        values.append(agg.to_numpy().ravel())
    if not values:
        _empty_note(fig, lang, presenter, "chart.no_data")
    rng = _nice_log_range(np.concatenate(values)) if values else (1e-3, 10.0)
    _layout(
        fig,
        t("chart.init_profile_title", lang, param=param),
        presenter,
        "init-profile",
        xaxis={"title": {"text": t("chart.layer_axis", lang)}, "range": [0.5, max_L + 0.5], **_layer_ticks(max_L)},
        yaxis={
            "title": {"text": t("chart.grad_norm_axis", lang)},
            **_log_axis(rng),
        },
    )
    fig.add_annotation(
        text=t("chart.band_note", lang),
        xref="paper",
        yref="paper",
        x=1,
        y=1,
        xanchor="right",
        yanchor="bottom",
        showarrow=False,
        font={"size": _px(14, presenter), "color": GREY},
    )
    return fig


def last_layer_vs_depth_chart(
    df: pd.DataFrame, lang: str = "en", presenter: bool = False, param: str = "ffn.w2"
) -> go.Figure:
    """The last layer's gradient norm at init against depth L (log-log), mean over seeds with min-max
    error bars per norm position, and the theory: Pre-LN falls as 1/sqrt(L) (dashed, anchored at its
    smallest depth), Post-LN does not depend on L (dotted). Input: `last_layer_vs_depth(...)`."""
    fig = go.Figure()
    depths_all = sorted(df["depth"].unique()) if not df.empty else []
    values = []
    for pos, sub in df.groupby("norm_position", sort=False):
        color = NORM_COLORS.get(str(pos), GREY)
        agg = sub.groupby("depth")["grad_norm"].agg(["mean", "min", "max"]).sort_index()
        x = agg.index.to_numpy(dtype=np.int32)
        m = agg["mean"].to_numpy()
        values.append(agg.to_numpy().ravel())
        name = _norm_label(str(pos), lang)
        fig.add_trace(
            go.Scatter(
                x=x,
                y=_f32(m),
                mode="lines+markers",
                name=name,
                line={"color": color, "width": 3},
                marker={"size": _px(10, presenter)},
                error_y={
                    "type": "data",
                    "array": _f32(agg["max"].to_numpy() - m),
                    "arrayminus": _f32(m - agg["min"].to_numpy()),
                    "color": color,
                    "thickness": 1.5,
                    "width": 6,
                },
                hovertemplate=name + "<br>" + _hover(lang, ("chart.depth", "%{x}"), ("chart.grad_norm", "%{y:.3g}")),
            )
        )
        x0, y0 = float(x[0]), float(m[0])
        xs = np.asarray(depths_all, dtype=np.float64)
        if pos == "pre":
            values.append(y0 * np.sqrt(x0 / xs))
            fig.add_trace(
                go.Scatter(
                    x=xs,
                    y=_f32(y0 * np.sqrt(x0 / xs)),
                    mode="lines",
                    name=t("chart.ref_inv_sqrt", lang),
                    line={"color": color, "dash": "dash", "width": 2},
                    hoverinfo="skip",
                )
            )
        elif pos == "post":
            fig.add_trace(
                go.Scatter(
                    x=xs,
                    y=_f32(np.full(len(xs), y0)),
                    mode="lines",
                    name=t("chart.ref_flat", lang),
                    line={"color": color, "dash": "dot", "width": 2},
                    hoverinfo="skip",
                )
            )
    if not values:
        _empty_note(fig, lang, presenter, "chart.no_data")
    rng = _nice_log_range(np.concatenate(values)) if values else (1e-3, 10.0)
    xr = [math.log10(min(depths_all)) - 0.08, math.log10(max(depths_all)) + 0.08] if depths_all else [0, 2]
    _layout(
        fig,
        t("chart.depth_title", lang, param=param),
        presenter,
        "init-depth",
        xaxis={
            "title": {"text": t("chart.depth_axis", lang)},
            "type": "log",
            "range": xr,
            "tickmode": "array",
            "tickvals": [int(v) for v in depths_all],
        },
        yaxis={
            "title": {"text": t("chart.grad_norm_axis", lang)},
            **_log_axis(rng),
        },
    )
    return fig


def resid_growth_chart(
    resid_df_by_position: dict[str, pd.DataFrame], lang: str = "en", presenter: bool = False
) -> go.Figure:
    """E||x_l||^2 / d of the residual stream after layer l (0 = embeddings) at init, mean over seeds with
    a min-max band, against the paper's Lemma 1: Pre-LN between 1 + l/2 and 1 + 3l/2 (shaded), Post-LN
    at 3/2 (dashed; in the paper that is the sum x + F(x) that enters each LayerNorm, the stream after a
    Post-LN block is the norm's output, about 1). Input: `init_grads(...)[1]` per position."""
    fig = go.Figure()
    max_L = max((int(df["layer"].max()) for df in resid_df_by_position.values() if not df.empty), default=1)
    ls = np.arange(0, max_L + 1, dtype=np.float64)
    fig.add_trace(
        go.Scatter(
            x=np.concatenate([ls, ls[::-1]]),
            y=_f32(np.concatenate([1 + 1.5 * ls, (1 + 0.5 * ls)[::-1]])),
            fill="toself",
            fillcolor=_rgba(NORM_COLORS["pre"], 0.12),
            line={"width": 0},
            mode="lines",
            name=t("chart.pre_band", lang),
            hoverinfo="skip",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[0, max_L],
            y=[1.5, 1.5],
            mode="lines",
            name=t("chart.post_ref", lang),
            line={"color": NORM_COLORS["post"], "dash": "dash", "width": 2},
            hoverinfo="skip",
        )
    )
    top = 1 + 1.5 * max_L
    any_data = False
    for pos, df in resid_df_by_position.items():
        if df.empty:
            continue
        any_data = True
        color = NORM_COLORS.get(pos, GREY)
        agg = _seed_band_and_mean(fig, df, "mean_sq", pos, color, lang, presenter)
        top = max(top, float(np.nanmax(agg["max"])))
    if not any_data:
        _empty_note(fig, lang, presenter, "chart.no_data")
    _layout(
        fig,
        t("chart.resid_title", lang),
        presenter,
        "init-resid",
        xaxis={"title": {"text": t("chart.layer_axis0", lang)}, "range": [-0.5, max_L + 0.5], **_layer_ticks(max_L, 0)},
        yaxis={"title": {"text": t("chart.mean_sq_axis", lang)}, "range": [0, top * 1.05]},
    )
    return fig
