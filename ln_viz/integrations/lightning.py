"""ln-viz in Lightning: `Trainer(..., callbacks=[LnVizCallback(store=..., every=10)])`.

Lightning runs the forward and backward inside `optimizer.step()` (the closure), so an optimizer *pre*-hook
sees the previous step's gradients; ln_viz.attach reads them in the step's *post*-hook instead (after
Lightning's clipping: the gradients the update used) and arms its forward hooks a step ahead. This adapter
adds the pre-clip total norm from `on_before_optimizer_step` (before Lightning clips), the loss from
`on_train_batch_end`, and attaches to `pl_module` (or its attribute `module`, e.g. "model").
"""

from __future__ import annotations

import math
import os
from typing import Any

import torch
from lightning.pytorch.callbacks import Callback

from ln_viz.byom import Probe, attach, is_probe_step


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

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        model = pl_module.get_submodule(self.module) if self.module else pl_module
        steps = trainer.max_steps if trainer.max_steps and trainer.max_steps > 0 else None
        self.probe = attach(
            model, trainer.optimizers[0], store=self.store, every=self.every, label=self.label, layout=self.layout,
            steps=steps,
        )  # fmt: skip

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
        loss = outputs.get("loss") if isinstance(outputs, dict) else outputs
        if self.probe is not None and isinstance(loss, torch.Tensor):
            self.probe.log(loss=loss)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        if self.probe is not None:
            self.probe.close()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        if self.probe is not None:
            self.probe.close("stopped" if isinstance(exception, KeyboardInterrupt) else "failed")
