"""A horizontal reference line on the loss chart (the unigram loss, the entropy floor) and where its name goes:
at the end of the line, under or over it, whichever hides the fewest points of the lines already drawn."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ln_viz.charts.style import scaled_px, two_lines
from ln_viz.i18n import t

# Where a reference line's name goes: (x end, xanchor, yanchor) in order of preference, under the line at its
# right end first (a stalled Post-LN loss runs along the line's top side), and the share of the axes its box
# takes (two short lines of text: about a quarter of a chart's width, an eighth of its height)
LABEL_PLACES = (
    ("end", "right", "top"),
    ("start", "left", "top"),
    ("start", "left", "bottom"),
    ("end", "right", "bottom"),
)
LABEL_BOX = (0.28, 0.13)


def label_place(fig: go.Figure, x1: float, y: float, top: float) -> tuple[float, str, str]:
    """The place of `LABEL_PLACES` whose box covers the fewest points of the lines drawn so far (the loss
    lines, a side's seed band): a fixed place hid what mattered, the right end the last fifth of every run
    that had learned (Compare's lecture view: the lines seemed to stop at step 45 of 60), the left end the
    fall of a run that learned fast."""
    xs, ys = [], []
    for trace in fig.data:
        if getattr(trace, "yaxis", None) in (None, "y") and trace.x is not None and trace.y is not None:
            x = np.asarray(trace.x, dtype=float)
            yy = np.asarray([np.nan if v is None else v for v in trace.y], dtype=float)
            if x.shape == yy.shape:
                xs.append(x)
                ys.append(yy)
    px = np.concatenate(xs) if xs else np.zeros(0)
    py = np.concatenate(ys) if ys else np.zeros(0)
    w, h = LABEL_BOX[0] * x1, LABEL_BOX[1] * top
    best, best_count = LABEL_PLACES[0], None
    for end, xanchor, yanchor in LABEL_PLACES:
        x0 = x1 - w if end == "end" else 0.0
        y0, y_hi = (y - h, y) if yanchor == "top" else (y, y + h)
        inside = (px >= x0) & (px <= x0 + w) & (py > y0) & (py < y_hi)
        count = int(np.count_nonzero(inside))
        if best_count is None or count < best_count:
            best, best_count = (end, xanchor, yanchor), count
    end, xanchor, yanchor = best
    return (x1 if end == "end" else 0.0), xanchor, yanchor


def reference_line(
    fig: go.Figure,
    x1: float,
    y: float,
    key: str,
    style: tuple[str, str],
    lang: str,
    lecture: bool,
    label: bool,
    top: float,
) -> None:
    """A horizontal reference (the unigram loss, the entropy floor) from step 0 to `x1`, named on the
    line (`label`; one label for several unigram lines) rather than in the legend: a legend of every line
    took rows under the x axis title that a short chart cannot spare. The name sits at the end of the
    line, under or over it, where it covers the fewest points of the lines already drawn (`label_place`;
    `top`: the loss axis' top, for the size of its box)."""
    color, dash = style
    place = label_place(fig, x1, y, top) if label else None
    fig.add_trace(
        go.Scatter(
            x=[0, x1],
            y=[y, y],
            mode="lines",
            name=t(key, lang),
            showlegend=False,
            line={"color": color, "dash": dash, "width": 2},
            hovertemplate=t(key, lang) + ": %{y:.3f}<extra></extra>",
        )
    )
    if place is not None:
        x, xanchor, yanchor = place
        fig.add_annotation(
            x=x,
            y=y,
            xanchor=xanchor,
            yanchor=yanchor,
            showarrow=False,
            text=two_lines(t(key, lang)),  # narrow enough for a phone's plot (~220 px)
            font={"size": scaled_px(14, lecture), "color": color},
            bgcolor="rgba(255,255,255,0.75)",
        )
