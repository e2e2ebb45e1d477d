"""Snapshot (one step), RunInfo (a run's header) and RunData (a run's measurements gathered from its
snapshots: the shape that charts, store and export read).

Scalars are columns with one value per step; probe arrays are stacked along a first axis of probe
steps. Appending a snapshot is cheap (lists), and the stacked views are built on demand.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ln_viz.config import RunConfig
from ln_viz.names import HIST_EDGES, PARAM_NAMES, STAT_NAMES, norm_names


@dataclass
class RunInfo:
    """What does not change during a run: the header every consumer of snapshots needs."""

    config: RunConfig
    vocab_size: int
    n_params: int
    unigram_entropy: float  # nats: the loss of predicting character frequencies only
    floor: float | None  # nats: the lowest loss any model can reach (synthetic corpus only)
    norm_names: list[str]
    param_names: tuple[str, ...] = PARAM_NAMES
    stat_names: tuple[str, ...] = STAT_NAMES
    hist_edges: np.ndarray = field(default_factory=lambda: HIST_EDGES.copy())

    @classmethod
    def preview(cls, cfg: RunConfig) -> RunInfo:
        """The header of a run about to start, computed without torch (the server draws the empty
        charts, axes, unigram line and planned schedule, before the worker's first step arrives)."""
        from ln_viz.corpus import load_corpus

        corpus = load_corpus(cfg.corpus, cfg.user_text, cfg.seq_len)
        V, d, f, L = corpus.vocab_size, cfg.d_model, cfg.ffn_width, cfg.depth
        norm_params = d if cfg.norm_type == "rmsnorm" else 2 * d
        names = norm_names(cfg.norm_position)
        final = norm_params if cfg.norm_position in ("pre", "peri") else 0
        n_params = 2 * V * d + cfg.seq_len * d + L * (4 * d * d + 2 * d * f + len(names) * norm_params) + final
        return cls(cfg, V, n_params, corpus.unigram_entropy, corpus.floor(cfg.seq_len), names)

    def probe_shapes(self) -> dict[str, tuple[int, ...]]:
        """The shape of one probe step's array of each name in PROBE_ARRAYS."""
        L, n_norm, n_stat = self.config.depth, len(self.norm_names), len(self.stat_names)
        n_bin = len(self.hist_edges) - 1
        return {
            "resid_hist": (L, n_bin),
            "resid_stats": (L, n_stat),
            "norm_in_hist": (L, n_norm, n_bin),
            "norm_in_stats": (L, n_norm, n_stat),
            "attn_entropy": (L,),
            "input_stats": (n_stat,),
            "grad_norm": (L, len(self.param_names)),
            "block_grad_norm": (L,),
            "update_ratio": (L,),
        }

    def to_dict(self) -> dict[str, Any]:
        cfg = self.config.to_dict()
        return {
            "config": cfg,
            "vocab_size": self.vocab_size,
            "n_params": self.n_params,
            "unigram_entropy": self.unigram_entropy,
            "floor": self.floor,
            "norm_names": list(self.norm_names),
            "param_names": list(self.param_names),
            "stat_names": list(self.stat_names),
            "hist_edges": [float(e) for e in self.hist_edges],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunInfo:
        return cls(
            config=RunConfig.from_dict(d["config"]),
            vocab_size=int(d["vocab_size"]),
            n_params=int(d["n_params"]),
            unigram_entropy=float(d["unigram_entropy"]),
            floor=None if d.get("floor") is None else float(d["floor"]),
            norm_names=list(d["norm_names"]),
            param_names=tuple(d["param_names"]),
            stat_names=tuple(d["stat_names"]),
            hist_edges=np.asarray(d["hist_edges"], dtype=np.float64),
        )


@dataclass
class Snapshot:
    """One step, small and numpy-only. `probes` is set at probe steps: arrays named as in probes.py."""

    step: int
    loss: float
    lr: float
    grad_norm: float  # of all parameters
    elapsed: float  # seconds since training started
    steps_per_sec: float
    status: str = "running"
    stalled: bool = False  # the loss is (still) at the unigram entropy
    eval_loss: float | None = None
    message: str | None = None
    probes: dict[str, np.ndarray] | None = None


SCALAR_COLUMNS = (
    "step",
    "loss",
    "lr",
    "grad_norm",
    "elapsed",
    "steps_per_sec",
    "eval_loss",
)
PROBE_ARRAYS = (
    "resid_hist",  # (P, L, bins) fraction of elements per bin
    "resid_stats",  # (P, L, stats)
    "norm_in_hist",  # (P, L, norms, bins)
    "norm_in_stats",  # (P, L, norms, stats)
    "attn_entropy",  # (P, L) nats
    "input_stats",  # (P, stats) embeddings into block 1
    "grad_norm",  # (P, L, params) Frobenius norm per weight matrix
    "block_grad_norm",  # (P, L)
    "update_ratio",  # (P, L) ||dw|| / ||w||
)


@dataclass
class RunStatus:
    """A run's status as its snapshots tell it (RunData keeps the same four fields)."""

    status: str = "queued"
    message: str | None = None  # i18n key of the last status message
    stalled_since: int | None = None  # first step of the current stall (None when not stalled)
    diverged_at: int | None = None


def track_status(state: RunStatus | RunData, snap: Snapshot) -> None:
    """Fold one snapshot into a run's status; the one rule for RunData and the store's writer, so a
    stored run's summary matches the run reopened from its rows."""
    state.status = snap.status
    if snap.message:
        state.message = snap.message
    if snap.stalled and state.stalled_since is None:
        state.stalled_since = snap.step
    if not snap.stalled:
        state.stalled_since = None
    if snap.status == "diverged":
        state.diverged_at = snap.step


@dataclass
class RunData:
    info: RunInfo
    status: str = "queued"
    message: str | None = None  # i18n key of the last status message
    stalled_since: int | None = None  # first step flagged stalled (None when never)
    diverged_at: int | None = None
    scalars: dict[str, list[float]] = field(default_factory=lambda: {c: [] for c in SCALAR_COLUMNS})
    probe_steps: list[int] = field(default_factory=list)
    probes: dict[str, list[np.ndarray]] = field(default_factory=lambda: {n: [] for n in PROBE_ARRAYS})
    # A live copy keeps at most this many probe steps, so a long run's memory stays flat: evenly
    # spaced from the first (every `probe_stride`-th one measured) plus always the latest. None: all.
    max_probe_steps: int | None = None
    probe_stride: int = 1
    _probes_received: int = field(default=0, repr=False, compare=False)
    _probe_ordinals: list[int] = field(default_factory=list, repr=False, compare=False)

    # --- building --------------------------------------------------------------------------------
    def append(self, snap: Snapshot) -> None:
        s = self.scalars
        s["step"].append(snap.step)
        s["loss"].append(snap.loss)
        s["lr"].append(snap.lr)
        s["grad_norm"].append(snap.grad_norm)
        s["elapsed"].append(snap.elapsed)
        s["steps_per_sec"].append(snap.steps_per_sec)
        s["eval_loss"].append(math.nan if snap.eval_loss is None else snap.eval_loss)
        track_status(self, snap)
        if snap.probes is not None:
            self.add_probe(snap.step, snap.probes)

    def add_probe(self, step: int, arrays: dict[str, np.ndarray]) -> None:
        """Probe arrays of one step; ones missing at this step (grads of a diverged step) become NaN."""
        self.probe_steps.append(step)
        blank = self.info.probe_shapes()
        for name in PROBE_ARRAYS:
            value = arrays.get(name)
            self.probes[name].append(
                np.full(blank[name], np.nan, np.float32) if value is None else np.asarray(value, np.float32)
            )
        self._probe_ordinals.append(self._probes_received)
        self._probes_received += 1
        if self.max_probe_steps is not None:
            self._thin_probes()

    def _thin_probes(self) -> None:
        """Keep the probe steps whose ordinal is a multiple of the stride, and the latest; double the
        stride whenever more than max_probe_steps (at least 2) are kept. The lists are rebuilt, so a
        reader's earlier copy of them stays whole; the runner's lock orders this against its copies."""
        assert self.max_probe_steps is not None
        ordinals = self._probe_ordinals
        keep = [i for i, k in enumerate(ordinals) if k % self.probe_stride == 0 or i == len(ordinals) - 1]
        while len(keep) > max(2, self.max_probe_steps):
            self.probe_stride *= 2
            keep = [i for i in keep if ordinals[i] % self.probe_stride == 0 or i == len(ordinals) - 1]
        if len(keep) < len(ordinals):
            self._probe_ordinals = [ordinals[i] for i in keep]
            self.probe_steps = [self.probe_steps[i] for i in keep]
            self.probes = {name: [arrays[i] for i in keep] for name, arrays in self.probes.items()}

    # --- reading ---------------------------------------------------------------------------------
    @property
    def steps_done(self) -> int:
        return self.scalars["step"][-1] if self.scalars["step"] else 0

    def scalars_df(self) -> pd.DataFrame:
        return pd.DataFrame({c: np.asarray(v, dtype=np.float64) for c, v in self.scalars.items()}).astype(
            {"step": np.int64}
        )

    def probe(self, name: str) -> np.ndarray:
        """Stacked probe array (P, ...); an empty (0, ...) array before the first probe."""
        values = self.probes[name]
        if values:
            return np.stack(values)
        return np.zeros((0,), np.float32)

    def final_loss(self, window: int = 10) -> float | None:
        finite = [x for x in self.scalars["loss"] if math.isfinite(x)][-window:]
        return sum(finite) / len(finite) if finite else None

    @classmethod
    def from_snapshots(cls, info: RunInfo, snaps: list[Snapshot]) -> RunData:
        data = cls(info)
        for s in snaps:
            data.append(s)
        return data
