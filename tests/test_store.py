"""The run store: what is written while a run trains comes back exactly, survives its writer dying,
and the store refuses files it cannot read with one sentence."""

from __future__ import annotations

import dataclasses
import io
import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from ln_viz.cli import main
from ln_viz.config import RunConfig
from ln_viz.schema import PROBE_NAMES, SCALAR_NAMES
from ln_viz.snapshot import RunData, RunInfo, Snapshot
from ln_viz.store import (
    MIGRATIONS,
    SCHEMA_VERSION,
    RunFilter,
    RunWriter,
    Store,
    StoreError,
    WriterLock,
    default_store_path,
    migrate,
)
from ln_viz.store import rows as store_rows
from ln_viz.store import writer as store_writer
from tests.runs import TINY, assert_same_run


def write_run(store: Store, info: RunInfo, snaps: list[Snapshot], label: str | None = None) -> int:
    with RunWriter(store) as writer:
        run_id = writer.begin(info, label=label)
        for snap in snaps:
            writer.add(snap)
    return run_id


def synthetic_run(depth: int, steps: int, probe_every: int) -> tuple[RunInfo, list]:
    """Snapshots with the real probe shapes and random values: for sizes and timings, no training."""
    cfg = RunConfig(depth=depth, steps=steps, probe_every=probe_every)
    info = RunInfo(cfg, 80, 600_000, 3.0, None, ["ln1", "ln2"])
    rng = np.random.default_rng(0)
    L, S = depth, len(info.stat_names)

    def probes() -> dict[str, np.ndarray]:
        shapes = {
            "resid_hist": (L, 128),
            "resid_stats": (L, S),
            "norm_in_hist": (L, 2, 128),
            "norm_in_stats": (L, 2, S),
            "attn_entropy": (L,),
            "input_stats": (S,),
            "grad_norm": (L, 6),
            "block_grad_norm": (L,),
            "update_ratio": (L,),
        }
        return {n: rng.random(s, dtype=np.float32) for n, s in shapes.items()}

    snaps = [
        Snapshot(
            t,
            3.0 - t * 1e-3,
            3e-3,
            1.0,
            t * 0.1,
            10.0,
            status="completed" if t == steps else "running",
            eval_loss=2.5 if t % 50 == 0 else None,
            probes=probes() if t == 1 or t % probe_every == 0 else None,
        )
        for t in range(1, steps + 1)
    ]
    return info, snaps


# --- round trip -----------------------------------------------------------------------------------
def test_written_listed_reopened_equal(tmp_path: Path, tiny_snapshots) -> None:
    info, snaps = tiny_snapshots
    measured = RunData.from_snapshots(info, snaps)
    with Store(tmp_path / "runs.sqlite") as store:
        run_id = write_run(store, info, snaps, label="first")
        [summary] = store.list_runs()
        assert summary.id == run_id
        assert summary.label == "first"
        assert summary.status == "completed"
        assert summary.steps_done == TINY.steps
        assert (summary.norm_position, summary.depth) == ("pre", 2)
        assert summary.final_loss == measured.final_loss()
        assert summary.writer_pid is not None
        assert_same_run(store.open_run(run_id), measured)
    with Store(tmp_path / "runs.sqlite", readonly=True) as store:  # and from a fresh connection
        assert_same_run(store.open_run(run_id), measured)


def test_a_run_opened_for_display_keeps_at_most_the_probe_steps_asked_for(tmp_path: Path, tiny_snapshots) -> None:
    info, snaps = tiny_snapshots
    measured = RunData.from_snapshots(info, snaps)  # TINY: 7 probe steps
    with Store(tmp_path / "runs.sqlite") as store:
        thin = store.open_run(write_run(store, info, snaps), max_probe_steps=3)
    assert 2 <= len(thin.probe_steps) <= 3 and thin.probe_stride > 1
    assert thin.probe_steps[0] == measured.probe_steps[0] and thin.probe_steps[-1] == measured.probe_steps[-1]
    for step, row in zip(thin.probe_steps, thin.probe("grad_norm")):
        np.testing.assert_array_equal(row, measured.probe("grad_norm")[measured.probe_steps.index(step)])
    assert thin.scalars["step"] == measured.scalars["step"]


def test_a_thinned_read_decodes_only_the_probe_steps_it_keeps(tmp_path: Path, monkeypatch) -> None:
    """Issue 21 X5: opening a 10,000-step depth-48 run probed every step for the charts took the server from
    157 MB to 1.7 GB, since every probe row was decoded before the copy was thinned to 512 steps. The steps
    are now chosen from the scalar rows first: only the kept steps' rows are decoded, and the copy is the
    one the old replay thinned (same steps, arrays, stride)."""
    info, snaps = synthetic_run(depth=2, steps=600, probe_every=1)
    with Store(tmp_path / "runs.sqlite") as store:
        run_id = write_run(store, info, snaps)
        whole = store.open_run(run_id)
        decoded = []
        real = store_rows.blob_to_array
        monkeypatch.setattr(store_rows, "blob_to_array", lambda *a: decoded.append(a) or real(*a))
        thin = store.open_run(run_id, max_probe_steps=50)
        stored_names = len(snaps[0].probes)
        assert len(whole.probe_steps) == 600 and 25 <= len(thin.probe_steps) <= 50
        assert len(decoded) == len(thin.probe_steps) * stored_names  # not 600 steps' rows, then thinned
        assert store.probe_steps(run_id) == whole.probe_steps
        listed = store.open_run(run_id, probe_steps=[1, 7, 599, 600, 9999])
    assert len(decoded) == (len(thin.probe_steps) + 4) * stored_names
    old_way = RunData.from_snapshots(info, whole.snapshots(), max_probe_steps=50)
    old_way.settle(whole.status, whole.message, whole.diverged_at)
    assert_same_run(thin, old_way)
    assert (thin.probe_stride, thin.max_probe_steps, thin._probe_ordinals) == (
        old_way.probe_stride,
        50,
        old_way._probe_ordinals,
    )
    assert listed.probe_steps == [1, 7, 599, 600]  # only the steps it measured
    for step, row in zip(listed.probe_steps, listed.probe("grad_norm")):
        np.testing.assert_array_equal(row, whole.probe("grad_norm")[step - 1])
    assert listed.scalars["step"] == whole.scalars["step"]


def test_non_finite_values_and_missing_probes_come_back(tmp_path: Path, tiny_snapshots) -> None:
    """A diverged step: NaN loss (stored as NULL), inf grad norm, probe arrays missing (NaN blanks)."""
    info, snaps = tiny_snapshots
    last = snaps[9]
    bad = Snapshot(
        last.step + 1,
        math.nan,
        last.lr,
        math.inf,
        last.elapsed,
        last.steps_per_sec,
        status="diverged",
        message="msg.diverged",
        probes={"resid_hist": np.full_like(snaps[0].probes["resid_hist"], np.nan)},
    )
    run = [*snaps[:10], bad]
    measured = RunData.from_snapshots(info, run)
    with Store(tmp_path / "runs.sqlite") as store:
        run_id = write_run(store, info, run)
        back = store.open_run(run_id)
    assert_same_run(back, measured)
    assert back.status == "diverged" and back.diverged_at == bad.step
    assert math.isinf(back.scalars["grad_norm"][-1])
    assert np.isnan(back.probe("grad_norm")[-1]).all()


def test_sorting_by_loss_counts_a_diverged_run_as_the_worst(tmp_path: Path, tiny_snapshots) -> None:
    """A diverged run's stored final loss is its last finite one (lower than the whole run's here): the
    table shows "diverged", so by loss it sorts last when the lowest come first, first otherwise."""
    info, snaps = tiny_snapshots
    last = snaps[9]
    bad = Snapshot(last.step + 1, math.nan, last.lr, math.inf, last.elapsed, last.steps_per_sec,
                   status="diverged", message="msg.diverged")  # fmt: skip
    with Store(tmp_path / "runs.sqlite") as store:
        whole = write_run(store, info, snaps[:4])  # a short run: its final loss is higher
        diverged = write_run(store, info, [*snaps, bad])  # its last finite losses are the lower ones
        early = store.summary(diverged)
        assert early.status == "diverged"
        assert [r.id for r in store.list_runs(sort="final_loss")] == [whole, diverged]
        assert [r.id for r in store.list_runs(sort="-final_loss")] == [diverged, whole]


def test_add_run_stores_a_finished_run(tmp_path: Path, tiny_snapshots) -> None:
    info, snaps = tiny_snapshots
    measured = RunData.from_snapshots(info, snaps)
    with Store(tmp_path / "runs.sqlite") as store:
        run_id = store.add_run(measured, label="copy", created=1_000.0)
        assert_same_run(store.open_run(run_id), measured)
        assert store.summary(run_id).created == 1_000.0


# --- writing while running ------------------------------------------------------------------------
def test_commits_while_running_and_readers_see_it(tmp_path: Path, tiny_snapshots) -> None:
    info, snaps = tiny_snapshots
    path = tmp_path / "runs.sqlite"
    with Store(path) as store:
        writer = RunWriter(store, flush_every=0.05)
        run_id = writer.begin(info)
        for snap in snaps[:12]:
            writer.add(snap)
        deadline = time.monotonic() + 5
        with Store(path, readonly=True) as reader:
            while reader.summary(run_id).steps_done < 12 and time.monotonic() < deadline:
                time.sleep(0.02)
            assert reader.summary(run_id).steps_done == 12  # committed by the thread, no finish()
            assert len(reader.open_run(run_id).scalars["step"]) == 12
        # another writable opener runs recover(): the live run (its lock is held) is left alone
        with Store(path) as other:
            assert other.recover() == []
            assert other.summary(run_id).status == "running"
            with pytest.raises(StoreError, match="still being written"):
                other.delete(run_id)
        for snap in snaps[12:]:
            writer.add(snap)
        writer.finish()
        assert store.summary(run_id).status == "completed"
        assert not any(store.lock_dir.iterdir())  # the lock file went with the writer


def test_readers_do_not_block_the_writer(tmp_path: Path, tiny_snapshots) -> None:
    """A reader holding a read transaction open must not make the writer wait (WAL)."""
    info, snaps = tiny_snapshots
    path = tmp_path / "runs.sqlite"
    with Store(path) as store:
        writer = RunWriter(store, flush_every=60)  # we flush by hand
        run_id = writer.begin(info)
        reader = sqlite3.connect(path, isolation_level=None)
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM scalars").fetchone()  # read lock taken
        for snap in snaps:
            writer.add(snap)
        started = time.monotonic()
        writer.flush()
        assert time.monotonic() - started < 1.0
        reader.execute("COMMIT")
        reader.close()
        writer.finish()
        assert store.summary(run_id).steps_done == TINY.steps


def test_dead_writer_is_marked_interrupted_with_its_steps(tmp_path: Path, tiny_snapshots) -> None:
    """In-process stand-in for a killed writer: the lock is dropped without finish()."""
    info, snaps = tiny_snapshots
    path = tmp_path / "runs.sqlite"
    with Store(path) as store:
        finished = write_run(store, info, snaps, label="earlier")
        writer = RunWriter(store)
        run_id = writer.begin(info)
        for snap in snaps[:7]:
            writer.add(snap)
        writer.flush()
        writer._stop_thread()
        writer._lock.release()  # what the kernel does when the process dies
        writer._lock = None
    with Store(path) as store:  # opening for writing recovers
        summary = store.summary(run_id)
        assert (summary.status, summary.message) == ("interrupted", "msg.interrupted")
        assert summary.steps_done == 7
        data = store.open_run(run_id)
        assert data.status == "interrupted" and data.scalars["step"] == list(range(1, 8))
        assert store.summary(finished).status == "completed"
    writer._db.close()


def test_writer_lock_is_seen_by_the_same_process(tmp_path: Path) -> None:
    """flock, not lockf: an app that trains in a thread and lists runs in another must see its lock."""
    lock = WriterLock(tmp_path / "x.lock")
    assert not WriterLock.is_free(lock.path)
    lock.release()
    assert WriterLock.is_free(lock.path)


def test_exception_in_writer_block_finishes_as_failed(tmp_path: Path, tiny_snapshots) -> None:
    info, snaps = tiny_snapshots
    with Store(tmp_path / "runs.sqlite") as store:
        with pytest.raises(RuntimeError, match="boom"), RunWriter(store) as writer:
            run_id = writer.begin(info)
            writer.add(snaps[0])
            raise RuntimeError("boom")
        assert store.summary(run_id).status == "failed"
        assert store.summary(run_id).steps_done == 1


def test_a_failing_disk_is_one_sentence_and_the_run_ends_with_its_committed_steps(
    tmp_path: Path, tiny_snapshots, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that fails never raises into the training loop: `problem` says why (the same object
    for the whole episode, so it is reported once), and finish() commits the final status over the
    steps committed before, saying the rest is missing."""
    info, snaps = tiny_snapshots
    path = tmp_path / "runs.sqlite"
    with Store(path) as store:
        writer = RunWriter(store, flush_every=0.02)
        run_id = writer.begin(info)
        writer.add(snaps[0])
        writer.flush()

        def disk_full(*args: object) -> None:
            raise sqlite3.OperationalError("database or disk is full")

        monkeypatch.setattr(store_writer, "write_rows", disk_full)
        seen = set()
        for snap in snaps[1:]:
            writer.add(snap)  # never raises
            time.sleep(0.01)
            if writer.problem is not None:
                seen.add(id(writer.problem))
        assert len(seen) == 1 and "database or disk is full" in str(writer.problem)
        problem = writer.finish()
        monkeypatch.undo()
        assert str(problem).startswith(f"Only 1 of {len(snaps)} steps of this run were stored")
        summary = store.summary(run_id)
        assert (summary.status, summary.message, summary.steps_done) == ("completed", "msg.store_incomplete", 1)
        assert not any(store.lock_dir.iterdir())


def test_finish_without_final_snapshot_is_stopped(tmp_path: Path, tiny_snapshots) -> None:
    info, snaps = tiny_snapshots
    with Store(tmp_path / "runs.sqlite") as store:
        with RunWriter(store) as writer:
            run_id = writer.begin(info)
            for snap in snaps[:5]:
                writer.add(snap)
        assert store.summary(run_id).status == "stopped"


# --- list, label, delete ----------------------------------------------------------------------------
def test_list_filters_and_sorts(tmp_path: Path, tiny_snapshots) -> None:
    info, snaps = tiny_snapshots
    post = RunInfo.from_dict({**info.to_dict(), "config": {**TINY.to_dict(), "norm_position": "post"}})
    with Store(tmp_path / "runs.sqlite") as store:
        a = write_run(store, info, snaps, label="Pre run")
        b = write_run(store, post, snaps[:10], label="post run")
        assert [s.id for s in store.list_runs()] == [b, a]  # newest first
        assert [s.id for s in store.list_runs(sort="created")] == [a, b]
        assert [s.id for s in store.list_runs(RunFilter(norm_position=("post",)))] == [b]
        assert [s.id for s in store.list_runs(RunFilter(status=("completed",)))] == [a]
        assert [s.id for s in store.list_runs(RunFilter(label_contains="pre"))] == [a]
        assert [s.id for s in store.list_runs(RunFilter(depth=3))] == []
        with pytest.raises(StoreError, match="sort must be one of"):
            store.list_runs(sort="colour")


def test_label_and_delete(tmp_path: Path, tiny_snapshots) -> None:
    info, snaps = tiny_snapshots
    with Store(tmp_path / "runs.sqlite") as store:
        keep = write_run(store, info, snaps[:3])
        gone = write_run(store, info, snaps)
        store.label(keep, "  warm-up helps  ")
        assert store.summary(keep).label == "warm-up helps"
        store.label(keep, "")
        assert store.summary(keep).label is None
        with pytest.raises(StoreError, match="at most 200 characters"):
            store.label(keep, "x" * 201)
        store.delete(gone)
        assert [s.id for s in store.list_runs()] == [keep]
        for table in ("scalars", "probes"):
            count = store._db.execute(f"SELECT count(*) FROM {table} WHERE run_id = ?", (gone,)).fetchone()[0]
            assert count == 0, table
        for call in (store.open_run, store.delete, lambda i: store.label(i, "x")):
            with pytest.raises(StoreError, match=f"there is no run {gone} in"):
                call(gone)


# --- files the store refuses, versions ---------------------------------------------------------------
def test_not_a_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.sqlite"
    path.write_text("these are my notes, not a database\n" * 100)
    for readonly in (False, True):
        with pytest.raises(StoreError, match="is not an ln-viz run store"):
            Store(path, readonly=readonly)
    assert path.read_text().startswith("these are my notes")


def test_missing_store_read_only_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="there is no run store at"):
        Store(tmp_path / "nothing.sqlite", readonly=True)
    assert not (tmp_path / "nothing.sqlite").exists()


def test_newer_schema_is_refused_with_a_sentence(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    Store(path).close()
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    db.close()
    for readonly in (False, True):
        with pytest.raises(StoreError) as err:
            Store(path, readonly=readonly)
        text = str(err.value)
        assert f"schema version {SCHEMA_VERSION + 5}" in text
        assert "upgrade ln-viz" in text
        assert "\n" not in text
        assert "업그레이드" in err.value.message("ko")


def test_a_version_1_store_is_migrated(tmp_path: Path, tiny_snapshots) -> None:
    """A store written before version 2 (no source, fingerprint, meta) opens, upgraded, data intact."""
    info, snaps = tiny_snapshots
    measured = RunData.from_snapshots(info, snaps)
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path, isolation_level=None)
    assert migrate(db, path, upto=1) == 1
    # a run stored the way version 1 stored it
    db.execute("BEGIN")
    run_id = store_rows.insert_run(db, info, label="old", status="completed")
    scalar_rows = [store_rows.scalar_row(run_id, snap) for snap in measured.snapshots()]
    blobs = [
        (run_id, step, name, *store_rows.array_to_blob(measured.probes[name][j]))
        for j, step in enumerate(measured.probe_steps)
        for name in PROBE_NAMES
    ]
    store_rows.write_rows(db, scalar_rows, blobs)
    db.execute(
        "UPDATE runs SET steps_done = ?, final_loss = ? WHERE id = ?",
        (measured.steps_done, measured.final_loss(), run_id),
    )
    db.execute("COMMIT")
    assert "source" not in {r[1] for r in db.execute("PRAGMA table_info(runs)")}
    db.close()
    assert len(MIGRATIONS) == SCHEMA_VERSION >= 2
    with Store(path) as store:
        assert store._db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        summary = store.summary(run_id)
        assert (summary.label, summary.source, summary.steps_done) == ("old", "train", TINY.steps)
        assert_same_run(store.open_run(run_id), measured)
        copy = store.add_run(measured, fingerprint="abc")  # the new columns work
        assert store.find_fingerprint("abc") == copy


def test_a_version_2_store_is_migrated_to_seed_groups(tmp_path: Path, tiny_snapshots) -> None:
    """A store written before version 3 (no seed_group) opens, upgraded: its runs belong to no group,
    and runs recorded since keep theirs, which the list filters by and the CLI's JSON shows."""
    from ln_viz.recorder import Recorder

    info, snaps = tiny_snapshots
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path, isolation_level=None)
    assert migrate(db, path, upto=2) == 2
    db.execute("BEGIN")
    old = store_rows.insert_run(db, info, label="old", status="completed")
    db.execute("COMMIT")
    assert "seed_group" not in {r[1] for r in db.execute("PRAGMA table_info(runs)")}
    db.close()
    with Store(path) as store:
        assert store._db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION >= 3
        assert store.summary(old).seed_group is None and store.summary(old).label == "old"
        recorder = Recorder(store)
        for run_id, group in (("r1", "compare-1"), ("r2", None), ("r3", "compare-1")):
            recorder.on_start(run_id, info, group)
            recorder.on_finish(run_id, SimpleNamespace(status="completed", message=None))
        ids = {rid: recorder.store_id(rid) for rid in ("r1", "r2", "r3")}
        grouped = store.list_runs(RunFilter(seed_group="compare-1"), sort="id")
        assert [r.id for r in grouped] == [ids["r1"], ids["r3"]]
        assert store.summary(ids["r2"]).seed_group is None
        assert store.summary(ids["r1"]).to_dict()["seed_group"] == "compare-1"
        assert store.summary(ids["r1"]).damage() is None
        assert store.group_sizes() == {"compare-1": 2}
    code, out, _ = cli("runs", "list", "--store", str(path), "--sort", "id")
    header, *lines = out.strip().splitlines()
    assert code == 0 and "seed group" in header
    assert [line.split()[8] for line in lines] == ["-", "compare-1", "-", "compare-1"]  # the old run, r1, r2, r3
    code, out, _ = cli("runs", "list", "--json", "--store", str(path), "--sort", "id")
    assert [r["seed_group"] for r in json.loads(out)] == [None, "compare-1", None, "compare-1"]


def test_schema_version_is_set(tmp_path: Path) -> None:
    Store(tmp_path / "runs.sqlite").close()
    db = sqlite3.connect(tmp_path / "runs.sqlite")
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()


def test_the_tables_hold_the_schemas_scalars_and_the_configs_fields(tmp_path: Path) -> None:
    """The migrations' SQL is history, never edited: the scalars table they create must still be the
    schema's scalars, and the runs row's copied config columns RunConfig's fields."""
    Store(tmp_path / "runs.sqlite").close()
    db = sqlite3.connect(tmp_path / "runs.sqlite")
    scalars = [r[1] for r in db.execute("PRAGMA table_info(scalars)")]
    runs = {r[1] for r in db.execute("PRAGMA table_info(runs)")}
    db.close()
    assert scalars == ["run_id", *SCALAR_NAMES, "stalled", "has_probes"]
    assert set(store_rows.CONFIG_COLUMNS) <= {f.name for f in dataclasses.fields(RunConfig)}
    assert set(store_rows.CONFIG_COLUMNS) <= runs


def test_default_path_follows_env(tmp_path: Path) -> None:
    assert default_store_path({"LN_VIZ_STORE": str(tmp_path / "a.sqlite")}) == (tmp_path / "a.sqlite")
    assert default_store_path({"XDG_DATA_HOME": str(tmp_path)}) == (tmp_path / "ln-viz" / "runs.sqlite")
    home = default_store_path({"XDG_DATA_HOME": "relative/ignored"})
    assert home == Path.home() / ".local/share/ln-viz/runs.sqlite"


# --- size and speed ---------------------------------------------------------------------------------
def test_open_time_and_size_of_a_1000_step_depth_12_run(tmp_path: Path) -> None:
    """The figure the issue asks for: 1,000 steps, depth 12, probes every 10 steps (101 probe steps).
    Synthetic values with the real shapes: size and time do not depend on the values."""
    info, snaps = synthetic_run(depth=12, steps=1000, probe_every=10)
    path = tmp_path / "runs.sqlite"
    with Store(path) as store:
        run_id = write_run(store, info, snaps)
    size = path.stat().st_size
    times = []
    for _ in range(3):
        started = time.perf_counter()
        with Store(path, readonly=True) as store:
            data = store.open_run(run_id)
        times.append(time.perf_counter() - started)
    assert data.probe("norm_in_hist").shape == (101, 12, 2, 128)
    print(f"\nstore size {size / 1e6:.2f} MB, open_run best of 3 {min(times) * 1e3:.0f} ms")
    assert size < 4e6
    assert min(times) < 1.0


# --- a writer killed for real ------------------------------------------------------------------------
TRAIN_FLAGS = [
    "--depth",
    "2",
    "--d-model",
    "16",
    "--heads",
    "2",
    "--seq-len",
    "16",
    "--batch-size",
    "4",
    "--probe-every",
    "10",
    "--eval-every",
    "0",
    "--threads",
    "1",
]


@pytest.mark.slow  # spawns a training process: 5-30 s on the 2-core machine
def test_sigkill_of_a_training_process_leaves_a_good_store(tmp_path: Path, tiny_snapshots) -> None:
    """`python -m ln_viz train --store` killed with SIGKILL mid-run: the store opens, the earlier run
    is intact, the killed run is `interrupted` with every step committed up to the last second."""
    info, snaps = tiny_snapshots
    path = tmp_path / "runs.sqlite"
    with Store(path) as store:
        earlier = write_run(store, info, snaps, label="earlier")
    proc = subprocess.Popen(
        [sys.executable, "-m", "ln_viz", "train", *TRAIN_FLAGS, "--steps", "100000", "--store", str(path), "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    try:
        reader = sqlite3.connect(path, isolation_level=None)
        deadline = time.monotonic() + 120
        seen = 0
        while seen < 30 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
            row = reader.execute("SELECT max(steps_done) FROM runs WHERE id != ?", (earlier,)).fetchone()
            seen = row[0] or 0
        assert seen >= 30, proc.stderr.read().decode() if proc.poll() is not None else "too slow"
        time.sleep(0.3)  # land between two commits
        seen = reader.execute("SELECT max(steps_done) FROM runs WHERE id != ?", (earlier,)).fetchone()[0]
        reader.close()
        proc.send_signal(signal.SIGKILL)
        killed_at = time.time()
    finally:
        proc.kill()
        proc.wait()
        proc.stderr.close()
    with Store(path) as store:
        [killed] = [s for s in store.list_runs() if s.id != earlier]
        assert (killed.status, killed.message) == ("interrupted", "msg.interrupted")
        assert killed.steps_done >= seen
        lag = killed_at - killed.updated
        print(f"\nkilled at step >= {seen}; stored {killed.steps_done} steps, last commit {lag:.2f} s before the kill")
        assert lag < 1.0  # its last commit was within the last second
        data = store.open_run(killed.id)
        assert data.scalars["step"] == list(range(1, killed.steps_done + 1))
        assert data.probe_steps == [1, *range(10, killed.steps_done + 1, 10)]
        assert data.probe("resid_hist").shape[1:] == (2, 128)
        assert_same_run(store.open_run(earlier), RunData.from_snapshots(info, snaps))
        assert not any(store.lock_dir.iterdir())  # the dead writer's lock file was cleaned up


# --- the CLI ------------------------------------------------------------------------------------------
def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_cli_train_store_and_runs_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "runs.sqlite"
    code, out, err = cli("train", *TRAIN_FLAGS, "--steps", "20", "--store", str(path), "--label", "cli", "--json")
    assert code == 0, err
    run_id = json.loads(out)["run_id"]
    monkeypatch.setenv("LN_VIZ_STORE", str(path))  # the environment names the store too
    code, out, err = cli("train", *TRAIN_FLAGS, "--norm-position", "post", "--steps", "10", "--json")
    assert code == 0, err
    second = json.loads(out)["run_id"]
    monkeypatch.delenv("LN_VIZ_STORE")
    code, out, err = cli("runs", "list", "--json", "--store", str(path))
    assert code == 0 and err == ""
    listed = json.loads(out)
    assert [r["id"] for r in listed] == [second, run_id]
    for r in listed:
        assert {"id", "status", "norm_position", "depth", "final_loss", "created"} <= r.keys()
        assert "user_text" not in json.dumps(r)
    assert listed[1]["label"] == "cli" and listed[1]["status"] == "completed"
    assert listed[0]["norm_position"] == "post"
    with Store(path) as store:
        data = store.open_run(run_id)
    assert data.probe_steps == [1, 10, 20]  # the stored run keeps its probes
    code, out, _ = cli("runs", "list", "--store", str(path), "--norm-position", "post")
    assert code == 0 and len(out.strip().splitlines()) == 2  # header and one run
    code, out, _ = cli("runs", "list", "--json", "--store", str(tmp_path / "none.sqlite"))
    assert (code, out.strip()) == (0, "[]")


def test_cli_label_delete_and_bad_ids(tmp_path: Path, tiny_snapshots) -> None:
    info, snaps = tiny_snapshots
    path = tmp_path / "runs.sqlite"
    with Store(path) as store:
        run_id = write_run(store, info, snaps)
    assert cli("runs", "label", str(run_id), "good one", "--store", str(path))[0] == 0
    with Store(path) as store:
        assert store.summary(run_id).label == "good one"
    notes = tmp_path / "notes.txt"
    notes.write_text("not a database\n" * 50)
    bad = {
        ("runs", "delete", "99", "--store", str(path)): "there is no run 99 in",
        ("runs", "label", "99", "x", "--store", str(path)): "there is no run 99 in",
        ("runs", "export", "99", "--format", "run", "--out", str(tmp_path / "x.json"), "--store", str(path)): (
            "there is no run 99"
        ),
        ("runs", "delete", "one", "--store", str(path)): "invalid int value: 'one'",
        ("runs", "list", "--store", str(notes)): "is not an ln-viz run store",
        ("runs", "delete", "1", "--store", str(tmp_path / "none.sqlite")): "there is no run store at",
        ("runs", "list", "--sort", "colour", "--store", str(path)): "sort must be one of",
        ("train", *TRAIN_FLAGS, "--steps", "5", "--store", str(notes)): "is not an ln-viz run store",
    }
    for argv, expected in bad.items():
        code, out, err = cli(*argv)
        assert code == 2, argv
        assert out == ""
        assert err.startswith("error: ") and expected in err, err
        assert err.count("\n") == 1, err
    assert not (tmp_path / "none.sqlite").exists()
    assert cli("runs", "delete", str(run_id), "--store", str(path))[0] == 0
    with Store(path) as store:
        assert store.list_runs() == []


def test_the_recorder_picks_the_whole_stored_copy_of_a_thinned_finished_run(tmp_path: Path, tiny_snapshots) -> None:
    """The live-or-stored decision: the live copy while training, when never recorded, when the store
    cannot read the run or holds less of it; else, once finished, the stored copy with every probe step."""

    from ln_viz.recorder import Recorder

    info, snaps = tiny_snapshots
    live = RunData.from_snapshots(info, snaps, max_probe_steps=2)
    assert live.probe_stride > 1
    with Store(tmp_path / "runs.sqlite") as store:
        recorder = Recorder(store)
        assert recorder.complete_data("r1", live, done=True) is live  # never recorded
        recorder.on_start("r1", info)
        for snap in snaps:
            recorder.on_snapshot("r1", snap)
        assert recorder.complete_data("r1", live, done=False) is live  # still training
        recorder.on_finish("r1", SimpleNamespace(status=live.status, message=live.message))
        assert_same_run(recorder.complete_data("r1", live, done=True), RunData.from_snapshots(info, snaps))

        def unreadable(store_id: int) -> RunData:
            raise sqlite3.OperationalError("disk I/O error")

        assert recorder.complete_data("r1", live, done=True, open_stored=unreadable) is live
        partial = RunData.from_snapshots(info, snaps[:10])
        assert recorder.complete_data("r1", live, done=True, open_stored=lambda i: partial) is live
        whole = RunData.from_snapshots(info, snaps)  # a live copy that kept every probe step is enough
        assert recorder.complete_data("r1", whole, done=True) is whole
