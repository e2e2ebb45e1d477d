"""Snapshot (one step), RunInfo (a run's header) and RunData (a run's measurements gathered from its
snapshots: the shape that charts, store and export read).

Scalars are columns with one value per step; probe arrays are stacked along a first axis of probe
steps (both named in ln_viz.schema). Appending a snapshot is cheap (lists), and the stacked views are
built on demand. Every RunData is built by appending snapshots: live from the trainer, and when a stored
run or a run file is read back (`from_snapshots` with the run's final status), so the summary (status,
stall, steps done, final loss) follows one rule everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ln_viz.config import RunConfig
from ln_viz.schema import (
    FIGURE3_ROLE,
    HIST_EDGES,
    PARAM_NAMES,
    PARAM_ROLES,
    PROBE_NAMES,
    PROBES,
    SCALAR_NAMES,
    STAT_NAMES,
    has_final_norm,
    norm_names,
    probe_dims,
)

if TYPE_CHECKING:  # pandas is imported where a table is made: a worker process never makes one (0.5 s of CPU each)
    import pandas as pd

FINAL_LOSS_WINDOW = 10  # steps: a run's final loss is the mean of its last this-many finite losses


def final_loss(losses: Sequence[float], window: int = FINAL_LOSS_WINDOW) -> float | None:
    """A run's final loss: the mean of its last `window` finite losses (None before the first). Read from
    the end: the store's writer asks twice a second."""
    finite: list[float] = []
    for x in reversed(losses):
        if math.isfinite(x):
            finite.append(x)
            if len(finite) == window:
                break
    return sum(reversed(finite)) / len(finite) if finite else None


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
    # A run ln_viz.attach recorded from a model ln-viz did not build: its card (ln_viz.byom.card.ModelCard as a
    # dict: placement, blocks, matrices and their roles). Its `config` is then a stand-in that holds what fits
    # (depth, width, lr): the card is the truth about the model. Kept out of `to_dict` (the store and the run
    # file keep the card apart).
    model_card: dict[str, Any] | None = None

    @property
    def attached(self) -> bool:
        """Whether the run was recorded from the user's own model (ln_viz.attach)."""
        return self.model_card is not None

    @property
    def placement(self) -> str:
        """Where the norms sit: the card's placement (pre, post, peri, reordered, parallel, none, unknown) for an
        attached run, else the config's norm position."""
        if self.model_card is not None:
            return str(self.model_card.get("placement", "unknown"))
        return self.config.norm_position

    @property
    def param_roles(self) -> tuple[str, ...]:
        """Each matrix's role (attn.q, ..., ffn.gate, ffn.in, ffn.out, other), in `param_names`' order."""
        roles = PARAM_ROLES
        if self.model_card is not None:
            roles = {m.get("name"): m.get("role", "other") for m in self.model_card.get("matrices", ())}
        return tuple(str(roles.get(n, "other")) for n in self.param_names)

    @property
    def param_labels(self) -> tuple[str, ...]:
        """The matrices' names as charts show them: ln-viz's own; a model's own by the shortest end of their paths
        that tells them apart, without `.weight` (a Llama's q_proj ... down_proj; GPT-2's attn.c_proj, mlp.c_proj)."""
        if self.model_card is None:
            return tuple(self.param_names)
        paths = [n.removesuffix(".weight").split(".") for n in self.param_names]
        labels = []
        for parts in paths:
            k = 1
            while k < len(parts) and sum(p[-k:] == parts[-k:] for p in paths) > 1:
                k += 1
            labels.append(".".join(parts[-k:]))
        return tuple(labels)

    def figure3_param(self) -> str | None:
        """The name of the paper's Figure 3 matrix (the FFN's output: ln-viz's ffn.w2, a Llama's
        mlp.down_proj.weight); None when the model has none that the card recognised."""
        return next((n for n, r in zip(self.param_names, self.param_roles) if r == FIGURE3_ROLE), None)

    @classmethod
    def preview(cls, cfg: RunConfig) -> RunInfo:
        """The header of a run about to start, computed without torch (the server draws the empty
        charts, axes, unigram line and planned schedule, before the worker's first step arrives)."""
        from ln_viz.corpus import load_corpus

        corpus = load_corpus(cfg.corpus, cfg.user_text, cfg.seq_len)
        V, d, f, L = corpus.vocab_size, cfg.d_model, cfg.ffn_width, cfg.depth
        norm_params = {"rmsnorm": d, "dyt": 2 * d + 1}.get(cfg.norm_type, 2 * d)  # DyT: gamma, beta, alpha
        hs = d // cfg.heads
        qk_params = {"none": 0, "rmsnorm": 2 * hs}.get(cfg.qk_norm, 4 * hs)  # per block: q's and k's norm
        names = norm_names(cfg.norm_position)
        final = norm_params if has_final_norm(cfg.norm_position) else 0
        per_block = 4 * d * d + 2 * d * f + len(names) * norm_params + qk_params
        n_params = 2 * V * d + cfg.seq_len * d + L * per_block + final
        return cls(cfg, V, n_params, corpus.unigram_entropy, corpus.floor(cfg.seq_len), names)

    def probe_dims(self) -> dict[str, int]:
        """The size of each named dimension of the schema's probe shapes, for this run."""
        n_bins = len(self.hist_edges) - 1
        names, stats = len(self.param_names), len(self.stat_names)
        return probe_dims(self.config.depth, len(self.norm_names), names, n_bins, stats, self.config.heads)

    def probe_shapes(self) -> dict[str, tuple[int, ...]]:
        """The shape of one probe step's array of each name in schema.PROBES."""
        dims = self.probe_dims()
        return {name: m.shape_for(dims) for name, m in PROBES.items()}

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
    """One step, small and numpy-only: the schema's scalars as fields (eval_loss None where not
    measured), and at probe steps `probes`, arrays named as schema.PROBES (missing ones become NaN)."""

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


def thinned(ordinals: Sequence[int], stride: int) -> list[int]:
    """The one thinning rule for probe steps: the indices of those whose ordinal (count from the
    first probe step measured, 0-based) is a multiple of `stride`, and always the latest."""
    last = len(ordinals) - 1
    return [i for i, k in enumerate(ordinals) if k % stride == 0 or i == last]


def thin_plan(n: int, max_probe_steps: int | None) -> tuple[list[int], int]:
    """(the indices kept, the stride) when `n` probe steps are appended one by one to a RunData capped
    at `max_probe_steps`, worked out from `n` alone, so a reader can pick the steps before it decodes
    any array. The kept count at a stride never falls as steps arrive, so the live copy's stride (doubled
    whenever the count exceeds the cap) ends as the smallest power of two whose count fits."""
    if max_probe_steps is None:
        return list(range(n)), 1
    stride = 1
    while len(keep := thinned(range(n), stride)) > max(2, max_probe_steps):
        stride *= 2
    return keep, stride


def aligned_probe_steps(own: Sequence[int], common: Sequence[int], max_probe_steps: int) -> list[int]:
    """The probe steps of one of several runs shown side by side: its own steps thinned to the cap, and
    the steps all the runs measured thinned the same way (so the shared step control and profile find
    each of them in every run): at most twice the cap, and the cap alone when the runs share every step."""
    mine = {own[i] for i in thin_plan(len(own), max_probe_steps)[0]}
    shared = {common[i] for i in thin_plan(len(common), max_probe_steps)[0]}
    return sorted(mine | shared)


@dataclass
class RunData:
    info: RunInfo
    status: str = "queued"
    message: str | None = None  # i18n key of the last status message
    stalled_since: int | None = None  # first step of the current stall (None when not stalled)
    diverged_at: int | None = None
    scalars: dict[str, list[float]] = field(default_factory=lambda: {c: [] for c in SCALAR_NAMES})
    probe_steps: list[int] = field(default_factory=list)
    probes: dict[str, list[np.ndarray]] = field(default_factory=lambda: {n: [] for n in PROBE_NAMES})
    # A live copy keeps at most this many probe steps, so a long run's memory stays flat: evenly
    # spaced from the first (every `probe_stride`-th one measured) plus always the latest. None: all.
    max_probe_steps: int | None = None
    probe_stride: int = 1
    _probes_received: int = field(default=0, repr=False, compare=False)
    _probe_ordinals: list[int] = field(default_factory=list, repr=False, compare=False)

    # --- building --------------------------------------------------------------------------------
    def append(self, snap: Snapshot) -> None:
        for name, column in self.scalars.items():
            value = getattr(snap, name)
            column.append(math.nan if value is None else value)  # eval_loss None: not measured
        self._track_status(snap)
        if snap.probes is not None:
            self.add_probe(snap.step, snap.probes)

    def _track_status(self, snap: Snapshot) -> None:
        """Fold one snapshot into the run's status: the one rule, so a stored run's summary (the store's
        writer keeps a scalars-only RunData) matches the run reopened from its rows."""
        self.status = snap.status
        if snap.message:
            self.message = snap.message
        if snap.stalled and self.stalled_since is None:
            self.stalled_since = snap.step
        if not snap.stalled:
            self.stalled_since = None
        if snap.status == "diverged":
            self.diverged_at = snap.step

    def add_probe(self, step: int, arrays: dict[str, np.ndarray]) -> None:
        """Probe arrays of one step; ones missing at this step (grads of a diverged step) become NaN."""
        self.probe_steps.append(step)
        blank = self.info.probe_shapes()
        for name in PROBE_NAMES:
            value = arrays.get(name)
            dtype = PROBES[name].dtype
            self.probes[name].append(np.full(blank[name], np.nan, dtype) if value is None else np.asarray(value, dtype))
        self._probe_ordinals.append(self._probes_received)
        self._probes_received += 1
        if self.max_probe_steps is not None:
            self._thin_probes()

    def _thin_probes(self) -> None:
        """Keep the probe steps `thinned` keeps at the current stride; double the stride whenever more
        than max_probe_steps (at least 2) are kept. The lists are rebuilt, so a reader's earlier copy
        of them stays whole; the runner's lock orders this against its copies."""
        assert self.max_probe_steps is not None
        ordinals = self._probe_ordinals
        keep = thinned(ordinals, self.probe_stride)
        while len(keep) > max(2, self.max_probe_steps):
            self.probe_stride *= 2
            keep = [keep[i] for i in thinned([ordinals[i] for i in keep], self.probe_stride)]
        if len(keep) < len(ordinals):
            self._probe_ordinals = [ordinals[i] for i in keep]
            self.probe_steps = [self.probe_steps[i] for i in keep]
            self.probes = {name: [arrays[i] for i in keep] for name, arrays in self.probes.items()}

    def mark_thinned(self, max_probe_steps: int | None, stride: int, kept: list[int], measured: int) -> None:
        """Record that this run was read back with only the probe steps `thin_plan` keeps (`kept`: their
        ordinals among the `measured` ones), as if all had been appended under the cap."""
        self.max_probe_steps, self.probe_stride = max_probe_steps, stride
        self._probe_ordinals, self._probes_received = list(kept), measured

    # --- reading ---------------------------------------------------------------------------------
    def nbytes(self) -> int:
        """About what this run holds in memory: its probe arrays, and each scalar as a Python float in a
        list (32 bytes)."""
        arrays = sum(a.nbytes for values in self.probes.values() for a in values)
        return arrays + 32 * sum(len(column) for column in self.scalars.values())

    @property
    def steps_done(self) -> int:
        return self.scalars["step"][-1] if self.scalars["step"] else 0

    def scalars_df(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame({c: np.asarray(v, dtype=np.float64) for c, v in self.scalars.items()}).astype(
            {"step": np.int64}
        )

    def probe(self, name: str) -> np.ndarray:
        """Stacked probe array (P, ...); an empty (0, ...) array before the first probe."""
        values = self.probes[name]
        if values:
            return np.stack(values)
        return np.zeros((0,), np.float32)

    def final_loss(self, window: int = FINAL_LOSS_WINDOW) -> float | None:
        """Mean of the last `window` finite losses (None before the first)."""
        return final_loss(self.scalars["loss"], window)

    def snapshots(self) -> Iterator[Snapshot]:
        """The run step by step, as `from_snapshots` reads it back: every step's scalars, `stalled` from
        stalled_since, and probes at the probe steps kept (no per-step status: see `settle`)."""
        probe_at = {step: j for j, step in enumerate(self.probe_steps)}
        s = self.scalars
        for i, step in enumerate(s["step"]):
            j = probe_at.get(step)
            yield Snapshot(
                **{name: s[name][i] for name in SCALAR_NAMES},
                stalled=self.stalled_since is not None and step >= self.stalled_since,
                probes=None if j is None else {name: values[j] for name, values in self.probes.items()},
            )

    def summary(self) -> dict[str, Any]:
        """The run's summary as the store's runs row keeps it (the one running summary of a run)."""
        return {
            "steps_done": self.steps_done,
            "final_loss": self.final_loss(),
            "status": self.status,
            "message": self.message,
            "stalled_since": self.stalled_since,
            "diverged_at": self.diverged_at,
        }

    def settle(self, status: str, message: str | None, diverged_at: int | None) -> None:
        """Take a read-back run's recorded end (a store row, a run file): its snapshots were replayed
        without statuses; the stall comes from their `stalled` flags."""
        self.status, self.message, self.diverged_at = status, message, diverged_at

    @classmethod
    def from_snapshots(cls, info: RunInfo, snaps: Iterable[Snapshot], max_probe_steps: int | None = None) -> RunData:
        """A run from its snapshots: the one way a RunData is filled (live, from the store, from a file)."""
        data = cls(info, max_probe_steps=max_probe_steps)
        for s in snaps:
            data.append(s)
        return data
