"""The look every chart shares: Okabe-Ito colours (one per norm position, on every chart), fonts that
start at 16 px and grow 1.4x in presenter mode, a small template of our own, and `_layout`, which sets
a figure's whole layout in one assignment."""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go

from ln_viz.i18n import t

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
_AXIS_STYLE: dict[str, Any] = {
    "gridcolor": "#E6E6E6",
    "linecolor": "#444444",
    "zeroline": False,
    "ticks": "outside",
    "automargin": True,
}
_TEMPLATE: dict[str, Any] = {
    "layout": {
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "colorway": list(NORM_COLORS.values()),
        "xaxis": dict(_AXIS_STYLE),
        "yaxis": dict(_AXIS_STYLE),
    }
}

# Built once: validating the template dict costs ~80 ms per figure, a live redraw makes five.
_TEMPLATE_OBJ = go.layout.Template(_TEMPLATE)


def _scale(presenter: bool) -> float:
    return PRESENTER_SCALE if presenter else 1.0


def _px(size: float, presenter: bool) -> int:
    return round(size * _scale(presenter))


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


def _f32(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


def norm_label(position: str, lang: str) -> str:
    """The short name of a norm position on charts ("Post-LN")."""
    return t(f"chart.norm.{position}", lang)


def _hover(lang: str, *parts: tuple[str, str]) -> str:
    """A hovertemplate from (label key, value format) pairs, e.g. ("chart.step", "%{x}")."""
    return "<br>".join(f"{t(key, lang)} {fmt}" for key, fmt in parts) + "<extra></extra>"


def _empty_note(
    fig: go.Figure, lang: str, presenter: bool, key: str = "chart.waiting", xref: str = "paper", yref: str = "paper"
) -> None:
    """A grey note in the middle of an empty chart ("waiting for the first step")."""
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


def _corner_note(fig: go.Figure, text: str, presenter: bool) -> None:
    """A small grey note above the plot's top right corner (clipped values, what a band means)."""
    fig.add_annotation(
        xref="paper",
        yref="paper",
        x=1,
        y=1,
        xanchor="right",
        yanchor="bottom",
        showarrow=False,
        text=text,
        font={"size": _px(14, presenter), "color": GREY},
    )
