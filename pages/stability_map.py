"""Stability map: where in lr x warm-up x depth each norm position trains, as a picture of regions
instead of one run (Xiong et al. 2020, Fig. 2; Nguyen & Salazar 2019; Wortsman et al. 2023)."""

import math

import streamlit as st

from ln_viz.corpus import load_corpus
from ln_viz.i18n import LocalizedError, t
from ln_viz.server.sweeps import cap_error, error_text, sweep_caps
from ln_viz.sweep import charts as sweep_charts
from ln_viz.sweep import curve_charts
from ln_viz.sweep.labels import cell_title, lecture_takeaway, lecture_title
from ln_viz.sweep.results import curves
from ln_viz.sweep.spec import duration_text, estimate
from ln_viz.sweep.storage import results_frame
from ln_viz.ui import keys, language, layout, lecture_switch, lecture_view, links, nav, stability_form
from ln_viz.ui import stability_view as view
from ln_viz.ui.safe import md
from ln_viz.urlstate import live_link, live_link_html

lang = language.current_lang()
lecture = lecture_switch.lecture_view_on()
svc = view.service()

if keys.SM_SPEC not in st.session_state:  # a shared link sets the form once per session
    st.session_state[keys.SM_SPEC], st.session_state[keys.SM_BAD] = view.read_spec_from_url()
for bad in st.session_state[keys.SM_BAD]:  # each says why, as Live's do; it quotes the link
    st.warning(md(t("ui.url_ignored", lang, param=bad.param, value=bad.value, reason=bad.reason.message(lang))))
for notice in links.link_notices(lang):
    st.warning(md(notice))  # it quotes the link

if lecture:  # one screen: the header strip, the map and its curves sized from the viewport, the takeaway
    lecture_view.page_header(
        lecture_title(st.session_state[keys.SM_SPEC], lang), lang, nav.LIVE, here=nav.STABILITY_MAP
    )
    layout.css(view.LECTURE_CSS)
else:
    layout.css(view.PHONE_CSS)
    st.title(t("sweep.ui.title", lang))
    st.caption(t("sweep.ui.intro", lang))

if lecture:  # the settings stay as they are: the lecture view shows the map, Run and Stop
    candidate, executor, address = st.session_state[keys.SM_SPEC], "local", None
else:
    with st.expander(t("sweep.ui.settings", lang), expanded=False):
        candidate, executor, address = stability_form.settings_form(lang)
try:
    spec = candidate.validate()
    st.session_state[keys.SM_SPEC] = spec
except LocalizedError as e:
    st.error(e.message(lang))
    spec = st.session_state[keys.SM_SPEC]
view.write_spec_to_url(spec)

work = estimate(spec, workers=None)
me = view.session_key()
refused = cap_error(spec, work, sweep_caps())  # a visitor's sweep within the classroom caps
bar = st.container(horizontal=True, vertical_alignment="center")
run = bar.button(t("sweep.ui.run", lang), type="primary", key="sm_run", disabled=svc.busy() or refused is not None)
stop = bar.button(t("sweep.ui.stop", lang), key="sm_stop", disabled=not svc.busy() or not svc.owned_by(me))
wait = duration_text(work.seconds, lang)
bar.caption(t("sweep.ui.estimate", lang, runs=work.runs, steps=work.steps, time=wait, cores=work.workers))
if svc.busy() and not svc.owned_by(me):
    bar.caption(t("sweep.ui.not_owner", lang))
if refused is not None:
    st.warning(refused.message(lang))
try:
    started = run and svc.start(spec, executor, address, owner=me)
except LocalizedError as e:  # above the caps (a race with the form), or a store that cannot be opened
    st.error(e.message(lang))
    started = None
if run and started is False:
    st.warning(t("sweep.ui.busy", lang))
if started or stop:
    if stop:
        svc.stop(me)
    st.rerun()
if svc.error is not None and svc.owned_by(me):  # another visitor's failed sweep is not this page's (hostile L14)
    st.error(error_text(svc.error, lang))

corpus = load_corpus(spec.base.corpus, None, spec.base.seq_len)
default_init = math.log(corpus.vocab_size)


@st.fragment(run_every=1.0 if svc.busy() else None)
def show_map() -> None:
    """The map, redrawn every second while the sweep trains; a click on a cell shows its curve."""
    results, progress, shipped, problem = view.map_results(spec)
    if problem is not None:  # the store refused cells (they are kept in memory) or cannot be read
        st.error(problem.message(lang))
    if progress is not None:
        eta = duration_text(progress.eta_s, lang) if progress.eta_s is not None else "…"
        done, total, running = progress.done, progress.total, progress.running
        st.progress(
            progress.fraction, text=t("sweep.ui.progress", lang, done=done, total=total, running=running, eta=eta)
        )
    elif st.session_state.get(keys.SM_WAS_BUSY):
        st.session_state[keys.SM_WAS_BUSY] = False
        st.rerun(scope="app")  # the sweep ended: the buttons change
    st.session_state[keys.SM_WAS_BUSY] = progress is not None
    if shipped:
        st.caption(t("sweep.ui.shipped", lang, date=view.shipped_for(spec).get("measured", "?")))
    elif not results and progress is None:
        st.info(t("sweep.ui.empty", lang))
    zrange = sweep_charts.colour_range(results, corpus.floor(spec.base.seq_len), default_init, corpus.unigram_entropy)
    # the lecture view: map and curves side by side, one screen; else the map full width, curves and a cell below
    top = st.columns([1.25, 1]) if lecture else [st.container()]
    picked = st.session_state.get(keys.SM_CELL)  # set by a click's callback, before this rerun
    cell = picked or (view.example_cell(results) if lecture else None)  # the lecture view's left column full
    with top[0]:
        pairs = (("lr", spec.lr), ("depth", spec.depth))
        axes = [x for x, axis in pairs if len(axis) > 1 or (x == "lr" and len(spec.depth) == 1)]
        for x_axis in axes:
            key, draw = keys.SM_MAP + x_axis, sweep_charts.stability_heatmap
            fig = draw(spec, results, zrange, lang, lecture, x_axis, picked=cell)
            box = view.MAP_BOX if len(axes) == 1 else view.HALF_BOX
            if lecture:
                view.chart_box(fig, key, box, lecture, on_select=view.pick_on_select(key))
            else:  # the phone's map: its panels stacked
                phone = draw(spec, results, zrange, lang, False, x_axis, stacked=True, picked=cell)
                view.wide_or_narrow(fig, phone, key, pick=True)
    below = top[1] if lecture else st.columns(2)
    with below if lecture else below[0]:
        if len(spec.lr) > 1:
            lines = curves(results, default_init)
            height = 606 if lecture else 600  # the lecture view: 848 px at 1920x1080, its FULL box
            fig = curve_charts.sensitivity_chart(lines, corpus.unigram_entropy, lang, lecture, height=height)
            view.chart_box(fig, "sm_sens", view.SENS_BOX, lecture)
    with below[1] if not lecture else top[0]:
        _cell_detail(results, cell, hint=not picked)
    if not lecture:
        st.caption(t("sweep.ui.how_to_read", lang))


def _cell_detail(results, cell: str | None, hint: bool) -> None:
    by_fp = {r.fingerprint: r for r in results}
    r = by_fp.get(cell or "")
    if r is None:
        if results:
            st.caption(t("sweep.ui.click_hint", lang))
        return
    title = cell_title(r, lang)
    fig = curve_charts.cell_curve_chart(r.curve, title, corpus.unigram_entropy, lang, lecture, r.norm_position)
    view.chart_box(fig, "sm_cell_chart", view.CELL_BOX, lecture)
    row = st.container(horizontal=True)
    link = live_link_html(live_link(r, lang, lecture), t("sweep.ui.open_live", lang))
    row.markdown(link, unsafe_allow_html=True)  # our own URL and label, escaped
    if hint:  # the lecture view's example cell: the hint beside its link, in the height a clicked cell takes
        row.caption(t("sweep.ui.click_hint", lang))
    if not lecture:
        csv = results_frame(results).to_csv(index=False, float_format="%.6g")
        row.download_button(t("sweep.ui.download", lang), csv, "stability_map.csv", "text/csv", key="sm_download")


show_map()
if lecture:
    lecture_view.sentence(lecture_takeaway(spec), lang)
