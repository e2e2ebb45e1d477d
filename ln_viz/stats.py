"""Small statistics for seeds, with no dependency beyond `math`: Student's t interval on paired
differences (issue 20: "the gap, its 95 % interval, over N seeds") and TensorBoard's debiased EMA for
loss curves.

scipy is not a dependency, so the t quantile is computed here: the t distribution's CDF through the
regularised incomplete beta function (its continued fraction, evaluated by the modified Lentz method as
in Numerical Recipes, 3rd ed., section 6.4), inverted by bisection. It matches the published table to
the table's 4-5 digits for every df (tests/test_stats.py: t(0.975, 1) = 12.7062, t(0.975, 2) = 4.3027,
t(0.975, 4) = 2.7764, t(0.975, 7) = 2.3646), with no normal approximation at large df.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

PAIRED_T = "Student's t on the per-seed paired differences"
CONFIDENCE = 0.95
_CF_EPS = 1e-15
_CF_TINY = 1e-300
_CF_MAX_TERMS = 500


def _beta_cf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz); converges fast for
    x < (a + 1) / (a + b + 2), where `regularized_beta` calls it."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _CF_TINY else _CF_TINY)
    h = d
    for m in range(1, _CF_MAX_TERMS + 1):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > _CF_TINY else _CF_TINY)
            c = 1.0 + num / c
            c = c if abs(c) > _CF_TINY else _CF_TINY
            delta = c * d
            h *= delta
        if abs(delta - 1.0) < _CF_EPS:
            break
    return h


def regularized_beta(x: float, a: float, b: float) -> float:
    """I_x(a, b), the regularised incomplete beta function, for 0 <= x <= 1 and a, b > 0."""
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"x must be in [0, 1], got {x}")
    if x in (0.0, 1.0):
        return x
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_cf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_cf(b, a, 1.0 - x) / b  # the symmetry I_x(a,b) = 1 - I_{1-x}(b,a)


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with `df` degrees of freedom."""
    tail = 0.5 * regularized_beta(df / (df + t * t), df / 2.0, 0.5)  # P(T > |t|)
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The t value below which a fraction `p` of Student's t with `df` degrees of freedom lies
    (t_quantile(0.975, 4) = 2.7764), by bisection of `t_cdf` to about 1e-12."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be between 0 and 1, got {p}")
    if df <= 0:
        raise ValueError(f"df must be positive, got {df}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        lo, hi = hi, hi * 2.0
    while hi - lo > 1e-12 * max(1.0, hi):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if t_cdf(mid, df) < p else (lo, mid)
    return 0.5 * (lo + hi)


def finite(values: Sequence[float | None]) -> list[float]:
    """The values that are numbers and finite (a diverged seed's final loss is None or nan)."""
    return [float(v) for v in values if v is not None and math.isfinite(v)]


def mean_sd(values: Sequence[float | None]) -> tuple[float | None, float | None]:
    """The mean and the sample standard deviation (n - 1) of the finite values; None where there are
    too few (no values: no mean; one value: no sd)."""
    xs = finite(values)
    if not xs:
        return None, None
    mean = math.fsum(xs) / len(xs)
    if len(xs) < 2:
        return mean, None
    return mean, math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (len(xs) - 1))


@dataclass(frozen=True)
class Interval:
    """A mean with its spread and its two-sided 95 % interval: `ci95` is None when n < 2 (one seed has
    no spread to say, which is not an interval of width 0)."""

    mean: float | None
    sd: float | None
    n: int
    ci95: tuple[float, float] | None
    method: str

    def to_dict(self) -> dict[str, object]:
        """JSON-ready: mean, sd, n, `ci95` [low, high] (or null), method."""
        ci95 = list(self.ci95) if self.ci95 else None
        return {"mean": self.mean, "sd": self.sd, "n": self.n, "ci95": ci95, "method": self.method}


def t_interval(values: Sequence[float | None], method: str = PAIRED_T) -> Interval:
    """Student's t 95 % interval of the mean of the finite `values`: mean +- t(0.975, n - 1) * sd / sqrt(n)."""
    xs = finite(values)
    mean, sd = mean_sd(xs)
    ci95 = None
    if mean is not None and sd is not None:
        half = t_quantile(0.5 + CONFIDENCE / 2.0, len(xs) - 1) * sd / math.sqrt(len(xs))
        ci95 = (mean - half, mean + half)
    return Interval(mean=mean, sd=sd, n=len(xs), ci95=ci95, method=method)


def paired_differences(a: Sequence[float | None], b: Sequence[float | None]) -> list[float]:
    """a[i] - b[i] for every pair where both are finite (seed i on both sides: same weights' seed, same
    batches), so a seed that diverged on one side drops out of the pairs instead of skewing them."""
    if len(a) != len(b):
        raise ValueError(f"paired values need the same length, got {len(a)} and {len(b)}")
    return [x - y for x, y in zip(a, b) if finite([x]) and finite([y])]


def paired_t_interval(a: Sequence[float | None], b: Sequence[float | None]) -> Interval:
    """The mean of a - b over the paired seeds, with Student's t 95 % interval of the differences."""
    return t_interval(paired_differences(a, b), PAIRED_T)


def ema_debiased(values: Sequence[float], weight: float) -> list[float]:
    """TensorBoard's scalar smoothing: an EMA started at 0 and divided by 1 - weight^k (k: finite
    values so far), so the first points are not pulled towards 0. A non-finite value passes through
    unsmoothed and does not enter the average; a constant series is returned as it is (TensorBoard
    does so against rounding). weight 0: no smoothing; it must be in [0, 1)."""
    if not 0.0 <= weight < 1.0:
        raise ValueError(f"the smoothing weight must be in [0, 1), got {weight}")
    xs = [float(v) for v in values]
    if all(x == xs[0] for x in xs):
        return xs
    out, last, k = [], 0.0, 0
    for x in xs:
        if not math.isfinite(x):
            out.append(x)
            continue
        last = last * weight + (1.0 - weight) * x
        k += 1
        out.append(last / (1.0 - weight**k))
    return out
