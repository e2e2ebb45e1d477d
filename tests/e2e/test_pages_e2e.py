"""Compare, Init lab and Theory in headless Chromium: what is drawn, in English and Korean."""

import time

import pytest

from tests.e2e.conftest import chart_value, settled_screenshot, wait_idle
from tests.e2e.test_live_e2e import wait_points

pytestmark = pytest.mark.e2e
SHARE_SERVER = True  # its tests count nothing on the server (conftest.shared_server)


def test_compare_trains_both_and_draws_them_on_shared_charts(server, page):
    page.goto(server.url + "/compare")
    wait_idle(page)
    page.locator(".st-key-compare_start button").click()
    n = wait_points(page, "compare_loss", 0, timeout=90)
    wait_points(page, "compare_loss", n + 10, timeout=90)  # both curves grow
    names = chart_value(page, "compare_loss", "gd => gd._fullData.map(t => t.name).join(' | ')")
    assert "Post-LN" in names and "Pre-LN" in names
    for key in ("compare_heatmap_0", "compare_heatmap_1", "compare_profile"):
        assert wait_points(page, key, 0) > 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # both runs have probed: both heatmaps have their colour range
        ranges = [chart_value(page, f"compare_heatmap_{i}", "gd => [gd._fullData[0].zmin, gd._fullData[0].zmax]")
                  for i in (0, 1)]  # fmt: skip
        if None not in ranges[0] + ranges[1]:
            break
        time.sleep(0.5)
    assert ranges[0] == ranges[1] and None not in ranges[0]  # one colour scale for both
    settled_screenshot(page, "compare-running")
    page.locator(".st-key-compare_stop button").click()
    assert page.get_by_test_id("stException").count() == 0


def test_init_lab_draws_within_ten_seconds_in_korean(server, page):
    t0 = time.monotonic()
    page.goto(server.url + "/init-lab?lang=ko")
    page.wait_for_selector(".st-key-init_resid .js-plotly-plot", timeout=60_000)
    took = time.monotonic() - t0
    wait_idle(page)
    assert page.locator("h1").first.inner_text().startswith("초기화 실험실")
    for key in ("init_profile", "init_vs_depth", "init_resid"):
        assert wait_points(page, key, 0) > 0
    settled_screenshot(page, "init-lab-ko")
    print(f"Init lab drawn {took:.1f} s after opening it")


def test_theory_typesets_its_formulas_in_both_languages(server, page):
    for lang, heading in (("en", "Theory"), ("ko", "이론")):
        page.goto(server.url + f"/theory?lang={lang}")
        wait_idle(page)
        page.wait_for_selector(".katex", timeout=30_000)
        assert page.locator(".katex").count() >= 10
        assert page.get_by_test_id("stException").count() == 0
        settled_screenshot(page, f"theory-{lang}")
        links = page.get_by_test_id("stSidebarNavLink").all_inner_texts()
        assert any(heading in link for link in links), links  # the menu is in the page's language
