"""`python -m ln_viz ...`: train a run, measure gradients at initialisation, manage stored runs.

Every error a user can cause exits with status 2 and one line `error: ...` on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from ln_viz.config import (
    CORPORA,
    NORM_POSITIONS,
    NORM_TYPES,
    OPTIMIZERS,
    PRESETS,
    SCHEDULES,
    RunConfig,
    preset,
)
from ln_viz.i18n import LocalizedError


class UsageError(Exception):
    """A bad flag: printed as one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse's own errors: one line, status 2
        raise UsageError(message)


def _add_model_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", choices=None, help=f"start from a preset: {', '.join(PRESETS)}")
    p.add_argument("--norm-position", help="|".join(NORM_POSITIONS))
    p.add_argument("--norm-type", help="|".join(NORM_TYPES))
    p.add_argument("--depth", type=int, help="number of blocks, 1-48")
    p.add_argument("--d-model", type=int, help="residual width (divisible by --heads)")
    p.add_argument("--heads", type=int)
    p.add_argument("--d-ff", type=int, help="FFN width (default 4 * d_model)")
    p.add_argument("--batch-size", type=int)
    p.add_argument("--seq-len", type=int)
    p.add_argument("--corpus", help="|".join(CORPORA))
    p.add_argument("--text-file", help="UTF-8 text to train on (sets --corpus user)")
    p.add_argument("--device", help="cpu (default) | cuda")
    p.add_argument("--threads", type=int, help="torch threads (default: torch's choice)")


def build_parser() -> Parser:
    parser = Parser(
        prog="python -m ln_viz",
        description="Watch LayerNorm placement decide whether a transformer trains.",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    tr = sub.add_parser("train", help="train one run and report its loss")
    _add_model_flags(tr)
    tr.add_argument("--optimizer", help="|".join(OPTIMIZERS))
    tr.add_argument("--lr", type=float, help="peak learning rate")
    tr.add_argument(
        "--warmup",
        type=int,
        dest="warmup_steps",
        help="linear warm-up steps (0 = none)",
    )
    tr.add_argument("--schedule", help="|".join(SCHEDULES))
    tr.add_argument("--steps", type=int)
    tr.add_argument("--seed", type=int)
    tr.add_argument("--probe-every", type=int, help="probe every N steps (0 = off)")
    tr.add_argument("--eval-every", type=int, help="held-out loss every N steps (0 = off)")
    tr.add_argument("--json", action="store_true", help="print one JSON object instead of a summary")
    tr.add_argument(
        "--store",
        help="store the run, probes included, in this SQLite file (also: $LN_VIZ_STORE); default: not stored",
    )
    tr.add_argument("--label", help="a label for the stored run")
    tr.set_defaults(func=cmd_train)

    ig = sub.add_parser(
        "init-grads",
        help="gradient norm per layer at initialisation (the paper's Figure 3)",
    )
    _add_model_flags(ig)
    ig.add_argument("--seeds", type=int, default=5, help="number of seeds (0..N-1), 1-100")
    ig.add_argument("--csv", action="store_true", help="print seed,layer,param,grad_norm rows")
    ig.set_defaults(func=cmd_init_grads)

    _add_runs_commands(sub)
    for register in EXTRA_COMMANDS:
        register(sub)
    return parser


# Other modules (the run store) add their subcommands here: a function taking the subparsers object.
EXTRA_COMMANDS: list[Callable[[Any], None]] = []
from ln_viz.sweep.cli import add_parser as _add_sweep_parser  # noqa: E402, I001 -- registers `sweep`
EXTRA_COMMANDS.append(_add_sweep_parser)

_CONFIG_FLAGS = (
    "norm_position",
    "norm_type",
    "depth",
    "d_model",
    "heads",
    "d_ff",
    "batch_size",
    "seq_len",
    "corpus",
    "device",
    "optimizer",
    "lr",
    "warmup_steps",
    "schedule",
    "steps",
    "seed",
    "probe_every",
    "eval_every",
)


def config_from_args(args: argparse.Namespace, base: RunConfig | None = None) -> RunConfig:
    """RunConfig from the preset (or `base`) with every given flag applied, validated."""
    from ln_viz.corpus import decode_text, read_user_file, user_text_corpus

    cfg = preset(args.preset) if args.preset else (base or RunConfig())
    changes = {k: getattr(args, k) for k in _CONFIG_FLAGS if getattr(args, k, None) is not None}
    if args.text_file:
        raw = read_user_file(args.text_file)
        seq = changes.get("seq_len", cfg.seq_len)
        user_text_corpus(raw, seq)  # refuses bad text with its sentence
        changes["corpus"] = "user"
        changes["user_text"] = decode_text(raw)
    return cfg.replace(**changes).validate()


def _set_threads(n: int | None) -> None:
    if n is not None:
        if n < 1:
            raise UsageError(f"--threads must be at least 1, got {n}")
        import torch

        torch.set_num_threads(n)


def _finite_or_none(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def cmd_train(args: argparse.Namespace) -> int:
    from ln_viz.snapshot import RunData
    from ln_viz.train import Trainer

    cfg = config_from_args(args)
    _set_threads(args.threads)
    writer = _train_writer(args)  # before training: a bad --store fails at once, not after the run
    trainer = Trainer(cfg)
    data = RunData(trainer.info)
    if writer is not None:
        writer.begin(trainer.info, label=args.label)
    show_progress = not args.json
    last_draw = 0.0
    # leaving by an exception marks the stored run failed (stopped on Ctrl-C), never left "running"
    with writer or contextlib.nullcontext():
        for snap in trainer:
            if writer is not None:
                writer.add(snap)  # probes included: keeping them is what the store is for
            snap.probes = None  # the report needs scalars only
            data.append(snap)
            now = time.monotonic()
            if show_progress and (now - last_draw > 0.2 or snap.status != "running"):
                _progress(snap, cfg.steps)
                last_draw = now
    if show_progress:
        sys.stderr.write("\n")
    report = {
        "status": data.status,
        "steps_done": data.steps_done,
        "final_loss": _finite_or_none(data.final_loss()),
        "final_loss_window": 10,
        "last_loss": _finite_or_none(data.scalars["loss"][-1]),
        "loss": [_finite_or_none(x) for x in data.scalars["loss"]],
        "lr": data.scalars["lr"],
        "eval_loss": [[s, e] for s, e in zip(data.scalars["step"], data.scalars["eval_loss"]) if math.isfinite(e)],
        "unigram_entropy": trainer.info.unigram_entropy,
        "floor": trainer.info.floor,
        "steps_per_sec": data.steps_done / max(data.scalars["elapsed"][-1], 1e-9),
        "n_params": trainer.info.n_params,
        "config": {k: v for k, v in cfg.to_dict().items() if k != "user_text"},
    }
    if writer is not None:
        report["run_id"] = writer.run_id
    if args.json:
        print(json.dumps(report))
    else:
        fl = report["final_loss"]
        final = f"{fl:.3f} nats" if fl is not None else "none (no finite loss)"
        print(
            f"status {report['status']}  steps {report['steps_done']}/{cfg.steps}  final loss {final} "
            f"(unigram {trainer.info.unigram_entropy:.3f})  {report['steps_per_sec']:.1f} steps/s"
        )
        if writer is not None:
            print(f"stored as run {writer.run_id} in {writer.store.path}")
    return 0


def _train_writer(args: argparse.Namespace) -> Any:
    """A RunWriter when `--store` or $LN_VIZ_STORE says where; None keeps `train` store-free."""
    if not (args.store or os.environ.get("LN_VIZ_STORE")):
        return None
    from ln_viz.store import RunWriter

    return RunWriter(args.store)


def _progress(snap: Any, total: int) -> None:
    width = 30
    done = int(width * snap.step / total)
    eta = (total - snap.step) / snap.steps_per_sec if snap.steps_per_sec > 0 else float("nan")
    sys.stderr.write(
        f"\r[{'#' * done}{'.' * (width - done)}] {snap.step}/{total}  loss {snap.loss:.3f}  "
        f"{snap.steps_per_sec:.1f} steps/s  ETA {eta:.0f}s  {snap.status}   "
    )
    sys.stderr.flush()


def cmd_init_grads(args: argparse.Namespace) -> int:
    from ln_viz.initgrad import init_grads

    if not 1 <= args.seeds <= 100:
        raise UsageError(f"--seeds must be between 1 and 100, got {args.seeds}")
    cfg = config_from_args(args, base=RunConfig(norm_position="post", depth=12))
    _set_threads(args.threads)
    grads, _ = init_grads(cfg, range(args.seeds))
    if args.csv:
        sys.stdout.write(grads.to_csv(index=False, float_format="%.6g"))
    else:
        table = grads.groupby(["layer", "param"]).grad_norm.agg(["mean", "std"]).unstack("param")
        means = table["mean"][list(grads.param.unique())]
        print(f"gradient norm at init, mean over {args.seeds} seeds ({cfg.norm_position}, depth {cfg.depth})")
        print(means.to_string(float_format=lambda v: f"{v:.4f}"))
    return 0


# --- runs: the run store ------------------------------------------------------------------------------
_STORE_HELP = "the run store (default: $LN_VIZ_STORE, else $XDG_DATA_HOME/ln-viz/runs.sqlite)"


def _add_runs_commands(sub: Any) -> None:
    runs = sub.add_parser("runs", help="list, export, import, label and delete stored runs")
    rsub = runs.add_subparsers(dest="runs_command", required=True, parser_class=Parser)

    ls = rsub.add_parser("list", help="the stored runs, newest first")
    ls.add_argument("--json", action="store_true", help="print a JSON list of run objects")
    ls.add_argument("--status", action="append", help="only runs with this status (repeatable)")
    ls.add_argument("--norm-position", action="append", help="only this norm position (repeatable)")
    ls.add_argument("--sort", default="-created", help="created, id, final_loss, depth... ('-' = descending)")
    ls.set_defaults(func=cmd_runs_list)

    ex = rsub.add_parser(
        "export", help="write a run as tables (csv, parquet), chart files (png, svg, html: a folder) or one run file"
    )
    ex.add_argument("run_id", type=int, metavar="RUN_ID")
    ex.add_argument("--format", required=True, choices=("csv", "parquet", "run", "png", "svg", "html"), dest="fmt")
    ex.add_argument(
        "--out", required=True, help="a folder (csv, parquet, png, svg, html) or a file; .gz compresses a run file"
    )
    ex.add_argument("--lang", default="en", choices=("en", "ko"), help="png, svg, html: the charts' language")
    ex.add_argument("--probe-stride", type=int, default=1, help="run file: keep every Nth probe step")
    ex.set_defaults(func=cmd_runs_export)

    im = rsub.add_parser("import", help="add a run file to the store (refused unless valid)")
    im.add_argument("file", metavar="FILE")
    im.add_argument("--json", action="store_true", help='print {"run_id": N, "added": true|false}')
    im.set_defaults(func=cmd_runs_import)

    de = rsub.add_parser("delete", help="delete a run and its data")
    de.add_argument("run_id", type=int, metavar="RUN_ID")
    de.set_defaults(func=cmd_runs_delete)

    la = rsub.add_parser("label", help='label a run ("" clears the label)')
    la.add_argument("run_id", type=int, metavar="RUN_ID")
    la.add_argument("text", metavar="TEXT")
    la.set_defaults(func=cmd_runs_label)

    dm = rsub.add_parser("demo", help="import the bundled demo runs (each once)")
    dm.set_defaults(func=cmd_runs_demo)

    for p in (ls, ex, im, de, la, dm):
        p.add_argument("--store", help=_STORE_HELP)


def _open_store(args: argparse.Namespace, create: bool = False) -> Any:
    """The store named by --store (or the environment, or the default); only writes create one."""
    from ln_viz.store import Store, StoreError, resolve_store_path

    path = resolve_store_path(args.store)
    if not create and not path.exists():
        raise StoreError("err.store_missing", path=str(path))
    return Store(path)


def cmd_runs_list(args: argparse.Namespace) -> int:
    from ln_viz.store import RunFilter, resolve_store_path

    path = resolve_store_path(args.store)
    if not path.exists():  # no store yet is no runs, not an error
        print("[]" if args.json else f"no runs in {path}")
        return 0
    filters = RunFilter(
        status=tuple(args.status) if args.status else None,
        norm_position=tuple(args.norm_position) if args.norm_position else None,
    )
    with _open_store(args) as store:
        runs = store.list_runs(filters, sort=args.sort)
    if args.json:
        print(json.dumps([r.to_dict() for r in runs], allow_nan=False))
        return 0
    if not runs:
        print(f"no runs in {path}")
        return 0
    print(
        f"{'id':>4}  {'created':16}  {'status':11}  {'norm':8}  {'depth':>5}  {'steps':>11}  {'final loss':>10}  label"
    )
    for r in runs:
        created = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.created))
        loss = f"{r.final_loss:.3f}" if r.final_loss is not None else "-"
        steps = f"{r.steps_done}/{r.steps}"
        print(
            f"{r.id:>4}  {created:16}  {r.status:11}  {r.norm_position:8}  {r.depth:>5}  {steps:>11}  "
            f"{loss:>10}  {r.label or ''}"
        )
    return 0


def cmd_runs_export(args: argparse.Namespace) -> int:
    from ln_viz.runfile import export_run

    if args.probe_stride < 1:
        raise UsageError(f"--probe-stride must be at least 1, got {args.probe_stride}")
    with _open_store(args) as store:
        if args.fmt in ("png", "svg", "html"):  # the run's five charts, one file each (ln_viz/export.py)
            from ln_viz.export import export_charts

            paths = export_charts(store.open_run(args.run_id), args.out, formats=(args.fmt,), lang=args.lang)
        else:
            paths = export_run(store, args.run_id, args.fmt, args.out, probe_stride=args.probe_stride)
    for path in paths:
        print(path)
    return 0


def cmd_runs_import(args: argparse.Namespace) -> int:
    from ln_viz.runfile import add_loaded_run, read_run_file

    loaded = read_run_file(args.file)  # refuse a bad file before creating a store for it
    with _open_store(args, create=True) as store:
        run_id, added = add_loaded_run(store, loaded)
    if args.json:
        print(json.dumps({"run_id": run_id, "added": added}))
    elif added:
        print(f"imported run {run_id} from {args.file}")
    else:
        print(f"{args.file} is already in the store as run {run_id}")
    return 0


def cmd_runs_delete(args: argparse.Namespace) -> int:
    with _open_store(args) as store:
        store.delete(args.run_id)
    print(f"deleted run {args.run_id}")
    return 0


def cmd_runs_label(args: argparse.Namespace) -> int:
    with _open_store(args) as store:
        store.label(args.run_id, args.text)
    print(f"labelled run {args.run_id}")
    return 0


def cmd_runs_demo(args: argparse.Namespace) -> int:
    from ln_viz.runfile import load_demo_runs

    with _open_store(args, create=True) as store:
        added = load_demo_runs(store)
    print(f"imported {len(added)} demo runs" + (f": {', '.join(map(str, added))}" if added else ""))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        return args.func(args)
    except (UsageError, LocalizedError) as e:
        sys.stderr.write(f"error: {e}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("\nerror: interrupted\n")
        return 130
