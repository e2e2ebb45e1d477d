"""SweepConfig: a base RunConfig and the axes a sweep varies, validated like RunConfig.

A sweep is the grid norm_position x lr x warmup_steps x depth x seed, every cell a RunConfig that
`python -m ln_viz train` would train the same way. Four more axes, `qk_norm`, `norm_type`, `weight_decay`
and `adam_init` (VARIANT_AXES), are empty by default: then every cell has the base's value, and the spec's
`to_dict()` (so its fingerprint, the store's row, the shipped map) is what it was before they existed.
Cells skip the probes (a sweep reads losses only) and measure the held-out loss once, at the end.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
from dataclasses import dataclass, field
from typing import Any

from ln_viz.config import NORM_POSITIONS, RunConfig
from ln_viz.i18n import LocalizedError
from ln_viz.text import plain_number

MAX_RUNS = 512  # a sweep above this is a job for a cluster scheduler, not a page
MAX_AXIS_VALUES = 32
MAX_SEEDS = 16
# Axes a sweep may vary beyond the five above; each a RunConfig field of this name and kind. Empty means
# "the base's value" and is left out of to_dict(), so older specs keep their fingerprints.
VARIANT_AXES: dict[str, type] = {"qk_norm": str, "norm_type": str, "weight_decay": float, "adam_init": str}

# Seconds per step of the reference cell (depth 6, d_model 64, batch 16 x 32 tokens, no probes) on one
# torch thread, measured on the 2-core machine with nothing else running (benchmarks/sweep.py: 21
# steps/s); the estimate scales it by depth x tokens x width, which is what a step's matmuls cost.
REF_STEP_S = 1 / 21
REF_WORK = 6 * 16 * 32 * 64


class SweepError(LocalizedError):
    """A bad sweep field: names the field and says what to change."""


@dataclass(frozen=True)
class Cell:
    """One run of a sweep: its place on every axis and the full config."""

    norm_position: str
    lr: float
    warmup_steps: int
    depth: int
    seed: int
    config: RunConfig

    @property
    def variant(self) -> tuple:
        """(qk_norm, norm_type, weight_decay, adam_init): its place on the variant axes (read from its config)."""
        return tuple(getattr(self.config, name) for name in VARIANT_AXES)

    @property
    def key(self) -> tuple:
        """(norm_position, lr, warmup_steps, depth, seed, *variant): its place."""
        return (self.norm_position, self.lr, self.warmup_steps, self.depth, self.seed, *self.variant)

    @property
    def fingerprint(self) -> str:
        return config_fingerprint(self.config)


def config_fingerprint(cfg: RunConfig) -> str:
    """A stable hash of everything that decides a run's numbers (resume matches cells on it)."""
    data = cfg.to_dict()
    blob = json.dumps(data, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class SweepConfig:
    """The grid of a sweep. Axes are tuples; `seeds` is a count (seeds 0..seeds-1); `steps` applies to
    every cell. `base` holds everything else (width, batch, corpus, optimizer, schedule)."""

    base: RunConfig = field(default_factory=RunConfig)
    norm_position: tuple[str, ...] = ("post", "pre")
    lr: tuple[float, ...] = (3e-4, 1e-3, 3e-3, 1e-2)
    warmup_steps: tuple[int, ...] = (0, 100)
    depth: tuple[int, ...] = (6,)
    seeds: int = 1
    steps: int = 300
    qk_norm: tuple[str, ...] = ()  # the variant axes: () is the base's value (VARIANT_AXES)
    norm_type: tuple[str, ...] = ()
    weight_decay: tuple[float, ...] = ()
    adam_init: tuple[str, ...] = ()  # zero (Adam) and gi (GI-Adam): the warm-up map with and without GI-Adam

    def __post_init__(self) -> None:
        # the base's one value is the empty axis: equal specs compare equal (the page finds the shipped map)
        for name in VARIANT_AXES:
            if tuple(getattr(self, name)) == (getattr(self.base, name),):
                object.__setattr__(self, name, ())

    def values(self, name: str) -> tuple[Any, ...]:
        """A variant axis's values: its own, or the base's one value when it is empty."""
        return getattr(self, name) or (getattr(self.base, name),)

    def varied(self) -> tuple[str, ...]:
        """The variant axes with more than one value (the charts name a curve by these)."""
        return tuple(name for name in VARIANT_AXES if len(self.values(name)) > 1)

    @property
    def n_runs(self) -> int:
        """Runs in the grid: the product of the axes' lengths and the seeds."""
        n = len(self.norm_position) * len(self.lr) * len(self.warmup_steps) * len(self.depth) * self.seeds
        return n * math.prod(len(self.values(name)) for name in VARIANT_AXES)

    def validate(self) -> SweepConfig:
        """Raise SweepError (or the cell's ConfigError) on the first bad field; return self."""
        _axis("norm_position", self.norm_position)
        for v in self.norm_position:
            if v not in NORM_POSITIONS:
                raise SweepError("sweep.err.choice", "norm_position", value=v, choices=", ".join(NORM_POSITIONS))
        for name in ("lr", "warmup_steps", "depth"):
            _axis(name, getattr(self, name))
        for name in VARIANT_AXES:
            if getattr(self, name):
                _axis(name, getattr(self, name))
        if isinstance(self.seeds, bool) or not isinstance(self.seeds, int) or not 1 <= self.seeds <= MAX_SEEDS:
            raise SweepError("sweep.err.seeds", "seeds", value=self.seeds, hi=MAX_SEEDS)
        if self.n_runs > MAX_RUNS:
            raise SweepError("sweep.err.too_many", "n_runs", n=self.n_runs, cap=MAX_RUNS)
        # Each axis value, checked as RunConfig checks it: the sentence names the field and the value.
        probe = self.base.replace(steps=self.steps, warmup_steps=0)
        probe.validate()
        for lr in self.lr:
            probe.replace(lr=lr).validate()
        for d in self.depth:
            probe.replace(depth=d).validate()
        for name in VARIANT_AXES:
            for v in self.values(name):
                probe.replace(**{name: v}).validate()
        for w in self.warmup_steps:
            if isinstance(w, int) and not isinstance(w, bool) and w > self.steps:
                raise SweepError("sweep.err.warmup_longer", "warmup_steps", warmup=w, steps=self.steps)
            probe.replace(warmup_steps=w).validate()
        return self

    def cells(self) -> list[Cell]:
        """Every run of the grid, in a fixed order (norm position, the variant axes, depth, warm-up, lr,
        seed)."""
        base = self.base.replace(steps=self.steps, probe_every=0, eval_every=self.steps)
        variants = [dict(zip(VARIANT_AXES, v)) for v in itertools.product(*map(self.values, VARIANT_AXES))]
        out = []
        for norm, variant, depth, warm, lr, seed in itertools.product(
            self.norm_position, variants, self.depth, self.warmup_steps, self.lr, range(self.seeds)
        ):
            cfg = base.replace(norm_position=norm, depth=depth, warmup_steps=warm, lr=lr, seed=seed, **variant)
            out.append(Cell(norm, lr, warm, depth, seed, cfg))
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types (the store, the shipped default, `--json`); the user's text is left out."""
        base = {k: v for k, v in self.base.to_dict().items() if k != "user_text"}
        return {
            "base": base,
            "norm_position": list(self.norm_position),
            "lr": list(self.lr),
            "warmup_steps": list(self.warmup_steps),
            "depth": list(self.depth),
            "seeds": self.seeds,
            "steps": self.steps,
        } | {name: list(getattr(self, name)) for name in VARIANT_AXES if getattr(self, name)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SweepConfig:
        """Build from `to_dict()` output (JSON, the store); call `validate()` on the result."""
        return cls(
            base=RunConfig.from_dict(d.get("base", {})),
            norm_position=tuple(d["norm_position"]),
            lr=tuple(float(x) for x in d["lr"]),
            warmup_steps=tuple(int(x) for x in d["warmup_steps"]),
            depth=tuple(int(x) for x in d["depth"]),
            seeds=int(d["seeds"]),
            steps=int(d["steps"]),
            **{name: tuple(kind(x) for x in d[name]) for name, kind in VARIANT_AXES.items() if name in d},
        )

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:32]


def _axis(name: str, values: tuple[Any, ...]) -> None:
    if not values:
        raise SweepError("sweep.err.empty_axis", name)
    if len(values) > MAX_AXIS_VALUES:
        raise SweepError("sweep.err.axis_too_long", name, have=len(values), hi=MAX_AXIS_VALUES)
    if len(set(values)) != len(values):
        raise SweepError("sweep.err.duplicate", name, values=", ".join(map(_fmt, values)))


def _fmt(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


# --- the work estimate ----------------------------------------------------------------------------
@dataclass(frozen=True)
class WorkEstimate:
    """How much a sweep asks for, before it starts."""

    runs: int
    steps: int  # per run
    total_steps: int
    workers: int
    seconds: float  # wall time, the runs spread over `workers` at one thread each

    def text(self) -> str:
        """The CLI's line, e.g. "32 runs x 300 steps, about 2 min on 2 cores" (the page translates it)."""
        cores = "1 core" if self.workers == 1 else f"{self.workers} cores"  # not "on 1 cores"
        return f"{self.runs} runs x {self.steps} steps, about {duration_text(self.seconds)} on {cores}"


def step_seconds(cfg: RunConfig) -> float:
    """Estimated seconds of one training step of `cfg` on one thread."""
    work = cfg.depth * cfg.batch_size * cfg.seq_len * cfg.d_model
    return REF_STEP_S * max(work / REF_WORK, 0.05)


def estimate(spec: SweepConfig, workers: int | None = None, skip: int = 0) -> WorkEstimate:
    """The sweep's size and wall time at `workers` runs at once (default: the cores); `skip` cells
    are already stored and cost nothing."""
    workers = max(1, workers or os.cpu_count() or 1)
    cells = spec.cells()
    seconds = sum(step_seconds(c.config) * c.config.steps for c in cells)
    todo = max(0, len(cells) - skip)
    seconds *= todo / max(1, len(cells))
    # runs of one sweep are alike, so `workers` at once finish in about total / workers
    wall = seconds / min(workers, todo) if todo else 0.0
    return WorkEstimate(todo, spec.steps, todo * spec.steps, workers, wall)


def duration_text(seconds: float, lang: str = "en") -> str:
    """45 s, 2 min, 1.5 h: the rough size of a wait, in `lang`."""
    from ln_viz.i18n import t

    if seconds < 90:
        return t("sweep.dur.s", lang, n=max(1, round(seconds)))
    if seconds < 90 * 60:
        return t("sweep.dur.min", lang, n=round(seconds / 60))
    return t("sweep.dur.h", lang, n=f"{seconds / 3600:.1f}")


# --- the spec in a URL ----------------------------------------------------------------------------
# The stability map page keeps its spec here; the base config's fields use ln_viz.urlstate's names.
QUERY_AXES = {"sm_norm": "norm_position", "sm_lr": "lr", "sm_warmup": "warmup_steps", "sm_depth": "depth"}
QUERY_VARIANTS = {  # only when set
    "sm_qk": "qk_norm", "sm_normtype": "norm_type", "sm_wd": "weight_decay", "sm_adaminit": "adam_init"
}  # fmt: skip
QUERY_KEYS = (*QUERY_AXES, *QUERY_VARIANTS, "sm_seeds", "sm_steps")  # the spec's parameters (ln_viz.urlstate)
_AXIS_TYPES = {"norm_position": str, "lr": float, "warmup_steps": int, "depth": int, **VARIANT_AXES}


def spec_to_query(spec: SweepConfig) -> dict[str, str]:
    """The axes, seeds and steps as short query parameters (sm_lr=0.0003,0.001 ...)."""
    out = {key: ",".join(_fmt(v) for v in getattr(spec, name)) for key, name in QUERY_AXES.items()}
    out |= {
        key: ",".join(_fmt(v) for v in getattr(spec, name))
        for key, name in QUERY_VARIANTS.items()
        if getattr(spec, name)
    }
    out["sm_seeds"] = str(spec.seeds)
    out["sm_steps"] = str(spec.steps)
    return out


@dataclass(frozen=True)
class BadParam:
    """A link's parameter the spec could not use: its name, its value as given, and why."""

    param: str
    value: str
    reason: LocalizedError


def spec_from_query(params: dict[str, Any], default: SweepConfig) -> tuple[SweepConfig, list[BadParam]]:
    """`default` with every usable parameter applied; the ignored ones are returned with the reason
    (a mistyped bookmark still opens a working page). The result is valid. A value is checked against
    the link's own other values: they are applied in rounds until none more fits, so `sm_warmup=0,1000`
    with `sm_steps=2000` (in either order) is the map the page wrote, not warm-up 1000 against the
    default 300 steps."""
    import dataclasses

    keys = {**QUERY_AXES, **QUERY_VARIANTS, "sm_seeds": "seeds", "sm_steps": "steps"}
    parsed: dict[str, Any] = {}
    raws: dict[str, str] = {}
    bad: dict[str, BadParam] = {}
    for key, name in keys.items():
        if params.get(key) is None:
            continue
        raw = raws[key] = params[key][-1] if isinstance(params[key], list) else str(params[key])
        try:
            parsed[key] = _parse_param(key, name, raw)
        except LocalizedError as e:
            bad[key] = BadParam(key, raw, e)
    spec, waiting = default, dict(parsed)
    while waiting:  # each round applies what fits the spec so far; a round that applies nothing ends it
        applied = False
        for key, value in list(waiting.items()):
            try:
                spec = dataclasses.replace(spec, **{keys[key]: value}).validate()
            except LocalizedError as e:  # the last round's reason is the one said
                bad[key] = BadParam(key, raws[key], e)
                continue
            bad.pop(key, None)
            del waiting[key]
            applied = True
        if not applied:
            break
    return spec, [bad[k] for k in keys if k in bad]


def _parse_param(key: str, name: str, raw: str) -> Any:
    """One parameter's value as the spec's field takes it; a SweepError saying what it must be."""
    if name in _AXIS_TYPES:
        parse = _AXIS_TYPES[name]
        try:
            return tuple(parse(s if parse is str else plain_number(s)) for s in raw.split(",") if s)
        except ValueError:
            kind = {float: "numbers", int: "whole numbers"}.get(parse, "names")
            raise SweepError("sweep.err.list", key, flag=key, kind=kind, value=raw) from None
    try:
        return int(plain_number(raw))
    except ValueError:
        raise SweepError("err.not_an_integer", key, value=raw) from None
