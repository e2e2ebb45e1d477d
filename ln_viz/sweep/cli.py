"""`python -m ln_viz sweep ...`: a grid of runs on this machine's cores or a Ray cluster.

    python -m ln_viz sweep --norm-position post,pre --lr 3e-4,1e-3,3e-3,1e-2 --warmup 0,100 \\
        --depth 6 --steps 300 --seeds 1 [--qk-norm none,layernorm] [--norm-type layernorm,dyt] \\
        [--weight-decay 0,0.1] [--executor local|ray] [--address ADDR] [--json | --csv]

The work estimate and a progress bar go to stderr; the result (a table, one JSON object, or CSV rows)
to stdout. Bad values exit 2 with one `error:` line (ln_viz.cli.main prints LocalizedErrors so).
Imports nothing heavy until it runs: `ln_viz.cli` registers it at import.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import signal
import sys
import threading
from typing import Any

_AXES_HELP = "comma-separated list"
# RunConfig fields the sweep keeps fixed, as flags: the same flags, kinds and ranges as `train`'s
# (ln_viz.config.FIELDS); the swept axes have their own comma-separated flags.
_BASE_FLAGS = ("d_model", "heads", "d_ff", "batch_size", "seq_len", "optimizer", "schedule", "corpus")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the `sweep` subcommand to `python -m ln_viz`."""
    from ln_viz.config import FIELDS, NORM_POSITIONS

    # no abbreviations (ln_viz.cli.parser): `--seed 5`, a `train` habit, is refused, not taken as --seeds
    p = subparsers.add_parser("sweep", help="a grid of runs: lr x warm-up x depth x norm position (the stability map)")
    p.add_argument("--preset", help="start from a named sweep: warmup-map | depth-slice | qk-norm | gi-adam-map")
    p.add_argument("--norm-position", help=f"{_AXES_HELP}: {','.join(NORM_POSITIONS)}")
    p.add_argument("--lr", help=f"{_AXES_HELP} of peak learning rates")
    p.add_argument("--warmup", dest="warmup_steps", help=f"{_AXES_HELP} of warm-up steps")
    p.add_argument("--depth", help=f"{_AXES_HELP} of depths")
    p.add_argument("--qk-norm", help=f"{_AXES_HELP}: none,layernorm,rmsnorm")
    p.add_argument("--norm-type", help=f"{_AXES_HELP}: layernorm,rmsnorm,dyt")
    p.add_argument("--weight-decay", help=f"{_AXES_HELP} of decoupled weight decays")
    p.add_argument("--adam-init", help=f"{_AXES_HELP}: zero,gi (Adam's second moment at the start; gi: GI-Adam)")
    p.add_argument("--seeds", type=int, help="number of seeds per cell (0..N-1), 1-16")
    p.add_argument("--steps", type=int, help="steps of every run")
    for spec in (FIELDS[name] for name in _BASE_FLAGS):
        p.add_argument(spec.cli, dest=spec.name, type=spec.kind if spec.kind is not str else None, help=spec.help())
    from ln_viz.sweep.chooser import EXECUTORS

    p.add_argument("--executor", default="local", choices=EXECUTORS, help="where the runs train")
    p.add_argument("--address", help="ray: the cluster (default $RAY_ADDRESS, else a private one on 127.0.0.1)")
    p.add_argument("--workers", type=int, help="local: runs at once (default: the cores; each takes ~310 MB)")
    p.add_argument("--store", help="keep the cells in this run store and skip the ones it has (resume)")
    p.add_argument("--export", help="also write the cells to this .csv or .parquet file")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print one JSON object: cells, sensitivity, executor")
    out.add_argument("--csv", action="store_true", help="print one CSV row per cell")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)
    return p


def spec_from_args(args: argparse.Namespace) -> Any:
    """The SweepConfig the flags describe, validated (SweepError / ConfigError name the bad flag)."""
    from ln_viz.sweep.presets import BASE, SWEEP_PRESETS
    from ln_viz.sweep.spec import VARIANT_AXES, SweepConfig, SweepError

    if args.preset and args.preset not in SWEEP_PRESETS:
        raise SweepError("sweep.err.preset", "preset", value=args.preset, choices=", ".join(SWEEP_PRESETS))
    spec = SWEEP_PRESETS[args.preset] if args.preset else SweepConfig(base=BASE)
    base_changes = {k: getattr(args, k) for k in _BASE_FLAGS if getattr(args, k) is not None}
    if base_changes.get("corpus") == "user":  # no flag gives the sweep a text
        raise SweepError("sweep.err.user_corpus", "corpus")
    changes: dict[str, Any] = {}
    for name, parse in (("norm_position", str), ("lr", float), ("warmup_steps", int), ("depth", int)):
        raw = getattr(args, name)
        if raw is not None:
            changes[name] = parse_list(name, raw, parse)
    for name, parse in VARIANT_AXES.items():
        raw = getattr(args, name)
        if raw is None:
            continue
        values = parse_list(name, raw, parse)
        if len(values) == 1:  # one value is the base's, as `train`'s flag sets it (the spec stays as before)
            base_changes[name], changes[name] = values[0], ()
        else:
            changes[name] = values
    changes["base"] = spec.base.replace(**base_changes)
    for name in ("seeds", "steps"):
        if getattr(args, name) is not None:
            changes[name] = getattr(args, name)
    return dataclasses.replace(spec, **changes).validate()


def parse_list(name: str, raw: str, parse: type) -> tuple[Any, ...]:
    """ "3e-4,1e-3" -> (0.0003, 0.001); one sentence naming the flag for anything else."""
    from ln_viz.sweep.spec import SweepError

    flag = "--warmup" if name == "warmup_steps" else "--" + name.replace("_", "-")
    items = [s.strip() for s in raw.split(",")]
    try:
        values = tuple(parse(s) for s in items if s)
    except ValueError:
        kind = {float: "numbers", int: "whole numbers", str: "names"}[parse]
        raise SweepError("sweep.err.list", name, flag=flag, kind=kind, value=raw) from None
    if parse is float and not all(math.isfinite(v) for v in values):
        raise SweepError("sweep.err.list", name, flag=flag, kind="finite numbers", value=raw)
    return values


def run(args: argparse.Namespace) -> int:
    """The `sweep` command: check, estimate, train (with a progress bar), report, then export. A store
    that refuses writes is said once and never stops the sweep; the report is printed whatever the
    store or the export does, and exit status 1 says the results were not all kept."""
    from ln_viz.sweep.chooser import make_executor
    from ln_viz.sweep.driver import SweepRun
    from ln_viz.sweep.spec import estimate

    spec = spec_from_args(args)
    check_executor_flags(args)
    if args.export:  # before the training, not after it
        from ln_viz.sweep.storage import check_export_path

        check_export_path(args.export)
    store = _open_store(args)
    executor = make_executor(args.executor, workers=args.workers, address=args.address)
    sweep = SweepRun(spec, executor, store, on_problem=_warn)
    skipped = sweep.progress().skipped
    work = estimate(spec, executor.workers, skip=skipped)
    if not args.quiet:
        note = f" ({skipped} already stored)" if skipped else ""
        sys.stderr.write(f"{work.text()} ({executor.name}){note}\n")
    try:
        final = run_on(executor, sweep, show=not args.quiet)
    finally:
        if store is not None:
            store.close()
    _print_report(build_report(spec, final, executor.name), final, args)
    kept = final.store_problem is None
    if not kept:  # trained, but not (all) stored: said last, after the report that has every cell
        sys.stderr.write(f"error: {final.store_problem}\n")
    if args.export and not write_export(final.results, args.export, store):
        kept = False
    if final.state == "stopped":
        return 130
    return 0 if kept else 1


def check_executor_flags(args: argparse.Namespace) -> None:
    """--workers within what this machine's memory holds (each local worker is a process of ~310 MB),
    --address only with --executor ray (`sweep` and `compare`): SweepError else."""
    from ln_viz.sweep.local import max_workers
    from ln_viz.sweep.spec import SweepError

    hi = max_workers()
    if args.workers is not None and not 1 <= args.workers <= hi:
        raise SweepError("sweep.err.workers", "workers", value=args.workers, hi=hi)
    if args.address and args.executor != "ray":
        raise SweepError("sweep.err.address_local", "address")


# The saver's last word on a trouble (how many cells were not stored): `run` says it once, after the report
_SAID_LAST = ("sweep.err.store_incomplete", "sweep.err.store_incomplete_locked")


def _warn(problem: Any) -> None:
    """A store trouble starting (one line, as `train` says it); its end is no news, and how it ended is
    said by `run`, last (on a full disk that sentence was printed twice: a warning, then the error)."""
    if problem is not None and getattr(problem, "key", None) not in _SAID_LAST:
        sys.stderr.write(f"\nwarning: {problem}\n")


def write_export(results: Any, path: str, store: Any) -> bool:
    """Write the export; a failure after the training says where the results still are."""
    from ln_viz.sweep.storage import export_results
    from ln_viz.text import error_line, one_line

    try:
        export_results(results, path)
    except (OSError, ValueError, ImportError) as e:
        kept = f" and stored in {one_line(str(store.path))}" if store is not None else ""
        line = f"cannot write the export {one_line(path)} ({error_line(e, named=False)})"
        sys.stderr.write(f"error: {line}; the results are printed above{kept}.\n")
        return False
    else:
        return True


def _open_store(args: argparse.Namespace) -> Any:
    """The SweepStore of `--store` (or $LN_VIZ_STORE); None leaves the sweep unstored. Opening it is
    checked before any training: a locked or damaged store is its one sentence, as for `train`."""
    import os

    from ln_viz.sweep.storage import SweepStore

    return SweepStore(args.store) if args.store or os.environ.get("LN_VIZ_STORE") else None


def run_on(executor: Any, sweep: Any, show: bool) -> Any:
    """run_with_progress, then a Ray executor's connection ended (`sweep` and `compare`): a private
    cluster's helper processes end now, not a minute later (issue 21, O1)."""
    try:
        return run_with_progress(sweep, show)
    finally:
        if executor.name == "ray":
            from ln_viz.sweep.ray_exec import disconnect

            disconnect()


def run_with_progress(sweep: Any, show: bool) -> Any:
    """Train in a thread; draw the bar here. Ctrl-C (SIGINT) or SIGTERM stops the sweep: the cells
    finished are kept and the state is `stopped` (a second signal interrupts at once). `sweep`: anything
    with run(), stop() and progress() -> driver.Progress (a SweepRun, a SeedCompare)."""
    box: dict[str, BaseException] = {}
    ended = threading.Event()  # not thread.join: an interrupted join may say a live thread has ended

    def target() -> None:
        try:
            sweep.run()
        except BaseException as e:  # noqa: BLE001 -- re-raised in the main thread
            box["error"] = e
        finally:
            ended.set()

    def on_signal(signum: int, frame: Any) -> None:
        signal.signal(signum, signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL)
        sweep.stop()

    # Only the main thread may set a handler; a signal ignored by the caller (nohup, `&`) stays ignored.
    # SIGTERM as Ctrl-C: the process then ends normally, with its Ray cluster (issue 21, O1).
    main = threading.current_thread() is threading.main_thread()
    signals = [n for n in (signal.SIGINT, signal.SIGTERM) if main and signal.getsignal(n) != signal.SIG_IGN]
    before = {n: signal.signal(n, on_signal) for n in signals}
    thread = threading.Thread(target=target, name="ln-viz-sweep", daemon=True)
    thread.start()
    tty = sys.stderr.isatty()  # a log file gets one line per finished cell, not a redrawn bar
    drawn = -1
    try:
        while not ended.wait(0.25):
            p = sweep.progress()
            if show and (tty or p.done != drawn):
                _draw(p, tty)
                drawn = p.done
    finally:
        for n, handler in before.items():
            signal.signal(n, handler if handler is not None else signal.SIG_DFL)
    if show:
        _draw(sweep.progress(), tty)
        sys.stderr.write("\n" if tty else "")
    if "error" in box:
        raise box["error"]
    return sweep.progress()


def _draw(p: Any, tty: bool) -> None:
    from ln_viz.sweep.spec import duration_text

    width = 30
    filled = int(width * p.fraction)
    eta = f"ETA {duration_text(p.eta_s)}" if p.eta_s is not None and p.state == "running" else p.state
    line = (
        f"[{'#' * filled}{'.' * (width - filled)}] {p.done}/{p.total} runs  "
        f"{p.steps_done}/{p.steps_total} steps  {p.running} training  {eta}"
    )
    sys.stderr.write(f"\r{line}    " if tty else f"{line}\n")
    sys.stderr.flush()


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def build_report(spec: Any, final: Any, executor: str) -> dict[str, Any]:
    """The `--json` object: cells, sensitivity per curve, executor, elapsed_s (and the spec)."""
    from ln_viz.corpus import load_corpus
    from ln_viz.sweep.results import curves
    from ln_viz.sweep.spec import VARIANT_AXES

    cells = [
        {
            "norm_position": r.norm_position,
            "lr": r.lr,
            "warmup_steps": r.warmup_steps,
            "depth": r.depth,
            "seed": r.seed,
            **dict(zip(VARIANT_AXES, r.variant)),
            "status": r.status,
            "final_loss": _finite(r.final_loss),
            "eval_loss": _finite(r.eval_loss),
            "best_loss": _finite(r.best_loss),
            "init_loss": _finite(r.init_loss),
            "diverged_step": r.diverged_step,
            "steps_done": r.steps_done,
            "error": r.error,
        }
        for r in final.results
    ]
    corpus = load_corpus(spec.base.corpus, spec.base.user_text, spec.base.seq_len)
    default_init = math.log(corpus.vocab_size)
    return {
        "cells": cells,
        "sensitivity": [c.to_dict() for c in curves(final.results, default_init)],
        "executor": executor,
        "elapsed_s": round(final.elapsed_s, 3),
        "state": final.state,
        "skipped": final.skipped,
        "unigram_entropy": corpus.unigram_entropy,
        "spec": spec.to_dict(),
    }


def _print_report(report: dict[str, Any], final: Any, args: argparse.Namespace) -> None:
    from ln_viz.sweep.spec import VARIANT_AXES

    if args.json:
        print(json.dumps(report, allow_nan=False))
        return
    if args.csv:
        from ln_viz.sweep.storage import results_frame

        sys.stdout.write(results_frame(final.results).to_csv(index=False, float_format="%.6g"))
        return
    print(f"{'norm':6} {'depth':>5} {'warmup':>6} {'lr':>8} {'seed':>4}  {'status':9} {'final':>7} {'eval':>7}")
    for c in report["cells"]:
        final_loss = f"{c['final_loss']:.3f}" if c["final_loss"] is not None else "-"
        eval_loss = f"{c['eval_loss']:.3f}" if c["eval_loss"] is not None else "-"
        print(
            f"{c['norm_position']:6} {c['depth']:>5} {c['warmup_steps']:>6} {c['lr']:>8.0e} {c['seed']:>4}  "
            f"{c['status']:9} {final_loss:>7} {eval_loss:>7}"
        )
    print("LR sensitivity (Wortsman et al. 2023), per curve:")
    for s in report["sensitivity"]:
        where = f"{s['norm_position']:6} depth {s['depth']:>2} warm-up {s['warmup_steps']:>4}"
        where += "".join(f" {name} {s[name]}" for name in VARIANT_AXES if name in report["spec"])  # swept ones
        print(f"  {where}: {s['lr_sensitivity']:.3f}")
    print(f"{len(report['cells'])} cells in {report['elapsed_s']:.1f} s ({report['executor']})")
