"""One run's charts: the six of the page view (and their figures, built once and shared when the run has ended
or is watched), the run's end message, the thinned-copy notes, the empty charts before Start, and Start and
Stop. The refresh, the status line and the lecture view's screen are the run view's (ln_viz.ui.run_view)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import streamlit as st

from ln_viz import charts
from ln_viz.config import RunConfig
from ln_viz.i18n import LocalizedError, t
from ln_viz.runner import RunHandle, RunView
from ln_viz.snapshot import RunData, RunInfo
from ln_viz.ui import config_form, layout, loss_view, stepper
from ln_viz.ui.instability_view import instability_expander
from ln_viz.ui.loss_view import RAW, LossView
from ln_viz.ui.safe import md


@st.cache_data(show_spinner=False, max_entries=64)
def preview_data(cfg: RunConfig) -> RunData:
    """Empty RunData of a run whose worker has not reported yet: the charts draw their fixed axes, the
    unigram line and the planned learning rate at once, and fill in as steps arrive."""
    return RunData(RunInfo.preview(cfg))


def form_config(prefix: str = "") -> RunConfig | None:
    """The form's settings now, or None when they cannot be read (an upload that is not UTF-8)."""
    try:
        return config_form.read_config(prefix)
    except LocalizedError:
        return None


def wait_first_step(handle: RunHandle | None, timeout: float = 0.5) -> None:
    """Give a run just started on a warm worker the moment its first step takes (0.05-0.1 s), so the
    page's draw right after Start already shows it instead of waiting for the next refresh."""
    deadline = time.monotonic() + timeout
    while handle is not None and not handle.done and handle.view().steps_done == 0 and time.monotonic() < deadline:
        time.sleep(0.02)


def _open_stored(store_id: int) -> RunData:
    from ln_viz.ui.storage import get_store, stored_run

    store = get_store()
    assert store is not None  # only called with an id the store's recorder gave
    return stored_run(store, store_id)


def _store_id(handle: RunHandle) -> int | None:
    from ln_viz.ui.storage import get_recorder

    recorder = get_recorder()
    return recorder.store_id(handle.run_id) if recorder is not None else None


def complete_data(handle: RunHandle, view: RunView) -> RunData | None:
    """The run's data with every probe step (the live copy keeps at most `Runner.live_probe_steps`):
    the recorder decides between the live and the stored copy (`Recorder.complete_data`); the stored
    one is read through this server's shared cache."""
    from ln_viz.ui.storage import get_recorder

    recorder = get_recorder()
    if recorder is None:
        return view.data
    return recorder.complete_data(handle.run_id, view.data, handle.done, open_stored=_open_stored)


def thinning_notes(datas: list[RunData], handles: list[RunHandle], lang: str) -> None:
    """Say so when the charts over steps show a thinned copy (`complete_data`'s results): while a run
    trains, when its store copy is missing, or when a finished run has more probe steps than shown."""
    notes = []
    for data, handle in zip(datas, handles):
        if data.probe_stride == 1:
            continue
        stored = _store_id(handle) is not None
        if handle.done and data is not handle.view().data:
            key = "ui.thinned_finished"  # read back from the store, thinned to storage.SHOWN_PROBE_STEPS
        elif not stored or handle.done:
            key = "ui.thinned_unstored"
        else:
            key = "ui.thinned"
        notes.append(t(key, lang, stride=data.probe_stride, kept=data.max_probe_steps))
    for note in dict.fromkeys(notes):
        st.caption(note)


def run_message(view: RunView, lang: str) -> None:
    """The one sentence that explains a run's end (diverged, stalled, stopped by the cap, failed), and
    in red, while it lasts, why the run is not (wholly) stored (the recorder's writer says)."""
    from ln_viz.ui.storage import store_problem

    problem = store_problem(view.run_id)
    if problem is not None:
        st.error(md(problem.message(lang)))  # it echoes a path and an OS error: text, not Markdown
    if view.message:
        text = t(view.message, lang, **view.message_params)
        if view.status == "diverged" and view.data and view.data.diverged_at is not None:
            text = t("msg.diverged_at", lang, step=view.data.diverged_at)  # the step, and what to try
        text = md(text)  # a failed worker's message echoes its exception: text, not Markdown
        if view.status in ("diverged", "failed"):
            st.error(text)
        elif view.status == "stalled" or (view.data and view.data.stalled_since):
            st.warning(text)
        else:
            st.info(text)


def start_stop(
    lang: str, start: tuple[str, str], stop: tuple[str, str], row: Any = None, running: bool = True
) -> tuple[bool, bool]:
    """Start and Stop at the top of the main area, where a laptop or a phone shows them at once;
    `start`, `stop`: (key, label); `row`: a horizontal container to add them to; Stop is enabled only
    while a run of the page is `running`. The loss charts' smoothing and axis (ln_viz.ui.loss_view) sit
    beside them. Returns which was clicked."""
    row = row if row is not None else st.container(horizontal=True, key="run_buttons")
    started = row.button(start[1], key=start[0], type="primary")
    stopped = row.button(stop[1], key=stop[0], disabled=not running)
    loss_view.controls(lang, row)
    return started, stopped


_SIMPLE_CHARTS = {
    "loss_chart": charts.loss_chart,
    "grad_heatmap": charts.grad_heatmap,
    "update_ratio": charts.update_ratio_chart,
    "attn_entropy": charts.attention_entropy_chart,
    "attn_logit": charts.attn_logit_chart,
    "log_z": charts.log_z_chart,
    "angular_update": charts.angular_update_chart,  # issue 33's update probes (probes33)
    "precond_lag": charts.precond_lag_chart,
}
_STEP_CHARTS = {"massive_act": charts.massive_act_chart, "dyt_saturation": charts.dyt_saturation_chart,
                "norm_min_rms": charts.norm_min_rms_chart}  # fmt: skip


def _build(name: str, data: RunData, step: int | None, lang: str, lecture: bool, view: LossView = RAW):
    """One of the live page's figures (`step`: the probe step the distribution and profile show; `view`:
    the loss chart's smoothing and axis). The distribution is never animated inside its figure: the
    page's one step control moves it and the profile together (ln_viz.ui.stepper)."""
    if name == "loss_chart":
        return charts.loss_chart(data, lang=lang, lecture=lecture, **view.kwargs())
    if name == "act_dist":  # in the lecture view at its box's height: its colour bar keeps as many labels as fit
        height = layout.NOMINAL_PX[layout.HALF] if lecture else None
        return charts.act_dist(data, step=step, animate=False, lang=lang, lecture=lecture, height=height)
    if name == "layer_profile":
        return charts.layer_profile(data, step=step, lang=lang, lecture=lecture)
    if name in _STEP_CHARTS:  # the instability expander's charts at the page's step
        return _STEP_CHARTS[name](data, step=step, lang=lang, lecture=lecture)
    return _SIMPLE_CHARTS[name](data, lang=lang, lecture=lecture)


@st.cache_resource(show_spinner=False, max_entries=64)
def _finished_figure(
    cache_key: str, name: str, lang: str, lecture: bool, step: int | None, view: LossView, _data: RunData
):
    """A figure of a run that has ended, built once for every tab and rerun showing it (`_data` is not
    hashed: `cache_key` names the run's final data). A finished page's figures cost ~120 ms to build;
    a click on that page re-ran them all, and Play asks for the same few steps again."""
    return _build(name, _data, step, lang, lecture, view)


@st.cache_resource(show_spinner=False, max_entries=64)
def _watched_figure(
    cache_key: str, name: str, lang: str, lecture: bool, step: int | None, view: LossView, _data: RunData
):
    """A figure of a run some tabs watch while it trains (ln_viz.ui.watch): one build per state of its data
    (`cache_key`) for all of them. Apart from `_finished_figure`, whose entries it would push out."""
    return _build(name, _data, step, lang, lecture, view)


def figures(
    data: RunData,
    lang: str,
    done: bool,
    lecture: bool,
    cache_key: str | None,
    view: LossView = RAW,
    shared: bool = False,
):
    """`figure(name, step=None)`: the page's figures of `data`, from the cache once the run has ended (or,
    `shared`, while it trains too: a watcher's `cache_key` names the state of its data); `view`: how the
    loss chart is drawn (the other figures do not depend on it, nor their cache entries)."""

    def figure(name: str, step: int | None = None):
        shown = view if name == "loss_chart" else RAW
        if done and cache_key is not None:
            return _finished_figure(cache_key, name, lang, lecture, step, shown, data)
        if shared and cache_key is not None:
            return _watched_figure(cache_key, name, lang, lecture, step, shown, data)
        return _build(name, data, step, lang, lecture, shown)

    return figure


def draw_charts(
    data: RunData,
    lang: str,
    done: bool,
    key_prefix: str = "",
    cache_key: str | None = None,
    ticking: bool = False,
    notes: Callable[[], None] | None = None,
    shared: bool = False,
) -> None:
    """Place the six charts with their captions: the loss and the gradient heatmap side by side in the
    first screen, then the step control, the distribution and the per-layer profile at that step, and
    the update ratio beside the attention entropy, and the "Instability probes" expander below
    (ln_viz.ui.instability_view). With `cache_key` (a finished run's `finished_key`)
    the figures are built once and shared; `ticking`: the page's fragment runs on the Play timer
    (ln_viz.ui.stepper); `notes` draws the run's messages (stalled, diverged, thinned) in a box that
    keeps its height from the start; `shared`: see `figures`. The loss chart is drawn as ln_viz.ui.loss_view is set."""
    figure = figures(data, lang, done, False, cache_key, loss_view.current(), shared)
    loss = "loss_attached" if data.info.attached else "loss"  # a model of the user's own: no unigram line
    for col, name, caption in zip(st.columns(2), ("loss_chart", "grad_heatmap"), (loss, "grad_heatmap")):
        with col:
            layout.chart(figure(name), key_prefix + name, layout.TALL)
            st.caption(t(f"caption.{caption}", lang))
    with st.container(key=key_prefix + "run_notes"):  # a fixed height (CSS): a message does not move the rest
        st.markdown("\u200b")  # an empty box is not drawn at all: this keeps it, and its height
        if notes is not None:
            notes()
    step = stepper.step_control(data.probe_steps, key_prefix + "probe_step", lang, done, ticking)
    for col, name in zip(st.columns(2), ("act_dist", "layer_profile")):
        with col:
            layout.chart(figure(name, step), key_prefix + name, layout.MID)
            st.caption(t(f"caption.{name}", lang))
    for col, name in zip(st.columns(2), ("update_ratio", "attn_entropy")):
        with col:
            layout.chart(figure(name), key_prefix + name, layout.SHORT)
            st.caption(t(f"caption.{name}", lang))
    instability_expander(data, lang, step, figure, key_prefix)


# --- the run's result in one sentence, for a screen reader (issue 32, UX round 4 M11) ---------------------------
# Visually hidden, not display:none (a screen reader skips that), and out of the page's flex flow (absolute), so
# it adds no gap: the lecture view's one screen keeps its height.
SUMMARY_CSS = """.st-key-live_summary {position: absolute !important; width: 1px !important; height: 1px !important;
    overflow: hidden; clip-path: inset(50%); white-space: nowrap; margin: -1px; padding: 0;}"""
QUARTERS = 4  # while a run trains its sentence changes at each quarter of its steps: a polite region, not a ticker


def loss_at(data: RunData, step: int) -> float | None:
    """The run's loss as it stood at `step` (the mean of the last losses up to it, as its final loss is)."""
    from ln_viz.snapshot import final_loss

    steps = data.scalars["step"]
    n = next((i for i in range(len(steps) - 1, -1, -1) if steps[i] <= step), -1) + 1
    return final_loss(data.scalars["loss"][:n])


def summary(view: RunView | None, data: RunData | None, lang: str) -> str:
    """Live's run in one sentence a screen reader reads (the charts say it only to the eye): while it trains, its
    loss against the unigram loss at the last quarter of its steps it passed (so the sentence changes four times,
    not every second); once it has ended, its verdict (learned, stalled, diverged at step N: Compare's status
    lines' words). Empty before Start."""
    from ln_viz.views import run_frames

    if view is None:
        return ""
    label = t("live.sr_run", lang, run=charts.norm_label(view.config.norm_position, lang), depth=view.config.depth)
    if view.status == "queued":
        return f"{label}: {run_frames.status_line(view, lang, 0)}"
    if view.done:
        return run_frames.verdict(view, label, lang)
    data = data or view.data
    steps, done = view.config.steps, data.steps_done if data is not None else 0
    quarter = done * QUARTERS // steps * steps // QUARTERS if steps else 0
    loss = loss_at(data, quarter) if data is not None and quarter > 0 else None
    if loss is None:
        return t("live.sr_started", lang, run=label, steps=steps)
    unigram = data.info.unigram_entropy
    key = "live.sr_below" if loss < unigram else "live.sr_above"
    text = t(key, lang, run=label, step=quarter, steps=steps, loss=f"{loss:.2f}", unigram=f"{unigram:.2f}")
    if data.stalled_since is not None:
        text += " " + t("live.sr_stalled", lang, step=data.stalled_since)
    return text


def announce(handle: RunHandle | None, datas: list[RunData] | tuple, lang: str) -> None:
    """Draw `summary` of Live's run in a polite live region, visually hidden: a screen reader says it when it
    changes (each quarter of the run, and its end), and finds it in the page's text at any time."""
    say(summary(handle.view() if handle is not None else None, datas[0] if datas else None, lang))


def say(text: str) -> None:
    """`text` in the page's polite live region, visually hidden (Live's and the watch page's)."""
    from html import escape

    with st.container(key="live_summary"):
        layout.css(SUMMARY_CSS)
        st.html(f'<div role="status" aria-live="polite" aria-atomic="true">{escape(text)}</div>')
