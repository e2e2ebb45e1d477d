"""The attention tap: the largest attention logit and the entropy of each layer, read where the dot product
happens, without changing what the model computes.

- Hugging Face models (transformers 5): a function registered in `AttentionInterface` under
  `lnviz_<original>` with the original's mask function in `AttentionMaskInterface` (without it a custom name
  gets no mask: Gemma 2 silently lost its causal mask in the design note's measurement), which summarises q
  and k (after RoPE and QK-norm, as the dot product sees them) and then calls the original implementation.
- PyTorch's nn.MultiheadAttention (its TransformerEncoderLayer and DecoderLayer): a forward pre-hook on the module,
  which projects q and k as its forward does (`mha_query_key`).
- Anything else: a TorchFunctionMode over `F.scaled_dot_product_attention`, entered only for a probed
  forward pass.
- Attention written by hand (matmul and softmax: BLOOM, MPT, DeBERTa-v2, research code): the same mode sees the
  softmax a running attention module gives its scores (`softmax_input_stats`), for the layers no tap above saw;
  for a Hugging Face model, entered for its first probed pass, and kept on only where it was needed.
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from ln_viz.byom.layout import SOFTMAX

# as ln-viz's own probes: the first 8 sequences, the masked scores' stand-in for -inf, the one-exp-pass entropy
from ln_viz.probes import ENTROPY_SEQUENCES, MASKED, UNSHIFTED, softmax_entropy

# id(attention module) -> callback(module, query, key, mask, scaling, softcap, causal, sinks); set while attached
_LISTENERS: dict[int, Callable[..., None]] = {}


def attention_stats(
    query: torch.Tensor,
    key: torch.Tensor,
    mask: Any = None,
    scaling: float | None = None,
    softcap: float | None = None,
    causal: bool = False,
    probs: bool = False,
    sinks: torch.Tensor | None = None,
) -> tuple[float, float, torch.Tensor | None]:
    """(largest |logit|, mean entropy in nats, the probabilities when `probs`, else None) of
    softmax(q k^T * scaling) for q (B, H, T, hs), k (B, Hkv, S, hs) on the first ENTROPY_SEQUENCES sequences;
    `mask` boolean (True: attend) or additive, broadcastable to (B, H, T, S), or flex attention's BlockMask;
    `softcap` as Gemma 2's tanh cap;
    `causal` when there is no mask but the implementation would apply a causal one; `sinks` (H,) each head's
    attention-sink logit (GPT-OSS), a column every row's softmax also spreads over: in the entropy, not among the
    logits (the largest is of q.k), and dropped from the probabilities as the model's own are. Reads q and k
    detached (no no_grad context needed)."""
    q = query.detach()[:ENTROPY_SEQUENCES].float()
    k = key.detach()[:ENTROPY_SEQUENCES].float()
    if mask is not None and not isinstance(mask, torch.Tensor):  # flex attention's BlockMask
        mask = dense_block_mask(mask, q.shape[0], q.shape[1], q.shape[2], k.shape[2], q.device)
    if k.shape[1] != q.shape[1]:  # grouped-query attention: each k head serves several q heads
        k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
    scale = scaling if scaling is not None else 1.0 / math.sqrt(q.shape[-1])
    # k contiguous: a transposed (B, T, H, hs) layout, as Hugging Face's, takes a slower batched matmul (102 against
    # 86 us at 8 x 4 x 64 x 16, one thread)
    logits = (q * scale) @ k.contiguous().transpose(-1, -2)  # (B, H, T, S)
    B, H, T, S = logits.shape
    keep = None  # (B or 1, H or 1, T, S) booleans: True where a query may attend
    if mask is not None:
        m = mask.detach()[:ENTROPY_SEQUENCES, ..., :S]
        keep = m if m.dtype == torch.bool else m > torch.finfo(m.dtype).min / 2
    elif causal and T > 1:
        keep = _causal(T, S, q.device)
    # the largest |logit| among those attended to: masked ones multiplied by 0 in place (one pass, 4x cheaper
    # than torch.where; the masked logits are not read again: they become -1e30 below), unless a logit is not
    # finite (inf * 0 is NaN), then by where
    seen = logits if keep is None else logits.mul_(_as_float(keep))  # x * 1.0 and x * 0.0, as x * True, x * False
    lo, hi = torch.aminmax(seen)
    largest = float(torch.maximum(-lo, hi))
    finite = math.isfinite(largest)
    if not finite and keep is not None:
        lo, hi = torch.aminmax(torch.where(keep, logits, 0.0))
        largest = float(torch.maximum(-lo, hi))
    scores = logits if not softcap else torch.tanh(logits / softcap) * softcap
    if mask is not None and mask.dtype != torch.bool:
        scores = scores + m.float()  # an additive mask (T5's position bias) is part of the scores
    if keep is not None:  # adding -1e30 to a finite score gives -1e30: as masked_fill, 8x cheaper
        additive = mask is not None and mask.dtype != torch.bool  # finfo.min - 1e30 might round to -inf
        fast = finite and not additive
        scores = scores.add_(_bias(keep)) if fast else scores.masked_fill(~keep, MASKED)  # scores: our own
    all_seen = keep is None or (causal and mask is None and S >= T)
    # unshifted where every row sees a score and none is over UNSHIFTED in size (a softcap keeps them under)
    shift = not (finite and largest <= UNSHIFTED and all_seen and sinks is None)
    entropy, p = _entropy(scores, keep, all_seen, probs, sinks, shift)
    return largest, entropy, p


def dense_block_mask(block_mask: Any, batch: int, heads: int, T: int, S: int, device: torch.device) -> torch.Tensor:
    """Flex attention's BlockMask as booleans (batch or 1, heads or 1, T, S), True where a query attends: its
    mask_mod evaluated at every position of the first `batch` sequences (a document mask differs by sequence)."""
    from torch.nn.attention.flex_attention import create_mask

    b, h = block_mask.shape[:2]
    return create_mask(block_mask.mask_mod, min(b, batch) if b > 1 else None, heads if h > 1 else None, T, S, device)


def _entropy(
    scores: torch.Tensor,
    keep: torch.Tensor | None,
    all_seen: bool,
    probs: bool,
    sinks: torch.Tensor | None,
    shift: bool = True,
) -> tuple[float, torch.Tensor | None]:
    """(mean entropy over the rows with something to attend to, the probabilities when `probs`) of the masked
    scores (B, H, T, S), shifted in place (unless `shift` is False: see softmax_entropy); `all_seen`: every row
    attends to something (no mask, or causal with S >= T)."""
    B, H, T, S = scores.shape
    if sinks is not None:  # the sink's column, seen by every row (one with nothing else to attend to too)
        scores = torch.cat([scores, sinks.detach().float().reshape(1, -1, 1, 1).expand(B, H, T, 1)], dim=-1)
    # one exp pass over every row at once; a row with nothing to attend to (padding) came out uniform over S
    # (entropy log S), or all on the sink (entropy ~0), and is taken back out
    p, total = softmax_entropy(scores, probs, shift)
    rows = B * H * T
    if keep is not None and not all_seen:
        empty = int((~keep.any(-1)).expand(B, H, T).sum())
        total -= empty * math.log(S) if sinks is None else 0.0
        rows -= empty
    if p is not None and sinks is not None:
        p = p[..., :-1]  # as the model's own probabilities: without the sink's
    return (total / rows if rows > 0 else math.nan), p


def _bias(keep: torch.Tensor) -> torch.Tensor:
    """0 where `keep`, -1e30 elsewhere (the causal one cached with its mask)."""
    if keep.ndim == 2 and keep is _causal(*keep.shape, keep.device):
        return _causal_bias(*keep.shape, keep.device)
    return torch.zeros(keep.shape, device=keep.device).masked_fill_(~keep, MASKED)


def _as_float(keep: torch.Tensor) -> torch.Tensor:
    """`keep` as 1.0 and 0.0 (the causal one cached): a float mask multiplies without a cast of each element."""
    if keep.ndim == 2 and keep is _causal(*keep.shape, keep.device):
        return _causal_float(*keep.shape, keep.device)
    return keep


@functools.lru_cache(maxsize=8)
def _causal_float(T: int, S: int, device: torch.device) -> torch.Tensor:
    return _causal(T, S, device).float()


@functools.lru_cache(maxsize=8)
def _causal_bias(T: int, S: int, device: torch.device) -> torch.Tensor:
    return torch.zeros(T, S, device=device).masked_fill_(~_causal(T, S, device), MASKED)


@functools.lru_cache(maxsize=8)
def _causal(T: int, S: int, device: torch.device) -> torch.Tensor:
    """(T, S) booleans, True where query t (the last T of S positions) may attend."""
    return torch.ones(T, S, dtype=torch.bool, device=device).tril(S - T)


def _tap_for(original: str) -> Callable[..., Any]:
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    def tap(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
        listener = _LISTENERS.get(id(module))
        if listener is not None:
            causal = getattr(module, "is_causal", False)
            listener(module, query, key, attention_mask, scaling, kwargs.get("softcap"), causal, kwargs.get("s_aux"))
        if original in ALL_ATTENTION_FUNCTIONS:
            fn = ALL_ATTENTION_FUNCTIONS[original]
        else:  # "eager": the model file's own function
            fn = sys.modules[type(module).__module__].eager_attention_forward
        return fn(module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs)

    return tap


def hf_tap_name(model: Any) -> str | None:
    """Register the tap for this model's attention implementation; its name, or None for a model the
    AttentionInterface does not drive (then the sdpa mode is the fallback)."""
    config = getattr(model, "config", None)
    original = getattr(config, "_attn_implementation", None)
    if not original or not hasattr(model, "set_attn_implementation") or "transformers" not in sys.modules:
        return None
    if original.startswith("lnviz_"):
        return original
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface

    name = f"lnviz_{original}"
    if name not in AttentionInterface._global_mapping:
        AttentionInterface.register(name, _tap_for(original))
        if original in ALL_MASK_ATTENTION_FUNCTIONS:
            AttentionMaskInterface.register(name, ALL_MASK_ATTENTION_FUNCTIONS[original])
    return name


def mha_query_key(
    mha: torch.nn.MultiheadAttention, args: tuple, kwargs: dict
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, bool] | None:
    """(q (B, H, T, hs), k (B, H, S, hs), mask, causal) of the first ENTROPY_SEQUENCES sequences of an
    nn.MultiheadAttention call (its forward's arguments, as its pre-hook gets them: PyTorch's
    TransformerEncoderLayer and DecoderLayer), q and k projected as its forward projects them, the mask in
    attention_stats' terms (True: attend, or additive) from its attn_mask and key_padding_mask (True: ignore, or
    additive); None where its keys are not all projected ones (bias_k, add_zero_attn)."""
    names = ("query", "key", "value", "key_padding_mask", "need_weights", "attn_mask", "average_attn_weights")
    given = dict(zip(names, args)) | kwargs
    if mha.bias_k is not None or mha.add_zero_attn:
        return None
    query, key = given["query"].detach(), given["key"].detach()
    if query.dim() == 2:  # unbatched (T, E)
        query, key = query.unsqueeze(1), key.unsqueeze(1)
    elif mha.batch_first:
        query, key = query.transpose(0, 1), key.transpose(0, 1)  # (T, B, E), as its forward computes
    n = min(query.shape[1], ENTROPY_SEQUENCES)
    query, key = query[:, :n], key[:, :n]
    E, H = mha.embed_dim, mha.num_heads
    bias = mha.in_proj_bias.detach().chunk(3) if mha.in_proj_bias is not None else (None, None, None)
    if mha._qkv_same_embed_dim:
        w_q, w_k, _ = mha.in_proj_weight.detach().chunk(3)
    else:
        w_q, w_k = mha.q_proj_weight.detach(), mha.k_proj_weight.detach()
    q = F.linear(query, w_q, bias[0]).view(query.shape[0], n, H, E // H).permute(1, 2, 0, 3)
    k = F.linear(key, w_k, bias[1]).view(key.shape[0], n, H, E // H).permute(1, 2, 0, 3)
    masks = []
    attn_mask, padding = given.get("attn_mask"), given.get("key_padding_mask")
    if attn_mask is not None:  # (T, S), or (B * H, T, S)
        m = attn_mask.detach()
        masks.append(m.view(-1, H, *m.shape[-2:])[:n] if m.dim() == 3 else m[None, None])
    if padding is not None:  # (B, S), or (S,) unbatched
        masks.append(padding.detach().reshape(-1, padding.shape[-1])[:n, None, None, :])
    causal = bool(given.get("is_causal", False)) and attn_mask is None
    if not masks:
        return q, k, None, causal
    if all(m.dtype == torch.bool for m in masks):
        keep = ~masks[0] if len(masks) == 1 else ~(masks[0] | masks[1])
        return q, k, keep, causal
    added = [
        torch.zeros(m.shape, device=m.device).masked_fill_(m, -math.inf) if m.dtype == torch.bool else m.float()
        for m in masks
    ]
    return q, k, added[0] if len(added) == 1 else added[0] + added[1], causal


def softmax_input_stats(z: torch.Tensor, probs: bool = False) -> tuple[float, float, torch.Tensor | None]:
    """attention_stats' (largest |logit|, mean entropy, the probabilities when `probs`) from the scores (B, H, T, S)
    that attention written by hand gives a softmax over its last axis, on the first ENTROPY_SEQUENCES sequences.
    Masked entries are those at or below HAND_MASKED: the fills such code adds or writes (-inf, a dtype's minimum
    as Hugging Face's eager masks, float16's after a cast to float32 as MPT's under autocast, -1e9, BERT's -10000
    added to a score); a real logit down there would be taken for masked. A NaN stays (the largest is NaN then).
    The logits are the scores as given: scaled, and with any additive bias in them (BLOOM's ALiBi)."""
    z = z.detach()[:ENTROPY_SEQUENCES]
    keep = ~(z <= HAND_MASKED)
    z = z.float()
    largest = float(torch.where(keep, z, 0.0).abs().amax())
    entropy, p = _entropy(z.masked_fill(~keep, MASKED), keep, False, probs, None)
    return largest, entropy, p


HAND_MASKED = -5000.0  # softmax_input_stats: a score at or below it is a mask's fill, not a logit


class SdpaTap(TorchFunctionMode):
    """Sees every F.scaled_dot_product_attention call while entered; `on_call(i, q, k, mask, scale, causal)`
    with i counting the calls of this forward pass (the layer, for a model that calls it once a block); and, with
    `on_softmax`, every softmax: `on_softmax(x, dim)` (attention written by hand, where the caller knows which
    attention module is running). `on_call` None: the softmax alone."""

    def __init__(self, on_call: Callable[..., None] | None, on_softmax: Callable[..., None] | None = None) -> None:
        super().__init__()
        self.on_call, self.on_softmax = on_call, on_softmax
        self.calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in SOFTMAX and self.on_softmax is not None and args and isinstance(args[0], torch.Tensor):
            self.on_softmax(args[0], kwargs.get("dim", args[1] if len(args) > 1 else None))
        elif func is F.scaled_dot_product_attention and self.on_call is not None:
            q, k = args[0], args[1]
            mask = kwargs.get("attn_mask", args[3] if len(args) > 3 else None)
            causal = kwargs.get("is_causal", args[5] if len(args) > 5 else False)
            scale = kwargs.get("scale", args[6] if len(args) > 6 else None)
            self.on_call(self.calls, q, k, mask, scale, bool(causal))
            self.calls += 1
        return func(*args, **kwargs)
