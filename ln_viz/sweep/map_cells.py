"""The stability map's cells off its colour scale, and the words on every cell: the pending cells (grey),
the diverged ones (pale red), and each coloured cell's text colour: white on Viridis's dark end, black on
the rest, at least 4.5:1 against its cell either way (WCAG AA; issue 32: Plotly's own choice, white on the
middle teal where a stalled run's cell sits, was 3.7:1)."""

from __future__ import annotations

import math
from typing import Any

import plotly.graph_objects as go

from ln_viz.charts.style import scaled_px

Panel = Any  # ln_viz.sweep.charts.Panel (imported from here: no import back)

PENDING = "#D9D9D9"
DIVERGED_FILL = "#F6C9B4"  # a diverged cell: outside the colour scale (no Viridis colour is this pale red)
TEXT_LAYER = "rgba(0,0,0,0)"  # the transparent layer that writes the light cells' words in black
# Plotly.js's own "Viridis" stops: a cell's colour, from which its text colour is chosen (`_text_on`).
VIRIDIS_STOPS = ("#440154", "#48186a", "#472d7b", "#424086", "#3b528b", "#33638d", "#2c728e", "#26828e", "#21918c",
            "#1fa088", "#28ae80", "#3fbc73", "#5ec962", "#84d44b", "#addc30", "#d8e219", "#fde725")  # fmt: skip


def dark_text_trace(p: Panel, xs, ys, zrange, lecture: bool) -> go.Heatmap:
    """The words of the light cells (and of failed ones) in black, over them in a transparent layer: Plotly's
    own choice was white on Viridis's middle teal, where a stalled run's cell sits, at 3.7:1 (AA: 4.5:1)."""
    dark = [
        [s not in (None, "diverged") and text_on(z, zrange) != "white" for z, s in zip(*rows)]
        for rows in zip(p.z, p.status)
    ]  # fmt: skip (a failed cell has no colour: black on the white ground)
    z = [[1 if d else None for d in row] for row in dark]
    text = [[w if d else "" for w, d in zip(*rows)] for rows in zip(p.text, dark)]
    return _flat_cells(xs, ys, z, text, TEXT_LAYER, {"size": scaled_px(14, lecture), "color": "black"})


def luminance(hex_colour: str) -> float:
    """WCAG's relative luminance of an sRGB colour "#rrggbb"."""
    c = [int(hex_colour[k : k + 2], 16) / 255 for k in (1, 3, 5)]
    lin = [v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4 for v in c]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def viridis_luminance(frac: float) -> float:
    """The relative luminance of Viridis at `frac` (0..1), interpolated in RGB as Plotly.js draws it."""
    frac = min(max(frac, 0.0), 1.0) * (len(VIRIDIS_STOPS) - 1)
    k = min(int(frac), len(VIRIDIS_STOPS) - 2)
    lo, hi = ([int(c[i : i + 2], 16) for i in (1, 3, 5)] for c in VIRIDIS_STOPS[k : k + 2])
    rgb = "#" + "".join(f"{round(a + (b - a) * (frac - k)):02x}" for a, b in zip(lo, hi))
    return luminance(rgb)


def text_on(z: float | None, zrange: tuple[float, float]) -> str | None:
    """The text colour that reads on a cell of final loss `z` (None: no cell): white on Viridis's dark
    end, black from where black reaches 4.5:1 (relative luminance 0.18, where both are ~4.6:1)."""
    if z is None or not math.isfinite(z):
        return None
    lo, hi = zrange
    return "black" if viridis_luminance((z - lo) / (hi - lo) if hi > lo else 0.0) > 0.18 else "white"


def diverged_trace(p: Panel, xs, ys, lecture: bool) -> go.Heatmap:
    """The diverged cells, in a pale red outside the colour scale (their loss is not a point on it), with
    their words; the legend note under the colour bar names the colour."""
    z = [[1 if s == "diverged" else None for s in row] for row in p.status]
    text = [[w if s == "diverged" else "" for s, w in zip(srow, trow)] for srow, trow in zip(p.status, p.text)]
    return _flat_cells(xs, ys, z, text, DIVERGED_FILL, {"size": scaled_px(14, lecture), "color": "black"})


def _flat_cells(xs, ys, z, text, colour: str, textfont: dict | None = None) -> go.Heatmap:
    """Cells in one colour, off the colour scale (those with z 1; None elsewhere), each with its text."""
    return go.Heatmap(
        x=xs,
        y=ys,
        z=z,
        zmin=0,
        zmax=1,
        colorscale=[[0, colour], [1, colour]],
        showscale=False,
        text=text,
        texttemplate="%{text}",
        textfont=textfont,
        hoverinfo="skip",
        xgap=2,
        ygap=2,
    )


def pending_trace(p: Panel, xs, ys) -> go.Heatmap:
    """The cells not trained yet, grey with an ellipsis: the grid's shape shows from the start."""
    z = [[1 if s is None else None for s in row] for row in p.status]
    text = [["…" if s is None else "" for s in row] for row in p.status]
    return _flat_cells(xs, ys, z, text, PENDING)
