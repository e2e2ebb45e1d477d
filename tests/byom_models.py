"""Tiny random Hugging Face models for the byom tests, built offline from configs (no download)."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

SMALL = dict(
    hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, vocab_size=128,
    max_position_embeddings=128,
)  # fmt: skip
# name -> (auto class name, config kwargs, the placement ln-viz must find, QK-norm)
SPECS = {
    "gpt2": (
        "AutoModelForCausalLM",
        dict(n_embd=64, n_layer=2, n_head=4, vocab_size=128, n_positions=128),
        "pre",
        False,
    ),
    "llama": ("AutoModelForCausalLM", dict(SMALL, num_key_value_heads=2), "pre", False),
    "bert": ("AutoModelForMaskedLM", dict(SMALL), "post", False),
    "gemma3_text": ("AutoModelForCausalLM", dict(SMALL, num_key_value_heads=4, head_dim=16), "peri", True),
    "olmo2": ("AutoModelForCausalLM", dict(SMALL, num_key_value_heads=4), "reordered", True),
}
MORE = {
    "qwen3": ("AutoModelForCausalLM", dict(SMALL, num_key_value_heads=4, head_dim=16), "pre", True),
    "gpt_neox": ("AutoModelForCausalLM", dict(SMALL), "parallel", False),
    "opt": ("AutoModelForCausalLM", dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, ffn_dim=128,
                                        vocab_size=128, word_embed_proj_dim=64, max_position_embeddings=128),
            "pre", False),
    "roberta": ("AutoModelForMaskedLM", dict(SMALL, max_position_embeddings=130), "post", False),
    "gemma2": ("AutoModelForCausalLM", dict(SMALL, num_key_value_heads=4, head_dim=16, attn_implementation="eager"),
               "peri", False),
    "t5": ("AutoModelForSeq2SeqLM", dict(d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4, vocab_size=128),
           "pre", False),
    # ALBERT: one layer's weights shared by every layer; its attention module holds its output LayerNorm
    "albert": ("AutoModelForMaskedLM", dict(SMALL, num_hidden_layers=3, embedding_size=32), "post", False),
    # DeepSeek V3's MLA: RMSNorms on the compressed q and kv, then up-projected: no QK-norm (as Kimi K2 says)
    "deepseek_v3": ("AutoModelForCausalLM", dict(SMALL, num_key_value_heads=4, n_routed_experts=4,
                                                 num_experts_per_tok=2, moe_intermediate_size=32, q_lora_rank=32,
                                                 kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=8,
                                                 v_head_dim=16, first_k_dense_replace=1, n_group=1, topk_group=1),
                    "pre", False),
    # GPT-OSS: each head's learned attention sink, a logit every query's softmax also spreads over
    "gpt_oss": ("AutoModelForCausalLM", dict(SMALL, num_key_value_heads=4, num_local_experts=4, num_experts_per_tok=2,
                                             head_dim=16), "pre", False),
    # BLOOM: attention written by hand (baddbmm with ALiBi, softmax), through no function ln-viz can tap
    "bloom": ("AutoModelForCausalLM", dict(hidden_size=64, n_layer=2, n_head=4, vocab_size=128), "pre", False),
    "bart": ("AutoModelForSeq2SeqLM", dict(d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                                          decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128,
                                          vocab_size=128, max_position_embeddings=128), "post", False),
}  # fmt: skip


GQA = dict(SMALL, num_key_value_heads=4)
NAMED_IDS = dict(pad_token_id=0, bos_token_id=1, eos_token_id=2, sep_token_id=3, cls_token_id=4)
GPTJ_LIKE = dict(n_embd=64, n_layer=2, n_head=4, vocab_size=128, n_positions=128)
# more architectures, read by describe alone (tests/test_byom.py): name -> (auto class, config, placement, QK-norm)
WIDE = {
    **{n: ("AutoModelForCausalLM", GQA, "pre", False) for n in (
        "mistral", "qwen2", "mixtral", "starcoder2", "stablelm", "granite", "olmo", "nemotron", "seed_oss",
        "ernie4_5", "arcee")},
    **{n: ("AutoModelForCausalLM", dict(GQA, head_dim=16, pad_token_id=0), "pre", False)
       for n in ("gemma", "helium", "smollm3", "glm")},
    "phi3": ("AutoModelForCausalLM", dict(GQA, pad_token_id=0), "pre", False),
    "bitnet": ("AutoModelForCausalLM", GQA, "pre", False),
    "dbrx": ("AutoModelForCausalLM", dict(d_model=64, n_layers=2, n_heads=4, vocab_size=128, max_seq_len=128,
                                          attn_config={"kv_n_heads": 4, "rope_theta": 1e4, "clip_qkv": 8.0},
                                          ffn_config={"ffn_hidden_size": 64, "moe_num_experts": 4}), "pre", False),
    "qwen2_moe": ("AutoModelForCausalLM", dict(GQA, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=64,
                                               shared_expert_intermediate_size=64), "pre", False),
    "olmoe": ("AutoModelForCausalLM", dict(GQA, num_experts=4, num_experts_per_tok=2), "pre", True),
    "persimmon": ("AutoModelForCausalLM", dict(SMALL), "pre", True),
    "exaone4": ("AutoModelForCausalLM", GQA, "reordered", True),
    "gpt_bigcode": ("AutoModelForCausalLM", GPTJ_LIKE, "pre", False),
    "mpt": ("AutoModelForCausalLM", dict(d_model=64, n_layers=2, n_heads=4, vocab_size=128, max_seq_len=128), "pre",
            False),
    "xglm": ("AutoModelForCausalLM", dict(d_model=64, num_layers=2, attention_heads=4, ffn_dim=128, vocab_size=128),
             "pre", False),
    "megatron-bert": ("AutoModelForMaskedLM", dict(SMALL), "pre", False),
    "modernbert": ("AutoModelForMaskedLM", dict(SMALL, global_attn_every_n_layers=1, **NAMED_IDS), "pre", False),
    "phi": ("AutoModelForCausalLM", dict(SMALL), "parallel", False),
    "falcon": ("AutoModelForCausalLM", dict(SMALL, num_kv_heads=4, new_decoder_architecture=False,
                                            parallel_attn=True), "parallel", False),
    "gptj": ("AutoModelForCausalLM", dict(GPTJ_LIKE, rotary_dim=8), "parallel", False),
    "codegen": ("AutoModelForCausalLM", dict(GPTJ_LIKE, rotary_dim=8), "parallel", False),
    "cohere": ("AutoModelForCausalLM", dict(GQA, use_qk_norm=False), "parallel", False),
    # TrOCR's text decoder: post-LN, its attention written by hand on (batch * heads, T, T) scores
    "trocr": ("AutoModelForCausalLM", dict(d_model=64, decoder_layers=2, decoder_attention_heads=4, decoder_ffn_dim=128,
                                           vocab_size=128, max_position_embeddings=128), "post", False),
    "distilbert": ("AutoModelForMaskedLM", dict(dim=64, n_layers=2, n_heads=4, hidden_dim=128, vocab_size=128,
                                                max_position_embeddings=128), "post", False),
    "electra": ("AutoModelForMaskedLM", dict(SMALL, embedding_size=64), "post", False),
    "xlm-roberta": ("AutoModelForMaskedLM", dict(SMALL, max_position_embeddings=130), "post", False),
    "deberta-v2": ("AutoModelForMaskedLM", dict(SMALL), "post", False),
    # BigBird: its attention module holds `self` (q, k, v) and `output` (the projection and the LayerNorm)
    "big_bird": ("AutoModelForMaskedLM", dict(SMALL, attention_type="original_full"), "post", False),
    # Gemma 4: the sandwich with QK-norm and a norm on the values (V-norm, role v)
    "gemma4_text": ("AutoModelForCausalLM", dict(GQA, head_dim=16, pad_token_id=0), "peri", True),
    # GLM-4: a norm after each branch and one before: the sandwich
    "glm4": ("AutoModelForCausalLM", dict(GQA, head_dim=16, pad_token_id=0), "peri", False),
    # DiffLlama: a group norm on each head's output, scaled before o_proj reads it: no QK-norm
    "diffllama": ("AutoModelForCausalLM", GQA, "pre", False),
    # DeepSeek V3.2's sparse attention: its indexer's key norm picks the keys to keep, no QK-norm of the attention
    "deepseek_v32": ("AutoModelForCausalLM", dict(MORE["deepseek_v3"][1], index_n_heads=2, index_head_dim=16,
                                                  index_topk=8), "pre", False),
    # hybrids: the first layer is a Mamba (Jamba, Falcon-H1's beside attention) or a linear attention (Qwen3-Next)
    "jamba": ("AutoModelForCausalLM", dict(GQA, attn_layer_period=2, attn_layer_offset=1, expert_layer_period=2,
                                           expert_layer_offset=1, num_experts=4), "pre", False),
    "qwen3_next": ("AutoModelForCausalLM", dict(GQA, head_dim=16, layer_types=["linear_attention", "full_attention"],
                                                num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                                                shared_expert_intermediate_size=32), "pre", True),
    "falcon_h1": ("AutoModelForCausalLM", dict(GQA, head_dim=16), "pre", False),
}  # fmt: skip


# read by their own tests, outside the table of placements (docs/your-model.md): DeepSeek V4's hyper-connections carry
# the residual as 4 streams, and mix them by a 4-D softmax before the attention's
OTHER = {"deepseek_v4": ("AutoModelForCausalLM", dict(GQA, head_dim=16, pad_token_id=0), "unknown", True)}


def build(name: str, seed: int = 0, **overrides):
    """A tiny random model of `name` (SPECS, MORE, WIDE or OTHER), in train mode as from_config leaves it."""
    import torch
    import transformers
    from transformers.utils import logging

    logging.set_verbosity_error()
    auto, kw, _, _ = {**SPECS, **MORE, **WIDE, **OTHER}[name]
    kw = {**kw, **overrides}
    impl = kw.pop("attn_implementation", None)
    torch.manual_seed(seed)
    config = transformers.AutoConfig.for_model(name, **kw)
    extra = {"attn_implementation": impl} if impl else {}
    return getattr(transformers, auto).from_config(config, **extra)
