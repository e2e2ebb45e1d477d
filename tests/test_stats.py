"""ln_viz.stats against numbers worked out by hand: the t quantiles of the published table, Student's t
intervals on fixed values (mean, sd and half-width computed on paper), one seed without an interval,
and TensorBoard's debiased EMA step by step."""

import math

import pytest

from ln_viz.stats import (
    PAIRED_T,
    ema_debiased,
    mean_sd,
    paired_differences,
    paired_t_interval,
    t_cdf,
    t_interval,
    t_quantile,
)

# t(0.975, df), the two-sided 95 % critical values of any statistics textbook's table
TABLE = {1: 12.7062, 2: 4.3027, 4: 2.7764, 7: 2.3646, 30: 2.0423, 120: 1.9799}


@pytest.mark.parametrize(("df", "value"), TABLE.items())
def test_the_t_quantile_matches_the_table(df, value):
    assert t_quantile(0.975, df) == pytest.approx(value, abs=5e-5)
    assert t_quantile(0.025, df) == pytest.approx(-value, abs=5e-5)  # symmetric
    assert t_cdf(t_quantile(0.975, df), df) == pytest.approx(0.975, abs=1e-10)


def test_the_t_distribution_is_centred_and_tends_to_the_normal():
    assert t_cdf(0.0, 3) == 0.5
    assert t_quantile(0.975, 100_000) == pytest.approx(1.95996, abs=1e-4)  # the normal's 1.959964


@pytest.mark.parametrize(
    ("values", "mean", "sd", "low", "high"),
    [
        # n = 2, df 1: sd = sqrt(0.5) = 0.707107; half = 12.7062 * 0.707107 / sqrt(2) = 6.3531
        ([1.0, 2.0], 1.5, 0.707107, -4.8531, 7.8531),
        # n = 3, df 2: sd 0.1; half = 4.3027 * 0.1 / sqrt(3) = 0.248417
        ([0.7, 0.8, 0.9], 0.8, 0.1, 0.551583, 1.048417),
        # n = 5, df 4: deviations -.03 .12 -.08 -.03 .02, squares sum .023, sd = sqrt(.023 / 4) = 0.0758288;
        # half = 2.7764 * 0.0758288 / sqrt(5) = 0.0941539
        ([0.7, 0.85, 0.65, 0.7, 0.75], 0.73, 0.0758288, 0.635846, 0.824154),
        # n = 8, df 7: 1..8, squares of the deviations sum to 42, sd = sqrt(6); half = 2.3646 * sqrt(6 / 8)
        (list(range(1, 9)), 4.5, 2.449490, 2.452196, 6.547804),
    ],
)
def test_the_t_interval_of_fixed_numbers(values, mean, sd, low, high):
    iv = t_interval(values)
    assert iv.n == len(values)
    assert iv.mean == pytest.approx(mean, abs=1e-9)
    assert iv.sd == pytest.approx(sd, abs=1e-6)
    assert iv.ci95 == pytest.approx((low, high), abs=5e-5)  # the table's 4 decimals
    assert iv.method == PAIRED_T


def test_one_seed_has_a_mean_but_no_spread_and_no_interval():
    iv = t_interval([2.5])
    assert (iv.mean, iv.sd, iv.n, iv.ci95) == (2.5, None, 1, None)
    assert iv.to_dict() == {"mean": 2.5, "sd": None, "n": 1, "ci95": None, "method": PAIRED_T}
    assert t_interval([]).to_dict()["mean"] is None


def test_paired_differences_leave_out_a_seed_without_a_final_loss_on_either_side():
    a = [3.0, 3.2, None, 3.1, float("nan"), 3.05]
    b = [2.3, 2.35, 2.0, 2.4, 2.1, 2.3]
    assert paired_differences(a, b) == pytest.approx([0.7, 0.85, 0.7, 0.75])
    iv = paired_t_interval(a, b)
    assert iv.n == 4 and iv.mean == pytest.approx(0.75)
    with pytest.raises(ValueError):
        paired_differences([1.0], [1.0, 2.0])


def test_mean_sd_is_the_sample_sd():
    assert mean_sd([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]) == pytest.approx((5.0, math.sqrt(32 / 7)))
    assert mean_sd([None, float("inf")]) == (None, None)


def test_the_debiased_ema_step_by_step():
    # weight 0.6: k=1: last 0.4, / (1 - 0.6) = 1; k=2: last 0.24 + 0.8 = 1.04, / 0.64 = 1.625;
    # k=3: last 0.624 + 1.2 = 1.824, / 0.784 = 2.326531; nan passes; k=4: 1.0944 + 1.6 = 2.6944, / 0.8704
    out = ema_debiased([1.0, 2.0, 3.0, float("nan"), 4.0], 0.6)
    assert out[:3] == pytest.approx([1.0, 1.625, 2.326531], abs=1e-6)
    assert math.isnan(out[3])
    assert out[4] == pytest.approx(3.095588, abs=1e-6)


def test_the_ema_leaves_an_unsmoothed_or_constant_series_as_it_is():
    assert ema_debiased([3.0, 1.0, 2.0], 0.0) == [3.0, 1.0, 2.0]
    assert ema_debiased([0.1] * 50, 0.99) == [0.1] * 50
    assert ema_debiased([], 0.5) == []
    with pytest.raises(ValueError):
        ema_debiased([1.0, 2.0], 1.0)
