"""The Runs page: the runs this server has kept. Filter and sort them, open one in the live page's
charts (with its animation, no retraining), label, delete, download, import a run file, and hand
two to the Compare page. An empty store offers the bundled demo runs."""

import streamlit as st

from ln_viz.i18n import t
from ln_viz.store import LIVE_STATUSES
from ln_viz.ui import keys, language, layout, links, live, loss_view, run_downloads, runs_view, stepper, watch_share
from ln_viz.ui.safe import md
from ln_viz.ui.storage import get_store
from ln_viz.views.runs_list import group_together

lang = language.current_lang()
store = get_store()


# Play's tick, read once per full run: a click inside the fragment reruns only the fragment, and its timer
# is set only by a full run, so the step control compares the two and asks for one when they differ.
timer = stepper.timer(keys.RUNS_PROBE_STEP, None)


@st.fragment(run_every=timer)  # Play ticks here: the rest stays put
def run_charts(data, done: bool) -> None:
    """The opened run in the live page's charts; one step control (with Play) drives every step chart."""
    loss_view.controls(lang)  # the loss chart's smoothing and axis
    live.draw_charts(data, lang, done=done, key_prefix="runs_", ticking=timer is not None)


st.title(t("runs.title", lang))
for notice in links.link_notices(lang):
    st.warning(md(notice))
if store is None:
    st.error(t("runs.no_store", lang))
    st.stop()
runs_view.autoload_demos(store)
runs_view.notice()

if not store.list_runs(limit=1):
    runs_view.demo_offer(store, lang)
else:
    st.caption(t("runs.intro", lang))
    run_filter, sort = runs_view.filters(store, lang)
    runs = group_together(store.list_runs(run_filter, sort=sort))  # a seed group's runs side by side
    groups = store.group_sizes()
    if not runs:
        st.info(t("runs.none_match", lang))
        selected: list[int] = []
    else:
        selected = runs_view.runs_table(runs, lang, groups)
    runs_view.compare_button(selected, lang)

    by_id = {r.id: r for r in runs}
    shown = selected[0] if selected else None
    if len(selected) > 1:
        shown = st.radio(
            t("runs.shown", lang),
            selected,
            key="runs_shown",
            horizontal=True,
            format_func=lambda i: md(f"#{i} {by_id[i].label or ''}".strip()),  # options are Markdown
        )
    if shown is None:
        st.info(t("runs.pick", lang))
    else:
        summary = by_id[shown]
        data = runs_view.open_or_report(store, summary, lang)  # None: damaged, said so, delete offered
        if data is not None:
            runs_view.run_heading(summary, lang, groups.get(summary.seed_group or "", 0), data.info.model_card)
            watch_share.draw(st.container(horizontal=True), summary.id, lang, lecture=False)  # watch it elsewhere
            layout.scroll_into_view("runs_opened", shown)  # the table is above: show that the run opened
            run_downloads.thinned_note(data, lang)
            with st.expander(t("runs.manage", lang), icon=":material/settings:"):
                runs_view.label_editor(store, summary, lang)
                run_downloads.downloads(store, data, summary, lang)
                runs_view.delete_control(store, summary, lang)
            run_charts(data, summary.status not in LIVE_STATUSES)

st.divider()
runs_view.import_file(store, lang)
