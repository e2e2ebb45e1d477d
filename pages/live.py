"""The live training page: pick a configuration, press Start, watch the model learn or fail."""

import streamlit as st

from ln_viz import charts
from ln_viz.config import PRESETS
from ln_viz.i18n import LocalizedError, t
from ln_viz.ui import (
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
    watch,
    watch_share,
)
from ln_viz.ui.safe import md

lang = language.current_lang()
lecture = lecture_switch.lecture_view_on()
if watch.requested():  # a watch link: that run, read-only (no form, no Start)
    for notice in links.link_notices(lang):
        st.warning(md(notice))
    watch.page(lang, lecture)
    st.stop()
runner = training.get_runner()
runs = training.session_runs()

page_state.keep(config_form.form_keys(""))  # the form survives a visit to another page
if "_live_notices" not in st.session_state:  # a shared link sets the form once per session
    st.session_state["_live_notices"] = config_form.apply_query(prefix="", lang=lang)
for notice in [*links.link_notices(lang), *st.session_state["_live_notices"]]:
    st.warning(md(notice))  # it quotes the link

config_form.config_form(lang)  # in the sidebar (hidden in the lecture view, which has its own buttons)
preset = st.session_state.get("preset")
preset = preset if preset in PRESETS else None
running = runs.running(("live",))
# The charts show the run of the settings the form (and the lecture view's header) names, else the empty
# charts Start would fill: a preset picked after a run no longer leaves that run under the new name.
run_id = runs.shown("live", live.form_config())
handle = runner.get(run_id) if run_id else None
shared_id = watch_share.store_id_of(handle)  # its watch link: beside Start, or in the lecture view's header
if lecture:
    start, stop = lecture_view.header(
        [config_form.read_config()],
        lang,
        (list(PRESETS), preset, "lecture.preset.", lambda name: config_form.choose_preset(name, "")),
        (("start", t("ui.start", lang)), ("stop", t("ui.stop", lang))),
        ("pages/compare.py", "nav.compare"),
        running,
        watch_share.popover_for(shared_id, lang, lecture=True),
    )
else:
    layout.css(layout.PAGE_CSS)
    st.title(t("ui.app_title", lang))
    row = st.container(horizontal=True, key="run_buttons")
    start, stop = live.start_stop(lang, ("start", t("ui.start", lang)), ("stop", t("ui.stop", lang)), row, running)
    watch_share.popover_for(shared_id, lang, lecture=False)(row)
config_form.write_query(prefix="")

if start:
    try:
        cfg = config_form.read_config()  # Runner.start validates it, raising before anything is spawned
        st.session_state["live_run_id"] = runs.start("live", cfg)
        live.wait_first_step(runner.get(st.session_state["live_run_id"]))
        st.rerun()  # drawn again as running: Stop enabled, the charts of the new run
    except LocalizedError as e:
        st.error(md(t("ui.invalid_config", lang, reason=e.message(lang))))
if stop:
    runs.stop("live")
    st.rerun()

timer = stepper.timer("probe_step", live.REFRESH_S if running else None)


@st.fragment(run_every=timer)
def live_view() -> None:
    ticking = not running and timer is not None
    view = handle.view() if handle is not None else None
    if view is None:
        try:  # the empty charts of the run Start would begin: fixed axes, the unigram line, planned lr
            data = live.preview_data(config_form.read_config().validate())
        except LocalizedError:
            st.info(t("ui.not_started", lang))
            return  # the form says what is wrong when Start is pressed
        status, key = t("ui.other_run_training" if running else "ui.not_started", lang), None
    else:
        status = live.status_line(view, lang, runner.max_concurrent)
        if view.status == "queued":  # its place in the line only: ten queued tabs redrawing six charts
            st.markdown(f"**{status}**")
            return  # every second would starve the server
        data = live.complete_data(handle, view) or live.preview_data(view.config)
        key = live.finished_key(handle, view, data)
    done = view is not None and view.done
    if lecture:
        figure = live.figures(data, lang, done, True, key, loss_view.current())  # the controls: not in this view
        lines = [f"**{status}**", *live.message_lines([view] if view else [], lang)]
        if done:  # how it came out, in one line that names the run
            lines = live.verdict_lines([view], [charts.norm_label(view.config.norm_position, lang)], lang)
        step = lecture_view.status_and_steps(lines, data.probe_steps, "probe_step", lang, done, ticking)
        mark = lecture_view.step_mark(step, data.probe_steps, done)
        lecture_view.draw_live(figure, step, lecture_view.lesson_chart(preset, [data.info.config]), mark)
    else:
        with st.container(key="live_status"):  # as tall as the info box before Start: no jump
            if view is None:
                st.info(status)
            else:
                st.markdown(f"**{status}**")
        st.caption(training.where_line(runner, lang))

        def notes() -> None:
            if view is not None:
                live.run_message(view, lang)
                live.thinning_notes([data], [handle], lang)

        live.draw_charts(data, lang, done=done, cache_key=key, ticking=ticking, notes=notes)
    if running and not runs.running(("live",)):  # it ended while this fragment ticked: a full rerun
        st.rerun(scope="app")  # stops the timer, disables Stop, reveals the takeaway
    if shared_id is None and watch_share.store_id_of(handle) is not None:  # stored now: show its watch link
        st.rerun(scope="app")


live_view()
if lecture:
    lecture_view.takeaway(preset, lang, ended=handle is not None and handle.done, question="lecture.question.live")
