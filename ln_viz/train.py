"""The training loop as a generator of Snapshots: a caller can stop between any two steps.

Loss is the mean cross-entropy per token in nats (what is recorded and drawn; with `z_loss` the
gradient is that of CE + z_loss * mean(log Z)^2, PaLM's auxiliary loss, log Z the logits' logsumexp).
Step t (1-based) computes the loss of one batch
with the weights before update t, then applies update t with learning rate lr(t). A non-finite loss or
gradient ends the run with status `diverged` at that step; nothing raises.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator

import torch
import torch.nn.functional as F

from ln_viz.config import ADAM_BETAS, ADAM_EPS, RunConfig
from ln_viz.corpus import Batches, Corpus, eval_windows, load_corpus
from ln_viz.model import TinyLM, build_model
from ln_viz.optim import SGD, Adam, Muon, MuonAdam
from ln_viz.probes import watch
from ln_viz.schedule import lr_at
from ln_viz.snapshot import FINAL_LOSS_WINDOW, RunData, RunInfo, Snapshot
from ln_viz.update_probes import GradNorms, PreconditionerLag, UpdateRatio

# A run is "stalled" when its loss as every page shows it, the mean of its last STALL_WINDOW steps (the
# final loss's own window, snapshot.final_loss), has not got below the unigram entropy by STALL_MARGIN of
# it (5 %): it has learnt the character frequencies and nothing more. One window for the verdict and the
# number beside it: with a 20-step window the no-norm demo was "stalled" at a final loss 5.6 % below the
# unigram loss (issue 21 N10).
# Measured on the english corpus (unigram 2.96 nats; 6 layers, d 64, lr 3e-3, seeds 0-2): Pre-LN and
# warmed-up Post-LN are below 2.5 by step 100 after warm-up; Post-LN without warm-up stays at 2.8-3.0
# for 400 steps. On the markov corpus a bigram-level model (2.23 vs 2.38) already counts as learning.
STALL_MARGIN = 0.05
STALL_WINDOW = FINAL_LOSS_WINDOW  # steps averaged
STALL_MIN_STEPS = 60  # no verdict before this many steps after warm-up


class Trainer:
    """Builds corpus, model and optimizer from a validated config; iterate it for Snapshots."""

    def __init__(self, cfg: RunConfig, corpus: Corpus | None = None) -> None:
        cfg.validate()
        self.cfg = cfg
        self.corpus = corpus or load_corpus(cfg.corpus, cfg.user_text, cfg.seq_len)
        torch.manual_seed(cfg.seed)  # nothing random should be left to the global RNG, but be sure
        self.model: TinyLM = build_model(cfg, self.corpus.vocab_size)
        self.optimizer = make_optimizer(cfg, self.model)
        self.grad_norms = GradNorms(self.model)
        self.update_ratio = UpdateRatio(self.model)
        self.precond_lag = PreconditionerLag(self.model)
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
            x, y = (
                self.eval_x[i : i + bs].to(self.cfg.device),
                self.eval_y[i : i + bs].to(self.cfg.device),
            )
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
            loss, total_grad, probes = self._forward_backward(x, y, probe_step)
            if not (math.isfinite(loss) and math.isfinite(total_grad)):
                elapsed = time.perf_counter() - start
                yield Snapshot(
                    step,
                    loss,
                    lr,
                    total_grad,
                    elapsed,
                    rate,
                    status="diverged",
                    message="msg.diverged",
                    probes=probes,
                )
                return
            if probe_step:
                self.update_ratio.before()
                self._update()
                probes["update_ratio"] = self.update_ratio.after()
                probes["angular_update"] = self.update_ratio.angular
                probes["precond_lag"] = self.precond_lag.measure(opt)
            else:
                self._update()
            now = time.perf_counter()
            rate = 1.0 / max(now - last, 1e-9) if step == 1 else 0.9 * rate + 0.1 / max(now - last, 1e-9)
            last = now
            recent.append(loss)
            del recent[:-STALL_WINDOW]
            stalled = step >= cfg.warmup_steps + STALL_MIN_STEPS and self.is_stalled(recent)
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

    def _update(self) -> None:
        """The optimizer's step, then QK-Clip when it is on (part of the update, as in Kimi K2)."""
        self.optimizer.step()
        if self.cfg.qk_clip:
            self.model.clip_qk(self.cfg.qk_clip)

    def _forward_backward(self, x: torch.Tensor, y: torch.Tensor, probe_step: bool) -> tuple[float, float, dict | None]:
        """One batch's loss and gradients: (loss, total gradient norm, the step's probe arrays so far:
        None off probe steps; the schema's forward-pass ones, plus the gradients' when they are finite)."""
        model = self.model
        self.optimizer.zero_grad(set_to_none=True)
        record = probe_step or self.cfg.qk_clip > 0  # each head's largest logit: QK-Clip's S, and a probe
        model.record_logit_max(record)
        if probe_step:
            with watch(model) as act:
                logits = model(x)
        else:
            logits = model(x)
        model.record_logit_max(False)
        loss_t = F.cross_entropy(logits.flatten(0, 1), y.flatten())
        loss = float(loss_t.detach())
        if math.isfinite(loss):
            objective(loss_t, logits, self.cfg.z_loss).backward()
            total_grad = self.grad_norms.measure()
            clip_gradients(self.grad_norms.params, total_grad, self.cfg.grad_clip)
        else:
            total_grad = float("nan")
        if not probe_step:
            return loss, total_grad, None
        probes = dict(act.arrays)
        probes["attn_logit_max_head"] = model.logit_max().cpu().numpy()
        if math.isfinite(total_grad):
            probes["grad_norm"] = self.grad_norms.per_matrix()
            probes["block_grad_norm"] = self.grad_norms.per_block()
        return loss, total_grad, probes

    def is_stalled(self, recent: list[float]) -> bool:
        return stalled_at(sum(recent) / len(recent), self.info.unigram_entropy)


def stalled_at(loss: float, unigram: float) -> bool:
    """The stall rule: a (final) loss not STALL_MARGIN below the unigram loss, or above it."""
    return loss >= unigram * (1 - STALL_MARGIN)


def objective(ce: torch.Tensor, logits: torch.Tensor, z_loss: float) -> torch.Tensor:
    """What is differentiated: the cross-entropy, plus z_loss * mean over tokens of (log Z)^2 when
    z_loss > 0 (PaLM, Chowdhery et al. 2022: keeps the softmax normaliser near 1)."""
    if not z_loss:
        return ce
    log_z = torch.logsumexp(logits.float(), dim=-1)  # (B, T)
    return ce + z_loss * log_z.square().mean()


@torch.no_grad()
def clip_gradients(params: list[torch.Tensor], total_norm: float, max_norm: float) -> None:
    """Scale all gradients by max_norm / (total_norm + 1e-6) when that is below 1, as
    torch.nn.utils.clip_grad_norm_ does; max_norm 0 is off. A non-finite norm is left to divergence."""
    if not max_norm or not math.isfinite(total_norm):
        return
    coef = max_norm / (total_norm + 1e-6)
    if coef < 1.0:
        torch._foreach_mul_([p.grad for p in params if p.grad is not None], coef)


def make_optimizer(cfg: RunConfig, model: TinyLM) -> Adam | SGD | MuonAdam:
    """The paper's Adam (betas 0.9, 0.98; GI-Adam's v0 = g0^2 under adam_init gi), plain SGD, or Muon on the
    blocks' weight matrices (attention q, k, v, o and the FFN's two) with that Adam on the rest (embeddings, head,
    norms), as Moonshot and Kimi K2 train; each with decoupled weight decay (AdamW's) at the same lr.
    ln_viz.optim computes exactly what torch.optim does, without its 2 s first-use import."""
    if cfg.optimizer == "sgd":
        return SGD(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    if cfg.optimizer == "muon":
        matrices = model.block_matrices()
        taken = {id(p) for p in matrices}
        rest = [p for p in model.parameters() if id(p) not in taken]
        return MuonAdam(
            Muon(matrices, lr=cfg.lr, weight_decay=cfg.weight_decay),
            Adam(rest, lr=cfg.lr, betas=ADAM_BETAS, eps=ADAM_EPS, weight_decay=cfg.weight_decay),
        )
    return Adam(
        model.parameters(), lr=cfg.lr, betas=ADAM_BETAS, eps=ADAM_EPS, weight_decay=cfg.weight_decay, init=cfg.adam_init
    )


def run(cfg: RunConfig, corpus: Corpus | None = None, keep_probes: bool = True) -> RunData:
    """Train to the end and gather every snapshot (for tests, the CLI and scripts)."""
    trainer = Trainer(cfg, corpus)
    data = RunData(trainer.info)
    for snap in trainer:
        if not keep_probes:
            snap.probes = None
        data.append(snap)
    return data
