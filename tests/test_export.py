"""Chart export: real PNG and SVG files from kaleido (one Chromium start for the whole module), standalone
HTML that animates offline, zip archives for the Runs page, and `runs export --format png|svg|html`."""

from __future__ import annotations

import gzip
import io
import json
import re
import xml.etree.ElementTree as ET
import zipfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import plotly.io as pio
import pytest
import streamlit  # noqa: F401 - sets plotly's default template to "streamlit", as in the app's process

from ln_viz import export
from ln_viz.cli import main
from ln_viz.export import (
    CHARTS,
    INSTABILITY_CHARTS,
    UPDATE_CHARTS,
    charts_for,
    charts_zip,
    export_charts,
    run_file_bytes,
    tables_zip,
)
from ln_viz.i18n import t
from ln_viz.runfile import parse_run
from ln_viz.snapshot import RunData
from ln_viz.store import Store
from ln_viz.train import run
from tests.runs import TINY, demo

NAMES = [spec.name for spec in CHARTS]
# a DyT run's: every chart there is (the instability probes', then issue 33's update probes')
ALL_NAMES = NAMES + [spec.name for spec in INSTABILITY_CHARTS + UPDATE_CHARTS]
LN_NAMES = [n for n in ALL_NAMES if n != "dyt_saturation"]  # LayerNorm: no saturation to draw
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
STREAMLIT_PLACEHOLDER = "#000011"  # a colour streamlit's template leaves for its frontend to replace


@pytest.fixture(scope="module")
def dyt_run() -> RunData:
    """The tiny run with DyT for its norms: it measured every instability probe, DyT's saturation too."""
    return run(TINY.replace(norm_type="dyt", lr=1e-2))


@pytest.fixture(scope="module")
def exported(dyt_run: RunData, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """Every chart of a DyT run (all ten) in every format, in Korean: the module's one kaleido (Chromium) start."""
    out = tmp_path_factory.mktemp("charts")
    assert pio.templates.default == "streamlit"
    paths = export_charts(dyt_run, out, lang="ko")
    assert pio.templates.default == "streamlit"  # restored for the app's own charts
    return out, paths


def test_every_chart_is_written_in_every_format(exported: tuple[Path, list[Path]]) -> None:
    out, paths = exported
    assert [p.name for p in paths] == [f"{n}.{f}" for n in ALL_NAMES for f in ("png", "svg", "html")]
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in paths)


def test_the_instability_charts_come_only_with_their_probes(tiny_run: RunData, dyt_run: RunData) -> None:
    assert [s.name for s in charts_for(dyt_run)] == ALL_NAMES
    assert [s.name for s in charts_for(tiny_run)] == LN_NAMES
    assert charts_for(demo("post-ln-no-warmup")) == CHARTS  # recorded before the probes: NaN there


def test_a_run_from_before_the_instability_probes_exports_its_six_charts(tmp_path: Path) -> None:
    old = demo("pre-ln-no-warmup")
    paths = export_charts(old, tmp_path, formats=("html",), lang="en")
    assert [p.name for p in paths] == [f"{n}.html" for n in NAMES]
    assert all(p.stat().st_size > 1_000_000 for p in paths)  # each a whole page, plotly.js inside


def test_png_files_are_real_images(exported: tuple[Path, list[Path]]) -> None:
    for path in exported[1]:
        if path.suffix == ".png":
            blob = path.read_bytes()
            assert blob[:8] == PNG_MAGIC, path.name
            assert len(blob) > 10_000, (path.name, len(blob))
            width, height = int.from_bytes(blob[16:20], "big"), int.from_bytes(blob[20:24], "big")
            spec = next(s for s in CHARTS + INSTABILITY_CHARTS + UPDATE_CHARTS if s.name == path.stem)
            assert (width, height) == (2 * spec.width, 2 * spec.height)  # scale 2: sharp on slides


def test_svg_files_parse_and_carry_the_chosen_language(exported: tuple[Path, list[Path]]) -> None:
    out, paths = exported
    for path in paths:
        if path.suffix == ".svg":
            root = ET.parse(path).getroot()
            assert root.tag == "{http://www.w3.org/2000/svg}svg", path.name
    text = (out / "act_dist.svg").read_text(encoding="utf-8")
    assert t("chart.value_axis", "ko") in text
    for name, key in (
        ("attn_logit", "chart.attn_logit_axis"),
        ("log_z", "chart.logz_axis"),
        ("dyt_saturation", "chart.dyt_axis"),
        ("angular_update", "chart.angular_axis"),  # issue 33's update probes
        ("precond_lag", "chart.lag_axis"),
        ("norm_min_rms", "chart.min_rms_axis"),
    ):
        assert t(key, "ko") in "".join(ET.parse(out / f"{name}.svg").getroot().itertext()), name
    assert "updatemenu" not in text  # a static image has no Play button
    assert STREAMLIT_PLACEHOLDER not in text


def test_html_is_standalone_and_keeps_the_animation(exported: tuple[Path, list[Path]], dyt_run: RunData) -> None:
    html = (exported[0] / "act_dist.html").read_text(encoding="utf-8")
    assert not re.search(r"<script[^>]*\bsrc=", html), "plotly.js must be embedded, not fetched"
    assert "Plotly.addFrames" in html
    for step in dyt_run.probe_steps:  # one frame per probe step, named by its step
        assert f'"name":"{step}"' in html
    play = t("chart.play", "ko")
    assert play in html or json.dumps(play)[1:-1] in html  # the Korean labels, maybe JSON-escaped
    assert STREAMLIT_PLACEHOLDER not in html
    assert len(html) > 1_000_000  # plotly.js itself is inside


def test_zip_helpers_hold_what_the_page_offers(
    tiny_run: RunData, exported: tuple[Path, list[Path]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # charts_zip zips what export_charts writes; reuse the module's files rather than draw them again
    monkeypatch.setattr(export, "export_charts", lambda data, out, formats, lang: exported[1])
    with zipfile.ZipFile(io.BytesIO(charts_zip(tiny_run, lang="ko"))) as zf:
        assert sorted(zf.namelist()) == sorted(p.name for p in exported[1])
        assert zf.read("act_dist.png")[:8] == PNG_MAGIC
    for fmt in ("csv", "parquet"):
        with zipfile.ZipFile(io.BytesIO(tables_zip(tiny_run, fmt, header={"run_id": 1}))) as zf:
            names = set(zf.namelist())
            assert {f"scalars.{fmt}", f"layer_stats.{fmt}", "info.json"} <= names
            assert json.loads(zf.read("info.json"))["run_id"] == 1
    loaded = parse_run(gzip.decompress(run_file_bytes(tiny_run, label="shared")), "x")
    assert loaded.label == "shared" and loaded.data.scalars["step"] == tiny_run.scalars["step"]


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_cli_exports_charts_and_refuses_bad_flags(tmp_path: Path, tiny_run: RunData) -> None:
    with Store(tmp_path / "runs.sqlite") as store:
        run_id = store.add_run(tiny_run, label="cli")
    store_flag = ("--store", str(tmp_path / "runs.sqlite"))
    code, out, err = cli("runs", "export", str(run_id), "--format", "html", "--out", str(tmp_path / "h"), *store_flag)
    assert (code, err) == (0, "")
    assert out.split() == [str(tmp_path / "h" / f"{n}.html") for n in LN_NAMES]
    (tmp_path / "afile").write_text("x")
    code, _, err = cli("runs", "export", str(run_id), "--format", "png", "--out", str(tmp_path / "afile"), *store_flag)
    assert code == 2 and "is a file; chart exports write one file per chart" in err and err.count("\n") == 1
    code, _, err = cli("runs", "export", str(run_id), "--format", "webm", "--out", str(tmp_path), *store_flag)
    assert code == 2 and "invalid choice" in err


def test_the_export_lock_serves_the_least_work_first_then_in_arrival_order() -> None:
    """Hostile round 4, H1: a long video's batches took the lock back at once (threading.Lock), and in
    arrival order a small video beside a long one took twice its time. Waiters are served the least work
    first (a pack or chart files: 0; a video: its frames left), the earliest first among equals."""
    import threading
    import time

    from ln_viz.export import TurnLock

    lock = TurnLock()
    lock.acquire()
    order: list[str] = []

    def wait(name: str, priority: int) -> None:
        lock.acquire(priority)
        order.append(name)
        lock.release()

    threads = []
    for i, (name, priority) in enumerate((("long video", 60), ("small video", 3), ("pack", 0), ("second small", 3))):
        threads.append(threading.Thread(target=wait, args=(name, priority)))
        threads[-1].start()
        deadline = time.monotonic() + 10
        while len(lock._waiting) < i + 1 and time.monotonic() < deadline:  # queued in this order
            time.sleep(0.01)
    lock.release()
    for th in threads:
        th.join(10)
    assert order == ["pack", "small video", "second small", "long video"]
