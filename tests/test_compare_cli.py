"""`python -m ln_viz compare` (issue 20): each seed is exactly its `train --threads 1` run; Post-LN vs Pre-LN
over 3 paired seeds shows the gap with an interval above 0, on the local pool and on Ray; the sentence
from fixed numbers, en and ko; bad keys and values refused in one sentence."""

from __future__ import annotations

import dataclasses
import json
import time

import pytest

from ln_viz.config import RunConfig
from ln_viz.stats import PAIRED_T, paired_t_interval
from ln_viz.sweep.compare import SeedComparison, Side, side_names, takeaway

from .test_cli import cli

TINY = ["--depth", "1", "--d-model", "16", "--heads", "2", "--batch-size", "4", "--seq-len", "16"]
# The issue's claim: 6 layers, lr 3e-3, no warm-up, at the presets' size (batch 16 x 32, 300 steps: what the
# Compare page's post-vs-pre scenario trains).
CLAIM = ["--depth", "6", "--lr", "3e-3", "--warmup", "0", "--batch-size", "16", "--seq-len", "32", "--steps", "300"]
CLAIM_SIDES = ["--a", "norm_position=post", "--b", "norm_position=pre", "--seeds", "3"]


def compare_json(*argv: str) -> dict:
    code, out, err = cli("compare", *argv, "--json", "--quiet")
    assert code == 0, err
    return json.loads(out)


@pytest.mark.slow  # 4 runs in worker processes, then the same 4 in this one
def test_each_seed_is_its_train_threads_1_run():
    flags = [*TINY, "--steps", "20", "--seed", "5"]
    report = compare_json(*flags, "--a", "norm_position=post,lr=1e-2", "--b", "norm_position=pre", "--seeds", "2")
    assert report["seeds"] == [5, 6]
    for side, extra in (("a", ["--norm-position", "post", "--lr", "1e-2"]), ("b", ["--norm-position", "pre"])):
        assert report[side]["config"]["seed"] == 5
        for seed, final, status in zip(report["seeds"], report[side]["final_losses"], report[side]["statuses"]):
            args = [*flags[:-2], *extra, "--seed", str(seed), "--threads", "1", "--json"]
            code, out, err = cli("train", *args)
            assert code == 0, err
            run = json.loads(out)
            assert final == run["final_loss"]  # exactly: the same arithmetic on one thread
            assert status == run["status"]
    a, b = report["a"]["final_losses"], report["b"]["final_losses"]
    assert report["gap"] == paired_t_interval(a, b).to_dict()


def _check_the_claim(report: dict) -> None:
    gap = report["gap"]
    assert report["seeds"] == [0, 1, 2]
    assert gap["n"] == 3 and gap["method"] == PAIRED_T
    assert gap["mean"] >= 0.3, gap
    assert gap["ci95"][0] > 0, gap
    assert gap["mean"] == pytest.approx(report["a"]["mean"] - report["b"]["mean"])


# 6 runs of 300 steps at depth 6 on the local pool's 2 workers: measured 404 s on 2 cores shared with other jobs
# (load average about 10; 86 s of CPU), gap 1.01 nats, 95 % CI 0.98-1.04
@pytest.mark.slow
def test_post_ln_ends_above_pre_ln_with_an_interval_above_zero():
    start = time.monotonic()
    report = compare_json(*CLAIM, *CLAIM_SIDES, "--workers", "2")
    print(f"compare, 3 seeds per side, local: {time.monotonic() - start:.1f} s; gap {report['gap']}")
    _check_the_claim(report)
    assert report["executor"] == "local"


# On Ray the claim at 80 steps, not 300: the suite's time (113 s on CI for 300, 45 s for 120); measured locally
# (final loss: the mean of the last 10 steps) at 80 steps: Post-LN 2.96 / 2.95 / 2.96 (stalled since step 60),
# Pre-LN 2.43 / 2.33 / 2.35, gap 0.58 nats, 95 % CI 0.47-0.70; at 120: gap 0.69, 95 % CI 0.60-0.78
CLAIM_SHORT = [*CLAIM[:-1], "80"]


@pytest.mark.slow
def test_the_same_claim_on_ray(ray_head):
    from ln_viz.sweep.ray_exec import disconnect

    try:
        report = compare_json(*CLAIM_SHORT, *CLAIM_SIDES, "--executor", "ray", "--address", ray_head.address)
    finally:
        disconnect()
    _check_the_claim(report)
    assert report["executor"] == "ray"


def _comparison(a: list, b: list, post_pre: bool = True) -> SeedComparison:
    cfg_a = RunConfig(norm_position="post") if post_pre else RunConfig(warmup_steps=100)
    cfg_b = RunConfig(norm_position="pre")
    statuses = tuple("completed" if x is not None else "failed" for x in a)
    side_a = Side(cfg_a, tuple(a), statuses, (None,) * len(a))
    side_b = Side(cfg_b, tuple(b), ("completed",) * len(b), (None,) * len(b))
    seeds = tuple(range(len(a)))
    return SeedComparison(side_a, side_b, seeds, paired_t_interval(a, b), "local", 1.0, "done")


def test_the_sentence_from_fixed_numbers():
    # differences 0.79, 0.71, 0.87: mean 0.79, sd 0.08, half = 4.3027 * 0.08 / sqrt(3) = 0.1987
    result = _comparison([3.0, 2.9, 3.1], [2.21, 2.19, 2.23])
    assert takeaway(result, "en") == "Post-LN ends 0.79 nats above Pre-LN (95 % CI 0.59-0.99, 3 seeds)"
    ko = "Post-LN의 최종 손실이 Pre-LN보다 0.79 nats 높습니다 (95 % 신뢰구간 0.59-0.99, 시드 3개)"
    assert takeaway(result, "ko") == ko
    below = _comparison([2.21, 2.19, 2.23], [3.0, 2.9, 3.1])
    assert takeaway(below, "en") == "Post-LN ends 0.79 nats below Pre-LN (95 % CI 0.59-0.99, 3 seeds)"


def test_one_seed_says_it_has_no_interval_and_a_missing_seed_is_said():
    assert takeaway(_comparison([3.0], [2.2]), "en") == "Post-LN ends 0.80 nats above Pre-LN (1 seed: no interval)"
    # differences 0.3, -0.1 (seed 2 failed on A): mean 0.1, sd 0.2828, half = 12.7062 * 0.2828 / sqrt(2) = 2.5412
    spread = _comparison([2.5, 2.1, None], [2.2, 2.2, 2.0])
    assert takeaway(spread, "en") == (
        "Post-LN ends 0.10 nats above Pre-LN (95 % CI -2.44 to 2.64, 2 seeds) "
        "(1 of 3 seeds left out: no final loss on one side)"
    )
    assert takeaway(_comparison([None], [2.0]), "en").startswith("No seed has a final loss on both sides")


def test_the_sides_are_named_by_what_differs():
    a, b = RunConfig(norm_position="post", warmup_steps=100), RunConfig(norm_position="post")
    # in the lecture header's words, as a lecturer says them (round four's UX L3, hostile L11)
    assert side_names(a, b, "en") == ("Post-LN (warm-up 100 steps)", "Post-LN (no warm-up)")
    assert side_names(RunConfig(qk_norm="layernorm"), RunConfig(), "en") == ("Pre-LN (QK-norm)", "Pre-LN (no QK-norm)")
    assert side_names(RunConfig(lr=10.0), RunConfig(lr=3e-3), "en") == ("Pre-LN (lr 10)", "Pre-LN (lr 3e-3)")
    assert side_names(RunConfig(optimizer="muon"), RunConfig(), "ko") == ("Pre-LN (Muon)", "Pre-LN (Adam)")
    assert side_names(RunConfig(seq_len=32), RunConfig(), "en") == ("Pre-LN (seq_len=32)", "Pre-LN (seq_len=64)")
    assert side_names(RunConfig(), RunConfig(), "ko") == ("Pre-LN (A)", "Pre-LN (B)")


def test_a_side_that_diverged_is_said_beside_the_gap():
    """Hostile round four L11: `compare --a lr=10` said only "ends 2079.37 nats above", the table alone said
    diverged."""
    result = _comparison([9.0, 2.9], [2.2, 2.2])
    result = dataclasses.replace(result, a=dataclasses.replace(result.a, statuses=("diverged", "completed")))
    assert takeaway(result, "en").endswith(
        "Post-LN diverged on 1 of its 2 seeds: its loss there is a blow-up, not a level it learnt to."
    )
    assert "시드 2개 중 1개에서 발산" in takeaway(result, "ko")
    assert "diverged" not in takeaway(_comparison([9.0, 2.9], [2.2, 2.2]), "en")


@pytest.mark.parametrize(
    ("argv", "text"),
    [
        (["--a", "norm_position=post"], "compare needs --a and --b"),
        (["--a", "depth", "--b", "depth=2"], "--a takes KEY=VALUE pairs separated by commas"),
        (["--a", "=3", "--b", "depth=2"], "--a takes KEY=VALUE pairs"),
        (["--a", "depth=2", "--b", "layers=2"], "--b names 'layers', which is not a RunConfig field"),
        (["--a", "depth=2,depth=3", "--b", "depth=2"], "--a sets depth twice"),
        (["--a", "user_text=hi", "--b", "depth=2"], "--a cannot set user_text"),
        (["--a", "depth=x", "--b", "depth=2"], "depth must be a whole number, got 'x'"),
        (["--a", "depth=100", "--b", "depth=2"], "depth must be between 1 and 48, got 100"),
        (["--a", "lr=fast", "--b", "depth=2"], "lr must be a number"),
        (["--a", "norm_position=side", "--b", "depth=2"], "norm_position must be one of"),
        (["--a", "ln_scaling=maybe", "--b", "depth=2"], "ln_scaling must be on or off"),
        (["--a", "seed=3", "--b", "depth=2"], "A and B must share their seeds"),
        (["--a", "depth=2", "--b", "depth=3", "--seeds", "0"], "seeds must be a whole number from 1 to 16, got 0"),
        (["--a", "depth=2", "--b", "depth=3", "--seeds", "17"], "from 1 to 16, got 17"),
        (["--preset", "post-vs-nothing"], "unknown Compare scenario 'post-vs-nothing'"),
        (["--a", "depth=2", "--b", "depth=3", "--address", "1.2.3.4:1"], "--address names a Ray cluster"),
        (["--a", "depth=2", "--b", "depth=3", "--workers", "0"], "workers must be between 1 and "),
        (["--a", "depth=2", "--b", "depth=3", "--depth", "two"], "argument --depth: invalid int value"),
    ],
)
def test_bad_keys_and_values_are_refused_in_one_sentence(argv, text):
    code, out, err = cli("compare", *argv)
    assert code == 2
    assert out == ""
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert text in err, err
