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
        # every step drawn, read the moment it is (Play moves on 0.25 s after every chart has drawn)
        page.evaluate(f"""() => {{ window.seen = []; new MutationObserver(() => window.seen.push(({_STATE})()))
            .observe(document.body, {{attributes: true, attributeFilter: ["data-shown"]}}); }}""")
        page.get_by_role("button", name="재생").click()  # starts from the first step: the slider is at the last
        page.wait_for_function("() => document.getElementById('play').textContent.includes('재생')", timeout=30_000)
        seen = page.evaluate("() => window.seen")
        assert [s["marker"] for s in seen] == [1, 5, 10, 15, 20, 25, 30]  # the tiny runs' probe steps, in turn
        assert [s["step"] for s in seen] == [str(s["marker"]) for s in seen]
        assert seen[0]["lines"] != before["lines"] and seen[-1]["lines"] == before["lines"]  # the profile moved
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "pack_pair_ko.png"))
    finally:
        context.close()
    assert requests == []  # nothing but the file was asked for
    assert errors == []


def test_a_run_pack_s_slider_moves_the_distribution_to_the_chosen_step(browser, tiny_run, tmp_path):
    path = write_pack([tiny_run], tmp_path / "run.html", lang="en")
    requests: list[str] = []
    errors: list[str] = []
    context, page = _open(browser, path, requests, errors)
    try:
        assert page.locator(".js-plotly-plot").count() == 4  # loss, heatmap, profile, distribution
        z = "() => JSON.stringify(document.getElementById('dist').data[0].z)"
        last = page.evaluate(z)
        first = tiny_run.probe_steps[0]
        page.evaluate(
            "() => { const s = document.getElementById('step'); s.value = 0; s.dispatchEvent(new Event('input')); }"
        )
        page.wait_for_selector(f"body[data-shown='{first}']", timeout=20_000)
        assert page.evaluate(z) != last  # the distribution at the first probe step, not the last
        assert page.locator("#step-value").text_content() == str(first)
        title = page.evaluate("() => JSON.stringify(document.getElementById('dist').layout.title)")
        assert f"step {first}" in title and f"step {tiny_run.probe_steps[-1]}" not in title  # its subtitle says so
    finally:
        context.close()
    assert requests == [] and errors == []


def test_an_instability_pair_s_pack_draws_its_lesson_chart_across_the_heatmaps_place(browser, tiny_run, tmp_path):
    """UX round 4, M1: a z-loss pair's pack draws log Z (the lecture view's chart), one chart of both runs
    as wide as the two heatmaps were, and Play moves its step marker."""
    from ln_viz.train import run
    from tests.runs import TINY

    path = write_pack([run(TINY.replace(z_loss=1e-4)), tiny_run], tmp_path / "pack.html")
    requests: list[str] = []
    errors: list[str] = []
    context, page = _open(browser, path, requests, errors)
    try:
        assert page.locator(".js-plotly-plot").count() == 3  # loss, log Z, profile
        box = page.locator("#heatmap0").bounding_box()
        profile = page.locator("#profile").bounding_box()
        assert abs(box["width"] - profile["width"]) < 40  # across both columns, as the profile under it
        assert page.locator("#heatmap0 .scatterlayer path.js-line").count() >= 2  # both runs' log Z
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "pack_pair_lesson.png"))
    finally:
        context.close()
    assert requests == [] and errors == []
