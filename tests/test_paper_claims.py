"""The paper's claims (Xiong et al. 2020), measured on small configs and several seeds.

At initialisation (no training): Post-LN's last-layer gradients are larger than Pre-LN's by a ratio
that grows with depth (the paper: about sqrt(L)); Post-LN's ffn.w2 gradient rises toward the output;
Pre-LN's residual stream grows with depth while Post-LN's stays at 1. In training: Post-LN at a high
learning rate without warm-up does not learn, while Pre-LN and warmed-up Post-LN do, on the same
seed and batches.
"""

import numpy as np
import pytest

from ln_viz.config import RunConfig
from ln_viz.init_grads import init_grads
from ln_viz.init_lab import init_lab
from ln_viz.train import run

SEEDS = range(3)
BASE = RunConfig(d_model=64, heads=4, batch_size=32, seq_len=64)


@pytest.fixture(scope="module")
def w2_vs_depth():
    df = init_lab(BASE, ("post", "pre"), seeds=len(SEEDS), depths=[3, 6, 12, 24]).vs_depth
    return df.groupby(["norm_position", "depth"]).grad_norm.mean().unstack(0)


@pytest.mark.slow  # the module's depth sweep (depths 3-24, 3 seeds): the longest measurement at init
def test_last_layer_gradient_is_larger_for_post_ln_and_the_gap_grows_with_depth(
    w2_vs_depth,
):
    ratio = w2_vs_depth["post"] / w2_vs_depth["pre"]
    assert (ratio > 1).all(), ratio
    assert ratio.is_monotonic_increasing, ratio
    # sqrt(L) predicts a factor sqrt(24/3) = 2.83 between depth 3 and 24; we see 3-4x
    assert 2.0 < ratio[24] / ratio[3] < 5.0, ratio


@pytest.mark.slow  # the same depth sweep
def test_pre_ln_last_layer_gradient_shrinks_like_one_over_sqrt_depth(w2_vs_depth):
    pre = w2_vs_depth["pre"]
    scaled = pre * np.sqrt(pre.index.to_numpy())  # flat if grad ~ 1/sqrt(L)
    assert scaled.max() / scaled.min() < 1.35, scaled


@pytest.mark.parametrize("depth", [12, pytest.param(18, marks=pytest.mark.slow)])  # depth 18: 3 s of the fast lane
def test_post_ln_w2_gradient_rises_toward_the_output(depth):
    grads, _ = init_grads(BASE.replace(norm_position="post", depth=depth), SEEDS)
    w2 = grads[grads.param == "ffn.w2"].groupby("layer").grad_norm.mean()
    first, last = w2.iloc[: depth // 3].mean(), w2.iloc[-2:].mean()
    assert last > 1.3 * first, w2.round(3).tolist()
    assert w2.idxmax() > depth - 3  # the largest gradient sits next to the output


@pytest.mark.slow  # gradients at init at depth 12, both positions, 3 seeds
def test_pre_ln_residual_stream_grows_with_depth_and_post_ln_stays_at_one():
    _, pre = init_grads(BASE.replace(norm_position="pre", depth=12), SEEDS)
    _, post = init_grads(BASE.replace(norm_position="post", depth=12), SEEDS)
    pre_ms = pre.groupby("layer").mean_sq.mean()
    post_std = post.groupby("layer")["std"].mean()
    assert pre_ms.is_monotonic_increasing, pre_ms.round(2).tolist()
    layers = pre_ms.index.to_numpy()[1:]
    # the paper's Lemma 1 bounds, E||x_l||^2 / d in [1 + l/2, 1 + 3l/2], relative to the measured input
    # (E||x_0||^2 / d = 0.98 on these batches); block 1 sits right on the lower bound (1.50), hence 3 %
    growth = pre_ms.iloc[1:].to_numpy() / pre_ms.iloc[0]
    assert (growth >= 0.97 * (1 + layers / 2)).all(), growth.round(2)
    assert (growth <= 1 + 3 * layers / 2).all(), growth.round(2)
    assert np.allclose(post_std.iloc[1:], 1.0, atol=0.02)


@pytest.mark.slow
def test_post_ln_without_warmup_fails_where_pre_ln_and_warmup_learn(seed=0):
    """6 layers, d 64, Adam 3e-3, batch 16, seq 32, 300 steps (the stability map's warm-up preset's cell),
    the same seed and batches for all three; measured 2026-12-01 (unigram 2.958): Post-LN stalls at
    2.971 / 2.958 (seeds 0 / 1), Pre-LN ends at 1.985 / 1.946, Post-LN with warm-up 100 at 2.163 / 2.096.
    Seed 0 only: Post-LN against Pre-LN over seeds 0-2 is test_compare_cli's claim (gap 1.01 nats, 95 % CI
    0.98-1.04), and seed 1 here cost the suite 94 s."""
    cfg = RunConfig(
        depth=6,
        d_model=64,
        heads=4,
        lr=3e-3,
        batch_size=16,
        seq_len=32,
        steps=300,
        seed=seed,
        probe_every=0,
        eval_every=0,
    )
    post = run(cfg.replace(norm_position="post", warmup_steps=0))
    pre = run(cfg.replace(norm_position="pre", warmup_steps=0))
    warm = run(cfg.replace(norm_position="post", warmup_steps=100))
    unigram = post.info.unigram_entropy
    assert post.status in ("stalled", "diverged")
    assert post.final_loss(20) > unigram - 0.15  # stuck at letter frequencies
    assert pre.status == "completed" and pre.final_loss(20) < unigram - 0.7
    assert warm.status == "completed" and warm.final_loss(20) < unigram - 0.5
