"""The summaries of one probed forward pass: ln_viz.probes.tensor_summary's values, bit for bit, with its
per-tensor Python work taken once for all of a step's tensors.

On 64 values a summary costs 130-150 us, a dozen torch and numpy calls that each return a Python number
or a small array. `StepSummaries.add` does the passes over a tensor as it comes (it is in the cache then:
copying a step's tensors into one buffer to summarise them together was slower, 5.3 ms against 5.7 for
the overhead benchmark's 13 tensors of 65,536) and keeps what they give as tensors; `finish` turns them
into the step's arrays with one transfer and a few numpy calls for all of them. In a real step the passes
themselves dominate (the table lookup and the bincount above all): this saves ~0.3 of ~8 ms there.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import torch

from ln_viz.probes import MIXED_SLOT, median_abs, median_of_cleared_bits, slot_tables, tensor_summary
from ln_viz.schema import HIST_BINS, Stat

Target = tuple[str, int | tuple[int, ...]]  # an array of the step's probes and the index a result goes to
_SLOTS = HIST_BINS + 2  # below the first edge, the bins, at or above the last


class StepSummaries:
    """The tensors one probed forward pass summarises into the step's arrays (`add`), finished together
    (`finish`). A tensor added twice in a row (Pre-LN's block output is the next block's first norm input)
    is summarised once. A tensor that is not a finite CPU one is summarised by tensor_summary when added."""

    def __init__(self) -> None:
        self._scratch: tuple[np.ndarray, torch.Tensor, torch.Tensor, torch.Tensor, np.ndarray] | None = None
        self.clear()

    def clear(self) -> None:
        self._scalars: list[torch.Tensor] = []  # per tensor: min, max, sum, then (after the centring) 2 dots
        self._counts: list[torch.Tensor] = []  # per tensor: its _SLOTS counts
        self._sizes: list[int] = []
        self._targets: list[list[Target | int]] = []
        self._medians: list[float] = []  # per tensor: median |x| where a target is a massive_act, else NaN
        # the tensor added last, its version, and its targets (or its summary, when summarised at once)
        self._last: tuple[torch.Tensor, int, Any] | None = None

    def add(
        self, arrays: dict[str, np.ndarray], x: torch.Tensor, stats: Target, hist: Target | None = None,
        massive: int | None = None,
    ) -> None:  # fmt: skip
        """Summarise `x` into arrays[stats] (and arrays[hist]); `massive`: the block whose massive_act it
        gives (its largest |x| over its median |x|). Reads `x` detached (no no_grad context needed)."""
        targets: list[Target | int] = [stats] if hist is None else [stats, hist]
        if massive is not None:
            targets.append(massive)
        if self._last is not None and self._last[0] is x and self._last[1] == x._version:
            kept = self._last[2]
            if isinstance(kept, list):  # finished with the others
                kept.extend(targets)
            else:  # summarised when added
                _assign(arrays, targets, *kept)
            return
        flat = x.detach().float().reshape(-1)
        if self._passes(flat, massive is not None):
            self._targets.append(targets)
            self._last = (x, x._version, targets)
            return
        h, s = tensor_summary(flat)
        done = (h, s, median_abs(flat) if massive is not None else math.nan)
        _assign(arrays, targets, *done)
        self._last = (x, x._version, done)

    def _passes(self, x: torch.Tensor, median: bool) -> bool:
        """tensor_summary's passes over a contiguous float32 CPU `x` of finite values, kept for `finish`;
        False (nothing kept) for any other: a value that is not finite shows in the table lookup."""
        n = x.numel()
        if x.device.type != "cpu" or not x.is_contiguous() or n == 0:
            return False
        coarse, mixed, fine, shift = _tables()
        bits = x.numpy().view(np.uint32)
        # the keys, then x - mean, then |x| in one scratch array (each done with before the next), and the slots
        words, keys, centred, slots, slot_array = self._buffers(n)
        np.right_shift(bits, shift, out=words)
        torch.index_select(coarse, 0, keys, out=slots)
        where = np.flatnonzero(slot_array == MIXED_SLOT)
        if where.size:  # the keys holding an edge, looked up in the fine table; inf and NaN are in no key there
            key = words[where]
            at = np.searchsorted(mixed, key)
            if at[-1] >= mixed.size or not np.array_equal(mixed[at], key):  # key sorted: at[-1] is the largest
                return False
            slot_array[where] = fine[at, bits[where] & ((1 << shift) - 1)]
        total = x.sum()
        torch.sub(x, total / n, out=centred)  # as tensor_summary: x - mean, the mean sum / n in float32
        self._scalars.extend((*torch.aminmax(x), total, torch.dot(centred, centred), torch.dot(x, x)))
        self._counts.append(torch.bincount(slots, minlength=_SLOTS))
        self._sizes.append(n)
        self._medians.append(_median_abs_finite(bits, words) if median else math.nan)
        return True

    def _buffers(self, n: int) -> tuple[np.ndarray, torch.Tensor, torch.Tensor, torch.Tensor, np.ndarray]:
        """n 32-bit words (as uint32, and as int32 and float32 tensors) and n bytes (a tensor and its array)
        of scratch, kept from tensor to tensor and step to step (a step's tensors are usually one size):
        fresh arrays of a tensor's size each pass cost more than the pass."""
        if self._scratch is None or self._scratch[0].size < n:
            words, slots = np.empty(n, np.uint32), torch.empty(n, dtype=torch.uint8)
            self._scratch = (words, torch.from_numpy(words.view(np.int32)), torch.from_numpy(words.view(np.float32)),
                             slots, slots.numpy())  # fmt: skip
        if self._scratch[0].size == n:
            return self._scratch
        words, keys, centred, slots, slot_array = self._scratch
        return words[:n], keys[:n], centred[:n], slots[:n], slot_array[:n]

    def finish(self, arrays: dict[str, np.ndarray]) -> None:
        """Every tensor added since the last `finish` into `arrays`, as tensor_summary gives it."""
        try:
            if self._targets:
                self._finish(arrays)
        finally:
            self.clear()

    def _finish(self, arrays: dict[str, np.ndarray]) -> None:
        m = len(self._targets)
        scalars = torch.stack(self._scalars).view(m, 5)
        n = np.array(self._sizes)
        # float32 divisions and square roots, elementwise as tensor_summary's _moments takes them
        roots = scalars[:, 3:].div(torch.from_numpy(n).float()[:, None]).sqrt_().numpy()
        low, high, total = scalars[:, :3].numpy().T
        mean = total / n.astype(np.float32)
        fractions = torch.stack(self._counts).numpy() / n[:, None]  # float64, as tensor_summary
        largest = np.maximum(-low, high)
        stats = np.stack([mean, roots[:, 0], roots[:, 1], largest, fractions[:, 0], fractions[:, -1]], 1)
        stats = stats.astype(np.float32)
        hists = fractions[:, 1:-1].astype(np.float32)
        for r, targets in enumerate(self._targets):
            _assign(arrays, targets, hists[r], stats[r], self._medians[r])


@functools.lru_cache(maxsize=1)
def _tables() -> tuple[torch.Tensor, np.ndarray, np.ndarray, int]:
    """ln_viz.probes.slot_tables (the coarse one as a tensor: index_select takes int32 keys, numpy's take
    casts them to int64) and the shift that makes a float32's bits its key."""
    coarse, mixed, fine = slot_tables()
    return torch.from_numpy(coarse), mixed, fine, fine.shape[1].bit_length() - 1


def _median_abs_finite(bits: np.ndarray, scratch: np.ndarray) -> float:
    """ln_viz.probes.median_abs of the float32 values whose bits are `bits`, none of them NaN: the same value
    (the k-th smallest |x| is one number, however it is found), found among the bits with the sign cleared,
    in `scratch` (as many uint32): for floats that are not NaN, |x| orders as these integers do (0.6 of the
    time of a float partition), and partitioned in place, without the NaN pass."""
    return median_of_cleared_bits(np.bitwise_and(bits, np.uint32(0x7FFFFFFF), out=scratch))


def _assign(
    arrays: dict[str, np.ndarray], targets: list[Target | int], hist: np.ndarray, stats: np.ndarray, median: float
) -> None:
    """One tensor's summary (and its median |x|, where a target is a block's massive_act) into `arrays`."""
    for t in targets:
        if isinstance(t, int):  # massive_act of block t, as ln_viz.probes.ActivationProbe computes it
            arrays["massive_act"][t] = stats[Stat.MAX_ABS] / median if median > 0 else math.nan
        elif t[0].endswith("_hist"):
            arrays[t[0]][t[1]] = hist
        else:
            arrays[t[0]][t[1]] = stats


_VIEWS = ("ViewBackward0", "UnsafeViewBackward0", "ReshapeAliasBackward0", "ToCopyBackward0")


def log_z(logits: torch.Tensor, loss: Any = None) -> torch.Tensor:
    """logsumexp of `logits` over the vocabulary, per token (float32). Where the model's own `loss` is a
    cross-entropy of these logits (a Hugging Face model given labels), from the log-softmax it saved for
    the backward: log p_j = x_j - log Z for every j, so log Z = x_0 - log p_0, read at the first column
    without a pass over the logits (logsumexp's two max passes cost 0.35 ms in the overhead benchmark's
    probe step, 16 x 64 tokens of 512, one thread; this 0.02; logsumexp's exp of every logit 1.2). The
    kernel rounds x_0 - max and then subtracts log sum exp(x - max), so x_0 - log p_0 is log Z to within an
    ulp or two of max - x_0 + log Z, the row's logit range (tests/test_byom.py checks against float64).
    Not finite (x_0 = -inf, say): logsumexp's."""
    saved = saved_log_softmax(loss, logits)
    logits = logits.detach()
    if saved is not None:
        vocab = logits.shape[-1]
        z = logits.reshape(-1, vocab)[:, 0].float() - saved.reshape(-1, vocab)[:, 0]
        if bool(torch.isfinite(z).all()):
            return z.view(logits.shape[:-1])
    return torch.logsumexp(logits.float(), -1)


def saved_log_softmax(loss: Any, logits: torch.Tensor) -> torch.Tensor | None:
    """The log-softmax over the last axis of `logits` (or of a view or float copy of them) that `loss`'s
    backward saved (cross_entropy, maybe divided by a count), or None."""
    node = getattr(loss, "grad_fn", None) if isinstance(loss, torch.Tensor) else None
    for _ in range(4):
        if node is None or node.name() == "LogSoftmaxBackward0":
            break
        node = node.next_functions[0][0] if node.next_functions else None
    if node is None or node.name() != "LogSoftmaxBackward0" or logits.grad_fn is None:
        return None
    up = node.next_functions[0][0]
    while up is not None and up is not logits.grad_fn and up.name() in _VIEWS:
        up = up.next_functions[0][0] if up.next_functions else None
    result = node._saved_result
    last = node._saved_dim in (-1, result.ndim - 1)
    if up is not logits.grad_fn or not last or result.shape[-1] != logits.shape[-1]:
        return None
    return result if result.numel() == logits.numel() and result.dtype == torch.float32 else None
