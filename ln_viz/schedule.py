"""The learning-rate schedule a RunConfig describes: linear warm-up (Xiong et al. 2020's t / T * lr_max),
then constant, inverse square root or cosine. Read by the trainer (each step's lr) and the loss chart (the
planned schedule, drawn before a run starts); no torch."""

from __future__ import annotations

import math

import numpy as np

from ln_viz.config import RunConfig


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
