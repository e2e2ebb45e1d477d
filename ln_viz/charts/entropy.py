"""Attention entropy per layer over the training steps: how spread out each layer's attention is. An
entropy falling towards 0 means every query attends to a single key, the "attention entropy collapse"
that Zhai et al. (2023, "Stabilizing Transformer Training by Preventing Attention Entropy Collapse")
found before training diverges. The probes measure it on every probe step (`attn_entropy`, nats)."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from ln_viz.charts.axes import _colorbar
from ln_viz.charts.grads import layer_heatmap_layout
from ln_viz.charts.sample import heatmap_columns
from ln_viz.charts.style import _empty_note, _f32, _hover
from ln_viz.i18n import t
from ln_viz.snapshot import RunData


def uniform_entropy(seq_len: int) -> float:
    """Mean entropy (nats) of causal attention spread evenly: position t attends to t keys, ln t each,
    averaged over the positions 1..seq_len. The top of the colour scale: no layer can spread more."""
    return float(np.mean(np.log(np.arange(1, seq_len + 1))))


def attention_entropy_chart(
    data: RunData, lang: str = "en", lecture: bool = False, height: int | None = None
) -> go.Figure:
    """Mean attention entropy (nats, over heads and positions) per layer (rows, 1 = input at the
    bottom) and probe step (columns), on one fixed colour scale from 0 (collapsed: one key per query,
    dark) to the entropy of evenly spread causal attention (bright), as in every heatmap here bright =
    large. `height`: px, None for Plotly's default."""
    cfg = data.info.config
    L = cfg.depth
    top = uniform_entropy(cfg.seq_len)
    ticks = [float(v) for v in range(0, math.floor(top) + 1)]
    color = {
        "zmin": 0.0,
        "zmax": top,
        "colorscale": "Viridis",
        "colorbar": _colorbar(t("chart.entropy_axis", lang), ticks, [f"{v:g}" for v in ticks], lecture, None, height),
    }
    if data.probe_steps:
        cols = heatmap_columns(len(data.probe_steps))
        steps = np.asarray(data.probe_steps, dtype=np.int32)[cols]
        trace = go.Heatmap(
            x=steps,
            y=np.arange(1, L + 1, dtype=np.int16),
            z=_f32(data.probe("attn_entropy")[cols].T),
            hovertemplate=_hover(lang, ("chart.step", "%{x}"), ("chart.layer", "%{y}"), ("chart.entropy", "%{z:.2f}")),
            hoverongaps=False,
            **color,
        )
    else:  # an invisible cell keeps the colourbar in place before the first probe
        trace = go.Heatmap(x=[0], y=[1], z=[[None]], hoverinfo="skip", **color)
    fig = go.Figure(trace)
    if not data.probe_steps:
        _empty_note(fig, lang, lecture)
    return layer_heatmap_layout(fig, data, ("chart.entropy_title", "entropy-"), lang, lecture, height)
