"""The Runs page with AppTest, through the app's router: list, filter and sort stored runs, open one in
the live page's charts, label, delete (only after a confirmation), import (a bad file is refused with
one sentence and the store is unchanged), and the bundled demo runs (button and LN_VIZ_LOAD_DEMOS)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from ln_viz.export import run_file_bytes
from ln_viz.i18n import t
from ln_viz.snapshot import RunData
from ln_viz.store import Store
from ln_viz.store.transfer import DEMO_DIR
from ln_viz.sweep.labels import lr_label
from ln_viz.train import run
from tests.runs import TINY, train_tiny

APP = "../app.py"
PAGE = "pages/runs.py"
CHART_KEYS = {
    "runs_loss_chart",
    "runs_grad_heatmap",
    "runs_update_ratio",
    "runs_act_dist",
    "runs_layer_profile",
    "runs_attn_entropy",
}
# the "Instability probes" expander's, drawn once it is opened (a LayerNorm run: no DyT saturation chart)
INSTABILITY_KEYS = {"runs_attn_logit", "runs_log_z", "runs_massive_act", "runs_angular_update", "runs_precond_lag",
                    "runs_norm_min_rms"}  # fmt: skip


@pytest.fixture(scope="module")
def measured() -> dict[str, RunData]:
    """Two tiny runs, Pre-LN and Post-LN (tests.runs.TINY), trained once per session."""
    return {pos: train_tiny(pos) for pos in ("pre", "post")}


@pytest.fixture
def store_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "runs.sqlite"
    monkeypatch.setenv("LN_VIZ_STORE", str(path))
    monkeypatch.delenv("LN_VIZ_LOAD_DEMOS", raising=False)
    yield path
    st.cache_resource.clear()  # the server's Store, the runner and the cached runs go with the test


@pytest.fixture
def two_runs(store_path: Path, measured: dict[str, RunData]) -> dict[str, int]:
    """A store holding the Pre-LN run (labelled "tiny pre") and the Post-LN run ("tiny post")."""
    with Store(store_path) as store:
        return {pos: store.add_run(data, label=f"tiny {pos}", source="train") for pos, data in measured.items()}


def open_page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.switch_page(PAGE).run()  # a link to the page, through the router (the live page never runs)
    assert not at.exception, at.exception
    return at


def table(at: AppTest):
    tables = [d for d in at.dataframe if d.key and d.key.startswith("runs_table_")]
    assert len(tables) == 1
    return tables[0]


def shown_ids(at: AppTest) -> list[int]:
    return [int(i) for i in table(at).value["id"]]


def select(at: AppTest, *rows: int) -> AppTest:
    """Select table rows as a click would (AppTest accepts a dataframe's selection state)."""
    at.session_state[table(at).key] = {"selection": {"rows": list(rows), "columns": [], "cells": []}}
    at.run()
    assert not at.exception, at.exception
    return at


def charts(at: AppTest) -> dict[str, dict]:
    return {c.key: json.loads(c.proto.spec) for c in at.get("plotly_chart")}


def stored(store_path: Path) -> dict[int, str | None]:
    with Store(store_path) as store:
        return {r.id: r.label for r in store.list_runs()}


def test_list_filter_and_sort(two_runs: dict[str, int]) -> None:
    at = open_page()
    assert at.title[0].value == "Stored runs"
    assert shown_ids(at) == [two_runs["post"], two_runs["pre"]]  # newest first
    assert list(table(at).value["label"]) == ["tiny post", "tiny pre"]
    # each run's learning rate and warm-up, the settings that decide a Post-LN's fate (issue 21 N20)
    assert list(table(at).value["lr"]) == [lr_label(TINY.lr)] * 2
    assert list(table(at).value["warmup"]) == [str(TINY.warmup_steps)] * 2  # text: an attached run says "not known"
    at.multiselect(key="runs_f_norm").set_value(["pre"]).run()
    assert shown_ids(at) == [two_runs["pre"]]
    at.multiselect(key="runs_f_norm").set_value([]).run()
    at.text_input(key="runs_f_label").set_value("POST").run()  # case-insensitive
    assert shown_ids(at) == [two_runs["post"]]
    at.text_input(key="runs_f_label").set_value("nothing like it").run()
    assert any("No stored run matches" in i.value for i in at.info)
    at.text_input(key="runs_f_label").set_value("").run()
    at.selectbox(key="runs_f_depth").set_value(2).run()
    assert len(shown_ids(at)) == 2
    at.selectbox(key="runs_sort").set_value("oldest").run()
    assert shown_ids(at) == [two_runs["pre"], two_runs["post"]]
    with Store() as store:
        by_loss = sorted(store.list_runs(), key=lambda r: r.final_loss)
    at.selectbox(key="runs_sort").set_value("loss_low").run()
    assert shown_ids(at) == [r.id for r in by_loss]
    assert not at.exception


def test_open_a_run_shows_the_live_charts_with_the_animation(two_runs: dict[str, int], measured) -> None:
    at = open_page()
    assert not charts(at)  # nothing opened yet
    assert any("Click a row" in i.value for i in at.info)
    select(at, 1)  # oldest = the Pre-LN run
    assert at.subheader[0].value == f"Run {two_runs['pre']}: tiny pre"
    figs = charts(at)
    assert set(figs) == CHART_KEYS  # the expander is closed: its charts are not built
    at.session_state["runs_instability_open"] = True  # what a click on it sets
    at.run()
    assert set(charts(at)) == CHART_KEYS | INSTABILITY_KEYS
    steps = at.select_slider(key="runs_probe_step")  # the one step control (with Play) of every step chart
    assert steps.options == [str(s) for s in measured["pre"].probe_steps]
    assert steps.value == measured["pre"].probe_steps[-1]
    assert at.button(key="runs_probe_step_play")  # Play animates them all from this page too
    select(at, 0, 1)  # two runs: pick which one to show
    assert at.radio(key="runs_shown").value == two_runs["post"]
    at.radio(key="runs_shown").set_value(two_runs["pre"]).run()
    assert at.subheader[0].value.startswith(f"Run {two_runs['pre']}")


@pytest.mark.skipif(not (Path(__file__).parents[1] / "pages" / "compare.py").exists(), reason="no Compare page")
def test_two_selected_runs_go_to_the_compare_page(two_runs: dict[str, int]) -> None:
    at = open_page()
    select(at, 0)
    assert at.button(key="runs_compare").disabled  # one run is not a comparison
    select(at, 0, 1)
    assert not at.button(key="runs_compare").disabled
    at.button(key="runs_compare").click().run()
    assert not at.exception, at.exception
    assert at.session_state["compare_runs"] == [two_runs["post"], two_runs["pre"]]  # in table order
    assert at.title[0].value != "Stored runs"  # now on the Compare page
    pair = f"{two_runs['post']},{two_runs['pre']}"
    assert at.query_params["pair"] == pair  # the address names the pair


def test_a_reload_of_compare_keeps_the_pair_from_the_runs_page(two_runs: dict[str, int]) -> None:
    """Issue 32: a reload is a new session, which forgot the pair and fell back to the live comparison."""
    reload = AppTest.from_file(APP, default_timeout=60)
    reload.switch_page("pages/compare.py")
    reload.query_params["pair"] = f"{two_runs['post']},{two_runs['pre']}"
    reload.run()
    assert not reload.exception, reload.exception
    stored = t("compare.stored", "en", a=two_runs["post"], b=two_runs["pre"])
    assert [i.value for i in reload.info] == [stored] and "compare_start" not in {b.key for b in reload.button}
    reload.button(key="compare_clear").click().run()  # back to the live comparison: the address forgets it
    assert "pair" not in reload.query_params and "compare_start" in {b.key for b in reload.button}


def test_label_is_saved(store_path: Path, two_runs: dict[str, int]) -> None:
    at = open_page()
    select(at, 0)
    run_id = two_runs["post"]
    at.text_input(key=f"runs_label_{run_id}").set_value("  Post-LN, no warm-up  ")
    at.button(key="runs_label_save").click().run()
    assert not at.exception
    assert stored(store_path)[run_id] == "Post-LN, no warm-up"
    assert any(f"Label of run {run_id} saved" in s.value for s in at.success)


def test_delete_needs_a_confirmation(store_path: Path, two_runs: dict[str, int]) -> None:
    at = open_page()
    select(at, 0)
    victim = two_runs["post"]
    at.button(key="runs_delete").click().run()
    assert any(f"Delete run {victim}" in w.value for w in at.warning)
    assert victim in stored(store_path)  # asking is not deleting
    at.button(key="runs_delete_cancel").click().run()
    assert not at.warning and victim in stored(store_path)
    at.button(key="runs_delete").click().run()
    at.button(key="runs_delete_confirm").click().run()
    assert not at.exception
    assert victim not in stored(store_path) and two_runs["pre"] in stored(store_path)
    assert any(f"Run {victim} was deleted" in s.value for s in at.success)
    assert shown_ids(at) == [two_runs["pre"]]
    assert not charts(at)  # the selection does not jump to another run


def test_import_accepts_a_run_file_and_refuses_a_bad_one(store_path: Path, two_runs, measured) -> None:
    at = open_page()
    before = stored(store_path)
    blob = run_file_bytes(measured["pre"], label="shared by a colleague")
    bad = bytearray(blob[:400])  # a truncated download
    at.file_uploader(key="runs_import_file").set_value(("cut.json.gz", bytes(bad), "application/gzip")).run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert errors == [
        "Not imported: file cut.json.gz is not a valid gzip file (it may be truncated); export the run again."
    ]
    assert stored(store_path) == before
    at.file_uploader(key="runs_import_file").set_value(("run.json", b'{"format": "other"}', "application/json")).run()
    assert "is not an ln-viz run file" in at.error[0].value and stored(store_path) == before
    at.file_uploader(key="runs_import_file").set_value(("good.json.gz", blob, "application/gzip")).run()
    after = stored(store_path)
    (new_id,) = set(after) - set(before)
    assert after[new_id] == "shared by a colleague"
    assert any(f"Imported good.json.gz as run {new_id}" in s.value for s in at.success)
    assert new_id in shown_ids(at)


def test_an_upload_whose_label_is_no_unicode_text_is_refused_in_one_sentence(store_path: Path, two_runs, measured):
    """Issue 21 T2: a label with a lone surrogate ("\\ud800", valid JSON) showed Streamlit's exception box,
    with the server's paths, to the student who uploaded it."""
    at = open_page()
    before = stored(store_path)
    blob = run_file_bytes(measured["pre"], label="\ud800 lone")
    at.file_uploader(key="runs_import_file").set_value(("lone.json.gz", blob, "application/gzip")).run()
    assert not at.exception, at.exception
    assert [e.value for e in at.error] == [
        "Not imported: file lone.json.gz: label is not Unicode text: character 1 is a lone surrogate (a "
        "\\\\ud800-style escape without its pair)."
    ]
    assert stored(store_path) == before


def test_a_label_s_bidi_and_control_characters_show_as_escapes_in_the_table(store_path: Path, measured) -> None:
    """Issue 21 S3: the heading showed `\\u202eevil\\u202c normal \\u2066x\\u2069` as escapes, but the table's row
    applied the override (the label could spoof its own text there)."""
    label = "\u202eevil\u202c normal \u2066x\u2069\nnext"
    with Store(store_path) as store:
        store.add_run(measured["pre"], label=label, source="import")
    at = open_page()
    assert list(table(at).value["label"]) == [r"\u202eevil\u202c normal \u2066x\u2069\nnext"]


def test_empty_store_offers_the_demo_runs_once(store_path: Path) -> None:
    demos = sorted(DEMO_DIR.glob("*.json.gz"))
    assert demos, "the bundled demo runs are missing: run scripts/make_demo_runs.py"
    at = open_page()
    assert any("No runs are stored yet" in i.value for i in at.info)
    at.button(key="runs_load_demos").click().run()
    assert not at.exception
    labels = sorted(stored(store_path).values())
    assert labels == sorted(p.name.removesuffix(".json.gz") for p in demos)
    assert len(shown_ids(at)) == len(demos)
    assert "runs_load_demos" not in [b.key for b in at.button]  # offered only while the store is empty
    assert any(f"{len(demos)} demo runs loaded" in s.value for s in at.success)


def test_demo_runs_load_by_themselves_with_the_environment_variable(
    store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LN_VIZ_LOAD_DEMOS", "1")
    at = open_page()
    assert len(shown_ids(at)) == len(list(DEMO_DIR.glob("*.json.gz")))
    assert {r for r in table(at).value["source"]} == {"demo"}


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE runs SET created = 1e20 WHERE id = ?",  # the list's row itself cannot be shown
        "UPDATE runs SET info = json_set(info, '$.stat_names[1]', 'sd') WHERE id = ?",  # its charts cannot
    ],
)
def test_a_damaged_row_is_shown_as_damaged_and_can_be_deleted(store_path: Path, two_runs, sql: str) -> None:
    """Issue 14, case 5: one row no page could draw made the Runs page raise for every visitor."""
    import sqlite3

    bad, good = two_runs["post"], two_runs["pre"]
    db = sqlite3.connect(store_path)
    with db:
        db.execute(sql, (bad,))
    db.close()
    at = open_page()
    assert sorted(shown_ids(at)) == sorted([bad, good])
    statuses = dict(zip(shown_ids(at), table(at).value["status"]))
    select(at, shown_ids(at).index(bad))
    assert any(f"run {bad}" in e.value and f"runs delete {bad}" in e.value for e in at.error), at.error
    if sql.startswith("UPDATE runs SET created"):
        assert statuses[bad] == "damaged"
    assert not charts(at)
    at.button(key="runs_delete").click().run()
    at.button(key="runs_delete_confirm").click().run()
    assert not at.exception
    assert list(stored(store_path)) == [good]
    select(at, 0)
    assert set(charts(at)) == CHART_KEYS  # the good run opens as before


def _played(at: AppTest, key: str, ticks: int) -> list[int]:
    """Press Play on the step control `key`, then let its timer tick `ticks` times (a tick is a rerun of
    the page's fragment; AppTest reruns the whole script, which the step control treats the same way);
    the steps shown after each."""
    at.button(key=key + "_play").click().run()
    assert not at.exception, at.exception
    shown = [at.select_slider(key=key).value]
    for _ in range(ticks):
        at.run()
        assert not at.exception, at.exception
        shown.append(at.select_slider(key=key).value)
    return shown


def test_play_on_a_stored_run_moves_one_probe_step_per_tick(two_runs: dict[str, int], measured) -> None:
    at = open_page()
    select(at, 1)
    steps = measured["pre"].probe_steps
    # Play at the last step starts over, then each tick moves one probe step. (AppTest reruns the whole
    # script, so the fragment-only rerun of a click is tested in Chromium: tests/e2e/test_runs_e2e.py.)
    assert _played(at, "runs_probe_step", 2) == [steps[1], steps[2], steps[3]]
    at.button(key="runs_probe_step_play").click().run()  # Pause
    assert at.select_slider(key="runs_probe_step").value == steps[3]
    at.run()
    assert at.select_slider(key="runs_probe_step").value == steps[3]  # paused: no more ticks


def test_play_on_two_stored_runs_in_compare_moves_and_stops(two_runs: dict[str, int], measured) -> None:
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["compare_runs"] = [two_runs["post"], two_runs["pre"]]  # as the Runs page's button sets
    at.switch_page("pages/compare.py").run()
    assert not at.exception, at.exception
    steps = measured["pre"].probe_steps
    assert at.select_slider(key="compare_step").value == steps[-1]
    # before, Play here reran the page without end (no timer on the stored view) and never moved
    assert _played(at, "compare_step", 2) == [steps[1], steps[2], steps[3]]
    at.button(key="compare_step_play").click().run()
    assert at.select_slider(key="compare_step").value == steps[3]


@pytest.fixture(scope="module")
def long_run() -> RunData:
    """A run with 88 probe steps more than the charts draw (ln_viz.server.store.SHOWN_PROBE_STEPS), trained once."""
    from ln_viz.server.store import SHOWN_PROBE_STEPS

    return run(TINY.replace(steps=SHOWN_PROBE_STEPS + 88, probe_every=1, eval_every=0))


@pytest.mark.slow  # seconds of real training or waiting: CI's lane 1, out of the fast lane
def test_compare_of_two_long_stored_runs_reads_them_thinned_with_their_steps_aligned(
    store_path: Path, long_run: RunData
) -> None:
    """Issue 21 X5: Compare read its two stored runs whole (two 10,000-step depth-48 runs probed every step:
    the server from 157 MB to 2.4 GB). Each is now read with at most SHOWN_PROBE_STEPS probe steps, the
    same ones in both, so the step control still moves over steps both measured."""
    from ln_viz.server.store import SHOWN_PROBE_STEPS
    from ln_viz.ui import storage

    with Store(store_path) as store:
        ids = [store.add_run(long_run, label=name, source="train") for name in ("one", "two")]
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["compare_runs"] = ids
    at.switch_page("pages/compare.py").run()
    assert not at.exception, at.exception
    steps = [int(s) for s in at.select_slider(key="compare_step").options]
    assert 2 <= len(steps) <= SHOWN_PROBE_STEPS and steps[-1] == long_run.probe_steps[-1]
    held = [entry for entry, _ in storage.run_cache()._entries.values()]
    assert len(held) == 2 and all(d.probe_steps == steps for d in held)  # thinned alike, not whole
    assert storage.run_cache().held_bytes == sum(d.nbytes() for d in held)
    assert all(d.nbytes() < long_run.nbytes() for d in held)


def test_the_run_cache_holds_at_most_its_bytes_least_recently_used_out_first(tiny_run: RunData) -> None:
    """Issue 21 X5: the cache of stored runs kept 8 runs whatever their size (8 whole 10,000-step depth-48
    runs: about 6 GB); it is bounded in bytes now. Any run shows it: the bound is in its bytes."""
    from ln_viz.server.store import MAX_CACHED_BYTES, RunCache

    size = tiny_run.nbytes()
    assert MAX_CACHED_BYTES < 512 * 1024**2  # what all visitors' opened runs may hold together
    cache = RunCache(max_bytes=int(size * 2.5))
    for key in ("a", "b", "c"):
        assert cache.get(key, lambda: tiny_run) is tiny_run
    assert len(cache) == 2 and cache.held_bytes == 2 * size  # "a" went first
    cache.get("b", lambda: pytest.fail("b is cached"))  # used again: now "c" is the oldest
    cache.get("d", lambda: tiny_run)
    assert set(cache._entries) == {"b", "d"}
    small = RunCache(max_bytes=size - 1)
    assert small.get("a", lambda: tiny_run) is tiny_run and len(small) == 0 and small.held_bytes == 0


@pytest.mark.slow  # seconds of real training or waiting: CI's lane 1, out of the fast lane
def test_a_long_stored_run_is_drawn_thinned_said_so_and_downloaded_whole(store_path: Path, long_run: RunData) -> None:
    """A run with more probe steps than the charts draw (ln_viz.server.store.SHOWN_PROBE_STEPS) is read into the
    shared cache thinned, not whole (a 10,000-step depth-48 run probed every step would hold ~750 MB per
    cached copy), the page says so, and the tables and the run file still hold every probe step."""
    import gzip
    import io
    import zipfile

    from ln_viz.server.store import SHOWN_PROBE_STEPS
    from ln_viz.ui import run_downloads, runs_view

    with Store(store_path) as store:
        run_id = store.add_run(long_run, label="long", source="train")
    at = open_page()
    select(at, 0)
    shown = [int(s) for s in at.select_slider(key="runs_probe_step").options]
    assert 2 <= len(shown) <= SHOWN_PROBE_STEPS and shown[-1] == SHOWN_PROBE_STEPS + 88
    assert any("one in 2, evenly spaced" in c.value for c in at.caption), [c.value for c in at.caption]
    with Store(store_path) as store:
        summary = store.summary(run_id)
        data = runs_view.open_run(store, summary)
        assert data.probe_steps == shown  # the charts' copy, thinned
        builds = {ext: build for _, ext, build, _ in run_downloads.lazy_downloads(store, data, summary)}
        run_file = json.loads(gzip.decompress(builds["json.gz"]()))
        with zipfile.ZipFile(io.BytesIO(builds["csv.zip"]())) as archive:
            grads = pd.read_csv(archive.open("grad_norms.csv"))
    assert len(long_run.probe_steps) == SHOWN_PROBE_STEPS + 88
    assert run_file["probe_steps"] == long_run.probe_steps  # every one, not the charts' copy
    assert sorted(grads["step"].unique()) == long_run.probe_steps
    print(f"\n{len(long_run.probe_steps)} probe steps stored and downloaded, {len(shown)} drawn")


@pytest.mark.slow  # the module's 600-step run probed every step, trained and decoded
def test_whole_run_downloads_are_built_one_at_a_time_on_the_server(store_path: Path, long_run: RunData, monkeypatch):
    """Issue 21 X5 (left after the re-check): each download button decodes the whole run on click, about
    1.6 GB for the largest run a visitor may train; three clicks at once held three copies. Now the server
    builds one at a time: the store's whole-run reads never overlap, and every file is still whole."""
    import threading
    import time

    from ln_viz.ui import run_downloads, runs_view

    with Store(store_path) as store:
        run_id = store.add_run(long_run, label="long", source="train")
    inside, most = [0], [0]
    lock = threading.Lock()
    real_open = Store.open_run

    def counting_open(self, *args, **kwargs):
        whole = kwargs.get("max_probe_steps") is None and len(args) < 2
        if whole:
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            time.sleep(0.3)  # long enough for the other clicks to arrive meanwhile
        try:
            return real_open(self, *args, **kwargs)
        finally:
            if whole:
                with lock:
                    inside[0] -= 1

    with Store(store_path) as store:
        summary = store.summary(run_id)
        data = runs_view.open_run(store, summary)
        assert data.probe_stride > 1  # the charts' copy is thinned: each download reads the whole run
        monkeypatch.setattr(Store, "open_run", counting_open)
        builds = [build for _, _, build, _ in run_downloads.lazy_downloads(store, data, summary)]
        out: list[bytes] = []
        clicks = [threading.Thread(target=lambda b=b: out.append(b())) for b in builds]
        for c in clicks:
            c.start()
        for c in clicks:
            c.join(60)
    assert len(out) == 3 and all(len(b) > 1000 for b in out)
    assert most[0] == 1, f"{most[0]} whole runs decoded at once"


# --- seed groups ----------------------------------------------------------------------------------------
@pytest.fixture
def group_of_three(store_path: Path, measured: dict[str, RunData]) -> dict[str, list[int]]:
    """Three runs of seed group "compare-a1b2" stored between two runs of their own, so that newest
    first interleaves them: g1, pre, g2, post, g3 in the order stored."""
    ids: dict[str, list[int]] = {"group": [], "alone": []}
    with Store(store_path) as store:
        for i, (kind, data) in enumerate(
            [
                ("group", measured["pre"]),
                ("alone", measured["pre"]),
                ("group", measured["post"]),
                ("alone", measured["post"]),
                ("group", measured["pre"]),
            ]  # fmt: skip
        ):
            group = "compare-a1b2" if kind == "group" else None
            ids[kind].append(store.add_run(data, label=f"{kind} {i}", source="train", group=group, created=1e9 + i))
    return ids


def test_a_seed_group_is_listed_together_and_says_so(group_of_three: dict[str, list[int]]) -> None:
    at = open_page()
    g1, g2, g3 = group_of_three["group"]
    first, second = group_of_three["alone"]
    # newest first places the group where its newest run is, its three runs side by side
    assert shown_ids(at) == [g3, g2, g1, second, first]
    assert list(table(at).value["group"]) == ["compare-a1b2 (3)"] * 3 + ["", ""]
    at.selectbox(key="runs_sort").set_value("oldest").run()
    assert shown_ids(at) == [g1, g2, g3, first, second]
    select(at, 1)
    assert at.subheader[0].value == f"Run {g2}: group 2"
    assert any("One of the 3 runs of seed group compare-a1b2" in c.value for c in at.caption)
    buttons = {b.proto.label: b for b in at.get("download_button")}
    assert "The group's run files (3 runs)" in buttons
    select(at, 3)  # a run of its own: no group line, no group download
    assert not any("seed group" in c.value for c in at.caption)
    assert not any("group" in label for label in (b.proto.label for b in at.get("download_button")))
    at.session_state["lang"] = "ko"  # what the sidebar's language choice sets
    at.run()
    assert not at.exception, at.exception
    assert list(table(at).value["group"])[:3] == ["compare-a1b2 (3개)"] * 3


def test_a_seed_group_downloads_as_one_zip_of_its_run_files(
    store_path: Path, group_of_three: dict[str, list[int]], measured: dict[str, RunData]
) -> None:
    import io
    import zipfile

    from ln_viz.runfile import read_run_data
    from ln_viz.ui import run_downloads

    with Store(store_path) as store:
        count, build = run_downloads.group_zip(store, "compare-a1b2")
        archive = zipfile.ZipFile(io.BytesIO(build()))
    g1, g2, g3 = group_of_three["group"]
    names = archive.namelist()
    assert count == 3
    assert names == [f"ln-viz-run-{g1}-group-0.json.gz", f"ln-viz-run-{g2}-group-2.json.gz",
                     f"ln-viz-run-{g3}-group-4.json.gz", "group.json"]  # fmt: skip
    manifest = json.loads(archive.read("group.json"))
    assert manifest["seed_group"] == "compare-a1b2" and [r["id"] for r in manifest["runs"]] == [g1, g2, g3]
    back = read_run_data(archive.read(names[1]), names[1])  # each file imports as the run it was
    assert back.label == "group 2"
    assert back.data.final_loss() == measured["post"].final_loss()


def test_a_stored_run_and_a_compared_pair_offer_the_lecture_pack(two_runs: dict[str, int]) -> None:
    """The Runs page offers one run's lecture pack, Compare the pair's (built on click: ln_viz/pack.py,
    its file tested in tests/test_pack.py)."""
    from ln_viz.i18n import t

    def packs(at: AppTest) -> list[str]:
        return [b.proto.label for b in at.get("download_button") if b.proto.label == t("pack.download", "en")]

    at = select(open_page(), 0, 1)
    assert packs(at) == [t("pack.download", "en")]  # the run shown
    at.button(key="runs_compare").click().run()
    assert not at.exception, at.exception
    assert packs(at) == [t("pack.download", "en")]  # both runs in one file
