"""The live training page: pick a configuration, press Start, watch the model learn or fail."""

import streamlit as st

from ln_viz.config import PRESETS
from ln_viz.i18n import LocalizedError, t
from ln_viz.server.runs import where_line
from ln_viz.ui import (
    config_form,
    first_visit,
    keys,
    language,
    layout,
    lecture_switch,
    lecture_view,
    links,
    live,
    nav,
    page_state,
    reattach,
    run_view,
    training,
    watch,
    watch_share,
)
from ln_viz.ui.safe import md

lang = language.current_lang()
lecture = lecture_switch.lecture_view_on()
if watch.requested():  # a watch link: that run, read-only (no form, no Start)
    for notice in [*links.link_notices(lang), *watch.ignored_notice(lang)]:
        st.warning(md(notice))  # it quotes the link
    watch.page(lang, lecture)
    st.stop()
runner = training.get_runner()
runs = training.session_runs()
reattach.keep_in_link(runs)  # its runs named in the address: a reload keeps them (issue 32)

page_state.keep(config_form.form_keys(""))  # the form survives a visit to another page
if keys.LIVE_NOTICES not in st.session_state:  # a shared link sets the form once per session
    st.session_state[keys.LIVE_NOTICES] = config_form.apply_query(prefix="", lang=lang)
for notice in [*links.link_notices(lang), *st.session_state[keys.LIVE_NOTICES]]:
    st.warning(md(notice))  # it quotes the link

config_form.config_form(lang)  # in the sidebar (hidden in the lecture view, which has its own buttons)
preset = st.session_state.get(keys.PRESET)
preset = preset if preset in PRESETS else None
running = runs.running(("live",))
# The charts show the run of the settings the form (and the lecture view's header) names, else the empty
# charts Start would fill: a preset picked after a run no longer leaves that run under the new name.
form_cfg = live.form_config()
run_id = runs.shown("live", form_cfg)
handle = runner.get(run_id) if run_id else None
shared_id = watch_share.store_id_of(handle)  # its watch link: beside Start, or in the lecture view's header
if lecture:
    start, stop = lecture_view.header(
        [config_form.read_config()],
        lang,
        (list(PRESETS), preset, "lecture.preset.", lambda name: config_form.choose_preset(name, "")),
        (("start", t("ui.start", lang)), ("stop", t("ui.stop", lang))),
        nav.COMPARE,
        running,
        watch_share.popover_for(shared_id, lang, lecture=True),
    )
else:
    layout.css(layout.PAGE_CSS)
    st.title(t("ui.app_title", lang))
    row = st.container(horizontal=True, key="run_buttons")
    start, stop = live.start_stop(lang, ("start", t("ui.start", lang)), ("stop", t("ui.stop", lang)), row, running)
    watch_share.popover_for(shared_id, lang, lecture=False)(row)
    first_visit.lead_to_compare(row, lang, runs)  # a newcomer's way to the lesson: Compare's pair (issue 32)
config_form.write_query(prefix="")

if start:
    try:
        cfg = config_form.read_config()  # Runner.start validates it, raising before anything is spawned
        st.session_state[keys.LIVE_RUN_ID] = runs.start("live", cfg)
        live.wait_first_step(runner.get(st.session_state[keys.LIVE_RUN_ID]))
        st.rerun()  # drawn again as running: Stop enabled, the charts of the new run
    except LocalizedError as e:
        st.error(md(t("ui.invalid_config", lang, reason=e.message(lang))))
if stop:
    runs.stop("live")
    st.rerun()

source = run_view.RunnerRuns([[handle]] if handle else [], [form_cfg], lambda: runs.running(("live",)),
                            runner.max_concurrent, preset, where=lambda: where_line(runner, lang))  # fmt: skip


def watch_link_stored(frame) -> None:
    live.announce(handle, frame.datas, lang)  # the run in one sentence, for a screen reader (issue 32)
    if shared_id is None and watch_share.store_id_of(handle) is not None:  # stored now: show its watch link
        st.rerun(scope="app")


run_view.draw(source, lang, lecture, "probe_step", run_view.REFRESH_S if running else None, watch_link_stored)
if lecture:
    lecture_view.takeaway(preset, lang, ended=handle is not None and handle.done, question="lecture.question.live")
