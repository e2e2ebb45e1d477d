"""A throw-away Ray head node on 127.0.0.1, for tests (tests/test_sweep_ray.py) and benchmarks/sweep.py.

`ray start --head --block` runs as our child in a session (process group) of its own, on a random
port, with its own temp dir and usage stats off. Ending it ends exactly what it started: the group by
its id, then any process below it that left the group, by pid. Never `ray stop`, which ends every
Ray cluster of the machine's user, whoever started it.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Self


def descendants(root: int) -> set[int]:
    """Every living process below `root`, by parent pid (Linux /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, stack = set(), [root]
    while stack:
        for c in children.get(stack.pop(), []):
            if c not in out:
                out.add(c)
                stack.append(c)
    return out


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class HeadNode:
    """`with HeadNode(cpus=2) as head:` then `RayExecutor(address=head.address)`."""

    def __init__(
        self, cpus: int = 2, start_timeout: float = 90.0, auth_token: Path | None = None, port: int | None = None
    ) -> None:
        self.cpus = cpus
        self.auth_token = auth_token  # a file holding the token the head demands (RAY_AUTH_MODE=token)
        self.port = port or random.randint(20000, 40000)  # a port: a head restarted where one was killed
        self.address = f"127.0.0.1:{self.port}"
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen | None = None
        self.left: list[int] = []  # processes still alive after stop() (should stay empty)

    def start(self) -> Self:
        """Start the head node and wait until it takes connections (RuntimeError if it does not)."""
        ray_bin = Path(sys.executable).with_name("ray")
        temp = tempfile.mkdtemp(prefix="lnvr")  # short: Ray's socket paths must fit in 107 bytes
        cmd = [str(ray_bin), "start", "--head", "--block", "--include-dashboard=false", "--disable-usage-stats"]
        cmd += ["--node-ip-address", "127.0.0.1", "--port", str(self.port), "--num-cpus", str(self.cpus)]
        cmd += ["--temp-dir", temp]
        env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
        for name in ("RAY_ADDRESS", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
            env.pop(name, None)
        # the mode said, never inferred: with it unset, `ray start` demands a token whenever a ~/.ray/auth_token
        # exists (a private cluster of Ray 2.60 writes one), and a driver given an address sends none
        env["RAY_AUTH_MODE"] = "disabled"
        if self.auth_token is not None:
            env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(self.auth_token))
        self.proc = subprocess.Popen(
            cmd, start_new_session=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"ray start exited with {self.proc.returncode}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                time.sleep(3)  # the raylet registers with the GCS a moment after the GCS port opens
                return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError("the Ray head node did not start in time")

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> None:
        """End the group we started and everything below it (`sig` first: SIGKILL is a head that
        dies at once, as a crashed or powered-off machine's); `left` lists any survivor."""
        if self.proc is None:
            return
        started = descendants(self.proc.pid) | {self.proc.pid}
        try:
            os.killpg(self.proc.pid, sig)
            # a head whose workers have run tasks did not end on SIGTERM within 10 s (every module's teardown
            # took 12 s): 3 s, then SIGKILL, which leaves the same nothing behind (`left`, checked by the tests)
            self.proc.wait(3)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)
        except ProcessLookupError:
            pass
        time.sleep(1)
        for pid in started:  # one that left the group (setsid) is still ours: by its id
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.5)
        self.left = [pid for pid in started if alive(pid)]
        self.proc = None

    def actor_pids(self) -> set[int]:
        """The head's worker processes that hold a run's actor now (Ray titles them `ray::RunActor...`)."""
        out = set()
        for pid in descendants(self.proc.pid) if self.proc is not None else ():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if "RunActor" in cmd and alive(pid):
                out.add(pid)
        return out

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
