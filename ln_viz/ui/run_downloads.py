"""The Runs page's downloads of one run: the tables (CSV, Parquet) and the run file, built on click from
the whole run, the run files of its whole seed group in one zip, and the chart files (kaleido) drawn by
a Prepare button; and the note that the charts show a thinned copy. Split from runs_view.py (which
lists, opens, labels and deletes runs)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import streamlit as st

from ln_viz.i18n import LocalizedError, t
from ln_viz.snapshot import RunData
from ln_viz.store import RunFilter, RunSummary, Store
from ln_viz.ui import keys
from ln_viz.ui.safe import md

# A whole-run download decodes every probe step of the run: about 1.6 GB for a 10,000-step depth-48 run
# probed every step (issue 21 X5). The server builds one such download at a time, whoever asks and however
# often they click, so what downloads make it hold is one run's, not one per click.
_WHOLE_RUN_BUILD = threading.Lock()


def one_at_a_time(build: Callable[[], bytes]) -> Callable[[], bytes]:
    """`build`, run while no other whole-run download is being built on this server."""

    def guarded() -> bytes:
        with _WHOLE_RUN_BUILD:
            return build()

    return guarded


def _safe_name(text: str) -> str:
    """Text fit for a file name: letters, digits, - and _ only, at most 40 characters."""
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in text.strip())[:40].strip("-")


def _file_stem(summary: RunSummary) -> str:
    safe = _safe_name(summary.label or "")
    return f"ln-viz-run-{summary.id}" + (f"-{safe}" if safe else "")


def thinned_note(data: RunData, lang: str) -> None:
    """Say so when the charts show a thinned copy of the run (storage.SHOWN_PROBE_STEPS)."""
    if data.probe_stride > 1:
        st.caption(t("runs.thinned", lang, stride=data.probe_stride, kept=data.max_probe_steps))


def lazy_downloads(store: Store, data: RunData, summary: RunSummary) -> list[tuple[str, str, Callable[[], bytes], str]]:
    """(label key, file extension, builder, MIME type) of each download built on click: the tables and
    the run file, from the whole run (read from the store then, when the charts' copy is thinned)."""
    from ln_viz import export

    generation = store.generation  # built on a later click: the same file must still be there

    def whole() -> RunData:
        if data.probe_stride == 1 or store.generation != generation or store.moved():
            return data  # whole already; or the file was replaced, and its run of this id is another run
        return store.open_run(summary.id)

    header = {"run_id": summary.id, "label": summary.label, "status": data.status, "message": data.message}
    return [
        ("runs.dl_csv", "csv.zip", one_at_a_time(lambda: export.tables_zip(whole(), "csv", header)), "application/zip"),
        (
            "runs.dl_parquet",
            "parquet.zip",
            one_at_a_time(lambda: export.tables_zip(whole(), "parquet", header)),
            "application/zip",
        ),
        (
            "runs.dl_run",
            "json.gz",
            one_at_a_time(lambda: export.run_file_bytes(whole(), summary.label, summary.created)),
            "application/gzip",
        ),  # fmt: skip
    ]


def group_zip(store: Store, group: str) -> tuple[int, Callable[[], bytes]]:
    """(how many runs, a builder of one zip of their run files) of a seed group, as stored now: each run
    whole, named as its own download is (`ln-viz-run-<id>-<label>.json.gz`), plus `group.json`, the
    group's runs and seeds at a glance. A damaged run is left out (its own row says why)."""
    import json

    from ln_viz import export

    members = [r for r in store.list_runs(RunFilter(seed_group=group), sort="id") if r.damage() is None]

    def build() -> bytes:
        files = [
            (f"{_file_stem(r)}.json.gz", export.run_file_bytes(store.open_run(r.id), r.label, r.created))
            for r in members
        ]
        manifest = {"seed_group": group, "runs": [r.to_dict() for r in members]}
        return export.named_zip([*files, ("group.json", json.dumps(manifest, indent=1).encode())])

    return len(members), one_at_a_time(build)


def pack_button(datas: Sequence[RunData], lang: str, key: str, file_stem: str, labels: Sequence[str] | None = None):
    """The offline lecture pack of one run or a pair (ln_viz/pack.py), one HTML file built on click;
    nothing for runs with no probe step in common (the pack would have nothing to step through)."""
    from ln_viz import pack

    if not pack.frame_steps(datas):
        return
    st.download_button(
        t("pack.download", lang),
        data=lambda: pack.pack_html(datas, lang, labels).encode(),
        file_name=f"{file_stem}.{lang}.html",
        mime="text/html",
        key=key,
        on_click="ignore",
        icon=":material/slideshow:",
    )


def downloads(store: Store, data: RunData, summary: RunSummary, lang: str) -> None:
    """Tables (CSV, Parquet), the run file and the chart files. Each is built only when asked for:
    the table and run-file buttons build their bytes on click, from the whole run (read from the store
    then when the charts' copy is thinned); chart files (kaleido, seconds) are drawn from what the
    charts show by a Prepare button, then offered."""
    from ln_viz import export

    stem = _file_stem(summary)
    row = st.container(horizontal=True)
    for key, ext, build, mime in lazy_downloads(store, data, summary):
        row.download_button(
            t(key, lang),
            data=build,
            file_name=f"{stem}.{ext}",
            mime=mime,
            key=f"runs_{key.split('.')[-1]}",
            on_click="ignore",
            icon=":material/download:",
        )
    if summary.seed_group:
        count, build_group = group_zip(store, summary.seed_group)
        row.download_button(
            t("runs.dl_group", lang, count=count),
            data=build_group,
            file_name=f"ln-viz-group-{_safe_name(summary.seed_group)}.zip",
            mime="application/zip",
            key="runs_dl_group",
            on_click="ignore",
            icon=":material/folder_zip:",
        )
    with row:
        pack_button([data], lang, "runs_dl_pack", f"ln-viz-pack-{summary.id}")
    from ln_viz.ui.video_export import video_buttons

    video_buttons([data], lang, "runs_video", f"ln-viz-run-{summary.id}", (summary.id, summary.updated), row=row)
    ready = st.session_state.get(keys.RUNS_CHARTS)
    if ready and ready[0] == (summary.id, summary.updated, lang):
        row.download_button(
            t("runs.dl_charts", lang),
            data=ready[1],
            file_name=f"{stem}-charts.zip",
            mime="application/zip",
            key="runs_dl_charts",
            on_click="ignore",
            icon=":material/download:",
            type="primary",
        )
    elif row.button(t("runs.dl_charts_prepare", lang), key="runs_prepare_charts", icon=":material/image:"):
        with st.spinner(t("runs.dl_charts_wait", lang)):
            try:
                blob = export.charts_zip(data, lang=lang)
            except LocalizedError as e:
                st.error(md(e.message(lang)))
                return
        st.session_state[keys.RUNS_CHARTS] = ((summary.id, summary.updated, lang), blob)  # one run's at a time
        st.rerun()
    st.caption(t("runs.dl_help", lang))
