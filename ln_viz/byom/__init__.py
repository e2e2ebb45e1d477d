"""Your own model: ln-viz's probes on a PyTorch transformer ln-viz did not build.

    card = ln_viz.describe(model)                 # blocks, depth, width, placement, QK-norm, by data flow
    with ln_viz.attach(model, optimizer, store="runs.sqlite", every=10, label="my-llama") as probe:
        for batch in loader:                      # the user's loop, unchanged
            loss = model(**batch).loss; loss.backward(); optimizer.step(); optimizer.zero_grad()
            probe.log(loss=loss, lr=scheduler.get_last_lr()[0])

Adapters: ln_viz.integrations.hf.LnVizCallback (Hugging Face Trainer), ln_viz.integrations.lightning.
"""

import os
from typing import Any

import torch
from torch import nn

from ln_viz.byom.card import LayoutError, MatrixCard, ModelCard, NormCard, UnsupportedModel, describe
from ln_viz.byom.measure import is_probe_step
from ln_viz.byom.probe import Probe

__all__ = [
    "LayoutError",
    "MatrixCard",
    "ModelCard",
    "NormCard",
    "Probe",
    "UnsupportedModel",
    "attach",
    "describe",
    "is_probe_step",
]


def attach(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    *,
    store: str | os.PathLike[str] | None = None,
    every: int = 10,
    label: str | None = None,
    layout: str | None = None,
    steps: int | None = None,
    example: Any = None,
) -> Probe:
    """Record ln-viz's probes of `model` while `optimizer` trains it, into the store at `store` (default:
    ln-viz's store): on optimizer step 1, every `every` steps, and the last (`steps`: the planned count,
    when known). A context manager; `.close()` ends it. `layout` names the block list where discovery
    fails; `example` is an input batch for a model that does not take token ids (for `describe`)."""
    return Probe(model, optimizer, store=store, every=every, label=label, layout=layout, steps=steps, example=example)
