"""ln-viz in the Hugging Face Trainer: `Trainer(..., callbacks=[LnVizCallback(store=..., every=10)])`.

The probes attach at `on_train_begin` to the model and the optimizer inside Accelerate's wrapper (its step
hooks fire inside the Trainer's step, after clipping: the per-matrix gradient norms are those the update
used). Steps are optimizer steps, so gradient accumulation does not shift them. `on_log` adds the logged
loss, learning rate and the pre-clip total gradient norm (the Trainer computes it before clipping and shows
it only there). `on_train_end` closes the run. Under DDP only the main process records (one run, as the Trainer
logs), and its step loss is counted as the Trainer counts a rank's loss before its mean over the ranks: the sum of
its batches' shares of the mean over every process's tokens, times the processes (its own batches' mean where
every rank holds as many label tokens).

With `torch_compile=True` the Trainer calls Accelerate's `torch.compile(model)` wrapper, while callbacks are
given the eager model: the probes attach to that wrapper (the calling Trainer's `model_wrapped`), so a probe
step's activations and attention come from an eager shadow forward on the same batch, as for any compiled
model (ln_viz.byom.probe); hooks on the eager model would be traced into the graph and do nothing.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from transformers import TrainerCallback

from ln_viz.byom import Probe, attach


class LnVizCallback(TrainerCallback):
    def __init__(
        self,
        store: str | os.PathLike[str] | None = None,
        every: int = 10,
        label: str | None = None,
        layout: str | None = None,
    ) -> None:
        self.store, self.every, self.label, self.layout = store, every, label, layout
        self.probe: Probe | None = None
        self._last_log = 0  # the step of the last logged loss

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, optimizer: Any = None, **kw: Any):
        if not getattr(state, "is_world_process_zero", True):  # under DDP, one run: the main process's
            return
        inner = getattr(optimizer, "optimizer", optimizer)  # Accelerate's AcceleratedOptimizer wraps the torch one
        self._last_log = state.global_step
        compiled = _compiled_wrapper(model) if getattr(args, "torch_compile", False) else None
        self.probe = attach(
            compiled if compiled is not None else model, inner, store=self.store, every=self.every, label=self.label,
            layout=self.layout, steps=state.max_steps or None,
        )  # fmt: skip
        self.probe.share_scale = _processes_counted(args, model)

    def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kw: Any):
        """The logged learning rate and pre-clip norm; the logged loss where it is this step's own (it is the mean over
        the steps since the last log: with logging_steps > 1 the step keeps the loss of its own forwards, the
        model's output's, where it returned one)."""
        if self.probe is None or not logs or state.global_step != self.probe.step:
            return
        loss = logs.get("loss")
        if loss is not None:
            window, self._last_log = state.global_step - self._last_log, state.global_step
            loss = loss if window == 1 or not self.probe.step_has_loss() else None
        self.probe.log(loss=loss, lr=logs.get("learning_rate"), grad_norm=logs.get("grad_norm"))

    def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any):
        if self.probe is not None:
            self.probe.close()


def _processes_counted(args: Any, model: Any) -> int:
    """Under DDP with `average_tokens_across_devices` (the Trainer's default), `num_items_in_batch` counts the label
    tokens of every process's batches, so a batch's output loss is its share of the mean over all of them; the
    Trainer multiplies it by the processes that hold batches of their own (the processes over the tensor-parallel
    size, whose ranks share one batch) to count a rank's loss, and so does the step loss here. 1 otherwise."""
    if not getattr(args, "average_tokens_across_devices", False) or getattr(args, "world_size", 1) <= 1:
        return 1
    return max(1, args.world_size // (getattr(model, "_tp_size", None) or 1))


def _compiled_wrapper(model: Any) -> Any:
    """The `torch.compile` wrapper of `model` that the Trainer calling this callback trains (its
    `model_wrapped`, made by Accelerate before `on_train_begin`), found up the call stack; None if none."""
    frame = sys._getframe(1)
    while frame is not None:
        wrapped = getattr(frame.f_locals.get("self"), "model_wrapped", None)
        if wrapped is not None and getattr(wrapped, "_orig_mod", None) is model:
            return wrapped
        frame = frame.f_back
    return None
