"""The one small interface every sweep executor has, and the choice between them.

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
EXECUTORS = ("local", "ray")
STOP_WITHIN_S = 2.0


class Executor(Protocol):
    """Trains cells; see the module docstring for the contract."""

    name: str
    workers: int

    def run(self, cells: Sequence[Cell], on_step: OnStep, on_end: OnEnd, stop: threading.Event) -> None: ...


def make_executor(name: str, *, workers: int | None = None, address: str | None = None, nice: int = 0) -> Executor:
    """`local` (this machine's cores) or `ray` (a Ray cluster at `address`, else $RAY_ADDRESS, else a
    private one on 127.0.0.1). Ray is imported only here, when asked for."""
    if name == "local":
        from ln_viz.sweep.local import LocalExecutor

        return LocalExecutor(workers=workers, nice=nice)
    if name == "ray":
        from ln_viz.sweep.ray_exec import RayExecutor

        return RayExecutor(address=address, workers=workers)
    from ln_viz.sweep.spec import SweepError

    raise SweepError("sweep.err.executor", "executor", value=name, choices=", ".join(EXECUTORS))
