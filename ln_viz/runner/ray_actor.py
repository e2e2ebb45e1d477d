"""A run's Ray actor: on a node of the cluster, it trains one run in a thread and keeps the messages of
`messages.py` (Info, Snap, End, Failed) until the server's Ray host polls them (ray_host.py)."""

from __future__ import annotations

import os
import threading
import time

from ln_viz.config import RunConfig
from ln_viz.runner.messages import End, Failed, Info, Snap, WorkerMessage

_POLL_WAIT_S = 0.2  # an actor's poll waits this long for a message before answering "none yet"
# an answer gathers the messages of this long at least (issue 32: one Ray call per step cost the server's
# Ray driver ~1 ms a step; a Live page draws once a second, so a quarter second's batch is never seen)
POLL_EVERY_S = 0.25


class RunActor:
    """On a Ray node: trains one run in a thread, keeps its messages until polled."""

    def __init__(self) -> None:
        self._msgs: list[WorkerMessage] = []
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._threads: int | None = None
        self._answered = 0.0  # time.monotonic() of the last poll's answer

    def pid(self) -> int:
        return os.getpid()

    def start(self, cfg: RunConfig, threads: int) -> None:
        self._threads = threads
        threading.Thread(target=self._train, args=(cfg,), daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def set_threads(self, threads: int) -> None:
        self._threads = threads

    def poll(self) -> list[WorkerMessage]:
        """The messages since the last poll, at most one answer per POLL_EVERY_S; waits up to _POLL_WAIT_S
        for a first one. The batch is gathered with the lock released: the training thread never waits."""
        with self._cond:
            if not self._msgs:
                self._cond.wait(_POLL_WAIT_S)
            ended = bool(self._msgs) and isinstance(self._msgs[-1], End | Failed)
        rest = self._answered + POLL_EVERY_S - time.monotonic()
        if rest > 0 and not ended:
            time.sleep(rest)
        with self._cond:
            out, self._msgs = self._msgs, []
        self._answered = time.monotonic()
        return out

    def _put(self, msg: WorkerMessage) -> None:
        with self._cond:
            self._msgs.append(msg)
            self._cond.notify_all()

    def _train(self, cfg: RunConfig) -> None:
        import torch

        from ln_viz.train import Trainer

        try:
            threads = self._threads or 1
            torch.set_num_threads(threads)
            trainer = Trainer(cfg)
            self._put(Info(trainer.info))
            for snap in trainer:
                self._put(Snap(snap))
                if self._stop.is_set():
                    self._put(End(stopped=True))
                    return
                if self._threads and self._threads != threads:
                    threads = self._threads
                    torch.set_num_threads(threads)
        except Exception as e:  # noqa: BLE001 -- any bug or bad input in the run: report it
            self._put(Failed.of(e))
            return
        self._put(End(stopped=False))
