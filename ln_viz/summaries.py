"""How a tensor becomes what a probe step stores: a fixed-edge histogram and its stats, cheaply.

`tensor_summary(x)` gives one tensor's histogram (fractions of its elements in the schema's HIST_BINS bins,
evenly spaced in asinh between -HIST_LIMIT and +HIST_LIMIT) and its STAT_NAMES values (mean, std, rms, max |x|,
and the fractions below and above the edges); `median_abs` its median |x|. `StepSummaries` gives the same
values, bit for bit, for all the tensors of one probed forward pass (ln-viz's own probes and `attach`'s): it
does the passes over each tensor as it comes (then in the cache), in scratch buffers kept from tensor to tensor
and step to step, and finishes them together with one transfer and a few numpy calls. On ln-viz's 6 x 64 model a
probe step's 13 summaries took ~4 ms less this way than one tensor_summary each (fresh arrays of a tensor's size
each pass cost more than the pass: 131,072 floats, 32 x 64 x 64).
"""

from __future__ import annotations

import functools
import math
import sys
from typing import Any

import numpy as np
import torch

from ln_viz.schema import HIST_ASINH_LIMIT, HIST_BINS, HIST_LIMIT, Stat

Target = tuple[str, int | tuple[int, ...]]  # an array of the step's probes and the index a result goes to
_SLOTS = HIST_BINS + 2  # below the first edge, the bins, at or above the last


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
    """The mean and (std, rms) of the flat float32 `x` of `n` finite values (the std by one_pass where it holds)."""
    mean = np.float32(x.sum().item()) / np.float32(n)
    sq = torch.dot(x, x)
    unsummed = one_pass(mean, square := sq.item(), n)
    centred_sq = sq if unsummed else torch.dot(centred := x - float(mean), centred)
    roots = torch.stack([centred_sq, sq]).div_(n).sqrt_().cpu().numpy()
    if unsummed:  # the rms as the two-pass takes it (the same division and square root), the std from mean and sq
        roots[0] = one_pass_std(mean, square, n)
    return mean, roots


# The std without a pass over x - mean, as sqrt(E[x^2] - mean^2) in float64 from the float32 mean and sum of squares,
# where mean^2 is at most ONE_PASS of E[x^2] (a mean within one std of 0): then E[x^2] / std^2 <= 2, so the sum of
# squares' float32 rounding error (relative) reaches the std at most doubled, as close as the two-pass sum of
# (x - mean)^2 comes (tests/test_probes.py checks both against float64: within 2e-6). Past it (a mean far from 0 beside
# a narrow spread) the subtraction would cancel digits, and x - mean is summed. Saves a subtraction and a dot product
# over x: ~30 us a tensor of 65,536 in a probed step.
ONE_PASS = 0.5


def one_pass(mean: float, sq: float, n: int) -> bool:
    """Whether the std of n values of this float32 mean and float32 sum of squares `sq` is taken by one_pass_std (not
    where the sum of squares overflowed float32: values past 1.8e19, where x - mean may still square finitely)."""
    return math.isfinite(sq) and float(mean) ** 2 <= ONE_PASS * (float(sq) / n)


def one_pass_std(mean: float, sq: float | np.ndarray, n: int | np.ndarray) -> np.ndarray:
    """sqrt(sq / n - mean^2) in float64, as float32 (elementwise for arrays: the same values as one by one)."""
    var = np.asarray(sq, np.float64) / n - np.asarray(mean, np.float64) ** 2
    return np.sqrt(np.maximum(var, 0.0)).astype(np.float32)


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


def table_bins(x: torch.Tensor) -> torch.Tensor:
    """`asinh_bins(x)` for a contiguous finite float32 CPU tensor, by table lookup: the same bytes
    (tests/test_byom.py checks on edges, their neighbours and random values), in ~2 passes instead of ~10."""
    coarse, mixed, fine, _ = _tables()
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


def median_abs(x: torch.Tensor) -> float:
    """The median |x| (the lower middle value of an even count, as torch.median gives it), NaN if x
    holds a NaN. Among the float32 bits with the sign cleared, which sort as |x| does (a NaN's above +inf's):
    see median_of_bits (30x faster than torch.median with numpy's partition alone, ~4x faster again by buckets)."""
    a = np.ascontiguousarray(x.detach().float().reshape(-1).cpu().numpy()).view(np.uint32)
    return math.nan if (a & np.uint32(0x7FFFFFFF)).max() > 0x7F800000 else median_of_bits(a)


_HIGH_HALF = 1 if sys.byteorder == "little" else 0  # where a uint32's top 16 bits lie among its two uint16
_BUCKETED = 8192  # from this many values median_of_bits counts buckets first; under it one partition is faster


def median_of_bits(bits: np.ndarray, scratch: np.ndarray | None = None) -> float:
    """The lower median |x| of the float32 values none of them NaN whose bits are the contiguous uint32 `bits`
    (left as they are), exactly: with the sign cleared, |x| orders as the integers do. From _BUCKETED values, the
    top 15 of the 31 bits are counted (one bincount; `scratch`, when given, n uint16 or more, holds them), the
    bucket holding the k-th smallest is found from the running counts, and only its values (a few hundred of
    131,072 normal ones) are partitioned: 0.2 ms against 0.73 for numpy's partition of all 131,072 (one thread).
    The k-th smallest is one number, however it is found."""
    n = bits.size
    k = (n - 1) // 2
    if n < _BUCKETED:
        return median_of_cleared_bits(np.bitwise_and(bits, np.uint32(0x7FFFFFFF)))
    out = scratch[:n] if scratch is not None else None
    high = np.bitwise_and(bits.view(np.uint16)[_HIGH_HALF::2], np.uint16(0x7FFF), out=out)
    running = torch.bincount(torch.from_numpy(high.view(np.int16)), minlength=1 << 15).cumsum(0).numpy()
    bucket = int(np.searchsorted(running, k, side="right"))  # the first whose running count passes k
    k -= int(running[bucket - 1]) if bucket else 0
    return median_of_cleared_bits(np.bitwise_and(bits[high == bucket], np.uint32(0x7FFFFFFF)), k)


def median_of_cleared_bits(a: np.ndarray, k: int | None = None) -> float:
    """The lower median (or the `k`-th smallest, from 0) |x| of float32 values none of them NaN, from their bits
    with the sign cleared (uint32, partitioned in place: for such floats |x| orders as these integers do)."""
    k = (a.size - 1) // 2 if k is None else k
    a.partition(k)
    return float(a[k : k + 1].view(np.float32)[0])


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
            if at.max() >= mixed.size or not np.array_equal(mixed[at], key):  # a key past the last: inf or NaN
                return False
            slot_array[where] = fine[at, bits[where] & ((1 << shift) - 1)]
        total, sq = x.sum(), torch.dot(x, x)
        mean = np.float32(total.item()) / np.float32(n)  # as tensor_summary: sum / n in float32
        if one_pass(mean, sq.item(), n):  # the std from the mean and sq (see one_pass); NaN: none summed
            centred_sq = _NAN
        else:  # x - mean by a Python float holding the float32 mean (a 0-d tensor operand takes the broadcasting
            # path, ~30 us more a tensor of 131,072)
            centred_sq = torch.dot(torch.sub(x, float(mean), out=centred), centred)
        self._scalars.extend((*torch.aminmax(x), total, centred_sq, sq))
        self._counts.append(torch.bincount(slots, minlength=_SLOTS))
        self._sizes.append(n)
        self._medians.append(median_of_bits(bits, words.view(np.uint16)) if median else math.nan)
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
        unsummed = np.isnan(roots[:, 0])  # no sum of (x - mean)^2 taken: the std from mean and sq, as one_pass_std
        if unsummed.any():
            roots[unsummed, 0] = one_pass_std(mean[unsummed], scalars[:, 4].numpy()[unsummed], n[unsummed])
        fractions = torch.stack(self._counts).numpy() / n[:, None]  # float64, as tensor_summary
        largest = np.maximum(-low, high)
        stats = np.stack([mean, roots[:, 0], roots[:, 1], largest, fractions[:, 0], fractions[:, -1]], 1)
        stats = stats.astype(np.float32)
        hists = fractions[:, 1:-1].astype(np.float32)
        for r, targets in enumerate(self._targets):
            _assign(arrays, targets, hists[r], stats[r], self._medians[r])


@functools.lru_cache(maxsize=1)
def _tables() -> tuple[torch.Tensor, np.ndarray, np.ndarray, int]:
    """slot_tables (the coarse one as a tensor: index_select takes int32 keys, numpy's take
    casts them to int64) and the shift that makes a float32's bits its key."""
    coarse, mixed, fine = slot_tables()
    return torch.from_numpy(coarse), mixed, fine, fine.shape[1].bit_length() - 1


# StepSummaries: the sum of (x - mean)^2 of a tensor whose std needed none (float32 whatever torch's default dtype)
_NAN = torch.tensor(math.nan, dtype=torch.float32)


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
