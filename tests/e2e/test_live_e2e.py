"""The live page in headless Chromium: Start a preset, watch the charts move, Stop; tab close and a
second Start leave no worker behind; a depth-24 run leaves the page responsive; Korean; the lecture view."""

import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from tests.e2e.conftest import chart, chart_value, settled_screenshot, wait_idle

pytestmark = pytest.mark.e2e

# Points drawn: scatter lengths plus heatmap columns, read from plotly's decoded _fullData (the figure
# JSON sends numpy arrays as typed base64, so gd.data has no plain arrays to count).
POINTS = """gd => (gd._fullData || []).reduce(
    (n, tr) => n + (tr._length || 0) + (tr.z && tr.z[0] ? tr.z[0].length : 0), 0)"""
# A fingerprint of a heatmap's values, to see it change from one refresh to the next.
Z_SUM = """gd => (gd._fullData || []).reduce((n, tr) => n + (!tr.z ? 0 : Array.from(tr.z).reduce(
    (a, row) => a + Array.from(row).reduce((x, v) => x + (+v || 0), 0), 0)), 0)"""


def open_app(page, url: str) -> None:
    """Open the app and wait until its first run has ended: right after `goto` the page can read as not running
    before its script has started, so the wait for the start button comes first (CI, stop 40: the lecture view's
    sidebar was read while the run that hides it was still drawing)."""
    page.goto(url)
    page.wait_for_selector(".st-key-start button", timeout=30_000)
    wait_idle(page)


def points(page, key: str) -> int:
    """Points drawn on the chart with this key (-1 while it is redrawn). Read also while its fragment reruns
    (its last drawing): on a loaded machine (two browser tests at once) a page that refreshes every second can be
    stale at nearly every reading; a chart of a run training "never had more than 4 points" in 60 s."""
    try:
        return chart(page, key, fresh=False).evaluate(POINTS, timeout=2_000)
    except Exception:  # noqa: BLE001 - mid-redraw: the chart is being replaced
        return -1


def wait_points(page, key: str, more_than: int, timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        n = points(page, key)
        if n > more_than:
            return n
        time.sleep(0.3)
    raise AssertionError(f"{key} never had more than {more_than} points")


TRAINING_LOSS = """gd => ((gd._fullData || []).find(tr => tr.name === "training loss") || {})._length || 0"""


def loss_steps(page) -> int:
    """Training-loss points drawn on the live loss chart (its axes, unigram line and planned learning
    rate are drawn before Start)."""
    try:
        return chart(page, "loss_chart", fresh=False).evaluate(TRAINING_LOSS, timeout=2_000)
    except Exception:  # noqa: BLE001 - mid-redraw
        return 0


def status_step(page) -> int:
    """The step number in the status line (`Step 120/300 | ...`)."""
    text = status_text(page)
    return int(text.split("/")[0].split()[-1]) if text.startswith(("Step", "스텝")) else 0


def status_text(page) -> str:
    return page.locator("[data-testid='stMarkdown'] strong").filter(has_text="|").first.inner_text()


def worker_count(server) -> int:
    """The server's living descendants (a worker that has exited but is not reaped yet does not count)."""
    return len([p for p in server.children() if process_state(p) not in ("Z", "X", "?")])


def process_state(pid: int) -> str:
    """The state letter of a process (R, S, Z ...), '?' where it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "?"


def settled_worker_count(server, still: float = 2.0, limit: float = 20.0) -> int:
    """worker_count once it has held for `still` seconds (the warm pool refills in the background after a
    page opens or a run takes its worker), or after `limit` seconds, whatever it is then."""
    deadline = time.monotonic() + limit
    count, since = worker_count(server), time.monotonic()
    while time.monotonic() - since < still and time.monotonic() < deadline:
        time.sleep(0.2)
        now = worker_count(server)
        if now != count:
            count, since = now, time.monotonic()
    return count


def processes(server) -> str:
    """The server's descendants, one per line (pid, state, command line): what a failed count was made of."""
    lines = []
    for pid in sorted(server.children()):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:160]
        except OSError:
            cmd = "(gone)"
        lines.append(f"{pid} {process_state(pid)} {cmd}")
    return "\n".join(lines)


def test_start_shows_moving_charts_then_stop(server, page):
    # still training while the charts are watched and Stop is pressed (300 ended first; on a loaded CI
    # machine 1000 ended too, after 78 s of watching; 5000 ended at 37 steps/s before the instability
    # expander was opened and watched)
    open_app(page, server.url + "/?steps=10000")  # the most a Live run may have
    baseline = settled_worker_count(server)
    t0 = time.monotonic()
    page.locator(".st-key-start button").click()
    page.wait_for_selector(".st-key-loss_chart .js-plotly-plot", timeout=60_000)
    first_chart_s = time.monotonic() - t0
    deadline = time.monotonic() + 60
    while loss_steps(page) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    first_data_s = time.monotonic() - t0
    n1 = points(page, "loss_chart")
    n2 = wait_points(page, "loss_chart", n1 + 5)
    assert n2 > n1  # the loss chart moves
    h1 = wait_points(page, "grad_heatmap", 0)
    wait_points(page, "grad_heatmap", h1)  # more probe steps arrive
    wait_points(page, "act_dist", 0)
    z1 = chart_value(page, "act_dist", Z_SUM, fresh=False)  # a drawn histogram (0: read mid-redraw)
    chart_value(page, "act_dist", Z_SUM, ok=lambda z: z not in (0, z1), fresh=False)  # they move as probes arrive
    settled_screenshot(page, "live-running")
    assert page.locator(".st-key-attn_logit .js-plotly-plot").count() == 0  # the closed expander draws nothing
    page.locator(".st-key-stop button").click()
    page.wait_for_function(
        "() => [...document.querySelectorAll('strong')].some(e => e.innerText.includes('stopped'))", timeout=30_000
    )
    assert page.locator("[data-testid='stException']").count() == 0
    deadline = time.monotonic() + 30  # the run's worker is gone (the warm one may stay)
    while worker_count(server) > baseline and time.monotonic() < deadline:
        time.sleep(0.3)
    assert worker_count(server) <= baseline, processes(server)
    print(f"first chart {first_chart_s:.2f} s, first data {first_data_s:.2f} s after Start")


def _stop_enabled(page, wait: float = 5.0) -> bool:
    """Whether Stop is enabled, or becomes so within `wait` seconds (it can read disabled for a moment while the
    page reruns: two CI runs found it so at the first click of a 2,000-step run): False once the run has ended."""
    deadline = time.monotonic() + wait
    while not page.locator(".st-key-stop button").is_enabled():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def _click_to_answer(page, clicks: int, training: bool = False) -> list[float]:
    """Seconds from a click on the first expander to its content shown, `clicks` times (closed again after each);
    `training`: only while the run trains (a click after which Stop is no longer enabled is not counted, and ends
    the readings: a fast machine can finish the run among them)."""
    timings = []
    for _ in range(clicks):
        wait_idle(page)
        expander = page.get_by_test_id("stExpander").first.locator("summary")
        t0 = time.monotonic()
        expander.click()
        page.wait_for_function(
            "() => document.querySelector('[data-testid=\"stExpander\"] details').open !== undefined", timeout=5_000
        )
        page.get_by_text("Norm type").first.wait_for(state="visible", timeout=5_000)
        took = time.monotonic() - t0
        if training and not _stop_enabled(page):
            break
        timings.append(took)
        expander.click()
        time.sleep(0.5)
    return timings


def test_the_page_answers_a_click_within_a_second_while_a_deep_run_trains(server, page):
    """A click answers within a second of what the same click takes with nothing training (the best of 3 just before
    Start), while a 24-layer run trains: the best of up to 8 clicks made while it trains (a click waits for the live
    charts' refresh running when it comes: on a busy host single clicks took 1-4 s, and one CI run's best of 5 was
    1.28 s, where 0.07-0.19 s is usual; a run that ends among the clicks ends the readings, and Stop is clicked
    only while it is enabled)."""
    # the 24-layer Pre-LN preset, 2,000 steps: its 200 could end before the first click on a fast host (CI once had
    # none of 8 clicks while it trained); Stop ends it after the clicks
    open_app(page, server.url + "/?preset=deep-pre-ln&steps=2000")
    assert all(f"{kv}&" in page.url for kv in ("depth=24", "norm=pre", "steps=2000"))  # the form's state, in its URL
    idle = min(_click_to_answer(page, 3))
    page.locator(".st-key-start button").click()
    wait_points(page, "loss_chart", 3, timeout=90)
    timings = _click_to_answer(page, 8, training=True)
    stop = page.locator(".st-key-stop button")
    if stop.is_enabled():
        stop.click()
    print("click-to-answer at depth 24 (s): idle", round(idle, 3), "training", [round(x, 3) for x in timings])
    assert len(timings) >= 2, "the run ended before two clicks were answered while it trained"
    assert min(timings) < idle + 1.0


def test_korean_page_trains(server, page):
    open_app(page, server.url + "/?lang=ko")
    assert page.locator(".st-key-start button").inner_text().strip() == "시작"
    page.locator(".st-key-start button").click()
    wait_points(page, "loss_chart", 2)
    assert page.get_by_text("학습 중").count() + page.get_by_text("완료").count() > 0
    settled_screenshot(page, "live-korean")  # waits for a settled page: on a fast machine the run may have ended
    stop = page.locator(".st-key-stop button")
    ended = page.get_by_text(re.compile("정지됨|완료")).first  # stopped or completed: the page no longer redraws
    deadline = time.monotonic() + 60
    while not ended.is_visible():
        # a click made while the page reran can be lost (browser-testing.md 6.2): on a loaded machine it was, and
        # the page never said stopped; Stop again while it is enabled
        assert time.monotonic() < deadline, "the Korean run never said stopped or completed"
        if stop.is_enabled():
            try:
                stop.click(timeout=5_000)
            except PlaywrightTimeout:  # it ended between the two: Stop is disabled once nothing trains
                pass
        try:
            ended.wait_for(timeout=10_000)
        except PlaywrightTimeout:
            pass
    smoothing_in_the_popover(page)


LOSS_OPACITIES = """gd => (gd._fullData || []).filter(tr => tr.name === "학습 손실").map(tr => tr.opacity)"""


def smoothing_in_the_popover(page) -> None:
    """(In Korean.) The smoothing slider in the popover beside Start and Stop, set to its top (0.99) with
    one key (End; several keys in a row race the reruns they cause): the smoothed line over the raw one
    drawn faint, the button says so, and `smooth=0.99` is in the URL."""
    t0 = time.monotonic()
    wait_idle(page)
    assert chart_value(page, "loss_chart", LOSS_OPACITIES) == [1]  # 0 by default: the raw line alone
    page.locator(".st-key-loss_view button").first.click()
    thumb = page.get_by_test_id("stPopoverBody").get_by_role("slider")  # the popover's body is drawn apart
    thumb.focus()
    thumb.press("End")
    page.wait_for_function("() => location.search.includes('smooth=0.99')", timeout=15_000)
    assert chart_value(page, "loss_chart", LOSS_OPACITIES, ok=lambda o: o == [0.25, 1]) == [0.25, 1]
    page.keyboard.press("Escape")  # the popover closed: the screenshot shows the charts
    assert "평활화 0.99" in page.locator(".st-key-loss_view button").first.inner_text()
    settled_screenshot(page, "live-korean-smoothed")
    print(f"smoothing check {time.monotonic() - t0:.1f} s")


def test_a_second_start_and_closing_the_tab_leave_no_worker(server, browser):
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    open_app(page, server.url)
    baseline = settled_worker_count(server)
    before = processes(server)
    page.locator(".st-key-start button").click()
    wait_points(page, "loss_chart", 0)
    wait_idle(page)
    page.locator(".st-key-start button").click()  # replaces the first run
    wait_points(page, "loss_chart", 0)
    running = worker_count(server)
    assert running <= baseline + 2
    context.close()  # the tab goes: its session is released and its run stopped
    deadline = time.monotonic() + 30
    while worker_count(server) > baseline and time.monotonic() < deadline:
        time.sleep(0.3)
    assert worker_count(server) <= baseline, f"before:\n{before}\nnow:\n{processes(server)}"


def test_the_lecture_view_hides_the_settings(server, page):
    open_app(page, server.url + "/?present=1")
    expect(page.get_by_test_id("stSidebar")).to_be_hidden(timeout=10_000)
    assert page.locator(".st-key-start button").is_visible()
    settled_screenshot(page, "live-lecture")


def test_the_page_recovers_its_run_after_the_connection_drops(server, browser):
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    open_app(page, server.url)
    page.locator(".st-key-start button").click()
    n = wait_points(page, "loss_chart", 3)
    context.set_offline(True)  # the laptop's wifi drops for a few seconds
    time.sleep(4)
    context.set_offline(False)
    wait_points(page, "loss_chart", n + 10, timeout=60)  # the same run, still streaming into the page
    assert page.get_by_test_id("stException").count() == 0
    page.locator(".st-key-stop button").click()
    context.close()


def test_a_reload_keeps_the_run_training_on_screen_and_a_screen_reader_hears_its_loss(server, browser):
    """Issue 32 (UX round 4 M7, M11): F5 during a run stopped it and showed empty charts; Live gave a screen
    reader no sentence of result. The tab's address names its runs (session=), so the reloaded page shows the
    same run still training, and its live region says the loss in words."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    open_app(page, server.url)
    page.locator(".st-key-start button").click()
    n = wait_points(page, "loss_chart", 3)
    page.wait_for_function("() => location.search.includes('session=')", timeout=15_000)
    page.reload()
    wait_idle(page, 60_000)
    wait_points(page, "loss_chart", n + 5, timeout=60)  # the same run, still streaming after the reload
    assert page.locator(".st-key-stop button").is_enabled()
    region = page.get_by_role("status")
    page.wait_for_function("el => /Pre-LN, 6 layers/.test(el.textContent)", arg=region.element_handle(), timeout=60_000)
    hidden = page.locator(".st-key-live_summary")  # its box clips it: for a screen reader, not the eye
    assert hidden.bounding_box()["height"] <= 1 and hidden.evaluate("e => getComputedStyle(e).clipPath") != "none"
    assert page.get_by_test_id("stException").count() == 0
    page.locator(".st-key-stop button").click()
    context.close()
