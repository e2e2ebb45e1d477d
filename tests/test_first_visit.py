"""A newcomer's first Start on a fresh server leads to the lesson (issue 32, UX round 4 M5: the default Pre-LN run
alone showed a loss going down, with no contrast and no takeaway): Live's first screen has the way to Compare
beside Start; one click opens Compare's lecture view on Post-LN vs Pre-LN with both runs training, which ends on
the takeaway. AppTest with replayed runs (tests/replay.py)."""

from __future__ import annotations

import pytest

from tests.test_app import wait_for


@pytest.fixture
def at(start_app):
    app = start_app(60)
    assert not app.exception
    return app


def test_one_click_from_live_s_first_screen_trains_post_and_pre_ln_in_compare_s_lecture_view(replay_runner, at):
    lead = at.button(key="lead_compare")
    assert "Post-LN vs Pre-LN" in lead.label
    replay_runner.hold_at = 100
    lead.click().run()
    assert not at.exception, at.exception
    assert at.session_state["_lecture_view"] and at.query_params.get("present") in ("1", ["1"])
    started = sorted(c.norm_position for c in replay_runner.started)
    assert started == ["post", "pre"], started  # both sides, from one click, no Start both needed
    assert at.button(key="compare_stop").disabled is False  # they train
    assert any("which one learns" in m.value for m in at.markdown)  # the question stands while they train
    replay_runner.release()
    wait_for(lambda: all(h.done for h in replay_runner.handles()), timeout=30)
    at.run()
    takeaway = [m.value for m in at.markdown if "Post-LN stalls" in m.value]
    assert takeaway, [m.value for m in at.markdown]
    assert at.button(key="compare_start")  # and the page is Compare's
    assert len(replay_runner.started) == 2  # drawn again: nothing started twice


def test_the_way_to_the_lesson_goes_once_this_tab_has_trained_a_pair(replay_runner, at):
    at.button(key="lead_compare").click().run()
    at.switch_page("pages/live.py").run()
    assert not at.exception
    assert not [b for b in at.button if b.key == "lead_compare"]  # it has seen the lesson
    assert len(replay_runner.started) == 2


def test_the_way_to_the_lesson_is_in_korean(at):
    at.session_state["lang"] = "ko"
    at.run()
    assert at.button(key="lead_compare").label.startswith("핵심: Post-LN 대 Pre-LN")
