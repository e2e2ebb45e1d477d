"""What is measured inside the model, and how cheaply.

Probes attach forward hooks at named modules only for the steps they measure, summarise each tensor
at once into a few numbers and a fixed-edge histogram (numpy), and always remove their hooks: the
model never knows it is watched, and no tensor outlives its step.

Per block, at a probe step:
- `resid_hist`, `resid_stats`: the residual stream after the block (what flows into the next block);
- `norm_in_hist`, `norm_in_stats`: the input of each norm in the block (for Post-LN the sum x + F(x));
- `grad_norm`: the Frobenius norm of the gradient of each weight matrix in PARAM_NAMES;
- `block_grad_norm`: of all the block's parameters together;
- `update_ratio`: ||w_after - w_before|| / ||w_before|| over the block's parameters;
- `attn_entropy`: mean entropy (nats) of the attention distributions, over heads and positions.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import numpy as np
import torch
from torch import nn

from ln_viz.model import PARAM_NAMES, TinyLM
from ln_viz.names import HIST_BINS, HIST_EDGES, HIST_LIMIT, STAT_NAMES  # noqa: F401 - re-exported


def tensor_summary(x: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """(histogram as fractions of all elements on HIST_EDGES, the STAT_NAMES values) of a tensor."""
    x = x.detach().float().reshape(-1)
    n = x.numel()
    hist = torch.histc(x, bins=HIST_BINS, min=-HIST_LIMIT, max=HIST_LIMIT) / n
    mean = x.mean()
    rms = x.square().mean().sqrt()
    stats = torch.stack(
        [
            mean,
            x.std(correction=0),
            rms,
            x.abs().max(),
            (x < -HIST_LIMIT).sum() / n,
            (x > HIST_LIMIT).sum() / n,
        ]
    )
    return hist.numpy().astype(np.float32), stats.numpy().astype(np.float32)


def attention_entropy(q: torch.Tensor, k: torch.Tensor, heads: int) -> float:
    """Mean entropy in nats of causal softmax(q k^T / sqrt(hs)) over batch, heads and positions."""
    B, T, d = q.shape
    q = q.view(B, T, heads, d // heads).transpose(1, 2)
    k = k.view(B, T, heads, d // heads).transpose(1, 2)
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(d // heads)  # (B, nh, T, T)
    mask = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    scores = scores.masked_fill(mask, float("-inf"))
    logp = torch.log_softmax(scores, dim=-1)
    ent = -(logp.exp() * logp.masked_fill(mask, 0.0)).sum(-1)
    return float(ent.mean())


class ActivationProbe:
    """Forward hooks on the blocks, their norms and attention projections, summarising on the fly."""

    def __init__(self, model: TinyLM) -> None:
        self.model = model
        self.norm_names = model.norm_names()
        L, n_norm = len(model.blocks), len(self.norm_names)
        self.resid_hist = np.zeros((L, HIST_BINS), np.float32)
        self.resid_stats = np.zeros((L, len(STAT_NAMES)), np.float32)
        self.norm_in_hist = np.zeros((L, n_norm, HIST_BINS), np.float32)
        self.norm_in_stats = np.zeros((L, n_norm, len(STAT_NAMES)), np.float32)
        self.attn_entropy = np.zeros(L, np.float32)
        self.input_stats = np.zeros(len(STAT_NAMES), np.float32)  # x_0: embeddings into block 1
        self._q: dict[int, torch.Tensor] = {}
        self._handles: list[torch.utils.hooks.RemovableHandle] = []

    def attach(self) -> None:
        blocks = self.model.blocks
        self._handles.append(blocks[0].register_forward_pre_hook(self._on_input))
        for i, block in enumerate(blocks):
            self._handles.append(block.register_forward_hook(self._on_block(i)))
            for j, name in enumerate(self.norm_names):
                self._handles.append(block.get_submodule(name).register_forward_pre_hook(self._on_norm(i, j)))
            self._handles.append(block.attn.q.register_forward_hook(self._on_q(i)))
            self._handles.append(block.attn.k.register_forward_hook(self._on_k(i)))

    def detach(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles.clear()
        self._q.clear()

    def _on_input(self, module: nn.Module, args: tuple) -> None:
        _, self.input_stats[:] = tensor_summary(args[0])

    def _on_block(self, i: int):
        def hook(module: nn.Module, args: tuple, out: torch.Tensor) -> None:
            self.resid_hist[i], self.resid_stats[i] = tensor_summary(out)

        return hook

    def _on_norm(self, i: int, j: int):
        def hook(module: nn.Module, args: tuple) -> None:
            self.norm_in_hist[i, j], self.norm_in_stats[i, j] = tensor_summary(args[0])

        return hook

    def _on_q(self, i: int):
        def hook(module: nn.Module, args: tuple, out: torch.Tensor) -> None:
            self._q[i] = out.detach()

        return hook

    def _on_k(self, i: int):
        def hook(module: nn.Module, args: tuple, out: torch.Tensor) -> None:
            with torch.no_grad():
                self.attn_entropy[i] = attention_entropy(self._q.pop(i), out.detach(), self.model.cfg.heads)

        return hook


@contextlib.contextmanager
def watch(model: TinyLM) -> Iterator[ActivationProbe]:
    """Attach activation probes for the forward passes inside the `with`; always removed after."""
    probe = ActivationProbe(model)
    probe.attach()
    try:
        yield probe
    finally:
        probe.detach()


@torch.no_grad()
def grad_norms(model: TinyLM) -> tuple[np.ndarray, np.ndarray]:
    """(per block and PARAM_NAMES gradient Frobenius norms (L, 6), per block norm of all its grads (L,))."""
    per_param, per_block = [], []
    for block in model.blocks:
        grads = [block.get_submodule(n).weight.grad for n in PARAM_NAMES]
        per_param.append(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
        all_grads = [p.grad for p in block.parameters() if p.grad is not None]
        per_block.append(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in all_grads])))
    return torch.stack(per_param).numpy().astype(np.float32), torch.stack(per_block).numpy().astype(np.float32)


class UpdateRatio:
    """||delta w|| / ||w|| per block across one optimizer step: `before()` then `after()`."""

    def __init__(self, model: TinyLM) -> None:
        self.model = model
        self._before: list[list[torch.Tensor]] = []

    @torch.no_grad()
    def before(self) -> None:
        self._before = [[p.detach().clone() for p in b.parameters()] for b in self.model.blocks]

    @torch.no_grad()
    def after(self) -> np.ndarray:
        out = np.zeros(len(self.model.blocks), np.float32)
        for i, (block, old) in enumerate(zip(self.model.blocks, self._before)):
            delta = sum(float((p - o).square().sum()) for p, o in zip(block.parameters(), old))
            base = sum(float(o.square().sum()) for o in old)
            out[i] = math.sqrt(delta / base) if base > 0 else float("nan")
        self._before = []
        return out
