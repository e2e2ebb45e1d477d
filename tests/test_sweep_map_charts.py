"""The stability map's figures against the defects of issue 21: one no-norm panel must not flatten the
map's colours (N6), a diverged lr must not squash the LR-sensitivity chart (N7), a cell's curve in its
norm's colour and a diverged cell said as such (N9), and "Open in Live" keeping the language and the
lecture view (N11). Checked on the figures' data, no browser."""

from __future__ import annotations

import math
from urllib.parse import parse_qs, urlsplit

from ln_viz.charts.style import NORM_COLORS
from ln_viz.sweep import charts as sweep_charts
from ln_viz.sweep import curve_charts
from ln_viz.sweep.results import CellRun, curves, summarize

from .test_sweep import tiny_spec

UNIGRAM = 2.96


def _result(norm: str, lr: float, status: str, init: float, final: float):
    cell = next(c for c in tiny_spec(lr=(lr,), norm_position=(norm,)).cells())
    run = CellRun(cell)
    for i, x in enumerate([init] + [final] * 10, start=1):
        run.add_step(i, x, None, "running")
    if status == "diverged":
        run.add_step(12, math.nan, None, "running")
    run.trainer_status = status
    return summarize(run)


def _no_norm_sweep():
    """Post-LN stalls (2.98), Pre-LN learns (2.26), and a no-norm panel starts near 29 nats, as measured
    in the review's 18-cell run; the no-norm cell at the highest lr diverges."""
    spec = tiny_spec(norm_position=("post", "pre", "none"), lr=(1e-3, 3e-2))
    rs = [
        _result("post", 1e-3, "completed", 4.2, 2.30),
        _result("post", 3e-2, "stalled", 4.2, 2.98),
        _result("pre", 1e-3, "completed", 4.2, 2.26),
        _result("pre", 3e-2, "completed", 4.2, 2.28),
        _result("none", 1e-3, "completed", 29.0, 2.60),
        _result("none", 3e-2, "diverged", 29.0, 1e6),
    ]
    return spec, rs


def _colour_position(fig, norm_col: int, i: int) -> float:
    """Where on the colour scale (0 bottom, 1 top) cell i of panel `norm_col` is drawn."""
    off = (sweep_charts.PENDING, sweep_charts.DIVERGED_FILL)
    heat = [d for d in fig.data if d.type == "heatmap" and d.colorscale[0][1] not in off][norm_col]
    z = heat.z[0][i]
    return (min(max(z, heat.zmin), heat.zmax) - heat.zmin) / (heat.zmax - heat.zmin)


def test_a_no_norm_panel_leaves_stalled_and_learned_cells_far_apart_in_colour():
    spec, rs = _no_norm_sweep()
    zrange = sweep_charts.colour_range(rs, None, math.log(65), unigram=UNIGRAM)
    assert zrange[1] <= UNIGRAM + 1 + 1e-9  # the top: the unigram loss + 1 nat, not the mean loss at init
    fig = sweep_charts.stability_heatmap(spec, rs, zrange, "en")
    stalled, learned = _colour_position(fig, 0, 1), _colour_position(fig, 1, 0)
    assert stalled - learned >= 0.3, (stalled, learned)
    diverged = [d for d in fig.data if d.type == "heatmap" and d.colorscale[0][1] == sweep_charts.DIVERGED_FILL]
    assert list(diverged[2].z[0]) == [None, 1]  # the no-norm cell at 3e-2: off the scale, in its own colour
    assert any("outside the scale" in a.text for a in fig.layout.annotations)  # and the note says so
    assert fig.data[2].colorbar.ticktext[-1] == f"{zrange[1]:.1f} or more"


def test_a_diverged_lr_is_a_mark_on_the_top_edge_and_does_not_stretch_the_loss_axis():
    _, rs = _no_norm_sweep()
    fig = curve_charts.sensitivity_chart(curves(rs, math.log(65)), UNIGRAM, "en")
    lo, hi = fig.layout.yaxis.range
    assert hi < 4.0, hi  # from the finite points (2.26 ... 2.98) and the unigram line, not the no-norm 29
    (marks,) = [d for d in fig.data if d.name == "diverged (drawn on the top edge)"]
    assert list(marks.x) == [3e-2] and list(marks.y) == [hi] and marks.showlegend is not False
    assert marks.marker.color[0] == NORM_COLORS["none"]
    none_line = next(d for d in fig.data if d.name and d.name.startswith("no norm"))
    assert none_line.y[-1] is None  # the line stops at the last lr that trained


def test_open_in_live_keeps_the_language_and_the_lecture_view_in_the_same_tab():
    from ln_viz.ui import stability_view as view

    _, rs = _no_norm_sweep()
    url = view.live_link(rs[1], "ko", lecture=True)
    query = parse_qs(urlsplit(url).query)
    assert query["lang"] == ["ko"] and query["present"] == ["1"] and query["lr"] == ["0.03"]
    assert "present" not in parse_qs(urlsplit(view.live_link(rs[1], "en", lecture=False)).query)
    html = view.live_link_html(url, "Live에서 열기")
    assert 'target="_self"' in html and "&amp;lang=ko" in html  # this tab; the URL escaped in the attribute


def test_live_says_the_learning_rate_as_the_map_does(start_app):
    at = start_app(30)
    assert "3e-2" in at.select_slider(key="lr").options and "0.03" not in at.select_slider(key="lr").options


def test_a_cells_curve_is_in_its_norms_colour_and_a_diverged_cell_says_diverged():
    from ln_viz.ui import stability_view as view

    _, rs = _no_norm_sweep()
    post = rs[1]
    fig = curve_charts.cell_curve_chart(post.curve, view.cell_title(post, "en"), UNIGRAM, "en", False, "post")
    assert fig.data[0].line.color == NORM_COLORS["post"]
    diverged = rs[5]
    title = view.cell_title(diverged, "en")
    assert "diverged at step 12" in title and "final loss" not in title, title
