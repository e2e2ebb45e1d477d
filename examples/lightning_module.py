"""ln-viz in Lightning: the nanoGPT-style model of plain_loop.py in a LightningModule, trained with gradient
clipping, its probes recorded into the ln-viz store.

    python examples/lightning_module.py --store runs.sqlite --steps 20
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

import lightning as L  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from examples.plain_loop import TinyGPT  # noqa: E402
from ln_viz.integrations.lightning import LnVizCallback  # noqa: E402


class LitGPT(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.model = TinyGPT()

    def training_step(self, batch, batch_idx):
        (x,) = batch
        logits = self.model(x[:, :-1])
        return F.cross_entropy(logits.flatten(0, 1), x[:, 1:].flatten())

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=3e-3)


def loader() -> torch.utils.data.DataLoader:
    data = torch.randint(0, 64, (160, 17), generator=torch.Generator().manual_seed(0))
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(data), batch_size=8)


def trainer(store: str | None, steps: int, every: int, callbacks: list | None = None, root: str | None = None):
    probe = LnVizCallback(store=store, every=every, label="lightning nanoGPT", module="model")
    return L.Trainer(
        max_steps=steps, gradient_clip_val=0.05, accelerator="cpu", devices=1, logger=False,
        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
        callbacks=[probe, *(callbacks or [])], default_root_dir=root,
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default=None)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--every", type=int, default=5)
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    t = trainer(args.store, args.steps, args.every)
    t.fit(LitGPT(), loader())
    probe = t.callbacks[0].probe
    print(f"run {probe.run_id}: {probe.step} optimizer steps, placement {probe.card.placement}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
