"""The forward-pass half of an attached run (`ln_viz.byom.probe.Probe` is built on it): the hooks on the
blocks and their norms, the attention taps, and the capture of one probe step's activations; for a
`torch.compile(model)`, the eager shadow forward that runs them on probe steps.

A mixin: `Probe` sets what these methods read (the model, its blocks and norms, the step's arrays, the
guards); kept apart so each file stays one concern.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn

from ln_viz.byom.attention import SdpaTap, attention_stats, mha_query_key, softmax_input_stats
from ln_viz.byom.card import block_input, first_tensor
from ln_viz.byom.measure import _mode_stack, user_stacklevel
from ln_viz.byom.summaries import log_z
from ln_viz.schema import PROBES
from ln_viz.summaries import StepSummaries, tensor_stats


class ForwardProbes:
    """Forward hooks, attention taps and the shadow forward of an attached run (see the module's docstring)."""

    model: nn.Module
    blocks: list[nn.Module]
    norm_names: tuple[str, ...]
    all_params: list[torch.Tensor]
    _arrays: dict[str, np.ndarray] | None
    _armed: bool
    _capturing: bool
    _disabled: set[str]
    _tap: str | None
    _sdpa: SdpaTap | None
    _summaries: StepSummaries
    _blank: dict[str, np.ndarray] | None = None  # the forward arrays, all NaN, copied each probe step
    _vocabs: frozenset[int] | None = None  # the model's vocabulary size (none or one), found once
    # attention written by hand: its softmax is watched in the first probed pass, and after it only where it was seen
    _watch_softmax = True
    _softmax_used = False
    _in_attention: int | None = None  # the block whose attention module is running
    _attn_seen: set[int]  # the blocks whose attention this pass recorded (a set per pass)
    card: Any  # Probe's ModelCard
    _pending: Any  # Probe's Snapshot of the step just taken, stored at the next step's post-hook
    _keep_attention: bool
    attention_probs: dict[int, torch.Tensor]
    _losses: dict[bool, tuple[torch.Tensor, int, bool]]  # by training mode: (their sum, how many, shares of a mean)
    _share = False  # the forward running was given num_items_in_batch: its loss is its share of the step's mean
    # what the sum of the shares is multiplied by: the processes whose tokens num_items_in_batch counted (the HF
    # Trainer under DDP gives each rank's batch its share of the mean over all ranks' tokens; its adapter sets it)
    share_scale = 1
    _eval_capture: bool  # the step's capture is of a forward in eval mode (a model trained after model.eval())
    _said_eval: bool
    _guard: Callable[[str, Callable[..., Any]], Callable[..., Any]]  # Probe's: a failing probe turns itself off

    def _set_tap(self) -> str | None:
        """Switch the HF model to the tapping attention implementation; the one to put back, if switched."""
        original = self.model.config._attn_implementation if self._tap is not None else None
        if original is None or original == self._tap:
            return None
        self.model.set_attn_implementation(self._tap)
        return original

    def _add_activation_hooks(self, handles: list[Any]) -> None:
        """Hooks on the blocks and their norms (block input, residual stream, norm inputs), into `handles`."""
        handles.append(
            self.blocks[0].register_forward_pre_hook(self._guard("activations", self._on_input), with_kwargs=True)
        )
        for i, block in enumerate(self.blocks):
            handles.append(block.register_forward_hook(self._guard("activations", self._on_block(i))))
            attention = _submodule(block, self.card.attention)  # None in a hybrid's Mamba layer
            if isinstance(attention, nn.MultiheadAttention):  # its sdpa runs where the sdpa mode cannot see it
                hook = self._guard("attention", self._on_mha(i))
                handles.append(attention.register_forward_pre_hook(hook, with_kwargs=True))
            elif attention is not None and self._watch_softmax:  # which block a softmax of scores belongs to
                handles.append(attention.register_forward_pre_hook(lambda m, a, i=i: setattr(self, "_in_attention", i)))
                handles.append(attention.register_forward_hook(lambda m, a, o: setattr(self, "_in_attention", None)))
            for j, name in enumerate(self.norm_names):
                if (norm := _submodule(block, name)) is None:
                    continue
                handles.append(norm.register_forward_pre_hook(self._guard("activations", self._on_norm(i, j))))

    def _on_model_in(self, module: nn.Module, args: tuple, kwargs: dict) -> None:
        """A probe step captures its first forward with gradients in training mode. A forward with gradients in
        eval mode (a model trained after `model.eval()`, dropout off, or an evaluation run without no_grad) is
        captured too, for a step that has none in training mode: one in training mode later in the step replaces
        it. Under no_grad nothing is captured."""
        self._share = kwargs.get("num_items_in_batch") is not None
        if self._claim(module.training):
            self._begin_capture()

    def _claim(self, training: bool) -> bool:
        """Whether a forward with this training mode starting now is the one the probe step captures (see
        _on_model_in), the flags set for it."""
        if not torch.is_grad_enabled() or self._capturing:
            return False
        if training and (self._armed or self._eval_capture):
            self._armed = self._eval_capture = False
            return True
        if not training and self._armed:
            self._armed, self._eval_capture = False, True
            return True
        return False

    def _begin_capture(self) -> None:
        self._capturing = True
        if self._blank is None:  # the step's forward arrays, all NaN: built once, copied each probe step
            dims = self._dims()
            forward = [n for n, m in PROBES.items() if m.source == "forward"]
            self._blank = {n: np.full(PROBES[n].shape_for(dims), np.nan, np.float32) for n in forward}
        self._arrays = {n: a.copy() for n, a in self._blank.items()}
        self._summaries.clear()
        self._attn_seen, self._softmax_used = set(), False
        if self._sdpa is not None and "attention" not in self._disabled:
            if self._sdpa.on_call is not None or (self._watch_softmax and self.card.attention):
                self._sdpa.calls = 0
                self._sdpa.__enter__()

    def _on_model_out(self, module: nn.Module, args: tuple, out: Any) -> None:
        if not torch.is_grad_enabled():
            return
        loss = self._logits_and_loss(out)[1]
        if loss is not None and loss.numel() == 1:
            d, mode = loss.detach().float(), module.training
            total, n, shares = self._losses.get(mode, (None, 0, True))
            self._losses[mode] = (d if total is None else total + d, n + 1, shares and self._share)
        if module.training or self._eval_capture:
            self._end_capture(out)

    def _step_loss(self) -> float | None:
        """The mean loss of the step's forwards with gradients in training mode (the model's own output's
        `loss`), or of those in eval mode where there were none; None without any. Where each forward was given
        `num_items_in_batch` (the Hugging Face Trainer under gradient accumulation: a batch's loss is its summed
        token losses over the step's count), their sum: each is its share of the step's mean; under DDP, where the
        count was of every process's tokens, their sum times `share_scale`, the number of processes."""
        total, n, shares = self._losses.get(True) or self._losses.get(False) or (None, 0, False)
        return None if total is None else float(total) * self.share_scale if shares else float(total) / n

    def step_has_loss(self) -> bool:
        """Whether the optimizer step just taken has a loss of its own forwards (their output's `loss`)."""
        return self._pending is not None and math.isfinite(self._pending.loss)

    def _say_if_trained_in_eval_mode(self) -> None:
        """One warning, the first probe step whose capture was of a forward in eval mode."""
        if self._eval_capture and not self._said_eval:
            self._said_eval = True
            warnings.warn(
                "ln-viz: the model's forward passes with gradients ran in eval mode (model.eval(): dropout off); "
                "its activations are probed on those passes, as it trained; call model.train() if it should train "
                "with dropout.",
                RuntimeWarning,
                stacklevel=user_stacklevel(),
            )

    def _end_capture(self, out: Any) -> None:
        if self._capturing and self._arrays is not None and "logz" not in self._disabled:
            logits, loss = self._logits_and_loss(out)
            if logits is not None:
                self._guard("logz", self._logz)(logits, loss)
        self._stop_capture()

    def _logits_and_loss(self, out: Any) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """(the logits, the loss) among the model's outputs, each None where there is none: a Hugging Face output's
        `logits` and `loss`; in a tuple or list (nanoGPT's (logits, loss), `return_dict=False`'s (loss, logits,
        ...)) the first floating tensor of 2 or more axes that is logits, and the first 0-d floating tensor. A
        tensor is logits unless its last axis is the residual stream's width and not the vocabulary's size (the row
        count of its largest embedding, or its config's vocab_size): hidden states have no log Z."""
        if self._vocabs is None:  # the config's vocab_size, else the largest embedding's rows (not the positions')
            size = getattr(getattr(self.model, "config", None), "vocab_size", None)
            rows = [m.num_embeddings for m in self.model.modules() if isinstance(m, nn.Embedding)]
            self._vocabs = frozenset([size] if isinstance(size, int) else [max(rows)] if rows else [])

        def is_logits(t: Any) -> bool:
            return (
                isinstance(t, torch.Tensor) and t.is_floating_point() and t.ndim >= 2
                and (t.shape[-1] != self.card.d_model or t.shape[-1] in self._vocabs)
            )  # fmt: skip

        if isinstance(out, (tuple, list)):
            loss = next((t for t in out if isinstance(t, torch.Tensor) and t.is_floating_point() and t.ndim == 0), None)
            return next((t for t in out if is_logits(t)), None), loss
        if isinstance(out, torch.Tensor):
            return (out if is_logits(out) else None), None
        logits, loss = getattr(out, "logits", None), getattr(out, "loss", None)
        return (logits if is_logits(logits) else None), (loss if isinstance(loss, torch.Tensor) else None)

    def _on_compiled_in(self, module: nn.Module, args: tuple, kwargs: dict) -> None:
        """The compiled wrapper's forward pre-hook: on the forward a probe step captures (_on_model_in), the shadow."""
        self._share = kwargs.get("num_items_in_batch") is not None
        if self._claim(module.training):
            self._shadow(lambda: self.model(*args, **kwargs))

    def _shadow(self, run: Callable[[], Any]) -> None:
        """`run()`, the original module's forward on the batch the compiled one is about to see (or an
        adapter's eager step that calls it), under no_grad, with the activation hooks and the attention tap
        on for it alone (log Z from the module's own output); the random state (dropout) and the buffers (a
        norm's running statistics) as they were, so the compiled step computes what it would."""
        handles: list[Any] = []
        restore = None
        buffers = list(self.model.buffers())
        saved = [b.detach().clone() for b in buffers]
        devices = sorted({p.device.index or 0 for p in self.all_params[:1] if p.device.type == "cuda"})
        try:
            self._add_activation_hooks(handles)
            handles.append(self.model.register_forward_hook(lambda module, args, out: self._end_capture(out)))
            restore = self._set_tap()
            self._begin_capture()
            with torch.no_grad(), torch.random.fork_rng(devices=devices):
                run()
        finally:
            self._stop_capture()
            for h in handles:
                h.remove()
            if restore is not None:
                self.model.set_attn_implementation(restore)
            with torch.no_grad():
                for b, v in zip(buffers, saved):
                    b.copy_(v)

    @torch.no_grad()
    def _logz(self, logits: torch.Tensor, loss: Any = None) -> None:
        assert self._arrays is not None
        self._arrays["logz_stats"][:] = tensor_stats(log_z(logits, loss))

    def _stop_capture(self) -> None:
        if self._capturing and self._arrays is not None:  # the pass's activations, summarised together
            self._guard("activations", self._summaries.finish)(self._arrays)
        self._summaries.clear()
        if self._capturing and self._sdpa is not None and self._sdpa in _mode_stack():
            self._sdpa.__exit__(None, None, None)
            self._watch_softmax = self._softmax_used  # after the first pass: on only where it was needed
        self._capturing = False

    def _on_input(self, module: nn.Module, args: tuple, kwargs: dict) -> None:
        if self._capturing and self._arrays is not None:
            x = block_input(args, kwargs)
            if x is not None:
                self._summaries.add(self._arrays, x, ("input_stats", ()))

    def _on_block(self, i: int) -> Callable[..., None]:
        def hook(module: nn.Module, args: tuple, out: Any) -> None:
            if self._capturing and self._arrays is not None:
                y = first_tensor(out)
                if y is not None:
                    self._summaries.add(self._arrays, y, ("resid_stats", i), ("resid_hist", i), massive=i)

        return hook

    def _on_norm(self, i: int, j: int) -> Callable[..., None]:
        def hook(module: nn.Module, args: tuple) -> None:
            if self._capturing and self._arrays is not None:
                x = first_tensor(args)
                if x is not None:
                    self._summaries.add(self._arrays, x, ("norm_in_stats", (i, j)), ("norm_in_hist", (i, j)))

        return hook

    def _record_attention(
        self, i: int, q: Any, k: Any, mask: Any, scaling: Any, softcap: Any, causal: bool, sinks: Any = None
    ) -> None:
        if not (self._capturing and self._arrays is not None) or i >= len(self.blocks):
            return
        self._store_attention(i, *attention_stats(q, k, mask, scaling, softcap, causal, self._keep_attention, sinks))

    def _store_attention(self, i: int, largest: float, entropy: float, p: torch.Tensor | None) -> None:
        assert self._arrays is not None
        self._arrays["attn_logit_max"][i] = largest
        self._arrays["attn_entropy"][i] = entropy
        if p is not None:
            self.attention_probs[i] = p
        self._attn_seen.add(i)

    def _on_softmax(self, z: torch.Tensor, dim: Any) -> None:
        """A softmax over the last axis of (B, H, T, S) scores while block i's attention module runs, where no
        other tap recorded that block in this pass: attention written by hand. XGLM's and TrOCR's (B * H, T, T)
        self-attention scores are taken as (B, H, T, T), the card's heads inner, as their code lays them out."""
        i = self._in_attention
        if i is None or i in self._attn_seen or not (self._capturing and self._arrays is not None):
            return
        heads = self.card.heads
        if z.ndim == 3 and dim in (-1, 2) and heads and z.shape[0] % heads == 0 and z.shape[1] == z.shape[2] > 1:
            z, dim = z.view(z.shape[0] // heads, heads, *z.shape[1:]), -1
        if self._watch_softmax and z.ndim == 4 and dim in (-1, 3) and z.is_floating_point():
            self._store_attention(i, *softmax_input_stats(z, self._keep_attention))
            self._softmax_used = True

    def _on_hf_attention(self, i: int) -> Callable[..., None]:
        def listener(module, query, key, mask, scaling, softcap, causal, sinks=None) -> None:
            self._record_attention(i, query, key, mask, scaling, softcap, causal, sinks)

        return listener

    def _on_mha(self, i: int) -> Callable[..., None]:
        def hook(module: nn.MultiheadAttention, args: tuple, kwargs: dict) -> None:
            if self._capturing and self._arrays is not None and (seen := mha_query_key(module, args, kwargs)):
                q, k, mask, causal = seen
                self._record_attention(i, q, k, mask, None, None, causal)

        return hook

    def _on_sdpa(self, i: int, q: Any, k: Any, mask: Any, scale: Any, causal: bool) -> None:
        self._record_attention(i, q, k, mask, scale, None, causal)


def _submodule(block: nn.Module, path: str) -> nn.Module | None:
    """The block's module at `path`, or None where it has none (a hybrid's layers differ) or `path` is empty."""
    try:
        return block.get_submodule(path) if path else None
    except AttributeError:
        return None
