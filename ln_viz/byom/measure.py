"""Gradient norms as the optimizer applied them, and the update ratio, for the blocks of an attached model."""

from __future__ import annotations

import math
import numbers

import numpy as np
import torch

from ln_viz.update_probes import WeightCopies, as_floats, block_update_ratios


def _foreach_norm(tensors: list[torch.Tensor]) -> list[float]:
    if not tensors:
        return []
    return as_floats(torch._foreach_norm(tensors))


def grad_norms(
    all_params: list[torch.Tensor],
    matrices: list[list[torch.Tensor | None]],
    block_params: list[list[torch.Tensor]],
    shape: tuple[int, ...],
) -> tuple[dict[str, np.ndarray], float]:
    """Per-matrix (`shape`: blocks x matrices) and per-block gradient norms as the update used them, and the
    total of all the model's gradients; one batched norm call. A matrix without a gradient stays NaN."""
    with torch.no_grad():
        present = [p for p in all_params if p.grad is not None]
        norms = {id(p): n for p, n in zip(present, _foreach_norm([p.grad for p in present]))}
    per = np.full(shape, np.nan, np.float32)
    for i, mats in enumerate(matrices):
        for j, p in enumerate(mats):
            if p is not None and id(p) in norms:
                per[i, j] = norms[id(p)]
    block = np.array([math.sqrt(sum(norms.get(id(p), 0.0) ** 2 for p in ps)) for ps in block_params], np.float32)
    total = math.sqrt(sum(v * v for v in norms.values())) if norms else math.nan
    return {"grad_norm": per, "block_grad_norm": block}, total


def update_ratio(copies: WeightCopies, block_params: list[list[torch.Tensor]]) -> np.ndarray:
    """||w_after - w_before|| / ||w_before|| per block, from the copies taken before the step (`copies`:
    the block weights in block order, not needed after: WeightCopies.norms may overwrite them)."""
    base, delta, _ = copies.norms()
    return block_update_ratios(base, delta, [len(ps) for ps in block_params])


def check_attach_args(model: object, optimizer: object, every: object, steps: object) -> None:
    """attach's arguments, each refused in one sentence where it is not what it must be."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"ln-viz: attach needs the torch.nn.Module you train, not a {type(model).__name__}.")
    if not all(hasattr(optimizer, a) for a in ("param_groups", "register_step_pre_hook", "register_step_post_hook")):
        raise TypeError(
            f"ln-viz: attach needs the torch.optim.Optimizer that trains the model (its steps are what it counts), "
            f"not a {type(optimizer).__name__}."
        )
    if isinstance(every, bool) or not isinstance(every, numbers.Integral) or every < 1:
        raise ValueError(f"every={every!r}: probe every N >= 1 optimizer steps, N a whole number.")
    if steps is not None and (isinstance(steps, bool) or not isinstance(steps, numbers.Integral) or steps < 1):
        raise ValueError(f"steps={steps!r}: the optimizer steps the run will take, a whole number >= 1, or None.")


def is_probe_step(step: int, every: int, last: int | None) -> bool:
    """Probe steps: 1, every `every`-th, and the last (when known)."""
    return step == 1 or (every > 0 and step % every == 0) or (last is not None and step == last)


def _mode_stack() -> list:
    from torch.overrides import _get_current_function_mode_stack

    return list(_get_current_function_mode_stack())
