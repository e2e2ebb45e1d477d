"""What a sweep keeps of each run, and the LR sensitivity of each curve (Wortsman et al. 2023).

A cell's run ends with the trainer's verdict: completed (here: `learned`), stalled at the unigram
loss, diverged (a non-finite loss or gradient), or failed (the run crashed, its worker died). The
numbers kept are small: final loss (mean of the last 10 steps, as RunData.final_loss and the CLI's
`train`), the held-out loss at the end, the best loss, the loss at init (step 1: the weights before
any update) and a loss curve thinned to at most CURVE_POINTS points.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ln_viz.config import RunConfig
from ln_viz.snapshot import final_loss
from ln_viz.sweep.spec import VARIANT_AXES, Cell

CURVE_POINTS = 100
_DEFAULTS = {name: getattr(RunConfig(), name) for name in VARIANT_AXES}
_TRAINER_STATUS = {"completed": "learned", "stalled": "stalled", "diverged": "diverged"}


@dataclass
class CellRun:
    """A cell's run as an executor saw it: every step's loss, the held-out losses, how it ended."""

    cell: Cell
    steps: list[int] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    eval_losses: list[tuple[int, float]] = field(default_factory=list)
    trainer_status: str = "running"  # the last snapshot's status, or failed / stopped
    error: str | None = None
    elapsed_s: float = 0.0
    started: float = 0.0  # monotonic, at its first step

    def add_step(self, step: int, loss: float, eval_loss: float | None, status: str) -> None:
        """One training step as the executor reported it."""
        self.steps.append(step)
        self.losses.append(loss)
        if eval_loss is not None and math.isfinite(eval_loss):
            self.eval_losses.append((step, eval_loss))
        self.trainer_status = status


@dataclass(frozen=True)
class CellResult:
    """One cell of the map, as stored and drawn."""

    norm_position: str
    lr: float
    warmup_steps: int
    depth: int
    seed: int
    status: str  # learned | stalled | diverged | failed
    final_loss: float | None
    eval_loss: float | None
    best_loss: float | None
    init_loss: float | None
    diverged_step: int | None
    steps_done: int
    curve: tuple[tuple[int, float], ...]  # (step, loss), at most CURVE_POINTS, finite losses only
    fingerprint: str
    config: dict[str, Any]
    error: str | None = None
    elapsed_s: float = 0.0

    @property
    def variant(self) -> tuple:
        """(qk_norm, norm_type, weight_decay, adam_init), from its config: a cell's columns predate these axes,
        and its config leaves the issue-19 and -33 fields out at their defaults (ln_viz.config.OMIT_AT_DEFAULT)."""
        return tuple(self.config.get(name, _DEFAULTS[name]) for name in VARIANT_AXES)  # type: ignore[return-value]

    @property
    def key(self) -> tuple:
        """As Cell.key: (norm_position, lr, warmup_steps, depth, seed, *variant)."""
        return (self.norm_position, self.lr, self.warmup_steps, self.depth, self.seed, *self.variant)

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["curve"] = [list(p) for p in self.curve]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CellResult:
        """Back from `to_dict()` (JSON, a store row)."""
        d = dict(d)
        d["curve"] = tuple((int(s), float(v)) for s, v in d.get("curve", ()))
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


def summarize(run: CellRun) -> CellResult:
    """The stored result of a finished run (a stopped run is not a result: resume trains it again)."""
    c = run.cell
    finite = [x for x in run.losses if math.isfinite(x)]
    status = _TRAINER_STATUS.get(run.trainer_status, "failed")
    diverged_step = run.steps[-1] if status == "diverged" and run.steps else None
    return CellResult(
        norm_position=c.norm_position,
        lr=c.lr,
        warmup_steps=c.warmup_steps,
        depth=c.depth,
        seed=c.seed,
        status=status,
        final_loss=final_loss(run.losses),  # as every run's: `python -m ln_viz train`, the store
        eval_loss=run.eval_losses[-1][1] if run.eval_losses else None,
        best_loss=min(finite) if finite else None,
        init_loss=run.losses[0] if run.losses and math.isfinite(run.losses[0]) else None,
        diverged_step=diverged_step,
        steps_done=run.steps[-1] if run.steps else 0,
        curve=downsample(run.steps, run.losses),
        fingerprint=c.fingerprint,
        config={k: v for k, v in c.config.to_dict().items() if k != "user_text"},
        error=run.error if status == "failed" else None,
        elapsed_s=run.elapsed_s,
    )


def downsample(steps: Sequence[int], losses: Sequence[float], points: int = CURVE_POINTS) -> tuple:
    """Evenly spaced (step, loss) pairs, the first and the last always in; non-finite ones dropped."""
    n = len(steps)
    if n == 0:
        return ()
    idx = range(n) if n <= points else sorted({round(i * (n - 1) / (points - 1)) for i in range(points)})
    return tuple((int(steps[i]), float(losses[i])) for i in idx if math.isfinite(losses[i]))


# --- LR sensitivity -------------------------------------------------------------------------------
def lr_sensitivity(final_losses: Sequence[float | None], init_loss: float) -> float:
    """Wortsman et al. 2023, sect. 2.2: the mean over the lr grid of [min(final loss, loss at init) -
    the best final loss over the grid]. A diverged run (no finite final loss) counts at the loss at
    init. 0 means every lr reached the best loss; the loss at init minus the best is the most."""
    if not final_losses:
        raise ValueError("an lr sensitivity needs at least one learning rate")
    capped = [init_loss if x is None or not math.isfinite(x) else min(x, init_loss) for x in final_losses]
    best = min(capped)
    return sum(x - best for x in capped) / len(capped)


@dataclass(frozen=True)
class Curve:
    """Final loss against lr for one setting (norm position, warm-up, depth, variant), seeds averaged."""

    norm_position: str
    warmup_steps: int
    depth: int
    lrs: tuple[float, ...]
    final_losses: tuple[float | None, ...]  # None: diverged in every seed
    statuses: tuple[str, ...]  # the worst status over the seeds at each lr
    init_loss: float
    lr_sensitivity: float
    variant: tuple[str, str, float] = tuple(_DEFAULTS.values())  # type: ignore[assignment]
    seeds: int = 1  # the most distinct seeds any lr of it has
    lows: tuple[float | None, ...] = ()  # per lr, the lowest and highest seed (a diverged one at the loss
    highs: tuple[float | None, ...] = ()  # at init, as in the mean); None where every seed diverged

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types (the `--json` report), the variant axes by name."""
        return dict(zip(VARIANT_AXES, self.variant)) | {
            "norm_position": self.norm_position,
            "warmup_steps": self.warmup_steps,
            "depth": self.depth,
            "lr": list(self.lrs),
            "final_loss": list(self.final_losses),
            "status": list(self.statuses),
            "init_loss": self.init_loss,
            "lr_sensitivity": self.lr_sensitivity,
        }


_WORST = {"failed": 0, "learned": 1, "stalled": 2, "diverged": 3}


def curves(results: Iterable[CellResult], default_init: float) -> list[Curve]:
    """One Curve per (norm position, warm-up, depth, variant) with at least one cell that ran. A failed
    cell says nothing about the lr and is left out; a diverged seed counts at the loss at init."""
    groups: dict[tuple, dict[float, list[CellResult]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        if r.status != "failed":
            groups[(r.norm_position, r.warmup_steps, r.depth, r.variant)][r.lr].append(r)
    out = []
    for (norm, warm, depth, variant), by_lr in groups.items():
        inits = [r.init_loss for rs in by_lr.values() for r in rs if r.init_loss is not None]
        init = sum(inits) / len(inits) if inits else default_init
        lrs = tuple(sorted(by_lr))
        finals: list[float | None] = []
        lows: list[float | None] = []
        highs: list[float | None] = []
        statuses = []
        for lr in lrs:
            rs = by_lr[lr]
            values = [init if r.final_loss is None or r.status == "diverged" else r.final_loss for r in rs]
            diverged_all = all(r.status == "diverged" for r in rs)
            finals.append(None if diverged_all else sum(values) / len(values))
            lows.append(None if diverged_all else min(values))
            highs.append(None if diverged_all else max(values))
            statuses.append(max((r.status for r in rs), key=_WORST.__getitem__))
        sens = lr_sensitivity(finals, init)
        seeds = max(len({r.seed for r in rs}) for rs in by_lr.values())
        out.append(
            Curve(
                norm,
                warm,
                depth,
                lrs,
                tuple(finals),
                tuple(statuses),
                init,
                sens,
                variant,
                seeds,
                tuple(lows),
                tuple(highs),
            )
        )
    return sorted(out, key=lambda c: (c.norm_position, c.depth, c.warmup_steps, c.variant))
