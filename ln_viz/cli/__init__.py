"""`python -m ln_viz ...`: train a run, measure gradients at initialisation, manage stored runs, sweep,
compare two configurations over seeds.

Every error a user can cause exits with status 2 and one line `error: ...` on stderr.

    parser.py   the parser class and UsageError (a leaf: the subcommands' modules import it)
    train.py    `train` and `init-grads`, and the RunConfig flags they share (`config_from_args`)
    runs.py     `runs list | export | import | delete | label | demo`
    compare.py  `compare`: two configurations over N paired seeds, the gap and its 95 % interval
    ln_viz/sweep/cli.py   `sweep`
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ln_viz.cli.compare import add_compare_command
from ln_viz.cli.parser import Parser, UsageError
from ln_viz.cli.runs import add_runs_commands
from ln_viz.cli.train import add_train_commands
from ln_viz.i18n import LocalizedError
from ln_viz.sweep.cli import add_parser as add_sweep_command  # imports nothing heavy until it runs
from ln_viz.text import shown

MAX_ERROR_CHARS = 1000  # an error line is cut here: argparse repeats a bad value in full


def build_parser() -> Parser:
    """The whole command line: train, init-grads, runs ..., sweep, compare."""
    parser = Parser(
        prog="python -m ln_viz",
        description="Watch LayerNorm placement decide whether a transformer trains.",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    add_train_commands(sub)
    add_runs_commands(sub)
    add_sweep_command(sub)
    add_compare_command(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The command line's entry point: the exit status (2 with one `error: ...` line for a user's error)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        return args.func(args)
    except (UsageError, LocalizedError) as e:  # one line, whatever the message echoes
        sys.stderr.write(f"error: {shown(str(e), MAX_ERROR_CHARS)}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("\nerror: interrupted\n")
        return 130
