"""The stability map's figures against the defects of issue 21: one no-norm panel must not flatten the
map's colours (N6), a diverged lr must not squash the LR-sensitivity chart (N7), that chart's labels and
its number defined on it (N8), a cell's curve in its norm's colour, a diverged cell said as such and the
shown cell framed on the map (N9), "Open in Live" keeping the language and the lecture view (N11), and
the phone's map with its panels stacked (N29). Checked on the figures' data, no browser."""

from __future__ import annotations

import dataclasses
import math
from urllib.parse import parse_qs, urlsplit

from ln_viz.charts.style import NORM_COLORS
from ln_viz.i18n import t
from ln_viz.sweep import charts as sweep_charts
from ln_viz.sweep import curve_charts
from ln_viz.sweep.results import CellRun, curves, summarize

from .test_sweep import tiny_spec

UNIGRAM = 2.96


def _result(norm: str, lr: float, status: str, init: float, final: float, seed: int = 0):
    """One cell's summary: a run at `init`, then 10 steps at `final` (NaN after them when it diverged)."""
    spec = tiny_spec(lr=(lr,), norm_position=(norm,), **({"seeds": seed + 1} if seed else {}))
    cell = next(c for c in spec.cells() if c.seed == seed)
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
    off = (sweep_charts.PENDING, sweep_charts.DIVERGED_FILL, sweep_charts.TEXT_LAYER)
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


def test_a_finite_loss_far_above_the_unigram_is_a_mark_on_the_top_edge_too():
    """The review's 18-cell sweep: a no-norm cell ended at 30.02 nats without diverging and stretched the
    axis to 30.1 (issue 21 N7, re-checked): the axis stops at the unigram loss + 1 nat and the point is a
    triangle on the top edge, its loss in the hover."""
    _, rs = _no_norm_sweep()
    rs[-1] = _result("none", 3e-2, "stalled", 29.0, 30.02)
    fig = curve_charts.sensitivity_chart(curves(rs, math.log(65)), UNIGRAM, "en")
    lo, hi = fig.layout.yaxis.range
    assert hi <= UNIGRAM + 1.1 + 1e-9 and lo < 2.26
    (marks,) = [d for d in fig.data if d.name == "above 4.1 nats (drawn on the top edge)"]
    assert list(marks.x) == [3e-2] and list(marks.y) == [hi] and list(marks.customdata) == [30.02]
    assert marks.marker.color[0] == NORM_COLORS["none"] and marks.marker.symbol == "triangle-up"
    ko = curve_charts.sensitivity_chart(curves(rs, math.log(65)), UNIGRAM, "ko")
    assert any(d.name == "4.1 nats 위 (위쪽 가장자리에 표시)" for d in ko.data)


def test_open_in_live_keeps_the_language_and_the_lecture_view_in_the_same_tab():
    from ln_viz.urlstate import live_link, live_link_html

    _, rs = _no_norm_sweep()
    url = live_link(rs[1], "ko", lecture=True)
    query = parse_qs(urlsplit(url).query)
    assert query["lang"] == ["ko"] and query["present"] == ["1"] and query["lr"] == ["0.03"]
    assert "present" not in parse_qs(urlsplit(live_link(rs[1], "en", lecture=False)).query)
    html = live_link_html(url, "Live에서 열기")
    assert 'target="_self"' in html and "&amp;lang=ko" in html  # this tab; the URL escaped in the attribute


def test_live_says_the_learning_rate_as_the_map_does(start_app):
    at = start_app(30)
    assert "3e-2" in at.select_slider(key="lr").options and "0.03" not in at.select_slider(key="lr").options


def test_a_cells_curve_is_in_its_norms_colour_and_a_diverged_cell_says_diverged():
    from ln_viz.sweep.labels import cell_title

    _, rs = _no_norm_sweep()
    post = rs[1]
    fig = curve_charts.cell_curve_chart(post.curve, cell_title(post, "en"), UNIGRAM, "en", False, "post")
    assert fig.data[0].line.color == NORM_COLORS["post"]
    diverged = rs[5]
    title = cell_title(diverged, "en")
    assert "diverged at step 12" in title and "final loss" not in title, title


# --- issue 21 N8: the LR-sensitivity chart read without the docs --------------------------------------
def _warmup_sweep():
    """Post-LN and Pre-LN at two lrs and two warm-ups: four curves, two of them one colour."""
    spec = tiny_spec(warmup_steps=(0, 30))
    rs = []
    for norm, warm, finals in [("post", 0, (2.3, 2.98)), ("post", 30, (2.32, 2.5)), ("pre", 0, (2.26, 2.2)),
                               ("pre", 30, (2.27, 2.21))]:  # fmt: skip
        for lr, final in zip((1e-3, 1e-2), finals):
            r = _result(norm, lr, "completed" if final < 2.9 else "stalled", 4.2, final)
            rs.append(dataclasses.replace(r, warmup_steps=warm))
    return spec, rs


def test_each_curve_has_one_label_naming_its_setting_its_sensitivity_and_its_best():
    _, rs = _warmup_sweep()
    lines = curves(rs, math.log(65))
    for lang, words in (("en", ("warm-up", "LR sens.", "best")), ("ko", ("웜업", "학습률 민감도", "최저"))):
        fig = curve_charts.sensitivity_chart(lines, UNIGRAM, lang)
        curve_traces = [d for d in fig.data if d.mode == "lines+markers"]
        assert len(curve_traces) == 4 and all(d.showlegend is not False for d in curve_traces)
        for d, c in zip(curve_traces, lines):
            assert all(w in d.name for w in words), d.name
            assert f"{words[0]} {c.warmup_steps}" in d.name and f"{c.lr_sensitivity:.2f}" in d.name
        assert f"{min(lines[0].final_losses):.2f}" in curve_traces[0].name  # its best loss
        # no label drawn at the lines' ends, where they printed over each other and the unigram note
        assert [a.text for a in fig.layout.annotations] == [t("sweep.chart.unigram", lang)]
        for lecture in (False, True):  # on two lines: on one they were cut in a half column and on a phone
            two_lines = curve_charts.sensitivity_chart(lines, UNIGRAM, lang, lecture)
            assert all(d.name.count("<br>") == 1 for d in two_lines.data if d.mode == "lines+markers")


def test_the_chart_defines_its_number_in_its_subtitle_in_both_languages_and_both_views():
    _, rs = _warmup_sweep()
    for lang, words in (("en", ("mean", "own best", "Lower")), ("ko", ("평균", "최저 손실", "낮을수록"))):
        for lecture in (False, True):
            fig = curve_charts.sensitivity_chart(curves(rs, math.log(65)), UNIGRAM, lang, lecture)
            sub = fig.layout.title.subtitle.text
            assert all(w in sub for w in words), sub
            assert max(len(line) for line in sub.split("<br>")) <= 66  # lines a phone's 374 px can hold


# --- issue 21 N9: the cell whose curve is shown is marked on the map ----------------------------------
def test_the_picked_cell_is_framed_on_the_map_and_no_cell_is_without_a_pick():
    spec, rs = _no_norm_sweep()
    zrange = sweep_charts.colour_range(rs, None, math.log(65), unigram=UNIGRAM)
    plain = sweep_charts.stability_heatmap(spec, rs, zrange, "en")
    picked = sweep_charts.stability_heatmap(spec, rs, zrange, "en", picked=rs[3].fingerprint)  # Pre-LN, 3e-2
    new = [s for s in picked.layout.shapes if s not in plain.layout.shapes]
    assert [s.line.color for s in new] == [sweep_charts.PICKED_HALO, sweep_charts.PICKED]
    assert all(s.xref == "x2" for s in new)  # the Pre-LN panel
    assert new[1].x0 < math.log10(3e-2) < new[1].x1 and new[1].y0 < 0 < new[1].y1
    assert len(plain.layout.shapes) == len(
        sweep_charts.stability_heatmap(spec, rs, zrange, picked="gone").layout.shapes
    )


# --- issue 21 N29: a phone's map, its panels stacked ------------------------------------------------------
def test_the_phone_map_stacks_its_panels_with_one_x_title_and_full_width_cells():
    spec, rs = _no_norm_sweep()
    zrange = sweep_charts.colour_range(rs, None, math.log(65), unigram=UNIGRAM)
    fig = sweep_charts.stability_heatmap(spec, rs, zrange, "ko", stacked=True)
    layout = fig.layout
    assert [tuple(layout[f"xaxis{k}"].domain) for k in ("", 2, 3)] == [(0.0, 1.0)] * 3  # each the whole width
    tops = [layout[f"yaxis{k}"].domain[1] for k in ("", 2, 3)]
    assert tops == sorted(tops, reverse=True)  # Post-LN above Pre-LN above no norm
    titled = [k for k in ("", 2, 3) if layout[f"xaxis{k}"].title.text]
    assert titled == [3]  # one x title, under the last panel (two side by side collided on a phone)
    assert all(list(layout[f"yaxis{k}"].ticktext) == ["0"] for k in ("", 2, 3))  # each panel says its warm-ups
    assert sum(d.showscale is True for d in fig.data if d.type == "heatmap") == 1
    assert layout.height > sweep_charts.stability_heatmap(spec, rs, zrange, "ko").layout.height
