"""Compare and Init lab pages with AppTest, through the app's router (no browser). The tests that train
both sides or measure a scenario in the Init lab's worker pool are `slow`; the Init lab's default scenario
draws from the measurement shipped with the app, so the tests of that page on its default stay fast."""

import base64
import io
import json
import time
from contextlib import redirect_stdout

import numpy as np
import pandas as pd
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from ln_viz.cli import main as cli_main
from ln_viz.config import COMPARE_PRESETS, PRESETS
from ln_viz.i18n import t
from ln_viz.init_lab import bundled_default
from ln_viz.ui import training

APP = "../app.py"


def plotly_array(value) -> np.ndarray:
    """A trace's array from figure JSON: a plain list, or plotly's typed base64 form for numpy arrays."""
    if isinstance(value, dict) and "bdata" in value:
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"])).astype(float)
    return np.asarray(value, dtype=float)


@pytest.fixture
def at(start_app):
    return start_app(120)


def shrink(at: AppTest, prefix: str, steps: int = 20) -> None:
    at.slider(key=prefix + "depth").set_value(2)
    at.number_input(key=prefix + "d_model").set_value(32)
    at.number_input(key=prefix + "heads").set_value(2)
    at.number_input(key=prefix + "batch_size").set_value(8)
    at.number_input(key=prefix + "seq_len").set_value(16)
    at.number_input(key=prefix + "steps").set_value(steps)


def wait_done(handles: list, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not all(h.done for h in handles) and time.monotonic() < deadline:
        time.sleep(0.1)


def test_compare_opens_on_post_vs_pre_with_everything_else_equal(start_app):
    at = start_app(120, "pages/compare.py")
    assert not at.exception
    a, b, _ = COMPARE_PRESETS["post-vs-pre"]
    assert at.selectbox(key="a.norm_position").value == "post"
    assert at.selectbox(key="b.norm_position").value == "pre"
    assert PRESETS[a].config.replace(norm_position="pre") == PRESETS[b].config
    assert any("LayerNorm position Post-LN / Pre-LN" in c.value for c in at.caption)  # the one difference, named


def test_compare_scenario_sets_both_sides(start_app):
    at = start_app(120, "pages/compare.py")
    at.selectbox(key="cpreset").set_value("deepnorm-rescue").run()
    assert at.selectbox(key="a.norm_position").value == "post"
    assert at.selectbox(key="b.norm_position").value == "deepnorm"
    assert at.slider(key="a.depth").value == at.slider(key="b.depth").value == 24
    assert at.query_params["cpreset"] == "deepnorm-rescue"
    assert at.query_params["b.norm"] == "deepnorm"


@pytest.mark.slow
def test_compare_trains_both_and_draws_them_together(start_app):
    at = start_app(120, "pages/compare.py")
    shrink(at, "a.")
    shrink(at, "b.")
    at.run()
    at.button(key="compare_start").click().run()
    assert not at.error and not at.exception
    handles = training.get_runner().handles()
    assert len(handles) == 2
    wait_done(handles, 180)
    at.run()
    keys = {c.key for c in at.get("plotly_chart")}
    assert {"compare_loss", "compare_heatmap_0", "compare_heatmap_1", "compare_profile"} <= keys
    assert at.select_slider(key="compare_step").value == 20


def test_compare_draws_two_replayed_runs_together_at_their_last_common_step(replay_runner, start_app):
    at = start_app(120, "pages/compare.py")
    at.button(key="compare_start").click().run()
    assert not at.error and not at.exception
    assert [c.norm_position for c in replay_runner.started] == ["post", "pre"]  # side A, side B
    wait_done(replay_runner.handles(), 30)
    at.run()
    keys = {c.key for c in at.get("plotly_chart")}
    assert {"compare_loss", "compare_heatmap_0", "compare_heatmap_1", "compare_profile"} <= keys
    assert at.select_slider(key="compare_step").value == 300
    assert " ".join(m.value for m in at.markdown).count("Step 300/300") == 2  # side A's line and side B's


def test_compare_link_restores_every_setting_of_both_sides(tmp_path, monkeypatch):
    monkeypatch.setenv("LN_VIZ_STORE", str(tmp_path / "runs.sqlite"))
    first = AppTest.from_file(APP, default_timeout=120)
    first.switch_page("pages/compare.py").run()  # a link to the page, through the router
    first.selectbox(key="cpreset").set_value("warmup-vs-none").run()
    first.number_input(key="b.seed").set_value(7)
    first.select_slider(key="a.lr").set_value(0.005).run()
    bookmark = dict(first.query_params.items())
    fresh = AppTest.from_file(APP, default_timeout=120)  # a fresh browser session opening the bookmark
    fresh.query_params.update(bookmark)
    fresh.switch_page("pages/compare.py").run()
    try:
        for key in ("a.norm_position", "b.norm_position", "a.schedule", "b.corpus"):
            assert fresh.selectbox(key=key).value == first.selectbox(key=key).value
        for key in ("a.warmup_steps", "b.warmup_steps", "b.seed", "a.steps", "b.batch_size"):
            assert fresh.number_input(key=key).value == first.number_input(key=key).value
        assert fresh.select_slider(key="a.lr").value == 0.005
        assert fresh.number_input(key="b.seed").value == 7
    finally:
        st.cache_resource.clear()


@pytest.mark.slow
def test_init_lab_draws_and_agrees_with_the_cli(at):
    at.switch_page("pages/init_lab.py").run()
    at.slider(key="init_depth").set_value(4)
    at.slider(key="init_seeds").set_value(2)
    at.multiselect(key="init_depths").set_value([2, 4]).run()
    assert not at.exception
    keys = {c.key for c in at.get("plotly_chart")}
    assert {"init_profile", "init_vs_depth", "init_resid"} <= keys
    profile = json.loads(next(c for c in at.get("plotly_chart") if c.key == "init_profile").proto.spec)
    out = io.StringIO()
    with redirect_stdout(out):
        cli_main(["init-grads", "--norm-position", "pre", "--depth", "4", "--seeds", "2", "--csv"])
    df = pd.read_csv(io.StringIO(out.getvalue()))
    cli_mean = df[df.param == "ffn.w2"].groupby("layer").grad_norm.mean().to_numpy()
    pre_trace = next(
        tr for tr in profile["data"] if "Pre-LN" in tr.get("name", "") and tr.get("mode") == "lines+markers"
    )
    ys = plotly_array(pre_trace["y"])
    assert ys == pytest.approx(cli_mean, rel=1e-5)


def test_init_lab_default_draws_the_shipped_measurement_and_says_so(at):
    at.switch_page("pages/init_lab.py").run()
    assert not at.exception
    shipped = bundled_default()
    assert shipped is not None
    assert any("measured in advance" in c.value for c in at.caption)
    profile = json.loads(next(c for c in at.get("plotly_chart") if c.key == "init_profile").proto.spec)
    pre = shipped.grads["pre"]
    want = pre[pre.param == "ffn.w2"].groupby("layer").grad_norm.mean().to_numpy()
    pre_trace = next(
        tr for tr in profile["data"] if "Pre-LN" in tr.get("name", "") and tr.get("mode") == "lines+markers"
    )
    assert plotly_array(pre_trace["y"]) == pytest.approx(want, rel=1e-6)


@pytest.mark.slow
def test_init_lab_another_scenario_is_measured_now_without_the_note(at):
    at.switch_page("pages/init_lab.py").run()
    assert any("measured in advance" in c.value for c in at.caption)
    at.slider(key="init_seeds").set_value(1)
    at.multiselect(key="init_depths").set_value([2]).run()  # another scenario: measured now, no such note
    assert not at.exception and not any("measured in advance" in c.value for c in at.caption)


def test_init_lab_in_korean(at):
    at.sidebar.radio(key="lang_choice").set_value("ko").run()
    at.switch_page("pages/init_lab.py").run()  # the default scenario: drawn from the shipped measurement
    assert at.title[0].value.startswith("초기화 실험실")
    assert not at.exception
    assert t("init.shipped", "ko") in [c.value for c in at.caption]


@pytest.mark.slow
def test_init_lab_in_korean_on_a_scenario_measured_now(at):
    at.sidebar.radio(key="lang_choice").set_value("ko").run()
    at.session_state["init_depth"], at.session_state["init_seeds"] = 3, 1
    at.session_state["init_depths"] = [2, 3]
    at.switch_page("pages/init_lab.py").run()
    assert at.title[0].value.startswith("초기화 실험실")
    assert not at.exception


def _switch(at: AppTest, page: str) -> AppTest:
    """A click on another page in the sidebar: the browser drops the address's query parameters."""
    at.query_params.clear()
    return at.switch_page(page).run()


@pytest.mark.parametrize(("lang", "present"), [("en", "0"), ("ko", "1")], ids=["en", "ko-lecture"])
def test_each_page_keeps_its_settings_across_page_switches(start_app, monkeypatch, lang, present):
    """Streamlit drops a widget's key when a run does not draw it: Live -> Compare -> Live came back as
    "Pre-LN, no warm-up", depth 6 (the charts kept the 8-layer Post-LN run), Compare's scenario and the
    Init lab's depth were lost after Theory (issue 21, N2, N3, N22)."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update({"preset": "post-ln-warmup", "depth": "8", "lang": lang, "present": present})
    at.run()
    try:
        _switch(at, "pages/compare.py")
        if present == "1":  # the lecture view's scenario buttons, else the scenario box
            at.button_group(key="lecture_choice").set_value("warmup-vs-none").run()
        else:
            at.selectbox(key="cpreset").set_value("warmup-vs-none").run()
        from ln_viz.ui import compare_view, config_form

        compare_view_sides = [at.session_state[p + "preset"] for p in compare_view.SIDES]
        _switch(at, "pages/theory.py")
        _switch(at, "pages/compare.py")
        assert at.session_state["cpreset"] == "warmup-vs-none" and at.query_params["cpreset"] == "warmup-vs-none"
        assert [at.session_state[p + "preset"] for p in compare_view.SIDES] == compare_view_sides
        _switch(at, "pages/live.py")
        assert at.session_state["norm_position"] == "post" and at.session_state["depth"] == 8
        assert at.session_state["warmup_steps"] == 100
        assert at.selectbox(key="preset").value == config_form.CUSTOM  # depth 8 is no preset's
        want = {"norm": "post", "depth": "8", "warmup": "100"}  # the browser's address: tests/e2e (AppTest keeps
        assert {k: at.query_params.get(k) for k in want} == want  # the server's copy of it, not the browser's)
        _switch(at, "pages/init_lab.py")
        if present == "1":  # the lecture view has no form: its choice of figure is what must stay
            at.button_group(key="init_lecture_view").set_value("toy").run()
        else:
            at.session_state["init_depth"], at.session_state["init_positions"] = 17, []  # [] stops before measuring
            at.run()
        _switch(at, "pages/theory.py")
        _switch(at, "pages/init_lab.py")
        if present == "1":
            assert at.button_group(key="init_lecture_view").value == "toy" and not at.exception and not at.warning
        else:
            assert at.slider(key="init_depth").value == 17 and not at.exception and not at.warning
    finally:
        st.cache_resource.clear()


def _step_lines(at: AppTest, key: str) -> list[float]:
    spec = json.loads(next(c for c in at.get("plotly_chart") if c.key == key).proto.spec)
    return [sh["x0"] for sh in spec["layout"].get("shapes", []) if sh.get("type") == "line" and sh["x0"] == sh["x1"]]


def test_the_lecture_view_marks_the_profile_s_step_on_the_loss_and_the_heatmaps(replay_runner, start_app):
    """Issue 21 N15: when the step control leaves the last step (by hand or Play), the loss chart and both
    heatmaps draw a line at that step, so a room sees where the profile is; at the last step, none."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["present"] = "1"
    at.switch_page("pages/compare.py").run()
    try:
        at.button(key="compare_start").click().run()
        wait_done(replay_runner.handles(), 30)
        at.run()
        marked = ("compare_loss", "compare_heatmap_0", "compare_heatmap_1")
        assert [_step_lines(at, k) for k in marked] == [[], [], []]  # at the last step
        at.select_slider(key="compare_step").set_value(100).run()
        assert [_step_lines(at, k) for k in marked] == [[100], [100], [100]]
        profile = json.loads(next(c for c in at.get("plotly_chart") if c.key == "compare_profile").proto.spec)
        assert "step 100" in profile["layout"]["title"]["subtitle"]["text"]
    finally:
        st.cache_resource.clear()


def test_compare_lecture_view_names_each_run_s_verdict_and_a_new_scenario_clears_the_old_runs(replay_runner, start_app):
    """Issue 21: "+ warm-up" picked after post-vs-pre had run left Post-LN vs Pre-LN on the charts under
    "Warm-up is the only difference" until Start (N1); the takeaway showed before Start (N17); the end
    sentence was the third line of a 50-px box and named no run (N4); Stop both was enabled with nothing
    running (N27)."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["present"] = "1"
    at.switch_page("pages/compare.py").run()
    try:
        assert at.button(key="compare_stop").disabled
        texts = [m.value for m in at.main.markdown]
        assert t("lecture.question.post-vs-pre", "en") in texts and t("lecture.takeaway.post-vs-pre", "en") not in texts
        at.button(key="compare_start").click().run()
        wait_done(replay_runner.handles(), 30)
        at.run()
        assert at.button(key="compare_stop").disabled and not at.exception
        texts = [m.value for m in at.main.markdown]
        verdicts = [v for m in texts for v in m.split("  \n") if v.startswith(("**Post-LN", "**Pre-LN"))]
        assert len(verdicts) == 2, texts  # one line each: the box shows two
        assert "Post-LN" in verdicts[0] and "stalled" in verdicts[0] and "Pre-LN: learned" in verdicts[1], verdicts
        assert t("lecture.takeaway.post-vs-pre", "en") in texts
        at.button_group(key="lecture_choice").set_value("warmup-vs-none").run()  # a new scenario after the run
        texts = [m.value for m in at.main.markdown]
        assert "Post-LN · 6 layers · Adam lr 3e-3 · no warm-up vs warm-up 100 steps" in texts
        loss = json.loads(next(c for c in at.get("plotly_chart") if c.key == "compare_loss").proto.spec)
        lines = {tr["name"]: len(plotly_array(tr.get("x", []))) for tr in loss["data"]
                 if "unigram" not in tr["name"] and tr.get("yaxis") != "y2"}  # fmt: skip
        assert lines == {"Post-LN · no warm-up": 0, "Post-LN · warm-up 100 steps": 0}  # the new runs, empty
        planned = [tr["name"] for tr in loss["data"] if tr.get("yaxis") == "y2"]  # their learning rates, planned
        assert planned == [
            f"{t('chart.lr', 'en')} · {n}" for n in ("Post-LN · no warm-up", "Post-LN · warm-up 100 steps")
        ]
        assert t("lecture.question.warmup-vs-none", "en") in texts and t("ui.not_started_pair", "en") in " ".join(texts)
        assert at.button(key="compare_stop").disabled
    finally:
        st.cache_resource.clear()
