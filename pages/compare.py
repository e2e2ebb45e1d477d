"""Compare: two configurations side by side, trained live (same seed, same initial weights where the
shapes agree, same batches), or two stored runs picked on the Runs page."""

import streamlit as st

from ln_viz.config import COMPARE_PRESETS
from ln_viz.i18n import LocalizedError, t
from ln_viz.ui import (
    compare_view,
    config_form,
    language,
    layout,
    lecture_switch,
    lecture_view,
    links,
    live,
    loss_view,
    page_state,
    stepper,
    training,
)
from ln_viz.ui.safe import md

lang = language.current_lang()
lecture = lecture_switch.lecture_view_on()
runner = training.get_runner()
runs = training.session_runs()

stored = st.session_state.get("compare_runs")
if stored:  # two runs from the store: draw them, train nothing
    from ln_viz.ui.storage import get_store

    st.title(t("compare.title", lang))
    st.info(t("compare.stored", lang, a=stored[0], b=stored[1]))
    row = st.container(horizontal=True)
    loss_view.controls(lang, row)  # the loss chart's smoothing and axis
    if row.button(t("compare.clear_stored", lang), key="compare_clear"):
        del st.session_state["compare_runs"]
        st.rerun()
    from ln_viz.ui.storage import stored_pair

    store = get_store()
    if store is None:
        st.error(t("runs.no_store", lang))
        st.stop()
    try:  # read once per run and change, through the shared cache (not on every Play tick), thinned so
        # that the two runs' probe steps line up
        datas = stored_pair(store, stored)
    except LocalizedError as e:  # deleted meanwhile
        st.error(md(e.message(lang)))
        st.stop()
    labels = compare_view.stored_labels(datas, stored, lang)
    stored_timer = stepper.timer("compare_step", None)  # Play's tick; the fragment's own reruns keep it

    @st.fragment(run_every=stored_timer)
    def stored_view() -> None:
        compare_view.draw(datas, labels, lang, done=True, ticking=stored_timer is not None)

    stored_view()
    st.stop()

page_state.keep(["cpreset", *(k for p in compare_view.SIDES for k in config_form.form_keys(p))])
if "_compare_notices" not in st.session_state:  # a shared link sets both forms once per session
    if st.query_params.get("cpreset") in COMPARE_PRESETS:
        st.session_state["cpreset"] = st.query_params["cpreset"]
        compare_view.apply_scenario()
    compare_view.ensure_scenario()
    notices = [n for prefix in compare_view.SIDES for n in config_form.apply_query(prefix=prefix, lang=lang)]
    st.session_state["_compare_notices"] = notices
compare_view.ensure_scenario()
compare_view.mark_custom()
for notice in [*links.link_notices(lang), *st.session_state["_compare_notices"]]:
    st.warning(md(notice))  # it quotes the link

buttons = (("compare_start", t("compare.start", lang)), ("compare_stop", t("compare.stop", lang)))
ROLES = ("compare.a", "compare.b")
running = runs.running(ROLES)
scenario = st.session_state["cpreset"]
scenario = scenario if scenario in COMPARE_PRESETS else None
if lecture:  # the forms stay drawn (in the hidden sidebar), so the settings are kept
    for prefix in compare_view.SIDES:
        config_form.config_form(lang, prefix=prefix, container=st.sidebar.container(), compact=True)
    configs = [config_form.read_config(prefix) for prefix in compare_view.SIDES]
    choices = (list(COMPARE_PRESETS), scenario, "lecture.scenario.", compare_view.pick_scenario)
    start, stop = lecture_view.header(configs, lang, choices, buttons, ("pages/live.py", "nav.live"), running)
else:
    layout.css(layout.PAGE_CSS)
    st.title(t("compare.title", lang))
    row = st.container(horizontal=True, vertical_alignment="bottom")
    compare_view.scenario_picker(lang, row)
    start, stop = live.start_stop(lang, *buttons, row=row, running=running)
    cols = st.columns(2)
    for col, prefix, title in zip(cols, compare_view.SIDES, ("compare.run_a", "compare.run_b")):
        with col.expander(t(title, lang), expanded=False):
            config_form.config_form(lang, prefix=prefix, container=st.container(), compact=True)
    configs = [config_form.read_config(prefix) for prefix in compare_view.SIDES]
compare_view.write_query()

try:
    if not lecture:
        st.caption(md(compare_view.scenario_caption(lang) + " " + compare_view.differences(*configs, lang)))
    if start:
        for cfg in configs:  # both, before either starts (Runner.start checks each one again)
            cfg.validate()
        for role, cfg in zip(ROLES, configs):
            runs.start(role, cfg)
        st.rerun()  # drawn again as running: Stop enabled, the charts of the new runs
except LocalizedError as e:
    st.error(md(t("ui.invalid_config", lang, reason=e.message(lang))))
if stop:
    for role in ROLES:
        runs.stop(role)
    st.rerun()

# The runs of the settings both forms (and the header) name, else the empty charts Start would fill.
shown = [runs.shown(role, cfg) for role, cfg in zip(ROLES, configs)]
handles = [runner.get(run_id) for run_id in shown] if all(shown) else []
timer = stepper.timer("compare_step", live.REFRESH_S if running else None)


@st.fragment(run_every=timer)
def compare_live() -> None:
    ticking = not running and timer is not None
    if len(handles) < 2 or None in handles:  # before Start: the empty charts of the runs Start would begin
        try:
            datas = [live.preview_data(cfg.validate()) for cfg in configs]
        except LocalizedError:
            return  # the error above says what is wrong
        views, lines = [], [t("ui.other_run_training" if running else "ui.not_started", lang)]
    else:
        views = [h.view() for h in handles]
        datas = [live.complete_data(h, v) or live.preview_data(v.config) for h, v in zip(handles, views)]
        lines = [
            f"**{t(key, lang)}:** {live.status_line(v, lang, runner.max_concurrent)}"
            for key, v in zip(("compare.run_a", "compare.run_b"), views)
        ]
    labels = compare_view.run_labels([d.info.config for d in datas], lang)
    if len(set(labels)) < len(labels):  # the same settings twice: name the sides
        labels = [f"{t(k, lang)}: {n}" for k, n in zip(("compare.run_a", "compare.run_b"), labels)]
    done = bool(views) and all(v.done for v in views)
    if lecture:
        lines = live.verdict_lines(views, labels, lang) if done else [*lines, *live.message_lines(views, lang)]
        step = lecture_view.status_and_steps(
            lines, compare_view.common_steps(datas), "compare_step", lang, done, ticking
        )
        lesson = lecture_view.lesson_chart(scenario, [d.info.config for d in datas])
        lecture_view.draw_compare(datas, labels, lang, step, lesson)
    else:
        st.markdown("  \n".join(lines))

        def notes() -> None:
            for view in views:
                live.run_message(view, lang)
            if views:
                live.thinning_notes(datas, handles, lang)

        compare_view.draw(datas, labels, lang, done=done, ticking=ticking, notes=notes)
    if running and not runs.running(ROLES):  # they ended while this fragment ticked: a full rerun
        st.rerun(scope="app")  # stops the timer, disables Stop, reveals the takeaway


compare_live()
if lecture:
    lecture_view.takeaway(scenario, lang, ended=len(handles) == 2 and all(h.done for h in handles))
