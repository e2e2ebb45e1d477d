"""`attach(model, optimizer, ...)`: ln-viz's probes on a model ln-viz did not build, while the user's loop
runs unchanged, into ln-viz's store.

When things are read (measured in the design note for plain loops, the HF Trainer and Lightning):
- steps are counted by the optimizer's step *post*-hook, so gradient accumulation and evaluation passes do
  not shift them; probe steps are 1, every `every`-th and the last (`steps=`, or never known);
- the optimizer's step *pre*-hook snapshots the block weights on probe steps (the update ratio); the
  post-hook reads `.grad` as the update used it (after unscaling and clipping) for the per-matrix norms;
- forward hooks are armed at the previous step's post-hook (Lightning runs forward inside `step()`), and
  capture only the first training-mode forward with gradients of a probe step; nothing under no_grad/eval.
- a `torch.compile(model)` is probed by an eager shadow forward: hooks on the compiled graph's modules are
  traced once and hooks added later are not seen (torch's `skip_nnmodule_hook_guards`), so on a probe step
  the compiled wrapper's own forward pre-hook (it runs eagerly) runs the original module (`_orig_mod`, the
  same parameters) on the same batch under no_grad, with the activation and attention hooks added for that
  forward only, the random state forked and the buffers put back; the gradient and update probes read the
  parameters in the optimizer's hooks, as for an eager model. The compiled graph never sees a hook.

Probes never change the user's numbers (no_grad, detached; the attention tap delegates to the original);
a probe that fails disables itself with one warning. `close()` (idempotent; also at exit) removes every
hook it added, restores the attention implementation and finishes the stored run.
"""

from __future__ import annotations

import atexit
import math
import os
import time
import warnings
import weakref
from collections.abc import Callable
from typing import Any, Self

import numpy as np
import torch
from torch import nn

from ln_viz.byom.attention import _LISTENERS, SdpaTap, hf_tap_name
from ln_viz.byom.card import ModelCard, describe, is_compiled, unwrap
from ln_viz.byom.forward import ForwardProbes, _submodule
from ln_viz.byom.measure import check_attach_args, grad_norms, is_probe_step, update_ratio, user_stacklevel
from ln_viz.config import RunConfig
from ln_viz.schema import HIST_BINS, PROBES, STAT_NAMES, probe_dims
from ln_viz.snapshot import RunInfo, Snapshot
from ln_viz.store import RunWriter
from ln_viz.summaries import StepSummaries
from ln_viz.update_probes import WeightCopies

GRAD_NORM_APPLIED, GRAD_NORM_PRECLIP = "applied", "pre-clip"  # the grad_norm scalar: after clip, or before
_ATTACHED: weakref.WeakKeyDictionary[nn.Module, Probe] = weakref.WeakKeyDictionary()  # model -> its open probe


def _close_earlier(model: nn.Module) -> None:
    """Close the probe still attached to `model`, with one warning: two would tap the same attention layers (the
    first recorded none), and a notebook cell run again has lost the first."""
    if (earlier := _ATTACHED.get(model)) is not None and not earlier._closed:
        warnings.warn(
            f"ln-viz: this model was already attached (run {earlier.run_id}); that probe is closed now, its run "
            "stopped at its last step, and this one records from here.",
            RuntimeWarning,
            stacklevel=user_stacklevel(),
        )
        earlier.close("stopped")


class Probe(ForwardProbes):
    """One attached run: hooks on the model and optimizer, a writer into the store. Use as a context
    manager, or call `close()`; `.log(loss=..., lr=...)` adds scalars to the step just taken."""

    def __init__(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        *,
        store: str | os.PathLike[str] | None = None,
        every: int = 10,
        label: str | None = None,
        layout: str | None = None,
        steps: int | None = None,
        example: Any = None,
        shadowed: bool = False,
    ) -> None:
        check_attach_args(model, optimizer, every, steps)
        self.compiled = model if is_compiled(model) else None  # torch.compile's wrapper: a shadow forward
        self.shadowed = shadowed  # compiled with no wrapper to hook: no hook on the model, the adapter's `shadow`
        self.model, self.optimizer = unwrap(model), optimizer
        _close_earlier(self.model)  # before describe: the first's attention tap is not this model's own
        self.every, self.steps = int(every), None if steps is None else int(steps)
        self.card: ModelCard = describe(model, layout=layout, example=example)
        self.blocks = list(self.model.get_submodule(self.card.blocks))
        self.norm_names = self.card.residual_norms
        self.matrix_names = tuple(m.name for m in self.card.matrices)
        self._init_params()
        self.step = 0  # optimizer steps taken while attached
        self._traced = False  # a forward hook was traced by torch.compile (the model compiled after attach)
        self._closed = self._armed = self._capturing = self._eval_capture = self._said_eval = False
        self._arrays: dict[str, np.ndarray] | None = None
        self._before: WeightCopies | None = None  # the copies taken before a probe step's update
        self._copies: WeightCopies | None = None  # the block weights' copies, reused each probe step
        self._pending: Snapshot | None = None
        self._losses: dict[bool, tuple[torch.Tensor, int, bool]] = {}
        self._logged: dict[str, float] = {}
        self._preclip: float | None = None
        self._t0 = time.monotonic()
        self._disabled: set[str] = set()
        self._handles: list[Any] = []
        self._step_handles: list[Any] = []  # the activation hooks, there for probe steps only (`_arm`)
        self._listeners: dict[int, Callable[..., None]] = {}  # the attention tap's, in _LISTENERS when armed
        self._attn_index: dict[int, int] = {}  # id(attention module) -> block
        self._restore_impl: str | None = None  # the HF attention implementation to put back
        self._tap: str | None = None  # the HF attention implementation that taps (None: the sdpa mode)
        self._sdpa: SdpaTap | None = None
        self._summaries = StepSummaries()  # a probed pass's activations, summarised when it ends
        self._keep_attention = False  # tests: keep each layer's probabilities in `attention_probs`
        self.attention_probs: dict[int, torch.Tensor] = {}
        self.grad_norm_kind = GRAD_NORM_APPLIED
        # committed once a second (the writer's default is twice): its thread's time is the user's too, and the
        # app's live view follows a run at that pace
        self._writer = RunWriter(store, flush_every=1.0)
        self.run_id: int | None = self._writer.begin(self._info(label), label=label, model_card=self.card.to_dict())
        try:
            self._attach_hooks()
        except BaseException:  # the hooks added so far come off; the run's row says it failed
            self.close("failed")
            raise
        self._arm(is_probe_step(1, self.every, self.steps))
        _ATTACHED[self.model] = self
        atexit.register(self.close)

    def _init_params(self) -> None:
        self.matrices: list[list[torch.Tensor | None]] = []
        for block in self.blocks:
            own = dict(block.named_parameters())
            self.matrices.append([own.get(n) for n in self.matrix_names])
        self.block_params = [[p for p in b.parameters() if p.requires_grad] for b in self.blocks]
        self.all_params = [p for p in self.model.parameters() if p.requires_grad]

    def _info(self, label: str | None) -> RunInfo:
        """A RunInfo whose shapes are this model's (its norms and matrices by their own names). Its config
        is a stand-in holding what fits (depth, width, lr); the card is the truth about the model."""
        card = self.card
        lr = float(self.optimizer.param_groups[0].get("lr", 0.0)) if self.optimizer.param_groups else 0.0
        heads = card.heads or 1
        config = RunConfig(
            norm_position=card.placement if card.placement in ("post", "pre", "peri", "reordered", "none") else "pre",
            depth=card.depth,
            d_model=card.d_model,
            heads=heads,
            lr=lr if math.isfinite(lr) else 0.0,
            steps=int(self.steps or 0),
            probe_every=self.every,
            eval_every=0,
        )
        return RunInfo(
            config=config,
            vocab_size=int(getattr(getattr(self.model, "config", None), "vocab_size", 0) or 0),
            n_params=card.n_params,
            unigram_entropy=0.0,
            floor=None,
            norm_names=list(self.norm_names),
            param_names=self.matrix_names,
        )

    def _dims(self) -> dict[str, int]:
        heads = self.card.heads or 1  # as _info's config (the per-head logit array stays NaN for a model of yours)
        n_norms, n_params = len(self.norm_names), len(self.matrix_names)
        return probe_dims(len(self.blocks), n_norms, n_params, HIST_BINS, len(STAT_NAMES), heads)

    def _attach_hooks(self) -> None:
        opt = self.optimizer
        self._handles.append(opt.register_step_pre_hook(self._guard("update", self._on_pre_step)))
        self._handles.append(opt.register_step_post_hook(self._guard("step", self._on_post_step)))
        for i, block in enumerate(self.blocks):
            if (attention := _submodule(block, self.card.attention)) is not None:
                self._attn_index[id(attention)] = i
        self._tap = hf_tap_name(self.model) if self._attn_index else None
        if self._tap is not None:
            for key, i in self._attn_index.items():
                self._listeners[key] = self._guard("attention", self._on_hf_attention(i))
            self.attention_tap = "AttentionInterface"
        else:
            self.attention_tap = "sdpa"
        # sdpa's calls where the AttentionInterface does not drive the model; the softmax of attention written by hand
        on_sdpa = self._guard("attention", self._on_sdpa) if self._tap is None else None
        self._sdpa = SdpaTap(on_sdpa, self._guard("attention", self._on_softmax))
        if self.shadowed:  # nothing on the model: its activation hooks are added per `shadow` call
            return
        if self.compiled is not None:  # only the wrapper's hooks, which run eagerly; the rest per shadow forward
            c = self.compiled
            self._handles.append(
                c.register_forward_pre_hook(self._guard("forward", self._on_compiled_in), with_kwargs=True)
            )
            self._handles.append(c.register_forward_hook(self._guard("forward", self._on_model_out)))
            return
        m = self.model
        self._handles.append(m.register_forward_pre_hook(self._guard("forward", self._on_model_in), with_kwargs=True))
        self._handles.append(m.register_forward_hook(self._guard("forward", self._on_model_out)))
        self._restore_impl = self._set_tap()

    def _arm(self, armed: bool) -> None:
        """Whether the next step probes: its activation hooks and attention listeners are on from now until
        the step's post-hook, and off otherwise, so the forwards between probe steps run without them (a
        compiled model's are added per shadow forward)."""
        self._armed, self._eval_capture = armed, False
        if armed and not self._closed:
            _LISTENERS.update(self._listeners)
            if self.compiled is None and not self.shadowed and not self._step_handles:
                self._add_activation_hooks(self._step_handles)
            return
        for key in self._listeners:
            _LISTENERS.pop(key, None)
        for h in self._step_handles:
            h.remove()
        self._step_handles.clear()

    def _guard(self, probe: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """`fn` that never raises into the user's run: a failure disables `probe` with one warning."""

        def guarded(*args: Any, **kwargs: Any) -> Any:
            if torch.compiler.is_compiling():  # traced into a graph compiled after attach: a no-op there
                self._traced = True
                return None
            if probe in self._disabled or self._closed:
                return None
            try:
                return fn(*args, **kwargs)
            except Exception as e:  # a probe must never stop the user's training
                self._disabled.add(probe)
                warnings.warn(
                    f"ln-viz: the {probe} probe failed and is off for the rest of this run ({type(e).__name__}: {e})",
                    RuntimeWarning,
                    stacklevel=user_stacklevel(),
                )
                return None

        return guarded

    # --- the optimizer's step -------------------------------------------------------------------------
    @torch.no_grad()
    def _on_pre_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if is_probe_step(self.step + 1, self.every, self.steps):
            if self._copies is None:
                self._copies = WeightCopies([p for ps in self.block_params for p in ps])
            self._before = self._copies.take()

    @torch.no_grad()
    def _on_post_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self._traced and "traced" not in self._disabled:
            self._disabled.add("traced")
            warnings.warn(
                "ln-viz: the model was compiled after attach, so its activation and attention probes do nothing "
                "inside the compiled graph; attach to the compiled model instead "
                "(compiled = torch.compile(model); ln_viz.attach(compiled, optimizer)).",
                RuntimeWarning,
                stacklevel=user_stacklevel(),
            )
        self._emit_pending()
        self.step += 1
        probes = None
        grad_norm = math.nan
        if is_probe_step(self.step, self.every, self.steps):
            probes, grad_norm = self._measure_step()
        lr = float(self.optimizer.param_groups[0].get("lr", math.nan))
        if self._preclip is not None:
            grad_norm, self._preclip = self._preclip, None
        # the loss of the forwards since the last step's post-hook: this step's (a `log(loss=...)` after it wins)
        loss, self._losses = self._step_loss(), {}
        loss = math.nan if loss is None else loss
        self._pending = Snapshot(self.step, loss, lr, grad_norm, 0.0, 0.0, probes=probes)
        self._stop_capture()
        self._arm(is_probe_step(self.step + 1, self.every, self.steps))

    def _measure_step(self) -> tuple[dict[str, np.ndarray], float]:
        self._stop_capture()  # a pass still capturing (its output hook never ran) puts its summaries in
        dims = self._dims()
        arrays = self._arrays if self._arrays is not None else {}
        self._arrays = None
        out = {name: arrays[name] for name in arrays}
        if "grads" not in self._disabled:
            try:
                grads, total = grad_norms(
                    self.all_params, self.matrices, self.block_params, PROBES["grad_norm"].shape_for(dims)
                )
                out.update(grads)
            except Exception as e:
                self._disabled.add("grads")
                warnings.warn(
                    f"ln-viz: the gradient probe failed and is off ({type(e).__name__}: {e})",
                    RuntimeWarning,
                    stacklevel=user_stacklevel(),
                )
                total = math.nan
        else:
            total = math.nan
        if self._before is not None and "update" not in self._disabled:
            out["update_ratio"] = update_ratio(self._before, self.block_params)
        self._before = None
        self._say_if_attention_unseen(out)
        self._say_if_trained_in_eval_mode()
        return out, total

    def _say_if_attention_unseen(self, out: dict[str, np.ndarray]) -> None:
        """One warning, on the first probe step that captured the blocks, when no layer's attention was seen: through
        neither Hugging Face's attention functions, F.scaled_dot_product_attention, nn.MultiheadAttention nor a
        softmax of (batch, heads, query, key) scores, so its attention probes stay empty (NaN)."""
        resid, logits = out.get("resid_stats"), out.get("attn_logit_max")
        if "unseen" in self._disabled or resid is None or logits is None or not np.isfinite(resid).any():
            return
        self._disabled.add("unseen")
        if self.card.attention and "attention" not in self._disabled and np.isnan(logits).all():
            warnings.warn(
                f"ln-viz: no attention of {self.card.family} (in {self.card.attention}) ran where ln-viz taps it "
                "(Hugging Face's attention functions, F.scaled_dot_product_attention, nn.MultiheadAttention, or a "
                "softmax of (batch, heads, query, key) scores), so its attention probes (largest logit, entropy) stay "
                "empty; the others are recorded.",
                RuntimeWarning,
                stacklevel=user_stacklevel(),
            )

    # --- scalars and the store ------------------------------------------------------------------------
    def log(self, *, loss: float | None = None, lr: float | None = None, grad_norm: float | None = None) -> None:
        """Scalars of the step just taken (call it after `optimizer.step()`); `grad_norm` is the pre-clip
        total norm where the framework computed one."""
        for name, value in (("loss", loss), ("lr", lr), ("grad_norm", grad_norm)):
            if value is not None:
                self._logged[name] = float(value.detach()) if isinstance(value, torch.Tensor) else float(value)
        if grad_norm is not None:
            self.grad_norm_kind = GRAD_NORM_PRECLIP

    def shadow(self, run: Callable[[], Any]) -> None:
        """For `shadowed=True`: on a probe step's first call, `run()` (the eager training step on the step's
        batch, called before the compiled one) runs as the shadow forward: under no_grad, the activation
        hooks and the attention tap on for it alone, the random state forked and the buffers put back."""
        if self._armed and not self._capturing and not self._closed and "forward" not in self._disabled:
            self._armed = False
            self._guard("forward", self._shadow)(run)

    def note_grad_norm(self, total: float) -> None:
        """The pre-clip total gradient norm of the step about to be taken (Lightning's
        on_before_optimizer_step): the step's grad_norm scalar."""
        self._preclip = float(total)
        self.grad_norm_kind = GRAD_NORM_PRECLIP

    def _emit_pending(self) -> None:
        snap = self._pending
        if snap is None:
            return
        self._pending = None
        if "loss" in self._logged:
            snap.loss = self._logged["loss"]
        if "lr" in self._logged:
            snap.lr = self._logged["lr"]
        if "grad_norm" in self._logged:
            snap.grad_norm = self._logged["grad_norm"]
        self._logged = {}
        snap.elapsed = time.monotonic() - self._t0
        snap.steps_per_sec = snap.step / snap.elapsed if snap.elapsed > 0 else 0.0
        self._writer.add(snap)

    def close(self, status: str | None = None) -> None:
        """Remove every hook, restore the attention implementation, store the last step and finish the
        run (`completed` unless `status` says otherwise). Idempotent."""
        if self._closed:
            return
        self._stop_capture()
        self._closed = True
        if _ATTACHED.get(self.model) is self:
            del _ATTACHED[self.model]
        atexit.unregister(self.close)
        for h in self._handles:
            h.remove()
        self._handles.clear()
        self._arm(False)
        if self._restore_impl is not None:
            self.model.set_attn_implementation(self._restore_impl)
        self._closed = False  # the last step's snapshot goes through the guarded path once more
        self._emit_pending()
        self._closed = True
        self._writer.finish(status or "completed")
        if (self.steps is None or self.step > self.steps) and self.run_id is not None:  # unknown, or run past
            from ln_viz.store import Store

            with Store(self._writer.store.path) as store:
                store.set_planned_steps(self.run_id, self.step)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.close()
        else:
            self.close("stopped" if issubclass(exc_type, KeyboardInterrupt) else "failed")
