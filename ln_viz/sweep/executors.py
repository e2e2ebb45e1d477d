"""The one small interface every sweep executor has (the choice between them: chooser.py).

An executor trains a list of cells and reports back through two callbacks: `on_step(index, step,
loss, eval_loss, status)` for every training step of cell `index`, and `on_end(index, status, error)`
once per cell that started (status: the trainer's last verdict, `failed` with a one-line error, or
`stopped`). `run` blocks until every cell has ended or `stop` is set; after a stop it returns
within about two seconds with nothing left running. A crashed run is that cell's `failed`; the
others go on.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Protocol

from ln_viz.sweep.spec import Cell

OnStep = Callable[[int, int, float, "float | None", str], None]
OnEnd = Callable[[int, str, "str | None"], None]


class Executor(Protocol):
    """Trains cells; see the module docstring for the contract."""

    name: str
    workers: int

    def run(self, cells: Sequence[Cell], on_step: OnStep, on_end: OnEnd, stop: threading.Event) -> None: ...
