"""Browser tests: the real app (`streamlit run app.py`) in headless Chromium (Debian's package).

Fixtures: `server` starts the app on a free loopback port with its own store and checks its log for
tracebacks at the end (one server for the whole session in the modules that set `SHARE_SERVER = True`);
`page` opens a fresh browser context (1280x720, the projector size) that fails the test on any page error.
Screenshots go to test-artifacts/ (git-ignored).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from ln_viz.runner.process import descendants
from tests.e2e.serverlog import tracebacks

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
BROWSER_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


WORKERS_READY = "ln-viz: workers ready"  # printed once the server's prewarmed workers are up
# for a server whose tests never open the Init lab: no Init lab workers warmed at its start (the page would start
# them when it first measures; ln_viz.server.lifespan.WARM_INIT_LAB); that warm pool cost each server start seconds
# of both cores
NO_INIT_LAB = {"LN_VIZ_WARM_INIT_LAB": "0"}
NOTHING_TRAINS = NO_INIT_LAB | {"LN_VIZ_WARM_WORKERS": "0"}  # for a server on which nothing trains: no warm worker


class Server:
    def __init__(self, tmp: Path, env: dict[str, str] | None = None, wait_workers: bool = True) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = tmp / "server.log"
        self.store = tmp / "runs.sqlite"
        full_env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
        # the Init lab's workers start at once when no run trains (ln_viz.server.lifespan.QUIET_S is 15 s)
        full_env |= {"LN_VIZ_STORE": str(self.store), "LN_VIZ_POOL_QUIET_S": "0"} | (env or {})
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
             "--server.address", "127.0.0.1", "--server.port", str(self.port),
             "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false"],
            cwd=ROOT, env=full_env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        self._wait_ready()
        if wait_workers:
            self.wait_workers()

    def _wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the app exited with {self.proc.returncode}:\n{self.log()}")
            try:
                with urllib.request.urlopen(self.url + "/_stcore/health", timeout=1) as r:
                    if r.read() == b"ok":
                        return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"the app did not answer /_stcore/health in {timeout} s:\n{self.log()}")

    def wait_workers(self, timeout: float = 120) -> None:
        """Wait until the workers the server starts with are ready (its log says so), so that tests
        counting worker processes start from a settled baseline."""
        deadline = time.monotonic() + timeout
        while WORKERS_READY not in self.log():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the app's workers were not ready in {timeout} s:\n{self.log()}")
            time.sleep(0.1)

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text()

    def children(self) -> list[int]:
        """Process ids of the server's descendants: its fork server and the workers forked from it, the Init lab's
        pool, multiprocessing's resource tracker."""
        return list(descendants(self.proc.pid))

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        self._log.close()
        return self.proc.returncode


def stop_and_check(server: Server) -> None:
    """Stop the server as an operator would (SIGTERM) and check it went cleanly: no traceback, every
    worker process and pool shut down, nothing left running."""
    workers = server.children()
    code = server.stop()
    log = server.log_path.read_text()
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{p}").exists() for p in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in workers if Path(f"/proc/{p}").exists()], "worker processes outlived the server"
    # the fork server's folder (ln_viz.runner.process.MP_PREFIX): a SIGTERM runs no exit code, the lifespan removes it
    assert not list(Path(tempfile.gettempdir()).glob(f"ln-viz-mp-{server.proc.pid}-*")), "the fork server's folder"
    assert "Traceback" not in tracebacks(log), log  # Streamlit's dropped-websocket traceback is not ours
    assert "leaked" not in log, log  # every worker and pool was shut down
    # uvicorn (st.App) shuts down on SIGTERM, then re-raises it: -15 is its normal exit
    assert code in (0, -signal.SIGTERM), log


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is not installed: run the tests through scripts/test.sh")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="session")
def shared_server(tmp_path_factory) -> Iterator[Server]:
    """One server for every browser file whose tests count nothing on it (no worker processes, no stored
    runs, no run numbers) and leave it running: each server start with its warm workers took 13-18 s on CI.
    The lane is serial, so its tests still have the server to themselves; its log is checked at the end."""
    s = Server(tmp_path_factory.mktemp("shared_app"))
    yield s
    stop_and_check(s)


@pytest.fixture(scope="module")
def server(request, tmp_path_factory) -> Iterator[Server]:
    """The app's server for a test module: its own (the modules that use it never open the Init lab), or the
    shared one where the module sets `SHARE_SERVER`."""
    if getattr(request.module, "SHARE_SERVER", False):
        yield request.getfixturevalue("shared_server")
        return
    s = Server(tmp_path_factory.mktemp("app"), env=NO_INIT_LAB)
    yield s
    stop_and_check(s)


@pytest.fixture
def page(browser, request):
    context = browser.new_context(viewport={"width": 1280, "height": 720}, locale="en-US")
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    yield pg
    ARTIFACTS.mkdir(exist_ok=True)
    try:
        pg.screenshot(path=str(ARTIFACTS / f"{request.node.name}-final.png"), full_page=True)
    except Exception:  # noqa: BLE001 - a failed screenshot must not hide the test's own result
        pass
    context.close()
    assert errors == [], errors


def wait_idle(page, timeout: float = 30_000) -> None:
    """Wait until the script is not running (clicks made mid-run can be lost; browser-testing.md 6.2)."""
    page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]', timeout=timeout)


def settled_screenshot(page, name: str) -> Path:
    """A screenshot once no stale element is left and every Plotly chart is visible."""
    page.mouse.move(0, 0)
    page.wait_for_function(
        """() => !document.querySelector('[data-stale="true"]') &&
                 [...document.querySelectorAll('.js-plotly-plot')].every(
                     el => getComputedStyle(el).visibility !== 'hidden')""",
        timeout=15_000,
    )
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def chart(page, key: str, fresh: bool = True):
    """The live (non-stale) Plotly div of the chart with this key; `fresh=False`: also while its fragment reruns
    (marked stale, still its last drawing)."""
    live = "[data-stale='false']" if fresh else ""
    return page.locator(f".st-key-{key}{live} .js-plotly-plot").first


# the step a chart shows: the last number of its title, or of its subtitle ("step 30")
STEP_OF = """gd => { const title = gd.layout.title || {};
                     const t = (title.text || '') + ' ' + ((title.subtitle || {}).text || '');
                     const m = t.match(/(\\d+)\\s*$/); return m ? +m[1] : null; }"""


def chart_value(page, key: str, js: str, ok=bool, timeout: float = 60, fresh: bool = True):
    """`js` evaluated on the chart with this key, once it answers and `ok(value)` holds: a chart being
    redrawn has no `_fullData` for a moment, and on a loaded machine a reading can land there repeatedly.
    `fresh=False` also reads the chart while its fragment reruns (marked stale, still the last drawing):
    on a loaded machine a page refreshing every second is stale most of the time."""
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        try:
            where = chart(page, key, fresh)
            value = where.evaluate(js, timeout=2_000)
            if ok(value):
                return value
        except Exception:  # noqa: BLE001 - mid-redraw: the chart is being replaced
            pass
        time.sleep(0.3)
    raise AssertionError(f"{key}: no reading passed its check in {timeout} s (last: {value!r})")
