"""Adam and SGD, written out, for one reason: speed of the first step. torch.optim's optimizers import
torch._dynamo on first use (2 s of a worker's 4 s start on 2 cores, measured), and a worker that has
not finished starting is what a visitor waits for after pressing Start. The arithmetic is torch's own
(torch/optim/adam.py, the multi-tensor path without amsgrad or capturable state), in the same order,
so the updates are identical to torch.optim.Adam's (tests/test_optim.py compares them bit for bit), and
with `weight_decay` to torch.optim.AdamW's: decoupled, p *= 1 - lr * weight_decay before the update
(SGD decays the same way, decoupled, not torch.optim.SGD's L2 term). The interface is the part of
torch.optim.Optimizer that ln-viz uses: `param_groups` (the
trainer sets each step's learning rate there), `zero_grad(set_to_none=True)`, `step()`.

`Adam(..., init="gi")` is GI-Adam (Kalra & Barkeshli 2024, arXiv 2406.09405): the second moment starts at the first
gradient squared, v0 = g0^2, instead of 0; every other line is Adam's, bias correction included. The first update
is then lr * sqrt(1 - beta2) * g / |g| (0.14 lr at beta2 0.98) where Adam's is lr * g / |g|, and it grows towards
Adam's over about 1 / (1 - beta2) steps as the bias correction fades: a warm-up built into the optimizer.

`Muon` is torch.optim.Muon's arithmetic written out the same way (torch/optim/_muon.py, `_single_tensor_muon`; the
test compares them bit for bit): Nesterov momentum 0.95, then the update matrix orthogonalised by five
Newton-Schulz steps (singular values pushed towards 1), decoupled weight decay, and the step
lr * 0.2 * sqrt(max(rows, cols)) (`adjust_lr_fn="match_rms_adamw"`, Moonshot's "Muon is Scalable", arXiv
2502.16982: the update's RMS then matches AdamW's, so Adam's lr and weight decay carry over). It takes 2-D
matrices only; `MuonAdam` is what the papers train with: Muon on the blocks' matrices, Adam on the rest.
One difference by default: torch runs Newton-Schulz in bfloat16, a GPU's fast type; on a CPU bfloat16 matrix
products are about 8x slower than float32 ones (64 x 256: 190 against 24 ms on a busy 2-core box), which made a
Muon step 3-5x an Adam step. So `ns_dtype` None means bfloat16 on CUDA and float32 on the CPU (torch's bfloat16
when asked for: the bit-for-bit test)."""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch


class _Optimizer:
    def __init__(self, params: Iterable[torch.Tensor], lr: float, weight_decay: float = 0.0) -> None:
        self.params = [p for p in params if p.requires_grad]
        self.param_groups = [{"params": self.params, "lr": lr}]
        self.weight_decay = weight_decay

    @property
    def lr(self) -> float:
        return self.param_groups[0]["lr"]

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad.zero_()

    def _with_grads(self) -> tuple[list[torch.Tensor], list[torch.Tensor], list[int]]:
        idx = [i for i, p in enumerate(self.params) if p.grad is not None]
        return [self.params[i] for i in idx], [self.params[i].grad for i in idx], idx

    def _decay(self, params: list[torch.Tensor]) -> None:
        """Decoupled weight decay, as torch.optim.AdamW: every parameter with a gradient shrinks first."""
        if self.weight_decay:
            torch._foreach_mul_(params, 1 - self.lr * self.weight_decay)


class SGD(_Optimizer):
    """Plain stochastic gradient descent: p -= lr * grad."""

    @torch.no_grad()
    def step(self) -> None:
        params, grads, _ = self._with_grads()
        if params:
            self._decay(params)
            torch._foreach_add_(params, grads, alpha=-self.lr)


class Adam(_Optimizer):
    """Adam (Kingma & Ba 2015) with bias correction, as torch.optim.Adam computes it; `init` "gi": GI-Adam, the
    second moment of each parameter starting at its first gradient squared."""

    def __init__(
        self,
        params: Iterable[torch.Tensor],
        lr: float,
        betas: tuple[float, float],
        eps: float,
        weight_decay: float = 0.0,
        init: str = "zero",
    ) -> None:
        super().__init__(params, lr, weight_decay)
        self.betas, self.eps, self.init = betas, eps, init
        self.exp_avg = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in self.params]
        self.exp_avg_sq = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in self.params]
        self.steps = [0] * len(self.params)

    @torch.no_grad()
    def step(self) -> None:
        params, grads, idx = self._with_grads()
        if not params:
            return
        beta1, beta2 = self.betas
        exp_avg = [self.exp_avg[i] for i in idx]
        exp_avg_sq = [self.exp_avg_sq[i] for i in idx]
        if self.init == "gi":  # v0 = g0^2: a parameter's first gradient, before its first update
            for k, i in enumerate(idx):
                if self.steps[i] == 0:
                    torch.mul(grads[k], grads[k], out=exp_avg_sq[k])
        for i in idx:
            self.steps[i] += 1
        self._decay(params)
        torch._foreach_lerp_(exp_avg, grads, 1 - beta1)
        torch._foreach_mul_(exp_avg_sq, beta2)
        torch._foreach_addcmul_(exp_avg_sq, grads, grads, 1 - beta2)
        # per tensor, as torch does: parameters that missed a step have their own step count
        bias_correction1 = [1 - beta1 ** self.steps[i] for i in idx]
        bias_correction2 = [1 - beta2 ** self.steps[i] for i in idx]
        step_size = [(self.lr / bc) * -1 for bc in bias_correction1]
        bias_correction2_sqrt = [bc**0.5 for bc in bias_correction2]
        denom = torch._foreach_sqrt(exp_avg_sq)
        torch._foreach_div_(denom, bias_correction2_sqrt)
        torch._foreach_add_(denom, self.eps)
        torch._foreach_addcdiv_(params, exp_avg, denom, step_size)


# torch.optim.Muon's defaults (Keller Jordan's quintic Newton-Schulz coefficients and step count)
MUON_MOMENTUM = 0.95
NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)
NS_STEPS = 5
NS_EPS = 1e-7


def orthogonalise(g: torch.Tensor, dtype: torch.dtype = torch.bfloat16, steps: int = NS_STEPS) -> torch.Tensor:
    """Newton-Schulz's approximate U V^T of g = U S V^T (singular values land in about 0.5-1.5), in `dtype`, as
    torch.optim.Muon computes it: g is divided by its Frobenius norm first, so its spectral norm is at most 1."""
    a, b, c = NS_COEFFICIENTS
    x = g.to(dtype, copy=True)
    tall = g.size(0) > g.size(1)
    if tall:
        x = x.T
    x.div_(x.norm().clamp(min=NS_EPS))
    for _ in range(steps):
        gram = x @ x.T
        x = torch.addmm(x, torch.addmm(gram, gram, gram, beta=b, alpha=c), x, beta=a)
    return x.T if tall else x


class Muon(_Optimizer):
    """Muon (Jordan et al. 2024) with torch.optim.Muon's defaults and `adjust_lr_fn="match_rms_adamw"`: 2-D
    matrices only."""

    def __init__(
        self, params: Iterable[torch.Tensor], lr: float, weight_decay: float = 0.0, ns_dtype: torch.dtype | None = None
    ) -> None:
        super().__init__(params, lr, weight_decay)
        if any(p.ndim != 2 for p in self.params):
            raise ValueError("Muon updates 2-D matrices only")
        cuda = any(p.is_cuda for p in self.params)
        self.ns_dtype = ns_dtype or (torch.bfloat16 if cuda else torch.float32)
        self.momentum = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in self.params]

    @torch.no_grad()
    def step(self) -> None:
        params, grads, idx = self._with_grads()
        mu = MUON_MOMENTUM
        for p, g, i in zip(params, grads, idx):
            buf = self.momentum[i]
            buf.lerp_(g, 1 - mu)
            update = orthogonalise(g.lerp(buf, mu), self.ns_dtype)  # Nesterov
            p.mul_(1 - self.lr * self.weight_decay)
            p.add_(update, alpha=-self.lr * 0.2 * math.sqrt(max(p.shape)))


class MuonAdam:
    """Muon on `matrices`, Adam on `rest`: one optimizer to the trainer. Its two param groups are the two inner
    optimizers' own, so setting each group's lr (the trainer's schedule) drives both."""

    def __init__(self, muon: Muon, adam: Adam) -> None:
        self.muon, self.adam = muon, adam
        self.param_groups = [muon.param_groups[0], adam.param_groups[0]]

    @property
    def lr(self) -> float:
        return self.param_groups[0]["lr"]

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.muon.zero_grad(set_to_none)
        self.adam.zero_grad(set_to_none)

    def step(self) -> None:
        self.muon.step()
        self.adam.step()
