"""The vocabulary of a run, named once, in a module that imports no torch (the server, the charts and the
store load light): every measurement (the scalars, one value per step, and the probe arrays, one array per
probe step, with shape, dtype, unit and meaning), the weight matrices of a block (PARAM_NAMES), the norm
modules of a block (`norm_names`), the histograms' fixed edges, and a run's statuses. Snapshot/RunData,
the model, the trainer and the probes, the store's columns, the run file's validation and docs, and the
tidy tables all read this module. (The learning-rate schedule is ln_viz/schedule.py.)

Probe shapes are written in named dimensions (per probe step; a run's stack adds a first axis P):

    depth   blocks (RunConfig.depth)            norms   norm modules per block (RunInfo.norm_names)
    params  weight matrices per block (PARAM_NAMES)   bins    histogram bins (len(HIST_EDGES) - 1)
    stats   summary statistics (STAT_NAMES, indexed by `Stat`)    heads   attention heads (RunConfig.heads)

Like TransformerLens's hook names, these names are the vocabulary: a probe array called `resid_hist`
means the same thing in a snapshot, a store row, a run file and a chart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import IntEnum
from typing import Literal

import numpy as np

from ln_viz.config import MAX_LR


class Stat(IntEnum):
    """Where each summary statistic sits along a `stats` axis (e.g. `resid_stats[..., Stat.STD]`)."""

    MEAN = 0  # mean of the tensor's elements
    STD = 1  # population standard deviation
    RMS = 2  # root mean square: sqrt(E[x^2])
    MAX_ABS = 3  # largest |x|
    FRAC_BELOW = 4  # fraction of elements below the first histogram edge
    FRAC_ABOVE = 5  # fraction at or above the last histogram edge


STAT_NAMES: tuple[str, ...] = tuple(s.name.lower() for s in Stat)  # ("mean", "std", ..., "frac_above")
# (lo, hi) of each statistic along a `stats` axis (None: unbounded); NaN always passes (a diverged step)
STAT_RANGES: dict[str, tuple[float | None, float | None]] = {
    "mean": (None, None),
    "std": (0.0, None),
    "rms": (0.0, None),
    "max_abs": (0.0, None),
    "frac_below": (0.0, 1.0),
    "frac_above": (0.0, 1.0),
}
# Every measurement is taken in float32, so no finite value of a run lies beyond float32's largest;
# a run file's numbers are held to this too (a larger one overflows where charts draw in float32).
FINITE_LIMIT = float(np.finfo(np.float32).max)

PARAM_NAMES = ("attn.q", "attn.k", "attn.v", "attn.o", "ffn.w1", "ffn.w2")  # per block, in init order
# What each matrix does, in the words a model ln-viz did not build is described in (ln_viz.byom.card's roles):
# a run ln_viz.attach recorded names its matrices by its own paths ("mlp.down_proj.weight", a SwiGLU's seven),
# its card gives their roles; ln-viz's own six have these. FIGURE3_ROLE: the paper's Figure 3 matrix.
PARAM_ROLES = {"attn.q": "attn.q", "attn.k": "attn.k", "attn.v": "attn.v", "attn.o": "attn.o", "ffn.w1": "ffn.in",
               "ffn.w2": "ffn.out"}  # fmt: skip
FIGURE3_ROLE = "ffn.out"

# Fixed histogram bin edges, shared by every layer, step and run, so frames can be compared. Values
# beyond them are counted in the `frac_below` / `frac_above` stats (ln_viz.schema.Stat), never dropped.
# The edges are evenly spaced in asinh(x) (a symmetric log): about 0.1 wide near 0, so a LayerNorm output
# of width 1 gets ~40 bins, and ~3 wide at 30, so a 24-layer Pre-LN stream (std ~60, values to ~150) still
# lands inside. Runs store their edges (`RunInfo.hist_edges`): runs made with the old linear ±16 edges
# keep drawing with those.
HIST_LIMIT = 256.0
HIST_BINS = 128  # even: 0 is an edge
HIST_ASINH_LIMIT = math.asinh(HIST_LIMIT)


def _asinh_edges(limit: float, bins: int) -> np.ndarray:
    """`bins` + 1 edges from -limit to limit, evenly spaced in asinh, exactly symmetric, 0 in the middle."""
    half = np.sinh(np.linspace(0.0, math.asinh(limit), bins // 2 + 1))
    half[0], half[-1] = 0.0, limit
    return np.concatenate([-half[:0:-1], half])


HIST_EDGES = _asinh_edges(HIST_LIMIT, HIST_BINS)

STATUSES = ("queued", "running", "completed", "diverged", "stalled", "stopped", "failed", "interrupted")
TERMINAL = ("completed", "diverged", "stalled", "stopped", "failed", "interrupted")


def norm_names(norm_position: str) -> list[str]:
    """Names of the norm modules inside each block, in forward order."""
    return {
        "post": ["ln1", "ln2"],
        "pre": ["ln1", "ln2"],
        "deepnorm": ["ln1", "ln2"],
        "mix": ["ln1", "ln2"],
        "reordered": ["ln1_out", "ln2_out"],
        "none": [],
    }.get(norm_position, ["ln1", "ln1_out", "ln2", "ln2_out"])


def has_final_norm(norm_position: str) -> bool:
    """Whether a norm sits between the last block and the output layer: the placements whose residual stream is
    never normalised inside the blocks."""
    return norm_position in ("pre", "peri", "mix", "reordered")


Kind = Literal["scalar", "probe"]
Source = Literal["step", "forward", "backward", "update"]


@dataclass(frozen=True)
class Measure:
    """One named measurement: a scalar (shape `()`) or a probe array (shape in named dimensions)."""

    name: str
    kind: Kind
    shape: tuple[str, ...]  # named dimensions of one step's value; () for a scalar
    dtype: str  # numpy dtype as written to disk and returned by RunData
    unit: str
    doc: str
    source: Source = "step"  # probes: measured in the forward pass, from the gradients, or across the update
    lo: float | None = None  # smallest valid value (validation), None: unbounded
    hi: float | None = None  # largest valid value; a finite value is always within +-FINITE_LIMIT
    finite: bool = False  # scalars never NaN or infinite in a run ln-viz wrote
    timing: bool = False  # wall-clock bookkeeping, not a measurement of the model (last in tables)
    optional: bool = False  # a probe added later: a run file from before it may lack it (read as NaN)

    def shape_for(self, dims: dict[str, int]) -> tuple[int, ...]:
        """The concrete shape of one step's value, given each named dimension's size."""
        return tuple(dims[d] for d in self.shape)


def _scalar(name: str, dtype: str, unit: str, doc: str, **kw: object) -> Measure:
    return Measure(name, "scalar", (), dtype, unit, doc, **kw)  # type: ignore[arg-type]


def _probe(name: str, shape: tuple[str, ...], unit: str, source: Source, doc: str, **kw: object) -> Measure:
    return Measure(name, "probe", shape, "float32", unit, doc, source, **kw)  # type: ignore[arg-type]


# The order is the store's scalar columns and the run file's `scalars` keys: append, never reorder.
SCALARS: dict[str, Measure] = {
    m.name: m
    for m in (
        _scalar("step", "int64", "step", "1-based update number", finite=True),
        _scalar(
            "loss",
            "float64",
            "nats",
            "mean cross-entropy per token of the step's batch (NaN or inf at divergence)",
            lo=0.0,
        ),
        _scalar("lr", "float64", "1", "learning rate of the step's update", finite=True, lo=0.0, hi=MAX_LR),
        _scalar("grad_norm", "float64", "L2 norm", "norm of all parameters' gradients together", lo=0.0),
        _scalar("elapsed", "float64", "s", "seconds since training started", finite=True, timing=True, lo=0.0),
        _scalar(
            "steps_per_sec",
            "float64",
            "steps/s",
            "moving average of the training rate",
            finite=True,
            timing=True,
            lo=0.0,
        ),
        _scalar("eval_loss", "float64", "nats", "held-out loss; NaN except at eval steps", lo=0.0),
    )
}

# The order is the store's and the run file's order of probe arrays: append, never reorder.
PROBES: dict[str, Measure] = {
    m.name: m
    for m in (
        _probe(
            "resid_hist",
            ("depth", "bins"),
            "fraction",
            "forward",
            "residual stream after each block: fraction of elements per bin",
            lo=0.0,
            hi=1.0,
        ),
        _probe("resid_stats", ("depth", "stats"), "value", "forward", "residual stream after each block: stats"),
        _probe(
            "norm_in_hist",
            ("depth", "norms", "bins"),
            "fraction",
            "forward",
            "input of each norm (Post-LN: x + F(x)): fraction of elements per bin",
            lo=0.0,
            hi=1.0,
        ),
        _probe("norm_in_stats", ("depth", "norms", "stats"), "value", "forward", "input of each norm: stats"),
        _probe(
            "attn_entropy",
            ("depth",),
            "nats",
            "forward",
            "mean attention entropy over heads and positions of the batch's first 8 sequences",
            lo=0.0,
        ),
        _probe("input_stats", ("stats",), "value", "forward", "embeddings into block 1 (layer 0): stats"),
        _probe(
            "grad_norm",
            ("depth", "params"),
            "L2 norm",
            "backward",
            "Frobenius norm of each weight matrix's gradient (NaN at a diverged step)",
            lo=0.0,
        ),
        _probe(
            "block_grad_norm",
            ("depth",),
            "L2 norm",
            "backward",
            "norm of all of a block's gradients together (NaN at a diverged step)",
            lo=0.0,
        ),
        _probe(
            "update_ratio", ("depth",), "ratio", "update", "||w_after - w_before|| / ||w_before|| per block", lo=0.0
        ),
        _probe(
            "attn_logit_max",
            ("depth",),
            "logit",
            "forward",
            "largest |q.k|/sqrt(d_head) before the softmax, the batch's first 8 sequences (Wortsman 2023)",
            lo=0.0,
            optional=True,
        ),
        _probe(
            "logz_stats",
            ("stats",),
            "nats",
            "forward",
            "log Z (logsumexp of the output logits) of each token of the batch: stats",
            optional=True,
        ),
        _probe(
            "massive_act",
            ("depth",),
            "ratio",
            "forward",
            "residual stream after each block: largest |h| over the median |h| (Sun 2024, massive activations)",
            lo=0.0,
            optional=True,
        ),
        _probe(
            "dyt_saturation",
            ("depth", "norms"),
            "fraction",
            "forward",
            "fraction of each DyT norm's tanh inputs with |alpha x| > 2 (NaN for a norm that is not DyT)",
            lo=0.0,
            hi=1.0,
            optional=True,
        ),
        # issue 33: the update's angle, Adam's preconditioner lag, LayerNorm's curvature (ln_viz.probes says how)
        _probe(
            "angular_update",
            ("depth",),
            "rad",
            "update",
            "largest angle between a block weight matrix before and after the step, over the block's six (Kosson 2024)",
            lo=0.0,
            hi=math.pi,
            optional=True,
        ),
        _probe(
            "precond_lag",
            ("depth",),
            "ratio",
            "update",
            "largest |g| / (sqrt(v_hat) + eps) over a block's weight matrices after the step (NaN: not Adam)",
            lo=0.0,
            optional=True,
        ),
        _probe(
            "norm_in_min_rms",
            ("depth", "norms"),
            "value",
            "forward",
            "input of each norm: smallest per-token std (LayerNorm) or RMS (RMSNorm, DyT) (Odonnat 2024)",
            lo=0.0,
            optional=True,
        ),
    )
}

# Issue 33, Muon and QK-Clip (helper muon): one block, appended.
PROBES.update(
    {
        m.name: m
        for m in (
            _probe(
                "attn_logit_max_head",
                ("depth", "heads"),
                "logit",
                "forward",
                "largest |q.k|/sqrt(d_head) of each head over the whole batch (QK-Clip's S, Kimi K2 2025)",
                lo=0.0,
                optional=True,
            ),
        )
    }
)

SCALAR_NAMES: tuple[str, ...] = tuple(SCALARS)
PROBE_NAMES: tuple[str, ...] = tuple(PROBES)


def probes_from(source: Source) -> tuple[str, ...]:
    """The probe arrays measured at one point of a step (`forward`, `backward` or `update`)."""
    return tuple(m.name for m in PROBES.values() if m.source == source)


def probe_dims(depth: int, n_norms: int, n_params: int, n_bins: int, n_stats: int, heads: int = 1) -> dict[str, int]:
    """Sizes of the named dimensions, for `Measure.shape_for`."""
    return {"depth": depth, "norms": n_norms, "params": n_params, "bins": n_bins, "stats": n_stats, "heads": heads}


def blank_probes(dims: dict[str, int], names: tuple[str, ...] = PROBE_NAMES) -> dict[str, np.ndarray]:
    """Zero-filled arrays of one probe step, for a probe that fills them in place."""
    return {n: np.zeros(PROBES[n].shape_for(dims), PROBES[n].dtype) for n in names}


def doc_table() -> str:
    """The measurements as a text table (the run file's docstring holds it; a test checks it matches)."""
    lines = []
    for m in (*SCALARS.values(), *PROBES.values()):
        shape = "(" + ", ".join(m.shape) + ")" if m.shape else "()"
        lines.append(f"{m.kind:6}  {m.name:15} {shape:24} {m.dtype:8} {m.unit}")
        lines.append(f"{'':8}{m.doc}")
    return "\n".join(lines)
