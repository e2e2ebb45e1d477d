"""The store in a hostile or failing world (issue 14, data loss): a write that fails is said once and
never loses a committed step, a lock held elsewhere is waited out, a file deleted or replaced under the
server is noticed, read-only commands change nothing (and work in a read-only folder), and each fault
gets the sentence of its real cause."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from ln_viz.cli import main
from ln_viz.config import RunConfig
from ln_viz.i18n import t
from ln_viz.recorder import Recorder
from ln_viz.runner import Runner
from ln_viz.snapshot import RunInfo, Snapshot
from ln_viz.store import RunWriter, Store, StoreError

ROOT = Path(__file__).resolve().parents[1]
TRAIN_FLAGS = ["--depth", "2", "--d-model", "16", "--heads", "2", "--seq-len", "16", "--batch-size", "4"]
TRAIN_FLAGS += ["--probe-every", "10", "--eval-every", "0", "--threads", "1"]


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def write_run(store: Store, info: RunInfo, snaps: list[Snapshot]) -> int:
    with RunWriter(store) as writer:
        run_id = writer.begin(info)
        for snap in snaps:
            writer.add(snap)
    return run_id


def one_error_line(code: int, err: str, *parts: str) -> None:
    assert code == 2, err
    assert err.startswith("error: ") and err.count("\n") == 1, err  # one line, no traceback
    for part in parts:
        assert part in err, err


@contextlib.contextmanager
def mounted_tmpfs(size: str, ro_after: Path | None = None) -> Iterator[Path]:
    """A small tmpfs of our own (we run as root in CI); skipped with the reason when mounting is refused."""
    where = Path(tempfile.mkdtemp(prefix="ln-viz-tmpfs-"))
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True)
    if done.returncode != 0:
        where.rmdir()
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)
        where.rmdir()


def fill(folder: Path) -> Path:
    """Write a file until the disk is full; its path. Unbuffered: a buffered file kept the tail of the
    write that failed and raised ENOSPC again when closed (CI: OSError at the `with open` line)."""
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as f, contextlib.suppress(OSError):
        while True:
            f.write(b"\0" * 65536)
    return filler


# --- 1. the writer never fails silently ------------------------------------------------------------
@pytest.mark.slow
def test_a_disk_that_fills_under_the_runner_is_said_once_and_keeps_every_committed_step(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The real Runner with the server's store hooks, a 3 MiB tmpfs filled mid-run: the run goes on to
    its end, its handle's page gets one sentence with the cause and "N of M steps", the row ends in a
    terminal status holding every step committed, and the log grows by a bounded number of lines."""
    steps = 600
    cfg = RunConfig(depth=2, d_model=16, heads=2, seq_len=16, batch_size=4, steps=steps, probe_every=10, eval_every=0)
    with mounted_tmpfs("3m") as disk:
        path = disk / "runs.sqlite"
        store = Store(path)
        recorder = Recorder(store)
        caplog.set_level(logging.INFO)
        with Runner(max_concurrent=1, warm_workers=0, **recorder.hooks()) as runner:
            handle = runner.start(cfg)
            deadline = time.monotonic() + 120
            committed = 0
            while committed < 50 and time.monotonic() < deadline:
                time.sleep(0.2)
                if recorder.store_id(handle.run_id) is not None:
                    committed = store.summary(recorder.store_id(handle.run_id)).steps_done
            assert committed >= 50, "the run did not start storing"
            filler = fill(disk)
            while recorder.problem(handle.run_id) is None and not handle.done and time.monotonic() < deadline:
                time.sleep(0.1)
            live_problem = recorder.problem(handle.run_id)
            assert handle.wait(180)
        view = handle.view()
        problem = recorder.problem(handle.run_id)
        filler.unlink(missing_ok=True)
        with Store(path, readonly=True) as reader:
            row = reader.summary(recorder.store_id(handle.run_id))
            stored = reader.open_run(row.id).scalars["step"]
        store.close()
    assert live_problem is not None and "database or disk is full" in str(live_problem)
    assert view.status == "completed" and view.steps_done == steps
    assert str(problem).startswith(f"Only {row.steps_done} of {steps} steps of this run were stored")
    assert "database or disk is full" in str(problem)
    assert row.status == "completed" and row.message == "msg.store_incomplete"
    assert committed <= row.steps_done < steps
    assert stored == list(range(1, row.steps_done + 1))  # every committed step, in order
    lines = [r for r in caplog.records if r.name.startswith("ln_viz")]
    assert 1 <= len(lines) <= 3, [r.getMessage() for r in lines]
    assert not any(r.exc_info for r in lines)  # one line each, no traceback
    print(f"\n{committed} steps committed before the fill, {row.steps_done} of {steps} stored, {len(lines)} log lines")


def test_a_lock_outlasting_the_bound_ends_the_run_with_that_cause_not_crashed_or_killed(
    tmp_path: Path, tiny_snapshots
) -> None:
    info, snaps = tiny_snapshots
    path = tmp_path / "runs.sqlite"
    with Store(path) as store:
        writer = RunWriter(store, flush_every=0.05, lock_wait_s=1.0)
        run_id = writer.begin(info)
        for snap in snaps[:5]:
            writer.add(snap)
        assert writer.flush()
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # another process's long write
        for snap in snaps[5:]:
            writer.add(snap)  # never raises: kept in memory
        problem = writer.finish()
        holder.execute("ROLLBACK")
        holder.close()
    assert str(problem).startswith(f"Only 5 of {len(snaps)} steps of this run were stored")
    assert "another process held its write lock for more than 1 s" in str(problem)
    with Store(path) as store:  # the next opener marks it, with the cause its writer left
        summary = store.summary(run_id)
    assert (summary.status, summary.message, summary.steps_done) == ("interrupted", "msg.store_locked", 5)
    assert "crashed or killed" not in t(summary.message, "en")


@pytest.mark.slow
def test_a_cli_run_waits_out_a_write_lock_held_elsewhere_and_stores_every_step(tmp_path: Path) -> None:
    """Before: after ~10 s of lock the CLI run aborted, lost its later steps and ended `interrupted`."""
    path = tmp_path / "runs.sqlite"
    steps = 4000  # long enough to be mid-run when the lock is taken: 1500 ended first once (an idle machine, CI lane 1)
    proc = subprocess.Popen(
        [sys.executable, "-m", "ln_viz", "train", *TRAIN_FLAGS, "--steps", str(steps), "--store", str(path), "--json"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            time.sleep(0.2)
            with contextlib.suppress(StoreError, sqlite3.Error):
                with Store(path, readonly=True) as reader:
                    runs = reader.list_runs()
                    if runs and 0 < runs[0].steps_done < steps // 2:  # mid-run, with half of it still to write
                        break
        holder = sqlite3.connect(path, isolation_level=None, timeout=10)
        holder.execute("BEGIN IMMEDIATE")
        time.sleep(12)  # longer than SQLite's 10 s busy wait that used to end the run
        holder.execute("ROLLBACK")
        holder.close()
        out, err = proc.communicate(timeout=180)
    finally:
        proc.kill()
    assert proc.returncode == 0, err.decode()
    assert err.decode().count("Another process holds the write lock") == 1  # said once, while it lasted
    with Store(path, readonly=True) as reader:
        [summary] = reader.list_runs()
        stored = reader.open_run(summary.id).scalars["step"]
    assert (summary.status, summary.steps_done) == ("completed", steps)
    assert stored == list(range(1, steps + 1))


def test_a_store_deleted_or_replaced_under_the_server_is_said_and_its_runs_no_longer_listed(
    tmp_path: Path, tiny_snapshots
) -> None:
    info, snaps = tiny_snapshots
    path = tmp_path / "runs.sqlite"
    store = Store(path)
    write_run(store, info, snaps)
    writer = RunWriter(store, flush_every=60)
    writer.begin(info)
    writer.add(snaps[0])
    assert writer.flush()
    path.unlink()  # rm runs.sqlite: its -wal and -shm stay (SQLite would read the next file through them)
    assert store.moved()
    assert store.reopen_if_moved()
    assert "was deleted while this server was running" in str(store.notice)
    assert store.list_runs() == []  # the deleted file's runs are not listed
    recorder = Recorder(store)  # new runs go to the new file
    recorder.on_start("r1", info)
    recorder.on_finish("r1", type("View", (), {"status": "stopped", "message": None})())
    assert [r.status for r in store.list_runs()] == ["stopped"]
    writer.add(snaps[1])
    writer.flush()
    assert writer.problem is not None and writer.problem.key == "err.writer_store_moved"  # the old run says so
    writer.finish()

    other = tmp_path / "other.sqlite"
    with Store(other) as s:
        write_run(s, info, snaps[:3])
        write_run(s, info, snaps[:4])
    os.replace(other, path)
    assert recorder.store_id("r1") == 1
    assert store.reopen_if_moved()
    assert recorder.store_id("r1") is None  # its id would name a run of the file that replaced it
    assert "was replaced by another file" in str(store.notice)
    assert [r.steps_done for r in store.list_runs()] == [4, 3]
    store.close()


# Another process (a CLI training) that made a new store where the old one was deleted: it writes a run,
# its log is checkpointed (the database is written after its -wal, so the log is older than the file), and
# it keeps its connection, then writes a second run when told.
OTHER_WRITER = """
import sys, time
from ln_viz.store import Store, RunWriter
from ln_viz.train import Trainer
from tests.runs import TINY
trainer = Trainer(TINY)
info, snaps = trainer.info, list(trainer)
def write():
    with RunWriter(store) as writer:
        writer.begin(info)
        for snap in snaps:
            writer.add(snap)
store = Store(sys.argv[1])
write()
time.sleep(0.1)
store._db.execute("PRAGMA wal_checkpoint(PASSIVE)")
print("ready", flush=True)
sys.stdin.readline()
write()
print("done", flush=True)
sys.stdin.readline()
"""


@pytest.mark.slow  # a writer in a Python process of its own
def test_the_server_reopening_a_new_file_keeps_the_log_another_process_is_writing(
    tmp_path: Path, tiny_snapshots
) -> None:
    """rm runs.sqlite* while the server runs, then a CLI run makes a new store there before the server
    notices: the server's reopen must not take the CLI's live -wal and -shm for the deleted file's (they
    are older than the file once checkpointed), or the CLI's next run is written where the server never
    reads it. (After `rm runs.sqlite` alone SQLite refuses the new file while the old logs are open.)"""
    info, snaps = tiny_snapshots
    path = tmp_path / "runs.sqlite"
    store = Store(path)
    write_run(store, info, snaps)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    other = subprocess.Popen(
        [sys.executable, "-c", OTHER_WRITER, str(path)], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert other.stdout.readline().strip() == "ready"
        assert os.stat(f"{path}-wal").st_mtime < os.stat(path).st_ctime  # the log is older than the file
        assert store.reopen_if_moved()
        assert [r.steps_done for r in store.list_runs()] == [len(snaps)]  # the CLI's first run
        other.stdin.write("go\n")
        other.stdin.flush()
        assert other.stdout.readline().strip() == "done"
        assert [r.steps_done for r in store.list_runs()] == [len(snaps)] * 2  # and its second, live
    finally:
        other.stdin.close()
        other.wait(30)
        store.close()
    with Store(path, readonly=True) as reader:
        assert len(reader.list_runs()) == 2


def test_the_app_says_the_store_was_deleted_and_the_runs_page_no_longer_lists_its_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_snapshots
) -> None:
    """The router's frame (app.py, around every page) says it; the Runs page lists the new file."""
    from streamlit.testing.v1 import AppTest

    info, snaps = tiny_snapshots
    path = tmp_path / "runs.sqlite"
    with Store(path) as store:
        write_run(store, info, snaps)
    monkeypatch.setenv("LN_VIZ_STORE", str(path))
    monkeypatch.delenv("LN_VIZ_LOAD_DEMOS", raising=False)
    st_cache_clear()
    try:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        at.run()  # the default page, through the router
        assert not at.exception and not at.error
        runs = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        runs.switch_page("pages/runs.py").run()
        assert not runs.exception and runs.dataframe  # the stored run is listed
        path.unlink()  # rm runs.sqlite
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        at.run()  # a new visit (AppTest runs a second visit's page without the router)
        assert [e.value for e in at.error] == [t("err.store_deleted", "en", path=str(path))]
        runs.switch_page("pages/runs.py").run()
        assert not runs.exception and not runs.dataframe  # the deleted file's run is not listed
    finally:
        st_cache_clear()


def st_cache_clear() -> None:
    import streamlit as st

    from ln_viz.ui import storage

    store = storage.server_store()
    if store is not None:
        store.close()
    st.cache_resource.clear()


# --- 2. read-only commands change nothing ----------------------------------------------------------
@pytest.mark.parametrize("version", [0, 7])
def test_commands_leave_a_foreign_database_unchanged_and_say_it_is_not_a_store(tmp_path: Path, version: int) -> None:
    path = tmp_path / "other.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE notes (body TEXT)")
    db.execute("INSERT INTO notes VALUES ('keep me')")
    db.execute(f"PRAGMA user_version = {version}")
    db.commit()
    db.close()
    before = path.read_bytes()
    out_dir = tmp_path / "out"
    for argv in (
        ("runs", "list", "--store", str(path)),
        ("runs", "list", "--json", "--store", str(path)),
        ("runs", "export", "1", "--format", "run", "--store", str(path), "--out", str(out_dir / "r.json.gz")),
        ("runs", "delete", "1", "--store", str(path)),
        ("train", *TRAIN_FLAGS, "--steps", "2", "--store", str(path)),
    ):
        code, _, err = cli(*argv)
        one_error_line(code, err, "another program, not an ln-viz run store")
        assert "newer ln-viz" not in err
    assert path.read_bytes() == before  # no WAL, no user_version, no tables
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.sqlite"]


def test_runs_list_still_marks_a_dead_writers_run_interrupted(tmp_path: Path, tiny_snapshots) -> None:
    """Read-only listing keeps what `runs list` always showed: a run whose writer died is interrupted."""
    info, snaps = tiny_snapshots
    path = tmp_path / "runs.sqlite"
    with Store(path) as store:
        writer = RunWriter(store, flush_every=60)
        writer.begin(info)
        writer.add(snaps[0])
        assert writer.flush()
        writer._stop_thread()
        writer._lock.release()  # what the kernel does when the process dies
        writer._lock = None
        writer._db.close()
    code, out, err = cli("runs", "list", "--json", "--store", str(path))
    assert code == 0, err
    assert [(r["status"], r["steps_done"]) for r in json.loads(out)] == [("interrupted", 1)]


def test_runs_list_of_an_empty_database_file_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "empty.sqlite"
    path.write_bytes(b"")
    code, _, err = cli("runs", "list", "--store", str(path))
    one_error_line(code, err, "there is no run store at")
    assert path.read_bytes() == b"" and sorted(p.name for p in tmp_path.iterdir()) == ["empty.sqlite"]


def test_a_store_in_a_read_only_folder_can_be_listed_and_exported(tmp_path: Path, tiny_snapshots) -> None:
    """A real read-only folder: a read-only bind mount (even root cannot write there)."""
    info, snaps = tiny_snapshots
    folder = tmp_path / "shared"
    folder.mkdir()
    with Store(folder / "runs.sqlite") as store:
        run_id = write_run(store, info, snaps)
    os.rmdir(folder / "runs.sqlite.locks")
    mounted = subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {mounted.stderr.decode().strip()}")
    try:
        done = subprocess.run(["mount", "-o", "remount,ro,bind", str(folder)], capture_output=True)
        if done.returncode != 0:
            pytest.skip(f"cannot make a read-only mount here: {done.stderr.decode().strip()}")
        with pytest.raises(OSError):
            (folder / "probe").write_text("x")  # really read-only
        before = sorted(p.name for p in folder.iterdir())
        code, out, err = cli("runs", "list", "--json", "--store", str(folder / "runs.sqlite"))
        assert code == 0, err
        assert [r["id"] for r in json.loads(out)] == [run_id]
        target = tmp_path / "run.json.gz"
        code, out, err = cli(
            "runs",
            "export",
            str(run_id),
            "--format",
            "run",
            "--store",
            str(folder / "runs.sqlite"),
            "--out",
            str(target),
        )
        assert code == 0, err
        assert target.stat().st_size > 0
        assert sorted(p.name for p in folder.iterdir()) == before
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)  # lazy: even with a file still open there


# --- 3. messages that say the real cause -----------------------------------------------------------
def test_a_truncated_store_is_said_to_be_damaged_not_not_an_sqlite_database(tmp_path: Path, tiny_snapshots) -> None:
    info, snaps = tiny_snapshots
    path = tmp_path / "runs.sqlite"
    with Store(path) as store:
        write_run(store, info, snaps)
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.truncate(size // 2)
    for argv in (
        ("runs", "list", "--store", str(path)),
        ("runs", "export", "1", "--format", "run", "--store", str(path), "--out", str(tmp_path / "r.json.gz")),
    ):
        code, _, err = cli(*argv)
        one_error_line(code, err, "is damaged (truncated or corrupted)")
        assert "not an SQLite database" not in err


def test_runs_export_of_a_run_on_a_store_with_a_corrupted_page_is_one_error_line(
    tmp_path: Path, tiny_snapshots
) -> None:
    info, snaps = tiny_snapshots
    path = tmp_path / "runs.sqlite"
    with Store(path) as store:
        for _ in range(3):
            write_run(store, info, snaps)
    size = path.stat().st_size
    with open(path, "r+b") as f:  # one page in the middle: probe rows
        f.seek(size // 2 // 4096 * 4096)
        f.write(b"\xff" * 4096)
    errors = []
    for run_id in (1, 2, 3):
        out = str(tmp_path / f"{run_id}.json.gz")
        code, _, err = cli("runs", "export", str(run_id), "--format", "run", "--store", str(path), "--out", out)
        if code != 0:
            errors.append(err)
    assert errors, "the corrupted page was not met"
    for err in errors:
        one_error_line(2, err, "is damaged (truncated or corrupted)")


@pytest.mark.slow
def test_a_locked_store_says_another_process_holds_it_not_folders_and_space(tmp_path: Path, tiny_snapshots) -> None:
    info, snaps = tiny_snapshots
    path = tmp_path / "runs.sqlite"
    with Store(path) as store:
        run_id = write_run(store, info, snaps)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        code, _, err = cli("runs", "label", str(run_id), "x", "--store", str(path))  # waits SQLite's 10 s
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    one_error_line(code, err, "another process holds the write lock")
    assert "space" not in err and "folder" not in err


def test_a_store_path_below_a_regular_file_is_one_error_line(tmp_path: Path) -> None:
    regular = tmp_path / "notes.txt"
    regular.write_text("a file, not a folder")
    for store in (regular / "runs.sqlite", regular / "sub" / "runs.sqlite"):
        for argv in (
            ("train", *TRAIN_FLAGS, "--steps", "2", "--store", str(store)),
            ("runs", "demo", "--store", str(store)),
        ):
            code, _, err = cli(*argv)
            one_error_line(code, err, "a folder in that path is a regular file")
