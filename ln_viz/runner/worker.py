"""The worker process's side: what a worker process runs (a fork of the fork server, or a spawned child), from
`worker_main` to `os._exit`.

The child gets two one-way pipes: `cmd` (server -> worker) and `out` (worker -> server); the messages
are the dataclasses of `messages.py`. It says Ready, waits for one Job, trains it, and leaves; a
serial worker (a sweep's: a fresh process pays 2-4 s of imports per run) waits for the next Job after
each run that was not stopped, and leaves at a Stop instead of a Job.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time
from multiprocessing.connection import Connection

from ln_viz.config import RunConfig
from ln_viz.runner.messages import End, Failed, Info, Job, Ready, SetThreads, Snap, Stop

# Workers run at this niceness: the server (every tab's page, the health check, a click) comes first
# when the cores are contended, training takes whatever is left. See `lower_priority`.
WORKER_NICE = 10

# The pipe is gone: the server closed it or died, and nobody is left to report to.
_PIPE_GONE = (EOFError, BrokenPipeError, ConnectionResetError)


def lower_priority(nice: int = WORKER_NICE, below: int | None = None) -> None:
    """Make this (worker) process yield the CPU to the server, `nice` steps below the process `below` (a pid;
    None: below itself). On 2 cores, two training runs and ten tabs' page scripts contend; at equal priority
    the server's answers waited behind the runs' steps for seconds. A fork of the fork server starts at its
    niceness (WORKER_NICE below the server) and is not lowered twice. Best effort: a system that refuses
    leaves the priority as it is."""
    if not nice:
        return
    try:
        target = (os.getpriority(os.PRIO_PROCESS, below) if below else os.nice(0)) + nice
        if target > os.nice(0):
            os.nice(target - os.nice(0))
    except OSError:
        pass


def worker_main(
    cmd: Connection, out: Connection, warm: bool, parent_pid: int, nice: int = WORKER_NICE, serial: bool = False
) -> None:
    """Entry point of a worker process (a fork of the fork server, with torch imported, or spawned: a fresh
    interpreter, which imports everything); `parent_pid`: the server's; `serial`: train Job after Job (see the
    module docstring)."""
    lower_priority(nice, below=parent_pid)
    # Ctrl-C in the terminal reaches the whole process group; the server decides when workers end.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # OpenMP threads spin while waiting for work by default. With two threads per run and anything
    # else busy (the server drawing charts, another run), the spinning ate 3x the CPU and cut steps/s
    # several-fold in our measurements; passive waiting sleeps instead. Read when torch loads (in a fork, the
    # fork server set it).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import torch

        if warm:
            _warm_up()
        out.send(Ready(time.time()))
        while isinstance(job := cmd.recv(), Job):  # a Stop instead: no job is coming
            torch.set_num_threads(job.threads)
            if not _train(job.config, cmd, out) or not serial:
                break
    except _PIPE_GONE:
        pass
    except Exception as e:  # noqa: BLE001 -- e.g. a broken install failing the imports: say so
        send_failure(out, e)
    finally:
        cmd.close()
        out.close()
    # A normal interpreter exit with torch and pandas loaded takes 0.5-1 s of teardown, which a Stop
    # would wait for; nothing here needs it (no files open, all sent), so leave at once.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _warm_up() -> None:
    """Pay the one-time costs (imports, the english corpus, torch's first forward/backward and the
    probe hooks) before a job arrives, so a Start on a pooled worker shows its first step at once."""
    import torch

    from ln_viz.corpus import english
    from ln_viz.train import Trainer

    torch.set_num_threads(1)  # idle workers should not take cores from running runs
    english()
    tiny = RunConfig(depth=1, d_model=16, heads=2, seq_len=16, batch_size=2, steps=2, probe_every=1)
    for _ in Trainer(tiny):
        pass


def _train(cfg: RunConfig, cmd: Connection, out: Connection) -> bool:
    """Train `cfg`, sending Info, a Snap per step, and End (or Failed); False when told to stop."""
    from ln_viz.train import Trainer

    # The server (the process that started this one; not the parent process of a fork of the fork server).
    server = multiprocessing.parent_process()

    try:
        trainer = Trainer(cfg)
        out.send(Info(trainer.info))
        steps = iter(trainer)
        while True:
            # Between two steps is the only safe place to stop: the step's snapshot is complete.
            if _told_to_stop(cmd) or (server is not None and not server.is_alive()):
                out.send(End(stopped=True))
                return False
            snap = next(steps, None)
            if snap is None:
                break
            out.send(Snap(snap))
    except _PIPE_GONE:
        raise
    except Exception as e:  # noqa: BLE001 -- any bug or bad input in the run: report it, never hang the server
        send_failure(out, e)
        return True
    out.send(End(stopped=False))
    return True


def _told_to_stop(cmd: Connection) -> bool:
    """Apply pending commands; True when one of them was Stop."""
    import torch

    while cmd.poll():
        msg = cmd.recv()
        if isinstance(msg, Stop):
            return True
        if isinstance(msg, SetThreads):
            torch.set_num_threads(msg.threads)
    return False


def send_failure(out: Connection, e: BaseException) -> None:
    """Report an exception to the server as Failed; without its params if they do not pickle."""
    failed = Failed.of(e)
    try:
        out.send(failed)
    except OSError:
        raise
    except Exception:  # noqa: BLE001 -- unpicklable params: keep the line
        out.send(Failed(failed.line))
