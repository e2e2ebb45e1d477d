"""ln-viz's speed and memory figures: prints a table and writes it as JSON.

    .venv/bin/python -m benchmarks.bench                 # the full set (about 15 minutes on 2 cores)
    .venv/bin/python -m benchmarks.bench --quick         # tiny sizes, seconds (the smoke test runs this)
    .venv/bin/python -m benchmarks.bench --only steps    # one section: steps, mfu, start, payload, memory, threads,
                                                         # compare (the time to a seed comparison's takeaway), pack

Every timing is repeated (--repeats, default 3) and reported as min / median / max. Nothing here
asserts a target: the figures go into the issue notes, the targets are read off them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from ln_viz.config import RunConfig
from ln_viz.corpus import Batches, english
from ln_viz.model import build_model
from ln_viz.schema import HIST_BINS
from ln_viz.train import Trainer, make_optimizer

ROOT = Path(__file__).resolve().parents[1]

SIZES = [(6, 64), (12, 128), (24, 128)]  # (depth, d_model), batch 32, seq 64: the sizes
QUICK_SIZES = [(2, 32)]


def stats(xs: list[float]) -> dict[str, float]:
    return {"min": min(xs), "median": statistics.median(xs), "max": max(xs)}


def fmt(s: dict[str, float], digits: int = 2) -> str:
    return f"{s['median']:.{digits}f} [{s['min']:.{digits}f}-{s['max']:.{digits}f}]"


def config(depth: int, d: int, quick: bool) -> RunConfig:
    b, t = (8, 16) if quick else (32, 64)
    return RunConfig(depth=depth, d_model=d, heads=4 if d >= 64 else 2, batch_size=b, seq_len=t, eval_every=0)


# --- training loops ------------------------------------------------------------------------------
# Each loop is a stepper: a function doing one training step. The loops being compared take turns
# step by step (round-robin) in one process, so the machine's slow spells (this 2-core VM shares its
# host) fall on all of them alike; steps/s of a loop = its steps / the time spent in its own steps.
def plain_stepper(cfg: RunConfig):
    """The least a training loop can do: batch, forward, loss, backward, Adam step."""
    corpus = english()
    model = build_model(cfg, corpus.vocab_size)
    opt = make_optimizer(cfg, model)
    batches = Batches(corpus.train_ids, cfg.batch_size, cfg.seq_len, cfg.seed)

    def step() -> None:
        x, y = batches.next()
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x).flatten(0, 1), y.flatten()).backward()
        opt.step()

    return step


def trainer_stepper(cfg: RunConfig, steps: int, probe_every: int):
    """ln-viz's own Trainer (divergence checks, snapshots, probes at their cadence): one step per call."""
    it = iter(Trainer(cfg.replace(steps=steps, probe_every=probe_every)))
    return lambda: next(it)


def tensorboard_stepper(cfg: RunConfig, every: int, logdir: Path):
    """The plain loop logging the same per-layer histograms (residual stream after each block and each
    norm's input) and per-matrix gradient norms with TensorBoard's SummaryWriter, every `every` steps."""
    from torch.utils.tensorboard import SummaryWriter

    corpus = english()
    model = build_model(cfg, corpus.vocab_size)
    opt = make_optimizer(cfg, model)
    batches = Batches(corpus.train_ids, cfg.batch_size, cfg.seq_len, cfg.seed)
    writer = SummaryWriter(str(logdir))
    captured: dict[str, torch.Tensor] = {}
    t = 0

    def keep(name):
        return lambda m, args, out=None: captured.__setitem__(name, (out if out is not None else args[0]).detach())

    def step() -> None:
        nonlocal t
        t += 1
        x, y = batches.next()
        handles = []
        if t % every == 0:
            for i, block in enumerate(model.blocks):
                handles.append(block.register_forward_hook(keep(f"resid/{i}")))
                for n in model.norm_names():
                    handles.append(block.get_submodule(n).register_forward_pre_hook(keep(f"{n}_in/{i}")))
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x).flatten(0, 1), y.flatten()).backward()
        if t % every == 0:
            for h in handles:
                h.remove()
            for name, value in captured.items():
                writer.add_histogram(name, value, t, bins="tensorflow")
            for name, p in model.named_parameters():
                writer.add_scalar(f"grad_norm/{name}", float(p.grad.norm()), t)
            writer.flush()
            captured.clear()
        opt.step()

    step.close = writer.close  # type: ignore[attr-defined]
    return step


def round_robin(
    steppers: dict, steps: int, warmup: int = 3, probe_times: dict | None = None, seed: int = 0
) -> dict[str, float]:
    """steps/s of each stepper, stepping them in turn, in a shuffled order each round (a loop that
    always ran right after the TensorBoard loop measured 8 % slower: caches), the orders drawn from
    `seed` (give each repeat its own: with one seed every repeat ran the same orders, and a loop's
    probe steps followed the same heavy steps each time); `warmup` untimed steps each first. With
    `probe_times`, each Trainer loop's step times are kept there as (seconds, was a probe step) pairs."""
    import random

    for _ in range(warmup):
        for f in steppers.values():
            f()
    spent = dict.fromkeys(steppers, 0.0)
    names = list(steppers)
    order = random.Random(seed)
    for _ in range(steps):
        order.shuffle(names)  # a new order each round: no loop always follows the same other loop
        for name in names:
            t0 = time.perf_counter()
            out = steppers[name]()
            took = time.perf_counter() - t0
            spent[name] += took
            if probe_times is not None and out is not None:
                probe_times.setdefault(name, []).append((took, out.probes is not None))
    return {name: steps / s for name, s in spent.items()}


def probe_share(times: list[tuple[float, bool]]) -> tuple[float, float]:
    """(extra ms of a probe step over the loop's mean other step, the extra time of all probe steps
    as % of the time the same steps take without them): the probes' cost measured inside one run,
    free of any difference between two model instances."""
    plain = [t for t, probed in times if not probed]
    probed = [t for t, p in times if p]
    base = sum(plain) / len(plain)
    extra = sum(probed) - len(probed) * base
    return 1000 * extra / max(len(probed), 1), 100 * extra / (len(times) * base)


def cycle_share(
    times: list[tuple[float, bool]], every: int = 10, after: int = 2, fresh: frozenset[int] = frozenset()
) -> tuple[float, float, float]:
    """The probes' cost read off each probe cycle against its own quiet steps, inside one run: a cycle is a probe
    step and the `every - 1` steps after it; its baseline the MEAN of its last `every - 1 - after` steps (the
    steps the probe step's caches and allocations no longer reach), leaving out those in `fresh` (indices into
    `times`: the first step of a loop's block after another loop ran, whose cold caches belong to the benchmark's
    alternation, not to the probes); its extra the probe step and the `after` steps after it, over that baseline.
    Returns (the cycles' extra as % of their time without probes, a probe step's own extra ms, the ms the `after`
    steps after it add): a slow spell of the machine lasting a cycle (about 0.5-5 s here) raises the cycle and
    its baseline alike, and no second model instance enters. A mean, not a median: step times are skewed (at
    6 x 64 the quiet steps' median 49.4 ms against their mean 52.7), so a median baseline sat below what a quiet
    step costs on average and charged the difference to each step of the window (5.7 % against 4.1 % on one run;
    the 5.0 ms "after" the probe step it reported was 0.4 ms measured with the mean)."""
    extra = base_total = own = later = 0.0
    cycles = 0
    for i, (_, probed) in enumerate(times):
        cycle = [t for t, _ in times[i : i + every]]
        if not probed or len(cycle) < every or any(p for _, p in times[i + 1 : i + every]):
            continue
        quiet = [t for j, t in enumerate(cycle[1 + after :], start=i + 1 + after) if j not in fresh]
        if not quiet:
            continue
        base = statistics.fmean(quiet)
        extra += sum(cycle[: 1 + after]) - (1 + after) * base
        base_total += every * base
        own += cycle[0] - base
        later += sum(cycle[1 : 1 + after]) - after * base
        cycles += 1
    if not cycles:
        return float("nan"), float("nan"), float("nan")
    return 100 * extra / base_total, 1000 * own / cycles, 1000 * later / cycles


def consecutive_share(cfg: RunConfig, steps: int, every: int = 10) -> tuple[float, float, list[tuple[float, bool]]]:
    """(probes every `every` steps against probes off, % more time; a probe step's extra ms over the loop's other
    steps; the probed loop's step times, each block's first at a multiple of `every`): the two Trainer loops take
    turns in blocks of `every` consecutive steps, as a run trains (each block holds one probe step, and a step
    finds the caches its own previous step left), the blocks alternating so the machine's slow spells fall on
    both alike."""
    probed, off = trainer_stepper(cfg, steps + 3, every), trainer_stepper(cfg, steps + 3, 0)
    for _ in range(3):
        probed(), off()
    times: list[tuple[float, bool]] = []
    spent = [0.0, 0.0]
    for start in range(0, steps, every):
        for k, f in enumerate((off, probed)):
            for _ in range(min(every, steps - start)):
                t0 = time.perf_counter()
                out = f()
                took = time.perf_counter() - t0
                spent[k] += took
                if k:
                    times.append((took, out.probes is not None))
    return 100 * (spent[1] / spent[0] - 1), probe_share(times)[0], times


def plain_loop(cfg: RunConfig, steps: int) -> float:
    """steps/s of the plain loop alone."""
    return round_robin({"plain": plain_stepper(cfg)}, steps)["plain"]


def timed_steps(depth: int, quick: bool) -> int:
    """Timed steps per loop: after 3 untimed ones, a run of 3 + n steps ends on a multiple of 10, so
    probes every 10th step land on exactly n // 10 + 1 timed steps (a little over a tenth: the
    Trainer also probes its final step)."""
    return 7 if quick else {6: 57, 12: 37}.get(depth, 27)


def consecutive_steps(depth: int, quick: bool) -> int:
    """Timed steps of each loop in blocks of 10: enough whole probe cycles for the per-cycle cost (cycle_share) to
    settle, 9-19 of them (the timed steps start at step 4, the probes at step 10), about 15-40 s a loop."""
    return 17 if quick else {6: 200, 12: 120}.get(depth, 100)


def bench_steps(quick: bool, repeats: int) -> dict:
    """Per size and repeat, fresh loops run round-robin: plain, probes every step, every 10th (every
    probe of schema.PROBES, the instability ones included; DyT's saturation is measured only on DyT
    norms, and these configs use LayerNorm), the Trainer with probes off, TensorBoard every 10th.
    Each cost is 1 - rate / plain rate within a repeat, reported as min / median / max over the repeats."""
    import tempfile

    out = {}
    keys = ("plain", "probes_every_1", "probes_every_10", "probes_off", "tensorboard_every_10")
    for depth, d in QUICK_SIZES if quick else SIZES:
        cfg = config(depth, d, quick)
        steps = timed_steps(depth, quick)
        rates: dict[str, list[float]] = {k: [] for k in keys}
        within: dict[str, list[float]] = {k: [] for k in ("probe_step_extra_ms", "every_10_within_run_pct")}
        within |= {"consecutive_every_10_vs_off_pct": [], "consecutive_probe_step_extra_ms": []}
        within |= {"cycle_cost_every_10_pct": [], "cycle_probe_step_ms": [], "cycle_after_ms": []}
        tb_error = None
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(repeats):
                steppers = {
                    "plain": plain_stepper(cfg),
                    "probes_every_1": trainer_stepper(cfg, steps + 3, 1),
                    "probes_every_10": trainer_stepper(cfg, steps + 3, 10),
                    "probes_off": trainer_stepper(cfg, steps + 3, 0),
                }
                if tb_error is None:
                    try:
                        steppers["tensorboard_every_10"] = tensorboard_stepper(cfg, 10, Path(tmp) / str(r))
                    except ImportError as e:
                        tb_error = str(e)
                times: dict = {}
                for name, rate in round_robin(steppers, steps, probe_times=times, seed=r).items():
                    rates[name].append(rate)
                ms, pct = probe_share(times["probes_every_10"])
                within["probe_step_extra_ms"].append(ms)
                within["every_10_within_run_pct"].append(pct)
                pct, ms, probed_times = consecutive_share(cfg, consecutive_steps(depth, quick))
                within["consecutive_every_10_vs_off_pct"].append(pct)
                within["consecutive_probe_step_extra_ms"].append(ms)
                fresh = frozenset(range(0, len(probed_times), 10))  # each block's first step, after the other loop's
                for key, value in zip(("cycle_cost_every_10_pct", "cycle_probe_step_ms", "cycle_after_ms"),
                                      cycle_share(probed_times, fresh=fresh)):  # fmt: skip
                    within[key].append(value)
                if "tensorboard_every_10" in steppers:
                    steppers["tensorboard_every_10"].close()
        row: dict = {"timed_steps": steps, **{k: stats(v) for k, v in rates.items() if v}}
        row |= {k: stats(v) for k, v in within.items()}
        if tb_error:
            row["tensorboard_every_10"] = {"error": tb_error}
        plain = rates["plain"]
        for key, name in (
            ("probes_every_1", "cost_every_1_pct"),
            ("probes_every_10", "cost_every_10_pct"),
            ("probes_off", "cost_trainer_no_probes_pct"),
            ("tensorboard_every_10", "tensorboard_cost_pct"),
        ):
            if rates[key]:
                row[name] = stats([100 * (1 - a / b) for a, b in zip(rates[key], plain)])
        out[f"depth{depth}_d{d}"] = row

        def rate(name: str, row: dict = row) -> str:
            return fmt(row[name]) if "median" in row.get(name, {}) else str(row.get(name))

        def pct(name: str, row: dict = row) -> str:
            return f"{fmt(row[name], 1)} %" if name in row else "-"

        print(
            f"  ({depth:2d}, {d:3d}) {steps} steps  plain {rate('plain')}  probes/1 {rate('probes_every_1')}"
            f"  probes/10 {rate('probes_every_10')}  probes off {rate('probes_off')}  TB/10 "
            f"{rate('tensorboard_every_10')}\n      cost against plain: probes/1 {pct('cost_every_1_pct')}, "
            f"probes/10 {pct('cost_every_10_pct')} (every probe; two model instances: read the cost off the "
            "probe cycles below), "
            f"Trainer without probes {pct('cost_trainer_no_probes_pct')}, "
            f"TensorBoard/10 {pct('tensorboard_cost_pct')}\n      inside the probes/10 run: a probe step takes "
            f"{fmt(row['probe_step_extra_ms'], 1)} ms more than the others, "
            f"{pct('every_10_within_run_pct')} of the run's time\n      as a run trains (blocks of 10 consecutive "
            "steps, "
            f"probes/10 against probes off): {pct('consecutive_every_10_vs_off_pct')} more time, a probe step "
            f"{fmt(row['consecutive_probe_step_extra_ms'], 1)} ms more than the others\n      the probes' cost at "
            f"every 10th step, each probe cycle against its own quiet steps (the target: within 5 %): "
            f"{pct('cycle_cost_every_10_pct')}; a probe step {fmt(row['cycle_probe_step_ms'], 1)} ms, the two "
            f"steps after it {fmt(row['cycle_after_ms'], 1)} ms over them",
            flush=True,
        )
    return out


# --- FLOP utilisation ----------------------------------------------------------------------------
def flops_per_step(cfg: RunConfig, vocab: int) -> float:
    """Matmul FLOPs of one training step (forward + backward = 3x forward): the projections and FFN,
    the attention scores and mixing, the output head."""
    tokens = cfg.batch_size * cfg.seq_len
    d, f, L, T = cfg.d_model, cfg.ffn_width, cfg.depth, cfg.seq_len
    per_token = L * (2 * 4 * d * d + 2 * 2 * d * f + 2 * 2 * T * d) + 2 * d * vocab
    return 3 * per_token * tokens


def matmul_peak(n: int, repeats: int) -> float:
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    rates = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(5):
            torch.mm(a, b)
        rates.append(5 * 2 * n**3 / (time.perf_counter() - t0))
    return max(rates)


def bench_mfu(quick: bool, repeats: int, steps_result: dict | None) -> dict:
    peak = matmul_peak(512 if quick else 2048, repeats)
    print(f"  matmul peak (torch.mm, {torch.get_num_threads()} threads): {peak / 1e9:.1f} GFLOP/s", flush=True)
    out = {"matmul_peak_gflops": peak / 1e9}
    vocab = english().vocab_size
    for depth, d in QUICK_SIZES if quick else SIZES:
        cfg = config(depth, d, quick)
        rate = (steps_result or {}).get(f"depth{depth}_d{d}", {}).get("plain", {}).get("median")
        if rate is None:
            rate = plain_loop(cfg, 8 if quick else 20)
        fl = flops_per_step(cfg, vocab)
        achieved = fl * rate
        out[f"depth{depth}_d{d}"] = {
            "gflop_per_step": fl / 1e9,
            "achieved_gflops": achieved / 1e9,
            "mfu": achieved / peak,
        }
        print(
            f"  ({depth:2d}, {d:3d})  {fl / 1e9:.1f} GFLOP/step x {rate:.2f} steps/s = {achieved / 1e9:.1f} GFLOP/s "
            f"= {100 * achieved / peak:.0f} % of the matmul peak",
            flush=True,
        )
    return out


# --- start latency -------------------------------------------------------------------------------
def bench_start(quick: bool, repeats: int) -> dict:
    from ln_viz.config import preset
    from ln_viz.runner import Runner

    cfg = preset("pre-ln-no-warmup")
    if quick:
        cfg = cfg.replace(depth=2, d_model=32, heads=2, steps=20)
    out = {}
    for warm in (1, 0):
        times = []
        with Runner(warm_workers=warm) as runner:
            for _ in range(repeats):
                runner.wait_warm(60)
                t0 = time.perf_counter()
                handle = runner.start(cfg)
                while handle.view().steps_done < 1 and not handle.done:
                    time.sleep(0.005)
                times.append(time.perf_counter() - t0)
                handle.stop()
                handle.wait(10)
        key = "warm_worker" if warm else "cold_spawn"
        out[key] = stats(times)
        print(f"  Start -> first snapshot, {key}: {fmt(out[key], 3)} s", flush=True)
    return out


# The live loss chart has drawn at least one training-loss point (its axes, the unigram line and the
# planned learning rate are drawn from the start, before any step).
FIRST_LOSS_POINT = """() => {
    const gd = document.querySelector(".st-key-loss_chart[data-stale='false'] .js-plotly-plot");
    return !!gd && (gd._fullData || []).some(tr => tr.name === "training loss" && tr._length > 0); }"""


def fresh_server_pages(repeats: int):
    """For each repeat: a server launched afresh (its workers still warming up) and a new Chromium page,
    yielded as (page, server URL, launch time) once the server answers its health check; the page is
    closed and the server stopped afterwards."""
    import tempfile

    from playwright.sync_api import sync_playwright

    from tests.e2e.conftest import BROWSER_ARGS, CHROMIUM, Server

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
        for _ in range(repeats):
            with tempfile.TemporaryDirectory() as tmp:
                t_launch = time.perf_counter()
                server = Server(Path(tmp), wait_workers=False)
                try:
                    page = browser.new_page(viewport={"width": 1280, "height": 720})
                    yield page, server.url, t_launch
                    page.close()
                finally:
                    server.stop()
        browser.close()


def bench_browser(repeats: int) -> dict:
    """Start -> first drawn loss point in headless Chromium, on a freshly started server each time: the
    page is opened as soon as the server answers its health check and Start is pressed as soon as it
    can be clicked (the hardest case: the server's workers are still warming up)."""
    times, launch_to_click = [], []
    for page, url, t_launch in fresh_server_pages(repeats):
        page.goto(url)
        page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]')
        page.wait_for_selector(".st-key-start button")
        t0 = time.perf_counter()
        launch_to_click.append(t0 - t_launch)
        page.locator(".st-key-start button").click()
        page.wait_for_function(FIRST_LOSS_POINT, timeout=60_000)
        times.append(time.perf_counter() - t0)
        page.locator(".st-key-stop button").click()
    out = {"start_to_first_drawn_chart_s": stats(times), "server_launch_to_click_s": stats(launch_to_click)}
    print(
        f"  fresh server, Start pressed {fmt(out['server_launch_to_click_s'], 1)} s after launching it: first loss "
        f"point drawn {fmt(out['start_to_first_drawn_chart_s'], 3)} s after Start (Chromium)",
        flush=True,
    )
    return out


def bench_init_lab(repeats: int) -> dict:
    """Opening the Init lab (/init-lab, its defaults) on a freshly started server: seconds from the
    launch of `streamlit run app.py` and from opening the page until all three charts have data."""
    drawn = """() => ["init_profile", "init_vs_depth", "init_resid"].every(k => {
        const gd = document.querySelector(`.st-key-${k}[data-stale='false'] .js-plotly-plot`);
        return !!gd && (gd._fullData || []).some(tr => tr._length > 0); })"""
    from_open, from_launch = [], []
    for page, url, t_launch in fresh_server_pages(repeats):
        t0 = time.perf_counter()
        page.goto(url + "/init-lab")
        page.wait_for_function(drawn, timeout=120_000)
        from_open.append(time.perf_counter() - t0)
        from_launch.append(time.perf_counter() - t_launch)
    out = {"open_to_drawn_s": stats(from_open), "launch_to_drawn_s": stats(from_launch)}
    print(
        f"  Init lab on a fresh server: all three charts drawn {fmt(out['open_to_drawn_s'], 1)} s after opening "
        f"the page ({fmt(out['launch_to_drawn_s'], 1)} s after launching the server)",
        flush=True,
    )
    return out


# --- live payload --------------------------------------------------------------------------------
def synthetic_run(depth: int, d: int, steps: int, probe_every: int):
    """A RunData with realistic shapes (from a real model's RunInfo) and random values."""
    from ln_viz.snapshot import RunData, Snapshot

    cfg = RunConfig(depth=depth, d_model=d, steps=steps, probe_every=probe_every)
    info = Trainer(cfg.replace(steps=1)).info
    info.config = cfg
    data = RunData(info)
    rng = np.random.default_rng(0)
    L, n_norm = depth, len(info.norm_names)
    for t in range(1, steps + 1):
        probes = None
        if t == 1 or t % probe_every == 0 or t == steps:
            hist = rng.random((L, HIST_BINS)).astype(np.float32)
            probes = {
                "resid_hist": hist / hist.sum(1, keepdims=True),
                "resid_stats": rng.random((L, 6)).astype(np.float32),
                "norm_in_hist": rng.random((L, n_norm, HIST_BINS)).astype(np.float32),
                "norm_in_stats": rng.random((L, n_norm, 6)).astype(np.float32),
                "attn_entropy": rng.random(L).astype(np.float32),
                "input_stats": rng.random(6).astype(np.float32),
                "grad_norm": rng.random((L, 6)).astype(np.float32) + 0.1,
                "block_grad_norm": rng.random(L).astype(np.float32) + 0.1,
                "update_ratio": rng.random(L).astype(np.float32) * 1e-2,
            }
        data.append(Snapshot(t, 3 - t / steps, 1e-3, 1.0, t / 10, 10.0, eval_loss=None, probes=probes))
    data.status = "running"
    return data


def bench_payload(quick: bool) -> dict:
    from ln_viz import charts

    depth, steps = (4, 200) if quick else (24, 2000)
    data = synthetic_run(depth, 64, steps, 10)
    figs = {
        "loss_chart": charts.loss_chart(data),
        "grad_heatmap": charts.grad_heatmap(data),
        "update_ratio": charts.update_ratio_chart(data),
        "act_dist": charts.act_dist(data),
        "layer_profile": charts.layer_profile(data),
    }
    t0 = time.perf_counter()
    sizes = {k: len(f.to_json()) for k, f in figs.items()}
    out = {
        "live_refresh_bytes": sum(sizes.values()),
        "per_chart": sizes,
        "json_s": time.perf_counter() - t0,
        "final_animated_act_dist_bytes": len(charts.act_dist(data, animate=True).to_json()),
    }
    print(
        f"  live refresh at depth {depth}, {steps} steps: {out['live_refresh_bytes'] / 1e3:.0f} KB "
        f"({', '.join(f'{k} {v / 1e3:.0f}' for k, v in sizes.items())}); the animated distribution once the "
        f"run ends: {out['final_animated_act_dist_bytes'] / 1e3:.0f} KB",
        flush=True,
    )
    return out


# --- memory --------------------------------------------------------------------------------------
def bench_memory(quick: bool) -> dict:
    """RSS over a depth-24 run of 2,000 steps, at the preset's probe cadence (every 5th step) and at
    every 10th; each in a fresh process that, like the server, never imports torch
    (benchmarks/memory.py)."""
    import subprocess

    out = {}
    for probe_every in (5, 10):
        print(f"  probes every {probe_every} steps:", flush=True)
        quick_flag = ["--quick"] if quick else []
        cmd = [sys.executable, "-m", "benchmarks.memory", "--probe-every", str(probe_every), *quick_flag]
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True)
        lines = done.stdout.rstrip().splitlines()
        print("\n".join(lines[:-1]), flush=True)
        out[f"probe_every_{probe_every}"] = json.loads(lines[-1])
    return out


# --- threads -------------------------------------------------------------------------------------
def bench_threads(quick: bool) -> dict:
    """steps/s per run and in total, with one or two runs training at once and 1 or 2 torch threads each."""
    from ln_viz.config import preset
    from ln_viz.runner import Runner

    cfg = preset("pre-ln-no-warmup").replace(steps=30 if quick else 150, probe_every=10)
    if quick:
        cfg = cfg.replace(depth=2, d_model=32, heads=2)
    out = {}
    for n_runs in (1, 2):
        for threads in (1, 2):
            with Runner(warm_workers=0, threads_per_run=threads) as runner:
                handles = [runner.start(cfg.replace(seed=i)) for i in range(n_runs)]
                for h in handles:
                    h.wait(600)
                rates = []
                for h in handles:
                    sc = h.view().data.scalars
                    rates.append(len(sc["step"]) / sc["elapsed"][-1])
            out[f"{n_runs}run_{threads}thr"] = {"per_run": float(np.mean(rates)), "total": float(np.sum(rates))}
            print(
                f"  {n_runs} run(s) x {threads} thread(s): {np.mean(rates):.1f} steps/s each, "
                f"{np.sum(rates):.1f} in total",
                flush=True,
            )
    return out


# --- compare over seeds --------------------------------------------------------------------------
def bench_compare(quick: bool, repeats: int) -> dict:
    """The time to the takeaway sentence of `python -m ln_viz compare --preset post-vs-pre` with 1 and with
    3 seeds per side: from the call (worker start included) to the gap, on the local pool's 2 workers."""
    from ln_viz.config import COMPARE_PRESETS, preset
    from ln_viz.sweep.compare import SeedCompare, takeaway
    from ln_viz.sweep.local import LocalExecutor

    name_a, name_b, _ = COMPARE_PRESETS["post-vs-pre"]
    a, b = preset(name_a), preset(name_b)
    if quick:
        a, b = (c.replace(depth=2, d_model=32, heads=2, steps=30) for c in (a, b))
    out = {}
    for seeds in (1, 3):
        times, sentence = [], ""
        for _ in range(repeats):
            start = time.perf_counter()
            result = SeedCompare(a, b, seeds, LocalExecutor(workers=2)).run()
            times.append(time.perf_counter() - start)
            sentence = takeaway(result, "en")
        out[f"seeds_{seeds}"] = {**stats(times), "takeaway": sentence}
        print(f"  {seeds} seed(s) per side, {2 * seeds} runs on 2 workers: {fmt(stats(times), 1)} s  {sentence}")
    return out


def bench_pack(quick: bool, repeats: int) -> dict:
    """The offline lecture pack (ln_viz/pack.py) of the post-vs-pre presets (300 steps, probed every 5
    steps and every step): its size in MB and the seconds to build it, one run and the pair, en and ko."""
    from ln_viz.config import PRESETS
    from ln_viz.pack import frame_steps, pack_html
    from ln_viz.train import run

    out: dict = {}
    for every in (5,) if quick else (5, 1):
        cfgs = [PRESETS[n].config.replace(probe_every=every) for n in ("post-ln-no-warmup", "pre-ln-no-warmup")]
        runs = [run(c.replace(steps=30, depth=2, d_model=32) if quick else c) for c in cfgs]
        for name, datas in (("run", runs[1:]), ("pair", runs)):
            for lang in ("en", "ko"):
                times = []
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    page = pack_html(datas, lang)
                    times.append(time.perf_counter() - t0)
                key = f"{name}_every{every}_{lang}"
                out[key] = {"mb": len(page.encode()) / 1e6, "build_s": stats(times), "frames": len(frame_steps(datas))}
                print(f"  {key}: {out[key]['mb']:.2f} MB, {out[key]['frames']} frames, built in "
                      f"{fmt(out[key]['build_s'])} s", flush=True)  # fmt: skip
    return out


SECTIONS = ("steps", "mfu", "start", "browser", "init_lab", "payload", "memory", "threads", "compare", "pack")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run in seconds")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", choices=SECTIONS, action="append", help="run only these sections")
    parser.add_argument("--threads", type=int, default=2, help="torch threads in this process (default 2)")
    parser.add_argument(
        "--sizes", help="(depth, d_model) pairs for steps and mfu, e.g. 6x64,24x128 (default: " + ",".join(
            f"{d}x{m}" for d, m in SIZES) + ")"
    )  # fmt: skip
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "bench.json"))
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.sizes:
        SIZES[:] = [tuple(int(v) for v in pair.split("x")) for pair in args.sizes.split(",")]
    slow = ("browser", "init_lab", "threads", "compare", "pack")
    sections = args.only or [s for s in SECTIONS if not (args.quick and s in slow)]
    result: dict = {
        "machine": {"cpus": os.cpu_count(), "torch": torch.__version__, "threads": torch.get_num_threads()},
        "quick": args.quick,
        "repeats": args.repeats,
    }
    print(f"ln-viz benchmark ({'quick' if args.quick else 'full'}), torch {torch.__version__}, {args.threads} threads")
    if "steps" in sections:
        size = "8 x seq 16" if args.quick else "32 x seq 64"
        print(f"training steps/s, median [min-max] over repeats, batch {size}, the loops taking turns step by step:")
        result["steps"] = bench_steps(args.quick, args.repeats)
    if "mfu" in sections:
        print("model FLOP utilisation:")
        result["mfu"] = bench_mfu(args.quick, args.repeats, result.get("steps"))
    if "start" in sections:
        print("start latency:")
        result["start"] = bench_start(args.quick, args.repeats)
    if "browser" in sections:
        print("browser:")
        result["browser"] = bench_browser(args.repeats)
    if "init_lab" in sections:
        print("Init lab:")
        result["init_lab"] = bench_init_lab(args.repeats)
    if "payload" in sections:
        print("live refresh payload (figures' JSON):")
        result["payload"] = bench_payload(args.quick)
    if "memory" in sections:
        print("memory over a long run:")
        result["memory"] = bench_memory(args.quick)
    if "threads" in sections:
        print("threads per worker:")
        result["threads"] = bench_threads(args.quick)
    if "compare" in sections:
        print("time to the takeaway, post-vs-pre (Post-LN vs Pre-LN, 300 steps), local pool:")
        result["compare"] = bench_compare(args.quick, args.repeats)
    if "pack" in sections:
        print("offline lecture pack, post-vs-pre presets (300 steps):")
        result["pack"] = bench_pack(args.quick, args.repeats)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
