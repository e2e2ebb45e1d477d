"""The probes' numbers are what they say: each fast kernel against the plain definition it replaces."""

import contextlib
import math

import numpy as np
import pytest
import torch

from ln_viz.config import RunConfig
from ln_viz.model import build_model
from ln_viz.probes import ENTROPY_SEQUENCES, GradNorms, UpdateRatio, attention_entropy, softmax_entropy, watch
from ln_viz.schema import HIST_EDGES, HIST_LIMIT, PARAM_NAMES, Stat
from ln_viz.summaries import tensor_summary

MEAN, STD, RMS, MAX_ABS, BELOW, ABOVE = Stat


@contextlib.contextmanager
def _torch_threads(n: int):
    """torch on `n` threads inside the block (numpy's exp is taken only on two or fewer), as before after it."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _step_stats(x: torch.Tensor) -> np.ndarray:
    """x's STAT_NAMES row as a probed step's StepSummaries finishes it (one tensor of the step)."""
    from ln_viz.summaries import StepSummaries

    arrays = {"s": np.zeros((1, 6), np.float32)}
    steps = StepSummaries()
    steps.add(arrays, x, ("s", 0))
    steps.finish(arrays)
    return arrays["s"][0]


@pytest.mark.parametrize("scale", [0.3, 3.0, 12.0, 40.0, 120.0])
def test_tensor_summary_matches_numpy(scale):
    x = torch.randn(8, 16, 64, generator=torch.Generator().manual_seed(1)) * scale + 0.5
    hist, stats = tensor_summary(x)
    v = x.numpy().astype(np.float64).ravel()
    counts, _ = np.histogram(v[(v >= -HIST_LIMIT) & (v < HIST_LIMIT)], bins=HIST_EDGES)
    # float32 asinh may put a value within rounding of an edge into the next bin: at most 2 of 8192 here
    assert np.abs(hist - counts / v.size).sum() <= 2 * 2 / v.size + 1e-6
    expected = [v.mean(), v.std(), np.sqrt(np.mean(v**2)), np.abs(v).max()]
    np.testing.assert_allclose(
        stats,
        [*expected, (v < -HIST_LIMIT).mean(), (v >= HIST_LIMIT).mean()],
        rtol=1e-5,
        atol=1e-6,
    )
    assert hist.sum() + stats[BELOW] + stats[ABOVE] == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("offset", [0.0, 0.3, 0.9, 1.1, 3.0, 100.0])
def test_the_std_is_float64_s_to_a_few_ulps_whether_or_not_x_minus_the_mean_is_summed(offset):
    """The std comes from the mean and the mean square in one pass where the mean's square is at most half the mean
    square (ln_viz.summaries.one_pass: a mean within one std of 0), else from a sum of (x - mean)^2: either way
    within 2e-6 of float64's, at sizes and scales a probe sees, in tensor_summary and in a step's StepSummaries."""
    from ln_viz.summaries import one_pass

    g = torch.Generator().manual_seed(7)
    for n, scale in ((65_536, 1e-3), (131_072, 1.0), (4_096, 30.0), (100, 1e4)):
        x = torch.randn(n, generator=g) * scale
        x += offset * float(x.std())
        want = float(x.double().std(correction=0))
        mean = float(x.sum()) / n
        assert one_pass(mean, float(torch.dot(x, x)), n) == (offset < 1)
        assert tensor_summary(x)[1][STD] == pytest.approx(want, rel=2e-6)
        assert _step_stats(x)[STD] == tensor_summary(x)[1][STD]


def test_the_std_of_values_whose_squares_overflow_is_still_summed_from_x_minus_the_mean():
    """Values near 2e19 (a diverging run): their sum of squares overflows float32, so no std comes from it; the sum
    of (x - mean)^2 is finite, and the std is float64's (the rms is inf, as it was)."""
    x = torch.randn(70_000, generator=torch.Generator().manual_seed(8)) * 1e16 + 2e19
    want = float(x.double().std(correction=0))
    for stats in (tensor_summary(x)[1], _step_stats(x)):
        assert stats[STD] == pytest.approx(want, rel=1e-5) and stats[RMS] == np.inf


@pytest.mark.parametrize("c", [5.0, 10.0, 11.58, 20.0, 29.9])
def test_the_unshifted_entropy_of_attention_close_to_one_hot_is_float64_s_and_never_below_zero(c):
    """Causal scores of +c on the diagonal and -c elsewhere (within UNSHIFTED): each row's entropy is far under a
    float32 ulp of c, which is all the unshifted formula can resolve (a reviewer's case: -9.5e-7 nats at c = 11.58,
    1.9e-6 where float64 says 2e-23), so a mean under SHIFTED_BELOW is taken again shifted: within 1e-7 nats of
    float64's mean (the shifted one's float32 rounding near p = 1) and never below 0, on numpy's exp and on torch's,
    and a NumPy error mode of "raise" does not stop it (the masked scores' exp underflows to 0)."""
    T = 64
    z = torch.full((2, 4, T, T), -c).diagonal_scatter(torch.full((2, 4, T), c), dim1=-2, dim2=-1)
    z.masked_fill_(torch.ones(T, T, dtype=torch.bool).triu(1), -1e30)
    ref = torch.softmax(z.double(), -1)
    want = float(-(ref * torch.where(ref > 0, ref.log(), 0.0)).sum())
    for threads in (1, 4):
        with _torch_threads(threads), np.errstate(all="raise"):
            total = softmax_entropy(z.clone(), shift=False)[1]
        rows = z.numel() // T
        assert total >= 0 and abs(total - want) / rows < 1e-7, (threads, total / rows, want / rows)


@pytest.mark.slow  # a Python process of its own importing torch (speed: out of the fast lane)
def test_a_step_s_summaries_equal_tensor_summary_where_torch_s_default_dtype_is_float64():
    """torch.set_default_dtype(torch.float64) before ln_viz is imported (a reviewer's case): a step's summaries still
    equal tensor_summary's bit for bit (the marker of a std taken in one pass was a default-dtype tensor, which made
    the step's scalars float64: 93 of 400 rows an ulp off)."""
    import subprocess
    import sys

    code = """
import numpy as np, torch
torch.set_default_dtype(torch.float64)
from ln_viz.summaries import StepSummaries, tensor_summary
g = torch.Generator().manual_seed(3)
xs = [torch.randn(int(n), generator=g, dtype=torch.float32) * s + m
      for n, s, m in zip(torch.randint(100, 20000, (60,), generator=g), [1e-3, 1.0, 40.0] * 20, [0.0, 0.5, 3.0] * 20)]
arrays = {"s": np.zeros((len(xs), 6), np.float32)}
steps = StepSummaries()
for i, x in enumerate(xs):
    steps.add(arrays, x, ("s", i))
steps.finish(arrays)
bad = [i for i, x in enumerate(xs) if not np.array_equal(arrays["s"][i], tensor_summary(x)[1])]
print("differ", bad)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "differ []", done.stdout + done.stderr[-2000:]


def test_tensor_summary_edges_are_half_open():
    inside = (HIST_EDGES[1] + HIST_EDGES[2]) / 2
    x = torch.tensor([-HIST_LIMIT, inside, 0.0, HIST_LIMIT - 1e-3, HIST_LIMIT, -HIST_LIMIT - 1e-3])
    hist, stats = tensor_summary(x)
    assert hist[0] == pytest.approx(1 / 6)  # -256 is the first bin's closed left edge
    assert hist[1] == pytest.approx(1 / 6)
    assert hist[64] == pytest.approx(1 / 6)  # 0 opens bin 64 = [0, 0.098)
    assert hist[-1] == pytest.approx(1 / 6)
    assert stats[ABOVE] == pytest.approx(1 / 6)  # +256 is beyond the last bin
    assert stats[BELOW] == pytest.approx(1 / 6)


def test_hist_edges_are_symmetric_log_and_fine_near_zero():
    assert len(HIST_EDGES) == 129 and HIST_EDGES[64] == 0.0
    np.testing.assert_array_equal(HIST_EDGES, -HIST_EDGES[::-1])
    assert np.all(np.diff(HIST_EDGES) > 0)
    widths = np.diff(HIST_EDGES)
    assert widths[64] < 0.12  # a LayerNorm output (width 1) spans ~40 bins
    assert widths[-1] < 0.1 * HIST_LIMIT  # and the far bins still resolve a 24-layer Pre-LN stream
    np.testing.assert_allclose(np.diff(np.arcsinh(HIST_EDGES)), np.arcsinh(HIST_LIMIT) / 64)


def test_tensor_summary_cost_stays_small():
    x = torch.randn(32, 64, 64) * 10
    tensor_summary(x)
    best = min(_timed(tensor_summary, x) for _ in range(5))
    assert best < 0.02  # seconds; ~1 ms on an idle core, allow a loaded CI machine


def _timed(f, x) -> float:
    import time

    t0 = time.perf_counter()
    f(x)
    return time.perf_counter() - t0


def test_tensor_summary_of_a_diverged_tensor_counts_what_it_can():
    x = torch.zeros(10)
    x[0], x[1], x[2] = float("nan"), float("inf"), -float("inf")
    hist, stats = tensor_summary(x)
    assert hist.sum() == pytest.approx(0.7)  # seven zeros; the NaN counts nowhere
    assert stats[ABOVE] == pytest.approx(0.1) and stats[BELOW] == pytest.approx(0.1)
    assert math.isnan(stats[MEAN])


def naive_entropy(q: torch.Tensor, k: torch.Tensor, heads: int) -> float:
    B, T, d = q.shape
    hs = d // heads
    total = 0.0
    for b in range(B):
        for h in range(heads):
            qh, kh = q[b, :, h * hs : (h + 1) * hs].double(), k[b, :, h * hs : (h + 1) * hs].double()
            for t in range(T):
                p = torch.softmax(qh[t] @ kh[: t + 1].T / math.sqrt(hs), dim=0)
                total += float(-(p * p.log()).sum())
    return total / (B * heads * T)


def test_attention_entropy_matches_its_definition():
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(3, 12, 16, generator=g) * 2, torch.randn(3, 12, 16, generator=g)
    assert attention_entropy(q, k, 4) == pytest.approx(naive_entropy(q, k, 4), rel=1e-5)
    # uniform attention (q = 0): position t spreads over t + 1 keys, entropy log(t + 1)
    uniform = np.mean([math.log(t + 1) for t in range(12)])
    assert attention_entropy(torch.zeros(2, 12, 16), k[:2], 4) == pytest.approx(uniform, rel=1e-6)


def test_attention_entropy_is_measured_on_the_first_sequences_of_the_batch():
    cfg = RunConfig(depth=2, d_model=32, heads=4, seq_len=16)
    model = build_model(cfg, 30)
    x = torch.randint(0, 30, (ENTROPY_SEQUENCES + 4, 16), generator=torch.Generator().manual_seed(3))
    with watch(model) as full:
        model(x)
    with watch(model) as first:
        model(x[:ENTROPY_SEQUENCES])
    np.testing.assert_allclose(full.attn_entropy, first.attn_entropy, rtol=1e-6)


def naive_scores(q: torch.Tensor, k: torch.Tensor, heads: int) -> tuple[float, float]:
    """(mean entropy, largest |score|) of causal softmax(q k^T / sqrt(hs)) in float64, row by row."""
    B, T, d = q.shape
    hs = d // heads
    total, largest = 0.0, 0.0
    for b in range(B):
        for h in range(heads):
            qh, kh = q[b, :, h * hs : (h + 1) * hs].double(), k[b, :, h * hs : (h + 1) * hs].double()
            for t in range(T):
                s = qh[t] @ kh[: t + 1].T / math.sqrt(hs)
                p = torch.softmax(s, dim=0)
                total, largest = total + float(-(p * p.log()).sum()), max(largest, float(s.abs().max()))
    return total / (B * heads * T), largest


@pytest.mark.parametrize("spread", [1.0, 30.0, 300.0])
def test_the_one_exp_pass_entropy_and_probabilities_match_float64(spread):
    """softmax_entropy (ln-viz's attention probe and attach's): the entropy summed over rows and the probabilities
    match a float64 softmax, on causal rows (masked -1e30) whose scores spread over `spread` (300: most of a row
    lies more than 80 under its max, where the exp floors at e^-80) and on a row with nothing to attend to."""
    g = torch.Generator().manual_seed(5)
    z = torch.randn(2, 3, 24, 24, generator=g) * spread
    z.masked_fill_(torch.ones(24, 24, dtype=torch.bool).triu(1), -1e30)
    z[1, 2, 5] = -1e30  # padding: uniform over the row, entropy log 24
    ref = torch.softmax(z.double(), -1)
    want = float(-(ref * torch.where(ref > 0, ref.log(), 0.0)).sum())
    p, total = softmax_entropy(z.clone(), probs=True)
    assert total == pytest.approx(want, rel=1e-6, abs=1e-5)
    torch.testing.assert_close(p.double(), ref, rtol=1e-5, atol=1e-7)
    with _torch_threads(4):  # on more than two threads the exp is torch's, not numpy's: the same within rounding
        p4, total4 = softmax_entropy(z.clone(), probs=True)
    assert total4 == pytest.approx(want, rel=1e-6, abs=1e-5)
    torch.testing.assert_close(p4.double(), ref, rtol=1e-5, atol=1e-7)
    assert softmax_entropy(z.clone())[0] is None
    assert softmax_entropy(torch.full((1, 24), -1e30))[1] == pytest.approx(math.log(24), rel=1e-6)
    # scores of -inf where nothing masks them (no mask given): they weigh nothing, and no NaN comes of -inf * 0
    assert softmax_entropy(torch.tensor([[0.0, 0.0, -math.inf]]))[1] == pytest.approx(math.log(2), rel=1e-6)


@pytest.mark.parametrize("threads", [1, 4])
def test_the_unshifted_entropy_matches_float64_where_every_row_sees_scores_within_the_bound(threads):
    """softmax_entropy(shift=False), for causal rows whose scores lie within +-UNSHIFTED (29.9 here), on numpy's
    exp (one thread: a masked entry's exp is 0) and torch's (four: the masked entries floored): the entropy and the
    probabilities of a float64 softmax, as shifted."""
    from ln_viz.probes import UNSHIFTED

    g = torch.Generator().manual_seed(6)
    z = torch.randn(2, 3, 24, 24, generator=g)
    z = z / z.abs().max() * (UNSHIFTED - 0.1)
    z.masked_fill_(torch.ones(24, 24, dtype=torch.bool).triu(1), -1e30)
    ref = torch.softmax(z.double(), -1)
    want = float(-(ref * torch.where(ref > 0, ref.log(), 0.0)).sum())
    with _torch_threads(threads):
        p, total = softmax_entropy(z.clone(), probs=True, shift=False)
    assert total == pytest.approx(want, rel=1e-6, abs=1e-5)
    torch.testing.assert_close(p.double(), ref, rtol=1e-5, atol=1e-7)
    assert total == pytest.approx(softmax_entropy(z.clone())[1], rel=1e-6)


@pytest.mark.parametrize("d, qk_norm, scale", [(32, "none", 1.0), (64, "rmsnorm", 1.0), (32, "none", 30.0)])
def test_the_probe_summarises_the_scores_the_model_computes(d, qk_norm, scale):
    """The entropy and largest logit come from the model's own scores (head_logit_max's, no second matmul):
    they match a float64 recomputation from the forward's q and k on the first ENTROPY_SEQUENCES sequences
    (hs 8 and 16; scale 30: near-one-hot rows, where p log p rounding matters most), the per-layer largest is
    the per-head largest's maximum when the batch is that short, and nothing stays attached after."""
    cfg = RunConfig(depth=2, d_model=d, heads=4, seq_len=16, qk_norm=qk_norm)
    model = build_model(cfg, 30)
    with torch.no_grad():
        for block in model.blocks:
            block.attn.q.weight.mul_(scale)
    seen: dict[tuple[int, str], torch.Tensor] = {}
    handles = []
    for i, block in enumerate(model.blocks):
        attn = block.attn
        for name, m in zip("qk", (attn.q_norm, attn.k_norm) if attn.qk_norm else (attn.q, attn.k), strict=True):
            handles.append(m.register_forward_hook(lambda m, a, o, i=i, n=name: seen.__setitem__((i, n), o.flatten(2))))
    x = torch.randint(0, 30, (ENTROPY_SEQUENCES + 3, 16), generator=torch.Generator().manual_seed(2))
    with torch.no_grad(), watch(model) as act:
        model(x)
    for h in handles:
        h.remove()
    for i in range(2):
        q, k = seen[(i, "q")][:ENTROPY_SEQUENCES], seen[(i, "k")][:ENTROPY_SEQUENCES]
        entropy, largest = naive_scores(q, k, 4)
        assert act.attn_entropy[i] == pytest.approx(entropy, rel=1e-6, abs=1e-7)
        assert act.attn_logit_max[i] == pytest.approx(largest, rel=1e-6)
    assert all(block.attn.scores_seen is None for block in model.blocks)
    model.record_logit_max(True)
    with torch.no_grad(), watch(model) as short:
        model(x[:ENTROPY_SEQUENCES])
    np.testing.assert_array_equal(short.attn_logit_max, model.logit_max().amax(dim=1).numpy())


@pytest.mark.parametrize("position", ["pre", "post", "peri", "deepnorm", "none"])
def test_each_site_is_summarised_from_its_own_tensor(position):
    """A tensor seen by two hooks is summarised once; every site still holds its own tensor's numbers."""
    cfg = RunConfig(norm_position=position, depth=3, d_model=32, heads=4, seq_len=16)
    model = build_model(cfg, 30)
    seen: dict[str, torch.Tensor] = {}
    handles = [model.blocks[0].register_forward_pre_hook(lambda m, a: seen.__setitem__("input", a[0]))]
    for i, block in enumerate(model.blocks):
        handles.append(block.register_forward_hook(lambda m, a, o, i=i: seen.__setitem__(f"resid{i}", o)))
        for n in model.norm_names():
            keep = lambda m, a, i=i, n=n: seen.__setitem__(f"{n}{i}", a[0])  # noqa: E731
            handles.append(block.get_submodule(n).register_forward_pre_hook(keep))
    x = torch.randint(0, 30, (4, 16), generator=torch.Generator().manual_seed(0))
    with torch.no_grad(), watch(model) as act:
        model(x)
    for h in handles:
        h.remove()
    np.testing.assert_array_equal(act.input_stats, tensor_summary(seen["input"])[1])
    for i in range(3):
        hist, stats = tensor_summary(seen[f"resid{i}"])
        np.testing.assert_array_equal(act.resid_hist[i], hist)
        np.testing.assert_array_equal(act.resid_stats[i], stats)
        for j, n in enumerate(model.norm_names()):
            hist, stats = tensor_summary(seen[f"{n}{i}"])
            np.testing.assert_array_equal(act.norm_in_hist[i, j], hist)
            np.testing.assert_array_equal(act.norm_in_stats[i, j], stats)


def test_grad_norms_and_update_ratio_match_their_definitions():
    cfg = RunConfig(depth=3, d_model=32, heads=4, seq_len=16)
    model = build_model(cfg, 30)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    x = torch.randint(0, 30, (4, 16), generator=torch.Generator().manual_seed(0))
    model(x).square().mean().backward()
    norms = GradNorms(model)
    total = norms.measure()
    assert total == pytest.approx(float(torch.nn.utils.get_total_norm([p.grad for p in model.parameters()])), rel=1e-6)
    for i, block in enumerate(model.blocks):
        for j, name in enumerate(PARAM_NAMES):
            grad = block.get_submodule(name).weight.grad
            assert norms.per_matrix()[i, j] == pytest.approx(float(grad.norm()), rel=1e-6)
        expected = math.sqrt(sum(float(p.grad.square().sum()) for p in block.parameters()))
        assert norms.per_block()[i] == pytest.approx(expected, rel=1e-6)
    before = [[p.detach().clone() for p in b.parameters()] for b in model.blocks]
    ratio = UpdateRatio(model)
    ratio.before()
    opt.step()
    got = ratio.after()
    for i, block in enumerate(model.blocks):
        block = [p.detach() for p in block.parameters()]
        delta = sum(float((p - o).square().sum()) for p, o in zip(block, before[i]))
        base = sum(float(o.square().sum()) for o in before[i])
        assert got[i] == pytest.approx(math.sqrt(delta / base), rel=1e-5)
        assert 0 < got[i] < 1


def test_a_non_finite_gradient_makes_the_total_non_finite():
    model = build_model(RunConfig(depth=2, d_model=32, heads=4, seq_len=16), 30)
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    model.blocks[1].ffn.w2.weight.grad[0, 0] = float("nan")
    assert math.isnan(GradNorms(model).measure())
    model.blocks[1].ffn.w2.weight.grad[0, 0] = float("inf")
    assert math.isinf(GradNorms(model).measure())
