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


def _lr_key(runs: Sequence[RunData]) -> str:
    """The rate's name: planned; as applied when a run of the user's own model is drawn (`lr_curve`)."""
    return "chart.lr_applied" if any(d.info.attached for d in runs) else "chart.lr"


def _lr_line(sched: np.ndarray, name: str, color: str, lang: str, key: str = "chart.lr") -> go.Scatter:
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
        hovertemplate=_hover(lang, ("chart.step", "%{x}"), (key, "%{y:.2e}")),
    )


def schedule(fig: go.Figure, data: RunData, sched: np.ndarray, lang: str, lecture: bool) -> None:
    """The whole planned learning rate on the right axis (so the warm-up ramp is visible before the run
    gets there; an attached run's as recorded so far, `lr_curve`), and a dot at the latest step's rate."""
    key = _lr_key([data])
    fig.add_trace(_lr_line(sched, t(key, lang), LR_GREY, lang, key))
    if data.scalars["step"]:
        fig.add_trace(
            go.Scatter(
                x=[int(data.scalars["step"][-1])],
                y=[float(data.scalars["lr"][-1])],
                yaxis="y2",
                mode="markers",
                showlegend=False,
                marker={"color": LR_GREY, "size": scaled_px(9, lecture)},
                hovertemplate=_hover(lang, ("chart.step", "%{x}"), (key, "%{y:.2e}")),
            )
        )


def lr_curve(data: RunData) -> np.ndarray:
    """A run's learning rate per step 1, 2, ...: its planned schedule; for a run ln_viz.attach recorded (its
    schedule is the user's loop's, unknown ahead), the rate its optimizer had at each step taken so far."""
    if data.info.attached:
        lrs = np.asarray(data.scalars["lr"], dtype=np.float64)
        return lrs if lrs.size else np.full(1, data.info.config.lr)
    return lr_schedule(data.info.config)


def compared_schedules(runs: Sequence[RunData]) -> list[np.ndarray]:
    """Each compared run's planned learning rate per step (`lr_curve`); one when every run has the same."""
    scheds = [lr_curve(d) for d in runs]
    same = all(s.shape == scheds[0].shape and np.array_equal(s, scheds[0]) for s in scheds)
    return scheds[:1] if same else scheds


def compare_schedules(
    fig: go.Figure,
    scheds: Sequence[np.ndarray],
    names: Sequence[str],
    colors: Sequence[str],
    lang: str,
    key: str = "chart.lr",
) -> None:
    """The compared runs' planned learning rates on the right axis, dotted (issue 21 N28: in "+ warm-up"
    the ramp that explains the drop was not drawn): one grey line when they share it, else one per run in
    its colour, its hover naming the run. `key`: the rate's name (`_lr_key`: as applied, for runs of the
    user's own models)."""
    if len(scheds) == 1:
        fig.add_trace(_lr_line(scheds[0], t(key, lang), LR_GREY, lang, key))
        return
    for sched, name, color in zip(scheds, names, colors):
        fig.add_trace(_lr_line(sched, f"{t(key, lang)} · {name}", color, lang, key))
