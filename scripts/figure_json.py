"""Build every public chart's figure on recorded data and write each one's `fig.to_json()` to
OUTDIR/<name>.json: run it before and after a change to the charts and `diff -r` the two folders, and
any change a user could see in a figure shows as a changed file.

    .venv/bin/python scripts/figure_json.py /tmp/figs-before
    ... change ln_viz/charts ...
    .venv/bin/python scripts/figure_json.py /tmp/figs-after && diff -r /tmp/figs-before /tmp/figs-after

The data: the shipped demo runs (a normal, a stalled and a deep run), a diverged run cut from one of
them, an empty run, the Init lab's shipped default measurement, and the stability map's shipped default
sweep (with a depth slice, a failed cell and unfinished grids made from it), a small DyT run trained
at once (the instability probes: the demo runs predate them); every builder in English
and Korean, the lecture view on and off, one run and several.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go

from ln_viz import charts
from ln_viz.corpus import load_corpus
from ln_viz.i18n import t
from ln_viz.init_lab import InitLab, bundled_default
from ln_viz.runfile import read_run_file
from ln_viz.snapshot import RunData, Snapshot
from ln_viz.store.transfer import DEMO_DIR
from ln_viz.sweep import charts as sweep_charts
from ln_viz.sweep import curve_charts
from ln_viz.sweep.presets import DEFAULT_MAP, SWEEP_PRESETS
from ln_viz.sweep.results import CellResult, curves
from ln_viz.sweep.spec import SweepConfig

Build = Callable[[str, bool], go.Figure]  # (lang, lecture) -> figure


def demo(name: str) -> RunData:
    """A shipped demo run, read through the run-file reader the app uses."""
    return read_run_file(DEMO_DIR / f"{name}.json.gz").data


def diverged(src: RunData, at: int) -> RunData:
    """`src`'s steps before `at`, then step `at` as the trainer reports a divergence: NaN loss and
    gradient norm, activation probes but no gradient probes."""
    data = RunData(src.info)
    probe_of = {s: i for i, s in enumerate(src.probe_steps)}
    sc = src.scalars
    for k, step in enumerate(sc["step"][: sc["step"].index(at)]):
        arrays = {n: src.probes[n][probe_of[step]] for n in src.probes} if step in probe_of else None
        ev = sc["eval_loss"][k]
        snap = Snapshot(step, sc["loss"][k], sc["lr"][k], sc["grad_norm"][k], sc["elapsed"][k], sc["steps_per_sec"][k])
        data.append(dataclasses.replace(snap, eval_loss=None if math.isnan(ev) else ev, probes=arrays))
    acts = {n: src.probes[n][-1] for n in ("resid_hist", "resid_stats", "attn_entropy", "input_stats")}
    lr = sc["lr"][at - 1]
    data.append(Snapshot(at, math.nan, lr, math.nan, 1.0, 10.0, "diverged", message="msg.diverged", probes=acts))
    return data


def clipped(src: RunData) -> RunData:
    """Three steps, one of them a loss far above the axis: the chart clips it and says so."""
    data = RunData(src.info)
    for k, loss in enumerate([4.0, 1e6, 3.0]):
        data.append(Snapshot(k + 1, loss, 1e-3, 1.0, 0.1, 10.0))
    return data


def with_floor(src: RunData, floor: float) -> RunData:
    """`src` as if its corpus had a known entropy floor (the synthetic corpus has one)."""
    return dataclasses.replace(src, info=dataclasses.replace(src.info, floor=floor))


def single_builders(data: RunData, zrange: tuple[float, float] | None) -> dict[str, Build]:
    """Each builder of one run's charts, in the variants the pages and export call."""
    mid = data.probe_steps[len(data.probe_steps) // 2] if data.probe_steps else 100
    return {
        "loss": lambda lang, p: charts.loss_chart(data, lang, p),
        "grad": lambda lang, p: charts.grad_heatmap(data, lang, lecture=p),
        "grad_shared": lambda lang, p: charts.grad_heatmap(data, lang, zrange=zrange, lecture=p),
        "act": lambda lang, p: charts.act_dist(data, lang, lecture=p),
        "act_mid": lambda lang, p: charts.act_dist(data, lang, step=mid, lecture=p),
        "act_anim": lambda lang, p: charts.act_dist(data, lang, step=mid, animate=True, lecture=p),
        "profile": lambda lang, p: charts.layer_profile(data, lang, lecture=p),
        "profile_mid": lambda lang, p: charts.layer_profile(data, lang, step=mid, lecture=p),
        "ratio": lambda lang, p: charts.update_ratio_chart(data, lang, p),
    }


def compare_builders(runs: list[RunData], labels: list[str]) -> dict[str, Build]:
    """The Compare page's charts of several runs."""
    return {
        "loss": lambda lang, p: charts.loss_chart(runs, lang, p, labels),
        "profile": lambda lang, p: charts.layer_profile(runs, lang, lecture=p, labels=labels),
        "profile_100": lambda lang, p: charts.layer_profile(runs, lang, 100, p, labels),
        "profile_q": lambda lang, p: charts.layer_profile(runs, lang, lecture=p, labels=labels, param="attn.q"),
    }


def instability_builders(data: RunData) -> dict[str, Build]:
    """The Live page's instability-probe charts (its "Instability probes" expander)."""
    mid = data.probe_steps[len(data.probe_steps) // 2] if data.probe_steps else 100
    return {
        "attn_logit": lambda lang, p: charts.attn_logit_chart(data, lang, p),
        "log_z": lambda lang, p: charts.log_z_chart(data, lang, p),
        "massive": lambda lang, p: charts.massive_act_chart(data, lang, lecture=p),
        "massive_mid": lambda lang, p: charts.massive_act_chart(data, lang, step=mid, lecture=p),
        "dyt": lambda lang, p: charts.dyt_saturation_chart(data, lang, lecture=p),
    }


def compare_instability_builders(runs: list[RunData], labels: list[str]) -> dict[str, Build]:
    """The Compare page's instability charts of several runs (and the lecture view's lesson chart)."""
    return {
        "attn_logit": lambda lang, p: charts.attn_logit_chart(runs, lang, p, labels=labels),
        "log_z": lambda lang, p: charts.log_z_chart(runs, lang, p, labels=labels),
    }


def probed_run() -> RunData:
    """A DyT run at lr 1e-2 trained now (seconds): the demo runs were recorded before the instability
    probes and hold NaN for them. One thread, a fixed seed: the same figures on every call."""
    import torch

    from ln_viz.config import RunConfig
    from ln_viz.train import run

    torch.set_num_threads(1)
    cfg = RunConfig(depth=4, d_model=32, heads=4, seq_len=32, batch_size=8, steps=60, probe_every=10, eval_every=0)
    return run(cfg.replace(norm_type="dyt", lr=1e-2))


def init_lab_builders(lab: InitLab) -> dict[str, Build]:
    """The Init lab page's three charts: the shipped default, one position alone, and no data."""
    no_depth = lab.vs_depth.iloc[0:0]
    pre_only = lab.vs_depth[lab.vs_depth["norm_position"] == "pre"]
    return {
        "profile": lambda lang, p: charts.init_grad_profile(lab.grads, lang, "ffn.w2", p),
        "profile_q": lambda lang, p: charts.init_grad_profile(lab.grads, lang, "attn.q", p),
        "profile_pre": lambda lang, p: charts.init_grad_profile({"pre": lab.grads["pre"]}, lang, "ffn.w2", p),
        "profile_none": lambda lang, p: charts.init_grad_profile({}, lang, "ffn.w2", p),
        "depth": lambda lang, p: charts.last_layer_vs_depth_chart(lab.vs_depth, lang, p, "ffn.w2"),
        "depth_pre": lambda lang, p: charts.last_layer_vs_depth_chart(pre_only, lang, p, "ffn.w2"),
        "depth_none": lambda lang, p: charts.last_layer_vs_depth_chart(no_depth, lang, p, "ffn.w2"),
        "resid": lambda lang, p: charts.resid_growth_chart(lab.resid, lang, p),
        "resid_post": lambda lang, p: charts.resid_growth_chart({"post": lab.resid["post"]}, lang, p),
        "resid_none": lambda lang, p: charts.resid_growth_chart({"x": pd.DataFrame()}, lang, p),
    }


def depth_slice(shipped: list[CellResult]) -> list[CellResult]:
    """The depth-slice preset's cells made from the shipped warm-up map's (lr 3e-3): each depth's loss a
    little higher than the last, Post-LN without warm-up diverged from depth 6 on."""
    by_key = {(r.norm_position, r.lr, r.warmup_steps): r for r in shipped}
    out = []
    for c in SWEEP_PRESETS["depth-slice"].cells():
        r = by_key[(c.norm_position, c.lr, c.warmup_steps)]
        loss = (r.final_loss or 0.0) + 0.05 * c.depth
        diverged = c.norm_position == "post" and c.warmup_steps == 0 and c.depth >= 6
        status, final = ("diverged", None) if diverged else (r.status, loss)
        out.append(
            dataclasses.replace(
                r,
                depth=c.depth,
                fingerprint=c.fingerprint,
                status=status,
                final_loss=final,
                diverged_step=40 if diverged else None,
            )
        )
    return out


def seeded(shipped: list[CellResult]) -> list[CellResult]:
    """The shipped warm-up map as if trained over 3 seeds (issue 20's seed spread): seeds 1 and 2 a
    little above and below seed 0, and at each stalled cell seed 2 learned (the seeds disagree there)."""
    out = list(shipped)
    for r in shipped:
        for seed, shift in ((1, 0.04), (2, -0.03)):
            learned = seed == 2 and r.status == "stalled"
            final = (r.final_loss or 0.0) - (0.6 if learned else shift)
            status = "learned" if learned else r.status
            out.append(dataclasses.replace(r, seed=seed, final_loss=final, status=status))
    return out


def sweep_builders() -> dict[str, Build]:
    """The stability map page's charts on the shipped warm-up map: complete, with a failed cell, half
    trained, empty, over 3 seeds; the depth slice; the LR-sensitivity curves; one cell's loss curve."""
    data = json.loads(DEFAULT_MAP.read_text(encoding="utf-8"))
    spec = SweepConfig.from_dict(data["spec"])
    shipped = [CellResult.from_dict(r) for r in data["results"]]
    with_failed = [dataclasses.replace(shipped[5], status="failed", error="RuntimeError: boom"), *shipped[6:]]
    deep, deep_spec = depth_slice(shipped), SWEEP_PRESETS["depth-slice"]
    corpus = load_corpus(spec.base.corpus, None, spec.base.seq_len)
    init, unigram = math.log(corpus.vocab_size), corpus.unigram_entropy
    zrange = sweep_charts.colour_range(shipped, corpus.floor(spec.base.seq_len), init, unigram)
    no_floor = sweep_charts.colour_range(deep, None, init, unigram)
    cell = next(r for r in shipped if r.status == "stalled")
    seeds, seeds_spec = seeded(shipped), dataclasses.replace(spec, seeds=3)

    def heat(sp, rs, zr, x_axis="lr"):
        return lambda lang, p: sweep_charts.stability_heatmap(sp, rs, zr, lang, p, x_axis)

    def sens(rs):
        return lambda lang, p: curve_charts.sensitivity_chart(curves(rs, init), unigram, lang, p, 390 if p else 600)

    def title(lang: str) -> str:
        status = t(f"sweep.status.{cell.status}", lang)
        return t(
            "sweep.ui.cell_title",
            lang,
            norm=charts.norm_label(cell.norm_position, lang),
            lr=sweep_charts.lr_label(cell.lr),
            warmup=cell.warmup_steps,
            depth=cell.depth,
            status=status,
            loss=f"{cell.final_loss:.2f}",
        )

    return {
        "map": heat(spec, shipped, zrange),
        "map_failed": heat(spec, with_failed, zrange),
        "map_half": heat(spec, shipped[::2], zrange),
        "map_empty": heat(spec, [], sweep_charts.colour_range([], None, init, unigram)),
        "map_depth": heat(deep_spec, deep, no_floor, "depth"),
        "map_depth_lr": heat(deep_spec, deep, no_floor),
        "sens": sens(shipped),
        "sens_failed": sens(with_failed),
        "sens_depths": sens(shipped + deep),
        "sens_empty": sens([]),
        "map_seeds": heat(seeds_spec, seeds, zrange),
        "sens_seeds": sens(seeds),
        "cell": lambda lang, p: curve_charts.cell_curve_chart(
            cell.curve, title(lang), unigram, lang, p, cell.norm_position
        ),
    }


def figures() -> Iterator[tuple[str, Build]]:
    """(name, builder) of every figure."""
    normal, stalled, deep = demo("post-ln-warmup"), demo("post-ln-no-warmup"), demo("deep-post-ln")
    runs = {
        "normal": normal,
        "stalled": stalled,
        "deep": deep,
        "diverged": diverged(demo("pre-ln-no-warmup"), 150),
        "empty": RunData(normal.info),
    }
    zrange = charts.shared_zrange([normal, stalled])
    for run_name, data in runs.items():
        for chart, build in single_builders(data, zrange).items():
            yield f"{run_name}-{chart}", build
    yield "floor-loss", single_builders(with_floor(normal, 2.2), zrange)["loss"]
    yield "clipped-loss", single_builders(clipped(normal), zrange)["loss"]
    six = [demo(n) for n in ("post-ln-warmup", "post-ln-no-warmup", "pre-ln-no-warmup", "peri-ln", "no-norm")]
    pairs = {
        "warmup": ([normal, stalled], ["Post-LN + warm-up", "Post-LN"]),
        "deep": ([deep, demo("deep-pre-ln"), demo("deepnorm")], ["post", "pre", "deepnorm"]),
        "five": (six, ["a", "b", "c", "d", "e"]),
        "diverged": ([runs["diverged"], normal], ["diverged", "normal"]),
        "one_diverged": ([runs["diverged"]], ["x"]),
        "empty": ([runs["empty"], runs["empty"]], ["a", "b"]),
    }
    for pair_name, (datas, labels) in pairs.items():
        for chart, build in compare_builders(datas, labels).items():
            yield f"cmp_{pair_name}-{chart}", build
    lab = bundled_default()
    assert lab is not None, "the Init lab's shipped default could not be read"
    for chart, build in init_lab_builders(lab).items():
        yield f"init-{chart}", build
    for chart, build in sweep_builders().items():
        yield f"sweep-{chart}", build
    probed = probed_run()
    for run_name, data in {"probed": probed, "normal": normal, "empty": runs["empty"]}.items():
        for chart, build in instability_builders(data).items():
            yield f"{run_name}-{chart}", build
    compared = {
        "probed": ([probed, probed], ["DyT", "DyT again"]),
        "old": ([probed, normal], ["probed", "recorded before"]),
        "empty": ([runs["empty"], runs["empty"]], ["a", "b"]),
    }
    for pair_name, (datas, labels) in compared.items():
        for chart, build in compare_instability_builders(datas, labels).items():
            yield f"cmp_{pair_name}-{chart}", build


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", type=Path)
    out = parser.parse_args().outdir
    out.mkdir(parents=True, exist_ok=True)
    count = 0
    for name, build in figures():
        for lang in ("en", "ko"):
            for lecture in (False, True):  # the files keep their old "-presenter" suffix: older outputs still compare
                fig = build(lang, lecture)
                (out / f"{name}-{lang}{'-presenter' if lecture else ''}.json").write_text(fig.to_json())
                count += 1
    print(f"{count} figures written to {out}")


if __name__ == "__main__":
    main()
