"""The docs' pictures of the app: each page of the real app (`streamlit run app.py`) in headless Chromium
(Debian's package, as the browser tests drive it), saved as small PNGs in docs/img/.

    .venv/bin/python scripts/make_docs_pictures.py [--only live,compare,...]

The server gets a store of its own in a temporary folder with the demo runs loaded (LN_VIZ_LOAD_DEMOS=1), so
the Runs page has runs to list. Live trains its default preset and Compare its default scenario (Post-LN vs
Pre-LN) by pressing Start / Start both, the README's one-minute tour, and are shot when the runs have ended;
the lecture view of the same pair at 1920x1080 follows by the sidebar's switch. The other pages draw what
ships measured at once (Init lab and Stability map in their lecture view at 1920x1080, where each fits one
screen). Each PNG is cut to a 256-colour palette (Pillow), which
keeps the charts' flat colours and makes the files about a third of their size. A few minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "img"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking"]
SMALL, LARGE = (1280, 720), (1920, 1080)  # the projector's size; the lecture view's full HD
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
# nothing stale, and every chart on the screen drawn (one below it may wait for its turn)
SETTLED = """() => !document.querySelector('[data-stale="true"]') &&
                   [...document.querySelectorAll('.js-plotly-plot')].filter(el => {
                       const r = el.getBoundingClientRect(); return r.bottom > 0 && r.top < innerHeight; })
                   .every(el => getComputedStyle(el).visibility !== 'hidden')"""
# the element at the top of the screen, a little room above it (the page scrolls in its main container)
SCROLL_TO = """el => { el.scrollIntoView({block: 'start'}); let p = el.parentElement;
                       while (p && p.scrollHeight <= p.clientHeight) p = p.parentElement;
                       if (p) p.scrollTop -= 24; }"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(tmp: Path) -> tuple[subprocess.Popen, str]:
    """The app on a free loopback port, its own store, the demo runs loaded; returns once it answers."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    env |= {"LN_VIZ_STORE": str(tmp / "runs.sqlite"), "LN_VIZ_LOAD_DEMOS": "1"}
    log = open(tmp / "server.log", "w")  # noqa: SIM115 - open while the server runs
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
         "--server.address", "127.0.0.1", "--server.port", str(port),
         "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError((tmp / "server.log").read_text())
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=1) as r:
                if r.read() == b"ok":
                    break
        except OSError:
            time.sleep(0.3)
    while "ln-viz: workers ready" not in (tmp / "server.log").read_text():  # a Start trains at once
        if time.monotonic() > deadline:
            raise RuntimeError("the app's workers were not ready in time")
        time.sleep(0.3)
    return proc, url


def stop_server(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)


def save(page, name: str) -> None:
    """The viewport as docs/img/<name>.png, once every chart is drawn, on a 256-colour palette."""
    page.mouse.move(0, 0)
    page.wait_for_selector(IDLE, timeout=60_000)
    page.wait_for_function(SETTLED, timeout=60_000)
    time.sleep(1.5)  # Plotly's last transitions
    raw = OUT / f"{name}.raw.png"
    page.screenshot(path=str(raw))
    image = Image.open(raw).convert("RGB").quantize(colors=256, method=Image.Quantize.FASTOCTREE)
    image.save(OUT / f"{name}.png", optimize=True)
    raw.unlink()
    print(f"docs/img/{name}.png: {(OUT / f'{name}.png').stat().st_size / 1e3:.0f} kB", file=sys.stderr)


def shoot_live(page, url: str) -> None:
    page.goto(url + "/")
    page.wait_for_selector(IDLE, timeout=60_000)
    page.locator(".st-key-start button").click()
    page.wait_for_selector(".st-key-probe_step_play button", timeout=300_000)  # enabled: the run has ended
    save(page, "live")


def shoot_compare(page, url: str) -> None:
    """The tour: Compare, the default scenario "Post-LN vs Pre-LN", Start both; then the lecture view."""
    page.goto(url + "/compare")
    page.wait_for_selector(IDLE, timeout=60_000)
    page.get_by_text("Post-LN vs Pre-LN, no warm-up").first.wait_for()  # the default scenario's caption
    page.locator(".st-key-compare_start button").click()
    page.wait_for_selector(".st-key-compare_step_play button", timeout=300_000)  # both runs have ended
    save(page, "compare")
    page.set_viewport_size({"width": LARGE[0], "height": LARGE[1]})
    page.get_by_test_id("stSidebar").get_by_text("Lecture view").click()
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stSidebar\"]')?.checkVisibility()")
    save(page, "compare-lecture")


def shoot_static(page, url: str, path: str, name: str, ready: str, scroll: str | None = None, lecture=False) -> None:
    """A page that draws without a click; `scroll`: an element brought to the top of the screen first (a
    section below the page's top); `lecture`: the lecture view at 1920x1080, where the page fits one screen."""
    if lecture:
        page.set_viewport_size({"width": LARGE[0], "height": LARGE[1]})
        path += "?present=1"
    page.goto(url + path)
    page.wait_for_selector(ready, timeout=120_000)
    if scroll:
        page.wait_for_selector(IDLE, timeout=60_000)
        page.locator(scroll).first.evaluate(SCROLL_TO)
    save(page, name)


SHOTS = {
    "live": shoot_live,
    "compare": shoot_compare,
    "init-lab": lambda p, u: shoot_static(
        p, u, "/init-lab", "init-lab", ".st-key-init_resid .js-plotly-plot", lecture=True
    ),
    "runs": lambda p, u: shoot_static(p, u, "/runs", "runs", "[data-testid='stDataFrame']"),
    "theory": lambda p, u: shoot_static(
        p, u, "/theory", "theory", ".katex", scroll='h2:has-text("Post-LN and Pre-LN")'
    ),
    "stability-map": lambda p, u: shoot_static(
        p, u, "/stability-map", "stability-map", ".js-plotly-plot", lecture=True
    ),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(SHOTS), help="comma-separated: " + ", ".join(SHOTS))
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = start_server(Path(tmp))
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
                for name in args.only.split(","):
                    context = browser.new_context(viewport={"width": SMALL[0], "height": SMALL[1]}, locale="en-US")
                    SHOTS[name](context.new_page(), url)
                    context.close()
                browser.close()
        finally:
            stop_server(proc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
