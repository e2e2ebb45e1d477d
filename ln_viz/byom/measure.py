"""Gradient norms as the optimizer applied them, and the update ratio, for the blocks of an attached model."""

from __future__ import annotations

import math

import numpy as np
import torch


def _floats(norms: list[torch.Tensor] | tuple[torch.Tensor, ...]) -> list[float]:
    """0-d norms as Python floats, in one transfer (float32 ones stacked as they are: a call per norm to make
    each float32 costs more than the norms themselves on a small model)."""
    if all(n.dtype == torch.float32 for n in norms):
        return torch.stack(norms).cpu().tolist()
    return torch.stack([n.float() for n in norms]).cpu().tolist()


def _foreach_norm(tensors: list[torch.Tensor]) -> list[float]:
    if not tensors:
        return []
    return _floats(torch._foreach_norm(tensors))


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


class WeightCopy:
    """The block weights as they were before a probe step's update, for update_ratio: where they share a
    dtype and device, in one flat buffer kept from step to step (one copy call before the step and one after
    for the difference: a foreach copy and subtraction over a small model's ~50 tensors cost 4 us a tensor
    each), else a copy each; `pieces` holds them, a tensor each (views of the buffer)."""

    def __init__(self) -> None:
        self.pieces: list[torch.Tensor] = []
        self._flat: torch.Tensor | None = None
        self._after: torch.Tensor | None = None
        self._copies: list[torch.Tensor] | None = None

    @torch.no_grad()
    def take(self, params: list[torch.Tensor]) -> None:
        if len({(p.dtype, p.device) for p in params}) != 1:  # none, or mixed: a copy each
            if self._copies is None or len(self._copies) != len(params):
                self._copies = torch._foreach_mul(params, 1.0)
            else:  # into the copies kept from the last probe step: no allocation
                torch._foreach_copy_(self._copies, params)
            self._flat, self.pieces = None, self._copies
            return
        flat = [p.reshape(-1) for p in params]
        n = sum(f.numel() for f in flat)
        if self._after is None or self._after.numel() != n or self._after.dtype != params[0].dtype:
            self._after = torch.empty(n, dtype=params[0].dtype, device=params[0].device)
            self._flat = torch.empty_like(self._after)
        elif self._flat is None:
            self._flat = torch.empty_like(self._after)
        torch.cat(flat, out=self._flat)
        self.pieces = list(self._flat.split([f.numel() for f in flat]))

    @torch.no_grad()
    def subtract(self, params: list[torch.Tensor]) -> None:
        """`pieces` -= `params` (the weights after the step): the update, with its sign flipped."""
        if self._flat is None:
            torch._foreach_sub_(self.pieces, params)
            return
        assert self._after is not None
        self._flat.sub_(torch.cat([p.reshape(-1) for p in params], out=self._after))


def update_ratio(before: WeightCopy, block_params: list[list[torch.Tensor]]) -> np.ndarray:
    """||w_after - w_before|| / ||w_before|| per block, from the weights copied before the step (which this
    overwrites with the difference: it is not needed after)."""
    with torch.no_grad():
        base = torch._foreach_norm(before.pieces)
        before.subtract([p for ps in block_params for p in ps])
        norms = _floats((*base, *torch._foreach_norm(before.pieces)))
    n = len(before.pieces)
    base, delta = norms[:n], norms[n:]
    out = np.zeros(len(block_params), np.float32)
    start = 0
    for i, ps in enumerate(block_params):
        d = sum(x * x for x in delta[start : start + len(ps)])
        b = sum(x * x for x in base[start : start + len(ps)])
        out[i] = math.sqrt(d / b) if b > 0 else math.nan
        start += len(ps)
    return out


def is_probe_step(step: int, every: int, last: int | None) -> bool:
    """Probe steps: 1, every `every`-th, and the last (when known)."""
    return step == 1 or (every > 0 and step % every == 0) or (last is not None and step == last)


def _mode_stack() -> list:
    from torch.overrides import _get_current_function_mode_stack

    return list(_get_current_function_mode_stack())
