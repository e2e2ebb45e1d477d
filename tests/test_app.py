"""The live page's logic with AppTest (no browser): widgets, presets, Start/Stop, states, language.

The `slow` tests train in real worker processes; the others that need a run on screen replay a recorded
one (the `replay_runner` fixture: tests/replay.py). AppTest has no timer, so tests poll the run and call
at.run() again, as a fragment tick would."""

import os
import time

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from ln_viz.config import PRESETS
from ln_viz.store import Store
from ln_viz.ui import config_form, training

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
    return training.get_runner().get(at.session_state["live_run_id"])


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
    # where it trained: the local pool by default (LN_VIZ_EXECUTOR unset)
    assert any(c.value.startswith("Runs train on this machine, at most") for c in at.caption)


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


def test_a_replayed_run_is_drawn_whole_once_it_ends_and_read_back_from_the_store(replay_runner, at):
    at.button(key="start").click().run()
    assert not at.exception and not at.error
    wait_for(lambda: live_handle(at).done, timeout=30)
    at.run()
    recorded = live_handle(at).view().data
    assert replay_runner.started[0].norm_position == "pre" and recorded.info.config.norm_position == "pre"
    assert {"loss_chart", "grad_heatmap", "act_dist", "layer_profile", "update_ratio"} <= {
        c.key for c in at.get("plotly_chart")
    }
    status = at.markdown[0].value
    assert "Step 300/300" in status and "completed" in status
    steps = [int(o) for o in at.select_slider(key="probe_step").options]
    assert steps == recorded.probe_steps == [1, *range(10, 301, 10)]
    with Store(os.environ["LN_VIZ_STORE"]) as store:  # the page's hooks stored it, as they store a trained run
        (row,) = store.list_runs()
        assert (row.steps_done, row.status) == (300, "completed")


def test_a_run_in_progress_says_its_step_and_stop_keeps_its_steps(replay_runner, at):
    replay_runner.hold_at = 120
    at.button(key="start").click().run()
    wait_for(lambda: live_handle(at).view().steps_done == 120, timeout=30)
    at.run()
    assert "Step 120/300" in at.markdown[0].value and "running" in at.markdown[0].value
    at.button(key="stop").click().run()
    wait_for(lambda: live_handle(at).done, timeout=10)
    at.run()
    view = live_handle(at).view()
    assert (view.status, view.steps_done) == ("stopped", 120) and "stopped" in at.markdown[0].value


def test_a_second_start_replaces_the_first_run(replay_runner, at):
    replay_runner.hold_at = 50  # both runs stay in progress until stopped
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


def test_gi_adam_with_sgd_is_refused_in_one_sentence(at):
    at.selectbox(key="optimizer").set_value("sgd")
    at.selectbox(key="adam_init").set_value("gi").run()
    at.button(key="start").click().run()
    assert len(at.error) == 1 and "choose optimizer adam or adam_init zero" in at.error[0].value
    assert "live_run_id" not in at.session_state


def test_korean_changes_the_labels(at):
    at.sidebar.radio(key="lang_choice").set_value("ko").run()
    assert at.button(key="start").label == "시작"
    assert at.slider(key="depth").label == "깊이 (층 수)"
    assert at.title[0].value.startswith("ln-viz: LayerNorm 위치")


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


# --- the lecture view, custom settings, the one step control --------------------------------------
def test_a_changed_setting_makes_the_preset_a_custom_setting_and_the_link_drops_it(at):
    assert at.query_params["preset"] == "pre-ln-no-warmup"
    at.slider(key="depth").set_value(3).run()
    assert at.selectbox(key="preset").value == config_form.CUSTOM
    assert any("Your own setting now" in c.value for c in at.sidebar.caption)
    assert not any("Pre-LN at the same learning rate" in c.value for c in at.sidebar.caption)
    assert "preset" not in at.query_params and at.query_params["depth"] == "3"
    at.selectbox(key="preset").set_value("post-ln-warmup").run()  # a preset again: its caption, its link
    assert at.query_params["preset"] == "post-ln-warmup" and at.slider(key="depth").value == 6


def test_the_sidebar_toggle_opens_the_lecture_view_and_its_buttons_pick_a_preset(at):
    assert not any("·" in m.value for m in at.markdown)
    at.toggle(key="lecture_toggle").set_value(True).run()
    assert at.query_params["present"] == "1" and not at.exception
    # the header strip says what would run, in words and numbers
    assert any(m.value == "Pre-LN · 6 layers · Adam lr 3e-3 · no warm-up" for m in at.markdown)
    assert at.button(key="start") and at.button(key="stop")  # in the main area
    assert {c.key for c in at.get("plotly_chart")} == {"loss_chart", "grad_heatmap", "layer_profile", "act_dist"}
    assert not at.main.caption  # no captions in the lecture view (the sidebar, hidden, keeps the form)
    at.button(key="lecture_lang").click().run()  # the language without the hidden sidebar
    assert at.button(key="start").label == "시작"
    assert any(m.value == "Pre-LN · 6층 · Adam 학습률 3e-3 · 웜업 없음" for m in at.markdown)
    at.button(key="lecture_exit").click().run()
    assert "present" not in at.query_params and at.title


def test_compare_names_the_difference_in_the_form_s_words_in_korean(at):
    at.sidebar.radio(key="lang_choice").set_value("ko").run()
    at.switch_page("pages/compare.py").run()
    assert any("LayerNorm 위치 Post-LN / Pre-LN" in c.value for c in at.caption)
    assert not any("norm_position" in c.value for c in at.caption)
    assert {"compare_loss", "compare_heatmap_0", "compare_profile"} <= {c.key for c in at.get("plotly_chart")}


def _stepper_app() -> None:
    import streamlit as st

    from ln_viz.ui import stepper

    timer = stepper.timer("s", None)

    @st.fragment(run_every=timer)
    def view() -> None:
        step = stepper.step_control([5, 10, 15], "s", "en", done=True, ticking=timer is not None)
        st.markdown(f"shown {step}")

    view()


def test_play_moves_the_one_step_control_to_the_end_and_stops():
    at = AppTest.from_function(_stepper_app, default_timeout=30).run()
    assert at.markdown[0].value == "shown 15" and at.select_slider(key="s").value == 15
    at.button(key="s_play").click().run()  # at the last step, Play starts over, then advances each tick
    assert at.markdown[0].value == "shown 10" and "Pause" in at.button(key="s_play").label
    at.run()
    assert at.markdown[0].value == "shown 15"
    at.run()  # the end: Play stops by itself
    assert at.markdown[0].value == "shown 15" and "Play" in at.button(key="s_play").label
    at.select_slider(key="s").set_value(5).run()
    at.button(key="s_play").click().run()
    at.button(key="s_play").click().run()  # Pause
    assert at.markdown[0].value == "shown 10" and "Play" in at.button(key="s_play").label


def _long_stepper_app() -> None:
    import streamlit as st

    from ln_viz.ui import stepper

    timer = stepper.timer("s", None)

    @st.fragment(run_every=timer)
    def view() -> None:
        step = stepper.step_control(list(range(0, 301, 5)), "s", "en", done=True, ticking=timer is not None)
        st.markdown(f"shown {step}")

    view()


def test_play_replays_a_300_step_run_in_at_most_12_seconds():
    """Issue 21 N15 (check 7): 61 probe steps at one a tick took 61 x 0.6 = 36.6 s; Play now strides."""
    at = AppTest.from_function(_long_stepper_app, default_timeout=30).run()
    at.button(key="s_play").click().run()  # from the end: starts over and makes its first tick
    shown = [int(at.markdown[0].value.split()[-1])]
    while "Pause" in at.button(key="s_play").label:
        at.run()
        shown.append(int(at.markdown[0].value.split()[-1]))
    ticks = len(set(shown))  # each step shown is one tick of the Play timer (the last is shown again as it stops)
    assert shown[-1] == 300 and shown == sorted(shown)  # it ends at the run's last step, moving forward
    assert ticks * stepper_tick() <= 12.0 + 1e-9, (ticks, shown)
    assert max(b - a for a, b in zip(shown, shown[1:], strict=False)) <= 20  # no jump over 4 probe steps


def stepper_tick() -> float:
    from ln_viz.ui.stepper import PLAY_S

    return PLAY_S


def test_runs_on_one_chart_are_named_by_their_settings_not_their_ids():
    from ln_viz.views import run_frames

    post, pre = PRESETS["post-ln-no-warmup"].config, PRESETS["pre-ln-no-warmup"].config
    assert run_frames.run_labels([post, pre], "en") == ["Post-LN", "Pre-LN"]
    warm = PRESETS["post-ln-warmup"].config
    assert run_frames.run_labels([post, warm], "ko") == ["Post-LN · 웜업 없음", "Post-LN · 웜업 100스텝"]
    assert run_frames.run_labels([post, post.replace(lr=0.01)], "en") == [
        "Post-LN · Adam lr 3e-3",
        "Post-LN · Adam lr 1e-2",
    ]


def test_the_lecture_header_names_the_issue_19_settings_a_run_changes():
    """Both qk-norm-logits runs read "Pre-LN · 6 layers · Adam lr 3e-2 · no warm-up": the one difference
    was not said."""
    from ln_viz.config import COMPARE_PRESETS
    from ln_viz.ui.lecture_view import describe
    from ln_viz.views import run_frames

    a, b, _ = COMPARE_PRESETS["qk-norm-logits"]
    cfgs = [PRESETS[a].config, PRESETS[b].config]
    assert describe(cfgs, "en") == "Pre-LN · 6 layers · Adam lr 3e-2 · no warm-up · no QK-norm vs QK-norm"
    assert describe(cfgs, "ko") == "Pre-LN · 6층 · Adam 학습률 3e-2 · 웜업 없음 · QK-norm 없음 대 QK-norm"
    assert run_frames.run_labels(cfgs, "en") == ["Pre-LN · no QK-norm", "Pre-LN · QK-norm"]
    assert describe([PRESETS["pre-ln-no-warmup"].config], "en") == "Pre-LN · 6 layers · Adam lr 3e-3 · no warm-up"
    zoo = PRESETS["pre-ln-no-warmup"].config.replace(
        norm_type="dyt", dyt_alpha=1.0, ln_scaling=True, weight_decay=0.1, z_loss=1e-4, grad_clip=1.0
    )
    extras = " · DyT α 1 · LayerNorm Scaling · weight decay 0.1 · z-loss 1e-4 · grad clip 1"
    assert describe([zoo], "en") == "Pre-LN · 6 layers · Adam lr 3e-3 · no warm-up" + extras
    assert describe([zoo], "ko").endswith(
        " · DyT α 1 · LayerNorm 스케일링 · 가중치 감쇠 0.1 · z-loss 1e-4 · 그래디언트 클리핑 1"
    )
    plain = zoo.replace(norm_type="layernorm", ln_scaling=False, weight_decay=0.0, z_loss=0.0, grad_clip=1.0)
    assert run_frames.run_labels([zoo, plain], "en")[1] == (
        "Pre-LN · LayerNorm · no LayerNorm Scaling · no weight decay · no z-loss"
    )  # the same clip on both: not said


def test_an_instability_scenario_or_preset_shows_its_probe_in_the_lecture_view():
    from ln_viz.config import COMPARE_PRESETS
    from ln_viz.lessons import LESSON_CHARTS, lesson_chart
    from ln_viz.ui.lecture_view import CLASSIC

    assert set(LESSON_CHARTS) <= set(PRESETS) | set(COMPARE_PRESETS)  # no entry for a name that is not one
    assert CLASSIC <= set(PRESETS) | set(COMPARE_PRESETS)
    high = PRESETS["high-lr"].config
    assert lesson_chart("qk-norm-logits", [high, high]) == lesson_chart("very-high-lr", [high]) == "attn_logit"
    assert lesson_chart("post-vs-pre", [high, high]) is None and lesson_chart(None, [high]) is None
    assert lesson_chart(None, [high, high.replace(z_loss=1e-4)]) == "log_z"  # z-loss: log Z, without an entry


@pytest.fixture(scope="module")
def probed_run():
    """A real DyT run with the instability probes (the shipped demo runs were recorded before them)."""
    from ln_viz.train import run

    cfg = PRESETS["pre-ln-no-warmup"].config.replace(depth=2, d_model=16, heads=2, batch_size=4, seq_len=16)
    return run(cfg.replace(steps=30, probe_every=10, eval_every=0, norm_type="dyt"))


def test_the_instability_expander_draws_the_probes_of_a_finished_run(replay_runner, at, probed_run, monkeypatch):
    import tests.replay

    monkeypatch.setattr(tests.replay, "nearest_demo", lambda cfg: probed_run)  # replay this run, not a demo
    at.button(key="start").click().run()
    wait_for(lambda: live_handle(at).done, timeout=30)
    at.run()
    assert not at.exception and not at.error
    (expander,) = [e for e in at.expander if e.label == "Instability probes"]
    assert not expander.get("plotly_chart")  # closed: its charts are neither built nor sent
    at.session_state["instability_open"] = True  # what a click on it sets (it reruns the page)
    at.run()
    (expander,) = [e for e in at.expander if e.label == "Instability probes"]
    keys = {c.key for c in expander.get("plotly_chart")}
    updates = {"angular_update", "precond_lag", "norm_min_rms"}  # issue 33's update probes
    assert keys == {"attn_logit", "log_z", "massive_act", "dyt_saturation"} | updates
    assert "Wortsman" in " ".join(c.value for c in expander.caption)


def test_compare_draws_both_runs_largest_attention_logit_and_log_z(replay_runner, at, probed_run, monkeypatch):
    import json

    import tests.replay

    monkeypatch.setattr(tests.replay, "nearest_demo", lambda cfg: probed_run)  # both sides replay this run
    at.switch_page("pages/compare.py").run()
    at.button(key="compare_start").click().run()
    wait_for(lambda: all(h.done for h in replay_runner.handles()), timeout=30)
    at.run()
    assert not at.exception and not at.error
    figs = {c.key: json.loads(c.proto.spec) for c in at.get("plotly_chart")}
    for key in ("compare_attn_logit", "compare_log_z"):
        lines = [tr for tr in figs[key]["data"] if tr.get("name")]
        assert [tr["name"] for tr in lines] == ["Run A: Pre-LN", "Run B: Pre-LN"], key  # as the losses name them
    assert figs["compare_attn_logit"]["layout"]["yaxis"]["type"] == "log"
    assert any("Wortsman" in c.value for c in at.caption)


def test_compare_names_a_run_from_before_the_probes_in_one_sentence(replay_runner, at):
    at.switch_page("pages/compare.py").run()
    at.button(key="compare_start").click().run()  # replays two shipped demo runs: recorded before the probes
    wait_for(lambda: all(h.done for h in replay_runner.handles()), timeout=30)
    at.run()
    assert not {"compare_attn_logit", "compare_log_z"} & {c.key for c in at.get("plotly_chart")}
    assert [c.value for c in at.caption if "instability probes existed" in c.value] == [
        "Post-LN, Pre-LN: recorded before the instability probes existed, so there are no attention logits or "
        "log Z to draw; train it again to see them."
    ]


def test_a_run_from_before_the_probes_says_so_in_one_sentence(replay_runner, at):
    at.button(key="start").click().run()  # replays a shipped demo run: recorded before the probes
    wait_for(lambda: live_handle(at).done, timeout=30)
    at.run()
    (expander,) = [e for e in at.expander if e.label == "Instability probes"]
    assert not expander.get("plotly_chart")
    assert [c.value for c in expander.caption] == [
        "This run was recorded before the instability probes existed (attention logits, log Z, massive "
        "activations, DyT saturation): train it again to see them."
    ]


def _figure(at: AppTest, key: str) -> dict:
    import json

    return json.loads(next(c for c in at.get("plotly_chart") if c.key == key).proto.spec)


def _points(trace: dict) -> int:
    """How many points a trace of figure JSON has (a plain list, or plotly's base64 form of an array)."""
    from tests.test_pages import plotly_array

    return len(plotly_array(trace.get("x", [])))


def test_the_lecture_view_shows_the_run_of_the_preset_it_names_its_verdict_and_then_the_takeaway(replay_runner, at):
    """A preset picked after a run changed the header and the takeaway at once but left that run on the
    charts and in the status ("Pre-LN learns at once" above a stalled Post-LN line) until Start; the
    takeaway was shown before Start; the verdict was the third line of a 50-px box and named no run;
    Stop was enabled with nothing running (issue 21: N1, N17, N4, N27)."""
    from ln_viz.i18n import t

    at.toggle(key="lecture_toggle").set_value(True).run()
    at.button_group(key="lecture_choice").set_value("post-ln-no-warmup").run()
    assert at.button(key="stop").disabled  # nothing runs
    assert t("lecture.question.live", "en") in [m.value for m in at.main.markdown]  # the question, not the answer
    assert t("lecture.takeaway.post-ln-no-warmup", "en") not in [m.value for m in at.main.markdown]
    replay_runner.hold_at = 100
    at.button(key="start").click().run()
    assert not at.button(key="stop").disabled  # while it trains
    assert t("lecture.question.live", "en") in [m.value for m in at.main.markdown]
    replay_runner.release()
    wait_for(lambda: live_handle(at).done, timeout=30)
    at.run()
    assert at.button(key="stop").disabled
    lines = [m.value for m in at.main.markdown]
    verdict = next(v for v in lines if v.startswith("**Post-LN:"))  # the status box's line, naming the run
    assert not any(t("msg.stalled", "en") in v for v in lines)  # the verdict alone: the box shows two lines
    assert "stalled" in verdict and "final loss 2.96" in verdict, verdict
    assert t("lecture.takeaway.post-ln-no-warmup", "en") in lines  # revealed once the run has ended
    at.button_group(key="lecture_choice").set_value("pre-ln-no-warmup").run()  # another preset after the run
    lines = [m.value for m in at.main.markdown]
    assert "Pre-LN · 6 layers · Adam lr 3e-3 · no warm-up" in lines
    loss = _figure(at, "loss_chart")
    subtitle = loss["layout"]["title"]["subtitle"]["text"]
    assert subtitle.startswith("Pre-LN"), subtitle  # the charts are the new preset's empty ones
    assert not any(_points(tr) for tr in loss["data"] if tr["name"] in ("training loss", "held-out loss"))
    assert t("ui.not_started", "en") in " ".join(lines) and t("lecture.question.live", "en") in lines
    at.button_group(key="lecture_choice").set_value("post-ln-no-warmup").run()  # back: its run again
    assert t("lecture.takeaway.post-ln-no-warmup", "en") in [m.value for m in at.main.markdown]
    loss = _figure(at, "loss_chart")
    assert loss["layout"]["title"]["subtitle"]["text"].startswith("Post-LN")
    assert _points(next(tr for tr in loss["data"] if tr["name"] == "training loss")) == 300  # the run, drawn


@pytest.mark.parametrize(
    ("demo", "status", "en", "ko"),
    [
        ("pre-ln-no-warmup", "completed", "Pre-LN: learned, final loss 1.96 (unigram loss 2.96)", "Pre-LN: 배움, 최종"),
        (
            "post-ln-no-warmup",
            "stalled",
            "Post-LN: stalled, final loss 2.96, 0.2 % above the unigram loss 2.96",
            "Post-LN: 정체, 최종",
        ),
        ("post-ln-no-warmup", "stopped", "Post-LN: stopped at step 300", "Post-LN: 300 스텝에서 정지됨"),
        ("no-norm", "diverged", "No norm: diverged at step 300", "No norm: 300 스텝에서 발산"),
        # issue 21 N10: its final loss 5.6 % below the unigram loss was "stalled" by a 20-step window
        ("no-norm", "completed", "No norm: learned, final loss 2.79 (unigram loss 2.96)", "No norm: 배움"),
    ],
)
def test_the_verdict_names_the_run_and_says_what_the_app_measured(demo, status, en, ko):
    """The lecture view's end line (issue 21, N4), from a shipped demo run's own numbers; a diverged run
    without a recorded step is said at its last step."""
    from ln_viz.runner import RunView
    from ln_viz.views import run_frames
    from tests.replay import demo_runs

    data = demo_runs()[demo]
    view = RunView("r", data.info.config, status, None, None, {}, None, data, 1, None)
    label = {"pre-ln-no-warmup": "Pre-LN", "post-ln-no-warmup": "Post-LN", "no-norm": "No norm"}[demo]
    assert run_frames.verdict(view, label, "en") == en
    assert run_frames.verdict(view, label, "ko").startswith(ko)


def test_compares_caption_names_every_field_the_runs_differ_in_issue_19s_too():
    """Compare's caption under the scenario said "A and B are the same configuration" for QK-norm against
    none: it read RunConfig.to_dict, which leaves issue 19's fields out at their defaults. Every scenario's
    caption names what its two runs differ in, in both languages."""
    from ln_viz.config import COMPARE_PRESETS, PRESETS
    from ln_viz.i18n import t
    from ln_viz.views.run_frames import differences

    for lang in ("en", "ko"):
        for name, (a, b, _) in COMPARE_PRESETS.items():
            text = differences(PRESETS[a].config, PRESETS[b].config, lang)
            assert text != t("compare.same", lang), (name, lang, text)
        qk = differences(PRESETS["high-lr"].config, PRESETS["high-lr-qk-norm"].config, lang)
        assert t("ui.qk_norm", lang) in qk and "LayerNorm" in qk, qk


def _idle_stepper_app() -> None:
    import streamlit as st

    from ln_viz.ui import stepper

    steps = st.session_state.setdefault("steps", list(range(0, 50, 5)))
    stepper.step_control(steps, "s", "en", done=False, ticking=False)
    if st.session_state.pop("again", False):
        st.rerun()  # a run without the browser's widget states, as a fragment's timer makes


def test_a_running_run_s_idle_step_slider_follows_a_new_run_without_streamlit_s_double_value_warning(monkeypatch):
    """CI's server log (stop 36): 'The widget with key "probe_step_idle" was created with a default value but also
    had its value set via the Session State API'. A new run shrank the idle slider's options under its old value,
    Streamlit reset it through the Session State API, and a rerun without widget states met `value=`."""
    from streamlit.elements.lib import policies

    warned = []
    monkeypatch.setattr(policies, "_shown_default_value_warning", False)
    monkeypatch.setattr(policies._LOGGER, "warning", lambda msg, *args, **kw: warned.append(msg % args))
    at = AppTest.from_function(_idle_stepper_app, default_timeout=30).run()
    assert at.select_slider(key="s_idle").value == 45 and at.select_slider(key="s_idle").disabled
    at.session_state["steps"] = [0, 5]  # a new run: two probe steps so far
    at.session_state["again"] = True
    at.run()
    assert not warned
    assert at.select_slider(key="s_idle").value == 5  # the thumb at the new run's latest step
    at.session_state["steps"] = [0, 5, 10]
    at.run()
    assert at.select_slider(key="s_idle").value == 10  # and it follows the run as it trains
    assert not warned
