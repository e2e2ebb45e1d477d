"""A classroom on one server: N sessions press Start at once (loopback only, bounded in count and time).

    .venv/bin/python -m benchmarks.load_test [--sessions 10] [--cap 2] [--clients ws|browser] [--ray CPUS]
    .venv/bin/python -m benchmarks.load_test --seed-session [--sessions 4] [--cap 2] [--steps 1000]
    .venv/bin/python -m benchmarks.load_test --watchers 10 [--watch-seconds 20] [--json]

Clients: `ws` (default) are websocket clients speaking Streamlit's protocol as a browser tab does
(the page's script runs, its live fragment re-runs every second, a click is a widget change) but
without rendering, as when every student's browser runs on their own machine; `browser` are headless
Chromium tabs on this same machine, whose rendering then competes with the server for its cores.
Checks and prints: the health endpoint's and a click's answer times while everything trains, that at
most `cap` runs train at once and the rest show their place in the queue and start in turn, and that
once every session is closed no worker process is left and the server's memory is back near its start.
Exits 1 when a check fails.

`--seed-session`: one session queues a Compare with 3 seeds per side (2 x 3 runs) and a second later
the other sessions each press Start; prints each one's wait from its Start to its run's first step, and
checks that none waited behind the whole seed group (the runner's fair queue, ln_viz.runner.queue).
The runs go through a Runner in this process, not a server: the Compare page's seeds control that
would queue them from a tab is not part of this version yet.

`--watchers N`: one session trains a run and N sessions watch it through its watch link (benchmarks/
watch_load.py): each watcher refresh's time, the health check, the bytes a watcher receives, runs trained.
`--cost [--ray CPUS]`: what one running run costs the server (issue 32): one tab starts a run and watches
it (its live fragment re-runs every second, no other clicks); prints the server's CPU seconds per second
of training, its own process and, on Ray, the host process that holds the Ray driver (ray_host.py)
apart, with the load average. Run it once with and once without `--ray 2` to compare.

`--json` prints one JSON object (`refresh_p95_s`, `health_max_s`, `runs_trained`, ...) on stdout, the
rest on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.memory import rss_mb
from benchmarks.tab import SMALL_RUN, STATUS_LINE, Tab, cpu_seconds
from tests.e2e.conftest import BROWSER_ARGS, CHROMIUM, Server

ENDED = ("completed", "stalled")


@dataclass
class Observed:
    """What the clients saw; filled by a driver."""

    max_children: int = 0
    queue_seen: set[str] = field(default_factory=set)
    click_ms: list[float] = field(default_factory=list)
    done: list[bool] = field(default_factory=list)
    all_done_s: float = float("nan")
    exceptions: int = 0  # exception elements the pages showed
    folded: int = 0  # clicks answered by a rerun that was already on its way (see drive_websockets)

    def status(self, i: int, text: str) -> None:
        """Read one session's status line."""
        if "Queued: place" in text:
            self.queue_seen.add(text.split("place")[1].split()[0])
        if any(word in text for word in ENDED):
            self.done[i] = True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--cap", type=int, default=2)
    parser.add_argument("--clients", choices=("ws", "browser"), default="ws")
    parser.add_argument("--time-limit", type=float, default=300, help="seconds before the test gives up")
    parser.add_argument("--steps", type=int, default=1000, help="steps of each session's run")
    parser.add_argument(
        "--smoke", action="store_true", help="check what happened, print the times without judging them"
    )
    parser.add_argument("--seed-session", action="store_true", help="one session queues 2 x 3 seed runs first")
    parser.add_argument("--watchers", type=int, default=0, help="sessions watching one live run (watch_load.py)")
    parser.add_argument("--watch-seconds", type=float, default=20, help="how long the watchers follow the run")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout, the report on stderr")
    parser.add_argument(
        "--ray", type=int, default=0, metavar="CPUS",
        help="the server trains on a Ray head of CPUS CPUs this test starts on 127.0.0.1 (LN_VIZ_EXECUTOR=ray)",
    )  # fmt: skip
    parser.add_argument("--cost", action="store_true", help="server CPU per second of one watched running run")
    args = parser.parse_args(argv)
    if not 1 <= args.sessions <= 50:
        parser.error("--sessions must be between 1 and 50")
    if not 0 <= args.watchers <= 400:  # past watchlink.WATCH_MAX_WATCHERS (300) the tabs are refused: M7's check
        parser.error("--watchers must be between 0 and 400")
    if args.cost:
        return run_cost(args)
    if args.seed_session:
        return seed_session(args.sessions, args.cap, args.steps, args.time_limit)
    result: dict = {}
    with contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext():
        code = watchers(args, result) if args.watchers else sessions(args, result)
    if args.json:
        print(json.dumps(result))
    return code


@contextlib.contextmanager
def ray_head(cpus: int):
    """With `cpus`: a Ray head on 127.0.0.1 (tests/ray_cluster.py, ended by its process group) and the
    server's environment that trains every Start on it; without: nothing, the local pool."""
    if not cpus:
        yield {}, None
        return
    from tests.ray_cluster import HeadNode

    head = HeadNode(cpus=cpus).start()
    try:
        yield {"LN_VIZ_EXECUTOR": "ray", "LN_VIZ_RAY_ADDRESS": head.address, "RAY_AUTH_MODE": "disabled"}, head
    finally:
        head.stop()


def watchers(args: argparse.Namespace, result: dict) -> int:
    """`--watchers N` (benchmarks/watch_load.py); fills `result` with its figures."""
    from benchmarks import watch_load

    with tempfile.TemporaryDirectory() as tmp:
        result |= watch_load.run_watchers(Path(tmp), args.watchers, args.cap, args.watch_seconds, 10_000)
    print(watch_load.report(result))
    found = [] if args.smoke else watch_load.failures(result)
    for f in found:
        print("FAILED:", f)
    return 1 if found else 0


def sessions(args: argparse.Namespace, result: dict) -> int:
    """N sessions press Start at once (the module's docstring); fills `result` with its figures."""
    from ln_viz.store import Store

    with tempfile.TemporaryDirectory() as tmp, ray_head(args.ray) as (ray_env, head):
        server = Server(Path(tmp), env={"LN_VIZ_MAX_CONCURRENT": str(args.cap)} | ray_env)
        health_ms: list[float] = []
        health_errors: list[str] = []
        rss_samples: list[float] = []
        stop = threading.Event()

        def poll_health() -> None:
            while not stop.is_set():
                t0 = time.perf_counter()
                try:
                    with urllib.request.urlopen(server.url + "/_stcore/health", timeout=10) as r:
                        if r.read() != b"ok":
                            health_errors.append("not ok")
                except OSError as e:  # no answer within 10 s, refused, an HTTP error: counted, polling goes on
                    health_errors.append(str(e))
                health_ms.append(1000 * (time.perf_counter() - t0))
                rss_samples.append(rss_mb(server.proc.pid))
                time.sleep(0.25)

        try:
            # where runs train: the server's worker processes, or the head's actor processes with --ray
            # (counting the server's children there saw none, so the cap check could not fail)
            workers = (lambda: len(head.actor_pids())) if head is not None else (lambda: len(server.children()))
            baseline_children = workers()
            rss_start = rss_mb(server.proc.pid)
            cpu_start = cpu_seconds(server.proc.pid)
            poller = threading.Thread(target=poll_health, daemon=True)
            poller.start()
            drive = drive_websockets if args.clients == "ws" else drive_browsers
            seen = drive(server, args.sessions, args.time_limit, SMALL_RUN.format(steps=args.steps), workers)
            cpu_used = cpu_seconds(server.proc.pid) - cpu_start
            stop.set()
            poller.join()
            time.sleep(5)  # sessions released, their runs stopped, workers reaped
            left = workers()
            rss_end = rss_mb(server.proc.pid)
        finally:
            stop.set()
            server.stop()
        with Store(server.store, readonly=True) as store:
            trained = len(store.list_runs())

    # The warm pool keeps `baseline_children` workers (a Ray head: no pool, 0 actors); every run adds one
    # while it trains.
    trained_at_once = seen.max_children - baseline_children
    slow = sum(ms > 1000 for ms in health_ms)
    where = f" on a {args.ray}-CPU Ray head" if args.ray else " on the local pool"
    print(
        f"{args.clients} clients: {args.sessions} sessions, cap {args.cap}{where}: all runs ended in "
        f"{seen.all_done_s:.0f} s"
    )
    print(
        f"health: median {statistics.median(health_ms):.0f} ms, max {max(health_ms):.0f} ms over {len(health_ms)} polls"
        f" ({slow} over a second)"
    )
    click = seen.click_ms or [float("nan")]
    print(
        f"click answered: median {statistics.median(click):.0f} ms, max {max(click):.0f} ms over "
        f"{len(seen.click_ms)} clicks ({sum(ms > 1000 for ms in seen.click_ms)} over a second; "
        f"{seen.folded} folded into a rerun already on its way)"
    )
    print(
        f"server process CPU: {cpu_used:.0f} s over {seen.all_done_s:.0f} s ({100 * cpu_used / seen.all_done_s:.0f} %)"
    )
    # issue 32: what one running run costs the server (its drawing, and on Ray the client's threads and stream)
    print(f"server CPU per run: {cpu_used / max(trained, 1):.2f} s over {trained} run(s){where}")
    print(
        f"{'run actors' if args.ray else 'worker processes beyond the warm pool'}, at most: {trained_at_once}; "
        f"queue places seen: {sorted(seen.queue_seen, key=int)}"
    )
    print(f"after every session closed: {left} {'run actor(s)' if args.ray else 'worker process(es)'} "
          f"(before: {baseline_children})")  # fmt: skip
    print(f"server RSS: {rss_start:.0f} MB before, peak {max(rss_samples):.0f} MB, {rss_end:.0f} MB after")
    print(f"health errors: {len(health_errors)}; exceptions shown in the pages: {seen.exceptions}")
    failures = []
    if health_errors:
        failures.append(f"the health endpoint failed {len(health_errors)} time(s): {health_errors[0]}")
    if seen.exceptions:
        failures.append(f"{seen.exceptions} exception(s) shown in the pages")
    if not all(seen.done):
        failures.append(f"{seen.done.count(False)} run(s) did not end in time")
    if not seen.click_ms:
        failures.append("no click was measured")
    if max(health_ms) > 1000 and not args.smoke:
        failures.append("the health endpoint took over a second")
    if seen.click_ms and max(seen.click_ms) > 1000 and not args.smoke:
        failures.append("a click took over a second")
    if trained_at_once > args.cap + 1:  # +1: a stopping worker may still be exiting as the next starts
        failures.append(f"{trained_at_once} workers at once for a cap of {args.cap}")
    if args.sessions > args.cap and len(seen.queue_seen) < min(args.sessions - args.cap, 2):
        failures.append(f"queue places seen: {sorted(seen.queue_seen)}")
    if left > baseline_children:
        failures.append(f"{left - baseline_children} worker(s) left after the sessions closed")
    if rss_end > rss_start + 150:
        failures.append("the server kept more than 150 MB")
    for f in failures:
        print("FAILED:", f)
    click_s = sorted(ms / 1000 for ms in seen.click_ms)
    result |= {
        "mode": "sessions",
        "server_cpu_per_run_s": cpu_used / max(trained, 1),
        "executor": "ray" if args.ray else "local",
        "sessions": args.sessions,
        "refresh_p95_s": None,  # not timed here: the sessions' own runs refresh their pages (--watchers times it)
        "click_p95_s": click_s[int(0.95 * (len(click_s) - 1))] if click_s else None,
        "health_max_s": max(health_ms) / 1000,
        "runs_trained": trained,
        "all_done_s": seen.all_done_s if seen.all_done_s == seen.all_done_s else None,  # NaN is no JSON
        "failures": failures,
    }
    return 1 if failures else 0


def ray_drivers(pid: int) -> list[int]:
    """The processes below `pid` that hold a Ray driver (ray_host.py's host): the ones with Ray's core
    library mapped. Training workers of the local pool do not load Ray."""
    from tests.ray_cluster import descendants

    found = []
    for child in descendants(pid):
        with contextlib.suppress(OSError):
            if "_raylet" in Path(f"/proc/{child}/maps").read_text():
                found.append(child)
    return found


def run_cost(args: argparse.Namespace) -> int:
    """`--cost` (see the module's docstring): server CPU per second while one watched run trains."""
    where = f"a {args.ray}-CPU Ray head" if args.ray else "the local pool"
    with tempfile.TemporaryDirectory() as tmp, ray_head(args.ray) as (ray_env, _head):
        server = Server(Path(tmp), env={"LN_VIZ_MAX_CONCURRENT": str(args.cap)} | ray_env)
        try:
            got = asyncio.run(_watch_one_run(server, SMALL_RUN.format(steps=args.steps), args.time_limit))
        finally:
            server.stop()
    if got is None:
        print("FAILED: the run did not train to its end in time")
        return 1
    wall, server_cpu, driver_cpu, steps, load = got
    total = server_cpu + driver_cpu
    print(f"one watched run of {steps} steps on {where}: trained {wall:.1f} s after its first step")
    print(
        f"server CPU: {server_cpu:.2f} s in the server process + {driver_cpu:.2f} s in its Ray driver process "
        f"= {total:.2f} s, {total / wall:.3f} s per second of training ({15 * total / wall:.1f} s per 15 s)"
    )
    if str(steps).isdigit():  # per step too: a niced local worker and a Ray actor train at other rates under load
        print(f"server CPU per training step: {1000 * total / int(steps):.2f} ms ({steps} steps)")
    print(f"load average (1 min) at its start and end: {load[0]:.2f}, {load[1]:.2f} on {os.cpu_count()} CPUs")
    return 0


async def _watch_one_run(server: Server, query: str, time_limit: float):
    """Start one run in a tab, and measure the server's CPU from its first step to its end (the tab's
    fragment timers draw it meanwhile); None if it does not end within `time_limit`."""
    tab = Tab(server.url, query)
    await tab.open()
    await tab.click("start")
    deadline = time.monotonic() + time_limit

    def status() -> str:
        return tab.status() or ""

    while "Step" not in status() or status().startswith("**Step 0/"):
        if time.monotonic() > deadline:
            return None
        await asyncio.sleep(0.05)
    drivers = ray_drivers(server.proc.pid)
    t0, load0 = time.perf_counter(), os.getloadavg()[0]
    cpu0 = cpu_seconds(server.proc.pid), sum(cpu_seconds(p) for p in drivers)
    rates = []  # the status line's steps/s as the run trains
    while not any(word in status() for word in ENDED):
        if time.monotonic() > deadline:
            return None
        if "steps/s" in status():
            with contextlib.suppress(ValueError):
                rates.append(float(status().split("steps/s")[0].split("|")[-1].strip()))
        await asyncio.sleep(0.05)
    print(f"steps/s on its status line: median {statistics.median(rates or [float('nan')]):.1f}")
    wall = time.perf_counter() - t0
    cpu1 = cpu_seconds(server.proc.pid), sum(cpu_seconds(p) for p in drivers)
    steps = status().split("/")[1].split()[0] if "/" in status() else "?"
    await tab.close()
    return wall, cpu1[0] - cpu0[0], cpu1[1] - cpu0[1], steps, (load0, os.getloadavg()[0])


def seed_session(sessions: int, cap: int, steps: int, time_limit: float) -> int:
    """`--seed-session` (see the module's docstring). On a runner without owners (before issue 20) the
    same runs are queued first come, first served, which is how the 'before' figures were measured."""
    import inspect

    from ln_viz.config import RunConfig
    from ln_viz.runner import Runner

    fair = "owner" in inspect.signature(Runner.start).parameters
    cfg = RunConfig(depth=2, d_model=32, heads=2, steps=steps, probe_every=10)
    started: list[str] = []  # run ids in the order they got a slot

    def start(runner: Runner, cfg: RunConfig, owner: str, group: str | None = None):
        return runner.start(cfg, owner=owner, group=group) if fair else runner.start(cfg)

    with Runner(max_concurrent=cap, warm_workers=1, on_start=lambda rid, *_: started.append(rid)) as runner:
        runner.wait_warm(120)
        sides = (("a", "post"), ("b", "pre"))
        seeds = [start(runner, cfg.replace(norm_position=p, seed=s), "seeds", f"compare-{a}") for a, p in sides
                 for s in range(3)]  # fmt: skip
        time.sleep(1.0)  # the seed runs train and wait in the queue when the others press Start
        t0, others = [], []
        for i in range(sessions - 1):
            t0.append(time.perf_counter())
            others.append(start(runner, cfg.replace(seed=100 + i), f"tab{i + 1}"))
        places = [h.queue_position for h in others]
        first: list[float | None] = [None] * len(others)
        deadline = time.monotonic() + time_limit
        while time.monotonic() < deadline and not all(h.done for h in [*seeds, *others]):
            for i, h in enumerate(others):
                if first[i] is None and h.view().steps_done >= 1:
                    first[i] = time.perf_counter() - t0[i]
            time.sleep(0.02)
        seeds_s = time.perf_counter() - t0[0] if others else float("nan")
        ended = all(h.done for h in [*seeds, *others])
    order = {rid: n for n, rid in enumerate(started)}
    print(f"{'fair queue' if fair else 'first come, first served'}: 1 session with 2 x 3 seed runs, "
          f"{sessions - 1} pressing Start a second later, cap {cap}, {steps} steps a run")  # fmt: skip
    for i, h in enumerate(others):
        wait = f"{first[i]:.1f} s" if first[i] is not None else "never"
        n = f"run {order[h.run_id] + 1} to start" if h.run_id in order else "not started"
        print(f"session {i + 2}: queue place {places[i]} at Start, first step after {wait}, {n} "
              f"(of {len(started)} started)")  # fmt: skip
    print(f"every run ended {seeds_s:.0f} s after the first Start" if ended else "not every run ended in time")
    last_seed = max(order.get(h.run_id, len(order)) for h in seeds)
    starved = [i + 2 for i, h in enumerate(others) if order.get(h.run_id, len(order)) > last_seed]
    failures = [] if ended else ["a run did not end in time"]
    if starved:
        failures.append(f"session(s) {starved} waited behind the whole seed group")
    for f in failures:
        print("FAILED:", f)
    return 1 if failures else 0


def drive_websockets(
    server: Server, sessions: int, time_limit: float, query: str, workers: Callable[[], int]
) -> Observed:
    seen = Observed(done=[False] * sessions)

    async def run() -> None:
        tabs = [Tab(server.url, query) for _ in range(sessions)]
        await asyncio.gather(*(tab.open() for tab in tabs))
        t_start = time.perf_counter()
        await asyncio.gather(*(tab.click("start") for tab in tabs))  # everyone presses Start at once
        # and sees the page answer it (a rerun sent before would restart the script and lose the press)
        await asyncio.gather(*(asyncio.wait_for(tab.finished.wait(), 60) for tab in tabs))
        deadline = time.monotonic() + time_limit
        seed = 0  # the form's seed at Start: every other click puts it back, so tab 1 shows its own run again
        while not all(seen.done) and time.monotonic() < deadline:
            seen.max_children = max(seen.max_children, workers())  # processes training runs now
            for i, tab in enumerate(tabs):
                text = tab.status()
                if text:
                    seen.status(i, text)
            # A click on the first tab: change its seed (a widget change: the page's script runs again).
            seed = 1 - seed  # (a page shows the run of the settings it names: issue 21, N1)
            t0 = time.perf_counter()
            await tabs[0].set_number("seed", seed)
            try:  # answered by the full run that shows it (Tab: `finished`)
                await asyncio.wait_for(tabs[0].finished.wait(), 30)
                seen.click_ms.append(1000 * (time.perf_counter() - t0))
            except TimeoutError:
                seen.click_ms.append(30_000.0)
            if seen.click_ms[-1] > 1000:
                print(f"slow click: {seen.click_ms[-1]:.0f} ms, tab 1 said: {tabs[0].status()}", flush=True)
            await asyncio.sleep(0.5)
        seen.all_done_s = time.perf_counter() - t_start
        seen.exceptions = sum(tab.exceptions for tab in tabs)
        seen.folded = tabs[0].folded
        await asyncio.gather(*(tab.close() for tab in tabs))

    # In a thread of its own: a caller may already run an event loop (Playwright's sync API does).
    errors: list[BaseException] = []

    def main_thread() -> None:
        try:
            asyncio.run(run())
        except BaseException as e:  # noqa: BLE001 -- raised again in the caller
            errors.append(e)

    worker = threading.Thread(target=main_thread, name="load-test-clients")
    worker.start()
    worker.join()
    if errors:
        raise errors[0]
    return seen


# --- Chromium tabs -------------------------------------------------------------------------------
def drive_browsers(
    server: Server, sessions: int, time_limit: float, query: str, workers: Callable[[], int]
) -> Observed:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    seen = Observed(done=[False] * sessions)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
        contexts = [browser.new_context(viewport={"width": 1280, "height": 720}) for _ in range(sessions)]
        pages = [c.new_page() for c in contexts]
        for page in pages:
            page.goto(server.url + "/?" + query)
        for page in pages:
            page.wait_for_selector(".st-key-start button", timeout=120_000)
            page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]')
        t_start = time.perf_counter()
        for page in pages:  # everyone presses Start within about a second
            page.locator(".st-key-start button").click(no_wait_after=True)
        deadline = time.monotonic() + time_limit
        while not all(seen.done) and time.monotonic() < deadline:
            seen.max_children = max(seen.max_children, workers())  # processes training runs now
            for i, page in enumerate(pages):
                if seen.done[i]:
                    continue
                try:  # the status line, once this tab's run exists (a busy tab may take a while)
                    status = page.locator("[data-testid='stMarkdown'] strong").filter(has_text=STATUS_LINE)
                    seen.status(i, status.first.inner_text(timeout=5_000))
                except PlaywrightTimeout:
                    continue
            t0 = time.perf_counter()  # a click on the first tab: open and close its Advanced expander
            try:
                pages[0].get_by_test_id("stExpander").first.locator("summary").click(timeout=30_000)
                pages[0].get_by_text("Norm type").first.wait_for(state="visible", timeout=30_000)
                seen.click_ms.append(1000 * (time.perf_counter() - t0))
                pages[0].get_by_test_id("stExpander").first.locator("summary").click(timeout=30_000)
            except PlaywrightTimeout:
                seen.click_ms.append(30_000.0)  # no answer in 30 s: counted as such, and the test goes on
            time.sleep(0.5)
        seen.all_done_s = time.perf_counter() - t_start
        for c in contexts:
            c.close()
        browser.close()
    return seen


if __name__ == "__main__":
    raise SystemExit(main())
