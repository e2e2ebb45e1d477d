"""The names and fixed constants every layer of ln-viz shares, in a module that imports no torch, so
the server, the charts and the store load fast and light (torch stays in the worker processes)."""

from __future__ import annotations

import math

import numpy as np

from ln_viz.config import RunConfig

PARAM_NAMES = ("attn.q", "attn.k", "attn.v", "attn.o", "ffn.w1", "ffn.w2")  # per block, in init order

# Fixed histogram bin edges, shared by every layer, step and run, so frames can be compared. Values
# beyond them are counted in the `frac_below` / `frac_above` stats (ln_viz.schema.Stat), never dropped.
# The edges are evenly spaced in asinh(x) (a symmetric log): about 0.1 wide near 0, so a LayerNorm output
# of width 1 gets ~40 bins, and ~3 wide at 30, so a 24-layer Pre-LN stream (std ~60, values to ~150) still
# lands inside. Runs store their edges (`RunInfo.hist_edges`): runs made with the old linear ±16 edges
# keep drawing with those.
HIST_LIMIT = 256.0
HIST_BINS = 128  # even: 0 is an edge
HIST_ASINH_LIMIT = math.asinh(HIST_LIMIT)


def _asinh_edges(limit: float, bins: int) -> np.ndarray:
    """`bins` + 1 edges from -limit to limit, evenly spaced in asinh, exactly symmetric, 0 in the middle."""
    half = np.sinh(np.linspace(0.0, math.asinh(limit), bins // 2 + 1))
    half[0], half[-1] = 0.0, limit
    return np.concatenate([-half[:0:-1], half])


HIST_EDGES = _asinh_edges(HIST_LIMIT, HIST_BINS)

STATUSES = ("queued", "running", "completed", "diverged", "stalled", "stopped", "failed", "interrupted")
TERMINAL = ("completed", "diverged", "stalled", "stopped", "failed", "interrupted")


def norm_names(norm_position: str) -> list[str]:
    """Names of the norm modules inside each block, in forward order."""
    return {
        "post": ["ln1", "ln2"],
        "pre": ["ln1", "ln2"],
        "deepnorm": ["ln1", "ln2"],
        "mix": ["ln1", "ln2"],
        "none": [],
    }.get(norm_position, ["ln1", "ln1_out", "ln2", "ln2_out"])


def lr_at(cfg: RunConfig, step: int) -> float:
    """Learning rate of update `step` (1-based): linear warm-up from 0 (the paper's t/T * lr_max), then
    the schedule."""
    w = cfg.warmup_steps
    if w and step <= w:
        return cfg.lr * step / w
    if cfg.schedule == "inverse_sqrt":
        return cfg.lr * math.sqrt(max(w, 1) / step)
    if cfg.schedule == "cosine":
        span = max(cfg.steps - w, 1)
        return cfg.lr * 0.5 * (1 + math.cos(math.pi * min(step - w, span) / span))
    return cfg.lr


def lr_schedule(cfg: RunConfig) -> np.ndarray:
    """lr(t) for t = 1..steps."""
    return np.array([lr_at(cfg, t) for t in range(1, cfg.steps + 1)])
