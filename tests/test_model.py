import math
import re

import pytest
import torch

from ln_viz.config import NORM_POSITIONS, RunConfig
from ln_viz.model import SCORE_CHUNK, SCORE_ELEMENTS, build_model, head_logit_max
from ln_viz.probes import watch
from ln_viz.schema import HIST_EDGES, PARAM_NAMES


def _weights(model):
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def test_same_seed_same_initial_weights_for_every_norm_position():
    ref = _weights(build_model(RunConfig(norm_position="post", depth=3), 50))
    for pos in NORM_POSITIONS:
        w = _weights(build_model(RunConfig(norm_position=pos, depth=3), 50))
        shared = set(ref) & set(w)
        assert {"tok_emb.weight", "blocks.2.ffn.w2.weight", "head.weight"} <= shared
        for name in shared:
            if pos == "deepnorm" and any(
                name.endswith(p + ".weight") for p in ("attn.v", "attn.o", "ffn.w1", "ffn.w2")
            ):
                assert torch.allclose(w[name], ref[name] * (8 * 3) ** -0.25)  # DeepNet's beta
            else:
                assert torch.equal(w[name], ref[name]), (pos, name)
    other = _weights(build_model(RunConfig(norm_position="post", depth=3, seed=1), 50))
    assert not torch.equal(other["blocks.0.attn.q.weight"], ref["blocks.0.attn.q.weight"])


def test_xavier_uniform_bounds_and_unit_variance_input():
    model = build_model(RunConfig(d_model=64), 50)
    w1 = model.blocks[0].ffn.w1.weight  # (256, 64)
    bound = math.sqrt(6 / (64 + 256))
    assert w1.abs().max() <= bound and w1.abs().max() > 0.95 * bound
    emb = float((model.tok_emb.weight.var() + model.pos_emb.weight.var()).detach())
    assert emb == pytest.approx(1.0, rel=0.1)  # E||x_0||^2 = d, the paper's assumption


@pytest.mark.parametrize("pos", NORM_POSITIONS)
def test_every_placement_runs_and_has_its_norms(pos):
    cfg = RunConfig(norm_position=pos, depth=2, d_model=32, heads=2, seq_len=16)
    model = build_model(cfg, 30)
    logits = model(torch.randint(0, 30, (3, 16)))
    assert logits.shape == (3, 16, 30)
    n_norms = sum(isinstance(m, (torch.nn.LayerNorm, torch.nn.RMSNorm)) for m in model.modules())
    expected = {"post": 4, "pre": 5, "peri": 9, "deepnorm": 4, "none": 0, "mix": 5, "reordered": 5}[pos]
    assert n_norms == expected
    assert (model.ln_f is not None) == (pos in ("pre", "peri", "mix", "reordered"))
    assert {n for n, _ in model.blocks[-1].named_children() if n.startswith("ln")} == set(model.norm_names())


def test_the_docstring_table_has_a_line_per_placement():
    """The model's docstring is the forward's truth: every placement has its line."""
    import ln_viz.model

    for pos in NORM_POSITIONS:
        assert re.search(rf"^    {pos} +\S", ln_viz.model.__doc__, re.M), pos
    assert "reordered x = x + LN(Attn(x));" in ln_viz.model.__doc__


def test_reordered_normalises_only_the_branch_output():
    """OLMo 2's x = x + LN(F(x)): the sublayers read the stream unnormalised, each output is normalised."""
    model = build_model(RunConfig(norm_position="reordered", depth=1, d_model=32, heads=2, seq_len=8), 30).eval()
    block = model.blocks[0]
    x = 3.0 * torch.randn(2, 8, 32)
    with torch.no_grad():
        h = x + block.ln1_out(block.attn(x))
        want = h + block.ln2_out(block.ffn(h))
        assert torch.equal(block(x), want)


def test_rmsnorm_replaces_layernorm():
    model = build_model(RunConfig(norm_type="rmsnorm", depth=2), 30)
    assert any(isinstance(m, torch.nn.RMSNorm) for m in model.modules())
    assert not any(isinstance(m, torch.nn.LayerNorm) for m in model.modules())


def test_causal_the_past_does_not_see_the_future():
    model = build_model(RunConfig(depth=2, d_model=32, heads=2, seq_len=16), 30)
    x = torch.randint(0, 30, (1, 16))
    y = x.clone()
    y[0, 10:] = (y[0, 10:] + 1) % 30
    assert torch.allclose(model(x)[0, :10], model(y)[0, :10])


def test_probes_summarise_and_always_leave():
    cfg = RunConfig(norm_position="peri", depth=3, d_model=32, heads=4, seq_len=16)
    model = build_model(cfg, 30)
    x = torch.randint(0, 30, (4, 16))
    with watch(model) as act:
        model(x)
    hooks = sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())
    assert hooks == 0
    assert act.resid_hist.shape == (3, len(HIST_EDGES) - 1)
    assert act.norm_in_hist.shape == (3, 4, len(HIST_EDGES) - 1)
    inside = act.resid_hist.sum(axis=1) + act.resid_stats[:, 4] + act.resid_stats[:, 5]
    assert inside == pytest.approx([1.0] * 3, abs=1e-4)  # every element counted once
    assert ((0 < act.attn_entropy) & (act.attn_entropy < math.log(16))).all()
    with pytest.raises(RuntimeError), watch(model):
        raise RuntimeError("boom")
    assert sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules()) == 0
    assert len(PARAM_NAMES) == 6


@pytest.mark.parametrize("pos", NORM_POSITIONS)
def test_the_preview_counts_the_parameters_the_model_has(pos):
    """RunInfo.preview (no torch) and the model agree on the norms each placement has, the final one included."""
    from ln_viz.snapshot import RunInfo

    cfg = RunConfig(norm_position=pos, depth=2, d_model=32, heads=2, seq_len=16, qk_norm="rmsnorm")
    info = RunInfo.preview(cfg)
    model = build_model(cfg, info.vocab_size)
    assert info.n_params == sum(p.numel() for p in model.parameters())
    assert info.norm_names == model.norm_names()


@pytest.mark.parametrize(
    "batch, T, chunk",
    [(1, 12, None), (SCORE_CHUNK, 12, None), (2 * SCORE_CHUNK + 3, 12, None), (2 * SCORE_CHUNK + 3, 12, SCORE_CHUNK),
     (40, 64, None), (SCORE_CHUNK + 1, 260, None)],
)  # fmt: skip
def test_each_head_s_largest_logit_is_the_whole_batch_s_whatever_the_chunking(batch, T, chunk):
    """head_logit_max holds the scores of as many sequences as fit SCORE_ELEMENTS at a time, at least SCORE_CHUNK
    (or `chunk`): the per-head largest |q.k| / sqrt(hs) is still the whole batch's (against one float64 product, the
    masked keys left out), its callback sees the first chunk once, and a chunk as large as the batch gives the same
    numbers (40 x 64: chunks of 32 and 8, as ln-viz's 6 x 64 model's batch of 32 is one; T 260: chunks of 8, whose
    scores are over the 8 MB a thread keeps, allocated for the call)."""
    gen = torch.Generator().manual_seed(batch)
    q, k = (torch.randn(batch, 4, T, 8, generator=gen) for _ in range(2))
    k[-1, 2, 5] *= 40  # one large logit in the last sequence (a key seen by queries 5.. only)
    calls = []
    got = head_logit_max(q, k, lambda scores, largest: calls.append((scores.shape, largest.clone())), chunk=chunk)
    s = (q.double() @ k.double().transpose(-1, -2)).masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), 0.0)
    expected = s.abs().amax(dim=(0, 2, 3)) / math.sqrt(8)
    torch.testing.assert_close(got.double(), expected, rtol=1e-6, atol=0)
    first = min(batch, chunk or max(SCORE_CHUNK, SCORE_ELEMENTS // (4 * T * T)))
    assert first == {(12, None): batch, (12, SCORE_CHUNK): SCORE_CHUNK, (64, None): 32, (260, None): 8}[T, chunk]
    assert len(calls) == 1 and calls[0][0] == (first, 4, T, T)
    torch.testing.assert_close(calls[0][1].double(), s[:first].abs().amax(dim=(2, 3)), rtol=1e-6, atol=0)
    assert torch.equal(head_logit_max(q, k, chunk=batch), got)
