"""The offline lecture pack (ln_viz/pack.py) opened as a lecturer opens it from a USB stick: `file://` in
Chromium with every other request refused. Its charts draw, Play moves them, plotly.js is in it once.
Firefox is not installed on this machine, so only Chromium is tested."""

from __future__ import annotations

from plotly.offline import get_plotlyjs

from ln_viz.pack import write_pack
from tests.e2e.conftest import ARTIFACTS

# The step marker's x (loss chart) and the profile's drawn lines: what Play changes.
_STATE = """() => {
  const loss = document.getElementById("loss"), prof = document.getElementById("profile");
  const marker = loss.layout.shapes[loss.layout.shapes.length - 1].x0;
  const lines = [...prof.querySelectorAll(".scatterlayer path.js-line")].map(p => p.getAttribute("d")).join("|");
  return {marker, lines, step: document.getElementById("step-value").textContent};
}"""


def _open(browser, path, requests: list[str], errors: list[str]):
    context = browser.new_context(viewport={"width": 1920, "height": 1080})
    url = path.as_uri()

    def refuse(route):  # the file itself is let through, anything else is counted and refused
        if route.request.url == url:
            route.continue_()
        else:
            requests.append(route.request.url)
            route.abort()

    context.route("**/*", refuse)
    page = context.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(url)
    page.wait_for_selector("body[data-ready='1']", timeout=30_000)
    return context, page


def test_pack_opens_offline_draws_and_plays(browser, tiny_run, tmp_path):
    from tests.runs import train_tiny

    path = write_pack([train_tiny("post"), tiny_run], tmp_path / "pack.html", lang="ko")
    text = path.read_text(encoding="utf-8")
    marker = get_plotlyjs()[:60]  # plotly.js's banner, with its version: once in the bundle
    assert get_plotlyjs().count(marker) == 1 and text.count(marker) == 1
    requests: list[str] = []
    errors: list[str] = []
    context, page = _open(browser, path, requests, errors)
    try:
        assert page.locator(".js-plotly-plot").count() == 4  # loss, two heatmaps, profile
        assert page.locator("#heatmap0 .hm image, #heatmap0 .heatmaplayer image").count() >= 1
        assert page.locator("#loss .scatterlayer path.js-line").count() >= 2  # both runs' loss lines
        before = page.evaluate(_STATE)
        page.get_by_role("button", name="재생").click()  # starts from the first step: the slider is at the last
        # read in the page the moment every chart is drawn at step 25 (Play moves on 0.25 s later)
        during = page.wait_for_function(f"() => document.body.dataset.shown === '25' && ({_STATE})()", timeout=20_000)
        during = during.json_value()
        assert during["marker"] == 25 and during["marker"] != before["marker"]
        assert during["lines"] != before["lines"]  # the profile redrew at another step
        page.wait_for_function("() => document.getElementById('play').textContent.includes('재생')", timeout=20_000)
        after = page.evaluate(_STATE)
        assert after["step"] == before["step"] and after["marker"] == before["marker"]  # it ends on the last step
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "pack_pair_ko.png"))
    finally:
        context.close()
    assert requests == []  # nothing but the file was asked for
    assert errors == []
