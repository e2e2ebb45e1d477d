"""The loss charts' smoothing and log axis (issue 20, "Smoothing and axes done right"): the builder draws
TensorBoard's debiased EMA (ln_viz.stats.ema_debiased) over the raw loss drawn faint, and a log loss
axis; the link's `smooth` and `logy` parameters; and, with AppTest through the app's router, the
controls (a popover beside Start and Stop; on Runs above the stored run's charts), their URL, and the
lecture view, which has no room for them and draws what they are set to."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from ln_viz import charts
from ln_viz.i18n import EN
from ln_viz.snapshot import RunData, RunInfo
from ln_viz.stats import ema_debiased
from ln_viz.urlstate import log_y_from_query, loss_view_to_query, smoothing_from_query, unknown_params
from tests.test_app import live_handle, wait_for
from tests.test_charts import DIVERGED_AT, synthetic_run
from tests.test_charts import diverged_run as diverged_run  # noqa: F401 (a fixture)
from tests.test_pages import plotly_array


def _loss_traces(fig, name: str = EN["chart.train_loss"]) -> list:
    return [tr for tr in fig.data if tr.name == name]


def test_smoothing_0_draws_the_raw_loss_alone_as_before(post_run: RunData) -> None:
    assert charts.loss_chart(post_run, smoothing=0.0).to_json() == charts.loss_chart(post_run).to_json()
    assert (
        charts.loss_chart([post_run, post_run], smoothing=0.0).to_json() == charts.loss_chart([post_run] * 2).to_json()
    )
    (line,) = _loss_traces(charts.loss_chart(post_run))
    assert line.opacity is None and line.legendgroup is None


def test_the_smoothed_line_is_tensorboards_debiased_ema_over_the_faint_raw_line(post_run: RunData) -> None:
    fig = charts.loss_chart(post_run, smoothing=0.9)
    raw, smooth = _loss_traces(fig)  # the raw one first: drawn behind
    loss = np.asarray(post_run.scalars["loss"], dtype=np.float64)
    expected = np.asarray(ema_debiased(loss, 0.9))
    np.testing.assert_allclose(smooth.customdata[:, 0], expected, rtol=1e-6)  # float32 on the wire
    np.testing.assert_allclose(smooth.customdata[:, 1], loss, rtol=1e-6)  # the hover says both
    np.testing.assert_allclose(raw.y, loss, rtol=1e-6)
    assert not np.allclose(smooth.y, raw.y)  # it smooths
    assert raw.opacity == charts.loss.RAW_OPACITY == 0.25 and smooth.opacity is None
    assert raw.showlegend is False and raw.legendgroup == smooth.legendgroup  # one legend entry hides both
    assert raw.hoverinfo == "skip" and EN["chart.smoothed_loss"] in smooth.hovertemplate
    assert EN["chart.raw_loss"] in smooth.hovertemplate
    assert raw.line.color == smooth.line.color == charts.NORM_COLORS["post"]  # the run's colour


def test_each_compared_run_has_its_own_smoothed_line_and_legend_group(post_run: RunData, pre_run: RunData) -> None:
    fig = charts.loss_chart([post_run, pre_run], smoothing=0.6, labels=["A", "B"])
    for name, data in (("A", post_run), ("B", pre_run)):
        raw, smooth = _loss_traces(fig, name)
        expected = ema_debiased(np.asarray(data.scalars["loss"], dtype=np.float64), 0.6)
        np.testing.assert_allclose(smooth.customdata[:, 0], expected, rtol=1e-6)
        assert raw.legendgroup == smooth.legendgroup and raw.opacity == 0.25
    assert len({tr.legendgroup for tr in fig.data if tr.legendgroup}) == 2
    assert [tr.name for tr in fig.data if tr.showlegend is not False][:2] == ["A", "B"]


def test_a_long_run_is_smoothed_over_every_step_then_downsampled_like_the_raw_line() -> None:
    data = synthetic_run(depth=2, steps=2000, probe_every=100)
    raw, smooth = _loss_traces(charts.loss_chart(data, smoothing=0.95))
    assert len(raw.x) == len(smooth.x) <= charts.MAX_LOSS_POINTS < 2000
    steps = np.asarray(data.scalars["step"])
    full = np.asarray(ema_debiased(np.asarray(data.scalars["loss"], dtype=np.float64), 0.95))
    idx = np.searchsorted(steps, np.asarray(smooth.x))
    np.testing.assert_allclose(smooth.customdata[:, 0], full[idx], rtol=1e-6)


def test_a_diverged_run_s_nan_step_stays_a_gap_in_the_smoothed_line(diverged_run: RunData) -> None:  # noqa: F811
    raw, smooth = _loss_traces(charts.loss_chart(diverged_run, smoothing=0.9))
    assert math.isnan(smooth.y[-1]) and math.isnan(raw.y[-1]) and np.isfinite(smooth.y[:-1]).all()
    assert int(smooth.x[-1]) == DIVERGED_AT


def test_log_y_puts_the_loss_on_a_log_axis_up_to_the_same_top_and_its_labels_with_it(post_run: RunData) -> None:
    linear, log = charts.loss_chart(post_run), charts.loss_chart(post_run, log_y=True)
    assert linear.layout.yaxis.type is None
    assert log.layout.yaxis.type == "log"
    lo, hi = log.layout.yaxis.range
    assert hi == pytest.approx(math.log10(linear.layout.yaxis.range[1]))
    assert 10**lo <= min(post_run.scalars["loss"])  # every loss on the chart
    assert {2.0, 3.0, 4.0} <= set(log.layout.yaxis.tickvals)  # within one decade: more than 1-2-5
    unigram = post_run.info.unigram_entropy
    label = next(a for a in log.layout.annotations if a.text.startswith("unigram"))
    assert label.y == pytest.approx(math.log10(unigram))  # Plotly's log coordinates: at its line
    assert log.layout.yaxis2.type is None  # the learning rate keeps its linear axis
    assert log.layout.uirevision != linear.layout.uirevision  # a zoom of the linear axis is not kept


def test_log_y_on_runs_compared_and_on_a_run_not_started(post_run: RunData, pre_run: RunData) -> None:
    fig = charts.loss_chart([post_run, pre_run], log_y=True, smoothing=0.6)
    assert fig.layout.yaxis.type == "log"
    empty = charts.loss_chart(RunData(post_run.info), log_y=True)  # the page before Start
    lo, hi = empty.layout.yaxis.range
    assert hi - lo >= math.log10(2) - 1e-9 and 10**lo <= post_run.info.unigram_entropy
    floored = RunInfo(post_run.info.config, 30, 100, 3.0, floor=0.9, norm_names=["ln1"])
    lo, _ = charts.loss_chart(RunData(floored), log_y=True).layout.yaxis.range
    assert 10**lo <= 0.9  # the entropy floor's line is on the chart too


@pytest.mark.parametrize(
    ("raw", "weight", "bad"),
    [(None, 0.0, False), ("0.9", 0.9, False), ("0", 0.0, False), ("0.99", 0.99, False), (["0.2", "0.6"], 0.6, False),
     ("1", 0.0, True), ("-0.1", 0.0, True), ("nan", 0.0, True), ("lots", 0.0, True)],
)  # fmt: skip
def test_the_link_s_smooth_parameter(raw, weight: float, bad: bool) -> None:
    value, notice = smoothing_from_query(raw)
    assert value == weight and (notice is not None) == bad
    if bad:
        assert "smooth" in notice.message("en") and "smooth" in notice.message("ko")


def test_the_link_s_logy_parameter_and_its_writer() -> None:
    assert log_y_from_query("1") == (True, None) and log_y_from_query("false") == (False, None)
    assert log_y_from_query(None) == (False, None)
    value, notice = log_y_from_query("maybe")
    assert value is False and notice is not None and notice.param == "logy"
    assert loss_view_to_query(0.0, False) == {}  # the defaults leave the link as it was
    assert loss_view_to_query(0.9, True) == {"smooth": "0.9", "logy": "1"}
    assert not unknown_params({"smooth": "0.9", "logy": "1"})  # parameters a page reads


def _figure(at: AppTest, key: str) -> dict:
    return json.loads(next(c for c in at.get("plotly_chart") if c.key == key).proto.spec)


def _named(fig: dict, name: str) -> list[dict]:
    return [tr for tr in fig["data"] if tr.get("name") == name]


def test_live_s_controls_change_its_loss_chart_and_land_in_the_url(replay_runner, start_app) -> None:
    at = start_app(60)
    assert at.slider(key="loss_smooth").value == 0.0 and at.toggle(key="loss_logy").value is False
    assert "smooth" not in at.query_params and "logy" not in at.query_params
    at.button(key="start").click().run()
    wait_for(lambda: live_handle(at).done, timeout=30)
    at.run()
    assert len(_named(_figure(at, "loss_chart"), EN["chart.train_loss"])) == 1  # raw, as before
    at.slider(key="loss_smooth").set_value(0.9).run()
    at.toggle(key="loss_logy").set_value(True).run()
    assert not at.exception
    assert at.query_params["smooth"] == "0.9" and at.query_params["logy"] == "1"
    fig = _figure(at, "loss_chart")
    raw, smooth = _named(fig, EN["chart.train_loss"])
    loss = live_handle(at).view().data.scalars["loss"]
    np.testing.assert_allclose(plotly_array(smooth["y"]), ema_debiased(loss, 0.9), rtol=1e-5, atol=1e-6)
    assert raw["opacity"] == 0.25 and fig["layout"]["yaxis"]["type"] == "log"
    at.slider(key="loss_smooth").set_value(0.0).run()
    at.toggle(key="loss_logy").set_value(False).run()
    assert "smooth" not in at.query_params and "logy" not in at.query_params  # the defaults: out of the link
    assert len(_named(_figure(at, "loss_chart"), EN["chart.train_loss"])) == 1


def test_compare_s_controls_change_its_loss_chart_and_keep_live_s_setting(replay_runner, start_app) -> None:
    at = start_app(60)
    at.toggle(key="loss_logy").set_value(True).run()
    at.switch_page("pages/compare.py").run()  # the same two controls on another page: the session's values
    assert at.toggle(key="loss_logy").value is True and at.query_params["logy"] == "1"
    assert _figure(at, "compare_loss")["layout"]["yaxis"]["type"] == "log"
    at.button(key="compare_start").click().run()
    wait_for(lambda: all(h.done for h in replay_runner.handles()), timeout=30)
    at.run()
    assert len(_named(_figure(at, "compare_loss"), "Post-LN")) == 1
    at.slider(key="loss_smooth").set_value(0.6).run()
    assert not at.exception and at.query_params["smooth"] == "0.6"
    fig = _figure(at, "compare_loss")
    for name in ("Post-LN", "Pre-LN"):
        raw, smooth = _named(fig, name)
        expected = ema_debiased(plotly_array(raw["customdata"]), 0.6)
        np.testing.assert_allclose(plotly_array(smooth["customdata"]).reshape(-1, 2)[:, 0], expected, rtol=1e-5)
        assert raw["opacity"] == 0.25 and raw["legendgroup"] == smooth["legendgroup"]


def test_a_link_sets_the_lecture_view_s_loss_chart_and_a_bad_value_is_said(replay_runner, start_app, monkeypatch):
    at = AppTest.from_file("../app.py", default_timeout=60)
    at.query_params.update({"smooth": "0.8", "logy": "yes", "present": "1"})
    at.run()
    assert not at.exception
    assert not [s for s in at.get("slider") if s.key == "loss_smooth"]  # no room for the controls here
    at.button(key="start").click().run()
    wait_for(lambda: live_handle(at).done, timeout=30)
    at.run()
    fig = _figure(at, "loss_chart")
    raw, smooth = _named(fig, EN["chart.train_loss"])
    loss = live_handle(at).view().data.scalars["loss"]
    np.testing.assert_allclose(plotly_array(smooth["y"]), ema_debiased(loss, 0.8), rtol=1e-5, atol=1e-6)
    assert fig["layout"]["yaxis"]["type"] == "log"
    assert at.query_params["smooth"] == "0.8" and at.query_params["logy"] == "1"
    bad = AppTest.from_file("../app.py", default_timeout=60)
    bad.query_params.update({"smooth": "1.5"})
    bad.run()
    assert any("smooth=1.5" in w.value and "0.99" in w.value for w in bad.warning)
    assert bad.slider(key="loss_smooth").value == 0.0


def test_a_stored_run_on_the_runs_page_is_drawn_smoothed(start_app, tmp_path, monkeypatch, post_run: RunData) -> None:
    from ln_viz.store import Store

    monkeypatch.delenv("LN_VIZ_LOAD_DEMOS", raising=False)
    with Store(tmp_path / "runs.sqlite") as store:
        store.add_run(post_run, label="post", source="train")
    at = AppTest.from_file("../app.py", default_timeout=60)
    at.query_params["smooth"] = "0.9"
    at.switch_page("pages/runs.py").run()
    key = next(d.key for d in at.dataframe if d.key and d.key.startswith("runs_table_"))
    at.session_state[key] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    at.run()
    assert not at.exception and at.slider(key="loss_smooth").value == 0.9
    raw, smooth = _named(_figure(at, "runs_loss_chart"), EN["chart.train_loss"])
    expected = ema_debiased(post_run.scalars["loss"], 0.9)
    np.testing.assert_allclose(plotly_array(smooth["y"]), expected, rtol=1e-5, atol=1e-6)
    assert raw["opacity"] == 0.25


def test_the_unigram_label_sits_at_the_end_of_its_line_that_hides_the_fewest_loss_points(
    post_run: RunData, pre_run: RunData
) -> None:
    """At a fixed place (the right end, under the line) its white ground hid the last fifth of every run that
    had learned to just under the unigram loss (Compare's lecture view with seeds: the lines seemed to stop
    at step 45 of 60). It now takes whichever end of the line, under or over it, covers the fewest points."""
    from ln_viz.charts.reference import LABEL_BOX

    def covered(fig, x: float, xanchor: str, yanchor: str) -> int:
        x1, top, u = fig.layout.xaxis.range[1], fig.layout.yaxis.range[1], pre_run.info.unigram_entropy
        w, h = LABEL_BOX[0] * x1, LABEL_BOX[1] * top
        x0 = x - w if xanchor == "right" else x
        y0, y1 = (u - h, u) if yanchor == "top" else (u, u + h)
        n = 0
        for tr in fig.data:
            if tr.yaxis in (None, "y") and not tr.name.startswith("unigram"):
                px, py = np.asarray(tr.x, float), np.asarray([np.nan if v is None else v for v in tr.y], float)
                n += int(np.count_nonzero((px >= x0) & (px <= x0 + w) & (py > y0) & (py < y1)))
        return n

    # a run that ends just under the line: the pre-LN run cut where it is 0.1-0.4 nats under it
    loss = np.asarray(pre_run.scalars["loss"])
    under = np.nonzero(loss < pre_run.info.unigram_entropy - 0.1)[0]
    cut = int(pre_run.scalars["step"][under[len(under) // 4]])
    short = RunData.from_snapshots(pre_run.info, [s for s in pre_run.snapshots() if s.step <= cut])
    for fig in (
        charts.loss_chart(pre_run),
        charts.loss_chart([post_run, pre_run]),
        charts.loss_chart(short, lecture=True),
    ):
        label = next(a for a in fig.layout.annotations if a.text.startswith("unigram"))
        x1 = fig.layout.xaxis.range[1]
        here = covered(fig, label.x, label.xanchor, label.yanchor)
        for place in ((x1, "right", "top"), (0, "left", "top"), (0, "left", "bottom"), (x1, "right", "bottom")):
            assert here <= covered(fig, *place)
