"""Compare: two configurations side by side, trained live (same seed, same initial weights where the
shapes agree, same batches), or two stored runs picked on the Runs page."""

import streamlit as st

from ln_viz.config import COMPARE_PRESETS
from ln_viz.i18n import LocalizedError, t
from ln_viz.ui import (
    compare_seeds,
    compare_view,
    config_form,
    first_visit,
    keys,
    language,
    layout,
    lecture_switch,
    lecture_view,
    links,
    live,
    loss_view,
    nav,
    page_state,
    reattach,
    run_view,
    training,
)
from ln_viz.ui.safe import md
from ln_viz.views import run_frames

lang = language.current_lang()
lecture = lecture_switch.lecture_view_on()
runner = training.get_runner()
runs = training.session_runs()
reattach.keep_in_link(runs)  # its runs named in the address: a reload keeps them (issue 32)

stored = reattach.compare_pair()  # the Runs page's pair, kept in the address (`pair=`) for a reload
if stored:  # two runs from the store: draw them, train nothing
    from ln_viz.ui.storage import get_store

    if not lecture:
        st.title(t("compare.title", lang))
        st.info(t("compare.stored", lang, a=stored[0], b=stored[1]))
        row = st.container(horizontal=True)
        loss_view.controls(lang, row)  # the loss chart's smoothing and axis
        if row.button(t("compare.clear_stored", lang), key="compare_clear"):
            reattach.forget_compare_pair()
            st.rerun()
    store = get_store()
    if store is None:
        st.error(t("runs.no_store", lang))
        st.stop()
    try:
        source = run_view.StoredRuns.read(store, stored, lang)
    except LocalizedError as e:  # deleted meanwhile
        st.error(md(e.message(lang)))
        st.stop()
    if lecture:  # the two runs named in the header, one screen (runs of the user's own models too)
        lecture_view.page_header(md(t("lecture.vs", lang).join(source.labels)), lang, nav.LIVE)
    run_view.draw(source, lang, lecture, "compare_step", None)  # Play's tick; the fragment's own reruns keep it
    if lecture:
        attached = any(d.info.attached for d in source.datas)
        lecture_view.sentence("attached.lecture_note" if attached else None, lang)
    st.stop()

form_keys = (k for p in compare_view.SIDES for k in config_form.form_keys(p))
page_state.keep([keys.COMPARE_PRESET, compare_seeds.SEEDS_KEY, *form_keys])
if keys.COMPARE_NOTICES not in st.session_state:  # a shared link sets both forms once per session
    if st.query_params.get("cpreset") in COMPARE_PRESETS:
        st.session_state[keys.COMPARE_PRESET] = st.query_params["cpreset"]
        compare_view.apply_scenario()
    compare_view.ensure_scenario()
    notices = [n for prefix in compare_view.SIDES for n in config_form.apply_query(prefix=prefix, lang=lang)]
    notices += compare_seeds.apply_query(lang)
    st.session_state[keys.COMPARE_NOTICES] = notices
compare_view.ensure_scenario()
compare_view.mark_custom()
for notice in [*links.link_notices(lang), *st.session_state[keys.COMPARE_NOTICES]]:
    st.warning(md(notice))  # it quotes the link

buttons = (("compare_start", t("compare.start", lang)), ("compare_stop", t("compare.stop", lang)))
n_seeds = compare_seeds.seed_count()
running = runs.running(compare_seeds.ALL_ROLES)
scenario = st.session_state[keys.COMPARE_PRESET]
scenario = scenario if scenario in COMPARE_PRESETS else None
if lecture:  # the forms stay drawn (in the hidden sidebar), so the settings are kept
    for prefix in compare_view.SIDES:
        config_form.config_form(lang, prefix=prefix, container=st.sidebar.container(), compact=True)
    configs = [config_form.read_config(prefix) for prefix in compare_view.SIDES]
    choices = (list(COMPARE_PRESETS), scenario, "lecture.scenario.", compare_view.pick_scenario)
    side_cfgs = [compare_seeds.seed_configs(cfg, n_seeds) for cfg in configs]
    ended = run_view.RunnerRuns(compare_seeds.shown_handles(runs, runner, side_cfgs), configs, lambda: False,
                                runner.max_concurrent, scenario, side_cfgs)  # fmt: skip
    exports = run_view.lecture_exports(ended, lang)  # the pack and the video, once the pair has ended (UX M9)
    seeds = lambda row: compare_seeds.lecture_seeds(lang, row)  # noqa: E731 (in the header's row: issue 32)
    start, stop = lecture_view.header(configs, lang, choices, buttons, nav.LIVE, running, seeds, exports)
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
start = start or first_visit.start_requested()  # Live's way to the lesson opened this page to start both

try:
    if not lecture:
        st.caption(md(compare_view.scenario_caption(lang) + " " + run_frames.differences(*configs, lang)))
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
handles = compare_seeds.shown_handles(runs, runner, side_cfgs)
source = run_view.RunnerRuns(handles, configs, lambda: runs.running(compare_seeds.ALL_ROLES), runner.max_concurrent,
                            scenario, side_cfgs)  # fmt: skip
run_view.draw(source, lang, lecture, "compare_step", run_view.REFRESH_S if running else None)
if lecture:
    lecture_view.takeaway(scenario, lang, ended=bool(handles) and all(h.done for side in handles for h in side))
