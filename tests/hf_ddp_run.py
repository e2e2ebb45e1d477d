"""Run by tests/test_byom_frameworks.py under `torch.distributed.run` (2 processes, gloo, CPU): examples/hf_trainer.py's
Trainer (gradient accumulation 2) with ln-viz's callback, logging every 3 steps; each rank writes the losses its model
returned in training (`out/rank<r>.json`) and rank 0 the Trainer's logged losses (`out/logs.json`).

    python -m torch.distributed.run --nproc_per_node 2 tests/hf_ddp_run.py STORE OUT
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from transformers import TrainerCallback  # noqa: E402

from examples.hf_trainer import trainer  # noqa: E402


class Logged(TrainerCallback):
    def __init__(self) -> None:
        self.logs: list[tuple[int, float]] = []

    def on_log(self, args, state, control, logs=None, **kw):  # noqa: ANN001, ANN201
        if logs and "loss" in logs:
            self.logs.append((state.global_step, logs["loss"]))


def training_losses(model: Any) -> tuple[list[float], Any]:
    """(the list the `loss` of each of the model's training forwards is appended to, the hook's handle)."""
    returned: list[float] = []
    handle = model.register_forward_hook(
        lambda m, a, o: returned.append(float(o.loss.detach())) if m.training and o.loss is not None else None
    )
    return returned, handle


def main(store: str, out: str) -> None:
    rank = int(os.environ["RANK"])
    logged = Logged()
    t = trainer(store, steps=6, every=3, callbacks=[logged], out=out)
    t.args.logging_steps = 3
    returned, _ = training_losses(t.model)
    t.train()
    Path(out, f"rank{rank}.json").write_text(json.dumps({"returned": returned, "world": t.args.world_size}))
    if rank == 0:
        Path(out, "logs.json").write_text(json.dumps(logged.logs))


if __name__ == "__main__":
    main(*sys.argv[1:3])
