"""What one frame of a video (ln_viz/video.py) shows: the lecture view's charts at a step, drawn from the
run as it stood then (`until`) on the whole run's axes, the tiles they fill, and the header and footer
lines (set as charts, so Chromium sets them in the charts' fonts, Korean included). No streamlit here."""

from __future__ import annotations

import dataclasses
import unicodedata
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import plotly.graph_objects as go

from ln_viz import charts
from ln_viz.i18n import CATALOGS, t
from ln_viz.lessons import lesson_chart, scenario_of
from ln_viz.words import describe

if TYPE_CHECKING:
    from ln_viz.snapshot import RunData

# The lecture view's layout (ln_viz/ui/lecture_view.draw_live): the loss on the left, the heatmap (or the
# lesson chart) above the profile and the distribution on the right. Tiles as shares of the charts' band
# of the frame, between the header and the footer: (x, y, width, height).
TILES = {
    "loss": (0.0, 0.0, 0.465, 1.0),
    "grad_heatmap": (0.465, 0.0, 0.535, 0.5),
    "layer_profile": (0.465, 0.5, 0.297, 0.5),
    "act_dist": (0.762, 0.5, 0.238, 0.5),
}
# A pair, as the lecture view's Compare (ui/lecture_view.draw_compare): both losses on one axis on the left,
# the two heatmaps on one colour scale (or both runs on the lesson chart) above both runs' ffn.w2 profile
# (the paper's Figure 3) on the right.
PAIR_TILES = {
    "loss": (0.0, 0.0, 0.52, 1.0),
    "heatmap_0": (0.52, 0.0, 0.23, 0.44),
    "heatmap_1": (0.75, 0.0, 0.25, 0.44),
    "profile": (0.52, 0.44, 0.48, 0.56),
}
PAIR_LESSON_TILES = {
    "loss": (0.0, 0.0, 0.52, 1.0),
    "lesson": (0.52, 0.0, 0.48, 0.44),
    "profile": (0.52, 0.44, 0.48, 0.56),
}
_LESSONS = {"attn_logit": charts.attn_logit_chart, "log_z": charts.log_z_chart,
            "angular_update": charts.angular_update_chart}  # fmt: skip


def until(data: RunData, step: int) -> RunData:
    """The run as it stood at `step` (its scalars and probe steps up to it; a stall or divergence only
    once reached, "running" before its end): what a live lecture view showed then."""
    n = int(np.searchsorted(np.asarray(data.scalars["step"]), step, side="right"))
    if n >= len(data.scalars["step"]):
        return data
    p = int(np.searchsorted(np.asarray(data.probe_steps), step, side="right"))
    return dataclasses.replace(
        data,
        status="running",
        message=None,
        stalled_since=data.stalled_since if data.stalled_since is not None and data.stalled_since <= step else None,
        diverged_at=data.diverged_at if data.diverged_at is not None and data.diverged_at <= step else None,
        scalars={k: v[:n] for k, v in data.scalars.items()},
        probe_steps=data.probe_steps[:p],
        probes={k: v[:p] for k, v in data.probes.items()},
    )


_AXES = ("xaxis", "yaxis", "yaxis2")


def _axes_of(fig: go.Figure) -> dict[str, Any]:
    """A chart's axis ranges (and types), to draw a frame's partial chart on the whole run's axes."""
    out = {}
    for name in _AXES:
        axis = fig.layout[name] if name in fig.layout else None
        if axis is not None and axis.range is not None:
            out[name] = {"range": list(axis.range), "type": axis.type}
    return out


def _on_axes(fig: go.Figure, axes: dict[str, Any]) -> go.Figure:
    if axes:
        fig.update_layout({name: {k: v for k, v in a.items() if v is not None} for name, a in axes.items()})
    return fig


def lr_title_above(fig: go.Figure) -> go.Figure:
    """The learning rate's axis title set above its axis, across: turned on the chart's right edge it read
    as the title of the panel beside it, where tiles (or the pack's boxes) touch (round 4's "stray
    learning rate title")."""
    axis = fig.layout.yaxis2
    text = axis.title.text if axis is not None and axis.title is not None else None
    if not text:
        return fig
    fig.update_layout(yaxis2={"title": {"text": None}})
    fig.add_annotation(
        text=text,
        x=1,
        xref="paper",
        y=1,
        yref="paper",
        xanchor="right",
        yanchor="bottom",
        yshift=4,
        showarrow=False,
        font={"color": "#666666"},
    )
    return fig


class FrameCharts:
    """The charts of one video at any of its steps: the whole run's axes measured once, each step's chart
    drawn from the run as it stood then (`until`)."""

    def __init__(self, datas: Sequence[RunData], lang: str, labels: Sequence[str] | None) -> None:
        self.datas, self.lang = list(datas), lang
        cfgs = [d.info.config for d in datas]
        self.scenario = scenario_of(cfgs)
        lesson = lesson_chart(self.scenario, cfgs)
        self.lesson = lesson if lesson and all(charts.has_instability_probes(d) for d in datas) else None
        if len(datas) > 1:
            self.names = list(labels) if labels else [charts.norm_label(c.norm_position, lang) for c in cfgs]
            self.tiles = PAIR_LESSON_TILES if self.lesson else PAIR_TILES
        else:
            self.names = [None]
            self.tiles = TILES
        self.zrange = charts.shared_zrange(datas) if len(datas) > 1 else None
        self.loss_axes = _axes_of(self._loss(self.datas))
        self.lesson_axes = _axes_of(self._lesson(self.datas)) if self.lesson else {}

    def _runs(self, datas: list[RunData]) -> Any:
        return datas[0] if len(datas) == 1 else datas

    def _loss(self, datas: list[RunData]) -> go.Figure:
        if len(datas) == 1:
            return lr_title_above(charts.loss_chart(datas[0], self.lang, True))
        return lr_title_above(charts.loss_chart(datas, self.lang, True, self.names))

    def _lesson(self, datas: list[RunData]) -> go.Figure:
        build = _LESSONS[self.lesson]
        if len(datas) == 1:
            return build(datas[0], self.lang, True)
        return build(datas, self.lang, True, labels=self.names)

    def _heatmap(self, i: int, step: int) -> go.Figure:
        data = self.datas[i]
        fig = charts.grad_heatmap(data, self.lang, zrange=self.zrange, lecture=True)
        last = data.probe_steps[-1]
        if step < last:  # the steps not yet reached, hidden: the heatmap fills as the video plays
            fig.add_vrect(x0=step + 0.5, x1=last + 0.5, fillcolor="white", opacity=1, line_width=0, layer="above")
        if len(self.datas) > 1:
            fig.update_layout(title={"text": self.names[i]})  # which run is which
            if i == 0:
                fig.update_traces(showscale=False)  # one colour bar for both, on the right
        return fig

    def figure(self, name: str, step: int) -> go.Figure:
        """Tile `name`'s chart at `step`."""
        lang = self.lang
        if name == "loss":
            return _on_axes(self._loss([until(d, step) for d in self.datas]), self.loss_axes)
        if name == "lesson" or (name == "grad_heatmap" and self.lesson):
            return _on_axes(self._lesson([until(d, step) for d in self.datas]), self.lesson_axes)
        if name == "grad_heatmap":
            return self._heatmap(0, step)
        if name.startswith("heatmap_"):
            return self._heatmap(int(name[-1]), step)
        if name == "layer_profile":
            return charts.layer_profile(self.datas[0], lang, step, True)
        if name == "act_dist":
            return charts.act_dist(self.datas[0], lang, step=step, lecture=True)
        return charts.layer_profile(self.datas, lang, step, True, self.names, std=False)

    def header(self) -> str:
        return describe([d.info.config for d in self.datas], self.lang)

    def footer(self, last: bool) -> str:
        """Under the charts: the scenario's question while it plays, its takeaway on the last frame."""
        if self.scenario is None:
            return ""
        key = f"lecture.takeaway.{self.scenario}" if last else f"lecture.question.{self.scenario}"
        return t(key, self.lang) if key in CATALOGS["en"] else ""


def text_figure(text: str, size_px: int, bold: bool) -> go.Figure:
    """A line (or two) of text as a chart, so Chromium sets it in the charts' fonts (Korean included)."""
    fig = go.Figure()
    fig.add_annotation(
        text=f"<b>{text}</b>" if bold else text,
        x=0,
        y=0.5,
        xref="paper",
        yref="paper",
        xanchor="left",
        yanchor="middle",
        align="left",
        showarrow=False,
        font={"family": charts.FONT_FAMILY, "size": size_px, "color": "#222222"},
    )
    fig.update_layout(
        margin={"l": 22, "r": 10, "t": 0, "b": 0},
        xaxis={"visible": False},
        yaxis={"visible": False},
        paper_bgcolor="white",
        plot_bgcolor="white",
    )
    return fig


def wrap(text: str, width_px: float, size_px: int) -> str:
    """`text` broken into lines (<br>) that fit `width_px` at `size_px`: a wide (Hangul) character counts
    as one em, another as about half."""

    def em(s: str) -> float:
        return sum(1.0 if unicodedata.east_asian_width(c) in "WF" else 0.55 for c in s)

    words, lines, line = text.split(" "), [], ""
    for word in words:
        trial = f"{line} {word}".strip()
        if line and em(trial) * size_px > width_px:
            lines.append(line)
            line = word
        else:
            line = trial
    lines.append(line)
    return "<br>".join(lines)
