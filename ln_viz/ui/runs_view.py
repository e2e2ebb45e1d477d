"""The Runs page's parts: the filtered list of stored runs, one run opened in the live page's charts,
label, delete (confirmed), downloads, import of a run file, and the bundled demo runs.

Nothing here trains: a stored run is read back from the store (`Store.open_run`) and drawn as it was.
"""

from __future__ import annotations

import hashlib
import logging
import os

import pandas as pd
import streamlit as st

from ln_viz.i18n import LocalizedError, t
from ln_viz.schema import STATUSES
from ln_viz.snapshot import RunData
from ln_viz.store import LIVE_STATUSES, RunFilter, RunSummary, Store
from ln_viz.store.transfer import reload_demo_runs
from ln_viz.text import one_line
from ln_viz.ui import keys, language, nav
from ln_viz.ui.safe import md
from ln_viz.ui.storage import stored_run
from ln_viz.views import attached
from ln_viz.views.runs_list import final_loss_text, placement_options, runs_frame

LOAD_DEMOS_ENV = "LN_VIZ_LOAD_DEMOS"
SORTS = {  # widget option -> Store.list_runs sort
    "newest": "-created",
    "oldest": "created",
    "loss_low": "final_loss",
    "loss_high": "-final_loss",
}
log = logging.getLogger(__name__)


# --- demo runs ------------------------------------------------------------------------------------------
@st.cache_resource(show_spinner=False)
def _autoloaded(store_path: str) -> list[int]:
    from ln_viz.store.transfer import load_demo_runs

    with Store(store_path) as store:  # its own connection: this runs once per server and store
        return load_demo_runs(store)


def autoload_demos(store: Store) -> None:
    """With LN_VIZ_LOAD_DEMOS=1, load the bundled demo runs once per server (a demo the user deleted
    stays deleted: `load_demo_runs` remembers what it loaded)."""
    if os.environ.get(LOAD_DEMOS_ENV) == "1":
        try:
            _autoloaded(str(store.path))
        except LocalizedError as e:  # a damaged bundled file: say so in the log, keep the page
            log.warning("ln-viz: the demo runs were not loaded: %s", e)


def demo_offer(store: Store, lang: str) -> None:
    """An empty store: say so and offer the demo runs (a talk works offline and at once)."""
    st.info(t("runs.empty", lang))
    if st.button(t("runs.load_demos", lang), key="runs_load_demos", type="primary", icon=":material/download:"):
        with st.spinner(t("runs.loading_demos", lang)):
            try:
                added = reload_demo_runs(store)
            except LocalizedError as e:
                st.error(md(e.message(lang)))
                return
        st.session_state[keys.RUNS_NOTICE] = ("success", t("runs.demos_loaded", lang, count=len(added)))
        st.rerun()


# --- the list -------------------------------------------------------------------------------------------
def _any_of(col, label: str, options, key: str, names: str, lang: str) -> list[str]:
    """A filter of several choices, each shown by its catalog name `names.<option>`; none chosen: any."""
    return col.multiselect(
        t(label, lang),
        options,
        key=language.translated(key),
        format_func=lambda o: t(f"{names}.{o}", lang),
        placeholder=t("runs.any", lang),
    )


def filters(store: Store, lang: str) -> tuple[RunFilter, str]:
    """The filter and sort widgets, in one row; the RunFilter and sort they describe."""
    runs = store.list_runs()
    depths = sorted({r.depth for r in runs if r.damage() is None})
    cols = st.columns([2, 1.2, 2, 2, 2])
    norms = _any_of(cols[0], "ui.norm_position", placement_options(runs), keys.RUNS_F_NORM, "chart.norm", lang)
    depth = cols[1].selectbox(
        t("runs.col.depth", lang),
        [0, *depths],  # 0: any depth (None would give the box a clear button with no room for it)
        key=language.translated(keys.RUNS_F_DEPTH),
        format_func=lambda d: str(d) if d else t("runs.any", lang),
    )
    status = _any_of(cols[2], "runs.col.status", STATUSES, keys.RUNS_F_STATUS, "status", lang)
    label = cols[3].text_input(t("runs.filter_label", lang), key="runs_f_label")
    sort = cols[4].selectbox(
        t("runs.sort", lang),
        list(SORTS),
        key=language.translated(keys.RUNS_SORT),
        format_func=lambda k: t(f"runs.sort.{k}", lang),
    )
    run_filter = RunFilter(
        status=tuple(status) or None,
        norm_position=tuple(norms) or None,
        depth=depth or None,
        label_contains=label.strip() or None,
    )
    return run_filter, SORTS[sort]


def runs_table(runs: list[RunSummary], lang: str, group_sizes: dict[str, int] | None = None) -> list[int]:
    """The runs as a table whose rows can be selected; the selected runs' ids, in table order.

    The table's key changes with the list of ids shown, so a selection never points at another run
    after a filter, an import or a delete has moved the rows."""
    df = runs_frame(runs, lang, group_sizes)
    ids = tuple(df["id"])
    key = "runs_table_" + hashlib.sha1(repr(ids).encode()).hexdigest()[:10]
    col = st.column_config
    event = st.dataframe(
        df,
        key=key,
        on_select="rerun",
        selection_mode="multi-row",
        hide_index=True,
        width="stretch",
        height=min(38 + 35 * len(df), 38 + 35 * 8),  # up to 8 rows, then it scrolls
        column_config={  # widths in px: the twelve columns fit beside the sidebar at 1280 px
            "id": col.NumberColumn(t("runs.col.id", lang), format="%d", width=50),
            "label": col.TextColumn(t("runs.col.label", lang), width=110),
            "group": col.TextColumn(t("runs.col.group", lang), width=90),
            "norm": col.TextColumn(t("runs.col.norm", lang), width=75),
            "depth": col.NumberColumn(t("runs.col.depth", lang), width=55),
            "lr": col.TextColumn(t("runs.col.lr", lang), width=55),
            "warmup": col.TextColumn(t("runs.col.warmup", lang), width=65),  # a number, or "not known" (attached)
            "status": col.TextColumn(t("runs.col.status", lang), width=85),
            "steps": col.TextColumn(t("runs.col.steps", lang), width=75),
            "final_loss": col.TextColumn(t("runs.col.final_loss", lang), width=80),
            "created": col.DatetimeColumn(t("runs.col.created", lang), format="MM-DD HH:mm", width=105),
            "source": col.TextColumn(t("runs.col.source", lang), width=80),
        },
    )
    rows = sorted(r for r in event.selection.rows if 0 <= r < len(ids))
    return [int(ids[r]) for r in rows]


def compare_button(selected: list[int], lang: str) -> None:
    """ "Compare these two": hands exactly two selected ids to the Compare page (when it exists)."""
    available = nav.COMPARE.exists()
    if not available:
        note = t("runs.compare_missing", lang)
    elif len(selected) != 2:
        note = t("runs.compare_pick_two", lang)
    else:
        note = None
    if st.button(
        t("runs.compare", lang),
        key="runs_compare",
        disabled=note is not None,
        help=note,
        icon=":material/compare:",
    ):
        st.session_state[keys.COMPARE_RUNS] = list(selected)
        st.switch_page(nav.COMPARE.file)


# --- one run ----------------------------------------------------------------------------------------------
def open_run(store: Store, summary: RunSummary) -> RunData:
    """The run as its charts show it, through the server's shared cache (storage.stored_run)."""
    return stored_run(store, summary.id, summary.updated)


def open_or_report(store: Store, summary: RunSummary, lang: str) -> RunData | None:
    """The selected run; or, for a damaged one (a row or data no chart can draw), None after saying why
    in one sentence and offering to delete it, so one bad row never takes the page down for everyone."""
    problem = summary.damage()
    if problem is None:
        try:
            return open_run(store, summary)
        except LocalizedError as e:  # DamagedRunError, or a store that cannot be read
            problem = e
    st.subheader(t("runs.damaged_heading", lang, id=summary.id))
    st.error(problem.message(lang))
    delete_control(store, summary, lang)
    return None


def run_heading(summary: RunSummary, lang: str, group_size: int = 0, card: dict | None = None) -> None:
    """The run's title and one line saying what it was and how it ended (and of how many runs its seed
    group is one); a run of the user's own model (`card`: ln_viz.attach's) with its model card."""
    label = summary.label or t("runs.unlabelled", lang)
    heading = "runs.heading" if card is None else "runs.attached_heading"
    with st.container(key="runs_opened"):  # scrolled into view when a row is opened (the charts are below)
        st.subheader(md(t(heading, lang, id=summary.id, label=label)), anchor=False)  # a label is text
    loss = final_loss_text(summary, lang)
    if card is not None:
        status = t(f"status.{summary.status}", lang)
        done = t("attached.summary", lang, status=status, done=summary.steps_done, loss=loss)
        st.markdown(f"{md(attached.attached_words(card, lang))} · {done}")
        model_card(card, lang)
        if summary.status in LIVE_STATUSES:
            st.info(t("runs.live_note", lang))
        return
    st.markdown(
        t(
            "runs.summary",
            lang,
            norm=t(f"chart.norm.{summary.norm_position}", lang),
            depth=summary.depth,
            lr=f"{summary.lr:g}",
            warmup=summary.warmup_steps,
            status=t(f"status.{summary.status}", lang),
            done=summary.steps_done,
            steps=summary.steps,
            loss=loss,
        )
    )
    if summary.message:
        try:
            st.caption(t(summary.message, lang))
        except (KeyError, IndexError):  # a message key from another version, or one with parameters
            pass
    if summary.seed_group:
        st.caption(md(t("runs.in_group", lang, count=group_size, name=one_line(summary.seed_group))))
    if summary.status in LIVE_STATUSES:
        st.info(t("runs.live_note", lang))


def model_card(card: dict, lang: str) -> None:
    """An attached run's model card (ln_viz.describe's: blocks, depth, d_model, placement, QK-norm, norms, and
    the matrices of a block with their roles), and what its charts draw and leave out."""
    with st.expander(t("attached.card_title", lang), expanded=True, icon=":material/badge:"):
        left, right = st.columns([1, 1.3])
        rows = attached.card_rows(card, lang)
        cols = (t("attached.col.field", lang), t("attached.col.value", lang))
        left.dataframe(pd.DataFrame(rows, columns=cols), hide_index=True, key="runs_card", width="stretch")
        cols = (t("attached.col.matrix", lang), t("attached.col.role", lang), t("attached.col.shape", lang))
        frame = pd.DataFrame(attached.matrix_rows(card), columns=cols)
        right.dataframe(frame, hide_index=True, key="runs_card_matrices", width="stretch")
    st.caption(t("attached.drawn", lang))


def label_editor(store: Store, summary: RunSummary, lang: str) -> None:
    """A text input with the run's label and a Save button (an empty label clears it)."""
    key = f"runs_label_{summary.id}"
    with st.form(key=f"runs_label_form_{summary.id}", border=False):
        cols = st.columns([4, 1], vertical_alignment="bottom")
        text = cols[0].text_input(t("runs.label", lang), value=summary.label or "", key=key, max_chars=200)
        saved = cols[1].form_submit_button(t("runs.label_save", lang), key="runs_label_save")
    if saved:
        try:
            store.label(summary.id, text)
        except LocalizedError as e:
            st.error(md(e.message(lang)))
            return
        st.session_state[keys.RUNS_NOTICE] = ("success", t("runs.label_saved", lang, id=summary.id))
        st.rerun()


def delete_control(store: Store, summary: RunSummary, lang: str) -> None:
    """Delete, in two steps: the button asks, a second button confirms (or Cancel)."""
    pending = st.session_state.get(keys.RUNS_DELETE) == summary.id
    if not pending:
        if st.button(t("runs.delete", lang), key="runs_delete", icon=":material/delete:"):
            st.session_state[keys.RUNS_DELETE] = summary.id
            st.rerun()
        return
    label = summary.label or t("runs.unlabelled", lang)
    st.warning(md(t("runs.delete_confirm", lang, id=summary.id, label=label)))
    row = st.container(horizontal=True)
    if row.button(t("runs.delete_yes", lang), key="runs_delete_confirm", type="primary"):
        st.session_state.pop(keys.RUNS_DELETE, None)
        try:
            store.delete(summary.id)
        except LocalizedError as e:
            st.error(md(e.message(lang)))
            return
        st.session_state[keys.RUNS_NOTICE] = ("success", t("runs.deleted", lang, id=summary.id))
        st.rerun()
    if row.button(t("runs.delete_cancel", lang), key="runs_delete_cancel"):
        st.session_state.pop(keys.RUNS_DELETE, None)
        st.rerun()


# --- import ---------------------------------------------------------------------------------------------
def import_file(store: Store, lang: str) -> None:
    """A file uploader for run files: validated as a whole before anything is stored; a bad file is
    refused with one sentence and the store stays as it was. Each upload is handled once."""
    from ln_viz.runfile import read_run_data
    from ln_viz.store.transfer import add_loaded_run

    upload = st.file_uploader(
        t("runs.import", lang), type=["gz", "json"], key="runs_import_file", help=t("runs.import_help", lang)
    )
    if upload is None:
        return
    done = st.session_state.setdefault(keys.RUNS_IMPORTED, {})
    if upload.file_id not in done:
        try:
            run_id, added = add_loaded_run(store, read_run_data(upload.getvalue(), upload.name))
        except LocalizedError as e:  # a refused file (RunFileError) or a store that cannot take it
            done[upload.file_id] = ("error", t("runs.import_refused", lang, reason=e.message(lang)))
        else:
            key = "runs.imported" if added else "runs.import_exists"
            done[upload.file_id] = ("success" if added else "info", t(key, lang, name=upload.name, id=run_id))
            if added:
                st.rerun()  # the list above was drawn before the import: draw it again with the new run
    kind, text = done[upload.file_id]
    getattr(st, kind)(md(text))  # it names the user's file and may quote its content


def notice() -> None:
    """The message a button left before its rerun (saved, deleted, loaded), shown once."""
    note = st.session_state.pop(keys.RUNS_NOTICE, None)
    if note:
        getattr(st, note[0])(md(note[1]))
