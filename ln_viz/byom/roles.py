"""What each norm and matrix of a traced block does, and the placement the norms make (for ln_viz.byom.card).

- a norm's role, from where its input comes from and where its output goes: `post` (its output is the block's
  output), `pre` (it reads the block's input), `out` (its output is added to the residual), `mid` (it reads or
  writes the residual between the branches), `qk` (QK-norm: inside the attention module, off the residual path,
  its output read by no matrix), `v` (V-norm: its output is the values attention is given, Gemma 4), `latent`
  (inside a branch, off the residual stream, and no QK-norm: DeepSeek's MLA latents and BitNet's attention
  sub-norm, which a matrix reads; a norm at another width than the residual's outside attention, as BitNet's FFN
  sub-norm and a Mamba mixer's; DeepSeek V3.2's indexer keys, inside a sub-network of the attention with
  matrices of its own);
- the placement, from the residual norms' roles and whether attention and the FFN read the same input;
- a matrix's role (q, k, v, o, fused qkv, FFN in, gate, out) from its attribute name inside the attention module
  or outside it (a short table of the names HF, nanoGPT, Meta and PyTorch's own layers use); "other" where the
  name says nothing.
"""

from __future__ import annotations

from typing import Protocol

import torch
from torch import nn

from ln_viz.byom.layout import _close, _feeds_matrix, _inside

# attribute names of the matrices, by role (the last part of the module's path inside the block)
_ATTN_ROLES = {
    "attn.q": {"q_proj", "query", "q", "q_lin", "wq", "to_q", "q_proj_weight"},
    "attn.k": {"k_proj", "key", "k", "k_lin", "wk", "to_k", "k_proj_weight"},
    "attn.v": {"v_proj", "value", "v", "v_lin", "wv", "to_v", "v_proj_weight"},
    "attn.o": {"o_proj", "out_proj", "dense", "c_proj", "wo", "o", "out_lin", "to_out", "proj"},
    "attn.qkv": {"c_attn", "query_key_value", "qkv", "wqkv", "qkv_proj", "in_proj", "w_pack", "in_proj_weight"},
}
_FFN_ROLES = {
    "ffn.gate": {"gate_proj", "gate", "wi_0", "w_gate"},
    "ffn.in": {"up_proj", "gate_up_proj", "v1", "fc1", "c_fc", "dense_h_to_4h", "fc_in", "wi", "wi_1", "w3", "lin1",
               "w_in", "input_linear", "linear1"},
    "ffn.out": {"down_proj", "fc2", "c_proj", "dense_4h_to_h", "fc_out", "wo", "w2", "lin2", "w_out", "output_linear",
                "linear2"},
}  # fmt: skip
RESIDUAL_ROLES = ("pre", "post", "out", "mid")  # the others (qk, v, latent) are off the residual path


class Traced(Protocol):
    """What a block's trace holds (ln_viz.byom.card's _Trace)."""

    x: torch.Tensor
    y: torch.Tensor
    inputs: dict[str, torch.Tensor]
    outputs: dict[str, torch.Tensor]
    attention: str
    values: torch.Tensor | None


def norm_roles(block: nn.Module, trace: Traced, ordered: list[str], out_sum: tuple[str, ...], d: int) -> dict[str, str]:
    """Each norm's role (see the module's docstring) from where its input comes from and where its output goes."""
    x, y, attention = trace.x, trace.y, trace.attention
    roles: dict[str, str] = {}
    for n in ordered:
        if _close(trace.outputs[n], y, d):
            roles[n] = "post"
        elif _close(trace.inputs[n], x, d):
            roles[n] = "pre"
        elif n in out_sum:
            roles[n] = "out"
        elif attention and _inside(n, attention):
            # a matrix reads its output: one outside attention -> the residual between the branches (ALBERT's
            # attention module holds its output LayerNorm); one inside -> a latent (DeepSeek's compressed q/kv,
            # BitNet's sub-norm before the output projection, DiffLlama's scaled group norm)
            reader = _feeds_matrix(block, trace.inputs, trace.outputs[n])
            if reader is None and _same_values(trace.outputs[n], trace.values):
                roles[n] = "v"  # a V-norm (Gemma 4): on the values, not the logits
            elif reader is None:
                roles[n] = "latent" if _in_sub_network(block, n, attention) else "qk"
            else:
                roles[n] = "latent" if _inside(reader, attention) else "mid"
        elif trace.inputs[n].shape[-1] != d:  # not the residual's width: inside a branch (BitNet's FFN, a Mamba's)
            roles[n] = "latent"
        else:
            roles[n] = "mid"
    return roles


def _same_values(out: torch.Tensor, values: torch.Tensor | None) -> bool:
    """The norm's output is the values attention was given, laid out otherwise ((B, T, H, hs) or (B, H, T, hs)) and
    each kv head repeated for its query heads where the values were: the same numbers, so the same when sorted."""
    if values is None or out.numel() == 0 or values.numel() % out.numel():
        return False
    repeat = values.numel() // out.numel()
    a = out.detach().double().reshape(-1).sort().values
    b = values.double().reshape(-1).sort().values[::repeat]
    return a.shape == b.shape and torch.allclose(a, b, atol=1e-6, rtol=1e-5)


def _in_sub_network(block: nn.Module, module: str, attention: str) -> bool:
    """The module (a norm, a matrix's Linear) sits in a module below the attention module that has matrices of its
    own: a sub-network beside the dot product (DeepSeek V3.2's indexer, which scores the keys to keep), not on q's
    or k's way to it. A list or dict of modules is no sub-network (diffusers' `to_out.0`)."""
    parent = module.rsplit(".", 1)[0] if "." in module else ""
    if parent == attention or not _inside(parent, attention) or not _projects(block, attention):
        return False
    sub = block.get_submodule(parent)
    return not isinstance(sub, _CONTAINERS) and any(p.ndim >= 2 for p in sub.parameters())


def _projects(block: nn.Module, attention: str) -> bool:
    """The attention module holds projections of its own, named as attention's (DeepSeek's o_proj): the modules
    below it are sub-networks. Where it holds none (BigBird's `attention` holds `self` with q, k, v and `output`),
    they are its parts."""
    words = set().union(*_ATTN_ROLES.values())
    return any(n in words for n, _ in block.get_submodule(attention).named_children())


_CONTAINERS = (nn.ModuleList, nn.Sequential, nn.ModuleDict)


def attention_child(attention: str) -> str:
    """The block's direct child that holds the attention module ("" when none was seen)."""
    return attention.split(".")[0] if attention else ""


def attention_part(block: nn.Module, attention: str) -> str:
    """The attention module with its output projection: its parent when that is a module of its own
    (BERT's `attention` holds `self` and `output.dense`), else the attention module itself."""
    if "." not in attention:
        return attention
    parent = attention.rsplit(".", 1)[0]
    return attention if isinstance(block.get_submodule(parent), (nn.ModuleList, nn.Sequential)) else parent


def placement(roles: dict[str, str], trace: Traced, block: nn.Module, d: int) -> str:
    """The block's placement (ln_viz.byom.card.PLACEMENTS) from its residual norms' roles."""
    resid = [r for r in roles.values() if r in RESIDUAL_ROLES]
    if not resid:
        return "none"
    if resid.count("pre") >= 2 or _parallel(trace, block, d):
        return "parallel"
    if "post" in resid:
        return "post"
    if "out" in resid:
        return "peri" if "pre" in resid else "reordered"
    if "pre" in resid:
        return "pre"
    return "unknown"


def _parallel(trace: Traced, block: nn.Module, d: int) -> bool:
    """Attention and the FFN read the same input. The FFN: the other direct child with the most matrix weights
    among those holding a matrix named as an FFN's (Falcon-H1's Mamba mixer, beside its attention, is larger
    than its FFN), else among all the others."""
    attn = attention_child(trace.attention)
    if not attn:
        return False
    sizes = {
        n: sum(p.numel() for p in c.parameters() if p.ndim >= 2)
        for n, c in block.named_children()
        if n != attn and n in trace.inputs
    }
    roles = matrix_roles(block, trace.attention, attention_part(block, trace.attention))
    ffn_like = {name.split(".")[0] for name, role, _ in roles if role.startswith("ffn.")}
    candidates = {n: s for n, s in sizes.items() if n in ffn_like} or sizes
    if not candidates:
        return False
    ffn = max(candidates, key=candidates.get)
    return candidates[ffn] > 0 and _close(trace.inputs[attn], trace.inputs[ffn], d)


def matrix_roles(block: nn.Module, attention: str, attn_part: str) -> list[tuple[str, str, tuple[int, ...]]]:
    """(parameter path, role, shape) of each weight matrix of the block, in parameter order; `attention` the
    attention module, `attn_part` it with its output projection (attention_part)."""
    # PEFT's LoRA wraps a matrix: its frozen `q_proj.base_layer.weight` is q_proj's (the adapters,
    # `q_proj.lora_A.default.weight`, are named for no role)
    params = [
        (n, [q for q in n.split(".") if q != "base_layer"], p) for n, p in block.named_parameters() if p.ndim >= 2
    ]
    leaves = {_leaf(parts)[0] for _, parts, _ in params}
    experts = {m for m, _ in block.named_modules() if m.rsplit(".", 1)[-1] == "experts"}  # an MoE's
    out = []
    for n, parts, p in params:  # an MoE's router (mlp.gate beside mlp.experts) is no SwiGLU gate
        leaf, parent, bare = _leaf(parts)
        router = leaf in ("gate", "router") and ".".join(parts[: -1 if bare else -2] + ["experts"]) in experts
        role = "other" if router else _role(leaf.lower(), parent.lower(), _inside(n, attn_part), leaves)
        if role.startswith("attn.") and attention and _in_sub_network(block, ".".join(parts[:-1]), attention):
            role = "other"  # DeepSeek V3.2's indexer's wk is not the attention's k
        out.append((n, role, tuple(p.shape)))
    return out


def _leaf(parts: list[str]) -> tuple[str, str, bool]:
    """(name, parent's name, bare) of a matrix parameter's path: its module's (`mlp.down_proj.weight`), or a bare
    parameter's own (the experts' fused `mlp.experts.down_proj`)."""
    if len(parts) >= 2 and parts[-1] == "weight":
        return parts[-2], ".".join(parts[-3:-2]), False
    return parts[-1], ".".join(parts[-2:-1]), True


def _role(leaf: str, parent: str, in_attention: bool, leaves: set[str]) -> str:
    if in_attention:
        for role, words in _ATTN_ROLES.items():
            if leaf in words:
                return role
        return "other"
    if leaf == "dense":  # BERT's FFN: intermediate.dense, output.dense
        return {"intermediate": "ffn.in", "output": "ffn.out"}.get(parent, "other")
    if leaf == "w1":  # Meta's SwiGLU: w1 gate, w3 up; a plain MLP's w1 is its input
        return "ffn.gate" if leaves & {"w3", "v1"} else "ffn.in"  # DBRX: w1 gate, v1 up, w2 down
    for role, words in _FFN_ROLES.items():
        if leaf in words:
            return role
    return "other"
