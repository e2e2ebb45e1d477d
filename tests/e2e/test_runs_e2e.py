"""The Runs page in headless Chromium: a server started with LN_VIZ_LOAD_DEMOS=1 lists the bundled demo
runs at once; clicking a row opens the run in the live page's charts, and Plotly's Play button animates
the distribution chart in the browser, with no server round-trip and no retraining."""

from __future__ import annotations

import gzip
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import Server, chart, settled_screenshot, stop_and_check, wait_idle

pytestmark = pytest.mark.e2e
ROW_H = 35  # px: glide-data-grid's default row height, also its header's, in st.dataframe


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """The app on its own empty store, told to load the bundled demo runs (as for a talk)."""
    s = Server(tmp_path_factory.mktemp("runs_app"), env={"LN_VIZ_LOAD_DEMOS": "1"})
    yield s
    stop_and_check(s)


def click_row(page, row: int) -> None:
    """Select a table row: the grid is a canvas, so click its row-marker column by position."""
    grid = page.locator(".stDataFrame [data-testid='stDataFrameResizable']").first
    box = grid.bounding_box()
    assert box is not None
    page.mouse.click(box["x"] + 18, box["y"] + ROW_H * (row + 1) + ROW_H / 2)


def slider_active(gd) -> int:
    return gd.evaluate("gd => gd._fullLayout.sliders[0].active")


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
    act = chart(page, "runs_act_dist")
    act.wait_for(timeout=60_000)
    wait_idle(page, timeout=60_000)
    page.locator(".st-key-runs_act_dist .slider-container").first.wait_for()
    n_frames = act.evaluate("gd => gd._transitionData._frames.length")
    assert n_frames > 5
    assert slider_active(act) == n_frames - 1  # opened at the last probe step
    assert chart(page, "runs_loss_chart").evaluate("gd => gd._fullData[0]._length") > 100  # every step

    # Play (from the last frame it starts again at the first): the frames advance in the browser
    act.scroll_into_view_if_needed()
    act.evaluate(
        """gd => { window._seen = []; window._ended = false;
                   gd.on('plotly_animatingframe', e => window._seen.push(e.name));
                   gd.on('plotly_animated', () => { window._ended = true; }); }"""
    )
    last_step = int(act.evaluate("gd => gd._transitionData._frames.at(-1).name"))
    page.locator(".st-key-runs_act_dist .updatemenu-button").filter(has_text="Play").click()
    page.wait_for_function("() => new Set(window._seen).size >= 3", timeout=30_000)
    seen = [int(x) for x in page.evaluate("() => window._seen")]
    assert seen == sorted(seen) and seen[0] < last_step, seen  # forward, frame by frame, from the start
    page.wait_for_function(
        f"() => document.querySelector('.st-key-runs_act_dist .js-plotly-plot')"
        f"._fullLayout.sliders[0].active < {n_frames - 1}"
    )  # the slider moved with them
    # let it play to the end: Pause mid-animation makes plotly.js reject the interrupted animation's promise,
    # an "undefined" page error that the page fixture would count
    page.wait_for_function("() => window._ended", timeout=60_000)

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
    assert {"act_dist.png", "act_dist.svg", "act_dist.html", "loss.png"} <= set(names) and len(names) == 15
    assert page.get_by_test_id("stException").count() == 0
