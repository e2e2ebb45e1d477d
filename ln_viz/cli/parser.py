"""The command line's parser class and its one kind of user error, shared by every subcommand's module
(ln_viz.cli.train, ln_viz.cli.runs) and imported by none of them in turn."""

from __future__ import annotations

import argparse
from typing import NoReturn


class UsageError(Exception):
    """A bad flag: printed as one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    """Every command's parser: no abbreviations (`sweep --seed 5` was taken as `--seeds 5`), and
    argparse's own errors as one line."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def error(self, message: str) -> NoReturn:  # argparse's own errors: one line, status 2
        raise UsageError(message)
