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
    "bart": ("AutoModelForSeq2SeqLM", dict(d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                                          decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128,
                                          vocab_size=128, max_position_embeddings=128), "post", False),
}  # fmt: skip


def build(name: str, seed: int = 0, **overrides):
    """A tiny random model of `name` (SPECS or MORE), in train mode as from_config leaves it."""
    import torch
    import transformers
    from transformers.utils import logging

    logging.set_verbosity_error()
    auto, kw, _, _ = {**SPECS, **MORE}[name]
    kw = {**kw, **overrides}
    impl = kw.pop("attn_implementation", None)
    torch.manual_seed(seed)
    config = transformers.AutoConfig.for_model(name, **kw)
    extra = {"attn_implementation": impl} if impl else {}
    return getattr(transformers, auto).from_config(config, **extra)
