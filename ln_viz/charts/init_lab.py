"""The Init lab's charts, measured at initialisation (no training): the gradient norm per layer, the
last layer's gradient against depth, and the residual stream's growth, each with the paper's theory
drawn in; a mean over seeds with their min-max as a band or error bars."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ln_viz.charts.axes import _layer_ticks, _log_axis, _nice_log_range
from ln_viz.charts.style import (
    GREY,
    NORM_COLORS,
    NORM_DASHES,
    _empty_note,
    _f32,
    _hover,
    _layout,
    norm_label,
    scaled_px,
)
from ln_viz.i18n import t


def _rgba(hex_color: str, alpha: float) -> str:
    h = hex_color.lstrip("#")
    r, g, b = (int(h[i : i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


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
    fig: go.Figure, df: pd.DataFrame, column: str, pos: str, color: str, lang: str, lecture: bool
) -> pd.DataFrame:
    """Per layer, the mean of `column` over seeds as a line, and their min-max as a band when there
    are several seeds; returns the per-layer mean/min/max."""
    agg = df.groupby("layer")[column].agg(["mean", "min", "max"]).sort_index()
    x = agg.index.to_numpy(dtype=np.int16)
    name = norm_label(pos, lang)
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
            line={"color": color, "width": 3, "dash": NORM_DASHES.get(pos, "solid")},  # apart in greyscale too
            marker={"size": scaled_px(7, lecture)},
            hovertemplate=name + "<br>" + _hover(lang, ("chart.layer", "%{x}"), (f"chart.{column}", "%{y:.3g}")),
        )
    )
    return agg


def init_grad_profile(
    dfs_by_position: dict[str, pd.DataFrame],
    lang: str = "en",
    param: str = "ffn.w2",
    lecture: bool = False,
    height: int | None = None,
) -> go.Figure:
    """Gradient norm of `param` per layer at initialisation (log y), one line per norm position: the mean
    over seeds, with the min-max over seeds as a band. Input: `init_grads(...)[0]` per position.
    `height`: px, None for Plotly's default."""
    fig = go.Figure()
    max_L = 1
    values = []
    for pos, df in dfs_by_position.items():
        sub = df[df["param"] == param]
        if sub.empty:
            continue
        agg = _seed_band_and_mean(fig, sub, "grad_norm", pos, NORM_COLORS.get(pos, GREY), lang, lecture)
        max_L = max(max_L, int(agg.index.max()))
        values.append(agg.to_numpy().ravel())
    if not values:
        _empty_note(fig, lang, lecture, "chart.no_data")
    rng = _nice_log_range(np.concatenate(values)) if values else (1e-3, 10.0)
    _layout(
        fig,
        t("chart.init_profile_title", lang, param=param) + " · " + t("chart.band_note", lang),
        lecture,
        "init-profile",
        height=height,
        xaxis={"title": {"text": t("chart.layer_axis", lang)}, "range": [0.5, max_L + 0.5], **_layer_ticks(max_L)},
        yaxis={"title": {"text": t("chart.grad_norm_axis", lang)}, **_log_axis(rng)},
    )
    return fig


# --- the last layer's gradient against depth -----------------------------------------------------
class _DepthLine(NamedTuple):
    """One norm position's last-layer gradient per depth: the mean over seeds and their min and max."""

    position: str
    depths: np.ndarray  # (D,) int32
    mean: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


def _with_chosen(df: pd.DataFrame, chosen: dict[str, pd.DataFrame] | None, param: str) -> pd.DataFrame:
    """`df` plus, per norm position, the last layer's `param` gradient of the per-layer measurement
    (`InitLab.grads`, at the depth the user chose) when that depth is not among the depths measured."""
    if not chosen:
        return df
    rows = [df]
    for pos, g in chosen.items():
        sub = g[g["param"] == param] if not g.empty else g
        if sub.empty:
            continue
        L = int(sub["layer"].max())
        if not ((df["norm_position"] == pos) & (df["depth"] == L)).any():
            last = sub[sub["layer"] == L]
            rows.append(
                pd.DataFrame({"norm_position": pos, "depth": L, "seed": last["seed"], "grad_norm": last["grad_norm"]})
            )
    return pd.concat(rows, ignore_index=True) if len(rows) > 1 else df


def _prepare_depth(df: pd.DataFrame) -> tuple[list[_DepthLine], list[int]]:
    """Per norm position (in order of appearance) its line, and every depth measured."""
    depths_all = sorted(df["depth"].unique()) if not df.empty else []
    lines = []
    for pos, sub in df.groupby("norm_position", sort=False):
        agg = sub.groupby("depth")["grad_norm"].agg(["mean", "min", "max"]).sort_index()
        lines.append(
            _DepthLine(
                str(pos),
                agg.index.to_numpy(dtype=np.int32),
                agg["mean"].to_numpy(),
                agg["min"].to_numpy(),
                agg["max"].to_numpy(),
            )
        )
    return lines, depths_all


def _depth_trace(line: _DepthLine, lang: str, lecture: bool) -> go.Scatter:
    """The mean per depth with min-max error bars."""
    color = NORM_COLORS.get(line.position, GREY)
    name = norm_label(line.position, lang)
    m = line.mean
    return go.Scatter(
        x=line.depths,
        y=_f32(m),
        mode="lines+markers",
        name=name,
        line={"color": color, "width": 3},
        marker={"size": scaled_px(10, lecture)},
        error_y={
            "type": "data",
            "array": _f32(line.hi - m),
            "arrayminus": _f32(m - line.lo),
            "color": color,
            "thickness": 1.5,
            "width": 6,
        },
        hovertemplate=name + "<br>" + _hover(lang, ("chart.depth", "%{x}"), ("chart.grad_norm", "%{y:.3g}")),
    )


def _depth_theory(line: _DepthLine, xs: np.ndarray) -> np.ndarray | None:
    """The theory's line through the position's smallest depth: Pre-LN falls as 1/sqrt(L) (dashed),
    Post-LN does not depend on L (dotted); None for the other positions."""
    x0, y0 = float(line.depths[0]), float(line.mean[0])
    if line.position == "pre":
        return y0 * np.sqrt(x0 / xs)
    if line.position == "post":
        return np.full(len(xs), y0)
    return None


def last_layer_vs_depth_chart(
    df: pd.DataFrame,
    lang: str = "en",
    lecture: bool = False,
    param: str = "ffn.w2",
    height: int | None = None,
    chosen: dict[str, pd.DataFrame] | None = None,
) -> go.Figure:
    """The last layer's gradient norm at init against depth L (log-log), mean over seeds with min-max
    error bars per norm position, and the theory: Pre-LN falls as 1/sqrt(L) (dashed, anchored at its
    smallest depth), Post-LN does not depend on L (dotted). Input: `InitLab.vs_depth`; `chosen`
    (`InitLab.grads`) adds the depth of the per-layer measurement, so the depth the user picked is on
    the chart. `height`: px, None for Plotly's default."""
    fig = go.Figure()
    lines, depths_all = _prepare_depth(_with_chosen(df, chosen, param))
    xs = np.asarray(depths_all, dtype=np.float64)
    values = []
    for line in lines:
        fig.add_trace(_depth_trace(line, lang, lecture))
        values.append(np.stack([line.mean, line.lo, line.hi], axis=1).ravel())
        theory = _depth_theory(line, xs)
        if theory is None:
            continue
        pre = line.position == "pre"
        if pre:
            values.append(theory)
        name, dash = (t("chart.ref_inv_sqrt", lang), "dash") if pre else (t("chart.ref_flat", lang), "dot")
        color = NORM_COLORS.get(line.position, GREY)
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=_f32(theory),
                mode="lines",
                name=name,
                line={"color": color, "dash": dash, "width": 2},
                hoverinfo="skip",
            )
        )
    if not values:
        _empty_note(fig, lang, lecture, "chart.no_data")
    rng = _nice_log_range(np.concatenate(values)) if values else (1e-3, 10.0)
    xr = [math.log10(min(depths_all)) - 0.08, math.log10(max(depths_all)) + 0.08] if depths_all else [0, 2]
    ticks = {"tickmode": "array", "tickvals": [int(v) for v in depths_all]}
    return _layout(
        fig,
        t("chart.depth_title", lang, param=param),
        lecture,
        "init-depth",
        height=height,
        xaxis={"title": {"text": t("chart.depth_axis", lang)}, "type": "log", "range": xr, **ticks},
        yaxis={"title": {"text": t("chart.grad_norm_axis", lang)}, **_log_axis(rng)},
    )


# --- residual growth -----------------------------------------------------------------------------
def _lemma_refs(fig: go.Figure, max_L: int, lang: str) -> None:
    """The paper's Lemma 1: Pre-LN between 1 + l/2 and 1 + 3l/2 (shaded), Post-LN at 3/2 (dashed)."""
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


def resid_growth_chart(
    resid_df_by_position: dict[str, pd.DataFrame], lang: str = "en", lecture: bool = False, height: int | None = None
) -> go.Figure:
    """E||x_l||^2 / d of the residual stream after layer l (0 = embeddings) at init, mean over seeds with
    a min-max band, against the paper's Lemma 1: Pre-LN between 1 + l/2 and 1 + 3l/2 (shaded), Post-LN
    at 3/2 (dashed; in the paper that is the sum x + F(x) that enters each LayerNorm, the stream after a
    Post-LN block is the norm's output, about 1). Input: `init_grads(...)[1]` per position.
    `height`: px, None for Plotly's default."""
    fig = go.Figure()
    max_L = max((int(df["layer"].max()) for df in resid_df_by_position.values() if not df.empty), default=1)
    _lemma_refs(fig, max_L, lang)
    top = 1 + 1.5 * max_L
    any_data = False
    for pos, df in resid_df_by_position.items():
        if df.empty:
            continue
        any_data = True
        agg = _seed_band_and_mean(fig, df, "mean_sq", pos, NORM_COLORS.get(pos, GREY), lang, lecture)
        top = max(top, float(np.nanmax(agg["max"])))
    if not any_data:
        _empty_note(fig, lang, lecture, "chart.no_data")
    layer_axis: dict[str, Any] = {"range": [-0.5, max_L + 0.5], **_layer_ticks(max_L, 0)}
    return _layout(
        fig,
        t("chart.resid_title", lang),
        lecture,
        "init-resid",
        height=height,
        xaxis={"title": {"text": t("chart.layer_axis0", lang)}, **layer_axis},
        yaxis={"title": {"text": t("chart.mean_sq_axis", lang)}, "range": [0, top * 1.05]},
    )
