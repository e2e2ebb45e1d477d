"""What the fork server imports once, before it forks any worker: torch and the trainer (multiprocessing's
forkserver preload, named by `process.fork_context`). Each training worker, and each of the Init lab's, is then a
fork of that process: it starts with torch imported (~1.7 s of CPU a spawned worker paid for itself, at every
Start and twice before a fresh server's first), sharing the imported pages with its siblings.

Importing this module lowers the process's priority and imports torch: only the fork server imports it. Nothing
here starts a thread of torch's (an import does not: its OpenMP pool starts at the first parallel operation), so
each fork sets up its own threads (`torch.set_num_threads` in the worker) as a spawned worker did.
"""

from __future__ import annotations

import os


def prepare() -> None:
    """Run once in the fork server: its forks inherit its niceness, environment and imports."""
    from ln_viz.runner.worker import WORKER_NICE, lower_priority

    lower_priority(WORKER_NICE)  # the forks run at the workers' priority (`worker_main` keeps it)
    # Read by OpenMP when torch loads, so before the import; see `worker_main`.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch  # noqa: F401

    import ln_viz.corpus  # noqa: F401
    import ln_viz.train  # noqa: F401


prepare()
