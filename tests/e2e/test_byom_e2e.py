"""Your own model in headless Chromium: examples/plain_loop.py trains a nanoGPT-style model in another process,
attached to the store of a running server (ln_viz.attach); the Runs page lists the run and opens it with its
model card, and the watch link follows it as it trains (the step it shows rises), drawn with the model's own
matrix names."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from ln_viz.store import Store
from tests.e2e.conftest import NOTHING_TRAINS, ROOT, Server, chart_value, stop_and_check, wait_idle
from tests.e2e.test_runs_e2e import click_row

pytestmark = pytest.mark.e2e
STEP = re.compile(r"Step (\d+)")


@pytest.fixture(scope="module")
def attached_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = Server(tmp_path_factory.mktemp("byom_app"), env=NOTHING_TRAINS)  # nothing here trains in the server
    yield s
    stop_and_check(s)


@pytest.fixture(scope="module")
def training(attached_server: Server) -> Iterator[int]:
    """The example's loop, in its own process, into the server's store: long enough to be watched while it
    trains (interrupted at the end: its run ends 'stopped'). Its run's id once its first steps are stored."""
    log = open(attached_server.log_path.with_name("example.log"), "w")
    proc = subprocess.Popen(
        [sys.executable, "examples/plain_loop.py", "--store", str(attached_server.store), "--steps", "200000",
         "--every", "5"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        # SIGINT as Python expects it: a suite started in the background by a shell (SIGINT ignored, inherited)
        # would leave the example deaf to the Ctrl-C below, killed 30 s later
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        run_id = None
        while run_id is None:
            assert proc.poll() is None and time.monotonic() < deadline, attached_server.log_path.with_name(
                "example.log"
            ).read_text()
            time.sleep(0.5)
            if attached_server.store.exists():
                with Store(attached_server.store) as store:
                    rows = [r for r in store.list_runs() if r.source == "attach" and r.steps_done >= 5]
                run_id = rows[0].id if rows else None
        yield run_id
    finally:
        proc.send_signal(signal.SIGINT)  # KeyboardInterrupt: attach's context manager closes the run
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()


def _step(page) -> int:
    """The step the watch page's status line says; read from the first copy (a refresh may hold two for a moment,
    the old one stale) until one answers."""
    deadline = time.monotonic() + 30
    while True:
        try:
            match = STEP.search(page.locator(".st-key-live_status").first.inner_text(timeout=2_000))
        except Exception:  # noqa: BLE001 - mid-redraw: the status is being replaced
            match = None
        if match:
            return int(match.group(1))
        assert time.monotonic() < deadline, "the watch page shows no step"
        time.sleep(0.3)


def test_an_attached_run_is_listed_with_its_card_and_watched_as_it_trains(attached_server, training, page) -> None:
    page.goto(attached_server.url + "/runs")
    page.get_by_role("heading", name="Stored runs").wait_for(timeout=60_000)
    page.locator(".stDataFrame").first.wait_for()
    wait_idle(page, timeout=60_000)
    click_row(page, 0)  # the one run: the example's
    page.get_by_text(f"Run {training}: nanoGPT-style · your own model").wait_for(timeout=60_000)
    page.get_by_text("TinyGPT · Pre-LN · 3 blocks").first.wait_for()
    card = page.locator("[data-testid='stExpander']").filter(has_text="Model card")
    card.locator(".stDataFrame").nth(1).wait_for(timeout=30_000)  # drawn a moment after the first on a loaded machine
    assert card.locator(".stDataFrame").count() == 2  # the card, and the matrices of a block with their roles
    # drawn with its own matrix names (the Runs page draws the run as stored when opened: one drawing to read)
    names = chart_value(page, "runs_layer_profile", "gd => gd.data.map(d => d.name)", timeout=90)
    assert {"c_attn", "attn.c_proj", "c_fc", "mlp.c_proj"} <= set(names), names  # its own, not ffn.w1/ffn.w2
    assert "ffn.w2" not in names
    assert page.get_by_test_id("stException").count() == 0

    page.goto(f"{attached_server.url}/?watch={training}")
    page.locator(".st-key-layer_profile .js-plotly-plot").first.wait_for(timeout=90_000)  # its charts, redrawn
    first = _step(page)
    deadline = time.monotonic() + 60
    while _step(page) <= first:  # the page polls the store the other process writes
        assert time.monotonic() < deadline, "the watched run's step did not move"
        time.sleep(0.5)
    assert page.get_by_test_id("stException").count() == 0
