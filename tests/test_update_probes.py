"""Issue 33's probes against hand computations on tiny models: the angular update (a known rotation), Adam's
preconditioner lag (|g| / (sqrt(v_hat) + eps) from the optimizer's state, and the values theory gives at step 1),
the smallest per-token std / RMS of each norm's input; then their way through the store, the run file and the
CSV tables, and their charts in both languages. The scenario "warm-up limits the angular update" is measured
at the end."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from ln_viz import charts
from ln_viz.config import ADAM_BETAS, ADAM_EPS, PRESETS, RunConfig
from ln_viz.model import build_model
from ln_viz.probes import min_token_scale, sigma_from_rstd, watch
from ln_viz.schema import PARAM_NAMES
from ln_viz.train import Trainer, make_optimizer, run
from ln_viz.update_probes import PreconditionerLag, UpdateRatio, angular_updates

SMALL = RunConfig(depth=2, d_model=16, heads=2, seq_len=8, batch_size=4, steps=6, probe_every=3, eval_every=0)
VOCAB = 20


@pytest.fixture(scope="module")
def small_run():
    return run(SMALL)


def _rotated(w: torch.Tensor, theta: float, seed: int = 0) -> torch.Tensor:
    """w turned by `theta` radians in the plane of w and a random direction orthogonal to it (same norm)."""
    c = torch.randn(w.shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    w64 = w.double()
    c -= (c * w64).sum() / (w64 * w64).sum() * w64
    c *= w64.norm() / c.norm()
    return (math.cos(theta) * w64 + math.sin(theta) * c).float()


def test_the_angular_update_of_a_known_rotation_is_its_angle_at_any_scale():
    w = torch.randn(16, 64, generator=torch.Generator().manual_seed(1))
    thetas = [1e-4, 1e-2, 0.3, 2.0]
    after = [3.0 * _rotated(w, theta, seed=k) for k, theta in enumerate(thetas)]  # a rescale turns nothing
    got = angular_updates([w] * len(thetas), after)
    np.testing.assert_allclose(got, thetas, rtol=2e-3)
    # arccos of the cosine agrees where it is well conditioned
    cos = float((w * after[2]).sum() / (w.norm() * after[2].norm()))
    assert got[2] == pytest.approx(math.acos(cos), rel=1e-4)
    assert np.isnan(angular_updates([torch.zeros(3, 3)], [torch.ones(3, 3)])).all()  # no direction to turn


def test_a_block_s_angular_update_is_its_most_turned_matrix():
    model = build_model(SMALL, VOCAB)
    probe = UpdateRatio(model)
    probe.before()
    with torch.no_grad():
        block0 = model.blocks[0]
        block0.get_submodule("ffn.w2").weight.copy_(_rotated(block0.get_submodule("ffn.w2").weight, 0.2))
        block0.get_submodule("attn.q").weight.copy_(_rotated(block0.get_submodule("attn.q").weight, 0.05))
        block0.get_submodule("ffn.w1").weight.mul_(2.0)  # grows, never turns
    ratio = probe.after()
    assert probe.angular[0] == pytest.approx(0.2, rel=1e-3)
    assert probe.angular[1] == 0.0 and ratio[1] == 0.0  # block 2 untouched
    assert ratio[0] > 0.2  # the update ratio counts the growth the angle ignores


def test_the_angular_update_of_a_real_adam_step_is_the_float64_angle_of_each_block_s_most_turned_matrix():
    model, opt = _adam_steps(SMALL, 3)
    probe = UpdateRatio(model)
    probe.before()
    before = [[b.get_submodule(n).weight.detach().double().clone() for n in PARAM_NAMES] for b in model.blocks]
    opt.zero_grad(set_to_none=True)
    x = torch.randint(0, VOCAB, (4, 9), generator=torch.Generator().manual_seed(5))
    F.cross_entropy(model(x[:, :-1]).flatten(0, 1), x[:, 1:].flatten()).backward()
    opt.step()
    probe.after()
    for i, block in enumerate(model.blocks):
        angles = []
        for w0, n in zip(before[i], PARAM_NAMES):
            w1 = block.get_submodule(n).weight.detach().double()
            angles.append(2 * math.asin(float((w1 / w1.norm() - w0 / w0.norm()).norm()) / 2))
        assert 0 < max(angles) < 0.5
        assert probe.angular[i] == pytest.approx(max(angles), rel=1e-5)


def _adam_steps(cfg: RunConfig, steps: int, opt_factory=None):
    """A tiny model after `steps` Adam (or `opt_factory`'s) steps on random tokens: (model, optimizer)."""
    torch.manual_seed(0)
    model = build_model(cfg, VOCAB)
    opt = opt_factory(model) if opt_factory else make_optimizer(cfg, model)
    gen = torch.Generator().manual_seed(3)
    for _ in range(steps):
        x = torch.randint(0, VOCAB, (4, 9), generator=gen)
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x[:, :-1]).flatten(0, 1), x[:, 1:].flatten()).backward()
        opt.step()
    return model, opt


def _lag_by_hand(model, opt) -> np.ndarray:
    """max over a block's matrices and their elements of |g| / (sqrt(v / (1 - beta2^t)) + eps)."""
    index = {id(p): i for i, p in enumerate(opt.params)}
    out = []
    for block in model.blocks:
        worst = 0.0
        for name in PARAM_NAMES:
            p = block.get_submodule(name).weight
            i = index[id(p)]
            v_hat = opt.exp_avg_sq[i].double() / (1 - ADAM_BETAS[1] ** opt.steps[i])
            worst = max(worst, float((p.grad.double().abs() / (v_hat.sqrt() + ADAM_EPS)).max()))
        out.append(worst)
    return np.array(out)


def test_the_preconditioner_lag_is_the_largest_g_over_root_v_hat_and_theory_s_value_at_step_1():
    model, opt = _adam_steps(SMALL, 4)
    lag = PreconditionerLag(model).measure(opt)
    np.testing.assert_allclose(lag, _lag_by_hand(model, opt), rtol=1e-5)
    assert (lag > 1).all() and (lag <= math.sqrt((1 - ADAM_BETAS[1] ** 4) / (1 - ADAM_BETAS[1])) + 1e-4).all()
    # step 1: v_hat = g^2, so |g| / (|g| + eps) is 1 to float32; GI-Adam's v0 = g0^2 makes v_hat = g^2 / (1 - beta2)
    model, opt = _adam_steps(SMALL, 1)
    np.testing.assert_allclose(PreconditionerLag(model).measure(opt), 1.0, rtol=1e-5)
    model, opt = _adam_steps(SMALL.replace(adam_init="gi"), 1)
    np.testing.assert_allclose(PreconditionerLag(model).measure(opt), math.sqrt(1 - ADAM_BETAS[1]), rtol=1e-4)


def test_an_optimizer_without_a_second_moment_has_no_lag():
    model, opt = _adam_steps(SMALL.replace(optimizer="sgd"), 2)
    assert np.isnan(PreconditionerLag(model).measure(opt)).all()


@pytest.mark.slow  # torch.optim's first use imports torch._dynamo: 2 s on 2 idle cores
def test_torch_s_own_adam_gives_the_same_lag():
    def torch_adam(model):
        return torch.optim.Adam(model.parameters(), lr=SMALL.lr, betas=ADAM_BETAS, eps=ADAM_EPS, foreach=True)

    ours, ours_opt = _adam_steps(SMALL, 3)
    theirs, theirs_opt = _adam_steps(SMALL, 3, torch_adam)
    np.testing.assert_allclose(
        PreconditionerLag(theirs).measure(theirs_opt), PreconditionerLag(ours).measure(ours_opt), rtol=1e-4
    )


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "training"])
@pytest.mark.parametrize("norm_type", ["layernorm", "rmsnorm"])
def test_the_smallest_per_token_scale_of_each_norm_input_is_std_for_layernorm_and_rms_for_rmsnorm(norm_type, grad):
    """In training (grad) a LayerNorm's sigma comes from the rstd its forward saved; without grad, from its input."""
    cfg = SMALL.replace(norm_position="peri", norm_type=norm_type)
    model = build_model(cfg, VOCAB)
    seen: dict[tuple[int, int], torch.Tensor] = {}
    hooks = [
        block.get_submodule(name).register_forward_pre_hook(lambda m, a, k=(i, j): seen.setdefault(k, a[0].clone()))
        for i, block in enumerate(model.blocks)
        for j, name in enumerate(model.norm_names())
    ]
    x = torch.randint(0, VOCAB, (4, 8), generator=torch.Generator().manual_seed(5))
    with torch.set_grad_enabled(grad), watch(model) as act:
        model(x)
    for h in hooks:
        h.remove()
    got = act.arrays["norm_in_min_rms"]
    for (i, j), inp in seen.items():
        x64 = inp.detach().double().reshape(-1, inp.shape[-1])
        centred = x64 - x64.mean(dim=1, keepdim=True) if norm_type == "layernorm" else x64
        want = float(centred.square().mean(dim=1).sqrt().min())
        assert got[i, j] == pytest.approx(want, rel=1e-5), (i, j)
    # a token whose features are all equal has no spread: LayerNorm's sigma is 0 there, its RMS is not
    flat = torch.randn(2, 3, 8)
    flat[1, 2] = 4.0
    assert min_token_scale(flat, centred=True) == pytest.approx(0.0, abs=1e-6)
    assert min_token_scale(flat, centred=False) > 0


def test_a_layernorm_s_saved_rstd_gives_its_input_s_smallest_sigma_and_a_tiny_spread_is_measured_on_the_input():
    ln = nn.LayerNorm(16, eps=1e-5)
    x = (torch.randn(4, 6, 16, generator=torch.Generator().manual_seed(3)) * 2 + 1).requires_grad_()
    want = float(x.detach().double().var(dim=-1, correction=0).sqrt().min())
    assert sigma_from_rstd(ln(x), ln.eps) == pytest.approx(want, rel=1e-6)
    with torch.no_grad():  # no backward node: nothing saved, so no answer from it
        assert sigma_from_rstd(ln(x), ln.eps) is None
    tiny = x.detach().clone()
    tiny[2, 3] = 5.0 + 1e-4 * torch.arange(16.0)  # var ~2e-7 < eps: rstd's rounding would cost digits
    assert sigma_from_rstd(ln(tiny.requires_grad_()), ln.eps) is None
    assert min_token_scale(tiny, centred=True) == pytest.approx(
        1e-4 * float(torch.arange(16.0).std(correction=0)), rel=1e-3
    )


def test_the_probes_are_stored_written_to_the_run_file_and_the_csv_tables(small_run, tmp_path):
    from ln_viz.runfile import read_run_file, write_run_file
    from ln_viz.store import Store
    from ln_viz.tables import export_tables

    names = ("angular_update", "precond_lag", "norm_in_min_rms")
    for name in names:
        assert np.isfinite(small_run.probe(name)).all() and (small_run.probe(name) > 0).all(), name
    with Store(tmp_path / "runs.sqlite") as store:
        stored = store.open_run(store.add_run(small_run, label="probes"))
    back = read_run_file(write_run_file(small_run, tmp_path / "r.json")).data
    for name in names:
        np.testing.assert_array_equal(stored.probe(name), small_run.probe(name))
        np.testing.assert_array_equal(back.probe(name), small_run.probe(name))
    export_tables(small_run, tmp_path / "csv")
    layers = pd.read_csv(
        tmp_path / "csv" / "layers.csv", dtype={"angular_update": np.float32, "precond_lag": np.float32}
    )
    L = SMALL.depth
    np.testing.assert_array_equal(layers.angular_update.to_numpy().reshape(-1, L), small_run.probe("angular_update"))
    np.testing.assert_array_equal(layers.precond_lag.to_numpy().reshape(-1, L), small_run.probe("precond_lag"))
    stats = pd.read_csv(tmp_path / "csv" / "layer_stats.csv", dtype={"min_token_rms": np.float32})
    for j, norm in enumerate(small_run.info.norm_names):
        rows = stats[stats.site == norm].min_token_rms.to_numpy().reshape(-1, L)
        np.testing.assert_array_equal(rows, small_run.probe("norm_in_min_rms")[:, :, j])
    assert stats[stats.site.isin(["resid", "input"])].min_token_rms.isna().all()


def test_the_charts_draw_in_both_languages_and_the_export_lists_them(small_run):
    from ln_viz.export import charts_for
    from ln_viz.i18n import EN, KO

    assert {"angular_update", "precond_lag", "norm_min_rms"} <= {s.name for s in charts_for(small_run)}
    for lang, cat in (("en", EN), ("ko", KO)):
        angle = charts.angular_update_chart(small_run, lang)
        assert angle.layout.yaxis.type == "log" and cat["chart.angular_axis"] in angle.layout.yaxis.title.text
        lines = [tr for tr in angle.data if tr.mode != "markers"]  # the last trace is the layers' colourbar
        assert len(lines) == SMALL.depth
        np.testing.assert_array_equal(lines[0].y, small_run.probe("angular_update")[:, 0])
        pair = charts.angular_update_chart([small_run, small_run], lang, labels=["A", "B"])
        assert [tr.name for tr in pair.data] == ["A", "B"]
        np.testing.assert_array_equal(pair.data[0].y, small_run.probe("angular_update").max(axis=1))
        lag = charts.precond_lag_chart(small_run, lang)
        assert cat["chart.lag_title"] in lag.layout.title.text and not lag.layout.annotations
        rms = charts.norm_min_rms_chart(small_run, lang)
        assert [tr.name for tr in rms.data] == [cat[f"chart.norm_site.{n}"] for n in small_run.info.norm_names]
        assert str(small_run.probe_steps[-1]) in rms.layout.title.subtitle.text  # "step 6" under the title
    sgd = run(SMALL.replace(optimizer="sgd", steps=3))
    for lang, cat in (("en", EN), ("ko", KO)):
        note = [a.text for a in charts.precond_lag_chart(sgd, lang).layout.annotations]
        assert note == [cat["chart.not_adam"]]


def test_the_warm_up_scenario_shows_the_angular_update_in_the_lecture_view():
    from ln_viz.lessons import lesson_chart, scenario_of

    a, b = PRESETS["high-lr"].config, PRESETS["high-lr-warmup"].config
    assert scenario_of([a, b]) == "warmup-angular" and lesson_chart("warmup-angular", [a, b]) == "angular_update"
    assert lesson_chart(scenario_of([b]), [b]) == "angular_update"


def _early_angles(cfg: RunConfig, steps: int) -> float:
    """The mean over the first `steps` steps of the largest angular update over the layers (probes every step)."""
    trainer = Trainer(cfg.replace(probe_every=1))
    angles = []
    for snap in trainer:
        angles.append(float(np.max(snap.probes["angular_update"])))
        if snap.step == steps:
            break
    return float(np.mean(angles))


@pytest.mark.slow
def test_warm_up_holds_the_early_angular_updates_back():
    """The scenario's claim (Kosson et al. 2024) on a small config: Pre-LN at lr 3e-2, 2 layers of width 32, batch
    8 x 16, the first 20 steps, without and with 100 warm-up steps, 3 seeds. Every seed's mean largest angle per
    step is more than 3 times smaller with warm-up."""
    base = RunConfig(depth=2, d_model=32, heads=2, batch_size=8, seq_len=16, norm_position="pre", lr=3e-2, steps=300)
    for seed in range(3):
        cold = _early_angles(base.replace(seed=seed), 20)
        warm = _early_angles(base.replace(seed=seed, warmup_steps=100), 20)
        assert warm < cold / 3, (seed, cold, warm)
