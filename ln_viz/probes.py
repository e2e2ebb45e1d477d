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

from ln_viz.model import DyT, TinyLM, head_logit_max
from ln_viz.schema import (
    HIST_ASINH_LIMIT,
    HIST_BINS,
    HIST_LIMIT,
    PARAM_NAMES,
    STAT_NAMES,
    Stat,
    blank_probes,
    probe_dims,
    probes_from,
)
from ln_viz.update_probes import GradNorms, UpdateRatio, grad_norms  # noqa: F401 (their old home: tests import them here)

# Masked attention scores: a finite stand-in for -inf, so exp() gives exactly 0 and 0 * log 0 is 0.
_MASKED = -1e30


def tensor_summary(x: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """(histogram as fractions of all elements on HIST_EDGES, the STAT_NAMES values) of a tensor.

    Bins are [e_i, e_i+1); values below -HIST_LIMIT count in `frac_below`, values at or above
    +HIST_LIMIT in `frac_above`, so the histogram plus both fractions sum to 1 (NaNs count nowhere).
    A handful of whole-tensor passes (under 1 ms for 32 x 64 x 64 floats on one core): the histogram is
    one bincount over bin indices computed from asinh(x) (the edges are evenly spaced in it; on CPU looked up
    in a table of what that computation gives each float32), the moments are BLAS dot products.
    """
    x = x.detach().float().reshape(-1)
    n = x.numel()
    lo, hi = torch.aminmax(x)
    low, high = lo.item(), hi.item()
    if not (math.isfinite(low) and math.isfinite(high)):
        return _summary_nonfinite(x)
    # the moments as numpy float32 scalars, not 0-d tensors (a torch op costs microseconds on one, a dozen
    # of them a summary): float32 division rounds alike in both; the square roots stay torch's (its
    # vectorised sqrt may differ from numpy's by an ulp), two in one call
    mean, roots = _moments(x, n)
    fractions = _bin_fractions(x, n, max(-low, high))
    # in schema.Stat order: MEAN, STD, RMS, MAX_ABS, then FRAC_BELOW, FRAC_ABOVE
    out = np.array([mean, *roots, max(-low, high), fractions[0], fractions[HIST_BINS + 1]], np.float32)
    return fractions[1:-1].astype(np.float32), out


def _moments(x: torch.Tensor, n: int) -> tuple[np.float32, np.ndarray]:
    """The mean and (std, rms) of the flat float32 `x` of `n` finite values."""
    mean = np.float32(x.sum().item()) / np.float32(n)
    centred = x - float(mean)
    return mean, torch.stack([torch.dot(centred, centred), torch.dot(x, x)]).div_(n).sqrt_().cpu().numpy()


def tensor_stats(x: torch.Tensor) -> np.ndarray:
    """`tensor_summary(x)[1]`, the same values, without the histogram where it cannot change them: with
    every |x| under 0.99 of the last edge no value reaches a slot outside the edges (see asinh_bins), so
    frac_below and frac_above are 0 (log Z's stats: a histogram of 1,024 values cost as much as the rest)."""
    x = x.detach().float().reshape(-1)
    lo, hi = torch.aminmax(x)
    largest = max(-lo.item(), hi.item())
    if not largest < 0.99 * HIST_LIMIT:  # NaN, inf, or values near or past the edges: the full summary
        return tensor_summary(x)[1]
    mean, roots = _moments(x, x.numel())
    return np.array([mean, *roots, largest, 0.0, 0.0], np.float32)


def _asinh(x: torch.Tensor, largest: float = math.inf) -> torch.Tensor:
    """asinh(x) = log1p(|x| + x^2 / (1 + sqrt(1 + x^2))), signed: exact near 0 and 8 SIMD passes,
    about 10x faster than torch.asinh on CPU. |x| is capped at 1e15 (far beyond the last edge) so
    x^2 stays finite for huge values and infinities (a pass skipped when `largest`, max |x|, is below)."""
    ax = x.abs()
    if not largest <= 1e15:
        ax.clamp_(max=1e15)
    sq = ax * ax
    return ax.addcdiv_(sq, sq.add(1).sqrt_().add_(1)).log1p_().copysign_(x)  # ax + sq / (...): one pass


def _bin_fractions(x: torch.Tensor, n: int, largest: float = math.inf) -> np.ndarray:
    """Fractions of n in [below the first edge, the HIST_BINS bins, at or above the last edge] of the
    values of x (no NaN in it; infinities land in the outer two): one bincount over bin indices. The
    index comes from asinh(x) in float32, so a value within a rounding error of an edge (one in ~10^5 of
    random values) may count in the bin beside it; a search over the edges is exact but 3-8x slower.
    `largest` (max |x|, when known) well inside the edges skips the clamp, which then changes nothing;
    the indices (0..HIST_BINS + 1) go to bincount as bytes, 8x less to write and read than int64."""
    if math.isfinite(largest) and x.device.type == "cpu" and x.dtype == torch.float32 and x.is_contiguous():
        return torch.bincount(table_bins(x), minlength=HIST_BINS + 2).numpy() / n
    return torch.bincount(asinh_bins(x, largest), minlength=HIST_BINS + 2).cpu().numpy() / n


def asinh_bins(x: torch.Tensor, largest: float = math.inf) -> torch.Tensor:
    """Each value's slot (0: below the first edge, 1..HIST_BINS the bins, HIST_BINS + 1: at or above the
    last edge) from asinh(x) in float32, as bytes."""
    scale = HIST_BINS / (2 * HIST_ASINH_LIMIT)
    idx = _asinh(x, largest).mul_(scale).add_(HIST_BINS / 2 + 1)
    if not largest < 0.99 * HIST_LIMIT:  # inside: asinh(0.99 L) * scale < HIST_BINS / 2 - 0.1 of a bin
        idx.clamp_(0, HIST_BINS + 1)
    return idx.to(torch.uint8)


_COARSE = 12  # the table's key: a float32's top 20 bits (sign, exponent, 11 mantissa bits)
MIXED_SLOT = 255  # a key whose 4096 floats fall in two slots: looked up in the fine table


@functools.lru_cache(maxsize=1)
def slot_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The slot `asinh_bins` gives each float32, tabulated once (~0.1 s): a coarse table by the top 20
    bits (the slot, or MIXED_SLOT where the 4096 floats under a key reach two slots: the ~130 keys holding an
    edge), and the mixed keys (sorted) with every one of their floats' slots. Built by `asinh_bins` itself, on
    arrays whose length is a multiple of 64 (the vectorised kernels' path, as for any tensor's body), so
    a lookup gives what the computation gives: the ends of a key agreeing means the whole key does (the
    index rises with x; its rounding wobbles by an ulp, far less than a key's width of 2^-11 of x)."""
    keys = np.arange(1 << (32 - _COARSE), dtype=np.uint32)
    ends = [torch.from_numpy((keys << _COARSE | low).view(np.float32)) for low in (0, (1 << _COARSE) - 1)]
    first, last = (asinh_bins(e.nan_to_num(posinf=math.inf)).numpy() for e in ends)
    coarse = np.where(first == last, first, MIXED_SLOT).astype(np.uint8)
    coarse[(keys >> 11) & 0xFF == 0xFF] = MIXED_SLOT  # infinities and NaN: never looked up (finite tensors only)
    mixed = np.flatnonzero((coarse == MIXED_SLOT) & ((keys >> 11) & 0xFF != 0xFF))
    every = (mixed[:, None].astype(np.uint32) << _COARSE) | np.arange(1 << _COARSE, dtype=np.uint32)
    fine = asinh_bins(torch.from_numpy(every.reshape(-1).view(np.float32))).numpy().reshape(len(mixed), -1)
    return coarse, mixed.astype(np.uint32), fine


@functools.lru_cache(maxsize=1)
def _slot_tensors() -> tuple[torch.Tensor, np.ndarray, np.ndarray]:
    coarse, mixed, fine = slot_tables()
    return torch.from_numpy(coarse), mixed, fine


def table_bins(x: torch.Tensor) -> torch.Tensor:
    """`asinh_bins(x)` for a contiguous finite float32 CPU tensor, by table lookup: the same bytes
    (tests/test_byom.py checks on edges, their neighbours and random values), in ~2 passes instead of ~10."""
    coarse, mixed, fine = _slot_tensors()
    bits = x.numpy().view(np.uint32)
    key = torch.from_numpy((bits >> _COARSE).view(np.int32))  # < 2^20: an int32 index (numpy's take casts to int64)
    out = coarse.index_select(0, key).numpy()
    where = np.flatnonzero(out == MIXED_SLOT)
    if where.size:
        b = bits[where]
        out[where] = fine[np.searchsorted(mixed, b >> _COARSE), b & ((1 << _COARSE) - 1)]
    return torch.from_numpy(out)


def _summary_nonfinite(x: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """tensor_summary of a tensor holding NaN or +-inf (a diverging step): infinities count as outside
    the edges, NaNs nowhere; the moments are NaN/inf as they are."""
    n = x.numel()
    fractions = _bin_fractions(x[~torch.isnan(x)], n)
    stats = [  # in schema.Stat order
        float(x.mean()),
        float(x.std(correction=0)),
        float(x.square().mean().sqrt()),
        float(x.abs().max()),
        fractions[0],
        fractions[HIST_BINS + 1],
    ]
    return fractions[1:-1].astype(np.float32), np.array(stats, np.float32)


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
    head_logit_max(q, k, lambda scores, largest: out.append(scores_summary(scores, largest, hs)))
    return out[0]


def scores_summary(scores: torch.Tensor, largest: torch.Tensor, hs: int) -> tuple[float, float]:
    """(mean entropy in nats of causal softmax(s / sqrt(hs)) over batch, heads and positions, the largest
    |s| / sqrt(hs)) from head_logit_max's unscaled scores s (B, nh, T, T), their masked triangle 0, and its
    per-sequence, per-head largest |s| (B, nh). The scaled, masked scores are one pass (the mask added as 0 or
    _MASKED), then a softmax, a log-softmax and one dot product for the sum of p log p (p = exp(log_softmax)
    is no cheaper: exp of the masked scores takes the slow path, 6x a softmax)."""
    B, nh, T, _ = scores.shape
    z = torch.add(_causal_bias(T, scores.device), scores, alpha=1.0 / math.sqrt(hs))
    p = torch.softmax(z, dim=-1).reshape(-1)
    logp = torch.log_softmax(z, dim=-1).reshape(-1)
    entropy = -float(torch.dot(p, logp)) / (B * nh * T)
    return entropy, float(largest.amax() / math.sqrt(hs))  # as head_logit_max divides: the heads' largest, when B <= 8


@functools.lru_cache(maxsize=8)
def _causal_bias(T: int, device: torch.device) -> torch.Tensor:
    """(T, T) 0 where a query sees the key (on and below the diagonal), _MASKED above."""
    return torch.full((T, T), _MASKED, device=device).triu_(1)


def median_abs(x: torch.Tensor) -> float:
    """The median |x| (the lower middle value of an even count, as torch.median gives it), NaN if x
    holds a NaN. Among the float32 bits with the sign cleared, which sort as |x| does (a NaN's above +inf's):
    numpy's integer partition, half the time of its float one (and 30x faster than torch.median)."""
    a = np.bitwise_and(x.detach().float().reshape(-1).cpu().numpy().view(np.uint32), np.uint32(0x7FFFFFFF))
    return math.nan if a.max() > 0x7F800000 else median_of_cleared_bits(a)


def median_of_cleared_bits(a: np.ndarray) -> float:
    """The lower median |x| of float32 values none of them NaN, from their bits with the sign cleared (uint32,
    partitioned in place: for such floats |x| orders as these integers do)."""
    k = (a.size - 1) // 2
    a.partition(k)
    return float(a[k : k + 1].view(np.float32)[0])


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


ENTROPY_SEQUENCES = 8  # attention entropy is measured on the first this-many sequences of the batch


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
        self._last: tuple[torch.Tensor, tuple[np.ndarray, np.ndarray]] | None = None
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
        self._last = None

    def _summary(self, x: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
        """tensor_summary, once per tensor object (the model never changes a tensor in place)."""
        if self._last is not None and self._last[0] is x:
            return self._last[1]
        result = tensor_summary(x)
        self._last = (x, result)
        return result

    def _on_input(self, module: nn.Module, args: tuple) -> None:
        _, self.input_stats[:] = self._summary(args[0])

    def _on_block(self, i: int):
        def hook(module: nn.Module, args: tuple, out: torch.Tensor) -> None:
            self.resid_hist[i], self.resid_stats[i] = self._summary(out)
            median = median_abs(out)  # NaN at a diverged step: the ratio is NaN too
            self.massive_act[i] = self.resid_stats[i, Stat.MAX_ABS] / median if median > 0 else math.nan

        return hook

    def _on_norm(self, i: int, j: int):
        def hook(module: nn.Module, args: tuple) -> None:
            self.norm_in_hist[i, j], self.norm_in_stats[i, j] = self._summary(args[0])
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
