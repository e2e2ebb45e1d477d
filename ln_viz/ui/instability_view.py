"""The "Instability probes" expander under the live view's charts (issue 19): the largest attention
logit per layer and log Z over the steps, the massive-activation ratio per layer and, for a DyT run,
DyT's saturation per norm at the page's chosen step, then issue 33's angular update and Adam's
preconditioner lag over the steps and the norms' smallest per-token input scale at the step; and under
Compare's charts, both runs' largest attention logit and mean log Z. A run recorded before these probes
existed (the shipped demo runs) gets one sentence instead of empty charts."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import plotly.graph_objects as go
import streamlit as st

from ln_viz import charts
from ln_viz.i18n import t
from ln_viz.snapshot import RunData
from ln_viz.ui import layout

# chart name (as live._build knows it) -> its caption's key
OVER_STEPS = {"attn_logit": "caption.attn_logit", "log_z": "caption.log_z"}
AT_STEP = {"massive_act": "caption.massive_act", "dyt_saturation": "caption.dyt_saturation"}
# issue 33's update probes: the angular update and Adam's lag over the steps, the norms' smallest input scale
UPDATES = {"angular_update": "caption.angular_update", "precond_lag": "caption.precond_lag"}
UPDATES_AT_STEP = {"norm_min_rms": "caption.norm_min_rms"}
INSTABILITY_OPEN = "instability_open"  # the expander's key (after the page's prefix): True while it is open


def instability_expander(
    data: RunData, lang: str, step: int | None, figure: Callable[..., go.Figure], key_prefix: str = ""
) -> None:
    """The expander, closed at first; `figure(name, step=None)` builds (or takes from the finished run's
    cache) one of the named figures. It tracks whether it is open (opening it reruns the fragment) and
    draws its charts only then: a closed expander's four charts were still sent and redrawn by the
    browser every refresh, so a training page redrew ten charts a second and a click waited 2 s behind
    them at depth 24."""
    box = st.expander(t("ui.instability", lang), key=key_prefix + INSTABILITY_OPEN, on_change="rerun")
    with box:
        if data.probe_steps and not charts.has_instability_probes(data):
            st.caption(t("ui.instability_none", lang))
            return
        if not box.open:
            return
        for col, (name, caption) in zip(st.columns(2), OVER_STEPS.items()):
            with col:
                layout.chart(figure(name), key_prefix + name, layout.SHORT)
                st.caption(t(caption, lang))
        shown = [n for n in AT_STEP if n != "dyt_saturation" or charts.is_dyt(data)]
        for col, name in zip(st.columns(2), shown):
            with col:
                layout.chart(figure(name, step), key_prefix + name, layout.SHORT)
                st.caption(t(AT_STEP[name], lang))
        if charts.has_update_probes(data):
            _update_charts(lang, step, figure, key_prefix)


def _update_charts(lang: str, step: int | None, figure: Callable[..., go.Figure], key_prefix: str) -> None:
    """The update probes (issue 33): two charts over the steps, then the norms' smallest input scale at the step."""
    for col, (name, caption) in zip(st.columns(2), UPDATES.items()):
        with col:
            layout.chart(figure(name), key_prefix + name, layout.SHORT)
            st.caption(t(caption, lang))
    for col, (name, caption) in zip(st.columns(2), UPDATES_AT_STEP.items()):
        with col:
            layout.chart(figure(name, step), key_prefix + name, layout.SHORT)
            st.caption(t(caption, lang))


# Compare's charts of both runs: chart name -> (builder, caption key)
COMPARED = {
    "attn_logit": (charts.attn_logit_chart, "compare.attn_logit_caption"),
    "log_z": (charts.log_z_chart, "compare.log_z_caption"),
}


def compared_probes(datas: Sequence[RunData], labels: Sequence[str], lang: str) -> None:
    """Both runs' largest attention logit and mean log Z side by side (Wortsman et al.'s figure), under
    a heading; a run recorded before the probes is named in one sentence, and when no run has them there
    is no chart at all. Before the first probe step: the charts' empty axes, as the others show."""
    st.markdown(f"**{t('ui.instability', lang)}**")
    old = [label for d, label in zip(datas, labels) if d.probe_steps and not charts.has_instability_probes(d)]
    if old:
        st.caption(t("compare.instability_none", lang, runs=", ".join(old)))
    if len(old) == len(datas):
        return
    for col, (name, (build, caption)) in zip(st.columns(2), COMPARED.items()):
        with col:
            layout.chart(build(datas, lang, labels=labels), "compare_" + name, layout.MID)
            st.caption(t(caption, lang))
