"""The cost of ln_viz.attach's probes on a 0.4M-parameter Hugging Face Llama (6 blocks, d 64, batch 16 x 64,
CPU, one thread), beside TensorBoard histograms of the same tensors (block outputs, norm inputs, the block
matrices' gradients) at the same cadence, every 10 and every 1 optimizer steps.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/byom_overhead.py [--steps 30] [--rounds 3] [--quick]

The configurations run interleaved, round after round (a busy machine slows them all alike), each on the
same model copy and batches; a round's figure is its median step time over the baseline's in that round.
Printed: per configuration the median ratio over rounds and its spread (min - max). Targets (issue 31):
ln-viz at every 10 at most 1.03x, at every 1 at most 1.20x. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

import ln_viz  # noqa: E402


def llama(quick: bool):
    from transformers import AutoConfig, AutoModelForCausalLM
    from transformers.utils import logging

    logging.set_verbosity_error()
    torch.manual_seed(0)
    config = AutoConfig.for_model(
        "llama", hidden_size=64, num_hidden_layers=2 if quick else 6, num_attention_heads=4, num_key_value_heads=4,
        intermediate_size=172, vocab_size=512, max_position_embeddings=128,
    )  # fmt: skip
    return AutoModelForCausalLM.from_config(config)


class TensorBoardHistograms:
    """What `SummaryWriter.add_histogram` users do: forward hooks on each block's output and norm input, and
    the gradient of each block matrix, logged every `every` optimizer steps."""

    def __init__(self, model, every: int, logdir: str) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.writer, self.every, self.step, self.model = SummaryWriter(logdir), every, 0, model
        self.handles = []
        layers = model.model.layers
        for i, block in enumerate(layers):
            self.handles.append(block.register_forward_hook(self._hook(f"resid/{i}", output=True)))
            for name in ("input_layernorm", "post_attention_layernorm"):
                norm = block.get_submodule(name)
                self.handles.append(norm.register_forward_hook(self._hook(f"norm_in/{i}/{name}", output=False)))
        self.matrices = [(n, p) for n, p in layers.named_parameters() if p.ndim >= 2]

    def _on(self) -> bool:
        return self.model.training and (self.step + 1 == 1 or (self.step + 1) % self.every == 0)

    def _hook(self, tag: str, output: bool):
        def hook(module, args, out):
            if self._on():
                x = out[0] if isinstance(out, tuple) else out if output else args[0]
                self.writer.add_histogram(tag, x.detach(), self.step + 1)

        return hook

    def after_backward(self) -> None:
        if self._on():
            for name, p in self.matrices:
                self.writer.add_histogram(f"grad/{name}", p.grad, self.step + 1)
        self.step += 1

    def close(self) -> None:
        for h in self.handles:
            h.remove()
        self.writer.close()


def run(config: str, model, batches, tmp: Path) -> float:
    """The median seconds per optimizer step of `config` over the batches (after 3 warm-up steps)."""
    model = copy.deepcopy(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    probe = tb = None
    if config.startswith("ln-viz"):
        probe = ln_viz.attach(model, opt, store=tmp / "runs.sqlite", every=int(config.split("/")[1]))
    elif config.startswith("tensorboard"):
        tb = TensorBoardHistograms(model, int(config.split("/")[1]), str(tmp / f"tb-{time.monotonic_ns()}"))
    times = []
    for i, x in enumerate(batches):
        t0 = time.perf_counter()
        loss = model(input_ids=x, labels=x).loss
        loss.backward()
        if tb is not None:
            tb.after_backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if i >= 3:
            times.append(time.perf_counter() - t0)
    if probe is not None:
        probe.close()
    if tb is not None:
        tb.close()
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="2 blocks, 8 steps, 1 round (the smoke test)")
    args = parser.parse_args(argv)
    if args.quick:
        args.steps, args.rounds = 8, 1
    torch.set_num_threads(1)
    model = llama(args.quick)
    n_params = sum(p.numel() for p in model.parameters())
    g = torch.Generator().manual_seed(0)
    batches = [torch.randint(0, 512, (16, 64), generator=g) for _ in range(args.steps + 3)]
    configs = ["baseline", "ln-viz/10", "tensorboard/10", "ln-viz/1", "tensorboard/1"]
    ratios: dict[str, list[float]] = {c: [] for c in configs[1:]}
    base_times = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            order = configs if r % 2 == 0 else [configs[0], *reversed(configs[1:])]
            times = {c: run(c, model, batches, Path(tmp)) for c in order}
            base_times.append(times["baseline"])
            for c in configs[1:]:
                ratios[c].append(times[c] / times["baseline"])
    print(
        f"Llama {n_params / 1e6:.2f}M parameters, batch 16 x 64, CPU 1 thread, "
        f"{args.steps} steps x {args.rounds} rounds"
    )
    rounds = ", ".join(f"{1e3 * t:.1f}" for t in base_times)
    print(f"baseline: median {1e3 * statistics.median(base_times):.1f} ms/step (rounds {rounds})")
    for c, values in ratios.items():
        print(f"{c:15s} {statistics.median(values):.3f}x  (spread {min(values):.3f} - {max(values):.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
