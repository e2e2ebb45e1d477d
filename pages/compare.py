"""Compare: two configurations side by side, trained live (same seed, same initial weights where the
shapes agree, same batches), or two stored runs picked on the Runs page."""

import streamlit as st

from ln_viz.config import COMPARE_PRESETS
from ln_viz.i18n import LocalizedError, t
from ln_viz.sweep.compare import takeaway
from ln_viz.ui import (
    compare_seeds,
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

form_keys = (k for p in compare_view.SIDES for k in config_form.form_keys(p))
page_state.keep(["cpreset", compare_seeds.SEEDS_KEY, *form_keys])
if "_compare_notices" not in st.session_state:  # a shared link sets both forms once per session
    if st.query_params.get("cpreset") in COMPARE_PRESETS:
        st.session_state["cpreset"] = st.query_params["cpreset"]
        compare_view.apply_scenario()
    compare_view.ensure_scenario()
    notices = [n for prefix in compare_view.SIDES for n in config_form.apply_query(prefix=prefix, lang=lang)]
    notices += compare_seeds.apply_query(lang)
    st.session_state["_compare_notices"] = notices
compare_view.ensure_scenario()
compare_view.mark_custom()
for notice in [*links.link_notices(lang), *st.session_state["_compare_notices"]]:
    st.warning(md(notice))  # it quotes the link

buttons = (("compare_start", t("compare.start", lang)), ("compare_stop", t("compare.stop", lang)))
n_seeds = compare_seeds.seed_count()
running = runs.running(compare_seeds.ALL_ROLES)
scenario = st.session_state["cpreset"]
scenario = scenario if scenario in COMPARE_PRESETS else None
if lecture:  # the forms stay drawn (in the hidden sidebar), so the settings are kept
    for prefix in compare_view.SIDES:
        config_form.config_form(lang, prefix=prefix, container=st.sidebar.container(), compact=True)
    compare_seeds.seeds_input(lang, st.sidebar)  # kept (and read from the link) like the forms
    configs = [config_form.read_config(prefix) for prefix in compare_view.SIDES]
    choices = (list(COMPARE_PRESETS), scenario, "lecture.scenario.", compare_view.pick_scenario)
    start, stop = lecture_view.header(configs, lang, choices, buttons, ("pages/live.py", "nav.live"), running)
else:
    layout.css(layout.PAGE_CSS)
    st.title(t("compare.title", lang))
    row = st.container(horizontal=True, vertical_alignment="bottom")
    compare_view.scenario_picker(lang, row)
    compare_seeds.seeds_input(lang, row)
    start, stop = live.start_stop(lang, *buttons, row=row, running=running)
    cols = st.columns(2)
    for col, prefix, title in zip(cols, compare_view.SIDES, ("compare.run_a", "compare.run_b")):
        with col.expander(t(title, lang), expanded=False):
            config_form.config_form(lang, prefix=prefix, container=st.container(), compact=True)
    configs = [config_form.read_config(prefix) for prefix in compare_view.SIDES]
compare_view.write_query()
compare_seeds.write_query()

try:
    if not lecture:
        st.caption(md(compare_view.scenario_caption(lang) + " " + compare_view.differences(*configs, lang)))
    if start:
        compare_seeds.start(runs, configs, n_seeds)  # every run checked before any starts
        st.rerun()  # drawn again as running: Stop enabled, the charts of the new runs
except LocalizedError as e:
    st.error(md(t("ui.invalid_config", lang, reason=e.message(lang))))
if stop:
    for role in compare_seeds.ALL_ROLES:
        runs.stop(role)
    st.rerun()

# The runs of the settings both forms (and the header) name, else the empty charts Start would fill.
side_cfgs = [compare_seeds.seed_configs(cfg, n_seeds) for cfg in configs]
shown = [[runs.shown(r, c) for r, c in zip(rs, cs)] for rs, cs in zip(compare_seeds.roles(n_seeds), side_cfgs)]
handles = [[runner.get(i) for i in side] for side in shown] if all(all(side) for side in shown) else []
handles = handles if all(h is not None for side in handles for h in side) else []
timer = stepper.timer("compare_step", live.REFRESH_S if running else None)


@st.fragment(run_every=timer)
def compare_live() -> None:
    ticking = not running and timer is not None
    if not handles:  # before Start: the empty charts of the runs Start would begin
        try:
            datas = [live.preview_data(cfg.validate()) for cfg in configs]
        except LocalizedError:
            return  # the error above says what is wrong
        views, groups, picks = [], [[d] for d in datas], [0, 0]
        lines = [t("ui.other_run_training" if running else "ui.not_started", lang)]
    else:  # each side's runs seed by seed, and its median seed (the only one, with one)
        views, groups, picks = compare_seeds.side_runs(handles)
        datas = [g[m] for g, m in zip(groups, picks)]
        lines = compare_seeds.status_lines(views, lang, runner.max_concurrent)
    shown_views = [side[m] for side, m in zip(views, picks)]
    labels = compare_view.run_labels([d.info.config for d in datas], lang)
    if len(set(labels)) < len(labels):  # the same settings twice: name the sides
        labels = [f"{t(k, lang)}: {n}" for k, n in zip(("compare.run_a", "compare.run_b"), labels)]
    loss_labels = labels
    if n_seeds > 1 and views:
        labels = compare_seeds.median_labels(labels, side_cfgs, picks, lang, short=lecture)
    done = bool(views) and all(v.done for side in views for v in side)
    result = compare_seeds.comparison(side_cfgs, views, groups) if done else None
    sentence = takeaway(result, lang) if result is not None else None
    if lecture:
        if not done:
            lines = [*lines, *live.message_lines(shown_views, lang)]
        elif n_seeds > 1:
            lines = compare_seeds.verdict_lines(sentence, views, lang)
        else:
            lines = live.verdict_lines(shown_views, labels, lang)
        step = lecture_view.status_and_steps(
            lines, compare_view.common_steps(datas), "compare_step", lang, done, ticking
        )
        lesson = lecture_view.lesson_chart(scenario, [d.info.config for d in datas])
        mark = lecture_view.step_mark(step, compare_view.common_steps(datas), done)
        lecture_view.draw_compare(datas, labels, lang, step, lesson, (groups, loss_labels), mark)
    else:
        st.markdown("  \n".join(lines))

        def notes() -> None:
            if sentence is not None:
                compare_seeds.show_sentence(sentence, compare_seeds.report_json(result, sentence), lang)
            for view in shown_views:
                live.run_message(view, lang)
            if views:
                live.thinning_notes(datas, [side[m] for side, m in zip(handles, picks)], lang)

        compare_view.draw(datas, labels, lang, done, ticking, notes, (groups, loss_labels))
    if running and not runs.running(compare_seeds.ALL_ROLES):  # they ended while this fragment ticked
        st.rerun(scope="app")  # stops the timer, disables Stop, reveals the takeaway


compare_live()
if lecture:
    lecture_view.takeaway(scenario, lang, ended=bool(handles) and all(h.done for side in handles for h in side))
