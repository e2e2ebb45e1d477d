"""The Stability map page on a shared server (issue 21, X1, X2, D2, T4, M6), with AppTest through the
app's router: a visitor's sweep gets the classroom caps, a sweep belongs to the session that started it,
a store that refuses cells is one sentence naming it (the cells kept in memory), damaged sweep tables are
one sentence for that visitor and never break the default map, and a link's refused values say why."""

from __future__ import annotations

import logging
import sqlite3
import time
from pathlib import Path

import pytest

from ln_viz.server.sweeps import SweepCaps, SweepService, cap_error, sweep_caps
from ln_viz.sweep.presets import SWEEP_PRESETS
from ln_viz.sweep.spec import SweepError, spec_from_query
from ln_viz.sweep.storage import SweepStore

from .test_store_faults import fill, mounted_tmpfs
from .test_sweep import tiny_spec

PAGE = "pages/stability_map.py"
TINY_LINK = {"sm_norm": "post,pre", "sm_lr": "0.001,0.01", "sm_warmup": "0", "sm_depth": "1", "sm_steps": "20"}


def open_page(start_app, query: dict[str, str] | None = None, lang: str = "en"):
    at = start_app(120)
    at.session_state["lang"] = lang
    at.query_params.update(query or {})
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    return at


def texts(elements) -> list[str]:
    return [e.value for e in elements]


# --- X1: the classroom caps ---------------------------------------------------------------------------------
def test_the_hostile_sweep_is_refused_on_the_page_before_it_starts(start_app) -> None:
    """Before: `512 runs x 100000 steps, about 2709.0 h on 2 cores`, and Run started it at once."""
    link = {"sm_norm": "post,pre,peri,deepnorm", "sm_lr": "0.0001,0.0002,0.0003,0.0005,0.001,0.002,0.003,0.005",
            "sm_warmup": "0", "sm_depth": "48", "sm_seeds": "16", "sm_steps": "100000"}  # fmt: skip
    at = open_page(start_app, link)
    assert at.button(key="sm_run").disabled
    [warning] = [w for w in texts(at.warning) if "steps per run" in w]
    assert "at most 10000 steps per run" in warning and "python -m ln_viz sweep" in warning


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"steps": 10_001}, "at most 10000 steps per run"),
        (
            {"seeds": 16, "lr": (1e-3, 3e-3, 1e-2, 3e-2), "warmup_steps": (0, 1, 2)},
            "more than this server's cap of 128",
        ),
        ({"steps": 10_000, "depth": (6,), "lr": (1e-3, 3e-3, 1e-2, 3e-2)}, "more than this server's cap of 30 min"),
    ],
)
def test_each_cap_is_one_sentence_that_says_how_the_operator_raises_it(changes, words) -> None:
    import dataclasses

    from ln_viz.sweep.spec import estimate

    spec = dataclasses.replace(SWEEP_PRESETS["warmup-map"], **changes).validate()
    err = cap_error(spec, estimate(spec, 2), sweep_caps())
    assert err is not None and words in str(err) and "\n" not in str(err)
    assert err.key == "sweep.err.cap_steps" or ("LN_VIZ_MAX_SWEEP_" in str(err))
    with pytest.raises(SweepError) as refused:  # the server refuses it too, not only the button
        SweepService().start(spec, "local", None, owner="a")
    assert refused.value.key == err.key
    assert cap_error(SWEEP_PRESETS["warmup-map"], estimate(SWEEP_PRESETS["warmup-map"], 2), sweep_caps()) is None


def test_the_operator_raises_the_caps_with_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SweepCaps.RUNS_ENV, "600")
    monkeypatch.setenv(SweepCaps.MINUTES_ENV, "1000")
    monkeypatch.setenv("LN_VIZ_MAX_SECONDS", "30")
    caps = sweep_caps()
    assert (caps.max_runs, caps.max_minutes, caps.max_seconds, caps.max_steps) == (600, 1000.0, 30.0, 10_000)


@pytest.mark.slow  # seconds of real training or waiting: CI's lane 1, out of the fast lane
def test_a_cell_past_the_time_cap_fails_with_that_cause(tmp_path: Path) -> None:
    from ln_viz.sweep.driver import SweepRun
    from ln_viz.sweep.local import LocalExecutor

    spec = tiny_spec(steps=100_000, norm_position=("pre",), lr=(1e-3,))
    final = SweepRun(spec, LocalExecutor(workers=1, max_seconds=1.0)).run()
    [cell] = final.results
    assert cell.status == "failed" and "time limit of 1 s per run" in cell.error
    assert 0 < cell.steps_done < 100_000


@pytest.mark.slow  # seconds of real training or waiting: CI's lane 1, out of the fast lane
# --- X2: a sweep belongs to its session ---------------------------------------------------------------------------
def test_another_session_sees_the_sweep_but_cannot_stop_it(start_app) -> None:
    """Before: any visitor's Stop ended another's sweep (`Stop disabled False` for visitor C)."""
    from ln_viz.ui.stability_view import service

    starter = open_page(start_app, TINY_LINK)
    starter.number_input(key="sm_steps").set_value(10_000).run()  # far longer than the test
    starter.button(key="sm_run").click().run()
    svc = service()
    try:
        assert svc.busy()
        other = open_page(start_app, TINY_LINK)
        assert other.button(key="sm_stop").disabled and other.button(key="sm_run").disabled
        assert "This sweep was started in another session; only that session can stop it." in texts(other.caption)
        assert not svc.stop(other.session_state["_sm_session"]) and svc.busy()  # the server refuses it too
        starter.run()
        assert not starter.button(key="sm_stop").disabled
        starter.button(key="sm_stop").click().run()
        svc.thread.join(15)
        assert not svc.busy()
    finally:
        svc.shutdown()


# --- D2: the page's sweep on a full disk ---------------------------------------------------------------------------
@pytest.mark.slow  # a tmpfs, a page sweep of 4 cells
def test_a_full_disk_under_a_page_sweep_is_one_sentence_and_one_log_line(
    start_app, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Before: the sweep aborted at the first refused cell; the page said only `database or disk is full`."""
    from ln_viz.ui.stability_view import service

    caplog.set_level(logging.WARNING)
    with mounted_tmpfs("3m") as disk:
        path = disk / "runs.sqlite"
        monkeypatch.setenv("LN_VIZ_STORE", str(path))
        SweepStore(path).close()
        at = open_page(start_app, {**TINY_LINK, "sm_steps": "400"})
        filler = fill(disk)
        at.button(key="sm_run").click().run()
        svc = service()
        deadline = time.monotonic() + 240
        while svc.sweep.progress().store_problem is None and svc.busy() and time.monotonic() < deadline:
            time.sleep(0.2)
        at.run()
        errors = texts(at.error)
        svc.thread.join(240)
        final = svc.sweep.progress()
        filler.unlink()
        svc.shutdown()
    assert any(str(path) in e and "database or disk is full" in e and "keeps training" in e for e in errors), errors
    assert final.state == "done" and final.done == 4  # every cell trained and shown from memory
    assert str(final.store_problem).startswith("Only ")
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("ln-viz: sweep:")]
    assert len(lines) == 2 and not any(r.exc_info for r in caplog.records), lines  # started, then gave up


# --- T4: damaged sweep tables ----------------------------------------------------------------------------------------
def damage(path: Path, sql: str, *args) -> None:
    db = sqlite3.connect(path)
    db.execute(sql, args)
    db.commit()
    db.close()


def test_a_damaged_sweep_schema_is_one_sentence_and_the_default_map_still_draws(start_app, tmp_path: Path) -> None:
    """Before: `ValueError: invalid literal for int()` for every visitor of the page."""
    import os

    at = start_app(120)
    path = Path(os.environ["LN_VIZ_STORE"])
    SweepStore(path).close()
    damage(path, "UPDATE meta SET value = 'abc' WHERE key = 'sweep_schema'")
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    assert any(e.startswith(f"the run store {path} is damaged") for e in texts(at.error)), texts(at.error)
    assert len(at.get("plotly_chart")) >= 2  # the shipped default map


def test_a_damaged_cell_at_a_default_map_cell_never_breaks_the_map(start_app) -> None:
    """Before: `Expecting value: line 1 column 1 (char 0)` for every visitor, and no UI could remove the row."""
    import json
    import os

    from ln_viz.sweep.presets import DEFAULT_MAP
    from ln_viz.sweep.results import CellResult

    at = start_app(120)
    path = Path(os.environ["LN_VIZ_STORE"])
    shipped = [CellResult.from_dict(r) for r in json.loads(DEFAULT_MAP.read_text(encoding="utf-8"))["results"]]
    with SweepStore(path) as store:
        store.put_cells(shipped[:3])
    damage(path, "UPDATE sweep_cells SET curve = 'not json' WHERE fingerprint = ?", shipped[0].fingerprint)
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    assert len(at.get("plotly_chart")) >= 2


# --- M6: the map's link -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("order", ["warmup first", "steps first"])
def test_a_link_warmup_is_checked_against_the_links_own_steps(order: str) -> None:
    """Before: warm-up 1000 was checked against the default 300 steps and refused."""
    pairs = [("sm_warmup", "0,1000"), ("sm_steps", "2000")]
    spec, bad = spec_from_query(dict(pairs if order == "warmup first" else pairs[::-1]), SWEEP_PRESETS["warmup-map"])
    assert bad == [] and spec.warmup_steps == (0, 1000) and spec.steps == 2000


def test_every_refused_link_value_says_why_on_the_page(start_app) -> None:
    link = {"sm_lr": "0.001,fast", "sm_seeds": "16", "sm_depth": "1,2,3,4", "sm_steps": "x"}
    at = open_page(start_app, link)
    warnings = texts(at.warning)
    assert any("Ignored 'sm_lr=0.001,fast' from the link: sm_lr must be a comma-separated list of numbers" in w
               for w in warnings), warnings  # fmt: skip
    assert any("Ignored 'sm_seeds=16' from the link: the sweep has" in w and "more than the 512 allowed" in w
               for w in warnings), warnings  # fmt: skip
    assert any("Ignored 'sm_steps=x' from the link: sm_steps must be a whole number" in w for w in warnings), warnings
    ko = open_page(start_app, link, lang="ko")
    assert len([w for w in texts(ko.warning) if "sm_" in w]) == 3


# --- issue 33: the GI-Adam map, measured in advance beside the Adam map ---------------------------------------------
def test_the_gi_adam_map_is_drawn_measured_in_advance_an_adam_panel_beside_a_gi_adam_one(start_app) -> None:
    """Its link (the preset's spec) opens the map measured in advance, at once (in Korean): one panel per
    optimizer start, every cell filled, and the lecture sentence read off it (ln_viz.sweep.labels.TAKEAWAYS)."""
    lang = "ko"
    import json

    from ln_viz.i18n import t
    from ln_viz.sweep.labels import lecture_takeaway
    from ln_viz.sweep.spec import spec_to_query

    spec = SWEEP_PRESETS["gi-adam-map"]
    at = open_page(start_app, spec_to_query(spec), lang)
    assert at.query_params["sm_adaminit"] == "zero,gi"
    assert any(t("sweep.ui.shipped", lang, date="")[:12] in c for c in texts(at.caption)), texts(at.caption)
    fig = json.loads(at.get("plotly_chart")[0].proto.spec)
    titles = [a["text"] for a in fig["layout"]["annotations"]]
    assert any(s.endswith(", Adam") for s in titles) and any(s.endswith(", GI-Adam") for s in titles), titles
    heat = [d for d in fig["data"] if d["type"] == "heatmap" and d.get("showscale") is not False]
    assert heat and all(v is not None for d in heat for row in d["z"] for v in row)
    assert lecture_takeaway(spec) == "sweep.lecture.gi-adam-map" and t("sweep.lecture.gi-adam-map", lang)
