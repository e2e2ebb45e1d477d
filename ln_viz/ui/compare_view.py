"""The Compare page's parts: the scenario picker that sets both sides, and the side-by-side charts."""

from __future__ import annotations

import streamlit as st

from ln_viz import charts
from ln_viz.config import COMPARE_PRESETS, DEFAULT_COMPARE, PRESETS, RunConfig
from ln_viz.i18n import t
from ln_viz.snapshot import RunData
from ln_viz.ui import config_form

SIDES = ("a.", "b.")


def apply_scenario() -> None:
    name = st.session_state.get("cpreset")
    if name in COMPARE_PRESETS:
        a, b, _ = COMPARE_PRESETS[name]
        for prefix, preset in zip(SIDES, (a, b)):
            config_form.set_form(PRESETS[preset].config, prefix)
            st.session_state[prefix + "preset"] = preset


def ensure_scenario() -> None:
    """First visit: the default scenario in both forms (unless a link already set them)."""
    if "cpreset" not in st.session_state:
        st.session_state["cpreset"] = DEFAULT_COMPARE
    if any(prefix + "preset" not in st.session_state for prefix in SIDES):
        apply_scenario()


def scenario_picker(lang: str) -> None:
    st.selectbox(
        t("compare.scenario", lang),
        [*COMPARE_PRESETS, config_form.CUSTOM],
        key="cpreset",
        format_func=lambda n: t("ui.preset_custom", lang) if n == config_form.CUSTOM else n,
        on_change=apply_scenario,
    )
    name = st.session_state["cpreset"]
    if name in COMPARE_PRESETS:
        st.caption(t(COMPARE_PRESETS[name][2], lang))


def differences(a: RunConfig, b: RunConfig, lang: str) -> str:
    """One line naming the fields where A and B differ, so the comparison's one variable is explicit."""
    da, db = a.to_dict(), b.to_dict()
    fields = [f"{k} {da[k]} / {db[k]}" for k in da if k != "user_text" and da[k] != db[k]]
    return t("compare.differs", lang, fields=", ".join(fields)) if fields else t("compare.same", lang)


def common_steps(datas: list[RunData]) -> list[int]:
    """Probe steps both runs measured (the shared step slider moves over these)."""
    steps = set(datas[0].probe_steps)
    for d in datas[1:]:
        steps &= set(d.probe_steps)
    return sorted(steps)


def draw(datas: list[RunData], labels: list[str], lang: str, done: bool, presenter: bool) -> None:
    """Overlaid losses, the two heatmaps on one colour scale, and both layer profiles at one step."""
    st.plotly_chart(
        charts.compare_loss(datas, labels, lang, presenter), key="compare_loss", width="stretch", theme=None
    )
    st.caption(t("compare.loss_caption", lang))
    zrange = charts.shared_zrange(datas)
    cols = st.columns(len(datas))
    for i, (col, data) in enumerate(zip(cols, datas)):
        with col:
            st.markdown(f"**{labels[i]}**")
            fig = charts.grad_heatmap(data, lang, zrange=zrange, presenter=presenter)
            st.plotly_chart(fig, key=f"compare_heatmap_{i}", width="stretch", theme=None)
    st.caption(t("compare.heatmaps_caption", lang))
    steps = common_steps(datas)
    step = steps[-1] if steps else None
    if done and len(steps) > 1:
        step = st.select_slider(t("ui.step_select", lang), options=steps, value=steps[-1], key="compare_step")
    fig = charts.compare_layer_profile(datas, labels, lang, step=step, presenter=presenter)
    st.plotly_chart(fig, key="compare_profile", width="stretch", theme=None)
    st.caption(t("compare.profile_caption", lang))
