"""The training loop as a generator of Snapshots: a caller can stop between any two steps.

Loss is the mean cross-entropy per token in nats. Step t (1-based) computes the loss of one batch
with the weights before update t, then applies update t with learning rate lr(t). A non-finite loss or
gradient ends the run with status `diverged` at that step; nothing raises.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from ln_viz.config import ADAM_BETAS, ADAM_EPS, RunConfig
from ln_viz.corpus import Batches, Corpus, eval_windows, load_corpus
from ln_viz.model import PARAM_NAMES, TinyLM, build_model
from ln_viz.probes import HIST_EDGES, STAT_NAMES, UpdateRatio, grad_norms, watch

STATUSES = ("queued", "running", "completed", "diverged", "stalled", "stopped", "failed", "interrupted")
TERMINAL = ("completed", "diverged", "stalled", "stopped", "failed", "interrupted")

# A run is "stalled" when its recent loss is still within STALL_MARGIN nats of the unigram entropy: it
# has learnt the character frequencies and nothing more. Measured on the english corpus: runs that
# learn leave the unigram loss (about 3.0 nats) by more than 0.5 nats within 150 steps; stuck Post-LN
# runs stay within 0.05 of it.
STALL_MARGIN = 0.15
STALL_WINDOW = 20  # steps averaged
STALL_MIN_STEPS = 60  # no verdict before this many steps


def lr_at(cfg: RunConfig, step: int) -> float:
    """Learning rate of update `step` (1-based): linear warm-up from 0 (the paper's t/T * lr_max), then
    the schedule."""
    w = cfg.warmup_steps
    if w and step <= w:
        return cfg.lr * step / w
    if cfg.schedule == "inverse_sqrt":
        return cfg.lr * math.sqrt(max(w, 1) / step)
    if cfg.schedule == "cosine":
        span = max(cfg.steps - w, 1)
        return cfg.lr * 0.5 * (1 + math.cos(math.pi * min(step - w, span) / span))
    return cfg.lr


def lr_schedule(cfg: RunConfig) -> np.ndarray:
    """lr(t) for t = 1..steps."""
    return np.array([lr_at(cfg, t) for t in range(1, cfg.steps + 1)])


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


class Trainer:
    """Builds corpus, model and optimizer from a validated config; iterate it for Snapshots."""

    def __init__(self, cfg: RunConfig, corpus: Corpus | None = None) -> None:
        cfg.validate()
        self.cfg = cfg
        self.corpus = corpus or load_corpus(cfg.corpus, cfg.user_text, cfg.seq_len)
        torch.manual_seed(cfg.seed)  # nothing random should be left to the global RNG, but be sure
        self.model: TinyLM = build_model(cfg, self.corpus.vocab_size)
        self.optimizer = make_optimizer(cfg, self.model)
        self.batches = Batches(self.corpus.train_ids, cfg.batch_size, cfg.seq_len, cfg.seed, cfg.device)
        self.eval_x, self.eval_y = eval_windows(self.corpus.val_ids, cfg.seq_len)
        self.info = RunInfo(
            config=cfg,
            vocab_size=self.corpus.vocab_size,
            n_params=sum(p.numel() for p in self.model.parameters()),
            unigram_entropy=self.corpus.unigram_entropy,
            floor=self.corpus.floor(cfg.seq_len),
            norm_names=self.model.norm_names(),
        )

    def is_probe_step(self, step: int) -> bool:
        n = self.cfg.probe_every
        return n > 0 and (step == 1 or step % n == 0 or step == self.cfg.steps)

    def is_eval_step(self, step: int) -> bool:
        n = self.cfg.eval_every
        return n > 0 and (step % n == 0 or step == self.cfg.steps)

    @torch.no_grad()
    def held_out_loss(self) -> float:
        self.model.eval()
        total, count = 0.0, 0
        bs = self.cfg.batch_size
        for i in range(0, len(self.eval_x), bs):
            x, y = self.eval_x[i : i + bs].to(self.cfg.device), self.eval_y[i : i + bs].to(self.cfg.device)
            logits = self.model(x)
            total += float(F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="sum"))
            count += y.numel()
        self.model.train()
        return total / count

    def __iter__(self) -> Iterator[Snapshot]:
        cfg, model, opt = self.cfg, self.model, self.optimizer
        model.train()
        recent: list[float] = []
        start = last = time.perf_counter()
        rate = 0.0
        for step in range(1, cfg.steps + 1):
            lr = lr_at(cfg, step)
            for group in opt.param_groups:
                group["lr"] = lr
            x, y = self.batches.next()
            probe_step = self.is_probe_step(step)
            opt.zero_grad(set_to_none=True)
            if probe_step:
                with watch(model) as act:
                    logits = model(x)
            else:
                logits = model(x)
            loss_t = F.cross_entropy(logits.flatten(0, 1), y.flatten())
            loss = float(loss_t.detach())
            probes = None
            if math.isfinite(loss):
                loss_t.backward()
                total_grad = float(torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in model.parameters()])))
            else:
                total_grad = float("nan")
            if probe_step:
                probes = {
                    "resid_hist": act.resid_hist,
                    "resid_stats": act.resid_stats,
                    "norm_in_hist": act.norm_in_hist,
                    "norm_in_stats": act.norm_in_stats,
                    "attn_entropy": act.attn_entropy,
                    "input_stats": act.input_stats,
                }
                if math.isfinite(total_grad):
                    probes["grad_norm"], probes["block_grad_norm"] = grad_norms(model)
            if not (math.isfinite(loss) and math.isfinite(total_grad)):
                elapsed = time.perf_counter() - start
                yield Snapshot(
                    step, loss, lr, total_grad, elapsed, rate, status="diverged", message="msg.diverged", probes=probes
                )
                return
            if probe_step:
                ratio = UpdateRatio(model)
                ratio.before()
                opt.step()
                probes["update_ratio"] = ratio.after()
            else:
                opt.step()
            now = time.perf_counter()
            rate = 1.0 / max(now - last, 1e-9) if step == 1 else 0.9 * rate + 0.1 / max(now - last, 1e-9)
            last = now
            recent.append(loss)
            del recent[:-STALL_WINDOW]
            stalled = step >= STALL_MIN_STEPS and self.is_stalled(recent)
            eval_loss = self.held_out_loss() if self.is_eval_step(step) else None
            final = step == cfg.steps
            status = ("stalled" if stalled else "completed") if final else "running"
            yield Snapshot(
                step,
                loss,
                lr,
                total_grad,
                time.perf_counter() - start,
                rate,
                status=status,
                stalled=stalled,
                eval_loss=eval_loss,
                message="msg.stalled" if stalled else None,
                probes=probes,
            )

    def is_stalled(self, recent: list[float]) -> bool:
        return sum(recent) / len(recent) >= self.info.unigram_entropy - STALL_MARGIN


def make_optimizer(cfg: RunConfig, model: TinyLM) -> torch.optim.Optimizer:
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(model.parameters(), lr=cfg.lr)
    return torch.optim.Adam(model.parameters(), lr=cfg.lr, betas=ADAM_BETAS, eps=ADAM_EPS)


@dataclass
class RunResult:
    """Everything a finished (or stopped) run measured, collected from its snapshots."""

    info: RunInfo
    snapshots: list[Snapshot]

    @property
    def status(self) -> str:
        return self.snapshots[-1].status if self.snapshots else "queued"

    @property
    def losses(self) -> list[float]:
        return [s.loss for s in self.snapshots]

    @property
    def steps_done(self) -> int:
        return self.snapshots[-1].step if self.snapshots else 0

    def final_loss(self, window: int = 10) -> float | None:
        """Mean of the last `window` finite losses (one batch is noisy)."""
        finite = [x for x in self.losses if math.isfinite(x)][-window:]
        return sum(finite) / len(finite) if finite else None


def run(cfg: RunConfig, corpus: Corpus | None = None, keep_probes: bool = True) -> RunResult:
    """Train to the end and collect every snapshot (for tests, the CLI and scripts)."""
    trainer = Trainer(cfg, corpus)
    snaps = []
    for snap in trainer:
        if not keep_probes:
            snap.probes = None
        snaps.append(snap)
    return RunResult(trainer.info, snaps)
