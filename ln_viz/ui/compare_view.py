"""The Compare page's parts: the scenario picker that sets both sides, and the side-by-side charts."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import streamlit as st

from ln_viz import charts
from ln_viz.config import COMPARE_PRESETS, DEFAULT_COMPARE, PRESETS
from ln_viz.i18n import t
from ln_viz.snapshot import RunData
from ln_viz.ui import config_form, keys, language, layout, loss_view, run_downloads, stepper, video_export
from ln_viz.ui.instability_view import compared_probes
from ln_viz.ui.safe import md
from ln_viz.views import run_frames

SIDES = ("a.", "b.")


def apply_scenario() -> None:
    name = st.session_state.get(keys.COMPARE_PRESET)
    if name in COMPARE_PRESETS:
        a, b, _ = COMPARE_PRESETS[name]
        for prefix, preset in zip(SIDES, (a, b)):
            config_form.set_form(PRESETS[preset].config, prefix)
            st.session_state[prefix + keys.PRESET] = preset


def ensure_scenario() -> None:
    """First visit: the default scenario in both forms (unless a link already set them)."""
    if keys.COMPARE_PRESET not in st.session_state:
        st.session_state[keys.COMPARE_PRESET] = DEFAULT_COMPARE
    if any(prefix + keys.PRESET not in st.session_state for prefix in SIDES):
        apply_scenario()


def pick_scenario(name: str) -> None:
    """Choose a scenario as the picker does (a callback: before the widgets are drawn)."""
    st.session_state[keys.COMPARE_PRESET] = name
    apply_scenario()


def mark_custom() -> None:
    """Once a side's settings leave the scenario's presets, the scenario is "your own settings" (and
    the link drops it). Called before the picker is drawn."""
    for prefix in SIDES:
        config_form.mark_custom(prefix)
    name = st.session_state.get(keys.COMPARE_PRESET)
    if name in COMPARE_PRESETS:
        sides = tuple(st.session_state.get(prefix + keys.PRESET) for prefix in SIDES)
        if sides != COMPARE_PRESETS[name][:2]:
            st.session_state[keys.COMPARE_PRESET] = config_form.CUSTOM


def scenario_label(name: str, lang: str) -> str:
    return t("ui.preset_custom", lang) if name == config_form.CUSTOM else t(f"lecture.scenario.{name}", lang)


def scenario_picker(lang: str, container=None) -> None:
    """The scenario box (it sets both sides' forms)."""
    (container or st).selectbox(
        t("compare.scenario", lang),
        [*COMPARE_PRESETS, config_form.CUSTOM],
        key=language.translated(keys.COMPARE_PRESET),
        format_func=lambda n: scenario_label(n, lang),
        on_change=apply_scenario,
        width=380,  # Start and Stop fit beside it: the losses start higher up
    )


def scenario_caption(lang: str) -> str:
    name = st.session_state[keys.COMPARE_PRESET]
    return t(COMPARE_PRESETS[name][2], lang) if name in COMPARE_PRESETS else t("lecture.custom_caption", lang)


def write_query() -> None:
    """Both forms and the scenario into the URL (the scenario only while it still holds)."""
    for prefix in SIDES:
        config_form.write_query(prefix=prefix)
    name = st.session_state[keys.COMPARE_PRESET]
    if name in COMPARE_PRESETS:
        st.query_params["cpreset"] = name
    elif "cpreset" in st.query_params:
        del st.query_params["cpreset"]


def draw(
    datas: list[RunData],
    labels: list[str],
    lang: str,
    done: bool,
    ticking: bool = False,
    notes: Callable[[], None] | None = None,
    seeds: tuple[Sequence[Sequence[RunData]], Sequence[str]] | None = None,
) -> None:
    """Overlaid losses, the two heatmaps on one colour scale, both layer profiles at one step (the
    one step control's, ln_viz.ui.stepper), and both runs' instability probes (largest attention logit,
    mean log Z); `notes` draws the runs' messages in a box under the losses that keeps its height from
    the start. `seeds`: each side's runs seed by seed and their names: the loss chart draws each side's
    mean with its band (ln_viz.charts.seeds), the rest `datas` (each side's median seed, `labels`)."""
    view = loss_view.current().kwargs()
    if seeds is not None:
        fig = charts.seed_loss_chart(seeds[0], lang, labels=seeds[1], **view)
    else:
        fig = charts.loss_chart(datas, lang, labels=labels, **view)
    layout.chart(fig, "compare_loss", layout.LOSS)
    attached = any(d.info.attached for d in datas)  # a model of the user's own: no unigram line (its data's)
    st.caption(t("compare.loss_caption_attached" if attached else "compare.loss_caption", lang))
    with st.container(key="run_notes"):
        st.markdown("\u200b")  # an empty box is not drawn at all: this keeps it, and its height
        if notes is not None:
            notes()
    zrange = charts.shared_zrange(datas)
    for i, (col, data) in enumerate(zip(st.columns(len(datas)), datas)):
        with col:
            st.markdown(f"**{md(labels[i])}**")  # a model's name is text from outside
            fig = charts.grad_heatmap(data, lang, zrange=zrange)
            layout.chart(fig, f"compare_heatmap_{i}", layout.MID)
    st.caption(t("compare.heatmaps_caption", lang))
    step = stepper.step_control(run_frames.common_steps(datas), "compare_step", lang, done, ticking)
    fig = charts.layer_profile(datas, lang, step, labels=labels)
    layout.chart(fig, "compare_profile", layout.MID)
    st.caption(t("compare.profile_caption", lang))
    if done:
        exports(datas, labels, lang)
    compared_probes(datas, labels, lang)


def exports(datas: Sequence[RunData], labels: Sequence[str], lang: str) -> None:
    """The ended pair as one offline HTML file, for a talk (ln_viz/pack.py), and as a video: under the page view's
    charts, and in the lecture view's "Pack and video" popover (ln_viz.ui.run_view.lecture_exports)."""
    run_downloads.pack_button(datas, lang, "compare_dl_pack", "ln-viz-pack-compare", labels)
    token = tuple((d.info.config, len(d.probe_steps)) for d in datas)  # which pair, as far as it went
    video_export.video_buttons(datas, lang, "compare_video", "ln-viz-compare", token, labels)
