"""The charts' data preparation (`_prepare_*`), tested without drawing: what a user would read off each
chart (its layers, steps, stacked arrays, axis ranges, titles) from the shipped demo runs, the way optuna
tests its `_get_*_info`. No test here builds a figure; the figures themselves are in test_charts.py."""

import copy
import math

import numpy as np
import pandas as pd
import pytest

from ln_viz import charts
from ln_viz.charts.dist import _prepare_act
from ln_viz.charts.grads import _prepare_heatmap, shared_zrange
from ln_viz.charts.init_lab import _prepare_depth
from ln_viz.charts.loss import _prepare_loss
from ln_viz.charts.profile import _prepare_profile
from ln_viz.charts.sample import MAX_HEATMAP_COLUMNS
from ln_viz.charts.style import NORM_COLORS
from ln_viz.snapshot import RunData
from tests.runs import demo


@pytest.fixture(scope="module")
def deep() -> RunData:
    """Post-LN at depth 24, 200 steps: 21 probe steps."""
    return demo("deep-post-ln")


def on_the_1_2_5_grid(x: float) -> bool:
    mantissa = x / 10 ** math.floor(math.log10(x) + 1e-9)
    return any(math.isclose(mantissa, m) for m in (1, 2, 5))


# --- gradient heatmap ------------------------------------------------------------------------------
def test_the_heatmap_has_a_row_per_layer_and_a_column_per_probe_step(post_run: RunData) -> None:
    info = _prepare_heatmap(post_run, None)
    assert info.steps.tolist() == [1, *range(10, 301, 10)]
    assert info.grads.shape == (6, 31)  # layers x probe steps: layer 1 (the input side) first
    np.testing.assert_array_equal(info.grads[:, 0], post_run.probe("block_grad_norm")[0])
    np.testing.assert_array_equal(info.grads[3], post_run.probe("block_grad_norm")[:, 3])


def test_the_heatmap_colour_range_is_a_tight_1_2_5_range_around_the_gradients(post_run: RunData) -> None:
    info = _prepare_heatmap(post_run, None)
    g = post_run.probe("block_grad_norm")
    assert info.lo <= np.nanmin(g) < info.hi and info.lo < np.nanmax(g) <= info.hi
    assert on_the_1_2_5_grid(info.lo) and on_the_1_2_5_grid(info.hi)
    assert info.lo > np.nanmin(g) / 5 and info.hi < np.nanmax(g) * 5  # tighter than whole decades


def test_two_runs_share_one_colour_range_that_holds_both(post_run: RunData, pre_run: RunData) -> None:
    lo, hi = shared_zrange([post_run, pre_run])
    both = np.concatenate([post_run.probe("block_grad_norm").ravel(), pre_run.probe("block_grad_norm").ravel()])
    assert lo <= np.nanmin(both) and np.nanmax(both) <= hi
    assert (_prepare_heatmap(pre_run, (lo, hi)).lo, _prepare_heatmap(post_run, (lo, hi)).hi) == (lo, hi)
    with pytest.raises(ValueError, match="zrange"):
        _prepare_heatmap(post_run, (1.0, 0.1))


def test_a_run_with_more_probe_steps_than_columns_keeps_the_latest(post_run: RunData) -> None:
    long = RunData(post_run.info)
    n = MAX_HEATMAP_COLUMNS + 50
    for i in range(n):
        long.add_probe(i + 1, {name: post_run.probes[name][i % 31] for name in post_run.probes})
    info = _prepare_heatmap(long, None)
    assert info.steps.size <= MAX_HEATMAP_COLUMNS and info.steps[-1] == n
    assert np.all(np.diff(info.steps) == info.steps[1] - info.steps[0])  # evenly strided


def test_before_the_first_probe_the_heatmap_has_rows_but_no_columns(post_run: RunData) -> None:
    info = _prepare_heatmap(RunData(post_run.info), None)
    assert info.steps.size == 0 and info.grads.shape == (6, 0) and (info.lo, info.hi) == (1e-3, 10.0)


# --- loss over steps -------------------------------------------------------------------------------
def test_one_run_s_loss_has_its_colour_its_schedule_and_a_fixed_top(post_run: RunData) -> None:
    info = _prepare_loss(post_run, None, "en")
    assert info.lines == [("training loss", NORM_COLORS["post"], "solid", 2.5)]
    assert info.max_steps == 300 and info.unigrams == [post_run.info.unigram_entropy]
    first = post_run.scalars["loss"][0]
    assert info.top % 0.5 == 0 and info.top - 0.5 < first * 1.1 <= info.top  # the first half-nat above
    lr = post_run.info.config.lr
    assert len(info.schedule) == 300  # the planned learning rate of steps 1..300: a 100-step warm-up
    assert info.schedule[0] == pytest.approx(lr / 100) and info.schedule[99] == pytest.approx(lr)
    assert info.over == 0


def test_loss_values_above_the_top_are_counted_for_the_note(post_run: RunData) -> None:
    spiked = copy.deepcopy(post_run)
    top = _prepare_loss(post_run, None, "en").top
    spiked.scalars["loss"][100:104] = [top + 1, math.inf, top * 10, top + 0.01]
    info = _prepare_loss(spiked, None, "en")
    assert info.top == top and info.over == 3  # the infinite loss is a divergence, marked apart


def test_compared_runs_are_named_and_coloured_by_norm_position_on_one_axis(post_run: RunData, pre_run: RunData) -> None:
    info = _prepare_loss([post_run, pre_run], None, "en")
    assert [(name, color) for name, color, _, _ in info.lines] == [
        ("Post-LN", NORM_COLORS["post"]),
        ("Pre-LN", NORM_COLORS["pre"]),
    ]
    assert info.schedule is None  # no single schedule for two runs
    assert info.unigrams == [round(post_run.info.unigram_entropy, 4)]  # one line for the shared corpus
    first = max(post_run.scalars["loss"][0], pre_run.scalars["loss"][0])  # above ln(V) and the unigram loss here
    assert info.top % 0.5 == 0 and info.top - 0.5 < first * 1.1 <= info.top  # the first half-nat above
    assert [name for name, *_ in _prepare_loss([post_run, pre_run], ["a", "b"], "ko").lines] == ["a", "b"]


# --- activation distribution -----------------------------------------------------------------------
def test_the_distribution_shows_the_latest_probe_step_and_each_layer_s_shares_sum_to_one(post_run: RunData) -> None:
    info = _prepare_act(post_run, None)
    assert info.p == 30 and info.shares.shape[0] == 6
    np.testing.assert_allclose(info.shares.sum(axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(info.stats, post_run.probe("resid_stats")[30])


def test_the_distribution_axis_is_the_smallest_width_that_holds_every_value(post_run: RunData) -> None:
    grid = _prepare_act(post_run, None).grid
    edges = post_run.info.hist_edges
    used = np.nansum(post_run.probe("resid_hist"), axis=(0, 1)) > 0
    reach = max(abs(edges[:-1][used].min()), abs(edges[1:][used].max()))
    assert not grid.overflow and grid.width == 16.0 and 4.0 < reach <= 16.0
    lo, hi = edges[grid.cols[0]], edges[grid.cols[-1] + 1]  # the bins wholly within ±16, and no more
    assert -16 <= lo and hi <= 16 and edges[grid.cols[0] - 1] < -16 and edges[grid.cols[-1] + 2] > 16
    np.testing.assert_allclose(np.sinh(grid.x_edges[[0, -1]]), [lo, hi])  # drawn on an asinh axis


def test_the_distribution_picks_the_probe_step_nearest_the_one_asked_for(post_run: RunData) -> None:
    assert _prepare_act(post_run, 153).p == post_run.probe_steps.index(150)
    empty = _prepare_act(RunData(post_run.info), None)
    assert empty.p is None and empty.shares.shape[0] == 6 and not empty.shares.any() and np.isnan(empty.stats).all()


# --- layer profile ---------------------------------------------------------------------------------
def test_one_run_s_profile_is_at_its_latest_step_with_a_gradient_axis_that_holds_ffn_w2(post_run: RunData) -> None:
    info = _prepare_profile(post_run, None, "en", None, "ffn.w2")
    assert info.picks == [30] and info.labels is None and info.depth == 6
    assert info.title.endswith("step 300")
    w2 = post_run.probe("grad_norm")[..., list(post_run.info.param_names).index("ffn.w2")]
    lo, hi = info.grad_rng
    assert lo <= np.nanmin(w2) and np.nanmax(post_run.probe("grad_norm")) <= hi
    std = post_run.probe("resid_stats")[..., list(post_run.info.stat_names).index("std")]
    assert np.nanmax(std) == pytest.approx(1.0746, abs=1e-4) and info.std_top == 1.5  # x 1.1, up to a half


def test_compared_profiles_at_one_step_share_the_title_s_step(post_run: RunData, pre_run: RunData) -> None:
    info = _prepare_profile([post_run, pre_run], None, "en", 150, "ffn.w2")
    assert info.picks == [15, 15] and info.labels == ["Post-LN", "Pre-LN"] and info.suffixes == ["", ""]
    assert info.title.endswith("step 150") and info.grad_title.startswith("ffn.w2")


def test_the_lecture_view_s_compared_profile_is_the_gradient_panel_over_the_whole_chart(
    post_run: RunData, pre_run: RunData
) -> None:
    """Issue 21 N21: in the lecture view's Compare the paper's Figure 3 line gets the chart's whole height."""
    both = charts.layer_profile([post_run, pre_run], "en", 150, True, ["Post-LN", "Pre-LN"])
    fig = charts.layer_profile([post_run, pre_run], "en", 150, True, ["Post-LN", "Pre-LN"], std=False)
    assert {tr.yaxis for tr in both.data} == {"y", "y2"} and {tr.yaxis for tr in fig.data} == {"y"}
    assert [tr.y.tolist() for tr in fig.data] == [tr.y.tolist() for tr in both.data if tr.yaxis == "y"]
    lo, hi = fig.layout.yaxis.domain or (0, 1)
    assert (lo, hi) == (0, 1) and both.layout.yaxis.domain[0] > 0.3  # the whole plot area, not its upper 62 %
    assert fig.layout.xaxis.title.text == "layer (1 = input side)" and list(fig.layout.xaxis.tickvals) == [
        1,
        2,
        3,
        4,
        5,
        6,
    ]
    assert not [a for a in fig.layout.annotations if "residual" in a.text]
    assert fig.layout.title.text.startswith("ffn.w2 gradient norm") and "step 150" in fig.layout.title.subtitle.text


def test_compared_profiles_at_different_steps_say_each_one_and_span_the_deepest(
    post_run: RunData, deep: RunData
) -> None:
    info = _prepare_profile([post_run, deep], None, "en", None, "ffn.w2")
    assert info.picks == [30, 20] and info.suffixes == [" (step 300)", " (step 200)"]
    assert info.depth == 24 and "each at its own step" in info.title


# --- Init lab: the last layer's gradient against depth ----------------------------------------------
def test_the_depth_chart_has_one_line_per_norm_position_with_its_seed_spread() -> None:
    df = pd.DataFrame(
        {
            "norm_position": ["post"] * 4 + ["pre"] * 2,
            "depth": [8, 8, 2, 2, 2, 8],
            "seed": [0, 1, 0, 1, 0, 0],
            "grad_norm": [0.1, 0.3, 1.0, 2.0, 0.5, 0.4],
        }
    )
    lines, depths = _prepare_depth(df)
    assert depths == [2, 8] and [line.position for line in lines] == ["post", "pre"]  # in order of appearance
    post_line = lines[0]
    assert post_line.depths.tolist() == [2, 8]  # sorted by depth
    np.testing.assert_allclose(post_line.mean, [1.5, 0.2])
    np.testing.assert_allclose(post_line.lo, [1.0, 0.1])
    np.testing.assert_allclose(post_line.hi, [2.0, 0.3])
    assert _prepare_depth(df.iloc[:0]) == ([], [])


# --- instability probes ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def dyt_run() -> RunData:
    """A real DyT run at a high learning rate: every instability probe measured, some inputs saturated."""
    from ln_viz.config import RunConfig
    from ln_viz.train import run

    cfg = RunConfig(depth=3, d_model=16, heads=2, seq_len=16, batch_size=4, steps=30, probe_every=10, eval_every=0)
    return run(cfg.replace(norm_type="dyt", lr=1e-2))


def test_the_attention_logit_chart_spans_every_drawn_layers_logits(dyt_run: RunData) -> None:
    from ln_viz.charts.instability import _prepare_attn_logits

    info = _prepare_attn_logits(dyt_run)
    assert info.layers == [1, 2, 3]
    logits = dyt_run.probe("attn_logit_max")
    assert info.rng[0] <= min(1.0, logits.min()) and max(10.0, logits.max()) <= info.rng[1]
    assert on_the_1_2_5_grid(info.rng[0]) and on_the_1_2_5_grid(info.rng[1])
    assert _prepare_attn_logits(demo("deep-post-ln")).layers == [1, 4, 8, 11, 14, 17, 21, 24]  # 8 of 24


def test_the_log_z_chart_draws_the_mean_and_the_largest_magnitude(dyt_run: RunData) -> None:
    from ln_viz.charts.instability import _prepare_log_z

    info = _prepare_log_z(dyt_run)
    assert info.steps.tolist() == [1, 10, 20, 30]
    np.testing.assert_array_equal(info.mean, dyt_run.probe("logz_stats")[:, 0])
    np.testing.assert_array_equal(info.max_abs, dyt_run.probe("logz_stats")[:, 3])
    assert (info.max_abs >= np.abs(info.mean)).all()


def test_the_per_layer_charts_show_the_chosen_probe_step(dyt_run: RunData) -> None:
    from ln_viz.charts.instability import _prepare_dyt, _prepare_massive

    info, rng = _prepare_massive(dyt_run, step=11)
    assert info.step == 10 and info.layers.tolist() == [1, 2, 3]
    np.testing.assert_array_equal(info.values, dyt_run.probe("massive_act")[1])
    assert rng[0] <= 1 and info.values.max() <= rng[1]
    dyt = _prepare_dyt(dyt_run)
    assert dyt.step == 30 and dyt.values.shape == (3, 2)  # layers x (ln1, ln2), in %
    np.testing.assert_allclose(dyt.values, 100 * dyt_run.probe("dyt_saturation")[-1], rtol=1e-6)
    assert np.isnan(_prepare_dyt(demo("pre-ln-no-warmup")).values).all()


def test_a_run_from_before_the_probes_has_none_to_draw(dyt_run: RunData) -> None:
    from ln_viz.charts.instability import has_instability_probes, is_dyt

    assert has_instability_probes(dyt_run) and is_dyt(dyt_run)
    old = demo("pre-ln-no-warmup")
    assert not has_instability_probes(old) and not is_dyt(old)
    assert not has_instability_probes(RunData(dyt_run.info))  # no probe step yet


def test_compared_runs_get_one_line_each_the_largest_logit_over_the_layers(dyt_run: RunData) -> None:
    from ln_viz.charts.instability import _prepare_compared_log_z, _prepare_compared_logits

    old, empty = demo("pre-ln-no-warmup"), RunData(dyt_run.info)
    info = _prepare_compared_logits([dyt_run, old, empty], ["new", "old", "empty"], "en")
    (name, _, steps, top), (_, _, old_steps, old_top), (_, _, no_steps, _) = info.lines
    assert name == "new" and steps.tolist() == [1, 10, 20, 30]
    np.testing.assert_array_equal(top, dyt_run.probe("attn_logit_max").max(axis=1).astype(np.float32))
    assert old_steps.size == len(old.probe_steps) and np.isnan(old_top).all()  # recorded before the probe
    assert no_steps.size == 0
    assert info.rng[0] <= min(1.0, top.min()) and max(10.0, top.max()) <= info.rng[1]
    from ln_viz.charts import NORM_COLORS
    from ln_viz.charts.style import SECOND_COLOR

    blue = NORM_COLORS["pre"]  # both Pre-LN: the second in the second colour, with the next dash
    assert [style for _, style, _, _ in info.lines][:2] == [(blue, "longdash"), (SECOND_COLOR, "longdashdot")]
    z = _prepare_compared_log_z([dyt_run], None, "en")
    assert z.lines[0][0] == "Pre-LN" and z.rng is None  # named by the norm position without labels
    np.testing.assert_array_equal(z.lines[0][3], dyt_run.probe("logz_stats")[:, 0])


def test_the_largest_logit_skips_a_nan_layer_and_is_nan_only_where_every_layer_is() -> None:
    from ln_viz.charts.instability import _largest_logit

    class Run:
        def probe(self, name):
            return np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan], [7.0, 2.0, 5.0]])

    got = _largest_logit(Run())
    assert got[0] == 3.0 and np.isnan(got[1]) and got[2] == 7.0
