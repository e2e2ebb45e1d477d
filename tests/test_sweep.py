"""Sweeps (ln_viz.sweep): the spec, the results and LR-sensitivity arithmetic, the local executor (a cell is
`python -m ln_viz train` of its config; a crash fails one cell; Stop within 2 s), resume, the store's
sweep tables, the charts (stalled and diverged cells drawn), the CLI, and the shipped default map."""

from __future__ import annotations

import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import pandas as pd
import pytest

from ln_viz.cli import main
from ln_viz.config import ConfigError, RunConfig
from ln_viz.store import Store, StoreError
from ln_viz.sweep import charts as sweep_charts
from ln_viz.sweep import curve_charts
from ln_viz.sweep.driver import SweepRun
from ln_viz.sweep.local import LocalExecutor
from ln_viz.sweep.presets import SWEEP_PRESETS
from ln_viz.sweep.results import CellResult, CellRun, curves, downsample, lr_sensitivity, summarize
from ln_viz.sweep.spec import MAX_RUNS, SweepConfig, SweepError, estimate, spec_from_query, spec_to_query
from ln_viz.sweep.storage import SweepStore, export_results

from .conftest import ROOT

TINY = RunConfig(depth=1, d_model=16, heads=2, seq_len=16, batch_size=4)
STEPS = 12


def tiny_spec(**changes) -> SweepConfig:
    spec = SweepConfig(base=TINY, norm_position=("post", "pre"), lr=(1e-3, 1e-2), warmup_steps=(0,), depth=(1,),
                       steps=STEPS)  # fmt: skip
    import dataclasses

    return dataclasses.replace(spec, **changes)


# --- the spec ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"lr": ()}, "lr", "at least one value"),
        ({"lr": (1e-3, 1e-3)}, "lr", "twice"),
        ({"lr": (-1.0,)}, "lr", "greater than 0"),
        ({"norm_position": ("post", "middle")}, "norm_position", "'middle'"),
        ({"warmup_steps": (0, 50)}, "warmup_steps", "longer than the runs"),
        ({"depth": (0,)}, "depth", "between 1 and 48"),
        ({"seeds": 0}, "seeds", "from 1 to 16"),
        ({"steps": 0}, "steps", "between 1"),
        ({"lr": tuple(10.0 ** (-k / 8) for k in range(17, 33)), "warmup_steps": tuple(range(9)), "depth": (1, 2)},
         "n_runs", f"more than the {MAX_RUNS} allowed"),
    ],
)  # fmt: skip
def test_a_bad_field_gets_one_sentence_naming_it(changes, field, words):
    with pytest.raises((SweepError, ConfigError)) as e:
        tiny_spec(**changes).validate()
    assert e.value.field == field
    assert words in str(e.value) and "\n" not in str(e.value)


def test_cells_and_estimate():
    spec = SWEEP_PRESETS["warmup-map"]
    cells = spec.validate().cells()
    assert len(cells) == spec.n_runs == 32
    assert len({c.fingerprint for c in cells}) == 32
    c = cells[0]
    assert (c.config.probe_every, c.config.eval_every, c.config.steps) == (0, 300, 300)  # no probes, eval at the end
    work = estimate(spec, workers=2)
    assert work.text().startswith("32 runs x 300 steps, about ") and work.text().endswith(" on 2 cores")
    assert estimate(spec, workers=1).text().endswith(" on 1 core")  # not "1 cores" (hostile re-check)
    assert estimate(spec, workers=2, skip=32).seconds == 0


def test_the_spec_survives_the_url_and_a_bad_parameter_is_named():
    spec = SWEEP_PRESETS["depth-slice"]
    back, bad = spec_from_query(spec_to_query(spec), SWEEP_PRESETS["warmup-map"])
    assert back == spec and bad == []
    back, bad = spec_from_query({"sm_lr": "0.001,fast", "sm_depth": "2,4"}, spec)
    assert [b.param for b in bad] == ["sm_lr"] and back.lr == spec.lr and back.depth == (2, 4)
    assert "sm_lr must be a comma-separated list of numbers, got '0.001,fast'" in str(bad[0].reason)


# --- results arithmetic ----------------------------------------------------------------------------------
def test_lr_sensitivity_as_wortsman_defines_it():
    # min(final, init) - best, averaged over the grid; a diverged lr (None) counts at init
    assert lr_sensitivity([3.0, 2.0, 2.5, None], init_loss=4.0) == pytest.approx((1 + 0 + 0.5 + 2) / 4)
    assert lr_sensitivity([5.0, 2.0], init_loss=4.0) == pytest.approx(1.0)  # above init is capped at init
    assert lr_sensitivity([2.0, 2.0, 2.0], init_loss=4.0) == 0.0


def _cell(norm="post", lr=1e-3, warm=0, status="completed", losses=(4.0, 3.0, 2.0)):
    cell = next(c for c in tiny_spec(lr=(lr,), norm_position=(norm,)).cells())
    run = CellRun(cell)
    for i, x in enumerate(losses, start=1):
        run.add_step(i, x, 1.5 if i == len(losses) else None, "running")
    run.trainer_status = status
    return run


def test_summarize_maps_the_trainer_verdicts_and_keeps_the_numbers():
    r = summarize(_cell(losses=[4.0] + [3.0] * 10 + [1.0] * 10))
    assert (r.status, r.final_loss, r.best_loss, r.init_loss, r.eval_loss) == ("learned", 1.0, 1.0, 4.0, 1.5)
    d = summarize(_cell(status="diverged", losses=(4.0, 9.0, math.nan)))
    assert (d.status, d.diverged_step, d.final_loss) == ("diverged", 3, 6.5)
    assert summarize(_cell(status="stalled")).status == "stalled"
    f = _cell(status="failed", losses=())
    f.error = "RuntimeError: boom"
    assert (summarize(f).status, summarize(f).error, summarize(f).final_loss) == ("failed", "RuntimeError: boom", None)
    assert len(downsample(list(range(1, 1001)), [1.0] * 1000)) == 100


def test_curves_average_seeds_skip_failed_cells_and_count_diverged_at_init():
    rs = [
        summarize(_cell(lr=1e-3, losses=(4.0, 2.0))),
        summarize(_cell(lr=1e-2, status="diverged", losses=(4.0, math.nan))),
        summarize(_cell(lr=3e-3, status="failed", losses=())),
    ]
    (c,) = curves(rs, default_init=4.2)
    assert c.lrs == (1e-3, 1e-2) and c.final_losses == (3.0, None) and c.statuses == ("learned", "diverged")
    assert c.lr_sensitivity == pytest.approx(((3 - 3) + (4 - 3)) / 2)


# --- the charts keep every cell -----------------------------------------------------------------------------
def test_the_map_draws_stalled_and_diverged_cells_and_marks_them():
    spec = tiny_spec(lr=(1e-3, 1e-2, 3e-2), norm_position=("post",))
    rs = [
        summarize(_cell(lr=1e-3, losses=(4.0, 2.0))),
        summarize(_cell(lr=1e-2, status="stalled", losses=(4.0, 3.0))),
        summarize(_cell(lr=3e-2, status="diverged", losses=(4.0, math.nan))),
    ]
    (panel,) = sweep_charts.map_panels(spec, rs, "en")
    assert panel.status == [["learned", "stalled", "diverged"]]
    assert panel.z[0] == [3.0, 3.5, 4.0]  # final loss (last 10 steps); diverged: the loss at init, never a gap
    assert "stalled" in panel.text[0][1] and "diverged" in panel.text[0][2]
    fig = sweep_charts.stability_heatmap(spec, rs, (1.0, 4.0), "ko")
    pending, diverged, heat, words, clicks = fig.data  # words: the light cells' text, in black
    assert len(fig.layout.shapes) == 2 and len(clicks.customdata) == 3  # both bad cells framed; all clickable
    assert [list(row) for row in pending.z] == [[None, None, None]]  # nothing left to train
    assert list(heat.x) == pytest.approx([-3, -2, math.log10(3e-2)])  # log lr axis
    assert list(heat.z[0]) == [3.0, 3.5, None] and list(diverged.z[0]) == [None, None, 1]  # outside the scale
    sens = curve_charts.sensitivity_chart(curves(rs, 4.2), unigram=2.96, lang="en")
    assert any(d.name and "LR sens. 0.50" in d.name for d in sens.data)
    assert sens.layout.xaxis.type == "log"


def test_pending_cells_are_grey_not_missing():
    spec = tiny_spec()
    (post, pre) = sweep_charts.map_panels(spec, [], "en")
    assert post.status == [[None, None]] and post.text == [["…", "…"]]


# --- the local executor, resume and the store -------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_sweep(tmp_path_factory):
    path = tmp_path_factory.mktemp("sweep") / "runs.sqlite"
    store = SweepStore(path)
    sweep = SweepRun(tiny_spec(), LocalExecutor(workers=2), store, keep_runs=True)
    final = sweep.run()
    store.close()
    return path, sweep, final


@pytest.mark.slow  # the module's tiny sweep (two worker processes) and a CLI run in its own process
def test_a_sweep_cell_is_the_train_command_of_its_config(tiny_sweep):
    _, sweep, final = tiny_sweep
    assert final.state == "done" and final.done == 4
    cell = sweep.cells[1]  # post, lr 1e-2
    cfg = cell.config
    cmd = [sys.executable, "-m", "ln_viz", "train", "--norm-position", cfg.norm_position, "--depth", str(cfg.depth),
           "--d-model", str(cfg.d_model), "--heads", str(cfg.heads), "--seq-len", str(cfg.seq_len), "--batch-size",
           str(cfg.batch_size), "--lr", repr(cfg.lr), "--steps", str(cfg.steps), "--probe-every", "0",
           "--eval-every", str(cfg.eval_every), "--seed", "0", "--threads", "1", "--json"]  # fmt: skip
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300, check=True)
    report = json.loads(out.stdout)
    assert report["config"] == {k: v for k, v in cfg.to_dict().items() if k != "user_text"}
    assert report["loss"] == sweep.runs[cell.fingerprint].losses  # identical, step by step
    result = next(r for r in final.results if r.fingerprint == cell.fingerprint)
    assert result.final_loss == pytest.approx(report["final_loss"], rel=1e-12)
    assert result.eval_loss == report["eval_loss"][-1][1]


@pytest.mark.slow  # the module's tiny sweep: two worker processes
def test_resume_trains_only_what_the_store_lacks(tiny_sweep):
    path, _, final = tiny_sweep
    with SweepStore(path) as store:
        again = SweepRun(tiny_spec(), LocalExecutor(workers=2), store)
        assert again.todo == [] and again.progress().skipped == 4
        wider = SweepRun(tiny_spec(lr=(1e-3, 3e-3, 1e-2)), LocalExecutor(workers=2), store)
        assert [(c.norm_position, c.lr) for c in wider.todo] == [("post", 3e-3), ("pre", 3e-3)]
        assert store.results(tiny_spec()) == list(final.results)  # the round trip keeps every field


@pytest.mark.slow  # the module's tiny sweep: two worker processes
def test_the_sweep_tables_live_in_the_run_store_and_export(tiny_sweep, tmp_path):
    path, _, final = tiny_sweep
    SweepStore(path).close()  # idempotent: opening again changes nothing
    with Store(path) as store:
        assert store.list_runs() == []  # the run store still reads its own tables
    db = sqlite3.connect(path)
    assert db.execute("SELECT value FROM meta WHERE key = 'sweep_schema'").fetchone() == ("1",)
    assert db.execute("SELECT count(*) FROM sweep_cells").fetchone() == (4,)
    db.close()
    for suffix in ("csv", "parquet"):
        out = export_results(final.results, tmp_path / f"cells.{suffix}")
        frame = pd.read_csv(out) if suffix == "csv" else pd.read_parquet(out)
        assert list(frame.status) == [r.status for r in final.results]
        assert frame.final_loss.tolist() == pytest.approx([r.final_loss for r in final.results])


@pytest.mark.slow  # the module's tiny sweep: two worker processes
def test_opening_an_up_to_date_sweep_store_writes_nothing_and_a_newer_one_is_refused(tiny_sweep, tmp_path):
    """The map page opens the sweep tables on every rerun: that must not take the write lock (a live run's
    writer waits for it) nor write a newer ln-viz's version number down to ours."""
    import shutil

    path = tmp_path / "copy.sqlite"  # a copy: the module's store stays as it was for the other tests
    for suffix in ("", "-wal"):
        if os.path.exists(str(tiny_sweep[0]) + suffix):
            shutil.copy(str(tiny_sweep[0]) + suffix, str(path) + suffix)
    watcher = sqlite3.connect(path)  # data_version changes for a connection when another one commits
    seen = watcher.execute("PRAGMA data_version").fetchone()
    SweepStore(path).close()
    assert watcher.execute("PRAGMA data_version").fetchone() == seen
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value = '99' WHERE key = 'sweep_schema'")
    db.commit()
    with pytest.raises(StoreError, match="newer ln-viz"):
        SweepStore(path)
    assert db.execute("SELECT value FROM meta WHERE key = 'sweep_schema'").fetchone() == ("99",)
    db.close()
    watcher.close()


# The sweep tables as the first released code created them (ln_viz/sweep/storage.py before its migrations
# moved onto ln_viz.store.migrations: it split this script on ";"). A store made then must open as it is.
_RELEASED_V1 = """
CREATE TABLE IF NOT EXISTS sweeps (
    id INTEGER PRIMARY KEY,
    fingerprint TEXT NOT NULL UNIQUE,
    spec TEXT NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    executor TEXT,
    elapsed_s REAL
);
CREATE TABLE IF NOT EXISTS sweep_cells (
    fingerprint TEXT PRIMARY KEY,
    norm_position TEXT NOT NULL,
    lr REAL NOT NULL,
    warmup_steps INTEGER NOT NULL,
    depth INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    status TEXT NOT NULL,
    final_loss REAL,
    eval_loss REAL,
    best_loss REAL,
    init_loss REAL,
    diverged_step INTEGER,
    steps_done INTEGER NOT NULL,
    elapsed_s REAL,
    error TEXT,
    config TEXT NOT NULL,
    curve TEXT NOT NULL,
    created REAL NOT NULL
);
"""


@pytest.mark.slow  # the module's tiny sweep: two worker processes
def test_a_sweep_store_made_by_the_first_release_opens_and_reads_the_same(tiny_sweep, tmp_path):
    path, _, final = tiny_sweep
    old = tmp_path / "old.sqlite"
    Store(old).close()
    db = sqlite3.connect(old)
    for statement in _RELEASED_V1.split(";"):  # as the old code ran it
        if statement.strip():
            db.execute(statement)
    db.execute("INSERT INTO meta (key, value) VALUES ('sweep_schema', '1')")
    src = sqlite3.connect(path)
    for table in ("sweeps", "sweep_cells"):
        rows = src.execute(f"SELECT * FROM {table}").fetchall()
        db.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(rows[0]))})", rows)
    db.commit()
    src.close()
    seen = db.execute("PRAGMA data_version").fetchone()
    with SweepStore(old) as store:
        assert store.results(tiny_spec()) == list(final.results)
        assert [s["spec"] for s in store.sweeps()] == [tiny_spec()]
    assert db.execute("PRAGMA data_version").fetchone() == seen  # at version 1 already: nothing written
    schema = "SELECT name, sql FROM sqlite_master WHERE name LIKE 'sweep%' ORDER BY name"
    fresh = tmp_path / "fresh.sqlite"
    SweepStore(fresh).close()
    assert sqlite3.connect(fresh).execute(schema).fetchall() == db.execute(schema).fetchall()  # the same tables
    db.close()


@pytest.mark.slow  # the module's tiny sweep: two worker processes
def test_cli_json_resumes_from_the_store(tiny_sweep):
    path, _, final = tiny_sweep
    cmd = [sys.executable, "-m", "ln_viz", "sweep", "--norm-position", "post,pre", "--lr", "1e-3,1e-2", "--warmup",
           "0", "--depth", "1", "--d-model", "16", "--heads", "2", "--seq-len", "16", "--batch-size", "4", "--steps",
           str(STEPS), "--store", str(path), "--json"]  # fmt: skip
    env = dict(os.environ)
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["skipped"] == 4 and report["executor"] == "local" and "elapsed_s" in report
    assert [c["final_loss"] for c in report["cells"]] == [r.final_loss for r in final.results]
    assert set(report["cells"][0]) >= {"norm_position", "lr", "warmup_steps", "depth", "seed", "status",
                                        "final_loss", "eval_loss", "diverged_step"}  # fmt: skip
    assert {(s["norm_position"], s["depth"], s["warmup_steps"]) for s in report["sensitivity"]} == {
        ("post", 1, 0), ("pre", 1, 0)}  # fmt: skip
    assert "4 runs" not in out.stderr.splitlines()[0] and "0 runs" in out.stderr.splitlines()[0]


def crash_one_cell_then_stop(executor, spec: SweepConfig) -> None:
    """Start a long sweep on `executor`, SIGKILL the process training its first cell (ours: the worker
    we spawned, or a Ray worker of the test's cluster, by its id), check that only that cell failed and the
    sweep went on, then Stop it and check that it ended within 2 s keeping only finished cells."""
    sweep = SweepRun(spec, executor)
    thread = threading.Thread(target=sweep.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while len(executor.running_pids()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    victim, pid = sorted(executor.running_pids().items())[0]
    os.kill(pid, signal.SIGKILL)
    while sweep.progress().done < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    (failed,) = sweep.progress().results
    assert failed.status == "failed" and failed.error and failed.key == sweep.cells[victim].key
    # the failed cell's untrained steps are no longer work: the progress counts the cell as done
    assert sweep.progress().steps_done >= spec.steps
    while len(executor.running_pids()) < 2 and time.monotonic() < deadline:  # the next cell took its place
        time.sleep(0.05)
    assert thread.is_alive() and len(executor.running_pids()) == 2
    t0 = time.monotonic()
    sweep.stop()
    thread.join(10)
    assert not thread.is_alive() and time.monotonic() - t0 < 2.0
    p = sweep.progress()
    assert p.state == "stopped" and p.done == 1 and p.running == 0  # stopped cells are not results


@pytest.mark.slow  # two worker processes
def test_a_crashed_run_fails_its_cell_the_sweep_goes_on_and_stop_takes_under_two_seconds():
    crash_one_cell_then_stop(LocalExecutor(workers=2), tiny_spec(steps=4000))  # far longer than the test waits


# --- the CLI's errors ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--lr", "1e-3,fast"], "--lr must be a comma-separated list of numbers"),
        (["--warmup", "0,500", "--steps", "100"], "longer than the runs"),
        (["--norm-position", "post,sideways"], "'sideways'"),
        (["--address", "127.0.0.1:6379"], "--executor ray"),
        (["--preset", "everything"], "unknown sweep preset"),
        (["--executor", "slurm"], "invalid choice"),
        (["--qk-norm", "none,cosine"], "'cosine'"),
        (["--weight-decay", "0,fast"], "--weight-decay must be a comma-separated list of numbers"),
        (["--norm-type", "layernorm,batchnorm"], "'batchnorm'"),
    ],
)
def test_cli_bad_values_exit_2_with_one_error_line(argv, words, capsys):
    assert main(["sweep", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and words in err and "\n" not in err


# --- the shipped default map --------------------------------------------------------------------------------
@pytest.mark.slow  # trains two cells of the shipped map for 30 steps
def test_the_shipped_default_map_is_measured_with_this_code():
    """Two of its cells trained again for their first 30 steps: the same losses as the shipped curve (the
    runs are deterministic: one thread, seeded batches, a constant schedule after warm-up)."""
    from ln_viz.sweep.presets import DEFAULT_MAP
    from ln_viz.train import run

    data = json.loads(DEFAULT_MAP.read_text(encoding="utf-8"))
    spec = SweepConfig.from_dict(data["spec"])
    assert spec == SWEEP_PRESETS["warmup-map"]
    results = [CellResult.from_dict(r) for r in data["results"]]
    assert sorted(r.fingerprint for r in results) == sorted(c.fingerprint for c in spec.cells())
    for key in (("post", 3e-3, 0), ("pre", 1e-2, 30)):
        r = next(r for r in results if (r.norm_position, r.lr, r.warmup_steps) == key)
        cfg = RunConfig.from_dict(r.config).replace(steps=30, eval_every=0)
        losses = run(cfg, keep_probes=False).scalars["loss"]
        shipped = [(s, v) for s, v in r.curve if s <= 30]
        assert len(shipped) >= 5
        assert [v for _, v in shipped] == pytest.approx([losses[s - 1] for s, _ in shipped], rel=1e-4)


# --- the page (AppTest, through the app's router) -------------------------------------------------------------
def test_the_page_draws_the_default_map_in_korean_and_keeps_the_spec_in_the_url(start_app):
    at = start_app(120)
    at.session_state["lang"] = "ko"
    at.switch_page("pages/stability_map.py").run()
    assert not at.exception
    assert at.title[0].value == "안정성 지도"
    charts = at.get("plotly_chart")
    assert len(charts) >= 2  # the map and the sensitivity curves
    assert any("미리 측정" in c.value for c in at.caption)  # the shipped default, said so
    assert at.query_params["sm_lr"] == "0.0003,0.001,0.003,0.01" and at.query_params["sm_warmup"] == "0,30,100,200"


def test_a_bookmark_with_any_value_the_spec_accepts_opens_the_page(start_app):
    """Steps and seeds beyond the old sliders' 20-1000 and 1-4 are valid sweeps: the page shows them (it
    raised StreamlitValueAboveMaxError for every visitor of such a link)."""
    at = start_app(120)
    at.query_params.update({"sm_norm": "post", "sm_lr": "0.001", "sm_warmup": "0", "sm_depth": "1",
                            "sm_steps": "2000", "sm_seeds": "8"})  # fmt: skip
    at.switch_page("pages/stability_map.py").run()
    assert not at.exception, at.exception
    assert at.number_input(key="sm_steps").value == 2000 and at.slider(key="sm_seeds").value == 8
    assert any("8 runs x 2000 steps" in c.value for c in at.caption)


@pytest.mark.slow  # imports Ray (seconds)
def test_a_visitor_never_chooses_where_the_server_connects(start_app, monkeypatch):
    """The page had a free-text "Ray cluster address" box: any visitor made the server dial any address
    (issue 21, S1). Now the operator's $LN_VIZ_RAY_ADDRESS is the only cluster, said on the page; without it
    the page offers this machine's cores only, and `auto` is not taken."""
    pytest.importorskip("ray")  # without Ray the page never offered it
    monkeypatch.delenv("LN_VIZ_RAY_ADDRESS", raising=False)
    at = start_app(120)
    at.switch_page("pages/stability_map.py").run()
    assert not at.exception and not at.text_input
    assert not [r for r in at.radio if r.key == "sm_executor"]  # only the local pool
    assert any("LN_VIZ_RAY_ADDRESS" in c.value for c in at.caption)
    monkeypatch.setenv("LN_VIZ_RAY_ADDRESS", "10.0.0.5:6379")
    at.run()
    at.radio(key="sm_executor").set_value("ray").run()
    assert not at.exception and not at.text_input
    assert any("Ray cluster: 10.0.0.5:6379, set by the server's operator" in c.value for c in at.caption)
    monkeypatch.setenv("LN_VIZ_RAY_ADDRESS", "auto")
    at.run()
    assert not [r for r in at.radio if r.key == "sm_executor"]
    assert [w.value for w in at.warning] == [
        "$LN_VIZ_RAY_ADDRESS=auto is not used: it would join whatever Ray cluster runs on this machine; name the "
        "cluster as host:port, or local for a private one."
    ]


@pytest.mark.slow  # two worker processes start: ~15 s on an idle 2-core machine
def test_the_page_runs_a_sweep_and_fills_the_map_from_the_store(start_app):
    at = start_app(120)
    at.query_params.update({"sm_norm": "post,pre", "sm_lr": "0.001,0.01", "sm_warmup": "0", "sm_depth": "1",
                            "sm_steps": "20"})  # fmt: skip
    at.switch_page("pages/stability_map.py").run()
    assert not at.exception and not at.warning
    assert any("4 runs x 20 steps" in c.value for c in at.caption)
    at.button(key="sm_run").click().run()
    from ln_viz.ui.stability_view import service

    svc = service()
    svc.thread.join(180)
    assert not svc.busy() and svc.error is None
    at.run()
    assert not at.exception
    fig = json.loads(at.get("plotly_chart")[0].proto.spec)
    heat = [d for d in fig["data"] if d["type"] == "heatmap" and d.get("showscale") is not False]
    assert heat and all(v is not None for row in heat[0]["z"] for v in row)  # every cell of the first panel filled


@pytest.mark.slow  # trains 8 tiny runs in two fresh worker processes
def test_the_sweep_benchmark_runs_and_reports_its_ratio(tmp_path):
    out = tmp_path / "bench.json"
    cmd = [sys.executable, "-m", "benchmarks.sweep", "--quick", "--no-ray", "--out", str(out)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert result["local"]["runs"] == 8 and result["local"]["failed"] == 0
    assert result["local_vs_ideal_steady"] > 0 and "x ideal" in proc.stdout


@pytest.mark.slow  # a worker process
def test_a_serial_worker_trains_job_after_job_at_its_nice_level_and_leaves_at_a_stop():
    """A sweep's worker (the Runner's WorkerProcess, serial) trains one Job after another, each ending in
    End(stopped=False), at `nice` steps below us; a Stop that reaches it between two cells (the driver
    stops every busy worker at once) is no error: it leaves cleanly."""
    from ln_viz.runner import worker_context
    from ln_viz.runner.messages import End, Info, Job, Ready, Snap, Stop
    from ln_viz.runner.process import WorkerProcess

    def niceness(pid: int) -> int:
        return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[16])

    w = WorkerProcess(worker_context(), warm=False, nice=5, serial=True)
    try:
        kinds = []
        for seed in (0, 1):
            w.send(Job(TINY.replace(steps=3, probe_every=0, seed=seed), threads=1))
            while (msg := w.receive(60)) is not None:
                kinds.append(type(msg))
                if isinstance(msg, End):
                    assert msg.stopped is False
                    break
            else:
                pytest.fail("the worker went quiet")
            assert niceness(w.pid) == niceness(os.getpid()) + 5
        assert kinds == [Ready, *([Info, Snap, Snap, Snap, End] * 2)]
        w.send(Stop())
        w.process.join(30)
        assert w.process.exitcode == 0
    finally:
        w.reap()


def test_the_eta_counts_from_the_first_step_not_from_the_workers_start(monkeypatch):
    """Issue 21 N25: the first ETA divided the steps by the time since Start, which includes the workers'
    start (seconds before any step): "about 4 min left" at 6 s for a sweep done 50 s later. The rate now
    runs from the first step."""
    from ln_viz.sweep import driver

    now = [100.0]
    monkeypatch.setattr(driver.time, "monotonic", lambda: now[0])
    sweep = SweepRun(SWEEP_PRESETS["warmup-map"], executor=None)
    sweep._started, sweep._state = now[0], "running"
    now[0] = 104.0  # 4 s of workers starting, no step yet
    assert sweep.progress().eta_s is None
    for k in range(21):  # then 10 steps a second
        now[0] = 104.0 + 0.1 * k
        sweep._on_step(0, k + 1, 3.0, None, "running")
    p = sweep.progress()
    assert p.eta_s == pytest.approx((p.steps_total - 21) / 10.0, rel=1e-6)
    sweep._elapsed, sweep._state = 6.0, "stopped"  # ended: its figures hold still
    now[0] = 200.0
    assert sweep.progress().eta_s == pytest.approx(p.eta_s, rel=1e-6)
    # `compare` (seed pairs, the same executors and progress line) counts the same way
    from ln_viz.sweep.compare import SeedCompare

    pair = SeedCompare(RunConfig(steps=100), RunConfig(steps=100, norm_position="post"), 2, executor=None)
    now[0] = 300.0
    pair._started, pair._state = now[0], "running"
    now[0] = 304.0
    assert pair.progress().eta_s is None
    for k in range(21):
        now[0] = 304.0 + 0.1 * k
        pair._on_step(0, k + 1, 3.0, None, "running")
    assert pair.progress().eta_s == pytest.approx((400 - 21) / 10.0, rel=1e-6)


@pytest.mark.slow  # trains two cells of the shipped GI-Adam map for 30 steps
def test_the_shipped_gi_adam_map_is_measured_with_this_code():
    """As the default map's test: its spec is the preset's, it has every cell, and a GI-Adam cell and an Adam one
    trained again for 30 steps give the shipped curve."""
    from ln_viz.sweep.presets import SHIPPED_MAPS
    from ln_viz.train import run

    data = json.loads(SHIPPED_MAPS["gi-adam-map"].read_text(encoding="utf-8"))
    spec = SweepConfig.from_dict(data["spec"])
    assert spec == SWEEP_PRESETS["gi-adam-map"]
    results = [CellResult.from_dict(r) for r in data["results"]]
    assert sorted(r.fingerprint for r in results) == sorted(c.fingerprint for c in spec.cells())
    for key in ((3e-3, 0, "gi"), (1e-2, 30, "zero")):
        r = next(r for r in results if (r.lr, r.warmup_steps, r.variant[-1]) == key)
        cfg = RunConfig.from_dict(r.config).replace(steps=30, eval_every=0)
        assert cfg.adam_init == key[2]
        losses = run(cfg, keep_probes=False).scalars["loss"]
        shipped = [(s, v) for s, v in r.curve if s <= 30]
        assert len(shipped) >= 5
        assert [v for _, v in shipped] == pytest.approx([losses[s - 1] for s, _ in shipped], rel=1e-4)
