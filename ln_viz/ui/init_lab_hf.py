"""The Init lab's real architectures (ln_viz.hf_init_lab) and its lecture view: Figure 3 on Hugging Face's own
blocks beside ln-viz's model, with the sentence each measurement supports."""

from __future__ import annotations

import streamlit as st

from ln_viz import hf_init_lab as hf
from ln_viz.charts.init_hf import Line, hf_profile_chart, hf_ratio_chart
from ln_viz.i18n import t
from ln_viz.init_lab import DEFAULT_SCENARIO, default_config
from ln_viz.ui import init_lab_cache, keys, layout, lecture_view, nav, page_state
from ln_viz.ui.layout import FULL
from ln_viz.ui.safe import md

PAIR = ("bert", "gpt2")  # the lecture's pair: Post-LN (BERT) against Pre-LN (GPT-2)
LECTURE_VIEWS = ("toy", "hf", "xavier")  # ln-viz's model; BERT vs GPT-2 at HF's init; at Xavier's
# the lecture view has no status row under its buttons (Live's and Compare's --ln-chrome counts one)
LECTURE_CSS = ":root {--ln-chrome: calc(196px * var(--ln-zoom));}"


def _label(name: str, placement: str, lang: str) -> str:
    return f"{name} ({t(f'init.hf.placement.{placement}', lang)})"


def _lines(measured: dict, archs, init: str, lang: str) -> list[Line]:
    """Each architecture's line, named with the placement ln_viz.describe found in it."""
    return [
        Line(a, _label(hf.ARCHS[a].label, measured[(a, init)].placement, lang), measured[(a, init)].grads)
        for a in archs
        if (a, init) in measured
    ]


def real_architectures(lang: str) -> None:
    """The normal view's section: the architectures, init and matrix to show, the profile and ratio charts,
    one sentence per architecture from its measurement."""
    st.subheader(t("init.hf.title", lang))
    st.caption(t("init.hf.intro", lang))
    defaults = {keys.INIT_HF_ARCHS: list(PAIR), keys.INIT_HF_INIT: "hf", keys.INIT_HF_ROLE: hf.FFN_OUT}
    page_state.keep(defaults)
    for key, value in defaults.items():
        st.session_state.setdefault(key, value)
    c1, c2, c3 = st.columns([2, 1.2, 0.8])
    archs = c1.multiselect(t("init.hf.archs", lang), list(hf.ARCHS), key=keys.INIT_HF_ARCHS,
                           format_func=lambda a: hf.ARCHS[a].label)  # fmt: skip
    init = c2.segmented_control(t("init.hf.init", lang), hf.INITS, key=keys.INIT_HF_INIT,
                                format_func=lambda i: t(f"init.hf.init_{i}", lang)) or "hf"  # fmt: skip
    role = c3.selectbox(t("init.hf.role", lang), hf.ROLES, key=keys.INIT_HF_ROLE)
    if not archs:
        st.info(t("init.hf.pick", lang))
        return
    with st.spinner(t("init.hf.measuring", lang)):
        measured, version = init_lab_cache.hf_results(tuple(archs))
    if measured is None:
        st.info(md(hf.missing_sentence(lang)))
        return
    left, right = st.columns([1.4, 1])
    with left:
        fig = hf_profile_chart(_lines(measured, archs, init, lang), lang, False, role, t(f"init.hf.init_{init}", lang))
        st.plotly_chart(fig, key="init_hf_profile", theme=None)
        st.caption(t("init.hf.profile_caption", lang))
    with right:
        rows = [(a, i, m.grads) for (a, i), m in measured.items()]
        st.plotly_chart(hf_ratio_chart(rows, lang, False, role), key="init_hf_ratio", theme=None)
        st.caption(t("init.hf.ratio_caption", lang))
    # md: exactly the text (Korean ranges are "0.89~1.07", and two tildes in a line strike through what is between)
    st.markdown("\n".join("- " + md(hf.arch_sentence(measured[(a, init)], lang, role)) for a in archs))
    if version is not None:
        st.caption(t("init.hf.shipped", lang, version=version))
    if hf.transformers_missing():
        st.caption(md(hf.missing_sentence(lang)))


def _toy(lang: str) -> tuple[list[Line], str]:
    """ln-viz's own model at the page's default scenario (shipped): Post-LN and Pre-LN, and their sentence."""
    d = DEFAULT_SCENARIO
    lab, _ = init_lab_cache.init_lab_results(default_config(), d["positions"], d["seeds"], d["depths"], d["param"])
    grads = {pos: lab.grads[pos].rename(columns={"param": "role"}) for pos in ("post", "pre")}
    label = t("init.lecture.toy_label", lang)
    lines = [Line(pos, _label(label, pos, lang), g) for pos, g in grads.items()]
    pair = [(label, pos, hf.ratio(g, d["param"])) for pos, g in grads.items()]
    return lines, hf.pair_sentence(pair[0], pair[1], lang, d["param"])


def lecture(lang: str) -> None:
    """The lecture view: the header strip, the choice of what to show, one large chart, one sentence."""
    lecture_view.page_header(t("init.lecture.title", lang), lang, nav.COMPARE, here=nav.INIT_LAB)
    layout.css(LECTURE_CSS)
    page_state.keep([keys.INIT_LECTURE_VIEW])  # the choice survives a visit to another page
    st.session_state.setdefault(keys.INIT_LECTURE_VIEW, "hf")
    with st.container(horizontal=True, vertical_alignment="center", key="lecture_buttons"):
        view = st.segmented_control(
            t("init.lecture.view", lang), LECTURE_VIEWS, key=keys.INIT_LECTURE_VIEW, label_visibility="collapsed",
            format_func=lambda v: t(f"init.lecture.view_{v}", lang),
        ) or "hf"  # fmt: skip
    role = hf.FFN_OUT
    if view == "toy":
        lines, text = _toy(lang)
        role = DEFAULT_SCENARIO["param"]
        init_label = t("init.lecture.view_toy", lang)
    else:
        measured, _ = init_lab_cache.hf_results(PAIR)
        if measured is None:
            st.info(md(hf.missing_sentence(lang)))
            return
        lines = _lines(measured, PAIR, view, lang)
        text = hf.measured_pair(measured[(PAIR[0], view)], measured[(PAIR[1], view)], lang)
        init_label = t(f"init.hf.init_{view}", lang)
    fig = hf_profile_chart(lines, lang, True, role, init_label, height=layout.NOMINAL_PX[FULL])
    layout.chart(fig, "init_lecture", FULL, lecture=True)
    with st.container(key="lecture_takeaway"):
        st.markdown(md(text))
