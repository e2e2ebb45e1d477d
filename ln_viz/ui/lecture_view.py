"""The lecture view (`?present=1`) of Live and Compare: one 16:9 screen, no scrolling, no sidebar.

A header strip says what is running in words and numbers; under it the scenario buttons, Start and
Stop; then the loss large on the left, the gradient heatmap(s) and the per-layer profile on the right,
and one takeaway sentence at the bottom. Chart heights come from the viewport (CSS on the boxes of
ln_viz.ui.layout), so the same page fits a 1920x1080 projector and a 1280x720 laptop."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import streamlit as st

from ln_viz import charts
from ln_viz.config import RunConfig
from ln_viz.i18n import t
from ln_viz.snapshot import RunData
from ln_viz.ui import language, layout, lecture_switch, stepper
from ln_viz.ui.layout import FULL, HALF

# Plotly's fonts are in px and the server cannot know the screen, so the view is laid out for a
# 1920x1080 screen and each part (charts, header, step row, takeaway) zoomed to the screen it is on
# (1280x720: 2/3; --ln-zoom): a laptop shows the projector's picture, not a crowded one. A part
# zoomed by z is made 1/z as wide and tall, so it still fills its place. --ln-chrome: what is not a
# chart (header strip, buttons, status and step row, takeaway, gaps), measured in Chromium.
SCREEN_CSS = f"""
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="stHeader"] {{display: none;}}
:root {{--ln-zoom: 1; --ln-chrome: calc(232px * var(--ln-zoom));}}
@media (max-width: 1700px), (max-height: 960px) {{ :root {{--ln-zoom: 0.85;}} }}
@media (max-width: 1500px), (max-height: 850px) {{ :root {{--ln-zoom: 0.75;}} }}
@media (max-width: 1350px), (max-height: 760px) {{ :root {{--ln-zoom: 0.6667;}} }}
[data-testid="stMainBlockContainer"] {{padding: 0.4rem 1.2rem 0 1.2rem !important; max-width: none !important;}}
[data-testid="stMain"] [data-testid="stVerticalBlock"] {{gap: 0.35rem;}}
[class*="st-key-{FULL}"] {{height: calc(100vh - var(--ln-chrome)); flex: 0 0 auto !important; overflow: hidden;}}
[class*="st-key-{HALF}"] {{height: calc((100vh - var(--ln-chrome)) / 2 - 0.2rem); flex: 0 0 auto !important;
    overflow: hidden;}}
[class*="st-key-{FULL}"] [data-testid="stFullScreenFrame"],
[class*="st-key-{HALF}"] [data-testid="stFullScreenFrame"] {{zoom: var(--ln-zoom);
    width: calc(100% / var(--ln-zoom)) !important; height: calc(100% / var(--ln-zoom)) !important;}}
.st-key-lecture_top, .st-key-lecture_buttons, .st-key-lecture_steps, .st-key-lecture_takeaway {{zoom: var(--ln-zoom);
    width: calc(100% / var(--ln-zoom)) !important;}}
.st-key-lecture_title p {{font-size: 34px; font-weight: 700; line-height: 1.2; margin: 0;}}
.st-key-lecture_steps .st-key-probe_step, .st-key-lecture_steps .st-key-probe_step_idle,
.st-key-lecture_steps .st-key-compare_step, .st-key-lecture_steps .st-key-compare_step_idle {{flex: 0 0 40%;}}
.st-key-lecture_steps .stButton {{flex: 0 0 auto;}}
.st-key-lecture_status {{height: 50px !important; flex: 0 0 50px !important; overflow-y: auto;}}
.st-key-lecture_status p {{font-size: 19px; line-height: 1.3; margin: 0;}}
.st-key-lecture_takeaway p {{font-size: 28px; line-height: 1.25; margin: 0;}}
"""


def _lr_text(lr: float) -> str:
    """3e-3 rather than 0.003: how learning rates are said in papers and talks."""
    if lr >= 0.1:
        return f"{lr:g}"
    mantissa, exponent = f"{lr:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def _one_or_vs(values: Sequence[str], lang: str) -> str:
    return values[0] if len(set(values)) == 1 else t("lecture.vs", lang).join(values)


def setting_words(c: RunConfig, lang: str) -> list[str]:
    """A run's settings as a lecturer says them: norm position, depth, optimizer and lr, warm-up."""
    return [
        charts.norm_label(c.norm_position, lang),
        t("lecture.layers", lang, n=c.depth),
        t(f"lecture.opt.{c.optimizer}", lang) + " " + t("lecture.lr", lang, lr=_lr_text(c.lr)),
        t("lecture.warmup", lang, n=c.warmup_steps) if c.warmup_steps else t("lecture.no_warmup", lang),
    ]


def describe(cfgs: Sequence[RunConfig], lang: str) -> str:
    """What is running, in words and numbers: `Post-LN vs Pre-LN · 6 layers · Adam lr 3e-3 · no warm-up`
    (a part that differs between the runs is said for each)."""
    words = [setting_words(c, lang) for c in cfgs]
    return " · ".join(_one_or_vs([w[j] for w in words], lang) for j in range(len(words[0])))


def _pick(key: str, apply: Callable[[str], None]) -> None:
    name = st.session_state[key]
    if name is not None:  # a click on the chosen one deselects it: keep it
        apply(name)


def _switch_lang(lang: str) -> None:
    st.session_state["lang"] = lang


def _top_row(text: str, lang: str, other_page: tuple[str, str]) -> None:
    row = st.container(horizontal=True, vertical_alignment="center", key="lecture_top")
    with row.container(key="lecture_title", width="stretch"):
        st.markdown(text)
    page, label_key = other_page
    row.page_link(page, label=t(label_key, lang), width="content")
    other = "ko" if lang == "en" else "en"
    row.button(language.LANG_NAMES[other], key="lecture_lang", on_click=_switch_lang, args=(other,))
    row.button(t("lecture.exit", lang), key="lecture_exit", on_click=lecture_switch.set_lecture_view, args=(False,))


def header(
    cfgs: Sequence[RunConfig],
    lang: str,
    choices: tuple[Sequence[str], str | None, str, Callable[[str], None]],
    buttons: tuple[tuple[str, str], tuple[str, str]],
    other_page: tuple[str, str],
) -> tuple[bool, bool]:
    """The header strip and the button row; returns (Start clicked, Stop clicked). `choices`: the
    scenario names, the current one (None: the user's own settings), the catalog prefix of their
    names and what a pick does; `buttons`: (key, label) of Start and of Stop; `other_page`: (page
    file, label key) of the other page with a lecture view."""
    layout.css(SCREEN_CSS)
    _top_row(describe(cfgs, lang), lang, other_page)
    names, current, prefix, apply = choices
    row = st.container(horizontal=True, vertical_alignment="center", key="lecture_buttons")
    st.session_state["lecture_choice"] = current
    with row:
        st.segmented_control(
            t("lecture.scenarios", lang),
            list(names),
            key="lecture_choice",
            format_func=lambda n: t(prefix + n, lang),
            on_change=_pick,
            args=("lecture_choice", apply),
            label_visibility="collapsed",
        )
    (start_key, start_label), (stop_key, stop_label) = buttons
    start = row.button(start_label, key=start_key, type="primary")
    stop = row.button(stop_label, key=stop_key)
    return start, stop


def page_header(text: str, lang: str, other_page: tuple[str, str]) -> None:
    """The header strip alone (a page without scenario buttons: the stability map): `text` in large type,
    the link to `other_page`, the language and leave buttons; the screen's rules (SCREEN_CSS) with it."""
    layout.css(SCREEN_CSS)
    _top_row(text, lang, other_page)


def takeaway(key: str | None, lang: str) -> None:
    """The scenario's one sentence at the bottom (none for the user's own settings)."""
    with st.container(key="lecture_takeaway"):
        st.markdown(t(key, lang) if key else "&nbsp;")


def status_and_steps(lines: Sequence[str], steps: Sequence[int], key: str, lang: str, done: bool, ticking: bool):
    """The run's status (and its end message) beside the one step control; returns the step to show."""
    row = st.container(horizontal=True, vertical_alignment="center", key="lecture_steps")
    with row.container(key="lecture_status", width="stretch"):
        st.markdown("  \n".join(lines))
    return stepper.step_control(steps, key, lang, done, ticking, row=row)


def draw_live(figure: Callable, step: int | None) -> None:
    """One run: the loss on the left; the gradient heatmap above the per-layer profile and the
    distribution on the right (`figure(name, step=None)` from ln_viz.ui.live.figures)."""
    left, right = st.columns([1, 1.15], gap="small")
    with left:
        layout.chart(figure("loss_chart"), "loss_chart", FULL, lecture=True)
    with right:
        layout.chart(figure("grad_heatmap"), "grad_heatmap", HALF, lecture=True)
        for col, name in zip(st.columns([1.25, 1], gap="small"), ("layer_profile", "act_dist")):
            with col:
                layout.chart(figure(name, step), name, HALF, lecture=True)


def draw_compare(datas: Sequence[RunData], labels: Sequence[str], lang: str, step: int | None) -> None:
    """Two runs: the overlaid losses on the left; the two gradient heatmaps side by side on one colour
    scale (one colour bar) above both runs' per-layer ffn.w2 gradient (the paper's Figure 3 line)."""
    left, right = st.columns([1.1, 1], gap="small")
    with left:
        layout.chart(charts.loss_chart(datas, lang, True, labels), "compare_loss", FULL, lecture=True)
    zrange = charts.shared_zrange(datas)
    with right:
        for i, (col, data) in enumerate(zip(st.columns(len(datas), gap="small"), datas)):
            fig = charts.grad_heatmap(data, lang, zrange=zrange, lecture=True)
            fig.update_layout(title={"text": labels[i]})  # which run is which, where the eye looks
            if i < len(datas) - 1:
                fig.update_traces(showscale=False)  # one scale for both: one colour bar, on the right
            with col:
                layout.chart(fig, f"compare_heatmap_{i}", HALF, lecture=True)
        fig = charts.layer_profile(datas, lang, step, True, labels)
        layout.chart(fig, "compare_profile", HALF, lecture=True)
