"""ln-viz in Lightning: `Trainer(..., callbacks=[LnVizCallback(store=..., every=10)])`.

Lightning runs the forward and backward inside `optimizer.step()` (the closure), so an optimizer *pre*-hook
sees the previous step's gradients; ln_viz.attach reads them in the step's *post*-hook instead (after
Lightning's clipping: the gradients the update used) and arms its forward hooks a step ahead. This adapter
adds the pre-clip total norm from `on_before_optimizer_step` (before Lightning clips), the loss from
`on_train_batch_end`, and attaches to `pl_module` (or its attribute `module`, e.g. "model"). Under DDP only the
main process (global rank 0) records: one run, with its own batches' losses.

`trainer.fit(torch.compile(module))`: Lightning puts compiled `training_step` and `forward` on the module
(`from_compiled`), so hooks on the model would be traced into the graph and do nothing. The probes then hook
no module; on a probe step `on_train_batch_start` runs the module's own eager `training_step` on the batch as
the shadow forward (under no_grad, with `self.log` quiet, the random state forked and the buffers put back),
before the compiled step runs. Anything else that `training_step` does besides computing (a counter of its
own, a print) happens once more on those steps.
"""

from __future__ import annotations

import math
import os
from typing import Any

import torch
from lightning.pytorch.callbacks import Callback

from ln_viz.byom import Probe, is_probe_step


class LnVizCallback(Callback):
    def __init__(
        self,
        store: str | os.PathLike[str] | None = None,
        every: int = 10,
        label: str | None = None,
        layout: str | None = None,
        module: str | None = None,
    ) -> None:
        self.store, self.every, self.label, self.layout, self.module = store, every, label, layout, module
        self.probe: Probe | None = None
        self._micro: list[torch.Tensor] = []  # the losses of the batches since the last optimizer step
        self._logged_step = 0

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        if not getattr(trainer, "is_global_zero", True):  # under DDP, one run: the main process's
            return
        model = pl_module.get_submodule(self.module) if self.module else pl_module
        steps = trainer.max_steps if trainer.max_steps and trainer.max_steps > 0 else None
        self._micro, self._logged_step = [], 0
        self.probe = Probe(
            model, trainer.optimizers[0], store=self.store, every=self.every, label=self.label, layout=self.layout,
            steps=steps, shadowed=_compiled(pl_module) is not None,
        )  # fmt: skip

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
        ctx = _compiled(pl_module)
        if self.probe is not None and ctx is not None:
            self.probe.shadow(lambda: _eager_step(pl_module, ctx, batch, batch_idx))

    def on_before_optimizer_step(self, trainer: Any, pl_module: Any, optimizer: Any) -> None:
        probe = self.probe
        if probe is None or not is_probe_step(probe.step + 1, probe.every, probe.steps):
            return
        grads = [p.grad for p in pl_module.parameters() if p.grad is not None]
        if grads:
            with torch.no_grad():
                total = float(torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads))))
            probe.note_grad_norm(total if math.isfinite(total) else math.nan)

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        """The loss of each batch; once a batch took an optimizer step, the mean of the losses of the batches that
        step accumulated (each as training_step returned it: under automatic optimization Lightning hands the
        callback the loss divided by accumulate_grad_batches, for the backward)."""
        loss = outputs.get("loss") if isinstance(outputs, dict) else outputs
        if self.probe is None or not isinstance(loss, torch.Tensor):
            return
        loss = loss.detach().float()
        if pl_module.automatic_optimization:
            loss = loss * trainer.accumulate_grad_batches
        self._micro.append(loss)
        if self.probe.step != self._logged_step:  # this batch's optimizer step was taken: its loss is complete
            self.probe.log(loss=torch.stack(self._micro).mean())
            self._micro, self._logged_step = [], self.probe.step

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        if self.probe is not None:
            self.probe.close()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        if self.probe is not None:
            self.probe.close("stopped" if isinstance(exception, KeyboardInterrupt) else "failed")


def _compiled(pl_module: Any) -> dict | None:
    """What Lightning's `from_compiled` kept of a module given to `fit` as `torch.compile(module)`, or None."""
    ctx = getattr(pl_module, "_compiler_ctx", None)
    return ctx if isinstance(ctx, dict) and "original_training_step" in ctx else None


def _eager_step(pl_module: Any, ctx: dict, batch: Any, batch_idx: int) -> Any:
    """The module's own `training_step` and `forward` (not the compiled ones in their place) on the batch,
    with `log` and `log_dict` quiet: the shadow's loss is not the step's."""
    names = ("forward", "log", "log_dict")
    saved = {name: pl_module.__dict__[name] for name in names if name in pl_module.__dict__}
    quiet = lambda *args, **kwargs: None  # noqa: E731
    pl_module.forward, pl_module.log, pl_module.log_dict = ctx["original_forward"], quiet, quiet
    try:
        return ctx["original_training_step"](batch, batch_idx)
    finally:
        for name in names:
            if name in saved:
                setattr(pl_module, name, saved[name])
            else:
                del pl_module.__dict__[name]
