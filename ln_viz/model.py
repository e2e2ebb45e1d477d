"""A tiny decoder-only transformer whose LayerNorm placement is a parameter.

The block's forward is its two residual lines, one pair per `norm_position`:

    post      x = LN(x + Attn(x));              x = LN(x + FFN(x))             (Vaswani 2017, BERT)
    pre       x = x + Attn(LN(x));              x = x + FFN(LN(x))   + final LN (GPT-2, Xiong 2020)
    peri      x = x + LN(Attn(LN(x)));          x = x + LN(FFN(LN(x))) + final LN (the "sandwich")
    deepnorm  x = LN(alpha*x + Attn(x));        x = LN(alpha*x + FFN(x))       (DeepNet, Wang 2022)
    none      x = x + Attn(x);                  x = x + FFN(x)                 (a control)

Initialisation follows Xiong et al.: Xavier-uniform weights, no biases in the projections, norms at
(1, 0). Token and position embeddings are N(0, 1/2) each, so the input to block 1 has E||x||^2 = d,
the paper's assumption. Weights are drawn from one generator in a fixed order that does not depend on
`norm_position`, so every placement starts from the same weights (DeepNorm's are the same draws,
scaled by beta).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ln_viz.config import RunConfig
from ln_viz.schema import PARAM_NAMES, norm_names


def make_norm(norm_type: str, d: int) -> nn.Module:
    return nn.RMSNorm(d, eps=1e-5) if norm_type == "rmsnorm" else nn.LayerNorm(d, eps=1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, d, bias=False)
        self.v = nn.Linear(d, d, bias=False)
        self.o = nn.Linear(d, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, d = x.shape
        q, k, v = (p(x).view(B, T, self.heads, d // self.heads).transpose(1, 2) for p in (self.q, self.k, self.v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, nh, T, hs)
        return self.o(y.transpose(1, 2).reshape(B, T, d))


class FFN(nn.Module):
    def __init__(self, d: int, d_ff: int) -> None:
        super().__init__()
        self.w1 = nn.Linear(d, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.relu(self.w1(x)))  # ReLU, as in the paper's analysis


class Block(nn.Module):
    """One transformer layer. Norm modules are named ln1/ln2 (and ln1_out/ln2_out for peri)."""

    def __init__(self, cfg: RunConfig) -> None:
        super().__init__()
        d, pos = cfg.d_model, cfg.norm_position
        self.norm_position = pos
        self.attn = CausalSelfAttention(d, cfg.heads)
        self.ffn = FFN(d, cfg.ffn_width)
        if pos != "none":
            self.ln1 = make_norm(cfg.norm_type, d)
            self.ln2 = make_norm(cfg.norm_type, d)
        if pos == "peri":
            self.ln1_out = make_norm(cfg.norm_type, d)
            self.ln2_out = make_norm(cfg.norm_type, d)
        self.alpha = (2 * cfg.depth) ** 0.25 if pos == "deepnorm" else 1.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pos = self.norm_position
        if pos == "post":
            x = self.ln1(x + self.attn(x))
            x = self.ln2(x + self.ffn(x))
        elif pos == "pre":
            x = x + self.attn(self.ln1(x))
            x = x + self.ffn(self.ln2(x))
        elif pos == "peri":
            x = x + self.ln1_out(self.attn(self.ln1(x)))
            x = x + self.ln2_out(self.ffn(self.ln2(x)))
        elif pos == "deepnorm":
            x = self.ln1(self.alpha * x + self.attn(x))
            x = self.ln2(self.alpha * x + self.ffn(x))
        else:  # none
            x = x + self.attn(x)
            x = x + self.ffn(x)
        return x


class TinyLM(nn.Module):
    """Character-level decoder-only language model."""

    def __init__(self, cfg: RunConfig, vocab_size: int) -> None:
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(vocab_size, cfg.d_model)
        self.pos_emb = nn.Embedding(cfg.seq_len, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.depth))
        self.ln_f = make_norm(cfg.norm_type, cfg.d_model) if cfg.norm_position in ("pre", "peri") else None
        self.head = nn.Linear(cfg.d_model, vocab_size, bias=False)
        self.reset_parameters(cfg.seed)

    @torch.no_grad()
    def reset_parameters(self, seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        for emb in (self.tok_emb, self.pos_emb):
            emb.weight.copy_(torch.randn(emb.weight.shape, generator=g) * math.sqrt(0.5))
        beta = (8 * self.cfg.depth) ** -0.25 if self.cfg.norm_position == "deepnorm" else 1.0
        for block in self.blocks:
            for name in PARAM_NAMES:
                w = block.get_submodule(name).weight
                nn.init.xavier_uniform_(w, generator=g)
                if name in ("attn.v", "attn.o", "ffn.w1", "ffn.w2"):
                    w.mul_(beta)  # DeepNet's beta; 1 for every other placement
        nn.init.xavier_uniform_(self.head.weight, generator=g)
        for m in self.modules():
            if isinstance(m, (nn.LayerNorm, nn.RMSNorm)):
                m.reset_parameters()

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Token ids (B, T) -> logits (B, T, vocab)."""
        T = idx.shape[1]
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(T, device=idx.device))  # (B, T, d)
        for block in self.blocks:
            x = block(x)
        if self.ln_f is not None:
            x = self.ln_f(x)
        return self.head(x)

    def norm_names(self) -> list[str]:
        """Names of the norm modules inside each block, in forward order."""
        return norm_names(self.cfg.norm_position)


def build_model(cfg: RunConfig, vocab_size: int) -> TinyLM:
    return TinyLM(cfg, vocab_size).to(cfg.device)
