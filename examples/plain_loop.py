"""ln-viz on your own training loop: a nanoGPT-style model (F.scaled_dot_product_attention), a plain loop.

    python examples/plain_loop.py --store runs.sqlite --steps 30 [--compile inductor]

The recipe for nanoGPT's train.py: after the optimizer is built,
    probe = ln_viz.attach(model, optimizer, store="runs.sqlite", every=10, steps=max_iters)
and at its log line `probe.log(loss=lossf, lr=lr)`; `probe.close()` at the end. A `torch.compile(model)`
(nanoGPT's `compile=True`) is attached as it is: on probe steps ln-viz runs the original module eagerly on the
same batch for the activation and attention probes; the compiled graph is left alone.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

import ln_viz  # noqa: E402


class Attention(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, d = x.shape
        q, k, v = self.c_attn(x).split(d, dim=2)
        q, k, v = (t.view(B, T, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))  # (B, nh, T, hs)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).reshape(B, T, d))


class Block(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.ln_1, self.attn = nn.LayerNorm(d), Attention(d, heads)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential()
        self.mlp.c_fc, self.mlp.gelu, self.mlp.c_proj = nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))  # Pre-LN: the two residual lines
        return x + self.mlp(self.ln_2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab: int = 64, d: int = 32, heads: int = 4, depth: int = 3, seq: int = 32) -> None:
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(depth))
        self.ln_f, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default=None, help="the ln-viz store (default: ln-viz's own)")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--every", type=int, default=10)
    parser.add_argument("--compile", metavar="BACKEND", help="train torch.compile(model, backend=BACKEND)")
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    model = TinyGPT()
    print(ln_viz.describe(model).placement, "placement found")
    if args.compile:
        model = torch.compile(model, backend=args.compile)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    data = torch.randint(0, 64, (64, 17))
    with ln_viz.attach(
        model, opt, store=args.store, every=args.every, steps=args.steps, label="nanoGPT-style"
    ) as probe:
        for _ in range(args.steps):
            batch = data[torch.randint(0, 64, (8,))]
            logits = model(batch[:, :-1])
            loss = F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten())
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            probe.log(loss=loss, lr=3e-3)
    print(
        f"run {probe.run_id}: {args.steps} steps, final loss {loss.item():.3f}",
        "ok" if math.isfinite(loss.item()) else "",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
