"""Watching a run in headless Chromium: one browser session starts a short run on Live and copies its watch
link from the "Watch link" popover (the address the browser shows, from st.context.url); a second session
opens that link, sees the step count move with no Start button, and the server has trained one run."""

import time

import pytest

from ln_viz.store import Store
from tests.e2e.conftest import ARTIFACTS, chart, wait_idle
from tests.e2e.test_live_e2e import open_app, status_step

pytestmark = pytest.mark.e2e


def wait_step(page, above: int, timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            step = status_step(page)
        except Exception:  # noqa: BLE001 - the status line is being redrawn
            step = 0
        if step > above:
            return step
        time.sleep(0.2)
    raise AssertionError(f"the status line never passed step {above}")


def test_a_second_browser_watches_the_run_read_only_and_nothing_more_is_trained(server, page, browser):
    open_app(page, server.url + "/?depth=2&steps=3000")  # long enough to be still training while watched
    page.locator(".st-key-start button").click()
    wait_step(page, 0)
    page.locator(".st-key-watch_share button").first.click()  # the popover beside Start
    link = page.locator("[data-testid='stCode'] code").first
    link.wait_for(timeout=30_000)
    url = link.inner_text().strip()
    assert url == f"{server.url}/?watch=1&lang=en", url  # the browser's own address, Live, the run's number
    # the server listens on 127.0.0.1 (as with the README's command): only this computer can open the link,
    # and the popover says so, with no QR code a student's phone would open as its own localhost (issue 32, H3)
    popover = page.locator("[data-testid='stPopoverBody']")
    assert "Only this computer can open this link" in popover.inner_text()
    assert popover.locator("[data-testid='stImage'] img").count() == 0
    context = browser.new_context(viewport={"width": 1280, "height": 720}, locale="en-US")
    try:
        watcher = context.new_page()
        errors: list[str] = []
        watcher.on("pageerror", lambda e: errors.append(str(e)))
        watcher.goto(url)
        wait_idle(watcher)
        watcher.get_by_text("Watching run 1").first.wait_for(timeout=30_000)
        first = wait_step(watcher, 0)
        moved = wait_step(watcher, first)  # it moves for the watcher, refreshed by the server
        assert moved > first
        assert watcher.locator(".st-key-start").count() == 0 and watcher.locator(".st-key-stop").count() == 0
        # the watcher's loss chart, drawn (not a stale copy: while the server refreshes it, Streamlit keeps
        # the old element beside the new one for a moment, so counting them read 0 or 2 on a busy machine)
        chart(watcher, "loss_chart").wait_for(timeout=30_000)
        assert errors == [], errors
    finally:
        context.close()
    page.keyboard.press("Escape")  # close the popover
    page.locator(".st-key-stop button").click()
    with Store(server.store, readonly=True) as store:
        assert len(store.list_runs()) == 1  # the watcher trained nothing


SHARE_LOCAL = {"en": "Only this computer can open this link", "ko": "이 링크는 이 컴퓨터에서만 열 수 있습니다"}


@pytest.mark.parametrize(
    ("width", "height", "present", "lang"),
    [(1920, 1080, True, "en"), (1920, 1080, True, "ko"), (1280, 720, False, "en"), (1280, 720, False, "ko")],
)
def test_the_watch_popover_of_a_loopback_server_says_only_this_computer_can_open_it(
    server, browser, width, height, present, lang
):
    """Issue 32, UX H3: the popover promised "anyone on this network can watch" beside a QR code of
    127.0.0.1. In the lecture view at 1920x1080 and the normal view at 1280x720, English and Korean: the
    sentence that only this computer can open it, how to share it (--server.address 0.0.0.0, "Serving a
    classroom"), the link itself, and no QR code; a screenshot of each popover is kept."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    try:
        open_app(page, server.url + f"/?depth=1&steps=3000&lang={lang}" + ("&present=1" if present else ""))
        page.locator(".st-key-start button").click()
        wait_step(page, 0)
        page.locator(".st-key-watch_share button").first.click()
        popover = page.locator("[data-testid='stPopoverBody']")
        popover.locator("[data-testid='stCode'] code").first.wait_for(timeout=30_000)
        text = popover.inner_text()
        assert SHARE_LOCAL[lang] in text and "--server.address 0.0.0.0" in text and "Serving a classroom" in text
        assert popover.locator("[data-testid='stImage'] img").count() == 0  # no QR code of 127.0.0.1
        box = popover.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width  # on screen, not cut
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"watch_popover_{width}x{height}_{lang}.png"))
        page.keyboard.press("Escape")
        page.locator(".st-key-stop button").click()
    finally:
        context.close()
