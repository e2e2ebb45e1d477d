"""What is measured inside the model, and how cheaply.

Probes attach forward hooks at named modules only for the steps they measure, summarise each tensor
at once into a few numbers and a fixed-edge histogram (numpy), and always remove their hooks: the
model never knows it is watched, and no tensor outlives its step.

Per block, at a probe step (each array's shape, unit and meaning are in ln_viz.schema.PROBES):
- `resid_hist`, `resid_stats`: the residual stream after the block (what flows into the next block);
- `norm_in_hist`, `norm_in_stats`: the input of each norm in the block (for Post-LN the sum x + F(x));
- `grad_norm`, `block_grad_norm`: gradient norms, in ln_viz.update_probes (GradNorms);
- `attn_entropy`: mean entropy (nats) of the attention distributions, over heads and positions of the
  first ENTROPY_SEQUENCES (8) sequences of the step's batch (all of them for smaller batches), from the
  scores the model's forward computes anyway on a probe step for the per-head largest logit
  (model.head_logit_max, which hands them to the probe): a softmax over the whole batch would cost more
  than the rest of the probes;
- `attn_logit_max`: the largest |q.k|/sqrt(hs) among those same scores (after QK-norm when it is on);
- `logz_stats`: the stats of log Z = logsumexp of the output logits, one value per token of the batch;
- `massive_act`: the residual stream's largest |h| over its median |h| (torch's median: the lower
  middle value of an even count), from the max the stats already hold and one median;
- `dyt_saturation`: the fraction of a DyT norm's inputs with |alpha x| > 2 (tanh past 0.96, where its
  gradient is under 0.07); NaN for the other norms;
- `update_ratio`, `angular_update`, `precond_lag`: across the optimizer step, in ln_viz.update_probes;
- `norm_in_min_rms` (Odonnat et al. 2024): per norm, the smallest over the batch's tokens of the scale
  the norm divides by: a LayerNorm input's per-token std (population, as LayerNorm's variance; its
  Jacobian scales as 1 / sigma, so the smallest sigma is where its curvature spikes; eps 1e-5 is left
  out), an RMSNorm's (or DyT's) per-token RMS sqrt(mean(x^2)). A LayerNorm's sigma comes from the
  1 / sqrt(var + eps) its forward saves for the backward, where it has one (sigma_from_rstd).

A tensor seen by two hooks (Pre-LN's residual stream is both a block's output and the next block's first
norm input) is summarised once.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Iterator

import numpy as np
import torch
from torch import nn

from ln_viz.model import SCORE_CHUNK, DyT, TinyLM, head_logit_max
from ln_viz.schema import HIST_BINS, PARAM_NAMES, STAT_NAMES, blank_probes, probe_dims, probes_from
from ln_viz.summaries import StepSummaries, tensor_stats
from ln_viz.update_probes import GradNorms, UpdateRatio, grad_norms  # noqa: F401 (their old home: tests import them here)

# Masked attention scores: a finite stand-in for -inf (adding it to a finite score gives it exactly); softmax_entropy
# floors it at EXP_FLOOR, so a masked entry weighs e^-80 / Z (under 1.4e-33 nats), and -inf * 0 never makes a NaN.
MASKED = -1e30


def attention_entropy(q: torch.Tensor, k: torch.Tensor, heads: int) -> float:
    """Mean entropy in nats of causal softmax(q k^T / sqrt(hs)) over batch, heads and positions."""
    return attention_summary(q, k, heads)[0]


def attention_summary(q: torch.Tensor, k: torch.Tensor, heads: int) -> tuple[float, float]:
    """(mean entropy in nats of causal softmax(q k^T / sqrt(hs)) over batch, heads and positions, the
    largest |score| among the causal ones) of q, k (B, T, d): the scores as the model's head_logit_max
    computes them, summarised by scores_summary (what the probe gets from the model's own forward)."""
    B, T, d = q.shape
    hs = d // heads
    q, k = (t.reshape(B, T, heads, hs).transpose(1, 2) for t in (q, k))
    out: list[tuple[float, float]] = []
    head_logit_max(q, k, lambda scores, largest: out.append(scores_summary(scores, largest, hs)), chunk=B)
    return out[0]


def scores_summary(scores: torch.Tensor, largest: torch.Tensor, hs: int) -> tuple[float, float]:
    """(mean entropy in nats of causal softmax(s / sqrt(hs)) over batch, heads and positions, the largest
    |s| / sqrt(hs)) from head_logit_max's unscaled scores s (B, nh, T, T), their masked triangle 0 (overwritten
    here), and its per-sequence, per-head largest |s| (B, nh). The scaled, masked scores z are one pass (the mask
    added as 0 or MASKED), then softmax_entropy's one exp pass, as attach's (ln_viz.byom.attention)."""
    B, nh, T, _ = scores.shape
    z = torch.add(_causal_bias(T, scores.device), scores, alpha=1.0 / math.sqrt(hs), out=scores)
    top = float(largest.amax() / math.sqrt(hs))  # the heads' largest, when B <= 8
    _, total = softmax_entropy(z, shift=not top <= UNSHIFTED)  # causal: every row sees its own position
    return total / (B * nh * T), top


# softmax_entropy's floor on the scores shifted by their row's max: exp(-80) = 1.8e-35 is a normal float32, and
# torch's exp of what lies far below it (the masked -1e30: 35x; -88 and under, whose exp is subnormal: 100x) takes
# a slow path (0.03 ms against 1.0 and 3.0 a layer at 8 x 4 x 64 x 64, one thread)
EXP_FLOOR = -80.0


# scores whose entries attended to all lie within +-UNSHIFTED need no shift by their row's max (softmax_entropy's
# `shift`): e^+-30 (1e13, 9e-14) are normal float32 values, and a row of a million of them sums far under the largest
UNSHIFTED = 30.0


def softmax_entropy(z: torch.Tensor, probs: bool = False, shift: bool = True) -> tuple[torch.Tensor | None, float]:
    """(p = softmax(z) over the last axis when `probs`, else None; the sum over its rows of -sum p log p in nats)
    of scores z whose masked entries are a large finite negative, shifted in place by each row's max and floored at
    EXP_FLOOR. One exp pass: with z' = z - max_row <= 0, e = exp(z') and Z = sum e, p = e / Z and log p = z' - log Z,
    so -sum p log p = log Z - sum(e z') / Z, two terms >= 0 (Z >= 1, e z' <= 0). An entry under the floor (a masked
    one; a p under e^-80 / Z) counts as e^-80: at most 80 * e^-80 = 1.4e-33 nats an entry. Against a softmax and
    the largest p (torch's softmax is three passes), 0.06 ms less a layer at 8 x 4 x 64 x 64, one thread. ln-viz's
    own attention probe and attach's (ln_viz.byom.attention) both take their entropy here.

    `shift` False: the caller vouches that every row has an entry to attend to and that those are all within
    +-UNSHIFTED (the rest MASKED), so z' = z (the same formula; the max's pass and the subtraction's left out: 0.065
    ms less a layer at 8 x 4 x 64 x 64, one thread) and a masked entry's exp is 0 (the floor kept, unshifted, where
    the exp is torch's: its exp of -1e30 is 35x slower). Unshifted, each row's two terms are about its largest score
    in size, so a row's entropy is only good to a few ulps of that (~4e-6 nats at 30): where the mean over the rows
    comes out under SHIFTED_BELOW (attention close to one-hot, where that error is a large part of it or could take
    it below 0), it is taken again shifted."""
    if shift:
        z.sub_(z.amax(-1, keepdim=True)).clamp_(min=EXP_FLOOR)
    elif not _numpy_exp(z):
        z.clamp_(min=EXP_FLOOR)
    e = _exp(z)
    total_e = e.sum(-1)
    rows = total_e.log().sub_(torch.linalg.vecdot(e, z).div_(total_e))  # each row's entropy
    total = float(rows.sum(dtype=torch.float64))
    if not shift and not total >= SHIFTED_BELOW * rows.numel():  # z is as it came (the masked ones maybe floored)
        return softmax_entropy(z, probs, shift=True)
    return (e.div_(total_e.unsqueeze(-1)) if probs else None), total


# softmax_entropy unshifted: a mean entropy under this many nats is taken again shifted (unshifted, its error of a
# few ulps of the largest score, ~4e-6 nats at 30, would be over 4e-5 of it)
SHIFTED_BELOW = 0.1


def _exp(z: torch.Tensor) -> torch.Tensor:
    """exp(z), a new tensor: numpy's for a contiguous float32 CPU tensor where torch runs on at most two threads (its
    SIMD exp, one thread, 2.2-2.7x faster than torch's per thread: 73 against 154 us at 8 x 4 x 64 x 64, and 80 us for
    torch's on two; the two 1.7e-7 relative apart at most), else torch's (on more threads it wins on large tensors)."""
    if not _numpy_exp(z):
        return torch.exp(z)
    with np.errstate(under="ignore"):  # the masked scores' exp is 0 unshifted, whatever np.seterr the user set
        return torch.from_numpy(np.exp(z.numpy()))


def _numpy_exp(z: torch.Tensor) -> bool:
    """Whether _exp takes numpy's exp for `z`: a contiguous float32 CPU tensor, torch on at most two threads."""
    return (
        z.device.type == "cpu" and z.dtype == torch.float32 and z.is_contiguous() and not z.requires_grad
        and torch.get_num_threads() <= 2
    )  # fmt: skip


@functools.lru_cache(maxsize=8)
def _causal_bias(T: int, device: torch.device) -> torch.Tensor:
    """(T, T) 0 where a query sees the key (on and below the diagonal), MASKED above."""
    return torch.full((T, T), MASKED, device=device).triu_(1)


def _saturated(x: torch.Tensor, alpha: float) -> float:
    """The fraction of x with |alpha * x| > 2 (float32 arithmetic, as DyT's tanh input is computed)."""
    a = x.detach().float().reshape(-1).cpu().numpy()
    return np.count_nonzero(np.abs(a * np.float32(alpha)) > 2) / a.size


def sigma_from_rstd(out: torch.Tensor, eps: float) -> float | None:
    """min_token_scale(x, centred=True) of a LayerNorm's input x from its output `out`, with no pass over x: the
    largest 1 / sqrt(var + eps) the forward saved for its backward, sigma = sqrt(1 / rstd^2 - eps). None (compute
    it from x) without that node (no grad) or where a token's var < eps (rstd's rounding then costs digits)."""
    fn = out.grad_fn
    if type(fn).__name__ != "NativeLayerNormBackward0":
        return None
    r = float(fn._saved_result2.amax())
    var = 1.0 / (r * r) - eps  # float64; rstd within an ulp of float32: sigma within ~1e-7 relative where var >= eps
    return math.sqrt(var) if var >= eps else None  # NaN, inf and tiny spreads: the exact way


@torch.no_grad()
def min_token_scale(x: torch.Tensor, centred: bool) -> float:
    """The smallest over tokens (all but the last axis) of each token's std (`centred`: population, as
    LayerNorm's) or RMS sqrt(mean(x^2)) over its features; NaN if x holds a NaN."""
    x = x.detach().float()
    if centred:  # torch.var over a short last axis is 17x slower than this (1.2 ms against 0.07 at 32 x 64 x 64)
        x = x - x.mean(dim=-1, keepdim=True)
    smallest = float(torch.linalg.vector_norm(x, dim=-1).amin()) / math.sqrt(x.shape[-1])
    return smallest if not math.isnan(smallest) else math.nan


# attention entropy is measured on the first this-many sequences of the batch: among the first chunk of scores the
# model's head_logit_max computes (at least SCORE_CHUNK sequences), the one it hands to the probe
ENTROPY_SEQUENCES = SCORE_CHUNK


class ActivationProbe:
    """Forward hooks on the blocks, their norms and attention projections, summarising on the fly."""

    def __init__(self, model: TinyLM) -> None:
        self.model = model
        self.norm_names = model.norm_names()
        dims = probe_dims(
            len(model.blocks), len(self.norm_names), len(PARAM_NAMES), HIST_BINS, len(STAT_NAMES), model.cfg.heads
        )
        # the schema's forward-pass arrays, filled in place by the hooks (attn_logit_max_head: by the trainer)
        self.arrays = blank_probes(dims, probes_from("forward"))
        self.resid_hist = self.arrays["resid_hist"]
        self.resid_stats = self.arrays["resid_stats"]
        self.norm_in_hist = self.arrays["norm_in_hist"]
        self.norm_in_stats = self.arrays["norm_in_stats"]
        self.attn_entropy = self.arrays["attn_entropy"]
        self.input_stats = self.arrays["input_stats"]  # x_0: embeddings into block 1
        self.attn_logit_max = self.arrays["attn_logit_max"]
        self.logz_stats = self.arrays["logz_stats"]
        self.massive_act = self.arrays["massive_act"]
        self.dyt_saturation = self.arrays["dyt_saturation"]
        self.dyt_saturation.fill(np.nan)  # stays NaN where a norm is not DyT
        self.norm_in_min_rms = self.arrays["norm_in_min_rms"]
        self._summaries = StepSummaries()  # the pass's tensors, summarised as they come, finished when it ends
        self._handles: list[torch.utils.hooks.RemovableHandle] = []

    def attach(self) -> None:
        blocks = self.model.blocks
        self._handles.append(blocks[0].register_forward_pre_hook(self._on_input))
        for i, block in enumerate(blocks):
            self._handles.append(block.register_forward_hook(self._on_block(i)))
            for j, name in enumerate(self.norm_names):
                norm = block.get_submodule(name)
                self._handles.append(norm.register_forward_pre_hook(self._on_norm(i, j)))
                if isinstance(norm, nn.LayerNorm):  # its smallest sigma from what its forward saved
                    self._handles.append(norm.register_forward_hook(self._on_layernorm(i, j)))
            block.attn.scores_seen = self._on_scores(i)  # the scores the dot product sees (after QK-norm)
        self._handles.append(self.model.head.register_forward_hook(self._on_logits))

    def detach(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles.clear()
        for block in self.model.blocks:
            block.attn.scores_seen = None
        self._summaries.finish(self.arrays)

    def _on_input(self, module: nn.Module, args: tuple) -> None:
        self._summaries.add(self.arrays, args[0], ("input_stats", ()))

    def _on_block(self, i: int):
        def hook(module: nn.Module, args: tuple, out: torch.Tensor) -> None:
            # its max |h| over its median |h| too (NaN at a diverged step, where the median is)
            self._summaries.add(self.arrays, out, ("resid_stats", i), ("resid_hist", i), massive=i)

        return hook

    def _on_norm(self, i: int, j: int):
        def hook(module: nn.Module, args: tuple) -> None:
            self._summaries.add(self.arrays, args[0], ("norm_in_stats", (i, j)), ("norm_in_hist", (i, j)))
            if isinstance(module, DyT):
                self.dyt_saturation[i, j] = _saturated(args[0], float(module.alpha.detach()))
            if not isinstance(module, nn.LayerNorm):
                self.norm_in_min_rms[i, j] = min_token_scale(args[0], centred=False)

        return hook

    def _on_layernorm(self, i: int, j: int):
        def hook(module: nn.LayerNorm, args: tuple, out: torch.Tensor) -> None:
            sigma = sigma_from_rstd(out, module.eps)
            self.norm_in_min_rms[i, j] = sigma if sigma is not None else min_token_scale(args[0], centred=True)

        return hook

    def _on_scores(self, i: int):
        hs = self.model.cfg.d_model // self.model.cfg.heads

        def seen(scores: torch.Tensor, largest: torch.Tensor) -> None:
            n = ENTROPY_SEQUENCES
            self.attn_entropy[i], self.attn_logit_max[i] = scores_summary(scores[:n], largest[:n], hs)

        return seen

    def _on_logits(self, module: nn.Module, args: tuple, out: torch.Tensor) -> None:
        with torch.no_grad():
            self.logz_stats[:] = tensor_stats(torch.logsumexp(out.detach().float(), dim=-1))


@contextlib.contextmanager
def watch(model: TinyLM) -> Iterator[ActivationProbe]:
    """Attach activation probes for the forward passes inside the `with`; always removed after."""
    probe = ActivationProbe(model)
    probe.attach()
    try:
        yield probe
    finally:
        probe.detach()
