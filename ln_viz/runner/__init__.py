"""Background execution: each training run in its own worker process, streamed back to the server.

A `Runner` (one per server) starts runs, caps how many train at once (the rest wait in a visible
queue), caps every run in steps and wall time, and stops them on request within a second. Each run
gets a `RunHandle`; a drain thread per running run reads the worker's snapshots into the handle's
`RunData`, and `handle.view()` gives readers (a page refreshing once a second) a consistent copy.

Why processes and not threads: training is CPU-bound Python + torch. In the server process it would
compete with every viewer for the GIL, `torch.set_num_threads` would be process-wide, a stuck step
could not be interrupted, and a crash would take the server with it.

The layers, as in CPython's `concurrent/futures/process.py`, each depending only on those above it:
    messages.py   what the server and a worker say to each other (small frozen dataclasses)
    worker.py     the worker process's side: the function a worker process runs
    fork_server.py  what the fork server imports once before it forks the workers (torch, the trainer)
    process.py    the server's end of one worker process: starting it (a fork of the fork server), pipes, ending it
    handle.py     RunHandle, which owns its state transitions, and the RunView readers get
    queue.py      FairQueue: which queued run takes a free slot (owners take turns), and its place
    runner.py     Runner: the public API, the scheduler and the drain threads

Nothing here imports streamlit; the page owns a Runner through `st.cache_resource`.
"""

from ln_viz.runner.handle import (
    MSG_STOPPED,
    MSG_TIME_CAP,
    MSG_WORKER_DIED,
    MSG_WORKER_ERROR,
    RunHandle,
    RunView,
)
from ln_viz.runner.process import worker_context
from ln_viz.runner.runner import (
    DEFAULT_MAX_SECONDS,
    DEFAULT_MAX_STEPS,
    KILL_AFTER_S,
    LIVE_PROBE_STEPS,
    STOP_GRACE_S,
    OnFinish,
    OnSnapshot,
    OnStart,
    Runner,
    default_threads,
)
from ln_viz.runner.worker import WORKER_NICE, lower_priority

__all__ = [
    "DEFAULT_MAX_SECONDS",
    "DEFAULT_MAX_STEPS",
    "KILL_AFTER_S",
    "LIVE_PROBE_STEPS",
    "MSG_STOPPED",
    "MSG_TIME_CAP",
    "MSG_WORKER_DIED",
    "MSG_WORKER_ERROR",
    "STOP_GRACE_S",
    "WORKER_NICE",
    "OnFinish",
    "OnSnapshot",
    "OnStart",
    "RunHandle",
    "RunView",
    "Runner",
    "default_threads",
    "lower_priority",
    "worker_context",
]
