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


class WeightCopies:
    """Copies of `params` (the block weights before a probe step's update), reused from step to step, and
    the norms the update ratio takes of them. Where the weights share a dtype and device and are contiguous,
    the copies are views of one flat buffer laid out by size (the weights of one size side by side: a (k, n)
    block), so the copy is one torch.cat and, for float32, each norm or difference one call per size rather
    than per weight (the CPU _foreach ops are a loop of per-tensor calls: for the overhead benchmark's 54
    weights, the copy 0.06 ms against 0.27, the norms and difference 0.1 against 0.45); a row's norm is its
    weight's alone, bit for bit. Otherwise one copy each and the _foreach calls."""

    GROUP_LIMIT = 1 << 22  # elements: a larger size group takes the difference weight by weight (no scratch)

    def __init__(self, params: list[torch.Tensor]) -> None:
        self.params = params
        self._ptrs: list[int] | None = None  # the params' storage when the copies were laid out

    @torch.no_grad()
    def _layout(self, ptrs: list[int]) -> None:
        params, self._ptrs = self.params, ptrs
        self._flat: torch.Tensor | None = None
        # per size: the weights' indices, their (k, n) block of copies, flat views of the weights themselves
        self._groups: list[tuple[list[int], torch.Tensor, list[torch.Tensor]]] = []
        if not (len({(p.dtype, p.device) for p in params}) == 1 and all(p.is_contiguous() for p in params)):
            self.copies = torch._foreach_mul(params, 1.0)
            return
        by_size: dict[int, list[int]] = {}
        for i, p in enumerate(params):
            by_size.setdefault(p.numel(), []).append(i)
        self._flat = torch.empty(sum(p.numel() for p in params), dtype=params[0].dtype, device=params[0].device)
        self.copies = list(params)  # each replaced by its view below
        start = 0
        for n, indices in by_size.items():
            block = self._flat[start : start + n * len(indices)].view(len(indices), n)
            self._groups.append((indices, block, [params[i].detach().view(-1) for i in indices]))
            for row, i in enumerate(indices):
                self.copies[i] = block[row].view(params[i].shape)
            start += block.numel()
        self._sources = [v for _, _, views in self._groups for v in views]
        small = [block.numel() for _, block, _ in self._groups if block.numel() <= self.GROUP_LIMIT]
        self._scratch = torch.empty(max(small, default=0), dtype=self._flat.dtype, device=self._flat.device)

    @torch.no_grad()
    def take(self) -> WeightCopies:
        """Copy the params now (laid out anew where a param was given new storage since the last time)."""
        ptrs = [p.data_ptr() for p in self.params]
        if ptrs != self._ptrs:
            self._layout(ptrs)
        if self._flat is None:
            torch._foreach_copy_(self.copies, self.params)
        else:
            torch.cat(self._sources, out=self._flat)
        return self

    @torch.no_grad()
    def norms(self) -> tuple[list[float], list[float]]:
        """(||copy||, ||copy - param||) of each weight, in the params' order; the copies are overwritten with
        the difference (they are not needed after)."""
        if self._flat is None or self._flat.dtype != torch.float32:
            base = torch._foreach_norm(self.copies)
            torch._foreach_sub_(self.copies, self.params)
            values = _floats((*base, *torch._foreach_norm(self.copies)))
            return values[: len(self.params)], values[len(self.params) :]
        base, delta = [], []
        for indices, block, views in self._groups:
            base.append(torch.linalg.vector_norm(block, dim=1))
            if block.numel() <= self.GROUP_LIMIT:
                after = self._scratch[: block.numel()]
                torch.cat(views, out=after)
                block.sub_(after.view(block.shape))
            else:
                torch._foreach_sub_([self.copies[i] for i in indices], [self.params[i] for i in indices])
            delta.append(torch.linalg.vector_norm(block, dim=1))
        values = torch.cat(base + delta).cpu().tolist()
        order = [i for indices, _, _ in self._groups for i in indices]
        half = len(order)
        out_base, out_delta = [0.0] * half, [0.0] * half
        for at, i in enumerate(order):
            out_base[i], out_delta[i] = values[at], values[half + at]
        return out_base, out_delta


def update_ratio(copies: WeightCopies, block_params: list[list[torch.Tensor]]) -> np.ndarray:
    """||w_after - w_before|| / ||w_before|| per block, from the copies taken before the step (`copies`:
    the block weights in block order, overwritten with the difference: they are not needed after)."""
    base, delta = copies.norms()
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
