"""What of a run a chart draws: at most a few hundred points of a long series (`downsample`) and the
probe step nearest to the one asked for; and how charts tell runs apart (a key per configuration for
`uirevision`, a colour and a dash per run)."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence

import numpy as np

from ln_viz.charts.style import DASHES, GREY, NORM_COLORS, NORM_DASHES, SECOND_COLOR
from ln_viz.snapshot import RunData

MAX_LOSS_POINTS = 500  # per loss line on the live page
MAX_LR_POINTS = 200  # the planned schedule is smooth: few points draw it
MAX_HEATMAP_COLUMNS = 400  # probe steps shown in the gradient heatmap


def downsample_index(y: np.ndarray, max_points: int) -> np.ndarray:
    """Indices of at most `max_points` points of `y` to draw: the most recent half at full resolution,
    the older part as the min and max of equal buckets, plus the first point. Keeps the first and last
    points and the global extremes; NaN-safe (an all-NaN bucket keeps its first point)."""
    y = np.asarray(y, dtype=np.float64)
    n = len(y)
    if max_points < 4:
        raise ValueError(f"max_points must be at least 4, got {max_points}")
    if n <= max_points:
        return np.arange(n)
    recent = max_points // 2
    n_old = n - recent
    n_buckets = max(1, (max_points - recent - 1) // 2)  # 2 points per bucket, +1 for the first point
    bounds = np.linspace(0, n_old, n_buckets + 1).astype(np.int64)
    keep = [0]
    for a, b in zip(bounds[:-1], bounds[1:]):
        if b <= a:
            continue
        chunk = y[a:b]
        finite = np.isfinite(chunk)
        if not finite.any():
            keep.append(a)
            continue
        masked_lo = np.where(finite, chunk, np.inf)
        masked_hi = np.where(finite, chunk, -np.inf)
        keep += [a + int(np.argmin(masked_lo)), a + int(np.argmax(masked_hi))]
    idx = np.unique(np.concatenate([np.asarray(keep, dtype=np.int64), np.arange(n_old, n)]))
    return idx


def downsample(
    x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, max_points: int
) -> tuple[np.ndarray, np.ndarray]:
    """At most `max_points` (x, y) points for display: recent points all, older ones min/max-preserving
    (see `downsample_index`). First and last points and the extremes of y are always kept."""
    x, y = np.asarray(x), np.asarray(y)
    idx = downsample_index(y, max_points)
    return x[idx], y[idx]


def _probe_index(data: RunData, step: int | None) -> int | None:
    """Index of the probe step nearest to `step` (the last one when None); None before the first probe."""
    if not data.probe_steps:
        return None
    if step is None:
        return len(data.probe_steps) - 1
    steps = np.asarray(data.probe_steps)
    return int(np.argmin(np.abs(steps - step)))


def heatmap_columns(n: int) -> np.ndarray:
    """Which of `n` probe steps a heatmap over steps draws: all up to MAX_HEATMAP_COLUMNS, else an even
    stride that always ends at the latest probe."""
    cols = np.arange(n)
    if n > MAX_HEATMAP_COLUMNS:
        cols = cols[::-1][:: math.ceil(n / MAX_HEATMAP_COLUMNS)][::-1]
    return cols


def step_range(datas: RunData | Sequence[RunData]) -> float:
    """The right end of a step axis: the planned steps, so a streaming run's axis holds still; but when
    every run shown has diverged, a little past the last divergence, so a run that blew up at step 2
    fills the chart instead of a sliver of it."""
    runs = [datas] if isinstance(datas, RunData) else list(datas)
    # an attached run's planned steps are known only when its loop ends (ln_viz.attach without steps=): its axis
    # reaches the steps taken so far
    planned = max((max(d.info.config.steps, d.steps_done if d.info.attached else 0) for d in runs), default=1)
    ends = [d.diverged_at for d in runs]
    if not runs or any(e is None for e in ends):
        return planned
    last = max(e for e in ends if e is not None)
    return float(min(planned, max(last * 1.1, last + 1)))


def _run_key(data: RunData) -> str:
    """A stable id of a run's configuration: `uirevision` keeps zoom for the same run, resets for a new one."""
    card = data.info.model_card  # two models of the user's own may share the stand-in config
    blob = json.dumps(data.info.config.to_dict() if card is None else [data.info.config.to_dict(), card],
                      sort_keys=True, default=str)  # fmt: skip
    return hashlib.sha1(blob.encode()).hexdigest()[:12]


def _runs_key(prefix: str, datas: Sequence[RunData]) -> str:
    """`uirevision` of a chart of several runs: the same runs keep their zoom."""
    return prefix + "-".join(_run_key(d) for d in datas)


def _run_styles(datas: Sequence[RunData]) -> list[tuple[str, str]]:
    """(colour, dash) per run: the norm position's colour and dash (`NORM_DASHES`: positions differ in
    greyscale too); runs sharing a position take the dashes after it in turn, and every other one of them
    SECOND_COLOR, so that A and B of one position differ by colour as well (issue 32: two noisy lines of one
    colour, solid against dashed, were hard to follow from the back of a room)."""
    seen: dict[str, int] = {}
    out = []
    for d in datas:
        pos = d.info.placement
        n = seen.get(pos, 0)
        seen[pos] = n + 1
        first = DASHES.index(NORM_DASHES.get(pos, "solid"))
        colour = SECOND_COLOR if n % 2 else NORM_COLORS.get(pos, GREY)
        out.append((colour, DASHES[(first + n) % len(DASHES)]))
    return out
