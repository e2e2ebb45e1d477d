"""The layout test's checks (tests/e2e/geometry.py) on a plain Plotly page in Chromium: nothing reported on
a well laid out chart, so a failure in test_layout_e2e is the app's; a legend on the x title and a title cut
at the chart's edge reported when present, so a pass there means something.

The figures name their template: in full runs the broken chart was found clean (its long title fitted)
whenever streamlit had been imported first, which makes its template the process's default.
The broken chart's margins are fixed (no auto-margin redraw moves its legend off the x title)."""

from __future__ import annotations

import time

import pytest

from tests.e2e import geometry

pytestmark = pytest.mark.e2e


def _figure_html(broken: bool) -> str:
    import plotly.graph_objects as go

    fig = go.Figure([go.Scatter(x=[0, 1, 2], y=[3, 1, 2], name="training loss"),
                     go.Scatter(x=[0, 1, 2], y=[2, 2, 2], name="unigram loss")])  # fmt: skip
    title = "Training loss, a title far too long to fit the width of this small chart" if broken else "Training loss"
    # its own template: `import streamlit` (done by any test that loads the app's modules first) makes
    # "streamlit" the process's default, whose fonts fit the long title in 500 px: that, not the machine,
    # was why the broken chart passed as clean in full runs
    fig.update_layout(title=title, xaxis_title="training step", yaxis_title="loss", width=500, height=350,
                      template="plotly")  # fmt: skip
    if broken:  # the defects the review found: a legend on the x title, a title cut at the right edge
        fig.update_layout(
            legend={"orientation": "h", "x": 0.3, "y": -0.15, "yanchor": "top"}, margin={"autoexpand": False, "b": 80}
        )
    return fig.to_html(include_plotlyjs=True, full_html=True)


def settled_reading(pg, timeout_s: float = 15.0) -> dict:
    """The chart's reading once three readings 250 ms apart agree (Plotly may move a legend or a title
    after its first paint), or the last one after `timeout_s`."""
    readings: list = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        pg.wait_for_timeout(250)
        readings.append(pg.wait_for_function(geometry.MEASURE).json_value()["charts"][0])
        if len(readings) >= 3 and readings[-1] == readings[-2] == readings[-3]:
            break
    return readings[-1]


@pytest.mark.parametrize("broken", [False, True], ids=["clean", "broken"])
def test_the_checks_pass_a_clean_chart_and_catch_a_broken_one(browser, broken):
    """The checks themselves, on a plain Plotly page: nothing reported on a well laid out chart (so a
    failure above is the app's), and a legend on the x title and a cut title reported when present."""
    pg = browser.new_page(viewport={"width": 800, "height": 600})
    try:
        pg.set_content(_figure_html(broken), wait_until="load")
        pg.wait_for_selector(".js-plotly-plot .main-svg")
        # measured only once every text is drawn in its final font (on a busy machine the legend and the
        # titles arrive a moment after the plot's SVG)
        pg.wait_for_selector(".js-plotly-plot .legend .traces >> nth=1")
        pg.wait_for_selector(".js-plotly-plot .xtitle")
        pg.wait_for_selector(".js-plotly-plot .gtitle")
        pg.evaluate("() => document.fonts.ready.then(() => new Promise(r => requestAnimationFrame(() => r(true))))")
        chart = settled_reading(pg)
    finally:
        pg.close()
    overlaps, cuts = geometry.overlaps(chart), geometry.cut_texts(chart)
    if not broken:
        assert overlaps == [] and cuts == [], overlaps + cuts
        assert {"title", "x title", "y title", "legend item"} <= {item["kind"] for item in chart["items"]}
    else:
        assert any("x title 'training step'" in o and "legend item" in o for o in overlaps), (overlaps, chart)
        assert any(": title 'Training loss, a title" in c for c in cuts), cuts


# The lecture view's distribution panel as the app draws it at 1920x1080 (its figure there: 436x411 px, measured;
# at 1280x720 425x409, zoomed): the review's check 9 (issue 21 N12) asks for no colliding text
# in it for deep-pre-ln (24 layers, values out to ±256) and post-ln-no-warmup, in en and ko. Before the
# fix its 24-px value labels turned on their side with −1, 0 and 1 printed over each other, the layer
# title wrapped to three lines and the colour bar's three labels met. The app itself, trained, was
# measured the same way (the note of issue 21); this keeps the figure honest in a few seconds.
@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("preset", ["deep-pre-ln", "post-ln-no-warmup"])
def test_the_lecture_view_distribution_panel_has_no_colliding_text(browser, preset, lang):
    from ln_viz import charts
    from tests.runs import demo

    fig = charts.act_dist(demo(preset), lang, lecture=True, height=411)
    fig.update_layout(width=436)
    pg = browser.new_page(viewport={"width": 520, "height": 480})
    try:
        pg.set_content(fig.to_html(include_plotlyjs=True, full_html=True), wait_until="load")
        pg.wait_for_selector(".js-plotly-plot .colorbar")
        pg.wait_for_selector(".js-plotly-plot .xtitle")
        pg.evaluate("() => document.fonts.ready.then(() => new Promise(r => requestAnimationFrame(() => r(true))))")
        chart = settled_reading(pg)
    finally:
        pg.close()
    problems = geometry.overlaps(chart) + geometry.cut_texts(chart)
    assert problems == [], problems
    ticks = [i["text"] for i in chart["items"] if i["kind"] == "tick label"]
    assert "0" in ticks and {"y title"} <= {i["kind"] for i in chart["items"]}
