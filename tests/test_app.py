"""The live page's logic with AppTest (no browser): widgets, presets, Start/Stop, states, language.

Runs train in real worker processes (the tests that press Start on a valid configuration are `slow`);
AppTest has no timer, so tests poll the run and call at.run() again, as a fragment tick would."""

import time

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from ln_viz.config import PRESETS
from ln_viz.ui import session

APP = "../app.py"


@pytest.fixture
def at(start_app):
    app = start_app(60)
    assert not app.exception
    return app


def tiny(at: AppTest, steps: int = 30) -> AppTest:
    at.slider(key="depth").set_value(2)
    at.number_input(key="d_model").set_value(32)
    at.number_input(key="heads").set_value(2)
    at.number_input(key="batch_size").set_value(8)
    at.number_input(key="seq_len").set_value(32)
    at.number_input(key="steps").set_value(steps)
    at.number_input(key="probe_every").set_value(5)
    return at.run()


def wait_for(predicate, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError("timed out")


def live_handle(at: AppTest):
    return session.get_runner().get(at.session_state["live_run_id"])


def test_the_page_opens_on_the_default_preset_with_start_and_stop(at):
    assert at.selectbox(key="preset").value == "pre-ln-no-warmup"
    assert at.selectbox(key="norm_position").value == "pre"
    assert at.button(key="start") and at.button(key="stop")
    assert any("Start" in i.value for i in at.info)
    assert any(PRESETS["pre-ln-no-warmup"].expect_key and "Pre-LN" in c.value for c in at.sidebar.caption)


def test_choosing_a_preset_sets_every_widget(at):
    at.selectbox(key="preset").set_value("post-ln-warmup").run()
    cfg = PRESETS["post-ln-warmup"].config
    assert at.selectbox(key="norm_position").value == "post"
    assert at.number_input(key="warmup_steps").value == cfg.warmup_steps
    assert at.select_slider(key="lr").value == cfg.lr  # exactly, never rounded to a slider stop
    assert at.slider(key="depth").value == cfg.depth


@pytest.mark.slow
def test_start_trains_and_draws_every_chart_then_completes(at):
    tiny(at, steps=30)
    at.button(key="start").click().run()
    assert not at.exception and not at.error
    wait_for(lambda: live_handle(at).done)
    at.run()
    keys = {c.key for c in at.get("plotly_chart")}
    assert {"loss_chart", "grad_heatmap", "act_dist", "layer_profile", "update_ratio"} <= keys
    status = at.markdown[0].value
    assert "Step 30/30" in status and ("completed" in status or "stalled" in status)


@pytest.mark.slow
def test_stop_ends_the_run_within_a_second_and_keeps_its_steps(at):
    tiny(at, steps=5000)
    at.button(key="start").click().run()
    wait_for(lambda: live_handle(at).view().steps_done >= 3)
    t0 = time.monotonic()
    at.button(key="stop").click().run()
    wait_for(lambda: live_handle(at).done, timeout=5)
    assert time.monotonic() - t0 < 1.5
    view = live_handle(at).view()
    assert view.status == "stopped" and view.steps_done >= 3


@pytest.mark.slow
def test_a_long_run_is_drawn_thinned_while_it_trains_and_whole_once_it_ends(at):
    tiny(at, steps=5000)
    at.number_input(key="probe_every").set_value(2).run()
    at.button(key="start").click().run()
    wait_for(lambda: live_handle(at).view().steps_done >= 300)  # 150+ probe steps, the live copy keeps 64
    at.run()
    assert any("one probe step in" in c.value for c in at.caption)
    at.button(key="stop").click().run()
    wait_for(lambda: live_handle(at).done, timeout=5)
    at.run()
    steps_done = live_handle(at).view().steps_done
    options = at.select_slider(key="probe_step").options
    # Every probe step the run measured, read back from the store: 1, 2, 4, ... (and none thinned).
    assert [int(o) for o in options] == [1, *range(2, steps_done + 1, 2)]
    assert not any("one probe step in" in c.value for c in at.caption)


@pytest.mark.slow
def test_a_second_start_replaces_the_first_run(at):
    tiny(at, steps=5000)
    at.button(key="start").click().run()
    first = live_handle(at)
    at.button(key="start").click().run()
    second = live_handle(at)
    assert second.run_id != first.run_id
    wait_for(lambda: first.done, timeout=5)
    assert first.view().status == "stopped"


def test_an_invalid_configuration_is_refused_with_one_sentence_and_nothing_starts(at):
    at.number_input(key="d_model").set_value(65)
    at.number_input(key="heads").set_value(4).run()
    at.button(key="start").click().run()
    assert len(at.error) == 1 and "divisible by heads" in at.error[0].value
    assert "live_run_id" not in at.session_state


def test_warmup_longer_than_the_run_is_refused(at):
    at.number_input(key="steps").set_value(50)
    at.number_input(key="warmup_steps").set_value(100).run()
    at.button(key="start").click().run()
    assert "longer than the run" in at.error[0].value


def test_korean_changes_the_labels(at):
    at.sidebar.radio(key="lang_choice").set_value("ko").run()
    assert at.button(key="start").label == "시작"
    assert at.slider(key="depth").label == "깊이 (층 수)"
    assert at.title[0].value.startswith("ln-viz: 레이어")


def test_the_url_carries_the_scenario_and_a_bad_parameter_is_ignored_with_a_notice(tmp_path, monkeypatch):
    monkeypatch.setenv("LN_VIZ_STORE", str(tmp_path / "runs.sqlite"))
    app = AppTest.from_file(APP, default_timeout=60)
    app.query_params.update({"preset": "post-ln-no-warmup", "depth": "abc", "lr": "0.001", "warmup": "40"})
    app.run()
    try:
        assert app.selectbox(key="norm_position").value == "post"
        assert app.select_slider(key="lr").value == 0.001 and app.number_input(key="warmup_steps").value == 40
        assert app.slider(key="depth").value == PRESETS["post-ln-no-warmup"].config.depth
        assert len(app.warning) == 1 and "depth=abc" in app.warning[0].value
        assert app.query_params["depth"] == str(PRESETS["post-ln-no-warmup"].config.depth)
    finally:
        st.cache_resource.clear()
