"""Watching a run (`?watch=<run id>` on Live) with AppTest: a stored run opens read-only with Live's charts
and no Start; a link that names no run says so in one sentence (en, ko); a run in progress moves for its
watcher while the runner trains it once; its watch link and QR code are on Live, in the lecture view and on
the Runs page. The link itself (ln_viz/watchlink.py) is tested without a page."""

from __future__ import annotations

import os
import re
import time

import pytest
from streamlit.testing.v1 import AppTest

from ln_viz.i18n import t
from ln_viz.store import Store
from ln_viz.ui import training
from ln_viz.watchlink import WatchLinkError, only_this_computer, parse_watch_id, qr_png, short_text, watch_url
from tests.runs import train_tiny

APP = "../app.py"
CHARTS = {"loss_chart", "grad_heatmap", "act_dist", "layer_profile", "update_ratio", "attn_entropy"}
LECTURE_CHARTS = {"loss_chart", "grad_heatmap", "act_dist", "layer_profile"}


# --- the link --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("raw, want", [("12", 12), (" 7 ", 7), (["3", "4"], 4)])
def test_a_watch_id_is_a_run_number(raw, want) -> None:
    assert parse_watch_id(raw) == want


@pytest.mark.parametrize("raw", ["", "abc", "0", "-1", "1.5", "１２", "9" * 13, "12; DROP", None, []])
def test_anything_else_is_refused_in_one_sentence_that_quotes_it_cut_short(raw) -> None:
    with pytest.raises(WatchLinkError) as e:
        parse_watch_id(raw)
    for lang in ("en", "ko"):
        text = e.value.message(lang)
        assert text.count("\n") == 0 and len(text) < 300 and "?watch=12" in text


def test_the_watch_link_is_the_visitor_s_address_on_live_with_the_language() -> None:
    pages = ("runs", "compare")
    assert watch_url("http://10.0.0.5:8501/", 12, "ko", pages) == "http://10.0.0.5:8501/?watch=12&lang=ko"
    assert watch_url("http://10.0.0.5:8501/runs", 3, "en", pages) == "http://10.0.0.5:8501/?watch=3&lang=en"
    # a server under a base path keeps it; only a page's own path goes
    assert watch_url("https://host/lnviz/runs", 3, "en", pages) == "https://host/lnviz/?watch=3&lang=en"
    assert watch_url(None, 5, "en", pages) == "/?watch=5&lang=en"
    assert short_text("http://10.0.0.5:8501/?watch=12&lang=ko") == "10.0.0.5:8501/?watch=12&lang=ko"
    # the presenter's browser on localhost, the server on the network (--server.address 0.0.0.0): the students'
    # link names the server's network address (review: the QR code encoded localhost, which no phone opens)
    for seen in ("http://localhost:8501/", "http://127.0.0.1:8501/runs"):
        assert watch_url(seen, 4, "en", pages, "10.0.0.5") == "http://10.0.0.5:8501/?watch=4&lang=en"
    assert watch_url("http://10.0.0.9:8501/", 4, "en", pages, "10.0.0.5") == "http://10.0.0.9:8501/?watch=4&lang=en"
    assert watch_url("http://localhost:8501/", 4, "en", pages, None) == "http://localhost:8501/?watch=4&lang=en"


def test_the_network_host_follows_where_the_server_listens(monkeypatch) -> None:
    from streamlit import config, net_util

    from ln_viz.ui.watch_share import network_host

    options = {"server.address": "127.0.0.1", "browser.serverAddress": "localhost"}
    monkeypatch.setattr(config, "get_option", lambda name: options.get(name))
    monkeypatch.setattr(net_util, "get_internal_ip", lambda: "192.168.1.20")
    assert network_host() is None  # bound to loopback (the default): only this machine, localhost is right
    options["server.address"] = "0.0.0.0"
    assert network_host() == "192.168.1.20"  # the README's classroom command
    options["browser.serverAddress"] = "lnviz.school.example"
    assert network_host() == "lnviz.school.example"  # the operator's name for it
    options.update({"server.address": "10.0.0.5", "browser.serverAddress": ""})
    assert network_host() == "10.0.0.5"


def test_a_link_only_this_computer_can_open_says_so_and_gets_no_qr_code() -> None:
    """Issue 32, UX H3: with the README's command the server listens on 127.0.0.1, so its watch link names
    127.0.0.1 and a QR code of it opened each student's own phone, under "anyone on this network can watch"."""
    for url in ("http://127.0.0.1:8501/?watch=9&lang=en", "http://localhost:8501/?watch=9", "http://[::1]:8501/"):
        assert only_this_computer(url)
    for url in ("http://10.0.0.5:8501/?watch=9&lang=en", "https://lnviz.school.example/?watch=9", "/?watch=9"):
        assert not only_this_computer(url)
    local = t("watch.share_local", "en", id=9)
    assert local.startswith("Only this computer can open this link") and "--server.address 0.0.0.0" in local
    assert "Serving a classroom" in local and "Serving a classroom" in t("watch.share_local", "ko", id=9)
    assert t("watch.share_local", "ko", id=9).startswith("이 링크는 이 컴퓨터에서만 열 수 있습니다")


def test_the_qr_code_is_a_png_whose_size_follows_its_scale() -> None:
    small, large = qr_png("http://10.0.0.5:8501/?watch=12&lang=ko", 4), qr_png("http://x/?watch=1", 12)
    assert small.startswith(b"\x89PNG\r\n\x1a\n") and large.startswith(b"\x89PNG\r\n\x1a\n")
    width = int.from_bytes(small[16:20], "big")  # the IHDR chunk: a 25-module code + 2 x 4 quiet modules
    assert width % 4 == 0 and width >= 4 * (21 + 8)


# --- the page --------------------------------------------------------------------------------------------
@pytest.fixture
def stored_id(tmp_path, monkeypatch) -> int:
    """A store holding one finished tiny run, labelled "tiny pre"; its id."""
    path = tmp_path / "runs.sqlite"
    monkeypatch.setenv("LN_VIZ_STORE", str(path))
    with Store(path) as store:
        return store.add_run(train_tiny(), label="tiny pre", source="train")


def watcher(watch: str, lang: str = "en", present: bool = False) -> AppTest:
    """A fresh browser session opening the watch link."""
    app = AppTest.from_file(APP, default_timeout=60)
    app.query_params.update({"watch": watch, "lang": lang} | ({"present": "1"} if present else {}))
    app.run()
    assert not app.exception, app.exception
    return app


def said(app: AppTest) -> str:
    """The page's polite live region, as a screen reader gets it (Live's: tests/test_live_summary.py)."""
    (html,) = [e for e in app.get("html") if 'role="status"' in e.proto.body]
    assert 'aria-live="polite"' in html.proto.body
    return re.sub(r"<[^>]+>", "", html.proto.body)


def chart_keys(app: AppTest) -> set[str]:
    return {c.key for c in app.get("plotly_chart")}


def buttons(app: AppTest) -> set[str]:
    return {b.key for b in app.button}


@pytest.mark.usefixtures("start_app")  # its teardown releases the cached resources
def test_a_watcher_of_a_stored_run_sees_its_charts_and_no_start(stored_id: int) -> None:
    app = watcher(str(stored_id))
    assert CHARTS <= chart_keys(app)
    assert not {"start", "stop"} & buttons(app) and not app.sidebar.slider and not app.sidebar.selectbox
    header = app.markdown[0].value if app.markdown else ""
    texts = " ".join(m.value for m in app.markdown)
    assert f"Watching run {stored_id}" in texts and "tiny pre" in texts and "Pre-LN" in texts, header
    assert "Step 30/30" in texts and "completed" in texts
    steps = [int(o) for o in app.select_slider(key="probe_step").options]
    assert steps == [1, 5, 10, 15, 20, 25, 30]  # its own step control, enabled: the run has ended
    app.select_slider(key="probe_step").set_value(10).run()
    assert not app.exception and app.select_slider(key="probe_step").value == 10
    assert not app.warning  # `watch` is a parameter of the app: no "ignored" notice
    # issue 32: a screen reader hears the run's result in one sentence, as on Live
    final, depth = train_tiny().final_loss(), train_tiny().info.config.depth
    assert said(app).startswith(f"Pre-LN, {depth} layers: ") and f"final loss {final:.2f}" in said(app), said(app)


@pytest.mark.usefixtures("start_app")
def test_the_language_switch_and_the_lecture_toggle_keep_watching(stored_id: int) -> None:
    app = watcher(str(stored_id))
    app.toggle(key="lecture_toggle").set_value(True).run()
    assert not app.exception and app.query_params["watch"] == str(stored_id) and app.query_params["present"] == "1"
    assert LECTURE_CHARTS <= chart_keys(app) and not {"start", "stop"} & buttons(app)
    app.button(key="lecture_lang").click().run()  # the lecture view's own language button
    assert not app.exception and app.query_params["watch"] == str(stored_id)
    assert f"실행 {stored_id}" in " ".join(m.value for m in app.markdown) and LECTURE_CHARTS <= chart_keys(app)
    app.button(key="lecture_exit").click().run()
    assert not app.exception and app.query_params["watch"] == str(stored_id) and "present" not in app.query_params
    assert CHARTS <= chart_keys(app) and "보는 중" in " ".join(m.value for m in app.markdown)


@pytest.mark.usefixtures("start_app")
def test_a_watcher_in_the_lecture_view_and_in_korean(stored_id: int) -> None:
    app = watcher(str(stored_id), "ko", present=True)
    assert LECTURE_CHARTS <= chart_keys(app) and not {"start", "stop"} & buttons(app)
    texts = " ".join(m.value for m in app.markdown)
    assert f"실행 {stored_id}" in texts and "보는 중" in texts
    final, depth = train_tiny().final_loss(), train_tiny().info.config.depth
    assert said(app).startswith(f"Pre-LN, {depth}층: ") and f"최종 손실 {final:.2f}" in said(app), said(app)


@pytest.mark.usefixtures("start_app")
@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("raw, key", [("abc", "watch.bad_id"), ("999", "watch.unknown")])
def test_a_watch_link_that_names_no_run_says_so_in_one_sentence(stored_id: int, lang, raw, key) -> None:
    app = watcher(raw, lang)
    assert len(app.error) == 1 and not chart_keys(app) and not {"start", "stop"} & buttons(app)
    params = {"value": raw} if key == "watch.bad_id" else {"id": int(raw)}
    assert app.error[0].value.replace("\\", "") == t(key, lang, **params).replace("\\", "")


def wait_for(predicate, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _store_ids() -> list[int]:
    with Store(os.environ["LN_VIZ_STORE"]) as store:
        return [r.id for r in store.list_runs()]


def _held_run(replay_runner, start_app, at: int) -> tuple:
    """A lecturer's Live run, replayed and held at step `at`: (its handle, its stored run id)."""
    replay_runner.hold_at = at
    lecturer = start_app(60)
    lecturer.button(key="start").click().run()
    handle = training.get_runner().get(lecturer.session_state["live_run_id"])
    wait_for(lambda: handle.view().steps_done == at)
    (run_id,) = _store_ids()
    return handle, run_id


@pytest.mark.slow  # a replayed run followed for seconds
def test_a_watcher_follows_a_run_in_progress_and_nothing_is_trained_for_it(replay_runner, start_app) -> None:
    handle, run_id = _held_run(replay_runner, start_app, 60)
    app = watcher(str(run_id))
    texts = " ".join(m.value for m in app.markdown)
    assert "Step 60/300" in texts and "running" in texts and CHARTS <= chart_keys(app)
    assert not {"start", "stop"} & buttons(app)
    replay_runner.release()
    wait_for(lambda: handle.done)
    time.sleep(0.6)  # the watchers' shared view is taken at most every half second
    app.run()
    texts = " ".join(m.value for m in app.markdown)
    assert "Step 300/300" in texts and "completed" in texts
    assert len(replay_runner.started) == 1  # the lecturer's Start; the watcher trained nothing


@pytest.mark.slow  # a replayed run held in progress
def test_a_tab_past_the_watchers_budget_is_told_so_in_one_sentence_and_draws_nothing(replay_runner, start_app) -> None:
    from ln_viz.ui import watch
    from ln_viz.watchlink import WATCH_MAX_WATCHERS

    handle, run_id = _held_run(replay_runner, start_app, 20)
    assert CHARTS <= chart_keys(watcher(str(run_id)))  # a tab under the cap: served
    watch.watchers.clear()  # AppTest's sessions share one id: the tab above would count as watching
    tabs = watch.watchers()
    for i in range(WATCH_MAX_WATCHERS):
        tabs.seen(f"other{i}", time.monotonic())
    n = WATCH_MAX_WATCHERS
    for lang, words in (("en", f"already keeps {n} watching tabs"), ("ko", f"{n}개의 탭")):
        app = watcher(str(run_id), lang)
        (warning,) = app.warning
        assert words in warning.value and not chart_keys(app)
    replay_runner.release()
    wait_for(lambda: handle.done)
    time.sleep(0.6)  # the watchers' shared view is taken at most every half second
    assert CHARTS <= chart_keys(watcher(str(run_id)))  # an ended run refreshes no more: served to anyone


def _shares(app: AppTest) -> list:
    """The "Watch link" popovers on the page."""
    labels = (t("watch.share", "en"), t("watch.share", "ko"))
    return [p for p in app.get("popover") if p.proto.popover.label in labels]


def _inside(block, kind: str) -> list:
    """The elements of type `kind` anywhere inside `block`."""
    found = [block] if getattr(block, "type", None) == kind else []
    for child in getattr(block, "children", {}).values():
        found += _inside(child, kind)
    return found


@pytest.mark.parametrize("present", [False, True])
def test_live_shows_the_current_run_s_watch_link_and_qr_code(replay_runner, start_app, present) -> None:
    replay_runner.hold_at = 40
    app = start_app(60)
    if present:
        app.query_params["present"] = "1"
        app.run()
    assert not _shares(app)  # no run yet: no link
    app.button(key="start").click().run()
    wait_for(lambda: bool(_store_ids()))
    app.run()
    (run_id,) = _store_ids()
    (pop,) = _shares(app)
    assert [c.value for c in _inside(pop, "code")] == [f"/?watch={run_id}&lang=en"]  # AppTest has no address
    (image,) = _inside(pop, "image")  # the QR code, as PNG data in the page
    assert image.proto.imgs[0].url.endswith(".png") and not app.exception
    replay_runner.release()


@pytest.mark.usefixtures("start_app")
def test_a_watcher_can_pass_the_link_on_and_the_runs_page_offers_it(stored_id: int) -> None:
    app = watcher(str(stored_id), "ko")
    (pop,) = _shares(app)
    assert [c.value for c in _inside(pop, "code")] == [f"/?watch={stored_id}&lang=ko"]
    runs = AppTest.from_file(APP, default_timeout=60)
    runs.switch_page("pages/runs.py").run()
    table = next(d for d in runs.dataframe if d.key and d.key.startswith("runs_table_"))
    runs.session_state[table.key] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    runs.run()
    (pop,) = _shares(runs)
    assert [c.value for c in _inside(pop, "code")] == [f"/?watch={stored_id}&lang=en"]


def test_many_watchers_share_the_server_s_refreshes():
    """60 watchers refreshing every second left each page moving every 7 s and the health check at 3.5 s
    (load_test.py --watchers 60 on 2 cores): past the budget the period grows, and a closed tab stops counting."""
    from ln_viz.watchlink import WATCH_BUDGET_PER_S, WATCHER_TTL_S, Watchers, watch_period

    assert [watch_period(n) for n in (1, WATCH_BUDGET_PER_S, WATCH_BUDGET_PER_S + 1, 60, 100, 240, 10_000)] == [
        1,
        1,
        2,
        3,
        5,
        6,  # hostile round 4 M7: 240 tabs at 5 s made 48 refreshes a second; past 120 a tab is refused
        6,
    ]
    tabs = Watchers()
    counts = [tabs.seen(f"tab{i}", now=100.0 + i * 0.01) for i in range(60)]
    assert counts[-1] == 60 and watch_period(counts[-1]) * WATCH_BUDGET_PER_S >= 60  # <= the budget a second
    assert tabs.seen("tab0", now=100.5) == 60  # the same tab again is still one
    tabs.leave("tab1")
    assert tabs.seen("tab0", now=101.0) == 59
    assert tabs.seen("tab0", now=101.0 + WATCHER_TTL_S + 1) == 1  # the others closed their tabs long ago


def test_a_tab_past_the_watchers_the_budget_serves_is_refused_and_a_watching_one_is_not():
    """Hostile round 4 M7: nothing capped the watchers; 240 slowed every tab and another visitor's Start (30 s)."""
    from ln_viz.watchlink import WATCH_BUDGET_PER_S, WATCH_MAX_PERIOD_S, WATCH_MAX_WATCHERS, WATCHER_TTL_S, Watchers

    assert WATCH_MAX_WATCHERS == WATCH_BUDGET_PER_S * WATCH_MAX_PERIOD_S  # the budget a second, at the longest period
    tabs = Watchers()
    for i in range(WATCH_MAX_WATCHERS):
        assert not tabs.full(f"tab{i}", now=100.0)
        tabs.seen(f"tab{i}", now=100.0)
    assert tabs.full("late", now=100.5)  # one too many
    assert not tabs.full("tab7", now=100.5)  # a tab that watches keeps watching
    tabs.leave("tab7")
    assert not tabs.full("late", now=100.5)  # a tab closed: room for one
    tabs.seen("tab7", now=100.5)
    assert not tabs.full("late", now=100.0 + WATCHER_TTL_S + 0.1)  # the others' tabs closed long ago


def test_a_watcher_s_lecture_view_shows_the_preset_s_lesson_chart():
    """Review: a watcher's lecture view drew the gradient heatmap where the presenter's, on a lesson preset,
    draws its lesson (the attention logits at lr 1e-1). The run's settings name the preset, as Live names it."""
    from ln_viz.config import PRESETS
    from ln_viz.lessons import lesson_chart
    from ln_viz.views.run_frames import preset_of

    cfg = PRESETS["very-high-lr"].config
    assert preset_of(cfg) == "very-high-lr" and lesson_chart(preset_of(cfg), [cfg]) == "attn_logit"
    assert all(preset_of(p.config) == name for name, p in PRESETS.items())  # every preset is found by its settings
    changed = cfg.replace(steps=cfg.steps + 1)
    assert preset_of(changed) is None and lesson_chart(preset_of(changed), [changed]) is None  # as Live: own settings
