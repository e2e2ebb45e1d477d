"""Write docs/cli.md, the command line's reference, from the parsers themselves (ln_viz.cli.build_parser):
the `--help` of the command and of every subcommand it finds, walked recursively, so a new subcommand is
documented the moment it is added. tests/test_docs.py fails when the committed page differs from what this
writes now.

    .venv/bin/python scripts/make_docs_cli.py          # rewrite docs/cli.md
    .venv/bin/python scripts/make_docs_cli.py --check  # exit 1 if docs/cli.md is out of date
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "cli.md"
WIDTH = "100"  # argparse wraps at the terminal's width: fixed, so the page is the same on every machine
COMMAND = ".venv/bin/python scripts/make_docs_cli.py"

HEADER = """\
# Command line reference

<!-- Written by scripts/make_docs_cli.py from the parsers in ln_viz/cli; do not edit by hand. -->

Every command below is the `--help` of the parser itself, written into this page by
`scripts/make_docs_cli.py`; a test (`tests/test_docs.py`) fails when the page and the parsers differ.
Installed as a package, the command is `ln-viz` (see [Install](install.md)); from a checkout,
`python -m ln_viz` is the same command. Every error a user can cause exits with status 2 and one line
`error: ...` on stderr ([Troubleshooting](troubleshooting.md)). Worked examples of each command are on the
pages of what it does: [train, init-grads and compare](command-line.md), [stored runs](runs.md),
[the sweep](stability-map.md).
"""


def _subcommands(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """The parsers of `parser`'s subcommands, in the order they were added (an alias appears once)."""
    seen: set[int] = set()
    for action in parser._actions:  # argparse keeps its subparsers only here
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                if id(sub) not in seen:
                    seen.add(id(sub))
                    yield sub


def _walk(parser: argparse.ArgumentParser, depth: int = 0) -> Iterator[tuple[int, argparse.ArgumentParser]]:
    yield depth, parser
    for sub in _subcommands(parser):
        yield from _walk(sub, depth + 1)


def render() -> str:
    """The page: the header, then each command's `--help` under a heading naming the command."""
    from ln_viz.cli import build_parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        parts = [HEADER]
        for depth, parser in _walk(build_parser()):
            level = "#" * min(2 + depth, 4)
            help_text = parser.format_help().rstrip()
            parts.append(f"{level} `{parser.prog}`\n\n```text\n{help_text}\n```\n")
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if docs/cli.md differs from the parsers")
    args = ap.parse_args(argv)
    text = render()
    if args.check:
        if OUT.read_text(encoding="utf-8") != text:
            print(f"docs/cli.md is out of date; run: {COMMAND}", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
