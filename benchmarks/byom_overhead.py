"""The cost of ln_viz.attach's probes on a 0.4M-parameter Hugging Face Llama (6 blocks, d 64, batch 16 x 64,
CPU, one thread), beside TensorBoard histograms of the same tensors (block outputs, norm inputs, the block
matrices' gradients) at the same cadence, every 10 and every 1 optimizer steps, and beside wandb's
`watch(model, log="all", log_freq=N)` offline where wandb is installed (`pip install wandb`; it is no
dependency of ln-viz: without it its rows say so).

    HF_HUB_OFFLINE=1 .venv/bin/python -m benchmarks.byom_overhead [--steps 30] [--rounds 3] [--quick]
        [--configs ln-viz/10,ln-viz/1]

The configurations run in lockstep (step i of each before step i + 1 of any, in an order shuffled each step: a
fixed or alternating order lets the first and last run twice in a row, their model still in the cache, while one in
the middle never does), each on its own copy of one model and the same batches, so a busy machine slows them alike;
a round's figure is a configuration's total over steps 4..N (every cadence's probe steps inside) over the baseline's,
in process CPU time (all threads: the store's writer too, but also the other configurations' background threads and
thread pools, which TensorBoard at every step keeps busy: with it beside, ln-viz's process figure rises by
a third), in own CPU time (the main thread during the configuration's steps plus the threads it started,
over the window) and in wall time. wandb does its writing in a service process of its own
(wandb-core), whose CPU time none of these counts: it is printed beside, per step, shared by the wandb
configurations of the run. Printed: the median over rounds and the spread (min - max). Targets (issue 31):
ln-viz at every 10 at most 1.03x, at every 1 at most 1.20x. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
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


class WandbWatch:
    """What `wandb.watch` users do, offline: `run.watch(model, log="all", log_freq=every)` (histograms of
    every parameter and its gradient, counted in forward/backward calls: one per step here) and
    `run.log({"loss": ...})` each step, which commits them."""

    def __init__(self, model, every: int, logdir: str) -> None:
        import wandb

        os.makedirs(logdir, exist_ok=True)
        self.model = model
        self.run = wandb.init(
            mode="offline", dir=logdir, project="ln-viz-overhead", reinit="create_new",
            settings=wandb.Settings(silent=True, console="off", x_disable_stats=True),
        )  # fmt: skip
        self.run.watch(model, log="all", log_freq=every)

    def before_step(self) -> None:
        import wandb

        wandb.run = self.run  # watch's hooks log to the global run; two wandb rows take turns

    def after_step(self, loss: torch.Tensor) -> None:
        self.run.log({"loss": float(loss.detach())})

    def close(self) -> None:
        self.run.unwatch(self.model)
        self.run.finish()


def wandb_missing() -> str | None:
    """Why wandb's rows cannot run, or None."""
    try:
        import wandb  # noqa: F401
    except ImportError:
        return "wandb is not installed (pip install wandb): its rows are left out"
    return None


def service_cpu() -> float:
    """CPU seconds of this process's child processes still running (wandb's service), or 0."""
    try:
        import psutil
    except ImportError:
        return 0.0
    total = 0.0
    for child in psutil.Process().children(recursive=True):
        try:
            t = child.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def threads_cpu(threads: list[threading.Thread]) -> float:
    """CPU seconds `threads` (those still running) have used."""
    total = 0.0
    for t in threads:
        try:
            total += time.clock_gettime(time.pthread_getcpuclockid(t.ident))
        except (OSError, TypeError):  # ended: its time is no longer counted (it ends at close, after the steps)
            pass
    return total


class Runner:
    """One configuration on its own copy of the model: `step(x)` times one optimizer step in process CPU time
    (every thread of this process: the store's writer thread included, but also the other configurations'
    background threads: TensorBoard's event writer at every step bills whatever step runs beside it), in
    own CPU time (this thread's during its steps, plus what the threads this configuration started used
    over the measured window, whenever they ran: its writer's, not the others') and in wall time."""

    def __init__(self, config: str, model, tmp: Path) -> None:
        before = set(threading.enumerate())
        self.model = copy.deepcopy(model)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-3)
        self.probe = self.tb = self.wandb = None
        if config.startswith("wandb"):
            self.wandb = WandbWatch(self.model, int(config.split("/")[1]), str(tmp / f"wandb-{config[-2:]}"))
        elif config.startswith("ln-viz"):
            self.probe = ln_viz.attach(self.model, self.opt, store=tmp / "runs.sqlite", every=int(config.split("/")[1]))
        elif config.startswith("tensorboard"):
            self.tb = TensorBoardHistograms(self.model, int(config.split("/")[1]), str(tmp / f"tb-{config[-2:]}"))
        self.threads = [t for t in threading.enumerate() if t not in before]
        self.cpu: list[float] = []
        self.own: list[float] = []
        self.wall: list[float] = []
        self.background: list[float] = []  # its threads' CPU time, read at the window's start and end

    def mark(self) -> None:
        self.background.append(threads_cpu(self.threads))

    def step(self, x: torch.Tensor) -> None:
        c0, o0, w0 = time.process_time(), time.thread_time(), time.perf_counter()
        if self.wandb is not None:
            self.wandb.before_step()
        loss = self.model(input_ids=x, labels=x).loss
        loss.backward()
        if self.tb is not None:
            self.tb.after_backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        if self.wandb is not None:
            self.wandb.after_step(loss)
        self.cpu.append(time.process_time() - c0)
        self.own.append(time.thread_time() - o0)
        self.wall.append(time.perf_counter() - w0)

    def close(self) -> None:
        if self.probe is not None:
            self.probe.close()
        if self.tb is not None:
            self.tb.close()
        if self.wandb is not None:
            self.wandb.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="2 blocks, 10 steps, 1 round (the smoke test)")
    parser.add_argument(
        "--configs",
        default="ln-viz/10,tensorboard/10,wandb/10,ln-viz/1,tensorboard/1,wandb/1",
        help="beside the baseline",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.steps, args.rounds = 10, 1
    wanted = args.configs.split(",")
    missing = wandb_missing() if any(c.startswith("wandb") for c in wanted) else None
    if missing:
        wanted = [c for c in wanted if not c.startswith("wandb")]
    os.environ.setdefault("WANDB_SILENT", "true")
    torch.set_num_threads(1)
    model = llama(args.quick)
    n_params = sum(p.numel() for p in model.parameters())
    g = torch.Generator().manual_seed(0)
    batches = [torch.randint(0, 512, (16, 64), generator=g) for _ in range(args.steps + 3)]  # 3 warm-up
    configs = ["baseline", *wanted]
    cpu: dict[str, list[float]] = {c: [] for c in configs[1:]}
    own: dict[str, list[float]] = {c: [] for c in configs[1:]}
    wall: dict[str, list[float]] = {c: [] for c in configs[1:]}
    base = []
    service: list[float] = []  # wandb-core's CPU seconds per measured step
    shuffle = np.random.default_rng(0)  # the order of the configurations at each step
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            runners = {c: Runner(c, model, Path(tmp) / str(r)) for c in configs}
            for i, x in enumerate(batches):  # lockstep: every configuration takes step i before any takes i + 1
                if i == 3:
                    for runner in runners.values():
                        runner.mark()
                    s0 = service_cpu()
                order = [configs[k] for k in shuffle.permutation(len(configs))]
                for c in order:
                    runners[c].step(x)
            service.append((service_cpu() - s0) / (len(batches) - 3))
            for runner in runners.values():
                runner.mark()
                runner.close()
            # the window: steps 4..N (N a multiple of 10, so each cadence's probe steps are in it)
            total = {
                c: (sum(run.cpu[3:]), sum(run.wall[3:]), sum(run.own[3:]) + run.background[1] - run.background[0])
                for c, run in runners.items()
            }
            base.append(total["baseline"][0] / (len(batches) - 3))
            for c in configs[1:]:
                cpu[c].append(total[c][0] / total["baseline"][0])
                wall[c].append(total[c][1] / total["baseline"][1])
                own[c].append(total[c][2] / total["baseline"][2])
    print(
        f"Llama {n_params / 1e6:.2f}M parameters, batch 16 x 64, CPU 1 thread, "
        f"{args.steps} steps x {args.rounds} rounds, configurations in lockstep"
    )
    rounds = ", ".join(f"{1e3 * b:.1f}" for b in base)
    print(f"baseline: {1e3 * statistics.median(base):.1f} ms CPU per step (rounds {rounds})")
    print("cost over the baseline, total of the measured steps: process CPU time | own CPU time | wall time")
    print("(own: the configuration's thread during its steps + the threads it started: the one to compare)")
    for c in configs[1:]:
        v, o, w = cpu[c], own[c], wall[c]
        print(
            f"{c:15s} CPU {statistics.median(v):.3f}x ({min(v):.3f} - {max(v):.3f})   "
            f"own {statistics.median(o):.3f}x ({min(o):.3f} - {max(o):.3f})   "
            f"wall {statistics.median(w):.3f}x ({min(w):.3f} - {max(w):.3f})"
        )
    cadences = sorted({c.split("/")[1] for c in configs[1:]}, key=int, reverse=True)
    tools = [t for t in ("ln-viz", "tensorboard", "wandb") if any(c.startswith(t + "/") for c in configs)]
    print("\nside by side, own CPU time over the baseline (median of the rounds):")
    print(f"{'every':>6s}  " + "  ".join(f"{t:>11s}" for t in tools))
    for every in cadences:
        cells = [
            f"{statistics.median(own[f'{t}/{every}']):10.3f}x" if f"{t}/{every}" in own else f"{'-':>11s}"
            for t in tools
        ]
        print(f"{every:>6s}  " + "  ".join(cells))
    if any(c.startswith("wandb") for c in configs):
        print(
            f"wandb's service process (wandb-core, not in the figures above): {1e3 * statistics.median(service):.1f} ms"
            " CPU per step, shared by the wandb rows"
        )
    if missing:
        print(missing)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
