"""A classroom on one server: N browser tabs press Start at once (loopback only, bounded in count and time).

    .venv/bin/python benchmarks/load_test.py [--sessions 10] [--cap 2]

Checks and prints: the health endpoint's and a click's answer times while everything trains, that at
most `cap` runs train at once and the rest show their place in the queue and start in turn, and that
once every tab is closed no worker process is left and the server's memory is back near its start.
Exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench import rss_mb  # noqa: E402
from tests.e2e.conftest import BROWSER_ARGS, CHROMIUM, Server  # noqa: E402

STATUS_LINE = re.compile(r"\||Queued: place")  # `Step 12/400 | ...` or the queue place
SMALL_RUN = "?depth=2&d=32&heads=2&steps=400&probe=10"  # ~10 s each on 2 cores: the queue must form


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--cap", type=int, default=2)
    parser.add_argument("--time-limit", type=float, default=300, help="seconds before the test gives up")
    args = parser.parse_args(argv)
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    failures: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(Path(tmp), env={"LN_VIZ_MAX_CONCURRENT": str(args.cap)})
        health_ms: list[float] = []
        stop = threading.Event()

        def poll_health() -> None:
            while not stop.is_set():
                t0 = time.perf_counter()
                try:
                    with urllib.request.urlopen(server.url + "/_stcore/health", timeout=10) as r:
                        r.read()
                except OSError:  # no answer within 10 s: counted as such, and polling goes on
                    pass
                health_ms.append(1000 * (time.perf_counter() - t0))
                time.sleep(0.25)

        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
                contexts = [browser.new_context(viewport={"width": 1280, "height": 720}) for _ in range(args.sessions)]
                pages = [c.new_page() for c in contexts]
                for page in pages:
                    page.goto(server.url + "/" + SMALL_RUN)
                for page in pages:
                    page.wait_for_selector(".st-key-start button", timeout=120_000)
                    page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]')
                baseline_children = len(server.children())
                rss_start = rss_mb(server.proc.pid)
                poller = threading.Thread(target=poll_health, daemon=True)
                poller.start()
                t_start = time.perf_counter()
                for page in pages:  # everyone presses Start within about a second
                    page.locator(".st-key-start button").click(no_wait_after=True)
                max_children, queue_seen, click_ms = 0, set(), []
                deadline = time.monotonic() + args.time_limit
                done = [False] * len(pages)
                while not all(done) and time.monotonic() < deadline:
                    max_children = max(max_children, len(server.children()))
                    for i, page in enumerate(pages):
                        if done[i]:
                            continue
                        try:  # the status line, once this tab's run exists (a busy tab may take a while)
                            status = page.locator("[data-testid='stMarkdown'] strong").filter(has_text=STATUS_LINE)
                            text = status.first.inner_text(timeout=5_000)
                        except PlaywrightTimeout:
                            continue
                        if "Queued: place" in text or "place" in text:
                            queue_seen.add(text.split("place")[1].split()[0])
                        if "completed" in text or "stalled" in text:
                            done[i] = True
                    t0 = time.perf_counter()  # a click on the first tab: open and close its Advanced expander
                    pages[0].get_by_test_id("stExpander").first.locator("summary").click()
                    pages[0].get_by_text("Norm type").first.wait_for(state="visible", timeout=10_000)
                    click_ms.append(1000 * (time.perf_counter() - t0))
                    pages[0].get_by_test_id("stExpander").first.locator("summary").click()
                    time.sleep(0.5)
                all_done_s = time.perf_counter() - t_start
                stop.set()
                poller.join()
                for c in contexts:
                    c.close()
                browser.close()
            time.sleep(5)  # sessions released, their runs stopped, workers reaped
            left = len(server.children())
            rss_end = rss_mb(server.proc.pid)
        finally:
            stop.set()
            server.stop()

    # The warm pool keeps `baseline_children` workers; every run adds one while it trains.
    trained_at_once = max_children - baseline_children
    print(f"sessions {args.sessions}, cap {args.cap}: all runs ended in {all_done_s:.0f} s")
    slow = sum(ms > 1000 for ms in health_ms)
    print(
        f"health: median {statistics.median(health_ms):.0f} ms, max {max(health_ms):.0f} ms over {len(health_ms)} polls"
        f" ({slow} over a second)"
    )
    print(
        f"click answered: median {statistics.median(click_ms):.0f} ms, max {max(click_ms):.0f} ms over "
        f"{len(click_ms)} clicks ({sum(ms > 1000 for ms in click_ms)} over a second)"
    )
    print(f"worker processes beyond the warm pool, at most: {trained_at_once}; queue places seen: {sorted(queue_seen)}")
    print(f"after every tab closed: {left} worker process(es) (warm pool {baseline_children})")
    print(f"server RSS: {rss_start:.0f} MB before, {rss_end:.0f} MB after")
    if not all(done):
        failures.append("not every run ended in time")
    if max(health_ms) > 1000:
        failures.append("the health endpoint took over a second")
    if statistics.median(click_ms) > 1000:
        failures.append("clicks took over a second")
    if trained_at_once > args.cap + 1:  # +1: a stopping worker may still be exiting as the next starts
        failures.append(f"{trained_at_once} workers at once for a cap of {args.cap}")
    if not queue_seen:
        failures.append("no tab showed its place in the queue")
    if left > baseline_children:
        failures.append(f"{left - baseline_children} worker(s) left after the tabs closed")
    if rss_end > rss_start + 150:
        failures.append("the server kept more than 150 MB")
    for f in failures:
        print("FAILED:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
