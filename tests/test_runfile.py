"""Run files and tidy tables: exports hold exactly what was measured, imports give back the same run,
and every kind of bad file is refused with one sentence while the store stays as it was."""

from __future__ import annotations

import base64
import copy
import gzip
import importlib.util
import io
import json
import math
import sqlite3
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ln_viz.cli import main
from ln_viz.runfile import (
    FORMAT_VERSION,
    MAX_FILE_BYTES,
    RunFileError,
    read_run_file,
    run_document,
    tables,
    write_run_file,
)
from ln_viz.snapshot import RunData
from ln_viz.store import Store
from ln_viz.store.transfer import export_run, import_run, load_demo_runs
from tests.runs import TINY, assert_same_run

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def store(tmp_path: Path) -> Store:
    with Store(tmp_path / "runs.sqlite") as s:
        yield s


# --- tidy tables ------------------------------------------------------------------------------------
def test_tables_hold_the_measured_values(tiny_run: RunData) -> None:
    t = tables(tiny_run)
    assert list(t["scalars"].columns) == [
        "step",
        "loss",
        "lr",
        "grad_norm",
        "eval_loss",
        "elapsed",
        "steps_per_sec",
    ]
    np.testing.assert_array_equal(t["scalars"].loss, tiny_run.scalars["loss"])
    hist = t["histograms"]
    assert list(hist.columns) == [
        "step",
        "layer",
        "site",
        "bin_left",
        "bin_right",
        "fraction",
    ]
    assert set(hist.site) == {"resid", "ln1", "ln2"}
    # rebuild the dense histogram of one frame from the long table and compare exactly
    p, layer = 3, 2
    step = tiny_run.probe_steps[p]
    frame = hist[(hist.step == step) & (hist.layer == layer) & (hist.site == "resid")]
    edges = tiny_run.info.hist_edges
    dense = np.zeros(len(edges) - 1, np.float32)
    dense[np.searchsorted(edges, frame.bin_left.to_numpy())] = frame.fraction
    np.testing.assert_array_equal(dense, tiny_run.probe("resid_hist")[p, layer - 1])
    stats = t["layer_stats"]
    row = stats[(stats.step == step) & (stats.layer == 1) & (stats.site == "ln2")]
    np.testing.assert_array_equal(
        row[list(tiny_run.info.stat_names)].to_numpy()[0],
        tiny_run.probe("norm_in_stats")[p, 0, 1],
    )
    assert (stats[stats.site == "input"].layer == 0).all()
    grads = t["grad_norms"]
    g = grads[(grads.step == step) & (grads.layer == 2) & (grads.param == "ffn.w1")]
    assert g.grad_norm.item() == tiny_run.probe("grad_norm")[p, 1, 4]
    layers = t["layers"]
    assert len(layers) == len(tiny_run.probe_steps) * TINY.depth
    np.testing.assert_array_equal(
        layers.update_ratio.to_numpy().reshape(-1, TINY.depth),
        tiny_run.probe("update_ratio"),
    )


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_exported_tables_read_back_exactly(tmp_path: Path, store: Store, tiny_run: RunData, fmt: str) -> None:
    run_id = store.add_run(tiny_run, label="tables")
    paths = export_run(store, run_id, fmt, tmp_path / "out")
    assert {p.name for p in paths} == {
        f"{n}.{fmt}" for n in ("scalars", "histograms", "layer_stats", "grad_norms", "layers", "log_z")
    } | {"info.json"}
    expected = tables(tiny_run)
    for name, df in expected.items():
        path = tmp_path / "out" / f"{name}.{fmt}"
        back = pd.read_csv(path) if fmt == "csv" else pd.read_parquet(path)
        assert list(back.columns) == list(df.columns)
        for column in df.columns:
            if df[column].dtype.kind == "f":
                # float32 columns are written as the shortest text that reads back to the same
                # float32, so compare at the table's own dtype
                np.testing.assert_array_equal(
                    back[column].to_numpy(df[column].dtype),
                    df[column].to_numpy(),
                    err_msg=f"{name}.{column}",
                )
            else:
                assert back[column].astype(str).tolist() == df[column].astype(str).tolist()
    header = json.loads((tmp_path / "out" / "info.json").read_text())
    assert header["label"] == "tables" and header["info"]["config"]["depth"] == 2


def test_tables_of_a_run_without_probes(tiny_run: RunData) -> None:
    bare = RunData(tiny_run.info)
    bare.scalars = copy.deepcopy(tiny_run.scalars)
    for name, df in tables(bare).items():
        assert len(df) == (TINY.steps if name == "scalars" else 0), name


# --- run files --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["run.json", "run.json.gz"])
def test_export_then_import_gives_the_same_run(tmp_path: Path, store: Store, tiny_run: RunData, name: str) -> None:
    first = store.add_run(tiny_run, label="original", created=1_700_000_000.25)
    [path] = export_run(store, first, "run", tmp_path / name)
    assert (path.read_bytes()[:2] == b"\x1f\x8b") == name.endswith(".gz")
    loaded = read_run_file(path)
    assert_same_run(loaded.data, tiny_run)
    assert loaded.label == "original" and loaded.created == 1_700_000_000.25
    copy_id, added = import_run(store, path)
    assert added and copy_id != first
    assert_same_run(store.open_run(copy_id), tiny_run)
    summary = store.summary(copy_id)
    assert (summary.label, summary.source) == ("original", "import")
    assert summary.final_loss == tiny_run.final_loss()
    assert import_run(store, path) == (copy_id, False)  # the same file again: found, not copied
    assert len(store.list_runs()) == 2


def test_run_file_encodes_non_finite_scalars(tmp_path: Path, tiny_run: RunData) -> None:
    data = copy.deepcopy(tiny_run)
    data.scalars["loss"][-1] = math.nan
    data.scalars["grad_norm"][-1] = math.inf
    data.status, data.diverged_at, data.message = "diverged", 30, "msg.diverged"
    path = write_run_file(data, tmp_path / "r.json")
    doc = json.loads(path.read_text())  # strict JSON: no NaN tokens
    assert doc["scalars"]["loss"][-1] is None
    assert doc["scalars"]["grad_norm"][-1] == "inf"
    assert_same_run(read_run_file(path).data, data)


def test_list_encoding_of_probe_arrays_is_accepted(tmp_path: Path, tiny_run: RunData) -> None:
    doc = run_document(tiny_run)
    for arr in doc["probes"].values():
        values = np.frombuffer(base64.b64decode(arr["data"]), "<f4").reshape(arr["shape"])
        arr["encoding"] = "list"
        arr["data"] = [None if math.isnan(v) else v for v in values.astype(float).ravel()]
        arr["data"] = np.asarray(arr["data"], dtype=object).reshape(arr["shape"]).tolist()
    path = tmp_path / "lists.json"
    path.write_text(json.dumps(doc))
    assert_same_run(read_run_file(path).data, tiny_run)


def test_probe_stride_thins_probes_but_keeps_every_step(tmp_path: Path, tiny_run: RunData) -> None:
    path = write_run_file(tiny_run, tmp_path / "thin.json.gz", probe_stride=2)
    thin = read_run_file(path).data
    assert thin.scalars["step"] == tiny_run.scalars["step"]
    assert thin.probe_steps == [1, 10, 20, 30]  # every other probe step, and the last
    np.testing.assert_array_equal(thin.probe("resid_hist"), tiny_run.probe("resid_hist")[[0, 2, 4, 6]])


# --- bad files --------------------------------------------------------------------------------------
def _doc(tiny_run: RunData) -> dict:
    return run_document(tiny_run, label="ok")


def _set(path: str, value: object) -> Callable[[dict], None]:
    """An edit of the document at a dotted path ("info.config.depth")."""

    def edit(doc: dict) -> None:
        *parents, last = path.split(".")
        node = doc
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return edit


def _reshape(doc: dict) -> None:
    doc["probes"]["resid_hist"]["shape"][-1] = 64


def _bad_base64(doc: dict) -> None:
    doc["probes"]["attn_entropy"]["data"] = "not base64!!"


def _short_data(doc: dict) -> None:
    arr = doc["probes"]["update_ratio"]
    arr["data"] = base64.b64encode(base64.b64decode(arr["data"])[:-4]).decode()


def _hist_above_one(doc: dict) -> None:
    arr = doc["probes"]["resid_hist"]
    values = np.frombuffer(base64.b64decode(arr["data"]), "<f4").copy()
    values[5] = 7.0
    arr["data"] = base64.b64encode(values.tobytes()).decode()


def _negative_grad(doc: dict) -> None:
    arr = doc["probes"]["grad_norm"]
    values = np.frombuffer(base64.b64decode(arr["data"]), "<f4").copy()
    values[0] = -1.0
    arr["data"] = base64.b64encode(values.tobytes()).decode()


def _too_many_steps(doc: dict) -> None:
    doc["info"]["config"]["steps"] = 10


def _swap_steps(doc: dict) -> None:
    steps = doc["scalars"]["step"]
    steps[3], steps[4] = steps[4], steps[3]


def _short_column(doc: dict) -> None:
    doc["scalars"]["lr"].pop()


BAD_DOCUMENTS = {
    "wrong format": (_set("format", "tensorboard"), "is not an ln-viz run file"),
    "newer version": (
        _set("version", FORMAT_VERSION + 1),
        "newer than this ln-viz reads",
    ),
    "version as text": (_set("version", "1"), "unknown run file version"),
    "version zero": (_set("version", 0), "unknown run file version"),
    "no info": (_set("info", None), "info is null, where a value of type object belongs"),
    "depth above 48": (
        _set("info.config.depth", 60),
        "invalid run configuration: depth must be between 1 and 48",
    ),
    "bad norm position": (
        _set("info.config.norm_position", "sideways"),
        "invalid run configuration: norm_position must be one of",
    ),
    "more steps than planned": (_too_many_steps, "has 30 steps but its config says steps=10"),
    "steps out of order": (_swap_steps, "steps must be whole numbers increasing from 1"),
    "step as float": (_set("scalars.step.0", 1.5), "steps must be whole numbers"),
    "column too short": (_short_column, "scalars.lr has 29 values but the run has 30 steps"),
    "loss as text": (
        _set("scalars.loss.2", "banana"),
        "scalars.loss[2] is missing or is not of type number",
    ),
    "lr not finite": (_set("scalars.lr.0", None), "scalars.lr[0] must hold finite numbers"),
    "elapsed infinite": (_set("scalars.elapsed.1", "inf"), "must hold finite numbers"),
    "unknown status": (_set("status", "exploded"), "status is missing or is not of type"),
    "probe step not a step": (
        _set("probe_steps.1", 31),
        "probe step 31 is not one of the run's steps",
    ),
    "shape not matching info": (_reshape, "probe array resid_hist has shape"),
    "missing probe array": (
        _set("probes.grad_norm", None),
        "probes.grad_norm is null, where a value of type object belongs",
    ),
    "bad base64": (_bad_base64, "probe array attn_entropy cannot be read as float32"),
    "short array data": (_short_data, "probe array update_ratio cannot be read"),
    "histogram above 1": (_hist_above_one, "probes.resid_hist must be between 0 and 1"),
    "negative gradient norm": (_negative_grad, "probes.grad_norm must be between 0 and inf"),
    "unigram entropy NaN": (
        _set("info.unigram_entropy", "nan"),
        "info.unigram_entropy is missing or is not of type number",
    ),
    "hist edges decreasing": (_set("info.hist_edges.3", 100.0), "info.hist_edges must be ln-viz's 129 histogram edges"),
    "hist edge moved": (_set("info.hist_edges.70", 0.1), "info.hist_edges must be ln-viz's 129 histogram edges"),
    "huge vocab": (_set("info.vocab_size", 10**9), "info.vocab_size must be between"),
    "label too long": (_set("label", "x" * 500), "len(label) must be between 0 and 200"),
    "created not a time": (_set("created", "yesterday"), "created is missing or is not of type"),
}


def _state(store: Store) -> tuple:
    """Everything an import could change."""
    db = sqlite3.connect(store.path)
    try:
        return tuple(
            db.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall() for table in ("runs", "scalars", "meta")
        ) + (db.execute("SELECT count(*), sum(length(data)) FROM probes").fetchone(),)
    finally:
        db.close()


def assert_refused(store: Store, path: Path, expected: str) -> None:
    before = _state(store)
    with pytest.raises(RunFileError) as err:
        import_run(store, path)
    text = str(err.value)
    assert expected in text, text
    assert "\n" not in text and text.endswith("."), text
    korean = err.value.message("ko")
    assert korean != text and "{" not in korean
    assert _state(store) == before


@pytest.mark.parametrize("case", list(BAD_DOCUMENTS))
def test_bad_documents_are_refused_and_the_store_unchanged(
    tmp_path: Path, store: Store, tiny_run: RunData, case: str
) -> None:
    store.add_run(tiny_run, label="already here")
    edit, expected = BAD_DOCUMENTS[case]
    doc = _doc(tiny_run)
    edit(doc)
    path = tmp_path / "bad.json.gz"
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    assert_refused(store, path, expected)


def test_edges_rounded_on_another_machine_are_taken(tmp_path: Path, store: Store, tiny_run: RunData) -> None:
    """The edges are sinh of a linspace, whose last bit differs between CPUs: the demo runs, made on one machine,
    were refused on another. A file whose edges differ from ours by an ulp imports, and draws on its own edges."""
    doc = _doc(tiny_run)
    edges = doc["info"]["hist_edges"]
    for i in range(1, len(edges) - 1, 3):
        if edges[i]:  # 0 (the middle edge) is set exactly, on every machine
            edges[i] = float(np.nextafter(edges[i], np.inf))
    path = tmp_path / "other-cpu.json.gz"
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    run_id, added = import_run(store, path)
    assert added
    assert store.open_run(run_id).info.hist_edges.tolist() == edges


def test_bad_files_are_refused_and_the_store_unchanged(tmp_path: Path, store: Store, tiny_run: RunData) -> None:
    store.add_run(tiny_run, label="already here")
    good = json.dumps(_doc(tiny_run)).encode()
    cases: dict[str, tuple[bytes | None, str]] = {
        "missing.json": (None, "does not exist"),
        "truncated.json": (good[: len(good) // 2], "is not valid JSON"),
        "truncated.json.gz": (
            gzip.compress(good)[: len(gzip.compress(good)) // 2],
            "is not a valid gzip file",
        ),
        "corrupt.json.gz": (b"\x1f\x8b" + b"\x00" * 200, "is not a valid gzip file"),
        "binary.json": (bytes(range(256)) * 4, "is not valid JSON"),
        "nan.json": (good.replace(b'"loss": [', b'"loss": [NaN, ', 1), "is not valid JSON"),
        "list.json": (b"[1, 2, 3]", "is not an ln-viz run file"),
        "empty.json": (b"", "is not valid JSON"),
        "deep.json": (b"[" * 100_000 + b"]" * 100_000, "is not valid JSON"),
        "bomb.json.gz": (
            gzip.compress(b" " * (MAX_FILE_BYTES + 10), compresslevel=1),
            "unpacks to more than",
        ),
    }
    for name, (content, expected) in cases.items():
        path = tmp_path / name
        if content is not None:
            path.write_bytes(content)
        assert_refused(store, path, expected)
    big = tmp_path / "big.json"
    with open(big, "wb") as f:  # sparse: 50 MB + 1 without writing it
        f.truncate(MAX_FILE_BYTES + 1)
    assert_refused(store, big, "above the limit of")


# --- demo runs --------------------------------------------------------------------------------------
def test_load_demo_runs_is_idempotent(tmp_path: Path, store: Store, tiny_run: RunData) -> None:
    demos = tmp_path / "demos"
    write_run_file(tiny_run, demos / "a.json.gz", label="demo a")
    other = copy.deepcopy(tiny_run)
    other.scalars["loss"][0] += 1.0
    write_run_file(other, demos / "b.json.gz", label="demo b")
    first = load_demo_runs(store, demos)
    assert len(first) == 2
    assert {s.source for s in store.list_runs()} == {"demo"}
    assert load_demo_runs(store, demos) == []
    store.delete(first[0])  # a demo the user deleted stays deleted
    assert load_demo_runs(store, demos) == []
    assert [s.id for s in store.list_runs()] == [first[1]]
    assert load_demo_runs(store, tmp_path / "no such folder") == []


# --- the CLI ------------------------------------------------------------------------------------------
def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_cli_export_and_import(tmp_path: Path, store: Store, tiny_run: RunData) -> None:
    run_id = store.add_run(tiny_run, label="to share")
    src = str(store.path)
    code, out, err = cli(
        "runs", "export", str(run_id), "--format", "run", "--out", str(tmp_path / "r.json.gz"), "--store", src
    )
    assert (code, err) == (0, "") and out.strip() == str(tmp_path / "r.json.gz")
    for fmt in ("csv", "parquet"):
        code, out, err = cli(
            "runs", "export", str(run_id), "--format", fmt, "--out", str(tmp_path / fmt), "--store", src
        )
        assert code == 0, err
        assert len(out.strip().splitlines()) == 7  # six tables and info.json
    other = tmp_path / "other.sqlite"
    code, out, err = cli("runs", "import", str(tmp_path / "r.json.gz"), "--store", str(other), "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["added"] is True
    with Store(other) as imported:
        assert_same_run(imported.open_run(result["run_id"]), tiny_run)
        assert imported.summary(result["run_id"]).label == "to share"
    code, out, _ = cli("runs", "import", str(tmp_path / "r.json.gz"), "--store", str(other))
    assert code == 0 and "already in the store" in out


def test_cli_refuses_bad_files_with_one_line(tmp_path: Path, store: Store, tiny_run: RunData) -> None:
    run_id = store.add_run(tiny_run)
    src = str(store.path)
    truncated = tmp_path / "cut.json.gz"
    write_run_file(tiny_run, truncated)
    truncated.write_bytes(truncated.read_bytes()[:500])
    (tmp_path / "afile").write_text("x")
    before = _state(store)
    cases = {
        ("runs", "import", str(truncated), "--store", src): "is not a valid gzip file",
        ("runs", "import", str(tmp_path / "missing.json"), "--store", src): "does not exist",
        ("runs", "import", str(truncated), "--store", str(tmp_path / "new.sqlite")): "is not a valid gzip file",
        ("runs", "export", str(run_id), "--format", "csv", "--out", str(tmp_path / "afile"), "--store", src): (
            "is a file; csv and parquet exports write a folder"
        ),
        ("runs", "export", str(run_id), "--format", "run", "--out", "x.json", "--probe-stride", "0", "--store", src): (
            "--probe-stride must be at least 1"
        ),
        ("runs", "export", str(run_id), "--format", "run", "--out", str(tmp_path), "--store", src): (
            "is a folder; a run file needs a file name"
        ),
    }
    for argv, expected in cases.items():
        code, out, err = cli(*argv)
        assert code == 2, argv
        assert err.startswith("error: ") and expected in err and err.count("\n") == 1, err
    assert _state(store) == before
    assert not (tmp_path / "new.sqlite").exists()  # a refused file does not create a store


def test_make_demo_runs_script_on_tiny_presets(tmp_path: Path, store: Store) -> None:
    """The bundled-demo script, shrunk (--tiny): thinned probes, readable files, imported once."""
    spec = importlib.util.spec_from_file_location("make_demo_runs", ROOT / "scripts" / "make_demo_runs.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    out = tmp_path / "demo_runs"
    names = ["post-ln-no-warmup", "pre-ln-no-warmup"]
    argv = ["--tiny", "--out", str(out), "--probe-spacing", "4", *(a for n in names for a in ("--preset", n))]
    assert script.main(argv) == 0
    assert sorted(p.name for p in out.iterdir()) == [f"{n}.json.gz" for n in names]
    loaded = read_run_file(out / "pre-ln-no-warmup.json.gz")
    assert loaded.label == "pre-ln-no-warmup" and loaded.data.info.config.norm_position == "pre"
    assert loaded.data.scalars["step"] == list(range(1, 21))  # every step's scalars
    assert loaded.data.probe_steps == [1, 4, 8, 12, 16, 20]  # of 1, 2, 4, ... 20: every other one
    added = load_demo_runs(store, out)
    assert sorted(store.summary(i).label for i in added) == sorted(names)
    assert load_demo_runs(store, out) == []


def test_the_format_docs_list_the_schemas_measurements() -> None:
    """The run file's docstring table is the schema's table, so the format's docs cannot drift from it."""
    import ln_viz.runfile
    from ln_viz.schema import doc_table

    documented = [line.strip() for line in ln_viz.runfile.__doc__.splitlines()]
    table = [line.strip() for line in doc_table().splitlines()]
    start = documented.index(table[0])
    assert documented[start : start + len(table)] == table


def test_a_run_file_read_from_its_bytes_is_the_file_read_from_disk(tmp_path: Path, tiny_run: RunData) -> None:
    """An upload is read from its bytes (no temporary file), with the same checks and the same result."""
    from ln_viz.runfile import read_run_data

    path = write_run_file(tiny_run, tmp_path / "run.json.gz", label="bytes")
    from_disk, from_bytes = read_run_file(path), read_run_data(path.read_bytes(), "upload.json.gz")
    assert_same_run(from_bytes.data, from_disk.data)
    assert (from_bytes.label, from_bytes.fingerprint) == (from_disk.label, from_disk.fingerprint)
    with pytest.raises(RunFileError, match="upload.json.gz"):
        read_run_data(path.read_bytes()[:-20], "upload.json.gz")
    with pytest.raises(RunFileError, match="above the limit"):
        read_run_data(b" " * (MAX_FILE_BYTES + 1), "big.json")


def test_the_tables_docs_list_each_tables_columns(tiny_run: RunData) -> None:
    """ln_viz.tables' docstring names each table's columns in order (they come from the schema)."""
    import re

    import ln_viz.tables

    documented = {}
    # a table's columns on one line, or on several where a line ends in a comma
    doc = re.sub(r",\n +(?=\w+(?:, \w+)*,?\n)", ", ", ln_viz.tables.__doc__)
    for line in doc.splitlines():
        m = re.match(r"    (\w+) +((?:\w+, )+\w+)", line)
        if m:
            documented[m.group(1)] = m.group(2).split(", ")
    assert documented == {name: list(df.columns) for name, df in tables(tiny_run).items()}
