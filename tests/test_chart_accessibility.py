"""What colour alone must not carry (issue 32), on the figures' data, no browser: Post-LN and Pre-LN differ
by their dash on every line chart of several runs (greyscale, a black-and-white handout), runs that share
a norm position stay apart, and every word on the stability map reads at 4.5:1 against its cell (WCAG AA)."""

from __future__ import annotations

import dataclasses
import itertools
import math

import plotly.colors
import pytest

from ln_viz.charts.loss import _prepare_loss
from ln_viz.sweep import charts as sweep_charts
from ln_viz.sweep import map_cells
from tests.runs import demo
from tests.test_sweep_map_charts import UNIGRAM, _no_norm_sweep


@pytest.fixture(scope="module")
def post_pre():
    return demo("post-ln-no-warmup"), demo("pre-ln-no-warmup")


def test_post_and_pre_ln_differ_by_dash_and_same_position_runs_stay_apart(post_pre):
    post, pre = post_pre
    (_, c_post, d_post, _), (_, c_pre, d_pre, _) = _prepare_loss([post, pre], None, "en").lines
    assert c_post != c_pre and d_post != d_pre, (d_post, d_pre)  # apart in greyscale too
    for run in post_pre:
        (_, c1, d1, _), (_, c2, d2, _) = _prepare_loss([run, run], None, "en").lines
        assert d1 != d2  # A and B in one position: two dashes


# Machado, Oliveira & Fernandes (2009), severity 1: linear-RGB matrices of the two red-green deficiencies,
# and the luminance row (achromatopsia) -- what Chromium's vision-deficiency emulation applies.
_CVD = {
    "deuteranopia": ((0.367322, 0.860646, -0.227968), (0.280085, 0.672501, 0.047413), (-0.01182, 0.04294, 0.968881)),
    "protanopia": ((0.152286, 1.052583, -0.204868), (0.114503, 0.786281, 0.099216), (-0.003882, -0.048116, 1.051998)),
    "achromatopsia": ((0.2126, 0.7152, 0.0722),) * 3,
}


def _seen_as(colour: str, deficiency: str) -> tuple[float, ...]:
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (v / 255 for v in _rgb(colour, ()))]
    out = [min(1.0, max(0.0, sum(m * c for m, c in zip(row, lin)))) for row in _CVD[deficiency]]
    return tuple(255 * (12.92 * c if c <= 0.0031308 else 1.055 * c ** (1 / 2.4) - 0.055) for c in out)


@pytest.mark.parametrize("position", ["post", "pre", "peri", "deepnorm", "none", "mix", "reordered"])
def test_a_and_b_of_one_norm_position_are_two_colours_apart_under_colour_vision_deficiencies(post_pre, position):
    """Compare's "+ warm-up" (both Post-LN) and "QK-norm rescue" (both Pre-LN) drew A and B in one colour, solid
    against dashed (UX round 4, M3): two colours now, that stay apart as a red-green deficient or a greyscale eye
    sees them (CIELAB ΔE; 40 is about the distance of Post-LN's vermillion from Pre-LN's blue in greyscale x 5)."""
    from tests.e2e.test_accessibility_e2e import delta_e

    run = post_pre[0]  # the same run, as if trained at `position`
    data = dataclasses.replace(
        run, info=dataclasses.replace(run.info, config=run.info.config.replace(norm_position=position))
    )
    (_, c1, _, _), (_, c2, _, _) = _prepare_loss([data, data], None, "en").lines
    seen = {k: delta_e(_seen_as(c1, k), _seen_as(c2, k)) for k in _CVD}
    assert seen["deuteranopia"] > 40 and seen["protanopia"] > 40 and seen["achromatopsia"] > 30, (c1, c2, seen)


# Okabe & Ito's eight colours and the grey R's palette.colors("Okabe-Ito") adds as its ninth
OKABE_ITO = {"#000000", "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#999999"}


def test_every_norm_position_has_an_okabe_ito_colour_and_a_dash_of_its_own(post_pre):
    """Mix-LN had neither: its lines took the fallback grey #555 and Post-LN's solid dash, so the Mix-LN scenario
    (Post-LN against Mix-LN) drew two solid lines, one of them in no palette's colour. Every placement, reordered
    too, is drawn in a colour and a dash no other placement has, beside any other on one loss chart; Mix-LN stays
    apart from its partners Post-LN and Pre-LN as a red-green deficient eye sees them."""
    from ln_viz.charts.style import NORM_COLORS, NORM_DASHES, SECOND_COLOR
    from ln_viz.config import NORM_POSITIONS
    from tests.e2e.test_accessibility_e2e import delta_e

    assert set(NORM_POSITIONS) <= set(NORM_COLORS) and set(NORM_POSITIONS) <= set(NORM_DASHES)
    colours = [NORM_COLORS[p] for p in NORM_POSITIONS]
    assert len(set(colours)) == len(colours) and set(colours) <= OKABE_ITO - {SECOND_COLOR}, colours
    run = post_pre[0]

    def at(position):
        return dataclasses.replace(run, info=dataclasses.replace(run.info, config=run.info.config.replace(
            norm_position=position)))  # fmt: skip

    for a, b in itertools.combinations(NORM_POSITIONS, 2):
        (_, c1, d1, _), (_, c2, d2, _) = _prepare_loss([at(a), at(b)], None, "en").lines
        assert c1 != c2 and d1 != d2, (a, b, c1, c2, d1, d2)
    for partner in ("post", "pre"):
        seen = {k: delta_e(_seen_as(NORM_COLORS["mix"], k), _seen_as(NORM_COLORS[partner], k)) for k in _CVD}
        assert seen["deuteranopia"] > 35 and seen["protanopia"] > 35, (partner, seen)


def _contrast(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    def lum(rgb):
        lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (v / 255 for v in rgb)]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _rgb(colour: str | None, ground: tuple[float, ...]) -> tuple[float, ...]:
    """A text colour as Plotly paints it: a named or hex colour; none set, Plotly's own choice (its
    `Color.contrast`: #444 on a light cell, white on a dark one, by tinycolor's brightness)."""
    if colour is None:
        light = (ground[0] * 299 + ground[1] * 587 + ground[2] * 114) / 1000 >= 128
        colour = "#444444" if light else "#ffffff"
    named = {"white": "#ffffff", "black": "#000000"}
    return plotly.colors.hex_to_rgb(named.get(colour, colour))


def _cell_colour(heat, j: int, i: int) -> tuple[float, ...]:
    """The colour of the heat trace's cell (j, i) on its Viridis scale (plotly.js's stops); white where
    it has no value (the plot's ground)."""
    z = heat.z[j][i]
    if z is None:
        return (255, 255, 255)
    frac = (min(max(z, heat.zmin), heat.zmax) - heat.zmin) / (heat.zmax - heat.zmin)
    return plotly.colors.unlabel_rgb(plotly.colors.sample_colorscale(list(map_cells.VIRIDIS_STOPS), frac)[0])


@pytest.mark.parametrize("lecture", [False, True])
def test_every_word_on_the_stability_map_reads_at_4_5_to_1(lecture):
    spec, rs = _no_norm_sweep()
    zrange = sweep_charts.colour_range(rs, None, math.log(65), unigram=UNIGRAM)
    fig = sweep_charts.stability_heatmap(spec, rs, zrange, "en", lecture=lecture)
    off = (sweep_charts.PENDING, sweep_charts.DIVERGED_FILL, sweep_charts.TEXT_LAYER)
    heats = [d for d in fig.data if d.type == "heatmap" and d.colorscale[0][1] not in off]
    worst, stalled = math.inf, 0
    for heat in heats:  # each panel's coloured cells, and every layer of words drawn on them
        layers = [d for d in fig.data if d.type == "heatmap" and d.xaxis == heat.xaxis and d.text is not None]
        for j, row in enumerate(heat.z):
            for i in range(len(row)):
                if row[i] is None:
                    continue
                ground = _cell_colour(heat, j, i)
                for layer in layers:
                    if layer.text[j][i] and (layer is heat or layer.colorscale[0][1] == sweep_charts.TEXT_LAYER):
                        worst = min(worst, _contrast(_rgb(layer.textfont.color, ground), ground))
                        stalled += "stalled" in layer.text[j][i]
    assert stalled >= 1  # the cells that carry the lesson are among those checked
    assert worst >= 4.5, f"a cell's words read at {worst:.2f}:1"
