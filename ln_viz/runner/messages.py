"""What the server and a worker process say to each other: one small frozen dataclass per message.

Each direction has its own pipe (see `process.py` for why pipes). A worker's life, as messages:

    worker -> server (`out`)          server -> worker (`cmd`)
    Ready   imports (and warm-up) done
                                      Job      the run to train, and how many torch threads
    Info    the trainer is built
    Snap    one step, many times      Stop, SetThreads   read between two steps
    End     left the loop (stopped, or the trainer finished)
    Failed  an exception instead      (Stop instead of a Job: an idle worker just leaves)

The worker sends nothing after its End or Failed and exits at once; a serial worker (a sweep's) waits
for its next Job instead, unless the End was a stop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ln_viz.config import RunConfig
from ln_viz.snapshot import RunInfo, Snapshot
from ln_viz.text import error_line


# --- worker -> server -------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Ready:
    """Imports (and, for a pooled worker, the warm-up) are done; the worker waits for its Job."""

    wall_time: float  # time.time() in the worker when it got ready


@dataclass(frozen=True, slots=True)
class Info:
    """The trainer is built: what the run is (parameter count, layers, corpus)."""

    info: RunInfo


@dataclass(frozen=True, slots=True)
class Snap:
    """One training step's measurements."""

    snapshot: Snapshot


@dataclass(frozen=True, slots=True)
class End:
    """The worker left its training loop: told to stop (`stopped`), or the trainer finished."""

    stopped: bool


@dataclass(frozen=True, slots=True)
class Failed:
    """An exception ended the run. `line` is its English one-liner; `key` and `params` are set when it
    was a LocalizedError, so the page can say it in the user's language."""

    line: str
    key: str | None = None
    params: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, e: BaseException) -> Failed:
        """The message for an exception: its type and first line, and its i18n key if it has one."""
        line = error_line(e)
        key, params = getattr(e, "key", None), getattr(e, "params", None)
        return cls(line, key, dict(params) if key and params else {})


WorkerMessage = Ready | Info | Snap | End | Failed


# --- server -> worker -------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Job:
    """The run an idle worker is to train, and its torch thread count."""

    config: RunConfig
    threads: int


@dataclass(frozen=True, slots=True)
class Stop:
    """A training worker finishes its current step, says End(stopped=True) and exits; an idle one
    (waiting for its Job) exits without a word."""


@dataclass(frozen=True, slots=True)
class SetThreads:
    """Use this many torch threads from the next step on (the cores were re-shared)."""

    threads: int


ServerMessage = Job | Stop | SetThreads
