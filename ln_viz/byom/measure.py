"""Gradient norms as the optimizer applied them, and the update ratio, for the blocks of an attached model."""

from __future__ import annotations

import math
import numbers
import os
import sys

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


_INSIDE = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.path.dirname(torch.__file__))
_FRAMEWORKS = ("/transformers/", "/accelerate/", "/lightning/", "/lightning_fabric/", "/pytorch_lightning/")


def user_stacklevel() -> int:
    """warnings.warn's stacklevel, from the caller of this function's caller, of the first frame outside ln-viz and
    torch: the user's line (their optimizer.step(), loss.backward(), model(x), attach(...)), wherever in ln-viz's
    hooks the warning is said, nor in the training frameworks that call them (the user's trainer.fit(...)); 2 (the
    warning's caller) where every frame is inside."""
    frame, level = sys._getframe(2), 2
    while frame is not None and _inside(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    return level if frame is not None else 2


def _inside(filename: str) -> bool:
    return filename.startswith(_INSIDE) or any(f in filename.replace(os.sep, "/") for f in _FRAMEWORKS)


def is_probe_step(step: int, every: int, last: int | None) -> bool:
    """Probe steps: 1, every `every`-th, and the last (when known)."""
    return step == 1 or (every > 0 and step % every == 0) or (last is not None and step == last)


def _mode_stack() -> list:
    from torch.overrides import _get_current_function_mode_stack

    return list(_get_current_function_mode_stack())
