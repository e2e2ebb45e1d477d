"""Issue 19's training set-up and norm zoo, each against its paper's formula or torch's own code:
decoupled weight decay (torch.optim.AdamW), gradient clipping (clip_grad_norm_), z-loss (PaLM), DyT
(Zhu et al. 2025), Mix-LN (Li et al. 2025), LayerNorm Scaling (Sun et al. 2025) and QK-norm
(Dehghani et al. 2023)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from ln_viz.config import ADAM_BETAS, ADAM_EPS, OMIT_AT_DEFAULT, ConfigError, RunConfig
from ln_viz.model import DyT, block_position, build_model
from ln_viz.train import Trainer, clip_gradients, make_optimizer, objective

SMALL = RunConfig(depth=3, d_model=16, heads=2, seq_len=8, batch_size=4, steps=20, probe_every=0, eval_every=0)
VOCAB = 20


def batches(n: int, seed: int = 1) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    return [
        (torch.randint(0, VOCAB, (4, 8), generator=g), torch.randint(0, VOCAB, (4, 8), generator=g)) for _ in range(n)
    ]


def train_steps(model, opt, data) -> None:
    for x, y in data:
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x).flatten(0, 1), y.flatten()).backward()
        opt.step()


@pytest.mark.parametrize("wd", [0.1, 1.0])
def test_weight_decay_trains_step_for_step_like_torch_adamw(wd):
    cfg = SMALL.replace(lr=1e-2, weight_decay=wd)
    ours, theirs = build_model(cfg, VOCAB), build_model(cfg, VOCAB)
    data = batches(10)
    train_steps(ours, make_optimizer(cfg, ours), data)
    ref = torch.optim.AdamW(
        theirs.parameters(), lr=cfg.lr, betas=ADAM_BETAS, eps=ADAM_EPS, weight_decay=wd, foreach=True
    )
    train_steps(theirs, ref, data)
    for (name, a), b in zip(ours.named_parameters(), theirs.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7, msg=name)
    plain = build_model(cfg, VOCAB)
    train_steps(plain, make_optimizer(cfg.replace(weight_decay=0.0), plain), data)
    assert not torch.allclose(plain.head.weight, ours.head.weight, atol=1e-4)  # the decay did something


def test_grad_clip_scales_like_clip_grad_norm():
    model = build_model(SMALL, VOCAB)
    x, y = batches(1)[0]
    F.cross_entropy(model(x).flatten(0, 1), y.flatten()).backward()
    params = list(model.parameters())
    ref = [p.grad.clone() for p in params]
    total = math.sqrt(sum(float(g.double().square().sum()) for g in ref))
    max_norm = total / 3
    clip_gradients(params, total, max_norm)
    holders = [torch.nn.Parameter(torch.zeros_like(g)) for g in ref]
    for h, g in zip(holders, ref, strict=True):
        h.grad = g.clone()
    torch.nn.utils.clip_grad_norm_(holders, max_norm)
    for p, h in zip(params, holders, strict=True):
        torch.testing.assert_close(p.grad, h.grad, rtol=1e-6, atol=0)
    after = math.sqrt(sum(float(p.grad.double().square().sum()) for p in params))
    assert after == pytest.approx(max_norm, rel=1e-5)
    before = [p.grad.clone() for p in params]
    clip_gradients(params, after, 10 * after)  # under the limit: untouched
    clip_gradients(params, after, 0.0)  # 0 = off
    assert all(torch.equal(p.grad, b) for p, b in zip(params, before, strict=True))


def test_z_loss_adds_coef_times_mean_log_z_squared_and_the_reported_loss_is_the_ce():
    logits = torch.randn(4, 8, VOCAB) * 3
    ce = F.cross_entropy(logits.flatten(0, 1), torch.zeros(32, dtype=torch.long))
    log_z = torch.log(torch.exp(logits.double()).sum(-1))
    want = float(ce) + 1e-2 * float(log_z.square().mean())
    assert float(objective(ce, logits, 1e-2)) == pytest.approx(want, rel=1e-6)
    assert objective(ce, logits, 0.0) is ce
    cfg = SMALL.replace(steps=3, z_loss=0.5)
    a, b = Trainer(cfg), Trainer(cfg.replace(z_loss=0.0))
    sa, sb = list(a), list(b)
    assert sa[0].loss == sb[0].loss  # step 1: same weights, same batch, the CE alone is reported
    assert sa[2].loss != sb[2].loss  # but the gradient differed


def test_dyt_is_gamma_tanh_alpha_x_plus_beta():
    norm = DyT(5, alpha=0.7)
    with torch.no_grad():
        norm.weight.copy_(torch.arange(5.0))
        norm.bias.copy_(-torch.arange(5.0) / 2)
    x = torch.randn(3, 5) * 4
    want = torch.arange(5.0) * torch.tanh(0.7 * x) - torch.arange(5.0) / 2
    torch.testing.assert_close(norm(x), want)
    model = build_model(SMALL.replace(norm_type="dyt", dyt_alpha=0.25), VOCAB)
    assert model.blocks[2].ln2.alpha.item() == 0.25 and isinstance(model.ln_f, DyT)
    assert {n for n, _ in model.blocks[0].ln1.named_parameters()} == {"alpha", "weight", "bias"}


def _block_check(block, x, want) -> None:
    with torch.no_grad():
        torch.testing.assert_close(block(x), want(block, x), rtol=1e-5, atol=1e-6)


def pre(block, x, scale=1.0):
    x = x + block.attn(block.ln1(x) * scale)
    return x + block.ffn(block.ln2(x) * scale)


def post(block, x):
    x = block.ln1(x + block.attn(x))
    return block.ln2(x + block.ffn(x))


@pytest.mark.parametrize("depth,n_post", [(1, 1), (4, 1), (6, 2), (8, 2), (9, 3)])
def test_mix_ln_puts_post_ln_in_the_first_ceil_quarter(depth, n_post):
    cfg = SMALL.replace(norm_position="mix", depth=depth)
    positions = [block_position(cfg, layer) for layer in range(1, depth + 1)]
    assert positions == ["post"] * n_post + ["pre"] * (depth - n_post)
    model = build_model(cfg, VOCAB)
    assert model.ln_f is not None  # the Pre-LN blocks need the final norm
    x = torch.randn(2, 8, 16)
    for block, pos in zip(model.blocks, positions, strict=True):
        _block_check(block, x, post if pos == "post" else pre)


@pytest.mark.parametrize("position", ["pre", "peri", "mix"])
def test_layernorm_scaling_multiplies_each_blocks_input_norms_by_one_over_sqrt_l(position):
    cfg = SMALL.replace(norm_position=position, depth=4, ln_scaling=True)
    model = build_model(cfg, VOCAB)
    x = torch.randn(2, 8, 16)
    for layer, block in enumerate(model.blocks, start=1):
        s = 1 / math.sqrt(layer)
        if block.norm_position == "post":  # Mix-LN's Post-LN block: untouched
            _block_check(block, x, post)
        elif position == "peri":

            def peri(b, x, s=s):
                x = x + b.ln1_out(b.attn(b.ln1(x) * s))
                return x + b.ln2_out(b.ffn(b.ln2(x) * s))

            _block_check(block, x, peri)
        else:
            _block_check(block, x, lambda b, x, s=s: pre(b, x, s))
    if position == "pre":
        _block_check(build_model(cfg.replace(ln_scaling=False), VOCAB).blocks[3], x, pre)


@pytest.mark.parametrize("position", ["post", "deepnorm", "none"])
def test_layernorm_scaling_is_refused_where_no_norm_precedes_the_sublayers(position):
    with pytest.raises(ConfigError) as e:
        SMALL.replace(norm_position=position, ln_scaling=True).validate()
    assert e.value.field == "ln_scaling" and position in e.value.message("en")


@pytest.mark.parametrize("qk", ["layernorm", "rmsnorm"])
def test_qk_norm_normalises_each_heads_q_and_k_before_the_dot_product(qk):
    model = build_model(SMALL.replace(qk_norm=qk), VOCAB)
    attn = model.blocks[0].attn
    with torch.no_grad():  # a gain that is not 1, so it must be applied
        attn.q_norm.weight.copy_(torch.linspace(0.5, 2.0, 8))
        attn.k_norm.weight.copy_(torch.linspace(2.0, 0.5, 8))
    x = torch.randn(2, 8, 16)
    B, T, H, hs = 2, 8, 2, 8

    def norm(t, w):
        if qk == "rmsnorm":
            return t / torch.sqrt(t.square().mean(-1, keepdim=True) + 1e-5) * w
        c = t - t.mean(-1, keepdim=True)
        return c / torch.sqrt(c.square().mean(-1, keepdim=True) + 1e-5) * w + attn.q_norm.bias * 0

    heads = lambda t: t.view(B, T, H, hs)  # noqa: E731
    q = norm(heads(attn.q(x)), attn.q_norm.weight).transpose(1, 2)
    k = norm(heads(attn.k(x)), attn.k_norm.weight).transpose(1, 2)
    v = heads(attn.v(x)).transpose(1, 2)
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(hs)
    scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), -math.inf)
    want = attn.o((scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, 16))
    with torch.no_grad():
        torch.testing.assert_close(attn(x), want, rtol=1e-5, atol=1e-6)
    assert not hasattr(build_model(SMALL, VOCAB).blocks[0].attn, "q_norm")


def test_new_fields_stay_out_of_old_configs_dicts_and_old_dicts_load():
    old = RunConfig().to_dict()
    assert not set(OMIT_AT_DEFAULT) & set(old)  # fingerprints of earlier configs unchanged
    assert RunConfig.from_dict(old) == RunConfig()
    cfg = RunConfig(qk_norm="layernorm", weight_decay=0.1, ln_scaling=True)
    assert RunConfig.from_dict(cfg.to_dict()) == cfg
    assert {"qk_norm", "weight_decay", "ln_scaling"} <= set(cfg.to_dict())


def test_every_new_option_trains():
    cfg = SMALL.replace(
        steps=5, norm_position="mix", norm_type="dyt", qk_norm="rmsnorm", weight_decay=0.1, grad_clip=0.5,
        z_loss=1e-4, ln_scaling=True, probe_every=2,
    )  # fmt: skip
    snaps = list(Trainer(cfg))
    assert snaps[-1].status in ("completed", "stalled") and all(math.isfinite(s.loss) for s in snaps)


def test_a_run_file_keeps_the_new_fields_with_their_kinds(tmp_path):
    from ln_viz.runfile import read_run_file, write_run_file
    from ln_viz.train import run

    cfg = SMALL.replace(steps=3, norm_type="dyt", dyt_alpha=0.5, weight_decay=2.0, z_loss=1e-4, qk_norm="layernorm")
    loaded = read_run_file(write_run_file(run(cfg), tmp_path / "r.json")).data.info.config
    assert loaded == cfg and isinstance(loaded.weight_decay, float) and loaded.dyt_alpha == 0.5


@pytest.mark.parametrize("qk", ["none", "layernorm"])
def test_the_max_attention_logit_probe_is_the_largest_causal_score_the_softmax_sees(qk):
    from ln_viz.probes import ENTROPY_SEQUENCES, watch

    model = build_model(SMALL.replace(qk_norm=qk, batch_size=10), VOCAB)
    x = torch.randint(0, VOCAB, (10, 8), generator=torch.Generator().manual_seed(3))
    seen = {}
    attn = model.blocks[1].attn
    hook = attn.register_forward_hook(lambda m, a, o: seen.setdefault("x", a[0].detach()))
    with torch.no_grad(), watch(model) as act:
        logits = model(x)
    hook.remove()
    h = seen["x"][:ENTROPY_SEQUENCES]
    q, k = attn.q(h).view(8, 8, 2, 8), attn.k(h).view(8, 8, 2, 8)
    if qk != "none":
        q, k = attn.q_norm(q), attn.k_norm(k)
    with torch.no_grad():
        scores = (q.transpose(1, 2) @ k.transpose(1, 2).transpose(-1, -2)) / math.sqrt(8)
        causal = scores.masked_select(~torch.ones(8, 8, dtype=torch.bool).triu(1))
    assert act.arrays["attn_logit_max"][1] == pytest.approx(float(causal.abs().max()), rel=1e-5)
    if qk != "none":  # a LayerNorm with gain 1 bounds |q.k| / sqrt(hs) by sqrt(hs)
        assert act.arrays["attn_logit_max"].max() <= math.sqrt(8) + 1e-4
    log_z = torch.logsumexp(logits.double(), dim=-1)
    mean, max_abs = act.arrays["logz_stats"][0], act.arrays["logz_stats"][3]
    assert mean == pytest.approx(float(log_z.mean()), rel=1e-5)
    assert max_abs == pytest.approx(float(log_z.abs().max()), rel=1e-5)


def test_train_json_reports_the_attention_logits_and_log_z_of_each_probe_step(capsys):
    import json

    from ln_viz.cli import main

    assert main(["train", "--steps", "12", "--depth", "2", "--probe-every", "5", "--json", "--threads", "1"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["probe_steps"] == [1, 5, 10, 12]
    assert [len(v) for v in report["max_attn_logit"]] == [2] * 4 and len(report["log_z"]) == 4
    assert all(v > 0 for row in report["max_attn_logit"] for v in row)


def test_a_run_file_from_before_the_new_probes_still_loads_with_them_nan():
    import numpy as np

    from ln_viz.runfile import read_run_file
    from ln_viz.store.transfer import DEMO_DIR

    data = read_run_file(DEMO_DIR / "pre-ln-no-warmup.json.gz").data
    assert np.isnan(data.probe("attn_logit_max")).all() and np.isnan(data.probe("logz_stats")).all()
    assert np.isfinite(data.probe("attn_entropy")).all()
