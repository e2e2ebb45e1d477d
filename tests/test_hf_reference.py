"""ln-viz's blocks against Hugging Face's own, with the same weights copied in: `pre` computes what GPT-2's block
(and, with the embeddings and the final LayerNorm, GPT-2's whole model) and Llama's decoder layer compute, `post`
what BERT's layer computes, `peri` + QK-norm what Gemma 3's decoder layer computes, `reordered` + QK-norm what
OLMo 2's decoder layer computes (with one head: OLMo 2's QK-norm spans all heads, ln-viz's each head; a test shows
that this is the one difference left at 4 heads), to float32 tolerance.

What is aligned, and how (the HF side is changed, never ln-viz's):
- biases: ln-viz's projections have none; GPT-2's and BERT's are set to 0 (Llama and Gemma 3 have none).
- activation: GPT-2's and BERT's `relu` (ln-viz's FFN is ReLU, as Xiong et al.'s analysis).
- gated MLP: Llama's, Gemma 3's and OLMo 2's MLPs are gated (down(act(gate x) * up x)): no weights make that a
  ReLU FFN, so their layer runs with ln-viz's own FFN module in the MLP's place; the placement, the norms and the
  attention are Hugging Face's. That the MLP is not SwiGLU is the difference that remains.
- positions: ln-viz adds learnt positions to the embeddings (GPT-2 does too: the whole-model test); Llama,
  Gemma 3 and OLMo 2 rotate q and k (RoPE) inside the layer, here with angle 0 (cos 1, sin 0), which leaves them
  unrotated.
- causal mask for BERT (`is_decoder`), one key/value head per query head (no grouped-query attention), eps 1e-5,
  Gemma 3's query scale 1/sqrt(head_dim), its norms' (1 + w) gain (ln-viz's gain is 1 + w), full attention (no
  sliding window), no dropout, eager attention.
Each test prints its largest absolute difference (pytest -s shows it); docs/reference-equivalence.md lists them."""

from __future__ import annotations

import os

import pytest
import torch

pytest.importorskip("transformers", reason="transformers is not installed (pip install -r requirements-hf.txt)")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from transformers.utils import logging  # noqa: E402

from ln_viz.config import RunConfig  # noqa: E402
from ln_viz.model import Block, TinyLM  # noqa: E402

logging.set_verbosity_error()
D, H, T, B = 64, 4, 16, 3
TOL = 1e-5  # float32: the differences measured are 1e-7 to 1e-6
QUIET = dict(attention_dropout=0.0, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def ln_viz_block(pos: str, heads: int = H, **kw) -> Block:
    return Block(RunConfig(norm_position=pos, depth=4, d_model=D, heads=heads, **kw), layer=1).eval()


def causal_mask() -> torch.Tensor:
    """The additive mask eager attention takes: (B, 1, T, T), -inf above the diagonal."""
    return torch.full((T, T), float("-inf")).triu(1)[None, None].expand(B, 1, T, T)


def no_rotation(head_dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """RoPE's (cos, sin) at angle 0: q and k pass unrotated (ln-viz's positions are learnt, in the embeddings)."""
    return torch.ones(B, T, head_dim), torch.zeros(B, T, head_dim)


@torch.no_grad()
def randomise(*norms: torch.nn.Module, gain_centre: float = 1.0) -> None:
    """Gains (and shifts) away from their initial values, so that copying them is part of what is checked."""
    g = torch.Generator().manual_seed(7)
    for norm in norms:
        norm.weight.copy_(gain_centre + 0.1 * torch.randn(norm.weight.shape, generator=g))
        if getattr(norm, "bias", None) is not None:
            norm.bias.copy_(0.1 * torch.randn(norm.bias.shape, generator=g))


@torch.no_grad()
def zero_linear_biases(module: torch.nn.Module) -> None:
    for name, p in module.named_parameters():
        if name.endswith("bias") and "ln" not in name.lower():
            p.zero_()


@torch.no_grad()
def copy_attention(lv: Block, q, k, v, o) -> None:
    for mine, theirs in zip((lv.attn.q, lv.attn.k, lv.attn.v, lv.attn.o), (q, k, v, o), strict=True):
        mine.weight.copy_(theirs.weight)


def max_diff(name: str, mine: torch.Tensor, theirs: torch.Tensor | tuple) -> float:
    theirs = theirs[0] if isinstance(theirs, tuple) else theirs
    diff = (mine - theirs).abs().max().item()
    print(f"\n{name}: max abs diff {diff:.2e} (output std {theirs.std().item():.2f})")
    return diff


def x_in() -> torch.Tensor:
    return torch.randn(B, T, D, generator=torch.Generator().manual_seed(1))


def gpt2_config():
    from transformers import GPT2Config

    cfg = GPT2Config(n_embd=D, n_head=H, n_layer=2, n_positions=T, vocab_size=50, n_inner=4 * D,
                     activation_function="relu", layer_norm_epsilon=1e-5, resid_pdrop=0.0, embd_pdrop=0.0,
                     attn_pdrop=0.0)  # fmt: skip
    cfg._attn_implementation = "eager"
    return cfg


@torch.no_grad()
def copy_gpt2_block(lv: Block, g) -> None:
    W = g.attn.c_attn.weight  # Conv1D (d, 3d): y = x W, so each of q, k, v is a transposed slice
    for i, mine in enumerate((lv.attn.q, lv.attn.k, lv.attn.v)):
        mine.weight.copy_(W[:, i * D : (i + 1) * D].T)
    lv.attn.o.weight.copy_(g.attn.c_proj.weight.T)
    lv.ffn.w1.weight.copy_(g.mlp.c_fc.weight.T)
    lv.ffn.w2.weight.copy_(g.mlp.c_proj.weight.T)
    lv.ln1.load_state_dict(g.ln_1.state_dict())
    lv.ln2.load_state_dict(g.ln_2.state_dict())


def test_pre_block_is_gpt2s_block() -> None:
    from transformers.models.gpt2.modeling_gpt2 import GPT2Block

    torch.manual_seed(0)
    g = GPT2Block(gpt2_config(), layer_idx=0).eval()
    zero_linear_biases(g)
    randomise(g.ln_1, g.ln_2)
    lv = ln_viz_block("pre")
    copy_gpt2_block(lv, g)
    x = x_in()
    with torch.no_grad():
        assert max_diff("pre vs GPT-2 block", lv(x), g(x, attention_mask=causal_mask())) < TOL


def test_pre_model_is_gpt2s_whole_model_learnt_positions_and_final_norm_included() -> None:
    """Embeddings + learnt positions, two blocks, the final LayerNorm and the (tied) output layer: the logits."""
    from transformers import GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = gpt2_config()
    hf = GPT2LMHeadModel(cfg).eval()
    zero_linear_biases(hf)
    randomise(hf.transformer.ln_f, *(n for b in hf.transformer.h for n in (b.ln_1, b.ln_2)))
    lv = TinyLM(RunConfig(norm_position="pre", depth=2, d_model=D, heads=H, seq_len=T), vocab_size=50).eval()
    with torch.no_grad():
        lv.tok_emb.weight.copy_(hf.transformer.wte.weight)
        lv.pos_emb.weight.copy_(hf.transformer.wpe.weight)
        lv.head.weight.copy_(hf.lm_head.weight)  # tied to wte in GPT-2; ln-viz's is its own matrix
        lv.ln_f.load_state_dict(hf.transformer.ln_f.state_dict())
        for mine, theirs in zip(lv.blocks, hf.transformer.h, strict=True):
            copy_gpt2_block(mine, theirs)
        idx = torch.randint(0, 50, (B, T), generator=torch.Generator().manual_seed(2))
        assert max_diff("pre model vs GPT2LMHeadModel (logits)", lv(idx), hf(idx).logits) < TOL


def test_pre_rmsnorm_block_is_llamas_decoder_layer_with_ln_vizs_ffn() -> None:
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer

    torch.manual_seed(0)
    cfg = LlamaConfig(hidden_size=D, num_attention_heads=H, num_key_value_heads=H, intermediate_size=4 * D,
                      rms_norm_eps=1e-5, attention_bias=False, mlp_bias=False, **QUIET)  # fmt: skip
    cfg._attn_implementation = "eager"
    layer = LlamaDecoderLayer(cfg, layer_idx=0).eval()
    randomise(layer.input_layernorm, layer.post_attention_layernorm)
    lv = ln_viz_block("pre", norm_type="rmsnorm")
    a = layer.self_attn
    copy_attention(lv, a.q_proj, a.k_proj, a.v_proj, a.o_proj)
    lv.ln1.load_state_dict(layer.input_layernorm.state_dict())
    lv.ln2.load_state_dict(layer.post_attention_layernorm.state_dict())
    layer.mlp = lv.ffn  # SwiGLU cannot be made a ReLU FFN: the layer runs with ln-viz's
    x = x_in()
    with torch.no_grad():
        out = layer(x, attention_mask=causal_mask(), position_embeddings=no_rotation(D // H))
        assert max_diff("pre + RMSNorm vs Llama decoder layer", lv(x), out) < TOL


def test_post_block_is_berts_layer() -> None:
    from transformers import BertConfig
    from transformers.models.bert.modeling_bert import BertLayer

    torch.manual_seed(0)
    cfg = BertConfig(hidden_size=D, num_attention_heads=H, intermediate_size=4 * D, hidden_act="relu",
                     is_decoder=True, layer_norm_eps=1e-5, **QUIET)  # fmt: skip
    cfg._attn_implementation = "eager"
    layer = BertLayer(cfg).eval()
    zero_linear_biases(layer)
    ln_a, ln_f = layer.attention.output.LayerNorm, layer.output.LayerNorm
    randomise(ln_a, ln_f)
    lv = ln_viz_block("post")
    s = layer.attention.self
    copy_attention(lv, s.query, s.key, s.value, layer.attention.output.dense)
    with torch.no_grad():
        lv.ffn.w1.weight.copy_(layer.intermediate.dense.weight)
        lv.ffn.w2.weight.copy_(layer.output.dense.weight)
    lv.ln1.load_state_dict(ln_a.state_dict())
    lv.ln2.load_state_dict(ln_f.state_dict())
    x = x_in()
    with torch.no_grad():
        assert max_diff("post vs BERT layer (causal)", lv(x), layer(x, attention_mask=causal_mask())) < TOL


@torch.no_grad()
def copy_gemma_norm(mine: torch.nn.Module, theirs: torch.nn.Module) -> None:
    mine.weight.copy_(1.0 + theirs.weight)  # Gemma's RMSNorm multiplies by (1 + w), its w starting at 0


def test_peri_block_with_qk_norm_is_gemma3s_decoder_layer_with_ln_vizs_ffn() -> None:
    from transformers import Gemma3TextConfig
    from transformers.models.gemma3.modeling_gemma3 import Gemma3DecoderLayer

    torch.manual_seed(0)
    hs = D // H
    cfg = Gemma3TextConfig(hidden_size=D, num_attention_heads=H, num_key_value_heads=H, head_dim=hs,
                           intermediate_size=4 * D, num_hidden_layers=1, layer_types=["full_attention"],
                           query_pre_attn_scalar=hs, rms_norm_eps=1e-5, attention_bias=False,
                           attn_logit_softcapping=None, attention_dropout=0.0)  # fmt: skip
    cfg._attn_implementation = "eager"
    layer = Gemma3DecoderLayer(cfg, layer_idx=0).eval()
    a = layer.self_attn
    norms = (layer.input_layernorm, layer.post_attention_layernorm, layer.pre_feedforward_layernorm,
             layer.post_feedforward_layernorm, a.q_norm, a.k_norm)  # fmt: skip
    randomise(*norms, gain_centre=0.0)
    lv = ln_viz_block("peri", norm_type="rmsnorm", qk_norm="rmsnorm")
    copy_attention(lv, a.q_proj, a.k_proj, a.v_proj, a.o_proj)
    mine = (lv.ln1, lv.ln1_out, lv.ln2, lv.ln2_out, lv.attn.q_norm, lv.attn.k_norm)
    for m, theirs in zip(mine, norms, strict=True):
        copy_gemma_norm(m, theirs)
    layer.mlp = lv.ffn  # Gemma's gated GELU MLP cannot be made a ReLU FFN: the layer runs with ln-viz's
    x = x_in()
    with torch.no_grad():
        out = layer(x, attention_mask=causal_mask(), position_embeddings=no_rotation(hs))
        assert max_diff("peri + QK-norm vs Gemma 3 decoder layer", lv(x), out) < TOL


def olmo2_pair(heads: int):
    """OLMo 2's decoder layer and ln-viz's reordered block with RMSNorm and QK-norm, OLMo's weights copied in."""
    from transformers import Olmo2Config
    from transformers.models.olmo2.modeling_olmo2 import Olmo2DecoderLayer

    torch.manual_seed(0)
    cfg = Olmo2Config(hidden_size=D, num_attention_heads=heads, num_key_value_heads=heads, intermediate_size=4 * D,
                      rms_norm_eps=1e-5, attention_bias=False, attention_dropout=0.0)  # fmt: skip
    cfg._attn_implementation = "eager"
    layer = Olmo2DecoderLayer(cfg, layer_idx=0).eval()
    a = layer.self_attn
    lv = ln_viz_block("reordered", heads=heads, norm_type="rmsnorm", qk_norm="rmsnorm")
    copy_attention(lv, a.q_proj, a.k_proj, a.v_proj, a.o_proj)
    randomise(layer.post_attention_layernorm, layer.post_feedforward_layernorm)
    lv.ln1_out.load_state_dict(layer.post_attention_layernorm.state_dict())
    lv.ln2_out.load_state_dict(layer.post_feedforward_layernorm.state_dict())
    layer.mlp = lv.ffn  # OLMo 2's SwiGLU cannot be made a ReLU FFN: the layer runs with ln-viz's
    x = x_in()
    with torch.no_grad():
        out = layer(x, attention_mask=causal_mask(), position_embeddings=no_rotation(D // heads))
    return lv, layer, x, out


def test_reordered_block_with_qk_norm_is_olmo2s_decoder_layer_with_one_head() -> None:
    """With one head, OLMo 2's QK-norm (over all heads' features together) and ln-viz's (per head) are the same."""
    lv, layer, x, out = olmo2_pair(heads=1)
    randomise(layer.self_attn.q_norm, layer.self_attn.k_norm)
    lv.attn.q_norm.load_state_dict(layer.self_attn.q_norm.state_dict())
    lv.attn.k_norm.load_state_dict(layer.self_attn.k_norm.state_dict())
    with torch.no_grad():
        out = layer(x, attention_mask=causal_mask(), position_embeddings=no_rotation(D))
        assert max_diff("reordered + QK-norm vs OLMo 2 decoder layer (1 head)", lv(x), out) < TOL


def test_olmo2s_qk_norm_spans_all_heads_ln_vizs_each_head_the_difference_that_remains() -> None:
    """With 4 heads (gains at 1 on both sides) the outputs differ: OLMo 2 divides q and k by their RMS over all 64
    features, ln-viz by each head's RMS over its 16, so the heads' logits are scaled differently."""
    lv, layer, x, out = olmo2_pair(heads=4)
    with torch.no_grad():
        assert max_diff("reordered + QK-norm vs OLMo 2 decoder layer (4 heads)", lv(x), out) > 1e-2
        lv.attn.qk_norm = False  # both QK-norms taken out: the rest of the two layers is the same
        layer.self_attn.q_norm = layer.self_attn.k_norm = torch.nn.Identity()
        out = layer(x, attention_mask=causal_mask(), position_embeddings=no_rotation(D // 4))
        assert max_diff("reordered vs OLMo 2 decoder layer, both without QK-norm (4 heads)", lv(x), out) < TOL
