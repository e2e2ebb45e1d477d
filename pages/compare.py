"""Compare: two configurations side by side, trained live (same seed, same initial weights where the
shapes agree, same batches), or two stored runs picked on the Runs page."""

import streamlit as st

from ln_viz import charts
from ln_viz.config import COMPARE_PRESETS
from ln_viz.i18n import LocalizedError, t
from ln_viz.ui import compare_view, config_form, live, session
from ln_viz.ui.safe import md

lang = session.current_lang()
present = session.presenter_mode_on()
runner = session.get_runner()
runs = session.session_runs()
st.title(t("compare.title", lang))

stored = st.session_state.get("compare_runs")
if stored:  # two runs from the store: draw them, train nothing
    from ln_viz.ui.storage import get_store

    st.info(t("compare.stored", lang, a=stored[0], b=stored[1]))
    if st.button(t("compare.clear_stored", lang), key="compare_clear"):
        del st.session_state["compare_runs"]
        st.rerun()
    store = get_store()
    try:
        datas = [store.open_run(run_id) for run_id in stored]
    except LocalizedError as e:  # deleted meanwhile
        st.error(md(e.message(lang)))
        st.stop()
    compare_view.draw(datas, [f"#{run_id}" for run_id in stored], lang, done=True, presenter=present)
    st.stop()

if "_compare_notices" not in st.session_state:  # a shared link sets both forms once per session
    if st.query_params.get("cpreset") in COMPARE_PRESETS:
        st.session_state["cpreset"] = st.query_params["cpreset"]
        compare_view.apply_scenario()
    compare_view.ensure_scenario()
    notices = [n for prefix in compare_view.SIDES for n in config_form.apply_query(prefix=prefix, lang=lang)]
    st.session_state["_compare_notices"] = notices
compare_view.ensure_scenario()
for notice in [*session.link_notices(lang), *st.session_state["_compare_notices"]]:
    st.warning(md(notice))  # it quotes the link

if not present:
    compare_view.scenario_picker(lang)
    cols = st.columns(2)
    for col, prefix, title in zip(cols, compare_view.SIDES, ("compare.run_a", "compare.run_b")):
        with col.expander(t(title, lang), expanded=False):
            config_form.config_form(lang, prefix=prefix, container=st.container(), compact=True)
buttons = st.container(horizontal=True)
start = buttons.button(t("compare.start", lang), key="compare_start", type="primary")
stop = buttons.button(t("compare.stop", lang), key="compare_stop")
for prefix in compare_view.SIDES:
    config_form.write_query(prefix=prefix)
st.query_params["cpreset"] = st.session_state["cpreset"]

try:
    configs = [config_form.read_config(prefix) for prefix in compare_view.SIDES]
    st.caption(md(compare_view.differences(*configs, lang)))
    if start:
        for cfg in configs:
            cfg.validate()
        for role, cfg in zip(("compare.a", "compare.b"), configs):
            runs.start(role, cfg)
except LocalizedError as e:
    st.error(md(t("ui.invalid_config", lang, reason=e.message(lang))))
if stop:
    for role in ("compare.a", "compare.b"):
        runs.stop(role)

handles = [runner.get(runs.runs[r]) for r in ("compare.a", "compare.b") if runs.runs.get(r)]
active = any(not h.done for h in handles)


@st.fragment(run_every=live.REFRESH_S if active else None)
def compare_live() -> None:
    if len(handles) < 2:
        st.info(t("ui.not_started", lang))
        return
    views = [h.view() for h in handles]
    labels = [
        f"{t(key, lang)}: {charts.norm_label(v.config.norm_position, lang)}"
        for key, v in zip(("compare.run_a", "compare.run_b"), views)
    ]
    for label, view in zip(labels, views):
        st.markdown(f"**{label}:** {live.status_line(view, lang, runner.max_concurrent)}")
        live.run_message(view, lang)
    datas = [live.complete_data(h, v) or live.preview_data(v.config) for h, v in zip(handles, views)]
    live.thinning_notes(datas, handles, lang)
    compare_view.draw(datas, labels, lang, done=all(v.done for v in views), presenter=present)
    if all(v.done for v in views) and active:
        st.rerun(scope="app")


compare_live()
