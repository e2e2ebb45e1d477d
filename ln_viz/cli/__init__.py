"""`ln-viz ...` (or `python -m ln_viz ...`): train a run, measure gradients at initialisation, manage stored
runs, sweep, compare two configurations over seeds, start the app.

Every error a user can cause exits with status 2 and one line `error: ...` on stderr.

    parser.py   the parser class and UsageError (a leaf: the subcommands' modules import it)
    train.py    `train` and `init-grads`, and the RunConfig flags they share (`config_from_args`)
    runs.py     `runs list | export | import | delete | label | demo`
    compare.py  `compare`: two configurations over N paired seeds, the gap and its 95 % interval
    ln_viz/sweep/cli.py   `sweep`
    `app` is here: it hands the app's script to Streamlit's own `run`, as `streamlit hello` does its demo
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ln_viz.cli.compare import add_compare_command
from ln_viz.cli.parser import Parser, UsageError
from ln_viz.cli.runs import add_runs_commands
from ln_viz.cli.train import add_train_commands
from ln_viz.i18n import LocalizedError
from ln_viz.sweep.cli import add_parser as add_sweep_command  # imports nothing heavy until it runs
from ln_viz.text import shown

MAX_ERROR_CHARS = 1000  # an error line is cut here: argparse repeats a bad value in full


def build_parser(prog: str = "ln-viz") -> Parser:
    """The whole command line: train, init-grads, runs ..., sweep, compare, app."""
    parser = Parser(prog=prog, description="Watch LayerNorm placement decide whether a transformer trains.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    add_train_commands(sub)
    add_runs_commands(sub)
    add_sweep_command(sub)
    add_compare_command(sub)
    add_app_command(sub)
    return parser


def add_app_command(sub: Any) -> None:
    p = sub.add_parser(
        "app",
        usage="%(prog)s [-h] [STREAMLIT FLAG ...]",
        help="start the app (Streamlit's flags pass through, e.g. --server.port 8502)",
        description="Start the ln-viz app from this installed package and open it in the browser, as "
        "`streamlit run app.py` does from a checkout, with the app's server settings (loopback address only, "
        "see its .streamlit/config.toml). Every other flag goes to Streamlit's `run`: --server.port 8502, "
        "--server.headless true (no browser), --server.address 0.0.0.0 (serve a classroom; see the README); "
        "`streamlit run --help` lists them.",
    )
    p.set_defaults(func=run_app, takes_streamlit_flags=True)


def app_script() -> Path:
    """The app's entry script: ln_viz/webapp/app.py in an installed package (pyproject.toml maps the checkout's
    app.py, pages/ and .streamlit/ there), the checkout's app.py beside ln_viz/ otherwise."""
    package = Path(__file__).resolve().parents[1]
    installed = package / "webapp" / "app.py"
    return installed if installed.is_file() else package.parent / "app.py"


def run_app(args: argparse.Namespace) -> int:
    """Become `python -m streamlit run <the app's script> <flags>`: the same process (its pid is the server's,
    so a signal to it stops the server and its workers), and no streamlit import here (ui/ alone has one)."""
    import os

    os.execv(sys.executable, [sys.executable, "-m", "streamlit", "run", str(app_script()), *args.streamlit_flags])
    return 0  # not reached: execv returns only by raising


def main(argv: Sequence[str] | None = None, prog: str = "ln-viz") -> int:
    """The command line's entry point: the exit status (2 with one `error: ...` line for a user's error)."""
    parser = build_parser(prog)
    try:
        args, rest = parser.parse_known_args(argv)
        if rest and not getattr(args, "takes_streamlit_flags", False):  # argparse's own words for the rest
            parser.error(f"unrecognized arguments: {' '.join(rest)}")
        args.streamlit_flags = rest
        return args.func(args)
    except (UsageError, LocalizedError) as e:  # one line, whatever the message echoes
        sys.stderr.write(f"error: {shown(str(e), MAX_ERROR_CHARS)}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("\nerror: interrupted\n")
        return 130
