"""Live's run in one sentence for a screen reader (issue 32, UX round 4 M11: "Live's normal view has no text
result at all"): a polite live region, visually hidden, that says the loss against the unigram loss at each
quarter of the run and its verdict once it ends (diverged at step N), in English and Korean; its watch page
(`?watch=N`) says the same. AppTest on a replayed run (tests/replay.py), and the sentence of a diverged run
from its view."""

from __future__ import annotations

import dataclasses
import os
import re
import time

import pytest
from streamlit.testing.v1 import AppTest

from ln_viz.runner import RunView
from ln_viz.store import Store
from ln_viz.ui import live, training
from tests.test_app import live_handle, wait_for


@pytest.fixture
def at(start_app):
    app = start_app(60)
    assert not app.exception
    return app


def _region(at) -> str:
    """The text of the page's live region, as a screen reader gets it."""
    (html,) = [e for e in at.get("html") if 'role="status"' in e.proto.body]
    assert 'aria-live="polite"' in html.proto.body
    return re.sub(r"<[^>]+>", "", html.proto.body)


def test_the_live_region_says_the_loss_at_each_quarter_then_the_verdict(replay_runner, at):
    assert _region(at) == ""  # before Start: nothing to say
    replay_runner.hold_at = 160
    at.button(key="start").click().run()
    wait_for(lambda: live_handle(at).view().steps_done == 160, timeout=30)
    at.run()
    data = live_handle(at).view().data
    said = _region(at)
    loss = live.loss_at(data, 150)
    # at step 160 the sentence still holds the second quarter's figures: it changes 4 times, not every second
    assert said == (
        f"Pre-LN, 6 layers, step 150 of 300: loss {loss:.2f}, below the unigram loss "
        f"{data.info.unigram_entropy:.2f}: it is learning."
    ), said
    watcher = _watcher_of_the_run()  # its watch page says the same (issue 32: it said nothing)
    assert _region(watcher) == said, _region(watcher)
    replay_runner.release()
    wait_for(lambda: live_handle(at).done, timeout=30)
    at.run()
    final = live_handle(at).view().data.final_loss()
    assert _region(at).startswith(f"Pre-LN, 6 layers: learned, final loss {final:.2f}"), _region(at)
    time.sleep(0.6)  # the watchers' shared view is taken at most every half second (ln_viz.ui.watch)
    watcher.run()
    assert _region(watcher) == _region(at), _region(watcher)
    at.session_state["lang"] = "ko"
    at.run()
    assert _region(at).startswith(f"Pre-LN, 6층: 배움, 최종 손실 {final:.2f}"), _region(at)


def _watcher_of_the_run() -> AppTest:
    """A second session opening the watch link of the one run in the store (`?watch=N`)."""
    with Store(os.environ["LN_VIZ_STORE"]) as store:
        (run,) = store.list_runs()
    app = AppTest.from_file("../app.py", default_timeout=60)
    app.query_params.update({"watch": str(run.id), "lang": "en"})
    app.run()
    assert not app.exception, app.exception
    return app


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_diverged_run_is_said_to_have_diverged_at_its_step(post_run, lang):
    data = dataclasses.replace(post_run, status="diverged", diverged_at=57)
    view = RunView("x", data.info.config, "diverged", None, None, {}, None, data, 1, None)
    said = live.summary(view, data, lang)
    assert said == {"en": "Post-LN, 6 layers: diverged at step 57", "ko": "Post-LN, 6층: 57 스텝에서 발산"}[lang]


def test_the_summary_is_in_the_lecture_view_too(replay_runner, at):
    at.session_state["_lecture_view"] = True
    at.run()
    at.button(key="start").click().run()
    wait_for(lambda: live_handle(at).done, timeout=30)
    at.run()
    assert "learned, final loss" in _region(at)
    assert training.get_runner() is replay_runner
