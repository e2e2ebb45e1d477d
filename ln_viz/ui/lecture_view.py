"""The lecture view (`?present=1`) of Live and Compare: one 16:9 screen, no scrolling, no sidebar.

A header strip says what is running in words and numbers; under it the scenario buttons, Start and
Stop; then the loss large on the left, the gradient heatmap(s) and the per-layer profile on the right
(for a scenario whose lesson is an instability probe, that probe's chart in the heatmaps' place), and
one takeaway sentence at the bottom. Chart heights come from the viewport (CSS on the boxes of
ln_viz.ui.layout), so the same page fits a 1920x1080 projector and a 1280x720 laptop."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st

from ln_viz import charts
from ln_viz.config import RunConfig
from ln_viz.i18n import t
from ln_viz.snapshot import RunData
from ln_viz.ui import keys, language, layout, lecture_switch, loss_view, nav, stepper
from ln_viz.ui.layout import FULL, HALF, LOWER, UPPER
from ln_viz.words import describe

# Plotly's fonts are in px and the server cannot know the screen, so the view is laid out for a
# 1920x1080 screen and each part (charts, header, step row, takeaway) zoomed to the screen it is on
# (1280x720: 2/3; --ln-zoom): a laptop shows the projector's picture, not a crowded one. A part
# zoomed by z is made 1/z as wide and tall, so it still fills its place (a chart is scaled, not zoomed:
# `layout.scaled_charts`). --ln-chrome: what is not a
# chart (header strip, buttons, status and step row, takeaway, gaps), measured in Chromium.
SCREEN_CSS = f"""
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="stHeader"] {{display: none;}}
:root {{--ln-zoom: 1; --ln-chrome: calc(252px * var(--ln-zoom));}}
@media (max-width: 1700px), (max-height: 960px) {{ :root {{--ln-zoom: 0.85;}} }}
@media (max-width: 1500px), (max-height: 850px) {{ :root {{--ln-zoom: 0.75;}} }}
@media (max-width: 1350px), (max-height: 760px) {{ :root {{--ln-zoom: 0.6667;}} }}
[data-testid="stMainBlockContainer"] {{padding: 0.4rem 1.2rem 0 1.2rem !important; max-width: none !important;}}
[data-testid="stMain"] [data-testid="stVerticalBlock"] {{gap: 0.35rem;}}
[class*="st-key-{FULL}"] {{height: calc(100vh - var(--ln-chrome)); flex: 0 0 auto !important; overflow: hidden;}}
[class*="st-key-{HALF}"] {{height: calc((100vh - var(--ln-chrome)) / 2 - 0.2rem); flex: 0 0 auto !important;
    overflow: hidden;}}
[class*="st-key-{UPPER}"] {{height: calc((100vh - var(--ln-chrome)) * 0.44 - 0.2rem); flex: 0 0 auto !important;
    overflow: hidden;}}
[class*="st-key-{LOWER}"] {{height: calc((100vh - var(--ln-chrome)) * 0.56 - 0.2rem); flex: 0 0 auto !important;
    overflow: hidden;}}
{"".join(layout.scaled_charts(box) for box in (FULL, UPPER, LOWER, HALF))}
.st-key-lecture_top, .st-key-lecture_buttons, .st-key-lecture_steps, .st-key-lecture_takeaway {{zoom: var(--ln-zoom);
    width: calc(100% / var(--ln-zoom)) !important;}}
.st-key-lecture_title p {{font-size: 34px; font-weight: 700; line-height: 1.2; margin: 0;}}
.st-key-lecture_steps .st-key-probe_step, .st-key-lecture_steps .st-key-probe_step_idle,
.st-key-lecture_steps .st-key-compare_step, .st-key-lecture_steps .st-key-compare_step_idle {{flex: 0 0 40%;}}
.st-key-lecture_steps .stButton {{flex: 0 0 auto;}}
.st-key-lecture_status {{height: 64px !important; flex: 0 0 64px !important; overflow-y: auto;}}
.st-key-lecture_status p {{font-size: 24px; line-height: 1.3; margin: 0;}}
.st-key-lecture_takeaway p {{font-size: 28px; line-height: 1.25; margin: 0;}}
/* the back row (issue 21 N19): Start, Stop, Play, the status and the scenario buttons 24 px; the scenario
   buttons' side padding a third of Streamlit's and the box of the later ones 240 px wide, so that Live's
   seven presets (in English the widest), the box, Start and Stop keep one row at 1920 px */
.st-key-lecture_buttons p, .st-key-lecture_more input, .st-key-lecture_more span {{font-size: 24px;}}
.st-key-lecture_choice button {{padding-left: 0.3rem; padding-right: 0.3rem;}}
.st-key-lecture_buttons [class*="st-key-start"] p, .st-key-lecture_buttons [class*="st-key-stop"] p,
.st-key-lecture_buttons [class*="st-key-compare_st"] p, .st-key-lecture_steps .stButton p {{font-size: 24px;}}
/* a phone (UX round 4 L8): the scenario buttons wrap onto more rows (their group scrolled sideways, cut at
   "DeepNorm"), and the status takes the whole width and its own height (cut after one line of its box) */
@media (max-width: 640px) {{
  .st-key-lecture_choice, .st-key-lecture_choice [data-testid="stButtonGroup"] {{max-width: 100%;}}
  .st-key-lecture_choice [data-testid="stButtonGroup"] > div:last-child {{flex-wrap: wrap; overflow: visible;}}
  .st-key-lecture_steps > div:has(.st-key-lecture_status) {{flex: 1 1 100% !important;}}
  .st-key-lecture_status {{height: auto !important; flex: 0 0 auto !important; overflow: visible;}}
}}
"""

# The scenarios and presets the app had before the instability lab (issue 19): one click each, as
# buttons. Every later one is in the compact box beside them: 16 presets as buttons were 3,300 px wide,
# and already the 12 of issue 19's first step ran off a 1920 px screen and pushed Start to a second row.
CLASSIC = frozenset(
    {"pre-ln-no-warmup", "post-ln-no-warmup", "post-ln-warmup", "deep-pre-ln", "deep-post-ln", "deepnorm",
     "no-norm", "post-vs-pre", "warmup-vs-none", "deep-post-vs-pre", "deepnorm-rescue"}
)  # fmt: skip


def _pick(key: str, apply: Callable[[str], None]) -> None:
    name = st.session_state[key]
    if name is not None:  # a click on the chosen one deselects it: keep it
        apply(name)


def _switch_lang(lang: str) -> None:
    st.session_state[keys.LANG] = lang


def _top_row(
    text: str, lang: str, other_page: nav.Page, extra: Callable[[Any], None] | None = None, here: nav.Page | None = None
) -> None:
    row = st.container(horizontal=True, vertical_alignment="center", key="lecture_top")
    with row.container(key="lecture_title", width="stretch"):
        st.markdown(text)
    if extra is not None:  # the run's watch link (ln_viz.ui.watch_share), before the page's own buttons
        extra(row)
    # the other page, then every other page with a lecture view but the one shown (`here`; UX round 4, M4)
    for page in dict.fromkeys(p for p in (other_page, nav.INIT_LAB, nav.STABILITY_MAP) if p != here and p.exists()):
        row.page_link(page.file, label=t(page.title_key, lang), width="content")
    other = "ko" if lang == "en" else "en"
    row.button(language.LANG_NAMES[other], key="lecture_lang", on_click=_switch_lang, args=(other,))
    row.button(t("lecture.exit", lang), key="lecture_exit", on_click=lecture_switch.set_lecture_view, args=(False,))


def header(
    cfgs: Sequence[RunConfig],
    lang: str,
    choices: tuple[Sequence[str], str | None, str, Callable[[str], None]],
    buttons: tuple[tuple[str, str], tuple[str, str]],
    other_page: nav.Page,
    running: bool = True,
    extra: Callable[[Any], None] | None = None,
    after: Callable[[Any], None] | None = None,
) -> tuple[bool, bool]:
    """The header strip and the button row; returns (Start clicked, Stop clicked). `choices`: the
    scenario names, the current one (None: the user's own settings), the catalog prefix of their
    names and what a pick does; `buttons`: (key, label) of Start and of Stop; `other_page`: the other
    page with a lecture view (ln_viz.ui.nav); `running`: a run of the page trains (Stop
    is enabled only then); `extra(row)` draws more into the top row (the run's watch link), `after(row)` into the
    button row after Stop (Compare's pack and video, where the row has room and the title keeps its line)."""
    layout.css(SCREEN_CSS)
    _top_row(describe(cfgs, lang), lang, other_page, extra)
    names, current, prefix, apply = choices
    row = st.container(horizontal=True, vertical_alignment="center", key="lecture_buttons")
    _choice_widgets(row, [n for n in names if n in CLASSIC], [n for n in names if n not in CLASSIC], current,
                    lambda n: t(prefix + n, lang), apply, lang)  # fmt: skip
    (start_key, start_label), (stop_key, stop_label) = buttons
    start = row.button(start_label, key=start_key, type="primary")
    stop = row.button(stop_label, key=stop_key, disabled=not running)
    if after is not None:
        after(row)
    return start, stop


def _choice_widgets(row, buttons: list[str], more: list[str], current: str | None, label, apply, lang: str) -> None:
    """The CLASSIC names as one row of buttons, the others in a compact box after them (its placeholder
    names their years); the current choice is shown in the one that holds it, the other shows none."""
    st.session_state[keys.LECTURE_CHOICE] = current if current in buttons else None
    st.session_state[keys.LECTURE_MORE] = current if current in more else None
    shared = {"format_func": label, "on_change": _pick, "label_visibility": "collapsed"}
    with row:
        st.segmented_control(
            t("lecture.scenarios", lang), buttons, key=keys.LECTURE_CHOICE, args=(keys.LECTURE_CHOICE, apply), **shared
        )
        if more:
            st.selectbox(
                t("lecture.more", lang),
                more,
                key=keys.LECTURE_MORE,
                args=(keys.LECTURE_MORE, apply),
                placeholder=t("lecture.more", lang),
                **shared,
                width=240,  # a long name is cut short in the box; its list shows it whole
            )


def page_header(
    text: str, lang: str, other_page: nav.Page, extra: Callable[[Any], None] | None = None, here: nav.Page | None = None
) -> None:
    """The header strip alone (a page without scenario buttons: the stability map, the Init lab, a watched
    run): `text` in large type, the links to `other_page` and the other lecture pages but `here` (the page
    shown), the language and leave buttons (`extra(row)` draws more into that row); the screen's rules
    (SCREEN_CSS) with it."""
    layout.css(SCREEN_CSS)
    _top_row(text, lang, other_page, extra, here)


def takeaway(name: str | None, lang: str, ended: bool, question: str | None = None) -> None:
    """The scenario's one sentence at the bottom once its runs have ended (`ended`); before, its question
    (the catalog key `question`, else `lecture.question.<name>`), so the room predicts before it sees.
    Nothing for the user's own settings (`name` None)."""
    if name is None:
        sentence(None, lang)
    else:
        sentence(f"lecture.takeaway.{name}" if ended else question or f"lecture.question.{name}", lang)


def sentence(key: str | None, lang: str) -> None:
    """The one sentence at the bottom of the screen (the catalog key `key`; none: an empty line that keeps
    its height)."""
    with st.container(key="lecture_takeaway"):
        st.markdown(t(key, lang) if key else "&nbsp;")


def status_and_steps(lines: Sequence[str], steps: Sequence[int], key: str, lang: str, done: bool, ticking: bool):
    """The run's status (and its end message) beside the one step control; returns the step to show."""
    row = st.container(horizontal=True, vertical_alignment="center", key="lecture_steps")
    with row.container(key="lecture_status", width="stretch"):
        st.markdown("  \n".join(lines))
    return stepper.step_control(steps, key, lang, done, ticking, row=row)


def _marked(fig: Any, mark: int | None) -> Any:
    return fig if mark is None else charts.step_line(fig, mark, lecture=True)


def draw_live(figure: Callable, step: int | None, lesson: str | None = None, mark: int | None = None) -> None:
    """One run: the loss on the left; the gradient heatmap (or the `lesson` chart, ln_viz.lessons.lesson_chart) above
    the per-layer profile and the distribution on the right (`figure(name, step=None)` from
    ln_viz.ui.live.figures); `mark` (run_frames.step_mark): the step line on the loss and the heatmap."""
    left, right = st.columns([1, 1.15], gap="small")
    with left:
        layout.chart(_marked(figure("loss_chart"), mark), "loss_chart", FULL, lecture=True)
    with right:
        top = lesson or "grad_heatmap"
        layout.chart(_marked(figure(top), mark), top, HALF, lecture=True)
        for col, name in zip(st.columns([1.25, 1], gap="small"), ("layer_profile", "act_dist")):
            with col:
                layout.chart(figure(name, step), name, HALF, lecture=True)


_COMPARED_LESSONS = {"attn_logit": charts.attn_logit_chart, "log_z": charts.log_z_chart,
                     "angular_update": charts.angular_update_chart}  # fmt: skip


def draw_compare(
    datas: Sequence[RunData],
    labels: Sequence[str],
    lang: str,
    step: int | None,
    lesson: str | None = None,
    seeds: tuple[Sequence[Sequence[RunData]], Sequence[str]] | None = None,
    mark: int | None = None,
    titles: Sequence[str] | None = None,
) -> None:
    """Two runs: the overlaid losses on the left; the two gradient heatmaps side by side on one colour
    scale (one colour bar), or both runs on the `lesson` chart (ln_viz.lessons.lesson_chart), above both runs'
    per-layer ffn.w2 gradient (the paper's Figure 3 line). `seeds`: each side's runs and their names, for
    the loss chart's means and bands (the other charts show `datas`, each side's median seed); `mark`
    (run_frames.step_mark): the step line on the losses, the heatmaps or the lesson chart; `titles`: the
    heatmaps' (default `labels`; stored runs: "Run 2: Olmo2 · reordered", their number first, where a half
    width cuts a long name's end)."""
    left, right = st.columns([1.1, 1], gap="small")
    with left:
        view = loss_view.current().kwargs()  # no room for its controls: the session's, or the link's
        if seeds is not None:
            fig = charts.seed_loss_chart(seeds[0], lang, True, seeds[1], **view)
        else:
            fig = charts.loss_chart(datas, lang, True, labels, **view)
        layout.chart(_marked(fig, mark), "compare_loss", FULL, lecture=True)
    with right:
        if lesson:  # above the profile, which gets the larger share (LOWER): the paper's Figure 3 for a room
            fig = _COMPARED_LESSONS[lesson](datas, lang, True, labels=labels)
            layout.chart(_marked(fig, mark), "compare_" + lesson, UPPER, lecture=True)
        else:
            _heatmaps(datas, titles or labels, lang, mark)
        # the gradient panel alone: the paper's Figure 3 is the half of the story a room must read (issue 21
        # N21: with the residual std under it, it had 111 px at 1080)
        fig = charts.layer_profile(datas, lang, step, True, labels, std=False)
        layout.chart(fig, "compare_profile", LOWER, lecture=True)


def _heatmaps(datas: Sequence[RunData], labels: Sequence[str], lang: str, mark: int | None) -> None:
    zrange = charts.shared_zrange(datas)
    for i, (col, data) in enumerate(zip(st.columns(len(datas), gap="small"), datas)):
        # at its box's height: its colour bar keeps as many labels as fit (at 24 px, two touched)
        fig = charts.grad_heatmap(data, lang, zrange=zrange, lecture=True, height=layout.NOMINAL_PX[UPPER])
        fig.update_layout(title={"text": labels[i]})  # which run is which, where the eye looks
        # "layer", as the lecture view's other charts: "layer (1 = input side)" wrapped in two at half width (UX
        # round 4 L5); the profile under them says which end is the input
        fig.update_yaxes(title={"text": t("chart.layer_axis_lecture", lang)})
        if i < len(datas) - 1:
            fig.update_traces(showscale=False)  # one scale for both: one colour bar, on the right
        with col:
            layout.chart(_marked(fig, mark), f"compare_heatmap_{i}", UPPER, lecture=True)
