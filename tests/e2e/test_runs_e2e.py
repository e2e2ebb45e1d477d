"""The Runs page in headless Chromium: a server started with LN_VIZ_LOAD_DEMOS=1 lists the bundled demo
runs at once; clicking a row opens the run in the live page's charts, without retraining, and the one step control's
Play moves the distribution and the per-layer profile together."""

from __future__ import annotations

import gzip
import json
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ln_viz.export import CHARTS
from tests.e2e.conftest import (
    NOTHING_TRAINS,
    STEP_OF,
    Server,
    chart,
    chart_value,
    settled_screenshot,
    stop_and_check,
    wait_idle,
)

pytestmark = pytest.mark.e2e
OPENED_IN_VIEW = """() => { const el = document.querySelector('.st-key-runs_opened');
  const header = document.querySelector('[data-testid="stHeader"]');
  const below = header ? header.getBoundingClientRect().bottom : 0;  // not under the fixed header
  if (!el) return false; const r = el.getBoundingClientRect(); return r.top >= below && r.bottom <= innerHeight; }"""
ROW_H = 35  # px: glide-data-grid's default row height, also its header's, in st.dataframe


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """The app on its own empty store, told to load the bundled demo runs (as for a talk)."""
    s = Server(tmp_path_factory.mktemp("runs_app"), env={"LN_VIZ_LOAD_DEMOS": "1"} | NOTHING_TRAINS)
    yield s
    stop_and_check(s)


def click_row(page, row: int) -> None:
    """Select a table row: the grid is a canvas, so click its row-marker column by position."""
    grid = page.locator(".stDataFrame [data-testid='stDataFrameResizable']").first
    box = grid.bounding_box()
    assert box is not None
    page.mouse.click(box["x"] + 18, box["y"] + ROW_H * (row + 1) + ROW_H / 2)


def test_open_a_demo_run_and_play_its_animation(demo_server, page) -> None:
    page.goto(demo_server.url + "/runs")  # the server's first visit, by a bookmarked link (as in a talk)
    wait_idle(page, timeout=60_000)
    page.get_by_role("heading", name="Stored runs").wait_for()
    wait_idle(page, timeout=60_000)
    links = [x.inner_text().split("\n")[-1] for x in page.get_by_test_id("stSidebarNavLink").all()]
    assert "Live training" in links and "Runs" in links  # inside the router (old-style menu: "live", "runs")
    page.locator(".stDataFrame").first.wait_for()
    assert page.get_by_test_id("stException").count() == 0
    settled_screenshot(page, "runs_list")

    click_row(page, 0)
    chart(page, "runs_act_dist").wait_for(timeout=60_000)
    wait_idle(page, timeout=60_000)
    # the run opens below the table, out of the first screen: the page brings its heading into view
    page.wait_for_function(OPENED_IN_VIEW, timeout=10_000)
    play = page.locator(".st-key-runs_probe_step_play button")
    play.wait_for(timeout=60_000)
    # read once each chart answers: a chart being drawn has no layout for a moment (on a loaded machine, read then)
    last = [chart_value(page, k, STEP_OF, ok=lambda v: v is not None) for k in ("runs_act_dist", "runs_layer_profile")]
    assert last[0] == last[1] and last[0] > 5, last  # opened at the last probe step, both charts
    length = "gd => gd._fullData[0]._length"
    assert chart_value(page, "runs_loss_chart", length, ok=lambda n: n > 100) > 100  # every step

    # Play (from the last step it starts again at the first), then Pause: both charts at the step shown
    play.scroll_into_view_if_needed()
    play.click()
    page.wait_for_function(
        "() => document.querySelector('.st-key-runs_probe_step_play button').innerText.includes('Pause')",
        timeout=30_000,
    )
    # the steps shown while playing: the timer keeps moving it (once it moved one step and stopped). Pause as
    # soon as it has moved twice: on a fast machine the whole replay ended within 4 s, and a click on the
    # then "Play" button started it again (CI, session 10)
    seen: set[str] = set()
    deadline = time.monotonic() + 20
    while len(seen) < 3 and time.monotonic() < deadline:
        seen.add(page.locator(".st-key-runs_probe_step [data-testid='stSliderThumbValue']").inner_text())
        time.sleep(0.1)
    assert len(seen) >= 3, seen
    assert "Pause" in play.inner_text(), "the replay ended before it could be paused"
    play.click()
    page.wait_for_function(
        "() => document.querySelector('.st-key-runs_probe_step_play button').innerText.includes('Play')",
        timeout=30_000,
    )
    wait_idle(page, timeout=60_000)
    time.sleep(1)
    shown = [chart_value(page, k, STEP_OF, ok=lambda v: v is not None) for k in ("runs_act_dist", "runs_layer_profile")]
    slider = int(page.locator(".st-key-runs_probe_step [data-testid='stSliderThumbValue']").inner_text())
    assert shown[0] == shown[1] == slider < last[0], (shown, slider, last)  # one step everywhere, it moved
    assert page.get_by_test_id("stException").count() == 0
    settled_screenshot(page, "runs_act_dist_played")
    page.locator(".st-key-runs_loss_chart").scroll_into_view_if_needed()
    settled_screenshot(page, "runs_open_demo")


def test_downloads_are_built_when_asked_for(demo_server, page) -> None:
    """The run file and tables are built on click; chart files after "Prepare chart files" (kaleido in the
    server, with the system's Chromium)."""
    page.goto(demo_server.url)
    wait_idle(page, timeout=60_000)
    page.get_by_test_id("stSidebarNavLink").filter(has_text="Runs").click()
    page.wait_for_url("**/runs**")
    wait_idle(page, timeout=60_000)
    page.locator(".stDataFrame").first.wait_for()
    click_row(page, 0)
    wait_idle(page, timeout=60_000)
    page.get_by_text("Label, download or delete this run").click()
    with page.expect_download(timeout=60_000) as download:
        page.locator(".st-key-runs_dl_run button").click()
    blob = Path(download.value.path()).read_bytes()
    assert download.value.suggested_filename.endswith(".json.gz")
    assert json.loads(gzip.decompress(blob))["format"] == "ln-viz-run"
    with page.expect_download(timeout=60_000) as download:
        page.locator(".st-key-runs_dl_csv button").click()
    assert "scalars.csv" in zipfile.ZipFile(download.value.path()).namelist()
    page.locator(".st-key-runs_prepare_charts button").click()
    page.locator(".st-key-runs_dl_charts button").wait_for(timeout=120_000)
    with page.expect_download(timeout=60_000) as download:
        page.locator(".st-key-runs_dl_charts button").click()
    names = zipfile.ZipFile(download.value.path()).namelist()
    assert {"act_dist.png", "act_dist.svg", "act_dist.html", "loss.png", "attn_entropy.svg"} <= set(names)
    assert len(names) == 3 * len(CHARTS)  # every chart as png, svg and html (a demo run: no instability probes)
    assert page.get_by_test_id("stException").count() == 0
