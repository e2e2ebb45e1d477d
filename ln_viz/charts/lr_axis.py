"""The planned learning rate on the loss chart's right axis: one run's schedule (Live) with a dot at the
latest step, or each compared run's (Compare), so that a warm-up's ramp sits beside the drop it explains."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from ln_viz.charts.axes import _short_number
from ln_viz.charts.sample import MAX_LR_POINTS, downsample_index
from ln_viz.charts.style import _f32, _hover, scaled_px
from ln_viz.i18n import t
from ln_viz.schedule import lr_schedule
from ln_viz.snapshot import RunData

LR_GREY = "#888888"


def lr_axis(sched: np.ndarray, lr: float, lang: str) -> dict[str, Any]:
    """The right axis of the learning rate: three ticks, zero, half and the peak the run is set to."""
    lr_peak = float(np.nanmax(sched)) if sched.size else lr
    lr_ticks = [0.0, lr_peak / 2, lr_peak]
    return {
        "title": {"text": t("chart.lr_axis", lang), "font": {"color": "#666666"}, "standoff": 12},
        "overlaying": "y",
        "side": "right",
        "range": [0, lr_peak * 1.1],
        "showgrid": False,
        "tickfont": {"color": "#666666"},
        "tickmode": "array",
        "tickvals": lr_ticks,
        "ticktext": [_short_number(v, exponent=0 < v < 0.01) for v in lr_ticks],
    }


def _lr_line(sched: np.ndarray, name: str, color: str, lang: str) -> go.Scatter:
    idx = downsample_index(sched, MAX_LR_POINTS)
    return go.Scatter(
        x=(idx + 1).astype(np.int32),
        y=_f32(sched[idx]),
        yaxis="y2",
        mode="lines",
        name=name,
        showlegend=False,  # named by its axis, on the right
        line={"color": color, "dash": "dot", "width": 2},
        opacity=0.8,
        hovertemplate=_hover(lang, ("chart.step", "%{x}"), ("chart.lr", "%{y:.2e}")),
    )


def schedule(fig: go.Figure, data: RunData, sched: np.ndarray, lang: str, lecture: bool) -> None:
    """The whole planned learning rate on the right axis (so the warm-up ramp is visible before the run
    gets there), and a dot at the latest step's rate."""
    fig.add_trace(_lr_line(sched, t("chart.lr", lang), LR_GREY, lang))
    if data.scalars["step"]:
        fig.add_trace(
            go.Scatter(
                x=[int(data.scalars["step"][-1])],
                y=[float(data.scalars["lr"][-1])],
                yaxis="y2",
                mode="markers",
                showlegend=False,
                marker={"color": LR_GREY, "size": scaled_px(9, lecture)},
                hovertemplate=_hover(lang, ("chart.step", "%{x}"), ("chart.lr", "%{y:.2e}")),
            )
        )


def compared_schedules(runs: Sequence[RunData]) -> list[np.ndarray]:
    """Each compared run's planned learning rate per step; one when every run has the same schedule."""
    scheds = [lr_schedule(d.info.config) for d in runs]
    same = all(s.shape == scheds[0].shape and np.array_equal(s, scheds[0]) for s in scheds)
    return scheds[:1] if same else scheds


def compare_schedules(
    fig: go.Figure, scheds: Sequence[np.ndarray], names: Sequence[str], colors: Sequence[str], lang: str
) -> None:
    """The compared runs' planned learning rates on the right axis, dotted (issue 21 N28: in "+ warm-up"
    the ramp that explains the drop was not drawn): one grey line when they share it, else one per run in
    its colour, its hover naming the run."""
    if len(scheds) == 1:
        fig.add_trace(_lr_line(scheds[0], t("chart.lr", lang), LR_GREY, lang))
        return
    for sched, name, color in zip(scheds, names, colors):
        fig.add_trace(_lr_line(sched, f"{t('chart.lr', lang)} · {name}", color, lang))
