"""Figure builders (ln_viz/charts/): traces and axes on recorded runs (the shipped demo runs and the
Init lab's shipped default, so nothing trains here), empty and diverged runs, the animation frames, the
live page's payload at depth 24, Korean labels, and downsampling."""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable

import numpy as np
import plotly.graph_objects as go
import pytest

from ln_viz import charts
from ln_viz.config import RunConfig
from ln_viz.i18n import EN, KO
from ln_viz.init_lab import InitLab, bundled_default
from ln_viz.schema import HIST_BINS, HIST_EDGES, PARAM_NAMES, STAT_NAMES
from ln_viz.snapshot import RunData, RunInfo, Snapshot
from ln_viz.store.transfer import DEMO_DIR
from tests.runs import demo

DIVERGED_AT = 151  # the step at which `diverged_run` diverges


@pytest.fixture(scope="module")
def lab() -> InitLab:
    """The Init lab's default scenario as shipped: Post- and Pre-LN, depth 12, 3 seeds, depths 2-16."""
    measured = bundled_default()
    assert measured is not None
    return measured


@pytest.fixture(scope="module")
def empty_run(post_run: RunData) -> RunData:
    return RunData(post_run.info)


@pytest.fixture(scope="module")
def diverged_run(post_run: RunData) -> RunData:
    """The recorded run's first 150 steps, then a step as the trainer reports a divergence: NaN loss and
    gradient, activation probes but no gradient probes."""
    data = RunData(post_run.info)
    n = post_run.scalars["step"].index(DIVERGED_AT - 1) + 1
    probes = {s: i for i, s in enumerate(post_run.probe_steps)}
    for k in range(n):
        step = post_run.scalars["step"][k]
        arrays = None
        if step in probes:
            arrays = {name: post_run.probes[name][probes[step]] for name in post_run.probes}
        data.append(
            Snapshot(step, post_run.scalars["loss"][k], post_run.scalars["lr"][k], 1.0, 0.1 * step, 10.0, probes=arrays)
        )
    acts = {name: post_run.probes[name][-1] for name in ("resid_hist", "resid_stats", "attn_entropy", "input_stats")}
    data.append(
        Snapshot(
            DIVERGED_AT, math.nan, 3e-3, math.nan, 2.1, 10.0, status="diverged", message="msg.diverged", probes=acts
        )
    )
    return data


def synthetic_run(depth: int = 24, steps: int = 2000, probe_every: int = 10, seed: int = 0) -> RunData:
    """A RunData with realistic shapes and values, built from fabricated Snapshots (training it would
    take minutes): a noisy decaying loss, held-out loss every 50 steps, probes every `probe_every`."""
    rng = np.random.default_rng(seed)
    cfg = RunConfig(norm_position="pre", depth=depth, steps=steps, probe_every=probe_every, eval_every=50)
    info = RunInfo(cfg, vocab_size=64, n_params=1_200_000, unigram_entropy=3.05, floor=None, norm_names=["ln1", "ln2"])
    data = RunData(info)
    centers = (HIST_EDGES[:-1] + HIST_EDGES[1:]) / 2
    for step in range(1, steps + 1):
        loss = 1.4 + 2.8 * math.exp(-step / 300) + 0.05 * rng.standard_normal()
        probes = None
        if step == 1 or step % probe_every == 0 or step == steps:
            width = 1 + 0.3 * np.arange(1, depth + 1)[:, None]
            hist = np.exp(-0.5 * (centers[None, :] / width) ** 2)
            hist /= hist.sum(1, keepdims=True)
            stats = np.zeros((depth, len(STAT_NAMES)))
            stats[:, 1] = stats[:, 2] = width[:, 0]
            stats[:, 3] = 4 * width[:, 0]
            stats[-3:, 5] = 1e-3
            grads = np.exp(rng.normal(-2, 1, (depth, len(PARAM_NAMES))))
            probes = {
                "resid_hist": hist,
                "resid_stats": stats,
                "norm_in_hist": np.repeat(hist[:, None], 2, 1),
                "norm_in_stats": np.repeat(stats[:, None], 2, 1),
                "attn_entropy": rng.uniform(1, 3, depth),
                "input_stats": stats[0],
                "grad_norm": grads,
                "block_grad_norm": np.sqrt((grads**2).sum(1)),
                "update_ratio": np.exp(rng.normal(np.log(1e-3), 0.5, depth)),
            }
        eval_loss = loss + 0.05 if step % 50 == 0 else None
        data.append(Snapshot(step, loss, 3e-3, 1.0, step * 0.01, 100.0, eval_loss=eval_loss, probes=probes))
    return data


def live_figures(data: RunData, lang: str = "en") -> dict[str, go.Figure]:
    return {
        "loss": charts.loss_chart(data, lang),
        "grad": charts.grad_heatmap(data, lang),
        "act": charts.act_dist(data, lang),
        "profile": charts.layer_profile(data, lang),
        "ratio": charts.update_ratio_chart(data, lang),
        "entropy": charts.attention_entropy_chart(data, lang),
    }


def names(fig: go.Figure) -> list[str]:
    return [tr.name for tr in fig.data if tr.name]


# --- each builder on recorded runs ---------------------------------------------------------------
def test_loss_chart_traces_and_fixed_axes(post_run: RunData) -> None:
    steps = post_run.info.config.steps
    fig = charts.loss_chart(post_run)
    assert {EN["chart.train_loss"], EN["chart.eval_loss"], EN["chart.unigram"], EN["chart.lr"]} <= set(names(fig))
    train = next(tr for tr in fig.data if tr.name == EN["chart.train_loss"])
    assert len(train.x) == steps
    evals = next(tr for tr in fig.data if tr.name == EN["chart.eval_loss"])
    assert list(evals.x) == list(range(50, steps + 1, 50))
    assert tuple(fig.layout.xaxis.range) == (0, steps)
    assert fig.layout.yaxis.range[0] == 0 and fig.layout.yaxis.range[1] > post_run.info.unigram_entropy
    assert fig.layout.yaxis2.overlaying == "y"
    assert fig.layout.uirevision


def test_loss_chart_shows_full_lr_schedule_and_floor(post_run: RunData) -> None:
    cfg = post_run.info.config
    fig = charts.loss_chart(post_run)
    lr = next(tr for tr in fig.data if tr.name == EN["chart.lr"])
    assert lr.x[0] == 1 and lr.x[-1] == cfg.steps
    assert cfg.warmup_steps > 1 and lr.y[0] == pytest.approx(cfg.lr / cfg.warmup_steps, rel=1e-3)  # t/T * lr
    info = RunInfo(cfg, 30, 100, 3.0, floor=2.2, norm_names=["ln1"])
    floored = charts.loss_chart(RunData(info))
    assert EN["chart.floor"] in names(floored)
    assert EN["chart.floor"] not in names(fig)


def test_grad_heatmap(post_run: RunData) -> None:
    L = post_run.info.config.depth
    fig = charts.grad_heatmap(post_run)
    (heat,) = [tr for tr in fig.data if tr.type == "heatmap"]
    assert np.asarray(heat.z).shape == (L, len(post_run.probe_steps))
    assert heat.zmin < heat.zmax
    ticks = heat.colorbar.ticktext
    assert all(not s.startswith("-") for s in ticks)  # real units, not log10 values
    assert tuple(fig.layout.yaxis.range) == (0.5, L + 0.5)


def test_grad_heatmap_shared_zrange(post_run: RunData, pre_run: RunData) -> None:
    z = charts.shared_zrange([post_run, pre_run])
    assert z is not None and z[0] < z[1]
    a, b = charts.grad_heatmap(post_run, zrange=z), charts.grad_heatmap(pre_run, zrange=z)
    assert (a.data[0].zmin, a.data[0].zmax) == (b.data[0].zmin, b.data[0].zmax)
    assert charts.shared_zrange([RunData(post_run.info)]) is None


def test_act_dist_static(post_run: RunData) -> None:
    fig = charts.act_dist(post_run, step=post_run.probe_steps[2] + 2)
    heat = fig.data[0]
    assert heat.type == "heatmap" and np.asarray(heat.z).shape[0] == post_run.info.config.depth
    assert np.asarray(heat.z).dtype == np.uint8  # colour codes: small frames
    assert str(post_run.probe_steps[2]) in title_of(fig)  # the nearest probe step
    assert not fig.frames
    # The value axis (symmetric log: drawn at asinh(value)) is narrowed to ±4, ±16 or ±64 only where
    # nothing is left out; it ends on a histogram edge.
    lo, hi = fig.layout.xaxis.range
    edges = np.asarray(post_run.info.hist_edges)
    assert lo == -hi and np.isclose(np.sinh(hi), edges, rtol=1e-5).any() and np.sinh(hi) <= edges[-1] * (1 + 1e-6)
    x = np.asarray(heat.x)  # cell edges: one more than columns
    assert len(x) == np.asarray(heat.z).shape[1] + 1 and x[0] == lo and x[-1] == hi
    shown = np.asarray(heat.customdata, dtype=float)[..., 1].sum(1) / 100
    np.testing.assert_allclose(shown, post_run.probes["resid_hist"][2].sum(1), rtol=1e-4)


def test_act_dist_frames(post_run: RunData) -> None:
    fig = charts.act_dist(post_run, animate=True, step=post_run.probe_steps[2])
    assert len(fig.frames) == len(post_run.probe_steps)
    (slider,) = fig.layout.sliders
    assert len(slider.steps) == len(post_run.probe_steps) and slider.active == 2
    labels = [b.label for b in fig.layout.updatemenus[0].buttons]
    assert any(EN["chart.play"] in s for s in labels) and any(EN["chart.pause"] in s for s in labels)


def test_act_dist_shows_overflow(post_run: RunData) -> None:
    data = RunData(post_run.info)
    stats = post_run.probes["resid_stats"][0].copy()
    stats[1, STAT_NAMES.index("frac_above")] = 0.25
    arrays = {name: post_run.probes[name][0] for name in post_run.probes}
    data.add_probe(1, {**arrays, "resid_stats": stats})
    fig = charts.act_dist(data)
    heat = fig.data[0]
    # The whole histogram plus an open bin at each side, coloured by the share of values beyond the edges.
    assert np.asarray(heat.z).shape == (post_run.info.config.depth, HIST_BINS + 2)
    shares = np.asarray(heat.customdata, dtype=float)[..., 1]
    assert shares[1, -1] == pytest.approx(25) and shares[0, -1] == 0 and np.asarray(heat.z)[1, -1] > 0
    edge = float(post_run.info.hist_edges[-1])
    assert np.sinh(np.asarray(heat.x)[-1]) > edge and f"> {edge:g}" in fig.layout.xaxis.ticktext


def test_layer_profile(post_run: RunData) -> None:
    fig = charts.layer_profile(post_run)
    assert set(PARAM_NAMES) <= set(names(fig))
    w2 = next(tr for tr in fig.data if tr.name == "ffn.w2")
    assert w2.line.width > max(tr.line.width for tr in fig.data if tr.name in PARAM_NAMES[:-1])
    assert fig.layout.yaxis.type == "log"
    std = fig.data[-1]
    assert std.xaxis == "x2" and len(std.y) == post_run.info.config.depth + 1  # layers 0 (embeddings) .. L


def test_update_ratio_chart(post_run: RunData) -> None:
    fig = charts.update_ratio_chart(post_run)
    # each layer (6 <= 8), the 1e-3 reference and the layer colourbar (no legend: it took 40 % of the chart)
    assert len(fig.data) == post_run.info.config.depth + 2
    assert fig.layout.showlegend is False and fig.data[-2].marker.showscale
    assert fig.layout.yaxis.type == "log"
    deep = charts.update_ratio_chart(synthetic_run(depth=24, steps=100))
    assert len(deep.data) <= 12


def test_compare_builders(post_run: RunData, pre_run: RunData) -> None:
    labels = ["post", "pre"]
    fig = charts.loss_chart([post_run, pre_run], labels=labels)
    assert {"post", "pre"} <= set(names(fig))
    colors = {tr.name: tr.line.color for tr in fig.data}
    assert colors["post"] == charts.NORM_COLORS["post"] and colors["pre"] == charts.NORM_COLORS["pre"]
    step = post_run.probe_steps[3]
    prof = charts.layer_profile([post_run, pre_run], step=step + 1, labels=labels)
    assert len(prof.data) == 4
    assert str(step) in title_of(prof)


def test_init_lab_builders(lab: InitLab) -> None:
    fig = charts.init_grad_profile(lab.grads)
    assert sum(tr.fill == "toself" for tr in fig.data) == 2 and fig.layout.yaxis.type == "log"
    fig = charts.last_layer_vs_depth_chart(lab.vs_depth)
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    ref = next(tr for tr in fig.data if tr.name == EN["chart.ref_inv_sqrt"])
    pre = next(tr for tr in fig.data if tr.name == EN["chart.norm.pre"])
    depths = sorted(lab.vs_depth["depth"].unique())
    assert ref.y[0] == pytest.approx(pre.y[0])
    assert ref.y[-1] == pytest.approx(pre.y[0] * math.sqrt(depths[0] / depths[-1]), rel=1e-5)  # 1/sqrt(L)
    fig = charts.resid_growth_chart(lab.resid)
    band = next(tr for tr in fig.data if tr.name == EN["chart.pre_band"])
    L = int(lab.resid["pre"]["layer"].max())
    assert max(band.y) == pytest.approx(1 + 1.5 * L)
    assert EN["chart.post_ref"] in names(fig)


# --- empty and diverged runs ---------------------------------------------------------------------
def test_empty_run_draws_empty_axes(empty_run: RunData) -> None:
    for name, fig in live_figures(empty_run).items():
        assert isinstance(fig, go.Figure), name
        fig.to_json()
    loss = charts.loss_chart(empty_run)
    assert tuple(loss.layout.xaxis.range) == (0, empty_run.info.config.steps)
    assert any(EN["chart.waiting"] in a.text for a in loss.layout.annotations)
    assert charts.act_dist(empty_run, animate=True).frames == ()
    charts.loss_chart([empty_run, empty_run], labels=["a", "b"]).to_json()
    charts.layer_profile([empty_run], labels=["a"]).to_json()
    charts.init_grad_profile({}).to_json()


def test_diverged_run(diverged_run: RunData) -> None:
    figs = live_figures(diverged_run)
    text = EN["chart.diverged_at"].format(step=DIVERGED_AT)
    assert text in names(figs["loss"])
    marker = next(tr for tr in figs["loss"].data if tr.name == text)
    assert list(marker.x) == [DIVERGED_AT] and np.isfinite(marker.y[0])
    heat = figs["grad"].data[0]
    assert np.isnan(np.asarray(heat.z, dtype=float)[:, -1]).all()  # no gradients at the diverged step
    assert len(charts.act_dist(diverged_run, animate=True).frames) == len(diverged_run.probe_steps)
    for fig in figs.values():
        fig.to_json()
    assert text in names(charts.loss_chart([diverged_run], labels=["x"]))


def test_stalled_band(post_run: RunData) -> None:
    data = RunData(post_run.info)
    for k in range(10):
        data.append(Snapshot(k + 1, 3.0, 1e-3, 1.0, 0.1, 10.0, stalled=k >= 4))
    fig = charts.loss_chart(data)
    assert any(s.type == "rect" and s.x0 == 5 and s.x1 == 10 for s in fig.layout.shapes)


def test_a_late_stall_s_label_ends_inside_the_plot(post_run: RunData) -> None:
    """A stall that starts in the run's second half: its label, anchored at the band's start, ran off the
    right edge ("stalled since step [cut]", issue 21 N14); it now ends at the plot's right edge. An
    early stall's label still starts where its band does."""
    label = EN["chart.stalled_since"].split(":")[0].format(step=8)
    for start, late in ((8, True), (3, False)):
        data = RunData(RunInfo.preview(post_run.info.config.replace(steps=10)))
        for k in range(10):
            data.append(Snapshot(k + 1, 3.0, 1e-3, 1.0, 0.1, 10.0, stalled=k + 1 >= start))
        fig = charts.loss_chart(data, lecture=late)
        note = next(a for a in fig.layout.annotations if "stalled since" in a.text)
        if late:
            assert label in note.text and (note.x, note.xref, note.xanchor) == (1, "x domain", "right")
        else:
            assert (note.x, note.xref, note.xanchor) == (start, "x", "left")


@pytest.mark.parametrize("lecture", [False, True])
def test_huge_losses_are_clipped_and_said(post_run: RunData, lecture: bool) -> None:
    """The clipped values' note is a line of the title's subtitle, stacked under the settings: at the
    plot's top right corner it printed over a long subtitle at half width (issue 21 N13); the plot
    makes room for that line."""
    data = RunData(post_run.info)
    for k, loss in enumerate([4.0, 1e6, 3.0]):
        data.append(Snapshot(k + 1, loss, 1e-3, 1.0, 0.1, 10.0))
    fig = charts.loss_chart(data, lecture=lecture, height=400)
    top = fig.layout.yaxis.range[1]
    assert max(fig.data[0].y) <= top * 1.05
    note = EN["chart.clipped"].format(limit=f"{top:g}", count=1)
    settings, *lines = fig.layout.title.subtitle.text.split("<br>")
    assert " ".join(lines) == note and "lr" in settings  # under the run's settings, on lines of its own
    assert len(lines) == (1 if lecture else 2)  # a phone's chart (~360 px) cut it in one line
    assert not any("runs off" in (a.text or "") for a in fig.layout.annotations)
    calm = RunData(post_run.info)
    for k, loss in enumerate([4.0, 3.5, 3.0]):
        calm.append(Snapshot(k + 1, loss, 1e-3, 1.0, 0.1, 10.0))
    plain = charts.loss_chart(calm, lecture=lecture, height=400)
    assert "<br>" not in plain.layout.title.subtitle.text
    assert fig.layout.margin.t > plain.layout.margin.t + 15  # the room for the note's line
    seeds = charts.seed_loss_chart([[data, data], [calm, calm]], "en", lecture, ["a", "b"], height=400)
    assert "runs off" in seeds.layout.title.subtitle.text  # no subtitle of its own: the note is the subtitle


# --- payload, lecture view, language --------------------------------------------------------------
def test_live_payload_depth24_2000_steps() -> None:
    data = synthetic_run()
    assert len(data.probe_steps) == 201
    sizes = {name: len(fig.to_json()) for name, fig in live_figures(data).items()}
    assert sum(sizes.values()) < 300_000, sizes
    loss = charts.loss_chart(data)
    assert len(loss.data[0].x) <= charts.MAX_LOSS_POINTS
    assert sum(len(fig.data) for fig in live_figures(data).values()) <= 32


def test_long_runs_stay_small() -> None:
    data = synthetic_run(depth=3, steps=2000, probe_every=2)  # 1,001 probe steps
    heat = charts.grad_heatmap(data).data[0]
    assert len(heat.x) <= charts.MAX_HEATMAP_COLUMNS and heat.x[-1] == 2000
    assert np.asarray(heat.z).shape == (3, len(heat.x))


def test_lecture_fonts_are_bigger(post_run: RunData) -> None:
    for build in (charts.loss_chart, charts.grad_heatmap, charts.act_dist, charts.layer_profile):
        normal, big = build(post_run), build(post_run, lecture=True)
        assert normal.layout.font.size >= 14
        assert big.layout.font.size >= 1.3 * normal.layout.font.size


def title_of(fig: go.Figure) -> str:
    """The chart title as a reader sees it: the title, then its subtitle (step, settings)."""
    sub = fig.layout.title.subtitle.text
    return (fig.layout.title.text or "") + (" · " + sub if sub else "")


# paper names (and the optimizer's, and RMS: issue 33's update probes)
ALLOWED_LATIN = ["Post-LN", "Pre-LN", "Peri-LN", "DeepNorm", "Mix-LN", "DyT", "LN", "Adam", "RMS", *PARAM_NAMES]


def visible_texts(fig: go.Figure) -> list[str]:
    """Titles, axis and colorbar titles, legend names, annotations, buttons and hover texts."""
    lay = fig.layout
    out = [title_of(fig)]
    for ax in [k for k in lay if k.startswith(("xaxis", "yaxis"))]:
        out.append(lay[ax].title.text or "")
    out += [a.text or "" for a in lay.annotations]
    out += [b.label for m in lay.updatemenus for b in m.buttons]
    out += [s.currentvalue.prefix or "" for s in lay.sliders]
    for tr in fig.data:
        if tr.showlegend is not False and tr.name:
            out.append(tr.name)
        out.append(getattr(tr, "hovertemplate", None) or "")
        colorbar = getattr(tr, "colorbar", None)
        if colorbar is not None and colorbar.title.text:
            out.append(colorbar.title.text)
    return out


def english_left(text: str) -> list[str]:
    text = re.sub(r"%\{[^}]*\}|\{[^}]*\}|<[^>]*>", " ", text)  # hover and format placeholders, HTML tags
    for token in sorted(ALLOWED_LATIN, key=len, reverse=True):
        text = text.replace(token, " ")
    return re.findall(r"[A-Za-z]{2,}", text)


def test_korean_labels(post_run: RunData, pre_run: RunData, lab: InitLab) -> None:
    figs = [
        *live_figures(post_run, "ko").values(),
        charts.act_dist(post_run, "ko", animate=True),
        charts.loss_chart([post_run, pre_run], "ko", labels=["Post-LN", "Pre-LN"]),
        charts.layer_profile([post_run, pre_run], "ko", labels=["Post-LN", "Pre-LN"]),
        charts.init_grad_profile({"pre": lab.grads["pre"]}, "ko"),
        charts.last_layer_vs_depth_chart(lab.vs_depth, "ko"),
        charts.resid_growth_chart({"pre": lab.resid["pre"]}, "ko"),
    ]
    for fig in figs:
        texts = visible_texts(fig)
        assert re.search("[가-힣]", title_of(fig)), title_of(fig)
        for text in texts:
            assert not english_left(text), (text, english_left(text))


def test_chart_catalog_is_translated() -> None:
    keys = [k for k in EN if k.startswith("chart.")]
    assert keys and all(k in KO for k in keys)
    for k in keys:
        if not english_left(KO[k]):
            continue
        raise AssertionError(f"{k}: {KO[k]!r}")


# --- downsampling --------------------------------------------------------------------------------
def test_downsample_keeps_ends_and_extremes() -> None:
    rng = np.random.default_rng(1)
    y = np.cumsum(rng.standard_normal(10_000))
    y[1234] = 1e3
    y[4321] = -1e3
    x = np.arange(10_000)
    xs, ys = charts.downsample(x, y, 500)
    assert len(xs) <= 500
    assert xs[0] == 0 and xs[-1] == 9_999
    assert 1234 in xs and 4321 in xs
    assert ys.max() == y.max() and ys.min() == y.min()
    assert np.all(np.diff(xs) > 0)
    np.testing.assert_array_equal(xs[-250:], x[-250:])  # the recent half at full resolution


def test_downsample_short_and_nan() -> None:
    x = np.arange(10)
    xs, ys = charts.downsample(x, x * 2.0, 50)
    np.testing.assert_array_equal(xs, x)
    y = np.full(1000, np.nan)
    y[10] = 5.0
    xs, ys = charts.downsample(np.arange(1000), y, 100)
    assert len(xs) <= 100 and 10 in xs and xs[0] == 0 and xs[-1] == 999
    with pytest.raises(ValueError):
        charts.downsample(x, x, 2)


# --- the lecture view: scaling, heights, collisions, one colour convention ------------------------
def all_builders(post_run: RunData, pre_run: RunData, lab: InitLab) -> dict[str, Callable[..., go.Figure]]:
    """Every public builder, as a function of (lecture, height)."""
    two = [post_run, pre_run]
    return {
        "loss": lambda **kw: charts.loss_chart(post_run, **kw),
        "compare_loss": lambda **kw: charts.loss_chart(two, labels=["a", "b"], **kw),
        "grad": lambda **kw: charts.grad_heatmap(post_run, **kw),
        "ratio": lambda **kw: charts.update_ratio_chart(post_run, **kw),
        "act": lambda **kw: charts.act_dist(post_run, animate=True, **kw),
        "profile": lambda **kw: charts.layer_profile(post_run, **kw),
        "compare_profile": lambda **kw: charts.layer_profile(two, labels=["a", "b"], **kw),
        "entropy": lambda **kw: charts.attention_entropy_chart(post_run, **kw),
        "init_profile": lambda **kw: charts.init_grad_profile(lab.grads, **kw),
        "init_depth": lambda **kw: charts.last_layer_vs_depth_chart(lab.vs_depth, **kw),
        "init_resid": lambda **kw: charts.resid_growth_chart(lab.resid, **kw),
    }


def test_every_builder_takes_the_pages_height(post_run: RunData, pre_run: RunData, lab: InitLab) -> None:
    for name, build in all_builders(post_run, pre_run, lab).items():
        assert build(height=640).layout.height == 640, name
        assert build().layout.height is None, name  # Plotly's default, as before


def test_lecture_text_is_large_and_margins_are_not_inflated(post_run: RunData, pre_run: RunData, lab) -> None:
    for name, build in all_builders(post_run, pre_run, lab).items():
        normal, big = build(lecture=False, height=500), build(lecture=True, height=500)
        lay = big.layout
        assert lay.font.size >= 18, name  # tick labels inherit it: readable from the back of a room
        for ax in [k for k in lay if k.startswith(("xaxis", "yaxis"))]:
            assert lay[ax].tickfont.size is None or lay[ax].tickfont.size >= 18, (name, ax)
        # the left and right margins stay as they are; only the room the larger title needs grows
        assert (lay.margin.l, lay.margin.r) == (normal.layout.margin.l, normal.layout.margin.r), name
        assert lay.margin.t <= normal.layout.margin.t * 1.45, name


def test_legends_cannot_sit_on_the_x_title(post_run: RunData, pre_run: RunData, lab: InitLab) -> None:
    """A legend under the plot is placed against the figure's bottom edge (container), where Plotly
    reserves its room below the x axis title; at a paper fraction under the plot it ran into the x
    title on short charts. Legends elsewhere sit above the plot or at its right."""
    for name, build in all_builders(post_run, pre_run, lab).items():
        for lecture in (False, True):
            lay = build(lecture=lecture, height=320).layout
            if lay.showlegend is False:
                continue
            legend = lay.legend
            below = legend.y is not None and legend.y <= 0
            assert not below or (legend.yref == "container" and legend.yanchor == "bottom"), name
            assert legend.y is None or legend.y <= 0 or legend.y >= 1 or (legend.x or 0) >= 1, name


def test_titles_split_so_half_width_charts_keep_them(post_run: RunData, lab: InitLab) -> None:
    prof = charts.layer_profile(post_run)
    assert prof.layout.title.text == EN["chart.profile_title_empty"]  # the step goes to the subtitle
    assert str(post_run.probe_steps[-1]) in prof.layout.title.subtitle.text
    depth = charts.last_layer_vs_depth_chart(lab.vs_depth)
    assert len(depth.layout.title.text) <= 40 and depth.layout.title.subtitle.text


def test_loss_title_names_lr_warmup_and_optimizer(post_run: RunData) -> None:
    sub = charts.loss_chart(post_run).layout.title.subtitle.text
    assert "lr 3e-3" in sub and EN["chart.warmup_steps"].format(n=100) in sub and "SGD" not in sub
    cfg = post_run.info.config.replace(optimizer="sgd", lr=0.5, warmup_steps=0)
    sgd = charts.loss_chart(RunData(dataclasses.replace(post_run.info, config=cfg))).layout.title.subtitle.text
    assert "SGD" in sgd
    assert "lr 0.5" in sgd and EN["chart.no_warmup"] in sgd


def test_long_y_titles_are_wrapped_to_their_axis(post_run: RunData, lab: InitLab) -> None:
    title = charts.resid_growth_chart(lab.resid, "ko", lecture=True).layout.yaxis.title.text
    assert "<br>" in title  # E‖x_l‖² / d (좌표당 평균 제곱) is longer than its axis: it ran into the title
    assert "<br>" not in charts.loss_chart(post_run, height=900).layout.yaxis.title.text  # short ones stay


def luminance(color: str) -> float:
    r, g, b = (
        (float(v) for v in re.findall(r"[0-9.]+", color)[:3])
        if color.startswith("rgb")
        else (int(color.lstrip("#")[i : i + 2], 16) for i in (0, 2, 4))
    )
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_one_colour_convention_bright_means_large(post_run: RunData) -> None:
    act = charts.act_dist(post_run).data[0].colorscale
    rare, common = act[2][1], act[-1][1]  # act[0..1]: white, the empty bins
    assert luminance(common) > luminance(rare) + 100
    grad = charts.grad_heatmap(post_run).data[0].colorscale
    assert luminance(grad[-1][1]) > luminance(grad[0][1]) + 100
    ent = charts.attention_entropy_chart(post_run).data[0].colorscale
    assert luminance(ent[-1][1]) > luminance(ent[0][1]) + 100


def test_diverged_at_step_2_fills_the_charts(post_run: RunData) -> None:
    data = RunData(post_run.info)
    arrays = {name: post_run.probes[name][0] for name in post_run.probes}
    data.append(Snapshot(1, 4.2, 1e-3, 1.0, 0.1, 10.0, probes=arrays))
    data.append(Snapshot(2, math.nan, 2e-3, math.nan, 0.2, 10.0, status="diverged", message="msg.diverged"))
    figs = live_figures(data)
    for name in ("loss", "grad", "ratio", "entropy"):
        end = figs[name].layout.xaxis.range[1]
        assert 2 < end <= 4, (name, end)  # not the planned 300 steps, where step 1 is a sliver
    # the label sits inside the plot, under the cross near the top, never up in the title
    label = next(a for a in figs["loss"].layout.annotations if a.text == EN["chart.diverged_at"].format(step=2))
    assert label.ay > 0 and label.yanchor == "top"
    heat = next(a for a in figs["grad"].layout.annotations if "2" in a.text)
    assert heat.yref == "paper" and heat.y == 1 and heat.yanchor == "top"
    msg = EN["msg.diverged_at"].format(step=2)
    assert "step 2" in msg and "Adam" in msg and "warm-up" in msg and "lower" in msg
    assert "2" in KO["msg.diverged_at"].format(step=2) and "Adam" in KO["msg.diverged_at"]


def test_deep_pre_ln_widening_is_inside_the_histogram() -> None:
    """At depth 24, Pre-LN's stream reaches a std of ~60: every layer's bulk must be inside the bins
    (the old ±16 edges put most of layers 9-24 into the overflow bin), and the chart must show it."""
    deep = demo("deep-pre-ln")
    stats = deep.probe("resid_stats")[-1]
    beyond = stats[:, STAT_NAMES.index("frac_below")] + stats[:, STAT_NAMES.index("frac_above")]
    assert beyond.max() < 0.01, beyond
    std = stats[:, STAT_NAMES.index("std")]
    assert std[-1] > 3 * std[0]  # it does widen, layer by layer
    fig = charts.act_dist(deep)
    share = np.asarray(fig.data[0].customdata, dtype=float)[..., 1]  # % per drawn cell
    if fig.layout.xaxis.ticktext[0].startswith("<"):  # open bins drawn: they hold almost nothing
        assert share[:, [0, -1]].max() < 1.0
    inner = np.sinh(np.asarray(fig.data[1].x, dtype=object)[np.asarray(fig.data[1].y) == 24].astype(float))
    np.testing.assert_allclose(np.abs(inner), std[-1], rtol=2e-3)  # the ±1 std marks at their real place


def test_profile_clips_the_gradient_axis_and_says_so(post_run: RunData) -> None:
    data = RunData(post_run.info)
    arrays = {name: post_run.probes[name][-1].copy() for name in post_run.probes}
    arrays["grad_norm"][:, PARAM_NAMES.index("attn.k")] = 1e-15
    data.add_probe(1, arrays)
    fig = charts.layer_profile(data)
    lo, hi = fig.layout.yaxis.range
    assert hi - lo <= 6.5  # decades: attn.k's 1e-15 no longer squashes the ffn.w2 line
    assert any(EN["chart.grad_floor_note"].split("{")[0] in (a.text or "") for a in fig.layout.annotations) or any(
        "axis floor" in (a.text or "") for a in fig.layout.annotations
    )
    k = next(tr for tr in fig.data if tr.name == "attn.k")
    assert min(k.y) >= 10**lo * 0.99 and k.customdata[0] == pytest.approx(1e-15)


def test_update_ratio_needs_no_legend(post_run: RunData) -> None:
    deep = charts.update_ratio_chart(synthetic_run(depth=24, steps=100))
    assert deep.layout.showlegend is False
    bar = next(tr for tr in deep.data if tr.marker.showscale)
    assert bar.marker.cmax == 24 and 24 in bar.marker.colorbar.tickvals


def test_depth_chosen_is_on_the_depth_chart(lab: InitLab) -> None:
    depth = int(lab.grads["pre"]["layer"].max())  # the per-layer measurement's depth (12)
    assert depth not in set(lab.vs_depth["depth"])
    fig = charts.last_layer_vs_depth_chart(lab.vs_depth, chosen=lab.grads)
    assert depth in fig.layout.xaxis.tickvals
    pre = next(tr for tr in fig.data if tr.name == "Pre-LN")
    assert depth in list(pre.x)


def test_attention_entropy_chart(post_run: RunData) -> None:
    fig = charts.attention_entropy_chart(post_run)
    heat = fig.data[0]
    L = post_run.info.config.depth
    assert np.asarray(heat.z).shape == (L, len(post_run.probe_steps))
    assert list(heat.y) == list(range(1, L + 1)) and list(heat.x) == list(post_run.probe_steps)
    assert heat.zmin == 0 and heat.zmax == pytest.approx(charts.uniform_entropy(post_run.info.config.seq_len))
    assert np.nanmax(heat.z) <= heat.zmax + 1e-6  # no layer spreads wider than even attention
    empty = charts.attention_entropy_chart(RunData(post_run.info))
    assert any(a.text == EN["chart.waiting"] for a in empty.layout.annotations)
    assert "Zhai" in EN["caption.attn_entropy"] and "Zhai" in KO["caption.attn_entropy"]
    assert re.search("[가-힣]", title_of(charts.attention_entropy_chart(post_run, "ko")))


def test_runs_table_says_diverged_not_a_huge_loss() -> None:
    from ln_viz.store import RunSummary
    from ln_viz.views.runs_list import final_loss_text

    row = RunSummary(
        1,
        0.0,
        0.0,
        None,
        "diverged",
        None,
        "none",
        "layernorm",
        6,
        64,
        0.2,
        0,
        300,
        33,
        5662833.487,
        "english",
        0,
        None,
        "train",
    )
    assert final_loss_text(row, "en") == EN["status.diverged"]
    assert final_loss_text(dataclasses.replace(row, status="completed", final_loss=1.9644), "en") == "1.964"


def test_theory_states_the_range_that_is_drawn() -> None:
    from ln_viz.charts.dist import VALUE_WIDTHS
    from ln_viz.schema import HIST_LIMIT

    for lang in ("en", "ko"):
        text = (DEMO_DIR.parents[1] / "content" / f"theory.{lang}.md").read_text()
        assert f"−{HIST_LIMIT:g}" in text and "(from −16 to 16)" not in text and "(−16에서 16까지)" not in text
        for w in (*VALUE_WIDTHS, HIST_LIMIT):
            assert f"±{w:g}" in text, (lang, w)
        assert "asinh" in text


def test_short_distribution_chart_leaves_play_to_the_page(pre_run: RunData) -> None:
    """In a lecture layout's small panel, Play and the slider would leave no plot: the frames stay (the
    page's own step control drives them), the controls go, and the plot keeps its room."""
    small = charts.act_dist(pre_run, animate=True, lecture=True, height=360)
    assert len(small.frames) == len(pre_run.probe_steps) and not small.layout.sliders
    assert small.layout.margin.b < 100
    tall = charts.act_dist(pre_run, animate=True, lecture=True, height=700)
    assert tall.layout.sliders and tall.layout.updatemenus


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_lecture_view_distribution_has_five_value_labels_and_a_one_line_layer_title(pre_run, lang) -> None:
    """Review check 9 (issue 21 N12): in the lecture view's quarter-screen panel the 24-px value labels
    crowded (−1, 0 and 1 over each other, turned on their side) and the layer title wrapped to three lines;
    now 0, ±the edge and one value between, and the title is the one word. The Live page keeps them all."""
    lecture = charts.act_dist(pre_run, lang, lecture=True, height=420)
    labels = list(lecture.layout.xaxis.ticktext)
    assert len(labels) == 5 and labels[2] == "0" and labels[1] == "−" + labels[3], labels
    assert lecture.layout.yaxis.title.text == {"en": "layer", "ko": "층"}[lang]
    assert lecture.layout.xaxis.tickangle == 0  # level, not turned on their side
    assert list(lecture.data[0].colorbar.ticktext) == ["0.001%", "10%"]  # its ends: three labels met
    page = charts.act_dist(pre_run, lang, height=420)
    assert len(page.layout.xaxis.ticktext) > 5 and "1 =" in page.layout.yaxis.title.text
    profile = charts.layer_profile(pre_run, lang, lecture=True, height=420)
    assert profile.layout.xaxis2.title.text == {"en": "layer (0 = embeddings)", "ko": "층 (0 = 임베딩)"}[lang]


def test_the_instability_charts_are_labelled_in_korean() -> None:
    from ln_viz.config import RunConfig
    from ln_viz.train import run

    cfg = RunConfig(depth=2, d_model=16, heads=2, seq_len=16, batch_size=4, steps=10, probe_every=5, eval_every=0)
    dyt = run(cfg.replace(norm_type="dyt"))
    figs = [
        charts.attn_logit_chart(dyt, "ko"),
        charts.log_z_chart(dyt, "ko"),
        charts.massive_act_chart(dyt, "ko"),
        charts.dyt_saturation_chart(dyt, "ko"),
        charts.dyt_saturation_chart(run(cfg), "ko"),  # not DyT: the note says so
    ]
    for fig in figs:
        assert re.search("[가-힣]", title_of(fig)), title_of(fig)
        for text in visible_texts(fig):
            assert not english_left(text), (text, english_left(text))
    assert [a.text for a in figs[-1].layout.annotations][-1] == KO["chart.not_dyt"]
    assert not figs[-1].layout.showlegend  # no norm legend over an empty chart


@pytest.mark.parametrize("lecture", [False, True])
@pytest.mark.parametrize("seeds", [1, 2])
def test_compares_loss_chart_draws_each_runs_planned_learning_rate(lecture, seeds):
    """Issue 21 N28: in "+ warm-up" the ramp that explains the drop is on Compare's loss chart, as on
    Live's: one dotted line per run on the right axis (the warm-up run's rising from near 0 to the peak over
    its warm-up, the other's flat at the peak), named in its hover; runs with one schedule share one line."""
    warm, cold = demo("post-ln-warmup"), demo("post-ln-no-warmup")
    if seeds == 1:
        fig = charts.loss_chart([warm, cold], "en", lecture, ["warm-up 100", "no warm-up"])
    else:
        fig = charts.seed_loss_chart([[warm, warm], [cold, cold]], "en", lecture, ["warm-up 100", "no warm-up"])
    lines = [tr for tr in fig.data if tr.yaxis == "y2"]
    assert [tr.name.split(" · ")[-1] for tr in lines] == ["warm-up 100", "no warm-up"]
    peak, ramp = warm.info.config.lr, warm.info.config.warmup_steps
    ys = [np.asarray(tr.y, dtype=float) for tr in lines]
    xs = [np.asarray(tr.x) for tr in lines]
    assert ys[0][0] < peak / 10 and ys[0][xs[0] >= ramp].min() == pytest.approx(peak, rel=1e-3)
    assert np.allclose(ys[1], cold.info.config.lr)
    assert fig.layout.yaxis2.side == "right" and fig.layout.yaxis2.range[1] >= peak
    shared = charts.loss_chart([cold, demo("pre-ln-no-warmup")], "en", lecture)  # the same schedule
    assert len([tr for tr in shared.data if tr.yaxis == "y2"]) == 1
