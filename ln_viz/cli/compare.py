"""`python -m ln_viz compare`: two configurations over N paired seeds, and the gap between them with its
95 % interval (ln_viz.sweep.compare, ln_viz.stats).

    python -m ln_viz compare [train flags shared by both] --a KEY=VALUE[,KEY=VALUE...] --b KEY=VALUE[,...]
        [--preset SCENARIO] --seeds N [--executor local|ray] [--workers W] [--address ADDR] [--json]
        [--lang en|ko]

Each side is the shared flags (on RunConfig's defaults, or on the scenario's A or B preset) with its
own KEY=VALUE pairs on top; a key is a RunConfig field name, its value parsed and checked as that
field's flag is (ln_viz.config.FIELDS). Progress goes to stderr; the table and the sentence, or one
JSON object, to stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ln_viz.cli.train import add_field_flags, config_from_args

_SIDE_HELP = "what side {x} sets: KEY=VALUE[,KEY=VALUE...], keys are RunConfig field names (norm_position=post)"


def add_compare_command(sub: Any) -> None:
    """The `compare` subcommand, added to the top-level parser `sub`."""
    from ln_viz.config import COMPARE_PRESETS
    from ln_viz.sweep.chooser import EXECUTORS
    from ln_viz.sweep.spec import MAX_SEEDS

    p = sub.add_parser("compare", help="two configurations over N paired seeds: the gap and its 95 %% interval")
    add_field_flags(p, train=True)
    p.add_argument("--a", dest="side_a", help=_SIDE_HELP.format(x="A"))
    p.add_argument("--b", dest="side_b", help=_SIDE_HELP.format(x="B"))
    p.add_argument("--preset", dest="scenario", help=f"a Compare scenario: {', '.join(COMPARE_PRESETS)}")
    p.add_argument("--seeds", type=int, default=3, help=f"seeds per side (--seed, --seed + 1, ...), 1-{MAX_SEEDS}")
    p.add_argument("--executor", default="local", choices=EXECUTORS, help="where the runs train")
    p.add_argument("--address", help="ray: the cluster (default $RAY_ADDRESS, else a private one on 127.0.0.1)")
    p.add_argument("--workers", type=int, help="local: runs at once (default: the cores)")
    p.add_argument("--json", action="store_true", help="print one JSON object: a, b, seeds, gap")
    p.add_argument("--lang", default="en", choices=("en", "ko"), help="the table's and the sentence's language")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_compare)


def parse_side(flag: str, raw: str | None) -> dict[str, Any]:
    """ "norm_position=post,lr=1e-3" -> {"norm_position": "post", "lr": 0.001}: each value parsed as its
    field's flag is (FieldSpec.parse); one sentence for a pair that is not one, an unknown key, a key
    given twice, or user_text. The ranges are checked with the whole config (RunConfig.validate)."""
    from ln_viz.config import FIELDS
    from ln_viz.sweep.compare import CompareError

    changes: dict[str, Any] = {}
    for item in (raw or "").split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise CompareError("seeds.err.item", "side", flag=flag, value=raw)
        if key == "user_text":
            raise CompareError("seeds.err.user_text", "side", flag=flag)
        if key not in FIELDS:
            names = ", ".join(k for k in FIELDS if k != "user_text")
            raise CompareError("seeds.err.unknown_key", "side", flag=flag, value=key, choices=names)
        if key in changes:
            raise CompareError("seeds.err.duplicate_key", "side", flag=flag, name=key)
        changes[key] = FIELDS[key].parse(value.strip())
    return changes


def side_configs(args: argparse.Namespace) -> tuple[Any, Any]:
    """The two RunConfigs: the scenario's presets (or the defaults), the shared flags, each side's pairs."""
    from ln_viz.config import COMPARE_PRESETS, preset
    from ln_viz.sweep.compare import CompareError

    choices = ", ".join(COMPARE_PRESETS)
    if args.scenario is not None:
        if args.scenario not in COMPARE_PRESETS:
            raise CompareError("seeds.err.scenario", "preset", value=args.scenario, choices=choices)
        name_a, name_b, _ = COMPARE_PRESETS[args.scenario]
        bases = (preset(name_a), preset(name_b))
    elif args.side_a is None or args.side_b is None:
        raise CompareError("seeds.err.need_sides", "side", choices=choices)
    else:
        bases = (None, None)
    sides = (parse_side("--a", args.side_a), parse_side("--b", args.side_b))
    a, b = (config_from_args(args, base, extra) for base, extra in zip(bases, sides))
    if a == b:  # 2N identical runs and "end at the same loss" (hostile round 4, L10)
        raise CompareError("seeds.err.same_sides", "side")
    return a, b


def cmd_compare(args: argparse.Namespace) -> int:
    """`compare`: both sides' seeds trained on the executor, then the table and the sentence (or --json)."""
    from ln_viz.sweep.chooser import make_executor
    from ln_viz.sweep.cli import check_executor_flags, run_on
    from ln_viz.sweep.compare import SeedCompare, check_seeds
    from ln_viz.words import unused_settings

    a, b = side_configs(args)
    for note in dict.fromkeys(n for cfg in (a, b) for n in unused_settings(cfg, args.lang)):  # hostile L13
        sys.stderr.write(f"note: {note}\n")
    check_seeds(args.seeds)
    check_executor_flags(args)
    executor = make_executor(args.executor, workers=args.workers, address=args.address)
    comparison = SeedCompare(a, b, args.seeds, executor)
    run_on(executor, comparison, show=not args.quiet)
    result = comparison.result()
    if args.json:
        print(json.dumps(result.to_dict(), allow_nan=False))
    else:
        print_table(result, args.lang)
    return 130 if result.state == "stopped" else 0


def print_table(result: Any, lang: str) -> None:
    """Seed by seed: A's and B's final loss, A - B and how each run ended; mean and sd; the sentence."""
    from ln_viz.i18n import t
    from ln_viz.stats import mean_sd, paired_differences
    from ln_viz.sweep.compare import side_names, takeaway

    name_a, name_b = side_names(result.a.config, result.b.config, lang)
    print(f"A = {name_a}\nB = {name_b}")
    print(f"{t('seeds.table.seed', lang):>6} {'A':>8} {'B':>8} {'A - B':>8}  A / B")
    rows = zip(result.seeds, result.a.final_losses, result.b.final_losses, result.a.statuses, result.b.statuses)
    for seed, fa, fb, sa, sb in rows:
        gap = fa - fb if fa is not None and fb is not None else None
        ends = f"{t(f'status.{sa}', lang)} / {t(f'status.{sb}', lang)}"
        print(f"{seed:>6} {_num(fa):>8} {_num(fb):>8} {_num(gap):>8}  {ends}")
    gaps = paired_differences(result.a.final_losses, result.b.final_losses)
    stats = [mean_sd(v) for v in (result.a.final_losses, result.b.final_losses, gaps)]
    for label, k in (("seeds.table.mean", 0), ("seeds.table.sd", 1)):
        print(f"{t(label, lang):>6} " + " ".join(f"{_num(s[k]):>8}" for s in stats))
    print(takeaway(result, lang))
    print(t("seeds.elapsed", lang, n=2 * len(result.seeds), s=f"{result.elapsed_s:.1f}", executor=result.executor))


def _num(x: float | None) -> str:
    return f"{x:.3f}" if x is not None else "-"
