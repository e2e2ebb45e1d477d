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


class UpdateRatio:
    """||delta w|| / ||w|| per block across one optimizer step: `before()` then `after()`; `after()` also
    leaves each block's largest angular update of its weight matrices in `angular` (L,), radians.

    The copies before the step live in buffers laid out by size (the block parameters of one size side by
    side, a (k, n) block, as attach's WeightCopies), so the copy is one stack per size and each norm,
    difference and angle one call per size rather than one per parameter (a _foreach call on the CPU is a
    loop of per-tensor calls): 12 calls for ln-viz's 6 x 64 model where there were ~400."""

    def __init__(self, model: TinyLM) -> None:
        self.blocks = [list(b.parameters()) for b in model.blocks]
        self.params = [p for ps in self.blocks for p in ps]
        index = {id(p): i for i, p in enumerate(self.params)}
        # (L, 6) positions in `params` of each block's PARAM_NAMES matrices
        self.matrix_index = np.array(
            [[index[id(b.get_submodule(n).weight)] for n in PARAM_NAMES] for b in model.blocks], np.int64
        ).reshape(len(model.blocks), len(PARAM_NAMES))
        self.angular = np.full(len(self.blocks), np.nan, np.float32)
        by_size: dict[int, list[int]] = {}
        for i, p in enumerate(self.params):
            by_size.setdefault(p.numel(), []).append(i)
        self._groups = list(by_size.values())  # the params' indices, size by size
        self._copies: list[torch.Tensor] = []  # per size: (k, n) the weights before the step
        self._scratch: list[torch.Tensor] = []

    def _rows(self, group: list[int]) -> list[torch.Tensor]:
        return [self.params[i].detach().reshape(-1) for i in group]

    @torch.no_grad()
    def before(self) -> None:
        p = self.params[0]
        if not self._copies or self._copies[0].device != p.device or self._copies[0].dtype != p.dtype:
            self._copies = [p.new_empty(len(g), self.params[g[0]].numel()) for g in self._groups]
            self._scratch = [torch.empty_like(c) for c in self._copies]
        for g, copy in zip(self._groups, self._copies):
            torch.stack(self._rows(g), out=copy)

    @torch.no_grad()
    def after(self) -> np.ndarray:
        """(L,) float32; `angular` set too. Per parameter: its norm before (nb) and after (na) and the norm of
        the difference d = after - before, then the chord |after/na - before/nb| from d, as d / na + before
        (1 / na - 1 / nb) (the same vector, one buffer fewer); the angle 2 asin(chord / 2)."""
        n = len(self.params)
        nb, na, nd, chord = (np.zeros(n) for _ in range(4))
        for g, before, diff in zip(self._groups, self._copies, self._scratch):
            torch.stack(self._rows(g), out=diff)
            b_norm, a_norm = torch.linalg.vector_norm(before, dim=1), torch.linalg.vector_norm(diff, dim=1)
            diff.sub_(before)
            d_norm = torch.linalg.vector_norm(diff, dim=1)
            b64, a64 = b_norm.double(), a_norm.double()
            ok = (b64 > 0) & (a64 > 0)
            inv_a = torch.where(ok, 1 / a64, 0.0)
            scale = torch.where(ok, inv_a - 1 / b64, 0.0)
            diff.mul_(inv_a.to(diff.dtype)[:, None]).addcmul_(before, scale.to(diff.dtype)[:, None])
            rows = torch.stack([b64, a64, d_norm.double(), torch.linalg.vector_norm(diff, dim=1).double()])
            nb[g], na[g], nd[g], chord[g] = rows.cpu().numpy()
        out = np.zeros(len(self.blocks), np.float32)
        start = 0
        for i, ps in enumerate(self.blocks):
            d, b = np.square(nd[start : start + len(ps)]).sum(), np.square(nb[start : start + len(ps)]).sum()
            out[i] = math.sqrt(d / b) if b > 0 else float("nan")
            start += len(ps)
        m = self.matrix_index.reshape(-1)
        ok = (nb[m] > 0) & (na[m] > 0) & np.isfinite(nb[m]) & np.isfinite(na[m])
        angles = np.where(ok, 2 * np.arcsin(np.clip(chord[m] / 2, 0.0, 1.0)), np.nan)
        self.angular = angles.reshape(self.matrix_index.shape).max(axis=1).astype(np.float32)  # NaN when any is
        return out


@torch.no_grad()
def angular_updates(
    before: list[torch.Tensor], after: list[torch.Tensor], before_norms: np.ndarray | None = None
) -> np.ndarray:
    """The angle in radians between each pair of tensors (as flat vectors), arccos of their cosine,
    computed as 2 asin(|a/|a| - b/|b|| / 2) (exact near 0, where arccos loses half the digits); NaN where
    either is zero or not finite. float32 (N,). `before_norms`: the `before` tensors' norms when already
    computed (torch._foreach_norm's, as float64), one pass over them fewer."""
    nb = torch.stack(torch._foreach_norm(before)).double().numpy() if before_norms is None else before_norms
    na = torch.stack(torch._foreach_norm(after)).double().numpy()
    ok = (nb > 0) & (na > 0) & np.isfinite(nb) & np.isfinite(na)
    sb, sa = np.where(ok, nb, 1.0).tolist(), np.where(ok, na, 1.0).tolist()
    diff = torch._foreach_div(after, sa)
    torch._foreach_sub_(diff, torch._foreach_div(before, sb))
    chord = torch.stack(torch._foreach_norm(diff)).double().numpy()
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
            self.norms = torch.stack(torch._foreach_norm(grads)).double().numpy()
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
