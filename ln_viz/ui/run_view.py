"""The run view: one run (Live, a watch link) or a pair (Compare) drawn from wherever it comes from, with its
status line, its charts or the lecture view's one screen, the one step control, and the refresh.

A page hands `draw` a source: an object whose `frame(lang, lecture)` says what to draw now (a
ln_viz.views.run_frames.RunFrame), called again on every refresh. The sources here: `RunnerRuns` (this server's
Runner: Live's run, Compare's pair and its seeds, or the empty charts Start would fill), `StoredRuns` (runs
read from the store: Compare's stored pair) and `WatchedRun` (a watch link's run, ln_viz.ui.watch). A new kind
of run is a new source; the view does not change."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import streamlit as st

from ln_viz import charts, lessons
from ln_viz.config import RunConfig
from ln_viz.i18n import LocalizedError, t
from ln_viz.runner import RunHandle, RunView
from ln_viz.snapshot import RunData
from ln_viz.store import Store
from ln_viz.sweep.compare import takeaway
from ln_viz.ui import compare_seeds, compare_view, lecture_view, live, loss_view, stepper
from ln_viz.ui.safe import md
from ln_viz.ui.storage import stored_pair
from ln_viz.views import run_frames
from ln_viz.views.run_frames import RunFrame

REFRESH_S = 1.0  # while a run trains, its view is drawn again about once a second


class RunSource(Protocol):
    """Where a run view's run(s) come from: what to draw now, asked on every refresh."""

    def frame(self, lang: str, lecture: bool) -> RunFrame | None:
        """The frame to draw; None: nothing (the page already says why)."""


def draw(
    source: RunSource,
    lang: str,
    lecture: bool,
    step_key: str,
    refresh_s: float | None,
    after: Callable[[RunFrame], None] | None = None,
) -> None:
    """Draw `source`'s run(s) in a fragment: every `refresh_s` seconds while they train (None: nothing changes
    by itself; the step control's Play then ticks it), in the lecture view's screen or the page's charts.
    `step_key`: the step control's key (and its Play state); when the frame says nothing trains any more after
    a refresh that was ticking for it, the whole page is drawn again (the timer stops, Stop is disabled, the
    takeaway shows); `after(frame)` runs at the end of every refresh (a page's own checks)."""
    timer = stepper.timer(step_key, refresh_s)

    @st.fragment(run_every=timer)
    def view() -> None:
        frame = source.frame(lang, lecture)
        if frame is None:
            return
        if frame.error is not None:  # the run is gone: one sentence, and no timer keeps asking
            st.error(md(frame.error))
            if timer is not None:
                st.rerun(scope="app")
            return
        ticking = refresh_s is None and timer is not None
        if frame.queued and not frame.datas:  # a watched run's place in the line: its status line only
            st.markdown("  \n".join(frame.lines))
        elif lecture:
            _lecture(frame, lang, step_key, ticking)
        else:
            _page(frame, lang, ticking)
        if refresh_s is not None and not frame.running:  # it ended while this fragment ticked: a full rerun
            st.rerun(scope="app")  # stops the timer, disables Stop, reveals the takeaway
        if after is not None:
            after(frame)

    view()


def _lecture(frame: RunFrame, lang: str, step_key: str, ticking: bool) -> None:
    datas, done = frame.datas, frame.done
    steps = run_frames.common_steps(datas) if frame.pair else datas[0].probe_steps
    step = lecture_view.status_and_steps(frame.lecture_lines, steps, step_key, lang, done, ticking)
    mark = run_frames.step_mark(step, steps, done)
    if frame.pair:
        lecture_view.draw_compare(datas, frame.labels, lang, step, frame.lesson, frame.seeds, mark, frame.titles)
    else:
        figure = live.figures(datas[0], lang, done, True, frame.cache_key, loss_view.current(), frame.shared)
        lecture_view.draw_live(figure, step, frame.lesson, mark)


def _page(frame: RunFrame, lang: str, ticking: bool) -> None:
    """The page view's charts (their step controls: `probe_step`, `compare_step`, as the lecture view's)."""
    if frame.pair:
        if frame.lines:
            st.markdown("  \n".join(frame.lines))
        compare_view.draw(frame.datas, frame.labels, lang, frame.done, ticking, frame.notes, frame.seeds)
        return
    with st.container(key="live_status"):  # as tall as the info box before Start: no jump
        text = "  \n".join(frame.lines)
        if frame.info:
            st.info(text)
        else:
            st.markdown(text)
    if frame.caption is not None:
        st.caption(frame.caption)
    live.draw_charts(frame.datas[0], lang, done=frame.done, cache_key=frame.cache_key, ticking=ticking,
                     notes=frame.notes, shared=frame.shared)  # fmt: skip


class RunnerRuns:
    """Runs of this server's Runner: one run (Live) or two sides of one or more seeds each (Compare), or, before
    Start, the empty charts of `configs` (fixed axes, the unigram line, the planned learning rate).

    `handles`: each side's runs seed by seed ([] before Start); `running()`: whether a run of the page trains;
    `cap`: runs that train at once (for the queue's words); `lesson`: the preset or scenario whose lesson chart
    the lecture view shows; `where()`: Live's line under the status (where its run trains); `configs` may hold
    None: a form that cannot be read (the page says why on Start)."""

    def __init__(
        self,
        handles: Sequence[Sequence[RunHandle]],
        configs: Sequence[RunConfig | None],
        running: Callable[[], bool],
        cap: int,
        lesson: str | None = None,
        seed_configs: Sequence[Sequence[RunConfig]] | None = None,
        where: Callable[[], str] | None = None,
    ) -> None:
        self.handles, self.configs, self.running, self.cap = handles, configs, running, cap
        self.lesson, self.seed_configs, self.where = lesson, seed_configs, where
        self.was_running = running()

    def frame(self, lang: str, lecture: bool) -> RunFrame | None:
        return self._one(lang, lecture) if len(self.configs) == 1 else self._pair(lang, lecture)

    def _waiting(self, lang: str) -> str:
        idle = "ui.not_started" if len(self.configs) == 1 else "ui.not_started_pair"  # Compare's is "Start both" (L9)
        return t("ui.other_run_training" if self.was_running else idle, lang)

    def _one(self, lang: str, lecture: bool) -> RunFrame | None:
        handle = self.handles[0][0] if self.handles else None
        where = self.where() if self.where is not None and not lecture else None
        if handle is None:
            cfg = self.configs[0]
            try:
                data = live.preview_data(cfg.validate()) if cfg is not None else None
            except LocalizedError:
                data = None
            if data is None:  # the form says what is wrong when Start is pressed
                st.info(t("ui.not_started", lang))
                return None
            status = self._waiting(lang)
            lesson = lessons.lesson_chart(self.lesson, [data.info.config])
            return RunFrame([data], [status], [f"**{status}**"], info=True, running=self.running(),
                            caption=where, lesson=lesson)  # fmt: skip
        view = handle.view()
        status = f"**{run_frames.status_line(view, lang, self.cap)}**"
        if view.status == "queued":  # the empty charts it will fill, so the page does not jump when it starts
            return self._queued(view, status, lang, where)  # (UX round 4 L11)
        data = live.complete_data(handle, view) or live.preview_data(view.config)
        lines = [status, *run_frames.message_lines([view], lang)]
        if view.done:  # how it came out, in one line that names the run
            lines = run_frames.verdict_lines([view], [charts.norm_label(view.config.norm_position, lang)], lang)

        def notes() -> None:
            live.run_message(view, lang)
            live.thinning_notes([data], [handle], lang)

        return RunFrame([data], [status], lines, view.done, self.running(), caption=where,
                        cache_key=run_frames.finished_key(handle, view, data), notes=notes,
                        lesson=lessons.lesson_chart(self.lesson, [data.info.config]))  # fmt: skip

    def _queued(self, view: RunView, status: str, lang: str, where: str | None) -> RunFrame:
        """A queued run: its place in the line over the empty charts of its settings, with a note that they fill
        in once a worker is free. The figures are built once for the run (`cache_key`, `shared`) and drawn again
        from the cache on each refresh: ten queued tabs do not rebuild six charts every second."""
        data = live.preview_data(view.config)
        note = t("ui.queued_charts", lang)
        return RunFrame([data], [status], [status, note], running=True, queued=True, caption=where,
                        cache_key=f"queued/{view.run_id}", shared=True, notes=lambda: st.caption(note),
                        lesson=lessons.lesson_chart(self.lesson, [view.config]))  # fmt: skip

    def _pair(self, lang: str, lecture: bool) -> RunFrame | None:
        if not self.handles:  # before Start: the empty charts of the runs Start would begin
            try:
                datas = [live.preview_data(cfg.validate()) for cfg in self.configs]  # type: ignore[union-attr]
            except LocalizedError:
                return None  # the page's error says what is wrong
            views, groups, picks = [], [[d] for d in datas], [0, 0]
            lines = [self._waiting(lang)]
        else:  # each side's runs seed by seed, and its median seed (the only one, with one)
            views, groups, picks = compare_seeds.side_runs(self.handles)
            datas = [g[m] for g, m in zip(groups, picks)]
        shown_views = [side[m] for side, m in zip(views, picks)]
        labels = run_frames.run_labels([d.info.config for d in datas], lang)
        if len(set(labels)) < len(labels):  # the same settings twice: name the sides
            labels = [f"{t(k, lang)}: {n}" for k, n in zip(run_frames.SIDE_NAMES, labels)]
        loss_labels = labels
        if views:
            lines = run_frames.seed_status_lines(views, loss_labels, lang, self.cap)
        side_cfgs = self.seed_configs or [[c] for c in self.configs]
        if len(side_cfgs[0]) > 1 and views:
            labels = run_frames.median_labels(labels, side_cfgs, picks, lang, short=lecture)
        done = bool(views) and all(v.done for side in views for v in side)
        result = run_frames.comparison(side_cfgs, views, groups) if done else None
        sentence = takeaway(result, lang) if result is not None else None
        if not done:
            lecture_lines = [*lines, *run_frames.message_lines(shown_views, lang)]
        elif len(side_cfgs[0]) > 1:
            lecture_lines = run_frames.seed_verdict_lines(sentence, views, loss_labels, lang)
        else:
            lecture_lines = run_frames.verdict_lines(shown_views, labels, lang)

        def notes() -> None:
            if sentence is not None:
                compare_seeds.show_sentence(sentence, run_frames.report_json(result, sentence), lang)
            for view in shown_views:
                live.run_message(view, lang)
            if views:
                live.thinning_notes(datas, [side[m] for side, m in zip(self.handles, picks)], lang)

        lesson = lessons.lesson_chart(self.lesson, [d.info.config for d in datas])
        return RunFrame(datas, lines, lecture_lines, done, self.running(), labels=labels,
                        seeds=(groups, loss_labels), lesson=lesson, notes=notes)  # fmt: skip


def lecture_exports(source: RunnerRuns, lang: str) -> Callable[[Any], None]:
    """`draw(row)`: once the pair has ended, a "Pack and video" popover in the lecture view's button row with what
    the page view offers under its charts: the offline lecture pack and the video buttons (UX round 4 M9);
    before, nothing (there is nothing to pack yet)."""
    if not source.handles or not all(h.done for side in source.handles for h in side):
        return lambda row: None
    frame = source.frame(lang, False)  # the page view's names (the lecture view's are the short median ones)
    if frame is None or not frame.done:
        return lambda row: None

    def draw(row: Any) -> None:
        with row.popover(t("lecture.exports", lang), icon=":material/download:", key="lecture_exports"):
            compare_view.exports(frame.datas, frame.labels, lang)

    return draw


class StoredRuns:
    """Runs read from the store, ended (Compare's stored pair): `datas`, their names and the lecture view's
    heatmap titles (their numbers first)."""

    def __init__(self, datas: Sequence[RunData], labels: Sequence[str], titles: Sequence[str] = ()) -> None:
        self.datas, self.labels, self.titles = datas, labels, titles

    @classmethod
    def read(cls, store: Store, ids: Sequence[int], lang: str) -> StoredRuns:
        """Two stored runs, read once per run and change through the server's shared cache (not on every Play
        tick), thinned so that their probe steps line up, named by their settings and id; LocalizedError
        when one is gone."""
        datas = stored_pair(store, list(ids))
        return cls(datas, run_frames.stored_labels(datas, ids, lang), run_frames.stored_titles(datas, ids, lang))

    def frame(self, lang: str, lecture: bool) -> RunFrame:
        verdicts = run_frames.stored_verdict_lines(self.datas, self.labels, lang)  # the lecture view's status box
        return RunFrame(self.datas, lecture_lines=verdicts, done=True, labels=self.labels, notes=self._notes(lang),
                        titles=self.titles)  # fmt: skip

    def _notes(self, lang: str) -> Callable[[], None] | None:
        if not any(d.info.attached for d in self.datas):
            return None
        return lambda: st.caption(t("attached.drawn", lang))  # what a run of the user's own model leaves out
