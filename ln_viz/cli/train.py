"""`python -m ln_viz train` and `init-grads`: one run trained and reported, the gradient norm of every
layer at initialisation; both take a flag per RunConfig field (`config_from_args`)."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time
from typing import Any

from ln_viz.cli.parser import UsageError
from ln_viz.config import FIELDS, PRESETS, ConfigError, RunConfig, on_off, preset
from ln_viz.text import one_line


def _add_config_flags(p: argparse.ArgumentParser, train: bool = False) -> None:
    """--preset, one flag per RunConfig field that has one (`add_field_flags`), the text file and the
    threads."""
    p.add_argument("--preset", help=f"start from a preset: {', '.join(PRESETS)}")
    add_field_flags(p, train)
    p.add_argument("--threads", type=int, help="torch threads (default: torch's choice)")


def add_field_flags(p: argparse.ArgumentParser, train: bool = False) -> None:
    """One flag per RunConfig field that has one (config.FIELDS: its range and kind; `train` adds the
    training-only ones) and --text-file: what `config_from_args` reads (`compare` shares them too)."""
    for spec in FIELDS.values():
        if spec.cli and (train or not spec.train_only):
            # argparse says "invalid int value: 'x'"; a bool flag takes on/off
            kind = {str: None, bool: on_off}.get(spec.kind, spec.kind)
            p.add_argument(spec.cli, dest=spec.name, type=kind, help=spec.help())
    p.add_argument("--text-file", help="UTF-8 text to train on (sets --corpus user)")


def add_train_commands(sub: Any) -> None:
    """The `train` and `init-grads` subcommands, added to the top-level parser `sub`."""
    tr = sub.add_parser("train", help="train one run and report its loss")
    _add_config_flags(tr, train=True)
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
    _add_config_flags(ig)
    ig.add_argument("--seeds", type=int, default=5, help="number of seeds (0..N-1), 1-100")
    ig.add_argument("--csv", action="store_true", help="print seed,layer,param,grad_norm rows")
    ig.set_defaults(func=cmd_init_grads)


def config_from_args(
    args: argparse.Namespace, base: RunConfig | None = None, extra: dict[str, Any] | None = None
) -> RunConfig:
    """RunConfig from the preset (or `base`) with every given flag applied, then `extra` (one side of
    `compare`), validated."""
    from ln_viz.corpus import decode_text, read_user_file, user_text_corpus

    name = getattr(args, "preset", None)  # `compare`'s --preset names a scenario, kept elsewhere
    cfg = preset(name) if name else (base or RunConfig())
    changes = {k: v for k in FIELDS if (v := getattr(args, k, None)) is not None} | (extra or {})
    if args.text_file:
        if changes.get("corpus") not in (None, "user"):  # the file would be read, then silently not trained on
            raise ConfigError("err.text_file_corpus", "corpus", value=changes["corpus"])
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
    """`train`: one run, a progress bar on stderr, a summary (or --json) on stdout."""
    from ln_viz.snapshot import RunData
    from ln_viz.train import Trainer
    from ln_viz.words import unused_settings

    cfg = config_from_args(args)
    for note in unused_settings(cfg, "en"):  # legal, but the flag changes nothing: say so (hostile round 4 L13)
        sys.stderr.write(f"note: {note}\n")
    _set_threads(args.threads)
    if args.label is not None:  # a label the store would refuse, said before anything is built
        from ln_viz.store.rows import check_label

        check_label(args.label)
    writer = _train_writer(args)  # before training: a bad --store fails at once, not after the run
    trainer = Trainer(cfg)
    data = RunData(trainer.info)
    if writer is not None:
        writer.begin(trainer.info, label=args.label)
    show_progress = not args.json
    last_draw = 0.0
    # leaving by an exception marks the stored run failed (stopped on Ctrl-C), never left "running"
    reported = None  # the store trouble said last
    attn_logits: list[tuple[int, Any, float]] = []  # (probe step, max attention logit per layer, mean log Z)
    with writer or contextlib.nullcontext():
        for snap in trainer:
            if writer is not None:
                reported = _store_step(writer, snap, reported)
            if snap.probes is not None:  # the report keeps two probes of each probe step, as plain numbers
                attn_logits.append((snap.step, snap.probes["attn_logit_max"], snap.probes["logz_stats"][0]))
            snap.probes = None  # the report needs scalars only
            data.append(snap)
            now = time.monotonic()
            if show_progress and (now - last_draw > 0.2 or snap.status != "running"):
                _progress(snap, cfg.steps)
                last_draw = now
    if show_progress:
        sys.stderr.write("\n")
    report = _train_report(data, trainer.info, cfg, attn_logits)
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
            print(f"stored as run {writer.run_id} in {one_line(str(writer.store.path))}")
    if writer is not None and writer.problem is not None:  # trained, but not (wholly) stored: say why
        sys.stderr.write(f"error: {writer.problem}\n")
        return 1
    return 0


def _train_report(data: Any, info: Any, cfg: RunConfig, attn_logits: list[tuple[int, Any, float]]) -> dict[str, Any]:
    """What `train` reports of a finished run (printed whole with --json)."""
    from ln_viz.snapshot import FINAL_LOSS_WINDOW

    return {
        "status": data.status,
        "steps_done": data.steps_done,
        "final_loss": _finite_or_none(data.final_loss()),
        "final_loss_window": FINAL_LOSS_WINDOW,
        "last_loss": _finite_or_none(data.scalars["loss"][-1]),
        "loss": [_finite_or_none(x) for x in data.scalars["loss"]],
        "lr": data.scalars["lr"],
        "eval_loss": [[s, e] for s, e in zip(data.scalars["step"], data.scalars["eval_loss"]) if math.isfinite(e)],
        "unigram_entropy": info.unigram_entropy,
        "floor": info.floor,
        "steps_per_sec": data.steps_done / max(data.scalars["elapsed"][-1], 1e-9),
        "n_params": info.n_params,
        "config": {k: v for k, v in cfg.to_dict().items() if k != "user_text"},
        "probe_steps": [s for s, _, _ in attn_logits],
        "max_attn_logit": [[_finite_or_none(float(x)) for x in m] for _, m, _ in attn_logits],
        "log_z": [_finite_or_none(float(z)) for _, _, z in attn_logits],
    }


def _store_step(writer: Any, snap: Any, reported: Any) -> Any:
    """Queue a step (probes included: keeping them is what the store is for); a store trouble that
    started since `reported` (a lock held elsewhere, a full disk) is said once on stderr while
    training goes on. Returns the trouble said last."""
    writer.add(snap)
    problem = writer.problem
    if problem is not None and problem is not reported:
        sys.stderr.write(f"\nwarning: {problem}\n")
        return problem
    return reported


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
    """`init-grads`: the gradient norm of every layer at initialisation, a table or --csv."""
    from ln_viz.init_grads import init_grads

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
