"""The Init lab's real-architecture charts (ln_viz/hf_init_lab.py): each model's gradient per layer relative
to its first layer at initialisation (Figure 3's shape, so models of different scales share one axis), and
every model's last/first ratio at both inits with its seeds' range. Flat is 1 (a grey line and band)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ln_viz.charts.axes import _layer_ticks, _log_axis, _nice_log_range
from ln_viz.charts.init_lab import _band
from ln_viz.charts.style import GREY, NORM_COLORS, NORM_DASHES, _f32, _hover, _layout, scaled_px
from ln_viz.hf_init_lab import ARCHS, FFN_OUT, FLAT, seed_ratios
from ln_viz.i18n import t

# Okabe-Ito, one per architecture (BERT, the Post-LN one, in Post-LN's vermillion; GPT-2 in Pre-LN's blue),
# and a dash each, so that they differ without colour too
ARCH_COLORS = {"bert": "#D55E00", "gpt2": "#0072B2", "llama": "#56B4E9", "gemma3_text": "#009E73", "olmo2": "#CC79A7"}
ARCH_DASHES = {"bert": "solid", "gpt2": "longdash", "llama": "dash", "gemma3_text": "dot", "olmo2": "dashdot"}
INIT_STYLE = {"hf": ("#000000", "circle"), "xavier": ("#E69F00", "diamond")}


class Line:
    """One model's line: `key` picks its colour and dash (an ARCHS name, or a norm position for ln-viz's own
    model), `label` names it, `grads` holds seed, layer, role, grad_norm."""

    def __init__(self, key: str, label: str, grads: pd.DataFrame) -> None:
        self.key, self.label, self.grads = key, label, grads


def _relative(grads: pd.DataFrame, role: str) -> pd.DataFrame:
    """Per layer, the gradient norm over layer 1's, per seed: the median and range over seeds."""
    g = grads[grads.role == role].pivot_table(index="seed", columns="layer", values="grad_norm", aggfunc="sum")
    rel = g.div(g[g.columns.min()], axis=0)
    return rel.agg(["median", "min", "max"]).T.sort_index()


def _flat_guides(fig: go.Figure, x0: float, x1: float) -> None:
    fig.add_shape(type="rect", x0=x0, x1=x1, y0=FLAT[0], y1=FLAT[1], fillcolor="rgba(0,0,0,0.06)", line_width=0,
                  layer="below")  # fmt: skip
    fig.add_shape(type="line", x0=x0, x1=x1, y0=1, y1=1, line={"color": GREY, "width": 1.5, "dash": "dot"})


def hf_profile_chart(
    lines: Sequence[Line],
    lang: str = "en",
    lecture: bool = False,
    role: str = FFN_OUT,
    init_label: str = "",
    height: int | None = None,
) -> go.Figure:
    """Each model's `role` gradient norm per layer over its layer 1's (log y): the median over seeds, and their
    range as a band; flat is 1."""
    fig = go.Figure()
    values, depth = [np.array([1.0])], 1
    hover = _hover(lang, ("chart.layer", "%{x}"), ("init.hf.profile_axis", "%{y:.3g}"))
    for line in lines:
        agg = _relative(line.grads, role)
        if agg.empty:
            continue
        x = agg.index.to_numpy(dtype=np.int16)
        depth = max(depth, int(x.max()))
        color = ARCH_COLORS.get(line.key, NORM_COLORS.get(line.key, GREY))
        dash = ARCH_DASHES.get(line.key, NORM_DASHES.get(line.key, "solid"))
        if line.grads.seed.nunique() > 1:
            fig.add_trace(_band(x, agg["min"].to_numpy(), agg["max"].to_numpy(), color, line.label, line.key))
        fig.add_trace(
            go.Scatter(
                x=x,
                y=_f32(agg["median"]),
                mode="lines+markers",
                name=line.label,
                legendgroup=line.key,
                line={"color": color, "width": 4 if lecture else 3, "dash": dash},
                marker={"size": scaled_px(7, lecture)},
                hovertemplate=line.label + "<br>" + hover,
            )
        )
        values.append(agg.to_numpy().ravel())
    _flat_guides(fig, 0.5, depth + 0.5)
    rng = _nice_log_range(np.concatenate(values)) or (0.1, 2.0)
    title = t("init.hf.profile_title", lang, role=role, init=init_label)
    _layout(
        fig,
        title,
        lecture,
        "init-hf-profile",
        height=height,
        xaxis={"title": {"text": t("chart.layer_axis", lang)}, "range": [0.5, depth + 0.5], **_layer_ticks(depth)},
        yaxis={"title": {"text": t("init.hf.profile_axis", lang)}, **_log_axis(rng)},
    )
    return fig


def hf_ratio_chart(
    measured: Sequence[tuple[str, str, pd.DataFrame]],
    lang: str = "en",
    lecture: bool = False,
    role: str = FFN_OUT,
    height: int | None = None,
) -> go.Figure:
    """Every (arch, init, grads) measured: the last/first ratio's median over seeds (a marker per init) and its
    range (the error bar), one column per architecture (log y); inside the grey band is flat."""
    fig = go.Figure()
    archs = [a for a in ARCHS if any(m[0] == a for m in measured)]
    values = [np.array([FLAT[0], FLAT[1]])]
    for init, offset in (("hf", -0.12), ("xavier", 0.12)):
        color, symbol = INIT_STYLE[init]
        rows = [(archs.index(a), seed_ratios(g, role)) for a, i, g in measured if i == init and a in archs]
        if not rows:
            continue
        x = np.array([i + offset for i, _ in rows])
        med = np.array([r.median() for _, r in rows])
        lo, hi = np.array([r.min() for _, r in rows]), np.array([r.max() for _, r in rows])
        values += [lo, hi]
        fig.add_trace(
            go.Scatter(
                x=x,
                y=_f32(med),
                mode="markers",
                name=t(f"init.hf.init_{init}", lang),
                marker={"color": color, "symbol": symbol, "size": scaled_px(11, lecture)},
                error_y={"type": "data", "symmetric": False, "array": _f32(hi - med), "arrayminus": _f32(med - lo),
                         "color": color, "thickness": 2, "width": scaled_px(5, lecture)},
                customdata=np.stack([lo, hi], axis=1),
                hovertemplate="%{y:.2f} (%{customdata[0]:.2f}-%{customdata[1]:.2f})<extra></extra>",
            )
        )  # fmt: skip
    _flat_guides(fig, -0.5, len(archs) - 0.5)
    rng = _nice_log_range(np.concatenate(values)) or (0.1, 2.0)
    _layout(
        fig,
        t("init.hf.ratio_title", lang, role=role),
        lecture,
        "init-hf-ratio",
        height=height,
        xaxis={"tickmode": "array", "tickvals": list(range(len(archs))), "ticktext": [ARCHS[a].label for a in archs],
               "range": [-0.5, len(archs) - 0.5]},
        yaxis={"title": {"text": t("init.hf.ratio_axis", lang)}, **_log_axis(rng)},
    )  # fmt: skip
    return fig
