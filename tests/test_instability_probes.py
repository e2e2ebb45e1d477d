"""The massive-activation and DyT-saturation probes against a hand computation, and their place in the
tidy tables and in the run file (issue 19)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ln_viz.config import RunConfig
from ln_viz.model import DyT, build_model
from ln_viz.probes import watch
from ln_viz.summaries import median_abs

SMALL = RunConfig(depth=3, d_model=16, heads=2, seq_len=8, batch_size=4, steps=6, probe_every=3, eval_every=0)
VOCAB = 20


def _forward_watched(cfg: RunConfig) -> tuple:
    """(the model, the probe, each block's output, each (block, norm)'s input) of one watched forward."""
    model = build_model(cfg, VOCAB)
    with torch.no_grad():  # a trained-looking DyT: alpha far from its init, so some inputs saturate
        for m in model.modules():
            if isinstance(m, DyT):
                m.alpha.fill_(1.7)
    x = torch.randint(0, VOCAB, (4, 8), generator=torch.Generator().manual_seed(5))
    outs: dict[int, torch.Tensor] = {}
    norm_in: dict[tuple[int, int], torch.Tensor] = {}
    hooks = []
    for i, block in enumerate(model.blocks):
        hooks.append(block.register_forward_hook(lambda m, a, o, i=i: outs.setdefault(i, o.detach().clone())))
        for j, name in enumerate(model.norm_names()):
            norm = block.get_submodule(name)
            hooks.append(norm.register_forward_pre_hook(lambda m, a, k=(i, j): norm_in.setdefault(k, a[0].clone())))
    with torch.no_grad(), watch(model) as act:
        model(x)
    for h in hooks:
        h.remove()
    return model, act, outs, norm_in


@pytest.mark.parametrize("norm_position", ["pre", "post"])
def test_the_massive_activation_ratio_is_the_largest_over_the_median_magnitude(norm_position):
    model, act, outs, _ = _forward_watched(SMALL.replace(norm_position=norm_position))
    for i, h in outs.items():
        mags = np.sort(h.abs().double().numpy().reshape(-1))
        lower_median = mags[(mags.size - 1) // 2]  # torch's median of an even count: the lower middle
        assert act.arrays["massive_act"][i] == pytest.approx(mags[-1] / lower_median, rel=1e-5)
        assert act.arrays["massive_act"][i] >= 1


def test_the_median_magnitude_is_torch_s_median_of_abs_on_hostile_values():
    """median_abs finds the median among the float bits with the sign cleared: it must equal torch's median of
    |x| exactly (odd and even counts, negative zeros, infinities, subnormals, huge values) and say NaN for a NaN."""
    gen = torch.Generator().manual_seed(11)
    cases = [torch.randn(n, generator=gen) * scale for n in (1, 2, 7, 64, 1001, 4096) for scale in (1e-3, 1.0, 1e30)]
    cases += [torch.tensor([-0.0, 0.0, -0.0]), torch.tensor([1e-45, -1e-44, 3e-45, 0.0])]
    cases += [torch.tensor([float("-inf"), 1.0, 2.0]), torch.tensor([float("inf"), float("-inf"), -5.0, 5.0])]
    for x in cases:
        assert median_abs(x) == float(x.abs().median()), x
    nan = torch.randn(9, generator=gen)
    nan[4] = float("nan")
    assert np.isnan(median_abs(nan))


def test_the_median_magnitude_of_many_values_counted_in_buckets_is_torch_s_exactly():
    """From 8,192 values median_abs counts the top bits first and partitions one bucket: it must still equal
    torch's median of |x| exactly, where the bucket is crowded (ties, one repeated value, all in one bucket),
    at its edges (the median the first or the last value of its bucket), and on zeros, subnormals, infinities,
    huge values and a strided view."""
    gen = torch.Generator().manual_seed(12)
    cases = [torch.randn(n, generator=gen) * scale for n in (8191, 8192, 8193, 65536, 131072) for scale in (1e-3, 1e30)]
    cases += [torch.full((10_000,), -2.5), torch.zeros(9000), torch.tensor([1e-45, -3e-45]).repeat(5000)]
    cases += [1.0 + torch.rand(50_001, generator=gen) * 2**-10]  # every value in one bucket of the count
    edge = torch.randn(20_000, generator=gen)
    edge[:10_000] = 1.0  # half the values one value, the middle among them, others in its bucket
    cases += [edge, -edge, torch.cat([torch.full((9_999,), 0.5), torch.full((10_001,), 1.0)])]  # the first of it
    cases += [torch.cat([torch.full((10_000,), -0.5), torch.full((10_000,), 1.0)])]  # the last of its bucket
    cases += [torch.where(torch.rand(40_000, generator=gen) < 0.3, torch.inf, torch.randn(40_000, generator=gen))]
    cases += [torch.randn(2, 30_000, generator=gen)[:, ::3].reshape(-1), torch.randn(30_000, generator=gen)[::2]]
    for i, x in enumerate(cases):
        assert median_abs(x) == float(x.abs().median()), i
    nan = torch.randn(10_000, generator=gen)
    nan[4_000] = float("nan")
    assert np.isnan(median_abs(nan))


def test_dyt_saturation_is_the_fraction_of_tanh_inputs_past_two_and_nan_for_layernorm():
    model, act, _, norm_in = _forward_watched(SMALL.replace(norm_type="dyt"))
    sat = act.arrays["dyt_saturation"]
    assert sat.shape == (3, 2)
    for (i, j), x in norm_in.items():
        alpha = float(model.blocks[i].get_submodule(model.norm_names()[j]).alpha.detach())
        by_hand = np.mean(np.abs(alpha * x.double().numpy()) > 2)
        assert sat[i, j] == pytest.approx(by_hand, abs=1e-6)
    assert 0 < sat.max() < 1  # the fixture is meant to saturate some inputs but not all
    _, act_ln, _, _ = _forward_watched(SMALL)
    assert np.isnan(act_ln.arrays["dyt_saturation"]).all()


def test_the_tidy_tables_carry_the_new_probes_and_log_z():
    from ln_viz.tables import tables
    from ln_viz.train import run

    data = run(SMALL.replace(norm_type="dyt"))
    t = tables(data)
    layers = t["layers"]
    np.testing.assert_array_equal(layers.massive_act.to_numpy().reshape(-1, 3), data.probe("massive_act"))
    stats = t["layer_stats"]
    ln2 = stats[stats.site == "ln2"]
    np.testing.assert_array_equal(ln2.dyt_saturation.to_numpy().reshape(-1, 3), data.probe("dyt_saturation")[:, :, 1])
    assert stats[stats.site.isin(["resid", "input"])].dyt_saturation.isna().all()
    log_z = t["log_z"]
    assert log_z.step.tolist() == list(data.probe_steps)
    np.testing.assert_array_equal(log_z[list(data.info.stat_names)].to_numpy(), data.probe("logz_stats"))


def test_a_run_file_keeps_the_new_probes_and_an_older_one_reads_them_as_nan(tmp_path):
    from ln_viz.runfile import read_run_file, write_run_file
    from ln_viz.store.transfer import DEMO_DIR
    from ln_viz.train import run

    data = run(SMALL.replace(norm_type="dyt"))
    back = read_run_file(write_run_file(data, tmp_path / "r.json")).data
    for name in ("massive_act", "dyt_saturation"):
        np.testing.assert_array_equal(back.probe(name), data.probe(name))
        assert np.isfinite(back.probe(name)).all()
    old = read_run_file(DEMO_DIR / "pre-ln-no-warmup.json.gz").data
    assert np.isnan(old.probe("massive_act")).all() and np.isnan(old.probe("dyt_saturation")).all()
