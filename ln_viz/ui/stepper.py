"""The one step control of a finished run: a select slider of the probe steps and a Play/Pause button.

Every step-dependent chart (the distribution, the per-layer profile) is drawn from the step it returns,
so they always show the same step. Play advances the slider from the page's fragment timer (`timer`),
one probe step per tick, or several on a run of more than REPLAY_S / PLAY_S probe steps, so that any run
replays from start to end in about REPLAY_S seconds (10) (a 300-step run probed every 5 steps took 36 s, too
slow for a room to follow: issue 21 N15, the review's check 7, <= 12 s); the charts are redrawn by the
server, not animated inside one Plotly figure (whose own slider moved one chart and not its neighbour).
While a run trains, the control is drawn disabled in the same place, so nothing moves when the run ends."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import streamlit as st

from ln_viz.i18n import t
from ln_viz.ui import keys

PLAY_S = 0.6  # seconds per Play tick (a redraw of two charts takes ~0.1-0.3 s)
# the longest a replay's ticks last: at most REPLAY_S / PLAY_S ticks, so a long run moves in strides. 10 s, not
# the check's 12: in Chromium a 300-step Compare pair on 12 s of ticks took 12.25 s from the click to the end
# (each redraw adds to its tick); on 10 s of ticks the room's replay stays within 12
REPLAY_S = 10.0


def play_stride(n_steps: int) -> int:
    """Probe steps one Play tick moves, so that `n_steps` replay in at most REPLAY_S seconds."""
    ticks = max(1, int(REPLAY_S / PLAY_S))
    return max(1, -(-(n_steps - 1) // ticks))


def _playing_key(key: str) -> str:
    return key + keys.STEP_PLAYING


def playing(key: str) -> bool:
    """Whether Play is on for the step control `key`."""
    return bool(st.session_state.get(_playing_key(key)))


def timer(key: str, refresh_s: float | None) -> float | None:
    """The fragment's `run_every`: the live refresh while a run trains (`refresh_s`), else the Play tick
    while playing, else none."""
    if refresh_s is not None:
        return refresh_s
    return PLAY_S if playing(key) else None


def _chosen_key(key: str) -> str:
    return key + keys.STEP_CHOSEN


def _toggle(key: str, first: int) -> None:
    on = not playing(key)
    st.session_state[_playing_key(key)] = on
    if on and st.session_state.get(key + keys.STEP_AT_END):
        st.session_state[_chosen_key(key)] = first  # Play at the last step starts over


def _picked(key: str) -> None:
    """The user moved the slider: that step is the one shown."""
    st.session_state[_chosen_key(key)] = st.session_state[key]


def step_control(steps: Sequence[int], key: str, lang: str, done: bool, ticking: bool, row: Any = None) -> int | None:
    """Draw the step control and return the probe step every step-dependent chart shows (the last one
    until the user moves it). `done`: the run has ended (else the control is drawn disabled, holding
    the latest step); `ticking`: the fragment this runs in was set up with the Play timer on; `row`: a
    horizontal container to draw into (the lecture view's status row; then the label is hidden)."""
    steps = list(steps)
    shown = "visible" if row is None else "collapsed"
    row = row if row is not None else st.container(horizontal=True, vertical_alignment="bottom", key=key + "_row")
    if not done or len(steps) < 2:
        options = steps if len(steps) >= 2 else [0, 1]
        row.button("▶ " + t("chart.play", lang), key=key + "_play_idle", disabled=True)
        # The thumb is put through the Session State API on every run, never by `value=`: when the options
        # change under it (a new run), Streamlit resets the old value itself through that API, and the next
        # run started without the browser's widget states (a fragment's timer, `st.rerun`) then met a
        # widget created with a default value whose key was also set that way, and logged a warning.
        st.session_state[key + keys.STEP_IDLE] = options[-1] if len(steps) >= 2 else options[0]  # no run yet: 0
        row.select_slider(
            t("ui.step_select", lang), options=options, key=key + keys.STEP_IDLE, disabled=True, label_visibility=shown
        )
        st.session_state[_playing_key(key)] = False
        st.session_state.pop(_chosen_key(key), None)  # a new run opens at its last step
        return steps[-1] if steps else None
    # The step shown is kept apart from the slider's own value and written into the slider on every run:
    # a click that reaches the server with the browser's slider value from before the last Play tick
    # would otherwise leave the charts at one step and the slider at the next.
    step = st.session_state.get(_chosen_key(key))
    if step not in steps:
        step = steps[-1]
    on = playing(key)
    if on and ticking:
        i = steps.index(step)
        if i + 1 < len(steps):
            step = steps[min(i + play_stride(len(steps)), len(steps) - 1)]  # the last step is always shown
        else:
            st.session_state[_playing_key(key)] = on = False
    st.session_state[_chosen_key(key)] = st.session_state[key] = step
    st.session_state[key + keys.STEP_AT_END] = step == steps[-1]
    label = "❚❚ " + t("chart.pause", lang) if on else "▶ " + t("chart.play", lang)
    row.button(label, key=key + "_play", on_click=_toggle, args=(key, steps[0]))
    row.select_slider(
        t("ui.step_select", lang), options=steps, key=key, on_change=_picked, args=(key,), label_visibility=shown
    )
    if on != ticking:  # Play or Pause was pressed, or the last step was reached: reset the timer
        st.rerun(scope="app")
    return step
