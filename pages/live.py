"""The live training page: pick a configuration, press Start, watch the model learn or fail."""

import streamlit as st

from ln_viz.i18n import LocalizedError, t
from ln_viz.ui import config_form, live, session
from ln_viz.ui.safe import md

lang = session.current_lang()
present = session.presenter_mode_on()
runner = session.get_runner()
runs = session.session_runs()

if "_live_notices" not in st.session_state:  # a shared link sets the form once per session
    st.session_state["_live_notices"] = config_form.apply_query(prefix="", lang=lang)
for notice in [*session.link_notices(lang), *st.session_state["_live_notices"]]:
    st.warning(md(notice))  # it quotes the link

st.title(t("ui.app_title", lang))
config_form.config_form(lang)
buttons = st.container(horizontal=True) if present else st.sidebar.container(horizontal=True)
start = buttons.button(t("ui.start", lang), key="start", type="primary")
stop = buttons.button(t("ui.stop", lang), key="stop")
config_form.write_query(prefix="")

if start:
    try:
        cfg = config_form.read_config().validate()
        st.session_state["live_run_id"] = runs.start("live", cfg)
        live.wait_first_step(runner.get(st.session_state["live_run_id"]))
    except LocalizedError as e:
        st.error(md(t("ui.invalid_config", lang, reason=e.message(lang))))
if stop:
    runs.stop("live")

run_id = runs.runs.get("live")
handle = runner.get(run_id) if run_id else None
active = handle is not None and not handle.done


@st.fragment(run_every=live.REFRESH_S if active else None)
def live_view() -> None:
    if handle is None:
        st.info(t("ui.not_started", lang))
        try:  # the empty charts of the run Start would begin: fixed axes, the unigram line, planned lr
            preview = live.preview_data(config_form.read_config().validate())
        except LocalizedError:
            return  # the form says what is wrong when Start is pressed
        live.draw_charts(preview, lang, done=False, presenter=present)
        return
    view = handle.view()
    st.markdown(f"**{live.status_line(view, lang, runner.max_concurrent)}**")
    live.run_message(view, lang)
    if view.status == "queued":  # its place in the line only: ten queued tabs redrawing five charts
        return  # every second would starve the server
    data = live.complete_data(handle, view) or live.preview_data(view.config)
    live.thinning_notes([data], [handle], lang)
    key = live.finished_key(handle, view, data)
    live.draw_charts(data, lang, done=view.done, presenter=present, cache_key=key)
    if view.done and active:  # it ended while this fragment ticked: a full rerun stops the timer
        st.rerun(scope="app")


live_view()
