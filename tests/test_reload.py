"""A reload keeps the tab's runs (issue 32, UX round 4 M7: "/ -> Start -> F5: the page shows 'Pick a preset...'
with empty charts, Runs lists the run as stopped 49/300; after a reload Compare no longer shows the pair, or its
pack and video buttons"). A reload is a new session: AppTest's session released (its tab gone), then a new
AppTest opened on the address the old one had. Replayed runs (tests/replay.py)."""

from __future__ import annotations

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from ln_viz.ui import reattach
from tests.test_app import wait_for


@pytest.fixture
def at(start_app):
    app = start_app(60)
    assert not app.exception
    return app


def _reload(at: AppTest, page: str | None = None) -> AppTest:
    """The tab reloaded: its session released (as a closed websocket releases it), a new one on its address."""
    params = {k: v for k, v in at.query_params.items()}
    st.cache_resource.clear()  # the session's resources released: its SessionRuns' on_release
    new = AppTest.from_file(str(at._script_path), default_timeout=60)
    if page is not None:
        new.switch_page(page)
    for key, value in params.items():
        new.query_params[key] = value
    return new.run()


def _status(at: AppTest) -> str:
    return at.markdown[0].value


def test_a_reload_during_a_live_run_keeps_the_run_training_on_screen(replay_runner, at):
    replay_runner.hold_at = 120
    at.button(key="start").click().run()
    wait_for(lambda: replay_runner.handles() and replay_runner.handles()[0].view().steps_done == 120, timeout=30)
    at.run()
    assert "session" in at.query_params
    (handle,) = replay_runner.handles()
    again = _reload(at)
    assert not again.exception
    assert "Step 120/300" in _status(again) and "running" in _status(again), _status(again)
    assert not handle.done and again.button(key="stop").disabled is False  # still training, and Stop stops it
    again.button(key="stop").click().run()
    wait_for(lambda: handle.done, timeout=10)
    assert handle.view().status == "stopped"


def test_without_a_reload_a_closed_tab_s_run_stops_after_the_grace(replay_runner, at, monkeypatch):
    monkeypatch.setattr(reattach, "GRACE_S", 0.2)
    replay_runner.hold_at = 50
    at.button(key="start").click().run()
    (handle,) = replay_runner.handles()
    st.cache_resource.clear()  # the tab closed; nobody comes back
    wait_for(lambda: handle.done, timeout=10)
    assert handle.view().status == "stopped"


def test_a_link_to_a_tab_still_open_takes_nothing(replay_runner):
    """A lecturer's address copied into the class's chat names runs of a tab that is still open: nobody else can
    take them over (AppTest's sessions share one session cache, so this is the module's own check)."""
    from ln_viz.config import PRESETS
    from ln_viz.server.runs import SessionRuns

    replay_runner.hold_at = 50
    lecturer, student = SessionRuns(replay_runner), SessionRuns(replay_runner)
    run_id = lecturer.start("live", PRESETS["pre-ln-no-warmup"].config)
    assert not reattach.adopt(student, lecturer.owner, wait_s=0.1) and student.runs == {}
    reattach.release(lecturer)  # the lecturer's tab reloads: now its own new session takes them
    assert reattach.adopt(student, lecturer.owner) and student.runs == {"live": run_id}
    assert not reattach.adopt(SessionRuns(replay_runner), lecturer.owner)  # once
    assert not replay_runner.get(run_id).done


def test_a_reload_after_compare_s_pair_ended_shows_the_pair_its_pack_and_video(replay_runner, at):
    at.switch_page("pages/compare.py").run()
    at.button(key="compare_start").click().run()
    wait_for(lambda: len(replay_runner.handles()) == 2 and all(h.done for h in replay_runner.handles()), timeout=30)
    at.run()
    keys = {"compare_dl_pack", "compare_video_make_gif", "compare_video_make_mp4"}
    before = {b.key for b in at.get("download_button")} | {b.key for b in at.button}
    again = _reload(at, "pages/compare.py")
    assert not again.exception
    after = {b.key for b in again.get("download_button")} | {b.key for b in again.button}
    assert keys & before and keys & before <= after, (before, after)
    assert {c.key for c in again.get("plotly_chart")} >= {"compare_loss", "compare_profile"}
    assert any("completed" in m.value for m in again.markdown), [m.value for m in again.markdown][:3]
