"""Bad input in the app (an error sentence, no run started; or a notice for a bad link) and divergence
for every norm position (ends `diverged` at the step, charts still draw, the store keeps it)."""

import math

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from ln_viz import charts
from ln_viz.config import NORM_POSITIONS, RunConfig
from ln_viz.store import RunWriter, Store
from ln_viz.train import Trainer

APP = "../app.py"


@pytest.fixture
def at(start_app):
    return start_app(60)


# Inputs a widget lets through: Start must refuse them with one sentence and start nothing.
WIDGET_CASES = [
    ({"d_model": 65, "heads": 4}, "divisible by heads"),
    ({"warmup_steps": 500, "steps": 100}, "longer than the run"),
    ({"batch_size": 4096, "seq_len": 4096}, "of memory to train"),
]


@pytest.mark.parametrize("values,text", WIDGET_CASES, ids=["heads", "warmup", "memory"])
def test_bad_settings_are_refused_on_start(at, values, text):
    for key, value in values.items():
        at.number_input(key=key).set_value(value)
    at.run()
    at.button(key="start").click().run()
    assert len(at.error) == 1 and text in at.error[0].value
    assert "live_run_id" not in at.session_state


USER_TEXTS = [
    ("", "needs user_text"),
    ("   ", "empty"),
    ("a\x00b\x01" * 300, "binary"),
    ("too short", "needs at least"),
    ("x" * 2_000_001, "above the limit"),
]


@pytest.mark.parametrize("text,message", USER_TEXTS, ids=["none", "blank", "binary", "short", "huge"])
def test_bad_user_text_is_refused_on_start(at, text, message):
    at.selectbox(key="corpus").set_value("user").run()
    at.text_area(key="user_text").set_value(text).run()
    at.button(key="start").click().run()
    assert len(at.error) == 1 and message in at.error[0].value, [e.value for e in at.error]
    assert "live_run_id" not in at.session_state


# Values no widget can hold arrive through a link: each is ignored with a notice, the default kept.
LINK_CASES = [
    ({"depth": "0"}, "depth"),
    ({"depth": "-3"}, "depth"),
    ({"depth": "49"}, "depth"),
    ({"lr": "0"}, "lr"),
    ({"lr": "-0.1"}, "lr"),
    ({"lr": "nan"}, "lr"),
    ({"lr": "inf"}, "lr"),
    ({"lr": "11"}, "lr"),
    ({"steps": "0"}, "steps"),
    ({"norm": "middle"}, "norm"),
    ({"sched": "step"}, "sched"),
    ({"preset": "fastest"}, "preset"),
    ({"d": "65", "heads": "4"}, "d"),
    ({"warmup": "500", "steps": "100"}, "warmup"),
    ({"depth": "six"}, "depth"),
]


@pytest.mark.parametrize(
    "query,param", LINK_CASES, ids=["&".join(f"{k}={v}" for k, v in q.items()) for q, _ in LINK_CASES]
)
def test_malformed_link_parameters_are_ignored_with_a_notice(tmp_path, monkeypatch, query, param):
    monkeypatch.setenv("LN_VIZ_STORE", str(tmp_path / "runs.sqlite"))
    app = AppTest.from_file(APP, default_timeout=60)
    app.query_params.update(query)
    app.run()
    try:
        assert not app.exception
        assert any(f"'{param}=" in w.value for w in app.warning), [w.value for w in app.warning]
        assert app.slider(key="depth").value == 6 and app.select_slider(key="lr").value == 3e-3
    finally:
        st.cache_resource.clear()


@pytest.mark.parametrize("pos", NORM_POSITIONS)
def test_divergence_for_every_norm_position_is_kept_drawn_and_stored(tmp_path, pos):
    cfg = RunConfig(norm_position=pos, optimizer="sgd", lr=10.0, depth=2, d_model=32, heads=2, batch_size=8,
                    seq_len=32, steps=60, probe_every=1, eval_every=0)  # fmt: skip
    trainer = Trainer(cfg)
    with Store(tmp_path / "runs.sqlite") as store:
        writer = RunWriter(store)
        run_id = writer.begin(trainer.info)
        from ln_viz.snapshot import RunData

        data = RunData(trainer.info)
        for snap in trainer:
            writer.add(snap)
            data.append(snap)
        writer.finish(data.status, data.message)
        assert data.status == "diverged" and data.diverged_at == data.steps_done < 60
        assert all(math.isfinite(x) for x in data.scalars["loss"][:-1])
        for build in (charts.loss_chart, charts.grad_heatmap, charts.act_dist, charts.layer_profile,
                      charts.update_ratio_chart):  # fmt: skip
            fig = build(data)
            assert len(fig.data) > 0
            fig.to_json()
        kept = store.open_run(run_id)
        assert store.summary(run_id).status == "diverged"
        assert kept.scalars["step"] == data.scalars["step"]
