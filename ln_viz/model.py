"""A tiny decoder-only transformer whose LayerNorm placement is a parameter.

The block's forward is its two residual lines, one pair per `norm_position`:

    post      x = LN(x + Attn(x));              x = LN(x + FFN(x))             (Vaswani 2017, BERT)
    pre       x = x + Attn(LN(x));              x = x + FFN(LN(x))   + final LN (GPT-2, Xiong 2020)
    peri      x = x + LN(Attn(LN(x)));          x = x + LN(FFN(LN(x))) + final LN (the "sandwich")
    reordered x = x + LN(Attn(x));              x = x + LN(FFN(x))   + final LN (OLMo 2, 2025)
    deepnorm  x = LN(alpha*x + Attn(x));        x = LN(alpha*x + FFN(x))       (DeepNet, Wang 2022)
    none      x = x + Attn(x);                  x = x + FFN(x)                 (a control)
    mix       blocks 1..ceil(L/4) as post, the rest as pre, + final LN     (Mix-LN, Li 2025)

Options on top of the placement (RunConfig; the defaults leave the lines above exactly as written):

    norm_type dyt   LN(x) = gamma * tanh(alpha * x) + beta, alpha a learnt scalar   (DyT, Zhu 2025)
    ln_scaling      the norms in front of the sublayers (pre, peri, mix's pre blocks) give
                    LN(x) / sqrt(l) in block l, l = 1..L                     (Curse of Depth, Sun 2025)
    qk_norm         Attn uses softmax(N(q) N(k)^T / sqrt(hs)), N a LayerNorm or RMSNorm over each
                    head's hs features, gain shared by the heads      (Dehghani 2023, Wortsman 2023)

The attention can record, per head, the largest |q.k| / sqrt(hs) of a forward (`record_logit_max`): QK-Clip
(Kimi K2, 2025; `clip_qk`, called by the trainer after each update) and the per-head logit probe read it.

Initialisation follows Xiong et al.: Xavier-uniform weights, no biases in the projections, norms at
(1, 0). Token and position embeddings are N(0, 1/2) each, so the input to block 1 has E||x||^2 = d,
the paper's assumption. Weights are drawn from one generator in a fixed order that does not depend on
`norm_position`, so every placement starts from the same weights (DeepNorm's are the same draws,
scaled by beta).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from ln_viz.config import RunConfig
from ln_viz.schema import PARAM_NAMES, has_final_norm, norm_names


class DyT(nn.Module):
    """Dynamic Tanh (Zhu et al. 2025): gamma * tanh(alpha * x) + beta, no statistics; alpha is one
    learnt scalar, gamma and beta per feature (at 1 and 0, as a LayerNorm's)."""

    def __init__(self, d: int, alpha: float) -> None:
        super().__init__()
        self.alpha_init = alpha
        self.alpha = nn.Parameter(torch.full((1,), alpha))
        self.weight = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    @torch.no_grad()
    def reset_parameters(self) -> None:
        self.alpha.fill_(self.alpha_init)
        self.weight.fill_(1.0)
        self.bias.zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.weight * torch.tanh(self.alpha * x) + self.bias


def make_norm(norm_type: str, d: int, dyt_alpha: float = 0.5) -> nn.Module:
    if norm_type == "dyt":
        return DyT(d, dyt_alpha)
    return nn.RMSNorm(d, eps=1e-5) if norm_type == "rmsnorm" else nn.LayerNorm(d, eps=1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, d: int, heads: int, qk_norm: str = "none") -> None:
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, d, bias=False)
        self.v = nn.Linear(d, d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        if qk_norm != "none":  # over each head's hs features (B, T, nh, hs): one gain for all heads
            self.q_norm = make_norm(qk_norm, d // heads)
            self.k_norm = make_norm(qk_norm, d // heads)
        self.qk_norm = qk_norm != "none"
        self.record_logit_max = False  # when on, each forward keeps its per-head largest logit in `logit_max`
        self.logit_max: torch.Tensor | None = None  # (nh,)
        # a probe's callback given the scores that recording computes (head_logit_max's `seen`); it records too
        self.scores_seen: Callable[[torch.Tensor, torch.Tensor], None] | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, d = x.shape
        q, k, v = (p(x).view(B, T, self.heads, d // self.heads) for p in (self.q, self.k, self.v))
        if self.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        if self.record_logit_max or self.scores_seen is not None:
            self.logit_max = head_logit_max(q, k, self.scores_seen)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, nh, T, hs)
        return self.o(y.transpose(1, 2).reshape(B, T, d))

    @torch.no_grad()
    def clip_qk(self, tau: float) -> None:
        """QK-Clip (Kimi K2, arXiv 2507.20534): each head whose recorded largest logit S exceeds tau has its W_q and
        W_k rows scaled by sqrt(tau / S) each, so that forward's logits of that head would be at most tau. The
        projections have no biases (nothing else to scale); with QK-norm the norm would undo it (refused)."""
        if self.logit_max is None:
            return
        hs = self.q.weight.shape[0] // self.heads
        scale = (tau / self.logit_max).clamp(max=1.0).sqrt().repeat_interleave(hs)  # (d,): head h's rows
        self.q.weight.mul_(scale[:, None])  # a Linear's weight is (out, in): head h's outputs are rows h*hs..
        self.k.weight.mul_(scale[:, None])


SCORE_CHUNK = 8  # sequences whose attention scores head_logit_max holds at once, at least
SCORE_ELEMENTS = 1 << 19  # scores it holds at once, up to (2 MB of float32): a small model's whole batch


@torch.no_grad()
def head_logit_max(
    q: torch.Tensor,
    k: torch.Tensor,
    seen: Callable[[torch.Tensor, torch.Tensor], None] | None = None,
    chunk: int | None = None,
) -> torch.Tensor:
    """(nh,) the largest |q.k| / sqrt(hs) of each head over batch, query and the key positions the causal mask
    keeps, from q, k of shape (B, nh, T, hs): one extra batched matmul, detached, `chunk` sequences at a time (by
    default as many as hold SCORE_ELEMENTS scores, at least SCORE_CHUNK) into one buffer kept per thread (the scores
    stay in the cache for the passes that follow, and no fresh 2 MB a layer: 1.2 ms less a probe step at 6 x 64,
    one thread; the whole batch of 32 there at once, not 8 at a time: 0.27 against 0.54 ms a layer, two threads).
    `seen`, when given, is called once, with the first chunk's unscaled scores q k^T (n, nh, T, T), n = min(B,
    chunk), their masked (upper) triangle 0, and each of those sequences' and heads' largest |q.k| (n, nh),
    unscaled: the attention probe's input (it may overwrite them)."""
    B, nh, T, hs = q.shape
    chunk = chunk or max(SCORE_CHUNK, SCORE_ELEMENTS // (nh * T * T))
    # (B, nh, T, hs) laid out contiguously once (q, k come transposed from (B, T, nh, hs)): a chunk's reshape to
    # (n nh, T, hs) is then a view, where it copied chunk by chunk
    qd, kd = q.detach().contiguous(), k.detach().contiguous()
    buffer = _scores_buffer(min(B, chunk) * nh * T * T, q)
    parts = []
    for start in range(0, B, chunk):
        n = min(B, start + chunk) - start
        scores = buffer[: n * nh * T * T].view(n * nh, T, T)
        rows = slice(start, start + n)
        torch.bmm(qd[rows].reshape(n * nh, T, hs), kd[rows].reshape(n * nh, T, hs).mT, out=scores)
        scores = scores.view(n, nh, T, T).tril_()  # the masked ones 0: never a max of |x|
        # the largest |x| is the larger of the largest x and minus the smallest: the same values as abs, a
        # causal mask and amax, in half the time (0.71 against 1.37 ms a layer at 32 x 4 x 64 x 64, one thread)
        parts.append(torch.maximum(scores.amax(dim=(2, 3)), scores.amin(dim=(2, 3)).neg_()))  # (n, nh)
        if start == 0 and seen is not None:
            seen(scores, parts[0])
    return torch.cat(parts).amax(dim=0) / math.sqrt(hs)


_SCRATCH = threading.local()
_KEEP_LIMIT = 1 << 21  # elements (8 MB of float32): a larger buffer is allocated for the call and not kept


def _scores_buffer(size: int, like: torch.Tensor) -> torch.Tensor:
    """A flat buffer of at least `size` elements of `like`'s dtype and device, kept per thread and reused (up to
    _KEEP_LIMIT: a run with long sequences does not leave its scores' memory behind it)."""
    if size > _KEEP_LIMIT:
        return like.new_empty(size)
    buffer = getattr(_SCRATCH, "scores", None)
    if buffer is None or buffer.numel() < size or buffer.dtype != like.dtype or buffer.device != like.device:
        buffer = _SCRATCH.scores = like.new_empty(size)
    return buffer


class FFN(nn.Module):
    def __init__(self, d: int, d_ff: int) -> None:
        super().__init__()
        self.w1 = nn.Linear(d, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.relu(self.w1(x)))  # ReLU, as in the paper's analysis


def block_position(cfg: RunConfig, layer: int) -> str:
    """The placement of block `layer` (1-based): Mix-LN's first ceil(L/4) blocks are post, the rest pre."""
    if cfg.norm_position == "mix":
        return "post" if layer <= math.ceil(cfg.depth / 4) else "pre"
    return cfg.norm_position


class Block(nn.Module):
    """One transformer layer (`layer` 1-based). Norm modules are named ln1/ln2 on a sublayer's input or on the
    residual sum, ln1_out/ln2_out on a sublayer's output (peri has all four, reordered the two outputs only)."""

    def __init__(self, cfg: RunConfig, layer: int = 1) -> None:
        super().__init__()
        d, pos = cfg.d_model, block_position(cfg, layer)
        self.norm_position = pos
        self.attn = CausalSelfAttention(d, cfg.heads, cfg.qk_norm)
        self.ffn = FFN(d, cfg.ffn_width)
        if pos not in ("none", "reordered"):
            self.ln1 = make_norm(cfg.norm_type, d, cfg.dyt_alpha)
            self.ln2 = make_norm(cfg.norm_type, d, cfg.dyt_alpha)
        if pos in ("peri", "reordered"):
            self.ln1_out = make_norm(cfg.norm_type, d, cfg.dyt_alpha)
            self.ln2_out = make_norm(cfg.norm_type, d, cfg.dyt_alpha)
        self.alpha = (2 * cfg.depth) ** 0.25 if pos == "deepnorm" else 1.0
        # LayerNorm Scaling: on the input norms of pre/peri blocks only (validate refuses the rest)
        self.scale = layer**-0.5 if cfg.ln_scaling and pos in ("pre", "peri") else None

    def _in(self, norm: nn.Module, x: torch.Tensor) -> torch.Tensor:
        """A sublayer's input norm, times 1/sqrt(l) under LayerNorm Scaling."""
        return norm(x) if self.scale is None else norm(x) * self.scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pos = self.norm_position
        if pos == "post":
            x = self.ln1(x + self.attn(x))
            x = self.ln2(x + self.ffn(x))
        elif pos == "pre":
            x = x + self.attn(self._in(self.ln1, x))
            x = x + self.ffn(self._in(self.ln2, x))
        elif pos == "peri":
            x = x + self.ln1_out(self.attn(self._in(self.ln1, x)))
            x = x + self.ln2_out(self.ffn(self._in(self.ln2, x)))
        elif pos == "reordered":
            x = x + self.ln1_out(self.attn(x))
            x = x + self.ln2_out(self.ffn(x))
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
        self.blocks = nn.ModuleList(Block(cfg, layer) for layer in range(1, cfg.depth + 1))
        final = has_final_norm(cfg.norm_position)
        self.ln_f = make_norm(cfg.norm_type, cfg.d_model, cfg.dyt_alpha) if final else None
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
            if isinstance(m, (nn.LayerNorm, nn.RMSNorm, DyT)):
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

    def block_matrices(self) -> list[nn.Parameter]:
        """The blocks' weight matrices (PARAM_NAMES of each block, in order): what Muon updates."""
        return [block.get_submodule(name).weight for block in self.blocks for name in PARAM_NAMES]

    def record_logit_max(self, on: bool) -> None:
        """Whether the following forwards record each head's largest attention logit."""
        for block in self.blocks:
            block.attn.record_logit_max = on

    def logit_max(self) -> torch.Tensor:
        """(depth, heads) the last recorded forward's largest |q.k| / sqrt(hs) per block and head."""
        return torch.stack([block.attn.logit_max for block in self.blocks])

    def clip_qk(self, tau: float) -> None:
        """QK-Clip each block's attention with the last recorded forward's logits (CausalSelfAttention.clip_qk)."""
        for block in self.blocks:
            block.attn.clip_qk(tau)


def build_model(cfg: RunConfig, vocab_size: int) -> TinyLM:
    return TinyLM(cfg, vocab_size).to(cfg.device)
