"""Xiong et al.'s Figure 3 on Hugging Face's own blocks, measured in this process (torch, transformers).

For one architecture (a tiny random config built offline: `AutoConfig.for_model`, `from_config`, no
download), one init (HF's own `_init_weights`, or Xavier-uniform on every weight matrix but the embeddings,
as the paper) and each seed: build the model, run one forward and backward pass of its own loss on random
tokens (causal LM: next token; BERT: masked LM, 15 % of positions masked), in eval mode (no dropout), and
read the gradient norm of the matrices asked for (the two that write into the residual stream) in every block.
`ln_viz.describe` finds the blocks, the matrices' roles (ffn.out, attn.o) and the placement, by the data.

The app runs this in the Init lab's worker processes (ln_viz.hf_init_lab); the server never imports it.
"""

from __future__ import annotations

import os
from typing import Any

import pandas as pd
import torch
from torch import nn

from ln_viz.byom.card import describe

GRAD_COLUMNS = ["seed", "layer", "matrix", "role", "grad_norm"]
Setup = Any  # ln_viz.hf_init_lab.Setup, passed in (that module summarises; importing it here would be a circle)


def _config_kwargs(arch: str, s: Setup) -> dict[str, Any]:
    """The tiny config of `arch`: depth, width, heads, a small vocabulary whose special ids lie inside it,
    dropout off (eval mode switches it off too)."""
    if arch == "gpt2":
        return dict(vocab_size=s.vocab, n_embd=s.d_model, n_layer=s.depth, n_head=s.heads, n_positions=s.seq_len,
                    n_inner=4 * s.d_model, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=1,
                    eos_token_id=2)  # fmt: skip
    common = dict(vocab_size=s.vocab, hidden_size=s.d_model, num_hidden_layers=s.depth, num_attention_heads=s.heads,
                  intermediate_size=4 * s.d_model, max_position_embeddings=s.seq_len, pad_token_id=0)  # fmt: skip
    if arch == "bert":
        return dict(common, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    common.update(num_key_value_heads=s.heads, bos_token_id=1, eos_token_id=2)
    if arch == "gemma3_text":
        common.update(head_dim=s.d_model // s.heads, sliding_window=s.seq_len)
    return common


def build(arch: str, loss: str, s: Setup, seed: int) -> nn.Module:
    """The model of `arch` (AutoConfig's model type) with the head of its `loss` ("mlm" | "clm") at HF's own
    init for `seed` (the global torch seed decides HF's init)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # built from a config: nothing to download, and never try
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForMaskedLM
    from transformers.utils import logging as hf_logging

    was = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # its notes about a tiny config are not the reader's business
    try:
        config = AutoConfig.for_model(arch, **_config_kwargs(arch, s))
        auto = AutoModelForMaskedLM if loss == "mlm" else AutoModelForCausalLM
        torch.manual_seed(seed)
        return auto.from_config(config).eval()
    finally:
        hf_logging.set_verbosity(was)


def xavier_(model: nn.Module, seed: int) -> None:
    """Xavier-uniform on every weight matrix but the token and position embeddings (a tied output head
    is an embedding's matrix, so it stays too), biases as HF left them (zero): the paper's init."""
    gen = torch.Generator().manual_seed(seed)
    embeddings = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    with torch.no_grad():
        for p in model.parameters():
            if p.ndim == 2 and id(p) not in embeddings:
                nn.init.xavier_uniform_(p, generator=gen)


def loss_on_random_tokens(model: nn.Module, loss: str, s: Setup, seed: int) -> torch.Tensor:
    """The model's own loss on a batch of random tokens: next-token cross-entropy, or BERT's masked LM
    (s.mask_rate of the positions replaced by the mask id, only they predicted)."""
    gen = torch.Generator().manual_seed(10_000 + seed)
    ids = torch.randint(s.FIRST_TOKEN, s.vocab, (s.batch, s.seq_len), generator=gen)
    if loss == "clm":
        return model(input_ids=ids, labels=ids).loss  # HF shifts the labels itself
    masked = torch.rand(ids.shape, generator=gen) < s.mask_rate
    masked[:, 0] |= ~masked.any(dim=1)  # every row predicts at least one token
    labels = torch.where(masked, ids, torch.full_like(ids, -100))
    inputs = torch.where(masked, torch.full_like(ids, s.MASK_ID), ids)
    return model(input_ids=inputs, labels=labels).loss


def measure(arch: str, loss: str, init: str, s: Setup, roles: tuple[str, ...]) -> tuple[str, pd.DataFrame]:
    """(the placement `describe` found, gradient norms of the `roles` matrices (ffn.out, attn.o): seed, layer
    (1 = input side), matrix, role, grad_norm) for `arch` with its `loss` at `init` ("hf" | "xavier") over
    s.seeds seeds."""
    torch.set_grad_enabled(True)
    rows, card = [], None
    for seed in range(s.seeds):
        model = build(arch, loss, s, seed)
        if init == "xavier":
            xavier_(model, seed)
        if card is None:  # the same structure for every seed; its own generator, so no number changes
            card = describe(model)
        loss_on_random_tokens(model, loss, s, seed).backward()
        blocks = model.get_submodule(card.blocks)
        for layer, block in enumerate(blocks, start=1):
            for m in (m for m in card.matrices if m.role in roles):
                grad = block.get_parameter(m.name).grad
                norm = float(grad.norm()) if grad is not None else float("nan")
                rows.append((seed, layer, m.name.removesuffix(".weight"), m.role, norm))
    return card.placement if card else "unknown", pd.DataFrame(rows, columns=GRAD_COLUMNS)
