"""Accessibility in headless Chromium (issue 32): Compare's two sides stay apart under colour-vision
deficiencies (Chromium's emulation), every chart has an accessible name, focus is visible on a button
and on a link, and the charts' toolbars are not in the Tab order."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
from PIL import Image

from tests.e2e.conftest import wait_idle

pytestmark = pytest.mark.e2e
SHARE_SERVER = True  # its tests count nothing on the server (conftest.shared_server)

CHART = "[data-stale='false'] .js-plotly-plot"


# --- colour ---------------------------------------------------------------------------------------
def _luminance(rgb: tuple[float, float, float]) -> float:
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (v / 255 for v in rgb)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(a: tuple[float, float, float], b: tuple[float, float, float]) -> float:
    """WCAG's contrast ratio of two sRGB colours."""
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _lab(rgb: tuple[float, float, float]) -> tuple[float, float, float]:
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (v / 255 for v in rgb)]
    m = ((0.4124, 0.3576, 0.1805), (0.2126, 0.7152, 0.0722), (0.0193, 0.1192, 0.9505))
    xyz = [sum(m[i][j] * lin[j] for j in range(3)) / w for i, w in enumerate((0.95047, 1.0, 1.08883))]
    f = [v ** (1 / 3) if v > 216 / 24389 else (24389 / 27 * v + 16) / 116 for v in xyz]
    return 116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])


def delta_e(a: tuple[float, float, float], b: tuple[float, float, float]) -> float:
    """CIE76 colour distance (ΔE*ab) of two sRGB colours."""
    return sum((x - y) ** 2 for x, y in zip(_lab(a), _lab(b))) ** 0.5


def _css_rgba(text: str) -> tuple[float, float, float, float]:
    nums = [float(v) for v in re.findall(r"[\d.]+", text)]
    return (*nums[:3], nums[3] if len(nums) > 3 else 1.0)  # type: ignore[return-value]


def ink(page, box: dict[str, float]) -> tuple[float, float, float]:
    """The mean colour of the pixels in `box` that are not the white ground: a line as it is painted,
    after any vision-deficiency emulation."""
    png = page.screenshot(clip=box)
    rgb = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.float64).reshape(-1, 3)
    pixels = rgb[(255 - rgb).sum(axis=1) > 120]
    assert len(pixels), f"nothing painted in {box}"
    return tuple(pixels.mean(axis=0))  # type: ignore[return-value]


def _legend_lines(page) -> list[dict]:
    """The first two legend entries (A and B) of Compare's layer-by-layer chart (the loss chart has no
    legend before a run): the box of each one's line sample and its dash pattern as drawn."""
    chart = page.locator(f".st-key-mid__compare_profile {CHART}")
    chart.scroll_into_view_if_needed()
    return chart.evaluate(
        """gd => [...gd.querySelectorAll('.legend .traces')].slice(0, 2).map(tr => {
               const path = tr.querySelector('.legendlines path');
               const r = path.getBoundingClientRect();
               return {name: tr.textContent, dash: getComputedStyle(path).strokeDasharray,
                       box: {x: r.x, y: r.y - 3, width: r.width, height: r.height + 6}}; })"""
    )


def _settled_legend_lines(page, tries: int = 20) -> list[dict]:
    """`_legend_lines` once two readings 250 ms apart agree: the page above the chart (status lines, a
    late-drawn chart) can still move it after the legend first appears, and a box read before that move
    photographs white ground (seen once on CI)."""
    last = _legend_lines(page)
    for _ in range(tries):
        page.wait_for_timeout(250)
        now = _legend_lines(page)
        if [x["box"] for x in now] == [x["box"] for x in last]:
            return now
        last = now
    raise AssertionError(f"the legend kept moving: {[x['box'] for x in last]}")


@pytest.mark.parametrize(
    ("scenario", "names"), [("post-vs-pre", ("Post-LN", "Pre-LN")), ("warmup-vs-none", ("no warm-up", "warm-up"))]
)
def test_compare_sides_stay_apart_under_colour_vision_deficiencies(server, page, scenario, names):
    """Post-LN against Pre-LN, and A and B of one norm position (both Post-LN: "+ warm-up"), which shared one
    colour, solid against dashed, until issue 32."""
    page.goto(server.url + "/compare?cpreset=" + scenario)
    wait_idle(page)
    page.wait_for_selector(f".st-key-mid__compare_profile {CHART} .legend .traces", timeout=30_000, state="attached")
    page.mouse.move(0, 0)
    a, b = _settled_legend_lines(page)
    assert names[0] in a["name"] and names[1] in b["name"], (a["name"], b["name"])
    cdp = page.context.new_cdp_session(page)
    seen = {}
    for deficiency in ("deuteranopia", "protanopia", "achromatopsia"):
        cdp.send("Emulation.setEmulatedVisionDeficiency", {"type": deficiency})
        page.wait_for_timeout(200)
        a, b = _settled_legend_lines(page)  # measured again right before the picture: the page may have moved
        seen[deficiency] = delta_e(ink(page, a["box"]), ink(page, b["box"]))
    cdp.send("Emulation.setEmulatedVisionDeficiency", {"type": "none"})
    print("ΔE*ab of Post-LN against Pre-LN as painted:", {k: round(v) for k, v in seen.items()})
    assert seen["deuteranopia"] > 40 and seen["protanopia"] > 40, seen  # two hues apart for red-green deficiencies
    # with no colour at all the two greys are close: the lines differ by their dashes
    assert seen["achromatopsia"] < 40 or a["dash"] != b["dash"], seen
    assert a["dash"] != b["dash"], (a["dash"], b["dash"])


# --- names ----------------------------------------------------------------------------------------
NAMES = """() => [...document.querySelectorAll('.js-plotly-plot')].map(gd => {
    const t = (gd.layout || {}).title || {};
    return {role: gd.getAttribute('role'), name: gd.getAttribute('aria-label'),
            title: new DOMParser().parseFromString(String(typeof t === 'string' ? t : t.text || ''),
                                                   'text/html').body.textContent.trim()}; })"""


@pytest.mark.parametrize(
    ("path", "least"), [("/", 2), ("/compare", 4), ("/init-lab", 3), ("/stability-map", 1)], ids=lambda v: str(v)
)
def test_every_chart_has_an_accessible_name(server, page, path, least):
    page.goto(server.url + path)
    wait_idle(page, 60_000)
    page.wait_for_function(f"() => document.querySelectorAll({CHART!r}).length >= {least}", timeout=60_000)
    wait_idle(page, 60_000)
    page.wait_for_timeout(500)
    charts = page.evaluate(NAMES)
    unnamed = [c for c in charts if c["role"] != "img" or not c["name"] or not c["name"].startswith(c["title"])]
    assert not unnamed, unnamed
    for c in charts:  # in the accessibility tree, as a screen reader gets it
        assert page.get_by_role("img", name=c["name"], exact=True).count() >= 1, c


# --- keyboard -------------------------------------------------------------------------------------
FOCUSED = """() => { const e = document.activeElement;
    const cs = getComputedStyle(e);
    let ground = 'rgb(255, 255, 255)';
    for (let p = e.parentElement; p; p = p.parentElement) {
        const bg = getComputedStyle(p).backgroundColor;
        if (bg && bg !== 'transparent' && !/rgba\\([^)]*,\\s*0\\)/.test(bg)) { ground = bg; break; } }
    return {tag: e.tagName, text: (e.textContent || '').trim().slice(0, 40), inToolbar: !!e.closest('.modebar'),
            outline: [cs.outlineStyle, parseFloat(cs.outlineWidth), cs.outlineColor],
            shadow: cs.boxShadow, ground}; }"""


def _tab_through(page, stops: int = 90) -> list[dict]:
    """Press Tab `stops` times from the page's top (or until focus comes round again): what held focus."""
    page.mouse.move(0, 0)
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    seen: list[dict] = []
    for _ in range(stops):
        page.keyboard.press("Tab")
        now = page.evaluate(FOCUSED)
        if seen and now["tag"] == seen[0]["tag"] and now["text"] == seen[0]["text"]:
            break
        seen.append(now)
    return seen


def _indicator_contrast(focused: dict) -> float:
    """The contrast of the focus mark (outline, else a box-shadow ring, blended on the ground) against the
    ground it is drawn on; 1.0 when there is none."""
    ground = _css_rgba(focused["ground"])[:3]
    style, width, colour = focused["outline"]
    if style != "none" and width >= 2:
        r, g, b, alpha = _css_rgba(colour)
    elif focused["shadow"] != "none":
        r, g, b, alpha = _css_rgba(focused["shadow"])
    else:
        return 1.0
    painted = tuple(alpha * c + (1 - alpha) * w for c, w in zip((r, g, b), ground))
    return contrast(painted, ground)  # type: ignore[arg-type]


def test_focus_is_visible_on_a_button_and_a_link(server, page):
    page.goto(server.url + "/")
    wait_idle(page, 60_000)
    page.wait_for_selector(CHART, timeout=60_000)
    stops = _tab_through(page)
    button = next(s for s in stops if s["tag"] == "BUTTON" and "Start" in s["text"])
    link = next(s for s in stops if s["tag"] == "A" and "Compare" in s["text"])
    ratios = {"button": _indicator_contrast(button), "link": _indicator_contrast(link)}
    print("focus mark contrast:", {k: round(v, 2) for k, v in ratios.items()}, button["outline"], link["outline"])
    assert ratios["button"] >= 3 and ratios["link"] >= 3, (ratios, button, link)


def test_chart_toolbars_are_not_in_the_tab_order_but_show_on_hover(server, page):
    page.goto(server.url + "/")
    wait_idle(page, 60_000)
    page.wait_for_function(f"() => document.querySelectorAll({CHART!r} + ' .modebar-btn').length > 0", timeout=60_000)
    stops = _tab_through(page)
    assert any("Start" in s["text"] for s in stops), [s["text"] for s in stops]  # the walk reached the page
    in_toolbar = [s for s in stops if s["inToolbar"]]
    assert not in_toolbar, f"{len(in_toolbar)} of {len(stops)} Tab stops are chart toolbar buttons"
    chart = page.locator(CHART).first
    chart.hover()
    toolbar = chart.locator(".modebar-container")
    page.wait_for_function("el => getComputedStyle(el).visibility === 'visible'", arg=toolbar.element_handle())
    assert chart.locator(".modebar-btn").first.is_visible()  # a mouse user still has it
