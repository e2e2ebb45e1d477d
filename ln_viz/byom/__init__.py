"""Your own model: ln-viz's probes on a PyTorch transformer ln-viz did not build.

    card = ln_viz.describe(model)                 # blocks, depth, width, placement, QK-norm, by data flow
    with ln_viz.attach(model, optimizer, store="runs.sqlite", every=10, label="my-llama") as probe:
        for batch in loader:                      # the user's loop, unchanged
            loss = model(**batch).loss; loss.backward(); optimizer.step(); optimizer.zero_grad()
            probe.log(loss=loss, lr=scheduler.get_last_lr()[0])

Adapters: ln_viz.integrations.hf.LnVizCallback (Hugging Face Trainer), ln_viz.integrations.lightning.
"""

from ln_viz.byom.card import LayoutError, MatrixCard, ModelCard, NormCard, UnsupportedModel, describe
from ln_viz.byom.probe import Probe, attach, is_probe_step

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
