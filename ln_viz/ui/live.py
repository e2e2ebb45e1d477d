"""The live view of one run: status line and the five charts, redrawn about once a second while the
run trains (a fragment with run_every), animated in the browser once it has ended."""

from __future__ import annotations

import math
import time

import streamlit as st

from ln_viz import charts
from ln_viz.config import RunConfig
from ln_viz.i18n import t
from ln_viz.runner import RunHandle, RunView
from ln_viz.snapshot import RunData, RunInfo
from ln_viz.ui.safe import md

REFRESH_S = 1.0


@st.cache_data(show_spinner=False, max_entries=64)
def preview_data(cfg: RunConfig) -> RunData:
    """Empty RunData of a run whose worker has not reported yet: the charts draw their fixed axes, the
    unigram line and the planned learning rate at once, and fill in as steps arrive."""
    return RunData(RunInfo.preview(cfg))


def wait_first_step(handle: RunHandle | None, timeout: float = 0.5) -> None:
    """Give a run just started on a warm worker the moment its first step takes (0.05-0.1 s), so the
    page's draw right after Start already shows it instead of waiting for the next refresh."""
    deadline = time.monotonic() + timeout
    while handle is not None and not handle.done and handle.view().steps_done == 0 and time.monotonic() < deadline:
        time.sleep(0.02)


# A finished run's charts show at most this many probe steps (evenly spaced): the heatmap draws 400
# columns at most, and at depth 48 with a probe every step a whole 10,000-step run would hold ~750 MB.
FINISHED_PROBE_STEPS = 512


@st.cache_resource(show_spinner=False, max_entries=4)
def _stored_run(store_id: int) -> RunData:
    """A finished run read back from the store, shared by every tab showing it (it no longer changes)."""
    from ln_viz.ui.storage import get_store

    store = get_store()
    assert store is not None  # only called with an id the store's recorder gave
    return store.open_run(store_id, max_probe_steps=FINISHED_PROBE_STEPS)


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
    return recorder.complete_data(handle.run_id, view.data, handle.done, open_stored=_stored_run)


def thinning_notes(datas: list[RunData], handles: list[RunHandle], lang: str) -> None:
    """Say so when the charts over steps show a thinned copy (`complete_data`'s results): while a run
    trains, when its store copy is missing, or when a finished run has more probe steps than shown."""
    notes = []
    for data, handle in zip(datas, handles):
        if data.probe_stride == 1:
            continue
        stored = _store_id(handle) is not None
        if handle.done and data is not handle.view().data:
            key = "ui.thinned_finished"  # read back from the store, thinned to FINISHED_PROBE_STEPS
        elif not stored or handle.done:
            key = "ui.thinned_unstored"
        else:
            key = "ui.thinned"
        notes.append(t(key, lang, stride=data.probe_stride, kept=data.max_probe_steps))
    for note in dict.fromkeys(notes):
        st.caption(note)


def status_line(view: RunView, lang: str, cap: int) -> str:
    """`Step 120/300 | 12.3 steps/s | ETA 15 s | running` (or the queue place; `cap` runs train at once)."""
    if view.status == "queued":
        return t("ui.queued", lang, pos=view.queue_position or 1, cap=cap)
    data = view.data
    step = data.steps_done if data else 0
    rate = data.scalars["steps_per_sec"][-1] if data and data.scalars["steps_per_sec"] else 0.0
    remaining = view.config.steps - step
    if view.done:
        eta = "-"
    elif rate > 0:
        eta = f"{math.ceil(remaining / rate)} s"
    else:
        eta = "..."
    return t(
        "ui.status_line",
        lang,
        step=step,
        steps=view.config.steps,
        rate=f"{rate:.1f}",
        eta=eta,
        status=t(f"status.{view.status}", lang),
    )


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


_SIMPLE_CHARTS = {
    "loss_chart": charts.loss_chart,
    "grad_heatmap": charts.grad_heatmap,
    "update_ratio": charts.update_ratio_chart,
    "attn_entropy": charts.attention_entropy_chart,
}


def _build(name: str, data: RunData, step: int | None, lang: str, presenter: bool, animate: bool):
    """One of the live page's five figures (`step`: the probe step the distribution and profile show)."""
    if name == "act_dist":
        return charts.act_dist(data, step=step, animate=animate, lang=lang, presenter=presenter)
    if name == "layer_profile":
        return charts.layer_profile(data, step=step, lang=lang, presenter=presenter)
    return _SIMPLE_CHARTS[name](data, lang=lang, presenter=presenter)


@st.cache_resource(show_spinner=False, max_entries=20)
def _finished_figure(cache_key: str, name: str, lang: str, presenter: bool, step: int | None, _data: RunData):
    """A figure of a run that has ended, built once for every tab and rerun showing it (`_data` is not
    hashed: `cache_key` names the run's final data). A finished page's figures cost ~120 ms to build,
    its animation most; a click on that page re-ran them all."""
    return _build(name, _data, step, lang, presenter, animate=True)


def finished_key(handle: RunHandle, view: RunView, data: RunData) -> str | None:
    """The cache key of a finished run's figures (None while it trains, or until it is stored)."""
    if not handle.done:
        return None
    return f"{handle.run_id}@{view.version}/{data.probe_stride}/{len(data.probe_steps)}/{data.steps_done}"


def draw_charts(
    data: RunData,
    lang: str,
    done: bool,
    presenter: bool = False,
    key_prefix: str = "",
    cache_key: str | None = None,
) -> None:
    """Place the five charts with their captions. After the end, the distribution chart animates in
    the browser (Plotly frames) and a step picker drives the layer profile; with `cache_key` (a
    finished run's `finished_key`) the figures are built once and shared."""

    def figure(name: str, step: int | None = None):
        if done and cache_key is not None:
            return _finished_figure(cache_key, name, lang, presenter, step, data)
        return _build(name, data, step, lang, presenter, animate=done)

    st.plotly_chart(figure("loss_chart"), key=key_prefix + "loss_chart", width="stretch", theme=None)
    st.caption(t("caption.loss", lang))
    left, right = st.columns(2)
    with left:
        st.plotly_chart(figure("grad_heatmap"), key=key_prefix + "grad_heatmap", width="stretch", theme=None)
        st.caption(t("caption.grad_heatmap", lang))
    with right:
        st.plotly_chart(figure("update_ratio"), key=key_prefix + "update_ratio", width="stretch", theme=None)
        st.caption(t("caption.update_ratio", lang))
    step = None
    if done and len(data.probe_steps) > 1:
        step = st.select_slider(
            t("ui.step_select", lang),
            options=list(data.probe_steps),
            value=data.probe_steps[-1],
            key=key_prefix + "probe_step",
        )
    left, right = st.columns(2)
    with left:
        st.plotly_chart(figure("act_dist", step), key=key_prefix + "act_dist", width="stretch", theme=None)
        st.caption(t("caption.act_dist", lang))
    with right:
        st.plotly_chart(figure("layer_profile", step), key=key_prefix + "layer_profile", width="stretch", theme=None)
        st.caption(t("caption.layer_profile", lang))
    st.plotly_chart(figure("attn_entropy"), key=key_prefix + "attn_entropy", width="stretch", theme=None)
    st.caption(t("caption.attn_entropy", lang))
