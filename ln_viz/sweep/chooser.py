"""The choice between the sweep executors, by name: above the interface (executors.py) and the
executors themselves (local.py, ray_exec.py), so none of them imports another."""

from __future__ import annotations

from ln_viz.sweep.executors import Executor
from ln_viz.sweep.spec import SweepError

EXECUTORS = ("local", "ray")


def make_executor(name: str, *, workers: int | None = None, address: str | None = None, nice: int = 0) -> Executor:
    """`local` (this machine's cores) or `ray` (a Ray cluster at `address`, else $RAY_ADDRESS, else a
    private one on 127.0.0.1). Ray is imported only here, when asked for."""
    if name == "local":
        from ln_viz.sweep.local import LocalExecutor

        return LocalExecutor(workers=workers, nice=nice)
    if name == "ray":
        from ln_viz.sweep.ray_exec import RayExecutor

        return RayExecutor(address=address, workers=workers)
    raise SweepError("sweep.err.executor", "executor", value=name, choices=", ".join(EXECUTORS))
