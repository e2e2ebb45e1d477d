"""Two configurations over N paired seeds, on a sweep executor, and the gap between them in numbers
(issue 20): "Post-LN ends 0.79 nats above Pre-LN (95 % CI 0.71-0.87, 3 seeds)".

Side A and side B each train seeds s, s+1, ..., s+N-1 (s: the configs' shared `seed`). A seed fixes the
initial weights and the batches, so seed i of A and seed i of B see the same data: the pairs are
paired, and the interval is Student's t on the per-seed differences A - B (ln_viz.stats). The runs
are cells for the sweep's executors (local.py: one torch thread per worker; ray_exec.py: one per task),
each exactly `Trainer(config)` with one thread, as `python -m ln_viz train --threads 1` trains it
(tests/test_compare_cli.py checks the final losses agree). They are queued A0, B0, A1, B1, ... so that
a pair finishes together and two workers train a pair side by side.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ln_viz.config import FIELDS, RunConfig
from ln_viz.i18n import LocalizedError, t
from ln_viz.snapshot import final_loss
from ln_viz.stats import Interval, mean_sd, paired_t_interval
from ln_viz.sweep.driver import Progress, eta_seconds
from ln_viz.sweep.executors import Executor
from ln_viz.sweep.spec import MAX_SEEDS, Cell
from ln_viz.words import field_word

SIDES = ("a", "b")
_NOT_A_DIFFERENCE = ("user_text", "seed")  # what never names a side: the text is long, the seed shared


class CompareError(LocalizedError):
    """A bad seed comparison (its seeds, a side's key): one sentence naming what to change."""


@dataclass(frozen=True)
class Side:
    """One side's runs, seed by seed: its config (at the first seed), each seed's final loss (the mean
    of its last 10 finite losses, as `train` reports it; None without one) and trainer status."""

    config: RunConfig
    final_losses: tuple[float | None, ...]
    statuses: tuple[str, ...]  # completed | stalled | diverged (the trainer's verdict) | failed | stopped
    errors: tuple[str | None, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: config, final_losses, mean, sd (over the seeds with a final loss), statuses."""
        mean, sd = mean_sd(self.final_losses)
        config = {k: v for k, v in self.config.to_dict().items() if k != "user_text"}
        out: dict[str, Any] = {"config": config, "final_losses": list(self.final_losses), "mean": mean, "sd": sd}
        out["statuses"] = list(self.statuses)
        if any(self.errors):
            out["errors"] = list(self.errors)
        return out


@dataclass(frozen=True)
class SeedComparison:
    """A finished (or stopped) comparison: both sides, the seeds, and the gap A - B with its interval."""

    a: Side
    b: Side
    seeds: tuple[int, ...]
    gap: Interval
    executor: str
    elapsed_s: float
    state: str  # done | stopped (| failed, when the executor raised)

    def to_dict(self) -> dict[str, Any]:
        """The `compare --json` object: a, b, seeds, gap (mean = a - b, ci95, method), executor, ..."""
        return {
            "a": self.a.to_dict(),
            "b": self.b.to_dict(),
            "seeds": list(self.seeds),
            "gap": self.gap.to_dict(),
            "executor": self.executor,
            "elapsed_s": round(self.elapsed_s, 3),
            "state": self.state,
        }


def seed_cells(a: RunConfig, b: RunConfig, seeds: int) -> list[Cell]:
    """The 2N runs, A0, B0, A1, B1, ...: each side's config at seeds s..s+N-1 (s = a.seed = b.seed)."""
    check_seeds(seeds)
    if a.seed != b.seed:
        raise CompareError("seeds.err.seed_side", "seed", a=a.seed, b=b.seed)
    top = int(FIELDS["seed"].hi)
    if a.seed + seeds - 1 > top:  # said before a run, naming --seeds (the field's own sentence named seed+N-1)
        raise CompareError("seeds.err.last_seed", "seed", seed=a.seed, n=seeds, last=a.seed + seeds - 1, hi=top,
                           most=top - seeds + 1)  # fmt: skip
    cells = []
    for i in range(seeds):
        for cfg in (a, b):
            c = cfg.replace(seed=cfg.seed + i).validate()  # the last seed may pass the field's range
            cells.append(Cell(c.norm_position, c.lr, c.warmup_steps, c.depth, c.seed, c))
    return cells


def check_seeds(seeds: Any) -> int:
    """`seeds` if it is a whole number from 1 to MAX_SEEDS; CompareError otherwise."""
    if isinstance(seeds, bool) or not isinstance(seeds, int) or not 1 <= seeds <= MAX_SEEDS:
        raise CompareError("seeds.err.count", "seeds", value=seeds, hi=MAX_SEEDS)
    return seeds


@dataclass
class SeedCompare:
    """A and B over `seeds` paired seeds on `executor`; `run()` blocks, `progress()` reads at any
    moment (the sweep's Progress, so the sweep's progress bar draws it), `stop()` ends it early."""

    a: RunConfig
    b: RunConfig
    seeds: int
    executor: Executor
    stop_event: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.cells = seed_cells(self.a, self.b, self.seeds)
        self._lock = threading.Lock()
        self._losses: dict[int, list[float]] = {}
        self._ended: dict[int, tuple[str, str | None]] = {}
        self._started: float | None = None
        self._first_step: float | None = None  # when the first step came in (the workers have started)
        self._steps_seen = 0
        self._elapsed = 0.0
        self._state = "pending"

    def stop(self) -> None:
        """Ask the executor to stop; `run` returns within about 2 s."""
        self.stop_event.set()

    def run(self) -> SeedComparison:
        """Train the 2N runs; the comparison (state done, or stopped with what finished)."""
        with self._lock:
            self._started, self._state = time.monotonic(), "running"
        state = "failed"  # unless the executor returns: a Ray cluster out of reach raises its sentence
        try:
            self.executor.run(self.cells, self._on_step, self._on_end, self.stop_event)
            state = "stopped" if self.stop_event.is_set() else "done"
        finally:
            with self._lock:
                self._elapsed = time.monotonic() - self._started
                self._state = state
        return self.result()

    def _on_step(self, index: int, step: int, loss: float, eval_loss: float | None, status: str) -> None:
        with self._lock:
            self._losses.setdefault(index, []).append(loss)
            self._steps_seen += 1
            if self._first_step is None:
                self._first_step = time.monotonic()

    def _on_end(self, index: int, status: str, error: str | None) -> None:
        with self._lock:
            self._ended[index] = (status, error)

    def result(self) -> SeedComparison:
        """The comparison as it stands: a run not ended is `stopped`, with no final loss."""
        with self._lock:
            sides = [self._side(k) for k in range(2)]
            elapsed = self._elapsed
        gap = paired_t_interval(sides[0].final_losses, sides[1].final_losses)
        seeds = tuple(self.a.seed + i for i in range(self.seeds))
        return SeedComparison(sides[0], sides[1], seeds, gap, self.executor.name, elapsed, self._state)

    def _side(self, k: int) -> Side:
        finals, statuses, errors = [], [], []
        for i in range(k, len(self.cells), 2):
            status, error = self._ended.get(i, ("stopped", None))
            ended = status not in ("stopped", "failed")
            finals.append(final_loss(self._losses.get(i, [])) if ended else None)
            statuses.append(status)
            errors.append(error)
        return Side(self.cells[k].config, tuple(finals), tuple(statuses), tuple(errors))

    def progress(self) -> Progress:
        """Where the runs are: ended, training, steps done of all (a run that ended early counts whole)."""
        with self._lock:
            running = len(set(self._losses) - set(self._ended))
            steps_total = sum(c.config.steps for c in self.cells)
            trained = sum(len(v) for i, v in self._losses.items() if i not in self._ended)
            steps_done = trained + sum(self.cells[i].config.steps for i in self._ended)
            live = self._state == "running" and self._started is not None
            elapsed = time.monotonic() - self._started if live else self._elapsed
            until = (self._started or 0) + elapsed  # now while it runs, else its end
            eta = eta_seconds(steps_total - steps_done, self._steps_seen, self._first_step, until)
            return Progress(
                total=len(self.cells),
                done=len(self._ended),
                skipped=0,
                running=running,
                steps_done=steps_done,
                steps_total=steps_total,
                elapsed_s=elapsed,
                eta_s=eta,
                state=self._state,
                error=None,
                results=(),
            )


def side_names(a: RunConfig, b: RunConfig, lang: str) -> tuple[str, str]:
    """What tells the sides apart, in `lang`: the norm position ("Post-LN", "Pre-LN") and, in
    parentheses, every other field that differs as name=value ("Post-LN (warmup_steps=100)"), Adam's start in
    words ("Post-LN (GI-Adam)", not adam_init=gi)."""
    da, db = a.to_dict(), b.to_dict()
    differ = [k for k in FIELDS if k not in _NOT_A_DIFFERENCE and da.get(k) != db.get(k) and k != "norm_position"]
    if "optimizer" in differ and "adam_init" in differ:  # one word says both: "Muon", "GI-Adam"
        differ.remove("adam_init")
    names = []
    for cfg, d, letter in ((a, da, "A"), (b, db, "B")):
        extra = ", ".join(_difference(cfg, k, d.get(k, getattr(cfg, k)), lang) for k in differ)
        if not extra and a.norm_position == b.norm_position:
            extra = letter  # the same configuration twice: the sides by their letters
        norm = t(f"chart.norm.{cfg.norm_position}", lang)
        names.append(f"{norm} ({extra})" if extra else norm)
    return names[0], names[1]


def _difference(cfg: RunConfig, name: str, value: Any, lang: str) -> str:
    """A field that tells the sides apart, in the lecture header's words ("lr 3e-3", "QK-norm LayerNorm"; round
    four's L3: not qk_norm=layernorm, lr=0.003), name=value where it has none."""
    return field_word(cfg, name, lang) or f"{name}={_value_text(value)}"


def _value_text(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def takeaway(result: SeedComparison, lang: str) -> str:
    """The comparison in one sentence: "Post-LN ends 0.79 nats above Pre-LN (95 % CI 0.71-0.87, 3
    seeds)"; one seed has no interval, and says so; seeds that lack a final loss are left out, and said."""
    name_a, name_b = side_names(result.a.config, result.b.config, lang)
    gap = result.gap
    if gap.mean is None:
        return t("seeds.takeaway.none", lang, a=name_a, b=name_b)
    if gap.mean == 0 and (gap.ci95 is None or gap.ci95 == (0.0, 0.0)):
        # the catalog's sentence says why as the others do (it was called without it: a KeyError)
        why = t("seeds.one_seed", lang) if gap.ci95 is None else t("seeds.ci", lang, low="0.00", high="0.00", n=gap.n)
        sentence = t("seeds.takeaway.same", lang, a=name_a, b=name_b, why=why)
    else:
        above = gap.mean > 0
        if gap.ci95 is None:
            why = t("seeds.one_seed", lang)
        else:  # said as the side named first minus the other: B - A when A ends below
            low, high = gap.ci95 if above else (-gap.ci95[1], -gap.ci95[0])
            key = "seeds.ci" if low >= 0 else "seeds.ci_signed"  # "0.71-0.87", but "-0.05 to 0.87"
            why = t(key, lang, low=f"{low:.2f}", high=f"{high:.2f}", n=gap.n)
        key = "seeds.takeaway.above" if above else "seeds.takeaway.below"
        sentence = t(key, lang, a=name_a, b=name_b, gap=f"{abs(gap.mean):.2f}", why=why)
    if gap.n < len(result.seeds):
        sentence += " " + t("seeds.left_out", lang, n=len(result.seeds) - gap.n, total=len(result.seeds))
    for side, name in ((result.a, name_a), (result.b, name_b)):  # a gap in nats means little beside a blow-up (L11)
        if n := side.statuses.count("diverged"):
            sentence += " " + t("seeds.diverged", lang, side=name, n=n, total=len(side.statuses))
    return sentence
