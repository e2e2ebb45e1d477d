"""The stability map over several seeds (issue 20): a cell's hover gives its median final loss with the
range over seeds and how each seed ended, a cell whose seeds disagree on the status carries a mark, and
the LR-sensitivity curves get min-max bands said in the legend. With one seed nothing of it is drawn.
Checked on the figures' data, no browser."""

from __future__ import annotations

import math

from pytest import approx

from ln_viz.sweep import charts as sweep_charts
from ln_viz.sweep import curve_charts
from ln_viz.sweep.results import curves

from .test_sweep import tiny_spec
from .test_sweep_map_charts import _result as map_result

UNIGRAM = 2.96
INIT = math.log(65)


def _result(norm: str, lr: float, seed: int, status: str, final: float, init: float = 4.2):
    return map_result(norm, lr, status, init, final, seed=seed)


def _three_seeds():
    """Post-LN at lr 1e-2: two seeds stall, one learns; every other cell's three seeds learn."""
    spec = tiny_spec(seeds=3)
    finals = {
        ("post", 1e-3): [("completed", 2.30), ("completed", 2.34), ("completed", 2.41)],
        ("post", 1e-2): [("stalled", 2.97), ("completed", 2.40), ("stalled", 2.99)],
        ("pre", 1e-3): [("completed", 2.28), ("completed", 2.26), ("completed", 2.27)],
        ("pre", 1e-2): [("completed", 2.20), ("completed", 2.25), ("completed", 2.18)],
    }
    rs = [_result(n, lr, s, st, f) for (n, lr), seeds in finals.items() for s, (st, f) in enumerate(seeds)]
    return spec, rs


def _map(spec, rs, lang="en"):
    return sweep_charts.stability_heatmap(spec, rs, (2.0, 3.96), lang)


def _hover(fig, panel: int) -> list[str]:
    clicks = [d for d in fig.data if d.type == "scatter" and d.customdata is not None]
    return list(clicks[panel].hovertext)


def test_a_cells_hover_gives_its_median_and_range_over_the_seeds_and_how_each_ended():
    spec, rs = _three_seeds()
    post = _hover(_map(spec, rs), 0)
    assert "median 2.34, range 2.30-2.41 over 3 seeds" in post[0], post[0]
    assert "seeds: 3 learned (of 3)" in post[0]
    assert "median 2.97, range 2.40-2.99 over 3 seeds" in post[1], post[1]
    assert "seeds: 1 learned, 2 stalled (of 3)" in post[1]
    ko = _hover(_map(spec, rs, "ko"), 0)[1]
    assert "중앙값 2.97" in ko and "학습됨 1, 정체 2" in ko, ko


def test_a_diverged_seed_is_counted_but_not_in_the_range():
    spec = tiny_spec(seeds=2, lr=(1e-2,), norm_position=("post",))
    rs = [_result("post", 1e-2, 0, "completed", 2.5), _result("post", 1e-2, 1, "diverged", 1e6)]
    (hover,) = _hover(_map(spec, rs), 0)
    assert "median 2.50, range 2.50-2.50 over 1 seeds" in hover and "1 learned, 1 diverged (of 2)" in hover


def test_a_cell_whose_seeds_disagree_is_marked_and_the_note_says_what_the_mark_means():
    spec, rs = _three_seeds()
    fig = _map(spec, rs)
    marks = [d for d in fig.data if d.type == "scatter" and d.marker.symbol == "diamond"]
    assert len(marks) == 1 and len(marks[0].x) == 1  # only Post-LN at 1e-2: 2 stalled, 1 learned
    assert marks[0].xaxis == "x" and marks[0].x[0] > math.log10(1e-2) and marks[0].marker.color == sweep_charts.MARK
    assert any("seeds disagree" in a.text for a in fig.layout.annotations)
    panel = sweep_charts.map_panels(spec, rs, "en")[0]
    assert panel.text[0][1] == "2.79<br>stalled 2/3"  # the mean of the three, and how many stalled
    agree = [r for r in rs if not (r.norm_position == "post" and r.lr == 1e-2)]
    assert not [d for d in _map(spec, agree).data if d.type == "scatter" and d.marker.symbol == "diamond"]


def test_one_seed_draws_no_spread_no_mark_and_no_band():
    spec = tiny_spec()
    rs = [_result("post", 1e-3, 0, "completed", 2.3), _result("post", 1e-2, 0, "stalled", 2.98)]
    fig = _map(spec, rs)
    assert all("median" not in h and "seeds:" not in h for h in _hover(fig, 0))
    assert not [d for d in fig.data if d.type == "scatter" and d.marker.symbol == "diamond"]
    sens = curve_charts.sensitivity_chart(curves(rs, INIT), UNIGRAM, "en")
    assert not [d for d in sens.data if d.fill == "toself"]


def test_the_lr_curves_get_a_min_max_band_per_curve_and_one_legend_entry_saying_so():
    _, rs = _three_seeds()
    lines = curves(rs, INIT)
    post = next(c for c in lines if c.norm_position == "post")
    assert post.seeds == 3 and post.lows == approx((2.30, 2.40)) and post.highs == approx((2.41, 2.99))
    fig = curve_charts.sensitivity_chart(lines, UNIGRAM, "en")
    legend, *bands = [d for d in fig.data if d.fill == "toself"]
    assert len(bands) == 2  # one per curve, drawn under the lines
    assert fig.data.index(bands[-1]) < min(i for i, d in enumerate(fig.data) if d.fill != "toself")
    assert list(bands[0].x) == [1e-3, 1e-2, 1e-2, 1e-3] and list(bands[0].y) == approx([2.41, 2.99, 2.40, 2.30])
    assert all(b.showlegend is False for b in bands) and legend.showlegend is not False
    assert legend.name == "band: lowest to highest of 3 seeds" and legend.legendgroup == bands[0].legendgroup
    line = next(d for d in fig.data if d.name and d.name.startswith("Post-LN"))
    assert "seeds 2.400 to 2.990 (3 seeds)" in line.customdata[1]
    ko = curve_charts.sensitivity_chart(lines, UNIGRAM, "ko")
    assert any(d.name == "띠: 시드 3개의 최저-최고" for d in ko.data if d.showlegend is not False)


def test_a_band_reaching_a_diverged_seed_runs_off_the_top_and_leaves_the_axis_alone():
    rs = [
        _result("post", 1e-3, 0, "completed", 2.3),
        _result("post", 1e-3, 1, "completed", 2.4),
        _result("post", 1e-2, 0, "completed", 2.5),
        _result("post", 1e-2, 1, "diverged", 1e6, init=29.0),
    ]
    fig = curve_charts.sensitivity_chart(curves(rs, INIT), UNIGRAM, "en")
    _, band = [d for d in fig.data if d.fill == "toself"]
    assert max(band.y) > 4.0 and fig.layout.yaxis.range[1] < 4.0  # clipped by the axis, not stretching it
