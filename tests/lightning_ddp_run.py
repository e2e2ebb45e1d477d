"""Run by tests/test_byom_frameworks.py under `torch.distributed.run` (2 processes, gloo, CPU):
examples/lightning_module.py's nanoGPT under Lightning's DDP with ln-viz's callback; each rank writes the losses its
training_step returned (`out/rank<r>.json`).

    python -m torch.distributed.run --nproc_per_node 2 tests/lightning_ddp_run.py STORE OUT
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import lightning as L  # noqa: E402
import torch  # noqa: E402

from examples.lightning_module import LitGPT, loader  # noqa: E402
from ln_viz.integrations.lightning import LnVizCallback  # noqa: E402


class Recorded(LitGPT):
    """examples/lightning_module.py's module keeping each loss its training_step returned, in `returned`."""

    def __init__(self) -> None:
        super().__init__()
        self.returned: list[float] = []

    def training_step(self, batch, batch_idx):  # noqa: ANN001, ANN201
        loss = super().training_step(batch, batch_idx)
        self.returned.append(float(loss.detach()))
        return loss


def main(store: str, out: str) -> None:
    torch.manual_seed(0)
    trainer = L.Trainer(
        max_steps=4, accelerator="cpu", devices=2, strategy="ddp", logger=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False, default_root_dir=out,
        callbacks=[LnVizCallback(store=store, every=2, module="model")],
    )  # fmt: skip
    module = Recorded()
    trainer.fit(module, loader())
    Path(out, f"rank{trainer.global_rank}.json").write_text(json.dumps(module.returned))


if __name__ == "__main__":
    main(*sys.argv[1:3])
