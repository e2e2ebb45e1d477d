"""Defects round four's reports named that the re-check (docs/round-four-recheck.md) found still holding and
fixed in a few lines: each test failed before its fix."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys

import pytest

from ln_viz.i18n import t
from ln_viz.store import Store
from tests.runs import train_tiny

from .test_cli import cli

TINY = ["--depth", "1", "--d-model", "16", "--heads", "2", "--batch-size", "4", "--seq-len", "16", "--steps", "5"]


def test_runs_list_keeps_its_columns_for_a_run_that_diverged_to_a_huge_loss(tmp_path) -> None:
    """Hostile L16: a final loss of 5.9e10 was printed as 58935576269.236 and pushed the row out of line."""
    data = train_tiny()
    data.scalars["loss"][-10:] = [5.8935576269236e10] * 10
    store = tmp_path / "runs.sqlite"
    with Store(store) as s:
        s.add_run(data)
    code, out, err = cli("runs", "list", "--store", str(store))
    assert code == 0, err
    header, row = out.splitlines()[:2]
    assert "5.894e+10" in row
    assert row.index("5.894e+10") + len("5.894e+10") == header.index("final loss") + len("final loss")


@pytest.mark.parametrize("sides", [["--a", "", "--b", ""], ["--a", "norm_position=pre", "--b", "norm_position=pre"]])
def test_compare_refuses_two_sides_with_the_same_settings(sides: list[str]) -> None:
    """Hostile L10: 2N identical runs trained, then "Pre-LN (A) and Pre-LN (B) end at the same loss"."""
    code, out, err = cli("compare", *TINY, *sides, "--seeds", "2", "--quiet")
    assert code == 2 and out == ""
    assert err.strip() == "error: " + t("seeds.err.same_sides", "en")


def test_compare_names_seeds_when_its_last_seed_passes_the_largest() -> None:
    """Hostile L12: `--seeds 3 --seed 2147483647` said "seed must be between 0 and 2147483647, got
    2147483648", not that the third seed of --seeds is the one out of range."""
    code, out, err = cli("compare", *TINY, "--preset", "post-vs-pre", "--seeds", "3", "--seed", "2147483647")
    assert code == 2 and out == ""
    assert "--seeds 3 from seed 2147483647" in err and "at most 2147483645" in err


def test_the_lecture_header_says_a_learning_rate_as_the_scenarios_and_takeaways_do() -> None:
    """UX L2: the header said "Adam lr 0.1" where the scenario, the preset and the takeaway say "lr 1e-1"."""
    from ln_viz.config import RunConfig
    from ln_viz.words import describe

    assert "Adam lr 1e-1" in describe([RunConfig(lr=0.1)], "en")
    assert "Adam 학습률 1e-1" in describe([RunConfig(lr=0.1)], "ko")
    assert "lr 3e-3" in describe([RunConfig(lr=3e-3)], "en")
    assert "lr 1.5e-3" in describe([RunConfig(lr=1.5e-3)], "en")  # not rounded to 2e-3


def test_the_korean_catalog_says_the_loss_unit_and_the_learning_rate_one_way() -> None:
    """UX L2: the map's Korean unit was "nats/글자" where Live says "글자당 내트", and its takeaway "lr 3e-3"
    where the rest of the Korean UI says "학습률"."""
    assert t("sweep.axis.final_loss", "ko") == "최종 손실 (글자당 내트)"
    assert t("sweep.axis.loss", "ko") == "학습 손실 (글자당 내트)"
    assert "lr " not in t("sweep.lecture.takeaway", "ko") and "학습률 3e-3" in t("sweep.lecture.takeaway", "ko")


@pytest.mark.parametrize("raw", ["1_0", "٣", "１"])
def test_numbers_in_links_and_flags_are_plain_ascii_without_underscores(raw: str) -> None:
    """Hostile L6: `--seconds 1_0`, `--seconds ٣`, `wd=1_0`, `clip=1_0`, `dytalpha=1_0` and `seeds=٣` were
    accepted as 10, 3, 10, 10, 10 and 3 (int() and float() read them so)."""
    from ln_viz.config import FIELDS, ConfigError, RunConfig
    from ln_viz.i18n import LocalizedError
    from ln_viz.sweep.spec import SweepConfig, spec_from_query
    from ln_viz.urlstate import config_from_query, seeds_from_query
    from ln_viz.video import parse_seconds

    with pytest.raises(LocalizedError):
        parse_seconds(raw)
    for name in ("weight_decay", "grad_clip", "dyt_alpha", "steps"):
        with pytest.raises(ConfigError):
            FIELDS[name].parse(raw)
    cfg, notices = config_from_query({"wd": raw, "clip": raw}, RunConfig())
    assert (cfg.weight_decay, cfg.grad_clip) == (0.0, 0.0) and len(notices) == 2
    seeds, notice = seeds_from_query(raw)
    assert seeds == 1 and notice is not None
    spec, bad = spec_from_query({"sm_lr": raw, "sm_seeds": raw}, SweepConfig())
    assert len(bad) == 2


@pytest.mark.parametrize("probe", ["attn_logit_max", "logz_stats", "massive_act", "dyt_saturation"])
def test_a_probe_that_is_null_in_a_run_file_is_said_to_be_null_not_missing(tmp_path, probe: str) -> None:
    """Hostile L8: `"probes": {"attn_logit_max": null}` was refused as "missing or is not of type object"."""
    import json

    from ln_viz.runfile import RunFileError, read_run_file, run_document

    doc = run_document(train_tiny())
    doc["probes"][probe] = None
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(RunFileError) as err:
        read_run_file(path)
    assert str(err.value) == f"file {path}: probes.{probe} is null, where a value of type object belongs."
    assert "null" in err.value.message("ko")


def test_compare_before_start_names_its_own_button(start_app) -> None:
    """UX L9: Compare said "Pick a preset or your own settings, then press Start." beside "Start both"."""
    at = start_app(120, "pages/compare.py")
    text = " ".join(e.value for e in [*at.info, *at.markdown])
    assert t("ui.not_started_pair", "en") in text and t("ui.not_started", "en") not in text
    assert all(t("compare.start", lang) in t("ui.not_started_pair", lang) for lang in ("en", "ko"))


@pytest.mark.usefixtures("start_app")  # its teardown releases the cached resources
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_damaged_run_s_watch_page_shows_no_server_path_or_exception(tmp_path, monkeypatch, lang: str) -> None:
    """Hostile L1: `?watch=3` of a row whose config is `{not json` said "run 3 in <the store's absolute path> is
    damaged and cannot be shown ('JSONDecodeError: Expecting property nam...')" to any visitor with the link."""
    import sqlite3

    from streamlit.testing.v1 import AppTest

    from tests.test_watch import APP

    path = tmp_path / "runs.sqlite"
    monkeypatch.setenv("LN_VIZ_STORE", str(path))
    with Store(path) as store:
        run_id = store.add_run(train_tiny())
    with sqlite3.connect(path) as db:
        db.execute("UPDATE runs SET config = '{not json' WHERE id = ?", (run_id,))
    app = AppTest.from_file(APP, default_timeout=60)
    app.query_params.update({"watch": str(run_id), "lang": lang})
    app.run()
    shown = " ".join(e.value for e in [*app.error, *app.warning, *app.info, *app.markdown])
    assert not app.exception and t("watch.damaged", lang, id=run_id) in shown
    assert str(tmp_path) not in shown and "JSONDecodeError" not in shown


@pytest.mark.usefixtures("start_app")  # its teardown releases the cached resources
def test_a_watched_run_whose_writer_died_reads_interrupted_not_running(tmp_path, monkeypatch) -> None:
    """Hostile L3: a run another process wrote, SIGKILLed while watched, stayed "running" on every watcher's
    page (the server marks a dead writer's run `interrupted` only when it opens its store)."""
    import sqlite3

    from streamlit.testing.v1 import AppTest

    from tests.test_watch import APP

    path = tmp_path / "runs.sqlite"
    monkeypatch.setenv("LN_VIZ_STORE", str(path))
    with Store(path) as store:
        run_id = store.add_run(train_tiny())
    app = AppTest.from_file(APP, default_timeout=60)
    app.query_params.update({"watch": str(run_id), "lang": "en"})
    app.run()  # the server's store is open from here on
    with sqlite3.connect(path) as db:  # as a CLI writer leaves its row when SIGKILLed: running, no lock held
        db.execute("UPDATE runs SET status = 'running', writer_token = NULL WHERE id = ?", (run_id,))
    app.run()
    texts = " ".join(m.value for m in app.markdown)
    assert not app.exception and t("status.interrupted", "en") in texts and "running" not in texts


# --- the rest of round four (helper ux32) ----------------------------------------------------------------------


def _view(data, status: str):
    from ln_viz.runner import RunView

    return RunView("r", data.info.config, status, None, None, {}, None, data, 1, None)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_an_ended_run_s_status_says_its_whole_time_and_mean_rate_not_an_eta(lang: str) -> None:
    """UX L9: a stopped or ended run's status said "ETA -", beside the moving rate of its last steps."""
    from ln_viz.views.run_frames import status_line

    data = train_tiny()
    steps, elapsed = data.steps_done, data.scalars["elapsed"][-1]
    for status in ("completed", "stopped"):
        line = status_line(_view(data, status), lang, 2)
        assert "ETA" not in line and "남은 시간" not in line and " - " not in line
        assert f"{elapsed:.1f}" in line and f"{steps / elapsed:.1f}" in line and t(f"status.{status}", lang) in line
    data.scalars["step"].clear()  # stopped while queued: nothing trained, nothing timed
    assert status_line(_view(data, "stopped"), lang, 2).endswith(t("status.stopped", lang))


@pytest.mark.usefixtures("start_app")  # a store of the test's own, and the cached resources released after
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_seeds_count_lines_name_the_sides_as_the_charts_do(lang: str) -> None:
    """UX L10: with seeds, the status lines said "Run A: 2 seeds, 2 done" / "Run B: ..." where the charts, the
    sentence and the heatmaps name the sides ("Post-LN", "Pre-LN")."""
    from ln_viz.config import RunConfig
    from ln_viz.ui.run_view import RunnerRuns
    from tests.replay import ReplayRunner
    from tests.test_runner import wait_for

    runner = ReplayRunner(hold_at=3)
    sides = [[RunConfig(norm_position=p, seed=s) for s in (0, 1)] for p in ("post", "pre")]
    handles = [[runner.start(c) for c in side] for side in sides]
    wait_for(lambda: all(h.view().steps_done >= 3 for side in handles for h in side), timeout=30)
    source = RunnerRuns(handles, [side[0] for side in sides], lambda: True, 2, seed_configs=sides)
    frame = source.frame(lang, False)
    post, pre = (t(f"chart.norm.{p}", lang) for p in ("post", "pre"))
    assert frame.lines[0].startswith(f"**{post}:** ") and frame.lines[1].startswith(f"**{pre}:** ")
    runner.release()
    wait_for(lambda: all(h.done for side in handles for h in side), timeout=30)
    counts = source.frame(lang, True).lecture_lines[1]
    assert counts.startswith(f"{post}: ") and f" · {pre}: " in counts
    assert t("compare.run_a", lang) not in " ".join([*frame.lines, counts])


def _queued_tab(lecture: bool) -> None:
    """A tab whose run waits in the queue (nothing ever gives it a slot), drawn by the run view."""
    import threading

    from ln_viz.config import RunConfig
    from ln_viz.runner import RunHandle
    from ln_viz.ui import run_view

    handle = RunHandle("q", RunConfig(), lock=threading.RLock(), queue_position=lambda h: 3,
                       request_stop=lambda *a: None)  # fmt: skip
    source = run_view.RunnerRuns([[handle]], [handle.config], lambda: True, 2)
    run_view.draw(source, "en", lecture, "probe_step", None)


@pytest.mark.usefixtures("start_app")  # a store of the test's own, and the cached resources released after
@pytest.mark.parametrize("lecture", [False, True])
def test_a_queued_tab_draws_the_empty_charts_and_says_it_waits_for_a_worker(lecture: bool) -> None:
    """UX L11: a queued tab drew only its place in the line, and the charts arrived when the run started: the page
    jumped. Now the empty charts of its settings are drawn, with a note that they fill in once a worker is free."""
    from streamlit.testing.v1 import AppTest

    app = AppTest.from_function(_queued_tab, args=(lecture,), default_timeout=60)
    app.run()
    assert not app.exception
    texts = " ".join(e.value for e in [*app.markdown, *app.caption])
    assert "place 3 in line" in texts and t("ui.queued_charts", "en") in texts
    assert len(app.get("plotly_chart")) >= (2 if lecture else 6)


@pytest.mark.usefixtures("start_app")  # its teardown releases the cached resources
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_watch_page_names_the_live_parameters_it_ignores(tmp_path, monkeypatch, lang: str) -> None:
    """Hostile L2: `?watch=2&norm=<b>x</b>&steps=0` showed the run and said nothing of `norm` and `steps`."""
    from streamlit.testing.v1 import AppTest

    from tests.test_watch import APP

    path = tmp_path / "runs.sqlite"
    monkeypatch.setenv("LN_VIZ_STORE", str(path))
    with Store(path) as store:
        run_id = store.add_run(train_tiny())
    app = AppTest.from_file(APP, default_timeout=60)
    app.query_params.update({"watch": str(run_id), "lang": lang, "norm": "<b>x</b>", "steps": "0"})
    app.run()
    assert not app.exception and not app.error
    notes = [w.value for w in app.warning if "norm" in w.value]
    assert notes == [t("watch.ignored", lang, names="norm, steps")]
    assert "<b>" not in " ".join(w.value for w in app.warning)
    app.query_params.pop("norm"), app.query_params.pop("steps")
    app.run()  # the page's own parameters alone: no notice
    assert not [w for w in app.warning if t("watch.ignored", lang, names="").split(":")[0] in w.value]


@pytest.mark.parametrize(
    ("flags", "key"),
    [(["--dyt-alpha", "0.3"], "settings.unused_dyt_alpha"),
     (["--norm-type", "dyt", "--norm-position", "none"], "settings.unused_norm_type")],
)  # fmt: skip
def test_a_setting_that_has_no_effect_is_said_in_one_line(flags: list[str], key: str) -> None:
    """Hostile L13: `train --dyt-alpha 0.3` with LayerNorm and `--norm-type dyt --norm-position none` trained
    without a word, though the value (the norm type) changes nothing. Legal and harmless: said, not refused."""
    from ln_viz.config import RunConfig
    from ln_viz.words import unused_settings

    code, out, err = cli("train", *TINY, *flags)
    assert code == 0 and "Traceback" not in err
    notes = [line for line in err.splitlines() if line.startswith("note: ")]
    cfg = RunConfig(dyt_alpha=0.3) if "0.3" in flags else RunConfig(norm_type="dyt", norm_position="none")
    assert notes == [f"note: {t(key, 'en', **_words(cfg, 'en'))}"]
    assert unused_settings(cfg, "ko") == [t(key, "ko", **_words(cfg, "ko"))]
    assert unused_settings(RunConfig(norm_type="dyt", dyt_alpha=0.3), "en") == []  # where it does act


def _words(cfg, lang: str) -> dict[str, str]:
    return {"alpha": f"{cfg.dyt_alpha:g}", "norm_type": t(f"lecture.normtype.{cfg.norm_type}", lang)}


def test_the_form_says_a_setting_has_no_effect(start_app) -> None:
    """Hostile L13 in the app: DyT alpha 0.3 with LayerNorm in the form (as `?dytalpha=0.3` sets it); the
    sidebar says it changes nothing."""
    at = start_app(120)
    at.number_input(key="dyt_alpha").set_value(0.3).run()
    assert not at.exception
    note = t("settings.unused_dyt_alpha", "en", alpha="0.3", norm_type="LayerNorm")
    assert note in [c.value for c in at.sidebar.caption]


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_chart_of_a_probe_the_run_never_measured_says_so(tmp_path, lang: str) -> None:
    """Hostile L9: a run imported from a file without `attn_logit_max` (or `massive_act`), exported with
    `runs export --format html`, drew empty axes titled "Largest attention logit per layer" and no note."""
    import json

    from ln_viz import charts
    from ln_viz.export import charts_for
    from ln_viz.runfile import read_run_file, run_document

    doc = run_document(train_tiny())
    for probe in ("attn_logit_max", "massive_act"):
        del doc["probes"][probe]
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc))
    data = read_run_file(path).data
    note = t("chart.not_measured", lang)
    texts = lambda fig: [a.text for a in fig.layout.annotations]  # noqa: E731
    exported = {spec.name: spec for spec in charts_for(data)}  # what `runs export` writes, as it builds it
    assert note in texts(exported["attn_logit"].build(data, lang, True))
    assert note in texts(charts.attn_logit_chart(data, lang=lang))
    assert note in texts(charts.attn_logit_chart([data, data], lang=lang))  # Compare's lesson chart
    assert note in texts(charts.massive_act_chart(data, lang=lang))
    measured = train_tiny()  # a run that measured them: no such note
    assert note not in texts(charts.attn_logit_chart(measured, lang=lang)) + texts(charts.log_z_chart(measured))


def test_the_next_video_export_sweeps_what_a_killed_one_left(tmp_path, monkeypatch) -> None:
    """Hostile L5: a SIGKILLed export left its `ln-viz-video-*` tile folder in the temporary folder and its hidden
    part file `.k-….part.mp4` beside the target (SIGKILL cannot be caught). The next export removes them: only our
    own names, only those whose process is gone, never a link, never another name."""
    import os
    import subprocess
    import sys
    import tempfile

    from ln_viz.i18n import LocalizedError
    from ln_viz.snapshot import RunData
    from ln_viz.video import export_video

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    out = tmp_path / "out"
    out.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", ""])
    dead.wait()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        left = [tmp_path / "tmp" / f"ln-viz-video-{dead.pid}-ab12", out / f".k-ln-viz-{dead.pid}-x1.part.mp4"]
        kept = [tmp_path / "tmp" / f"ln-viz-video-{alive.pid}-cd34", out / f".k-ln-viz-{alive.pid}-x2.part.mp4",
                tmp_path / "tmp" / "tmpkaleido", out / ".k-x3.part.mp4", out / "k.mp4"]  # fmt: skip
        for path in left + kept:
            path.mkdir() if "." not in path.name else path.write_bytes(b"x")
        (left[0] / "tile-0.png").write_bytes(b"png")
        link = tmp_path / "tmp" / f"ln-viz-video-{dead.pid}-link"
        os.symlink(kept[2], link)
        with pytest.raises(LocalizedError):  # a run with no probe step: refused after the sweep
            export_video(RunData(train_tiny().info), out / "k.mp4")
        assert not any(p.exists() for p in left), [p for p in left if p.exists()]
        assert all(p.exists() for p in kept) and link.is_symlink() and kept[2].exists()
    finally:
        alive.kill()
        alive.wait()


def test_the_lecture_view_offers_the_pack_and_the_video_once_the_pair_has_ended(replay_runner, start_app, lang="ko"):
    """UX M9: the Compare lecture view had no pack or video button (the page view has them under its charts):
    leave the view, scroll, make it, come back. Now a "Pack and video" popover in its header row, once ended."""
    at = start_app(60)
    at.query_params["present"] = "1"
    at.session_state["lang"] = lang
    at.switch_page("pages/compare.py").run()
    labels = lambda: [b.proto.label for b in [*at.get("download_button"), *at.button]]  # noqa: E731
    assert t("pack.download", lang) not in labels() and not at.get("popover")  # nothing to pack before Start
    at.button(key="compare_start").click().run()
    from tests.test_runner import wait_for

    wait_for(lambda: len(replay_runner.handles()) == 2 and all(h.done for h in replay_runner.handles()), timeout=30)
    at.run()
    assert not at.exception
    assert [p.proto.popover.label for p in at.get("popover")] == [t("lecture.exports", lang)]
    assert t("pack.download", lang) in labels()
    assert {t("video.make_mp4", lang), t("video.make_gif", lang)} <= set(labels())


def test_another_visitor_s_failed_sweep_is_not_shown_as_this_page_s_error(start_app) -> None:
    """Hostile L14: visitor A's sweep failed (no Ray cluster answers); visitor B, opening the map, was shown A's
    error as the page's own. Now only the session that started the sweep sees why it failed."""
    from ln_viz.i18n import LocalizedError
    from ln_viz.ui import keys
    from ln_viz.ui.stability_view import service

    at = start_app(120, "pages/stability_map.py")
    failure = LocalizedError("sweep.err.ray_unreachable", address="127.0.0.1:26591", reason="Connection refused")
    svc = service()
    svc.error, svc.owner = failure, "visitor-a"
    at.run()
    assert not at.exception and not [e for e in at.error if "127.0.0.1:26591" in e.value]
    svc.owner = at.session_state[keys.SM_SESSION]  # this session's own sweep: it is told why
    at.run()
    assert [e for e in at.error if "127.0.0.1:26591" in e.value]


def test_the_pack_s_run_lines_do_not_say_the_run_s_name_twice() -> None:
    """UX L15 (its second half): the pack's run lines read "Post-LN: Post-LN · 24 layers · …"."""
    from ln_viz.pack import pack_html

    data = train_tiny()
    page = pack_html([data, train_tiny("post")], "en")
    assert "<b>Pre-LN</b>: Pre-LN" not in page and "<b>Post-LN</b>: Post-LN" not in page
    assert "<b>Pre-LN</b>: 2 layers" in page


def _lecture_pair(lang: str) -> None:
    from ln_viz.ui import lecture_view
    from tests.runs import train_tiny

    datas = [train_tiny("post"), train_tiny()]
    lecture_view.draw_compare(datas, ["Post-LN", "Pre-LN"], lang, None)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_lecture_view_s_heatmaps_say_layer_in_one_line(lang: str) -> None:
    """UX L5: at half width the lecture view's heatmaps' y title wrapped as "layer (1 = input / side)"; the view's
    other charts say "layer" there (the profile under the heatmaps says which end is the input)."""
    import json

    from streamlit.testing.v1 import AppTest

    app = AppTest.from_function(_lecture_pair, args=(lang,), default_timeout=60)
    app.run()
    assert not app.exception
    heat = [json.loads(c.proto.spec) for c in app.get("plotly_chart") if "heatmap" in c.proto.id or "heatmap" in c.key]
    assert len(heat) == 2
    assert all(f["layout"]["yaxis"]["title"]["text"] == t("chart.layer_axis_lecture", lang) for f in heat)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_fault_in_the_video_thread_is_said_in_one_sentence_not_an_empty_box(monkeypatch, lang: str) -> None:
    """UX M9's render thread: an exception that is neither a LocalizedError nor an OSError (a bug) ended the thread
    with no blob and no sentence, and the page showed an empty error box. The fault is injected: no real bug
    can be called up on demand."""
    from ln_viz import video
    from ln_viz.ui.video_export import VideoRender

    def broken(*args, **kwargs):
        raise RuntimeError("a fault")

    monkeypatch.setattr(video, "export_video", broken)
    job = VideoRender([train_tiny()], "gif", lang, None, token=1)
    job.thread.join(30)
    assert not job.thread.is_alive() and job.blob is None
    assert job.error == t("err.video_failed", lang, reason="RuntimeError")


def test_a_training_worker_s_imports_leave_pandas_out() -> None:
    """Issue 32's aha time: each training worker (two warm before the first Start, one more per run) imported
    pandas and pyarrow through ln_viz.snapshot, 0.3-0.5 s of CPU it never used, competing with the first page."""
    code = "import sys, ln_viz.runner.worker, ln_viz.corpus; print(sorted({'pandas', 'pyarrow'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60).stdout
    assert out.strip() == "[]"


def _shipped_map_figures(lang: str):
    from ln_viz.corpus import load_corpus
    from ln_viz.server.sweeps import read_shipped_default
    from ln_viz.sweep import charts as sweep_charts
    from ln_viz.sweep import curve_charts
    from ln_viz.sweep.results import curves
    from ln_viz.sweep.spec import SweepConfig

    shipped = read_shipped_default()
    spec, results = SweepConfig.from_dict(shipped["spec"]), shipped["results"]
    corpus = load_corpus(spec.base.corpus, None, spec.base.seq_len)
    init = math.log(corpus.vocab_size)
    zrange = sweep_charts.colour_range(results, corpus.floor(spec.base.seq_len), init, corpus.unigram_entropy)
    heat = sweep_charts.stability_heatmap(spec, results, zrange, lang, True, "lr")
    sens = curve_charts.sensitivity_chart(curves(results, init), corpus.unigram_entropy, lang, True, height=606)
    return heat, sens, results


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_map_s_lecture_view_says_final_loss_once_and_tells_its_curves_apart_by_more_than_dash(lang: str) -> None:
    """UX round 4 L6: the colour bar's and the curves' "final loss (nats/char)" titles stood side by side; the
    "unigram loss" note sat on the "3" tick (above its line, at the axis); 8 curves in 2 colours differed only by
    dash."""
    heat, sens, _ = _shipped_map_figures(lang)
    bar = next(tr.colorbar for tr in heat.data if tr.type == "heatmap" and tr.showscale is not False)
    assert bar.title.side == "top"
    assert t("sweep.axis.final_loss", lang) not in bar.title.text
    (note,) = [a for a in sens.layout.annotations if a.text == t("sweep.chart.unigram", lang)]
    assert note.yanchor == "top" and note.xshift >= 10  # under its line, clear of the tick labels
    lines = [tr for tr in sens.data if tr.mode == "lines+markers"]
    assert len(lines) == 8
    looks = {(tr.line.color, tuple(tr.marker.symbol)) for tr in lines}
    assert len(looks) == len(lines), "two curves differ only by their dash"


def test_the_map_s_lecture_view_shows_the_takeaway_s_cell_before_a_click(start_app) -> None:
    """UX round 4 L6: the left column's lower third stayed empty until a cell was clicked; it now shows the cell
    the takeaway speaks of (Post-LN, no warm-up, the largest lr: stalled), the click hint beside its link."""
    at = start_app(120)
    at.query_params["present"] = "1"
    at.switch_page("pages/stability_map.py").run()
    assert not at.exception, at.exception
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    cell = [x for x in titles if "warm-up 0" in x]
    assert len(cell) == 1 and "Post-LN, lr 1e-2" in cell[0] and "stalled" in cell[0], titles
    assert t("sweep.ui.click_hint", "en") in [c.value for c in at.caption]


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_lecture_view_s_y_axis_titles_are_never_under_24_px(start_app, lang: str) -> None:
    """UX round 4 L4, L5 (and issue 33's logit chart): the lecture view's loss title was fitted as if its chart were
    Plotly's 450 px, not its 848-px box, and shrunk to 21-22 px; the Korean logit title to 16-20 px (~10 px
    seen). Live's lecture view on the high-lr preset draws both."""
    at = start_app(120)
    at.session_state["lang"] = lang
    at.query_params.update({"present": "1", "preset": "high-lr"})
    at.run()
    assert not at.exception, at.exception
    sizes = {}
    for chart in at.get("plotly_chart"):
        layout = json.loads(chart.proto.spec)["layout"]
        for name, axis in layout.items():
            if name.startswith("yaxis") and axis.get("title", {}).get("text"):
                sizes[axis["title"]["text"]] = axis["title"].get("font", {}).get("size", 24)
    assert t("chart.loss_axis", lang) in sizes and len(sizes) >= 4, sizes
    assert min(sizes.values()) >= 24, sizes


def test_a_pair_s_pack_shows_the_gradient_profile_alone_as_the_lecture_view_does(tiny_run) -> None:
    """UX round 4 L15: a pair's pack drew the profile's two panels (gradient norm over residual std) in a
    half-height box, squashed to ~70 and ~40 px; the lecture view and the video show the gradient panel alone."""
    from ln_viz.pack import pack_html

    page = pack_html([tiny_run, tiny_run], "en", labels=["A", "B"])
    charts = json.loads(re.search(r"const PACK = (.*?);\n", page).group(1))["charts"]
    (profile,) = [c for c in charts if c["id"] == "profile"]
    layout = profile["fig"]["layout"]
    assert "yaxis2" not in layout and layout["yaxis"]["type"] == "log"
