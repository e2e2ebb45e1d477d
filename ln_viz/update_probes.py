"""What is measured of the gradients and across the optimizer step: before it, the weights are copied once
(probe steps only); after it, the copies and the new weights give, per block (each array's shape, unit and
meaning in ln_viz.schema.PROBES):

- `update_ratio`: ||w_after - w_before|| / ||w_before|| over the block's parameters;
- `angular_update` (issue 33, Kosson et al. 2024): per block, the LARGEST over its six weight matrices
  (PARAM_NAMES) of the angle arccos(<W, W'> / (|W| |W'|)) between the matrix before (W) and after (W')
  the optimizer step, in radians. Computed as 2 asin(|W'/|W'| - W/|W|| / 2), the same angle without
  arccos's rounding near cos = 1 (an angle of 1e-3 rad is cos = 1 - 5e-7, at float32's resolution).
  The largest, not a norm-weighted mean: the matrix that turned most is the one warm-up holds back;
- `precond_lag` (Bai et al. 2025): per block, the largest |g| / (sqrt(v_hat) + eps) over the elements of
  its six weight matrices, read after the step from Adam's state: g the gradient Adam used (after
  clipping), v_hat = exp_avg_sq / (1 - beta2^t) with t the matrix's own step count (the bias correction
  Adam applied to this step's denominator, GI-Adam's too), eps as Adam adds it (outside the root). v
  already holds this step's g^2, so the ratio is at most sqrt((1 - beta2^t) / (1 - beta2)) (7.07 at
  beta2 0.98): near that bound the gradient dwarfs its history (v lags behind), near 1 it is steady.
  NaN for an optimizer without a second moment (SGD, Muon's matrices).

Before the step, the gradients (GradNorms, every step: the trainer checks the total for divergence):
- `grad_norm`: the Frobenius norm of the gradient of each weight matrix in PARAM_NAMES;
- `block_grad_norm`: of all the block's parameters together.

Every norm is batched: one `torch._foreach_norm` for all gradients a step (the same call gives the total norm the
trainer checks for divergence); across the step, on probe steps, the parameters of one size side by side in a
(k, n) buffer, one call per size for each norm, difference and ratio.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ln_viz.model import TinyLM
from ln_viz.schema import PARAM_NAMES


class WeightCopies:
    """Copies of `params` taken before an optimizer step (`take()`), reused from step to step, and what the
    update probes read of them after it (`norms()`): each weight's norm before, the norm of its change, and
    (`angles=True`) the angle it turned. ln-viz's own UpdateRatio and attach's update ratio both use it.

    Where the weights share a dtype and device and are contiguous, the copies are views of one flat buffer laid
    out by size (the weights of one size side by side: a (k, n) block), so the copy is one torch.cat and, for
    float32, each norm, difference and angle one call per size rather than per weight (a _foreach call on the
    CPU is a loop of per-tensor calls: ln-viz's 6 x 64 model, 12 calls where there were ~400; attach's overhead
    benchmark's 54 weights, the copy 0.06 ms against 0.27); a row's norm is its weight's alone, bit for bit.
    Otherwise one copy each and the _foreach calls."""

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
    def norms(self, angles: bool = False) -> tuple[list[float], list[float], list[float] | None]:
        """(||before||, ||after - before||, and with `angles` the angle in radians each weight turned, else None),
        in the params' order: the norms float32 values, the angles float64 (float32 ones where the weights are not
        one contiguous float32 layout). The angle is arccos(<before, after> / (|before| |after|)), computed as
        2 asin(|after/|after| - before/|before|| / 2), exact near 0 where arccos loses half the digits; NaN where
        either is zero or not finite. The copies are not needed after: they may be overwritten (a size group past
        GROUP_LIMIT without angles, or the one-copy-each layout, takes the difference in place)."""
        if self._flat is None or self._flat.dtype != torch.float32:
            base = torch._foreach_norm(self.copies)
            turned = None
            if angles:
                turned = angular_updates(self.copies, self.params, as_float64(base))
            torch._foreach_sub_(self.copies, self.params)
            values = as_floats((*base, *torch._foreach_norm(self.copies)))
            n = len(self.params)
            return values[:n], values[n:], None if turned is None else turned.astype(np.float64).tolist()
        rows: list[torch.Tensor] = []
        for indices, block, views in self._groups:
            if block.numel() <= self.GROUP_LIMIT or angles:
                # the angles need the copies and the difference at once: past the limit, a scratch for the call
                small = block.numel() <= self.GROUP_LIMIT
                after = self._scratch[: block.numel()].view(block.shape) if small else torch.empty_like(block)
                torch.cat(views, out=after.view(-1))
                rows.append(_change(block, after, angles))
            else:  # the difference in place of the copies, weight by weight: no scratch the size of the group
                b_norm = torch.linalg.vector_norm(block, dim=1)
                torch._foreach_sub_([self.copies[i] for i in indices], [self.params[i] for i in indices])
                rows.append(torch.stack([b_norm, torch.linalg.vector_norm(block, dim=1)]))
        order = [i for indices, _, _ in self._groups for i in indices]
        values = torch.cat(rows, dim=1).cpu().numpy()  # (2 or 4, weights): float32 norms, float64 if angles
        out = np.zeros((len(values), len(order)), values.dtype)
        out[:, order] = values
        base, delta = out[0].astype(np.float32).tolist(), out[1].astype(np.float32).tolist()
        if not angles:
            return base, delta, None
        nb, na, chord = out[0], out[2], out[3]
        ok = (nb > 0) & (na > 0) & np.isfinite(nb) & np.isfinite(na)
        return base, delta, np.where(ok, 2 * np.arcsin(np.clip(chord / 2, 0.0, 1.0)), np.nan).tolist()


def _change(before: torch.Tensor, after: torch.Tensor, angles: bool) -> torch.Tensor:
    """Rows of (|before|, |after - before|) of a (k, n) block, and with `angles` |after| and the chord
    |after/|after| - before/|before|| (float64 then): `after` (a scratch holding the weights after the step) is
    overwritten. The chord comes from the difference d, as d / na + before (1 / na - 1 / nb), the same vector as
    after / na - before / nb with one buffer fewer, and 8x closer to float64 (1.5e-6 relative over 200 random
    updates, where the direct difference of the unit vectors gave 1.2e-5)."""
    b_norm = torch.linalg.vector_norm(before, dim=1)
    a_norm = torch.linalg.vector_norm(after, dim=1) if angles else None
    after.sub_(before)
    d_norm = torch.linalg.vector_norm(after, dim=1)
    if a_norm is None:
        return torch.stack([b_norm, d_norm])
    b64, a64 = b_norm.double(), a_norm.double()
    ok = (b64 > 0) & (a64 > 0)
    inv_a = torch.where(ok, 1 / a64, 0.0)
    scale = torch.where(ok, inv_a - 1 / b64, 0.0)
    after.mul_(inv_a.to(after.dtype)[:, None]).addcmul_(before, scale.to(after.dtype)[:, None])
    return torch.stack([b64, d_norm.double(), a64, torch.linalg.vector_norm(after, dim=1).double()])


def as_floats(norms: list[torch.Tensor] | tuple[torch.Tensor, ...]) -> list[float]:
    """0-d norms as Python floats, in one transfer (float32 ones stacked as they are: a call per norm to make
    each float32 costs more than the norms themselves on a small model)."""
    if all(n.dtype == torch.float32 for n in norms):
        return torch.stack(norms).cpu().tolist()
    return torch.stack([n.float() for n in norms]).cpu().tolist()


def as_float64(norms: list[torch.Tensor] | tuple[torch.Tensor, ...]) -> np.ndarray:
    """0-d norms as one float64 numpy array, in one transfer (from any device)."""
    return torch.stack(norms).double().cpu().numpy()


def block_update_ratios(base: list[float], delta: list[float], sizes: list[int]) -> np.ndarray:
    """(blocks,) float32: ||w_after - w_before|| / ||w_before|| over each block's parameters, from each parameter's
    norm before (`base`) and of its change (`delta`), the blocks' parameters consecutive, `sizes[i]` of them in
    block i; NaN for a block whose weights were all 0."""
    out = np.zeros(len(sizes), np.float32)
    start = 0
    for i, size in enumerate(sizes):
        d = sum(x * x for x in delta[start : start + size])
        b = sum(x * x for x in base[start : start + size])
        out[i] = math.sqrt(d / b) if b > 0 else math.nan
        start += size
    return out


class UpdateRatio:
    """||delta w|| / ||w|| per block across one optimizer step: `before()` then `after()`; `after()` also
    leaves each block's largest angular update of its weight matrices in `angular` (L,), radians. The copies
    and their norms are WeightCopies'."""

    def __init__(self, model: TinyLM) -> None:
        self.blocks = [list(b.parameters()) for b in model.blocks]
        params = [p for ps in self.blocks for p in ps]
        index = {id(p): i for i, p in enumerate(params)}
        # (L, 6) positions in `params` of each block's PARAM_NAMES matrices
        self.matrix_index = np.array(
            [[index[id(b.get_submodule(n).weight)] for n in PARAM_NAMES] for b in model.blocks], np.int64
        ).reshape(len(model.blocks), len(PARAM_NAMES))
        self.angular = np.full(len(self.blocks), np.nan, np.float32)
        self.copies = WeightCopies(params)

    def before(self) -> None:
        self.copies.take()

    def after(self) -> np.ndarray:
        """(L,) float32; `angular` set too."""
        base, delta, turned = self.copies.norms(angles=True)
        angles = np.array(turned)[self.matrix_index.reshape(-1)]
        self.angular = angles.reshape(self.matrix_index.shape).max(axis=1).astype(np.float32)  # NaN when any is
        return block_update_ratios(base, delta, [len(ps) for ps in self.blocks])


@torch.no_grad()
def angular_updates(
    before: list[torch.Tensor], after: list[torch.Tensor], before_norms: np.ndarray | None = None
) -> np.ndarray:
    """The angle in radians between each pair of tensors (as flat vectors), arccos of their cosine,
    computed as 2 asin(|a/|a| - b/|b|| / 2) (exact near 0, where arccos loses half the digits); NaN where
    either is zero or not finite. float32 (N,). `before_norms`: the `before` tensors' norms when already
    computed (torch._foreach_norm's, as float64), one pass over them fewer."""
    nb = as_float64(torch._foreach_norm(before)) if before_norms is None else before_norms
    na = as_float64(torch._foreach_norm(after))
    ok = (nb > 0) & (na > 0) & np.isfinite(nb) & np.isfinite(na)
    sb, sa = np.where(ok, nb, 1.0).tolist(), np.where(ok, na, 1.0).tolist()
    diff = torch._foreach_div(after, sa)
    torch._foreach_sub_(diff, torch._foreach_div(before, sb))
    chord = as_float64(torch._foreach_norm(diff))
    angles = 2 * np.arcsin(np.clip(chord / 2, 0.0, 1.0))
    return np.where(ok, angles, np.nan).astype(np.float32)


def adam_second_moments(opt: object, params: list[torch.Tensor]) -> list[tuple[torch.Tensor, float, float] | None]:
    """For each parameter, (exp_avg_sq, the bias correction 1 - beta2^t of its step count t, Adam's eps) from
    ln_viz.optim.Adam or a torch.optim Adam/AdamW; None where the optimizer keeps no second moment for it
    (SGD, Muon, a parameter not stepped yet)."""
    if hasattr(opt, "exp_avg_sq") and hasattr(opt, "steps"):  # ln_viz.optim.Adam
        index = {id(p): i for i, p in enumerate(opt.params)}
        beta2, eps = opt.betas[1], opt.eps
        found = [index.get(id(p)) for p in params]
        return [
            (opt.exp_avg_sq[i], 1 - beta2 ** opt.steps[i], eps) if i is not None and opt.steps[i] > 0 else None
            for i in found
        ]
    state, out = getattr(opt, "state", {}), []
    group_of = {id(p): g for g in getattr(opt, "param_groups", []) for p in g["params"]}
    for p in params:
        st, group = state.get(p, {}), group_of.get(id(p), {})
        if "exp_avg_sq" in st and "betas" in group and float(st.get("step", 0)) > 0:
            out.append((st["exp_avg_sq"], 1 - group["betas"][1] ** float(st["step"]), group["eps"]))
        else:
            out.append(None)
    return out


class PreconditionerLag:
    """Per block, the largest |g| / (sqrt(v_hat) + eps) over its weight matrices' elements, after a step."""

    def __init__(self, model: TinyLM) -> None:
        self.shape = (len(model.blocks), len(PARAM_NAMES))
        self.matrices = [b.get_submodule(n).weight for b in model.blocks for n in PARAM_NAMES]

    @torch.no_grad()
    def measure(self, opt: object) -> np.ndarray:
        """(L,) float32; NaN for a block with a matrix the optimizer keeps no second moment for. The matrices
        of one size go side by side into a (k, n) buffer, so each step of the arithmetic is one call per size
        (18 calls for ln-viz's 6 x 64 model where the _foreach calls made ~220)."""
        moments = adam_second_moments(opt, self.matrices)
        have = [k for k, m in enumerate(moments) if m is not None and self.matrices[k].grad is not None]
        out = np.full(len(self.matrices), np.nan)
        by_size: dict[tuple[int, torch.dtype, torch.device], list[int]] = {}
        for k in have:
            v = moments[k][0]
            by_size.setdefault((v.numel(), v.dtype, v.device), []).append(k)
        for (_, dtype, device), ks in by_size.items():
            root = torch.stack([moments[k][0].reshape(-1) for k in ks]).sqrt_()
            bias = torch.tensor([moments[k][1] ** 0.5 for k in ks], dtype=dtype, device=device)
            eps = torch.tensor([moments[k][2] for k in ks], dtype=dtype, device=device)
            denom = torch.addcdiv(eps[:, None], root, bias[:, None], out=root)  # sqrt(v) / sqrt(1 - b2^t) + eps
            ratio = torch.stack([self.matrices[k].grad.reshape(-1) for k in ks]).div_(denom)
            # |g| / d is |g / d| (d > 0): the larger of the largest and minus the smallest, without an abs pass
            out[ks] = torch.maximum(ratio.amax(dim=1), ratio.amin(dim=1).neg_()).double().cpu().numpy()
        return out.reshape(self.shape).max(axis=1).astype(np.float32)  # NaN when any matrix's is


class GradNorms:
    """Every parameter's gradient norm in one batched call, and the views of them ln-viz reports."""

    def __init__(self, model: TinyLM) -> None:
        self.params = list(model.parameters())
        index = {id(p): i for i, p in enumerate(self.params)}
        self.matrix_index = np.array(
            [[index[id(block.get_submodule(n).weight)] for n in PARAM_NAMES] for block in model.blocks], np.int64
        ).reshape(len(model.blocks), len(PARAM_NAMES))
        self.block_index = [np.array([index[id(p)] for p in block.parameters()], np.int64) for block in model.blocks]
        self.norms = np.zeros(len(self.params))

    @torch.no_grad()
    def measure(self) -> float:
        """Norm of each parameter's gradient (kept in `norms`, float64; a missing gradient counts 0), and
        the total norm of all gradients together, returned (NaN or inf when any gradient is)."""
        grads = [p.grad for p in self.params if p.grad is not None]
        if len(grads) == len(self.params):
            self.norms = as_float64(torch._foreach_norm(grads))
        else:
            self.norms = np.array([float(p.grad.norm()) if p.grad is not None else 0.0 for p in self.params])
        return float(np.sqrt(np.square(self.norms).sum()))

    def per_matrix(self) -> np.ndarray:
        """(L, len(PARAM_NAMES)) Frobenius norms of the block weight matrices' gradients."""
        return self.norms[self.matrix_index].astype(np.float32)

    def per_block(self) -> np.ndarray:
        """(L,) norm of all of each block's gradients together."""
        return np.array([np.sqrt(np.square(self.norms[i]).sum()) for i in self.block_index], np.float32)


def grad_norms(model: TinyLM) -> tuple[np.ndarray, np.ndarray]:
    """(per block and PARAM_NAMES gradient Frobenius norms (L, 6), per block norm of all its grads (L,))."""
    norms = GradNorms(model)
    norms.measure()
    return norms.per_matrix(), norms.per_block()
