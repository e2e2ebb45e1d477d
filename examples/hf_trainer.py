"""ln-viz in the Hugging Face Trainer: a tiny random Llama (built from a config, no download) trained on
random tokens with gradient accumulation and clipping, its probes recorded into the ln-viz store.

    HF_HUB_OFFLINE=1 python examples/hf_trainer.py --store runs.sqlite --steps 20
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

import torch  # noqa: E402
from transformers import AutoConfig, AutoModelForCausalLM, Trainer, TrainingArguments  # noqa: E402
from transformers.utils import logging  # noqa: E402

from ln_viz.integrations.hf import LnVizCallback  # noqa: E402


def tiny_llama(seed: int = 0):
    torch.manual_seed(seed)
    config = AutoConfig.for_model(
        "llama", hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=128, vocab_size=128, max_position_embeddings=128,
    )  # fmt: skip
    return AutoModelForCausalLM.from_config(config)


def tokens(n: int = 64, seq: int = 32) -> list[dict[str, torch.Tensor]]:
    g = torch.Generator().manual_seed(0)
    return [{"input_ids": (x := torch.randint(0, 128, (seq,), generator=g)), "labels": x} for _ in range(n)]


def trainer(
    store: str | None,
    steps: int,
    every: int,
    callbacks: list | None = None,
    out: str | None = None,
    compile_backend: str | None = None,
) -> Trainer:
    """`compile_backend` ("inductor", "aot_eager"): the Trainer's `torch_compile=True` with that backend."""
    logging.set_verbosity_error()
    compiled = dict(torch_compile=True, torch_compile_backend=compile_backend) if compile_backend else {}
    args = TrainingArguments(
        output_dir=out or tempfile.mkdtemp(), max_steps=steps, per_device_train_batch_size=4,
        gradient_accumulation_steps=2, max_grad_norm=1.0, learning_rate=3e-3, logging_steps=1, save_strategy="no",
        report_to=[], use_cpu=True, disable_tqdm=True, dataloader_num_workers=0, seed=0, **compiled,
    )  # fmt: skip
    probe = LnVizCallback(store=store, every=every, label="hf-trainer llama")
    return Trainer(model=tiny_llama(), args=args, train_dataset=tokens(), callbacks=[probe, *(callbacks or [])])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default=None)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--every", type=int, default=5)
    parser.add_argument("--compile", default=None, metavar="BACKEND", help="torch_compile=True with this backend")
    args = parser.parse_args(argv)
    t = trainer(args.store, args.steps, args.every, compile_backend=args.compile)
    t.train()
    probe = next(c.probe for c in t.callback_handler.callbacks if isinstance(c, LnVizCallback))
    print(f"run {probe.run_id}: {probe.step} optimizer steps, placement {probe.card.placement}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
