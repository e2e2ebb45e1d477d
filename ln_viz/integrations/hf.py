"""ln-viz in the Hugging Face Trainer: `Trainer(..., callbacks=[LnVizCallback(store=..., every=10)])`.

The probes attach at `on_train_begin` to the model and the optimizer inside Accelerate's wrapper (its step
hooks fire inside the Trainer's step, after clipping: the per-matrix gradient norms are those the update
used). Steps are optimizer steps, so gradient accumulation does not shift them. `on_log` adds the logged
loss, learning rate and the pre-clip total gradient norm (the Trainer computes it before clipping and shows
it only there). `on_train_end` closes the run.
"""

from __future__ import annotations

import os
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

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, optimizer: Any = None, **kw: Any):
        inner = getattr(optimizer, "optimizer", optimizer)  # Accelerate's AcceleratedOptimizer wraps the torch one
        self.probe = attach(
            model, inner, store=self.store, every=self.every, label=self.label, layout=self.layout,
            steps=state.max_steps or None,
        )  # fmt: skip

    def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kw: Any):
        if self.probe is None or not logs or state.global_step != self.probe.step:
            return
        self.probe.log(loss=logs.get("loss"), lr=logs.get("learning_rate"), grad_norm=logs.get("grad_norm"))

    def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any):
        if self.probe is not None:
            self.probe.close()
