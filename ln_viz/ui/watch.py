"""Watching a run: `?watch=<run id>` on Live opens the stored run of that number read-only, in any browser.

A run this server trains now is read from its Runner (the watcher trains nothing: a hundred watchers cost
one run's training), through one view per run shared by every watcher for half a second, and its figures
are built once per view for all of them (ln_viz.ui.live.figures, `shared`). Any other run opens from the
store, through the server's shared run cache (ln_viz.ui.storage.stored_run), as on the Runs page. The page
has the same charts as Live (the lecture view's with `&present=1`), its own step control, and no Start, Stop
or settings form; an id that is no run says so in one sentence.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import streamlit as st

from ln_viz import charts, lessons
from ln_viz.i18n import LocalizedError, t
from ln_viz.runner import RunHandle
from ln_viz.store import LIVE_STATUSES, Store, StoreError
from ln_viz.text import shown
from ln_viz.ui import keys, layout, lecture_view, live, loss_view, nav, run_view, training, watch_share
from ln_viz.ui.safe import md
from ln_viz.ui.storage import get_recorder, get_store, stored_run
from ln_viz.views import run_frames as frames
from ln_viz.views.run_frames import RunFrame, Watched
from ln_viz.watchlink import (
    WATCH_MAX_WATCHERS,
    WATCH_PARAM,
    Watchers,
    WatchLinkError,
    parse_watch_id,
    watch_period,
)

VIEW_TTL_S = 0.5  # a running run's view, shared by its watchers: at most two new ones a second per run
STEP_KEY = "probe_step"  # Live's: the lecture view's CSS sizes it; a watcher's tab draws no Live


def requested() -> bool:
    """Whether this visit opened a watch link (`?watch=...`)."""
    return WATCH_PARAM in st.query_params


class _SharedViews:
    """The latest RunView of each watched run, taken at most every VIEW_TTL_S for all its watchers."""

    def __init__(self) -> None:
        self._latest: dict[str, tuple[float, Any]] = {}
        self._lock = threading.Lock()

    def get(self, handle: RunHandle):
        now = time.monotonic()
        with self._lock:
            hit = self._latest.get(handle.run_id)
            if hit is not None and now - hit[0] < VIEW_TTL_S:
                return hit[1]
        view = handle.view()
        with self._lock:
            self._latest = {k: v for k, v in self._latest.items() if now - v[0] < 60}  # runs no one watches go
            self._latest[handle.run_id] = (now, view)
        return view


@st.cache_resource(show_spinner=False)
def _shared_views() -> _SharedViews:
    return _SharedViews()


@st.cache_resource(show_spinner=False)
def watchers() -> Watchers:
    """The server's watching tabs (one object per server)."""
    return Watchers()


def _session() -> str:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else "-"


def _period() -> int:
    """This tab's refresh period (s), from how many tabs watch on this server now (watchlink.watch_period)."""
    return watch_period(watchers().seen(_session(), time.monotonic()))


def resolve(raw: str | list[str] | None, lang: str) -> Watched:
    """The run a watch link names, as the page draws it now; LocalizedError (one sentence) for a value that
    is no run number, a run this server's store does not have, or a row no chart can draw."""
    store_id = parse_watch_id(raw)
    store = get_store()
    if store is None:
        raise WatchLinkError("watch.no_store")
    try:
        summary = store.summary(store_id)
    except StoreError as e:
        if e.key != "err.run_not_found":
            raise  # a damaged or unreadable store says so itself, in one sentence: not "there is no run 12"
        raise WatchLinkError("watch.unknown", id=store_id) from None
    damage = summary.damage()
    if damage is not None:
        raise damage
    recorder = get_recorder()
    run_id = recorder.run_of(store_id) if recorder is not None else None
    runner = training.get_runner()
    handle = runner.get(run_id) if run_id is not None else None
    if handle is not None:
        return _from_runner(store_id, summary.label, handle, lang, runner.max_concurrent)
    return _from_store(store, summary, lang)


def _from_runner(store_id: int, label: str | None, handle: RunHandle, lang: str, cap: int) -> Watched:
    view = _shared_views().get(handle)
    data = live.complete_data(handle, view) or live.preview_data(view.config)
    key = frames.finished_key(handle, view, data) or f"{handle.run_id}@{view.version}/{data.steps_done}"
    return Watched(store_id, label, view.config, view.status, data, key, frames.status_line(view, lang, cap),
                   view.message, dict(view.message_params), view)  # fmt: skip


def _from_store(store: Store, summary, lang: str) -> Watched:
    dead = not store.readonly and summary.status in LIVE_STATUSES and summary.id in store.dead_writers()
    if dead:  # its writer died (a SIGKILLed CLI run): say interrupted, not running for ever (hostile L3)
        store.recover()
        summary = store.summary(summary.id)
    live_row = summary.status in LIVE_STATUSES  # trained by another process: its row changes as it goes
    data = stored_run(store, summary.id, summary.updated if live_row else None)
    key = f"{store.path}#{store.generation}:{summary.id}@{summary.updated}/{data.probe_stride}"
    words = {"status": t(f"status.{summary.status}", lang), "done": summary.steps_done, "steps": summary.steps}
    # a run ln_viz.attach records in another process knows its planned steps only when its loop ends
    status = t("watch.stored_status" if summary.steps else "watch.stored_status_open", lang, **words)
    return Watched(summary.id, summary.label, data.info.config, summary.status, data, key, status,
                   frames.sayable(summary.message, lang))  # fmt: skip


def ignored_notice(lang: str) -> list[str]:
    """One sentence naming the link's parameters that the watch page ignores (`?watch=2&norm=pre&steps=0`):
    it shows the run as it was started (hostile round 4 L2). Empty when there are none."""
    from ln_viz.urlstate import ignored_by_watch

    names = ignored_by_watch({k: st.query_params.get_all(k) for k in st.query_params})
    if not names:
        return []
    return [t("watch.ignored", lang, names=", ".join(shown(n, 40) for n in names))]


def page(lang: str, lecture: bool) -> None:
    """The watch page: the header, then the run's charts, redrawn every second while it trains."""
    raw = st.query_params.get_all(WATCH_PARAM)
    try:
        watched = resolve(raw, lang)
    except LocalizedError as e:
        if e.key == "err.run_damaged":  # a visitor's page: which run, not the server's path or exception (L1)
            e = WatchLinkError("watch.damaged", id=parse_watch_id(raw))
        if not lecture:
            layout.css(layout.PAGE_CSS)
            st.title(t("ui.app_title", lang))
        st.error(md(e.message(lang)), icon=":material/visibility_off:")  # it quotes the link
        return
    share = watch_share.popover_for(watched.store_id, lang, lecture)
    if lecture:
        lecture_view.page_header(md(frames.heading(watched, lang)), lang, nav.COMPARE, share)
    else:
        layout.css(layout.PAGE_CSS)
        st.title(t("ui.app_title", lang))
        row = st.container(horizontal=True, vertical_alignment="center", key="watch_top")
        with row.container(key="watch_heading", width="stretch"):
            st.markdown(f"**{md(frames.heading(watched, lang))}**")
            st.caption(t("watch.read_only", lang))
        share(row)
        loss_view.controls(lang, row)
    _charts(raw, watched, lang, lecture)


class WatchedRun:
    """The run a watch link names, read anew on every refresh (run_view's source)."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self.watched: Watched | None = None  # as the last refresh read it

    def frame(self, lang: str, lecture: bool) -> RunFrame:
        _check_last_refresh()
        try:
            watched = resolve(self.raw, lang)
        except LocalizedError as e:  # deleted while watched
            return RunFrame(error=e.message(lang))
        self.watched = watched
        status = f"**{watched.status_text}**"
        if watched.status == "queued":
            return RunFrame(lines=[status], queued=True, running=True)
        lines = [status, *frames.message_lines([watched], lang)]
        card = watched.data.info.model_card  # a run of the user's own model (ln_viz.attach)
        if watched.done:
            name = (
                charts.norm_label(watched.config.norm_position, lang)
                if card is None
                else frames.attached_label(card, lang)
            )
            lines = frames.verdict_lines([watched], [name], lang)

        def notes() -> None:
            if watched.view is not None:
                live.run_message(watched.view, lang)
            elif watched.message:
                st.caption(t(watched.message, lang))
            if card is not None:  # what its charts draw and leave out
                st.caption(t("attached.drawn", lang))

        preset = frames.preset_of(watched.config) if card is None else None  # the presenter's
        lesson = lessons.lesson_chart(preset, [watched.config])
        return RunFrame([watched.data], [status], lines, watched.done, not watched.done, notes=notes,
                        cache_key=watched.cache_key, shared=True, lesson=lesson)  # fmt: skip


_REFRESH = keys.WATCH_REFRESH  # this tab's refreshes: whether the last is still open, and the slowdown
MAX_SLOWDOWN = 16  # s: the longest period a slow refresh sets


def _check_last_refresh() -> None:
    """A refresh that did not finish before the next began (reading and drawing a run another process writes
    fast, on a loaded server, took longer than the period: every refresh was cut short after the status line and
    no chart was ever drawn) doubles this tab's period, up to MAX_SLOWDOWN s, by a full rerun."""
    state = st.session_state.setdefault(_REFRESH, {"open": False, "slow": 1})
    if state["open"]:
        state["open"], state["slow"] = False, min(state["slow"] * 2, MAX_SLOWDOWN)
        st.rerun(scope="app")
    state["open"] = True


def _period_now() -> int:
    """This tab's refresh period: from the watchers (watchlink.watch_period), or longer after slow refreshes."""
    return max(_period(), st.session_state.get(_REFRESH, {}).get("slow", 1))


def summary(watched: Watched, lang: str) -> str:
    """The watched run in one sentence for a screen reader, as Live says its own (ln_viz.ui.live.summary): the
    run, its step and loss at each quarter of its steps while it trains, its verdict once it has ended."""
    if watched.status == "queued":
        run = charts.norm_label(watched.config.norm_position, lang)
        return f"{t('live.sr_run', lang, run=run, depth=watched.config.depth)}: {watched.status_text}"
    return live.summary(watched, watched.data, lang)


def _charts(raw: Any, first: Watched, lang: str, lecture: bool) -> None:
    if not first.done and watchers().full(_session(), time.monotonic()):  # hostile round 4 M7
        st.warning(t("watch.full", lang, n=WATCH_MAX_WATCHERS), icon=":material/group:")
        return
    period = 1 if first.done else _period_now()  # 1 s, or longer when many tabs refresh (a finished run: none)
    st.session_state.setdefault(_REFRESH, {"open": False, "slow": 1})["open"] = False  # a full run: none open

    source = WatchedRun(raw)

    def after(frame: RunFrame) -> None:
        st.session_state[_REFRESH]["open"] = False  # this refresh finished
        if source.watched is not None:  # the run in one sentence, for a screen reader (issue 32)
            live.say(summary(source.watched, lang))
        if lecture and not frame.queued:
            lecture_view.sentence(None, lang)  # the presenter's takeaway is theirs
        if not first.done:
            now = _period_now()
            if not lecture and period > 1:
                slow = st.session_state[_REFRESH]["slow"] >= period
                st.caption(t("watch.period_slow" if slow else "watch.period", lang, seconds=period))
            if now != period:  # more or fewer watchers: a full rerun sets the fragment's timer anew, at a
                time.sleep(random.uniform(0.0, now))  # random phase: every tab changing at once would refresh
                st.rerun(scope="app")  # in step, 60 in a queue every 3 s (p95 1.3 s, measured)

    run_view.draw(source, lang, lecture, STEP_KEY, None if first.done else float(period), after)
