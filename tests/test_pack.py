"""The offline lecture pack (ln_viz/pack.py) as a file: plotly.js once, one frame per shown probe step,
numbers rounded, the settings and the takeaway in the chosen language, and `runs export --format pack`.
Opening it in Chromium with the network refused: tests/e2e/test_pack_e2e.py."""

from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from plotly.offline import get_plotlyjs

from ln_viz.cli import main
from ln_viz.config import PRESETS
from ln_viz.i18n import LocalizedError, t
from ln_viz.pack import MAX_FRAMES, frame_steps, pack_html, scenario_of
from ln_viz.snapshot import RunData
from ln_viz.store import Store
from ln_viz.words import describe
from tests.runs import train_tiny

PLOTLY_BANNER = get_plotlyjs()[:60]  # "/**\n* plotly.js v4.1.1 ..." with its version: once in the bundle


def _payload(page: str) -> dict:
    return json.loads(re.search(r"const PACK = (.*?);\n", page).group(1))


def _numbers(obj):
    if isinstance(obj, dict):
        for v in obj.values():
            yield from _numbers(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _numbers(v)
    elif isinstance(obj, float):
        yield obj


def test_a_run_pack_has_plotly_once_a_frame_per_probe_step_and_its_settings(tiny_run: RunData) -> None:
    page = pack_html([tiny_run], "en")
    assert get_plotlyjs().count(PLOTLY_BANNER) == 1 and page.count(PLOTLY_BANNER) == 1
    assert page.count("<script") == 3  # plotly.js, the data, the player: nothing fetched from anywhere
    ours = page.replace(get_plotlyjs(), "")
    assert "src=" not in ours and "https://" not in ours and "http://" not in ours
    data = _payload(page)
    assert data["steps"] == tiny_run.probe_steps
    charts = {c["id"]: c for c in data["charts"]}
    assert list(charts) == ["loss", "heatmap0", "profile", "dist"]  # the lecture view's four
    for cid in ("profile", "dist"):
        assert [f["name"] for f in charts[cid]["frames"]] == [str(s) for s in tiny_run.probe_steps]
    assert "marker" in charts["loss"] and "marker" in charts["heatmap0"]
    assert all(len(f"{abs(x):.12g}".replace(".", "").lstrip("0").rstrip("0")) <= 4 for x in _numbers(data))
    assert describe([tiny_run.info.config], "en") in page
    assert len(page.encode()) < len(get_plotlyjs()) + 300_000  # the tiny run's charts: under 0.3 MB


def test_a_pair_in_korean_shows_both_runs_and_the_scenarios_takeaway(tiny_run: RunData) -> None:
    post = train_tiny("post")
    page = pack_html([post, tiny_run], "ko")
    assert page.count(PLOTLY_BANNER) == 1 and '<html lang="ko">' in page
    assert t("pack.play", "ko") in page and describe([post.info.config, tiny_run.info.config], "ko") in page
    assert [c["id"] for c in _payload(page)["charts"]] == ["loss", "heatmap0", "heatmap1", "profile"]
    assert t("status.completed", "ko") in page
    # the takeaway comes with the scenario whose presets the runs are (seeds aside), else none
    a, b = PRESETS["post-ln-no-warmup"].config, PRESETS["pre-ln-no-warmup"].config
    assert scenario_of([a.replace(seed=3), b.replace(seed=3)]) == "post-vs-pre"
    assert scenario_of([b.replace(seed=7)]) == "pre-ln-no-warmup"
    assert scenario_of([post.info.config, tiny_run.info.config]) is None
    assert t("lecture.takeaway.post-vs-pre", "ko") not in page


def test_frames_are_thinned_to_the_shared_steps_first_and_last_kept(tiny_run: RunData) -> None:
    long = RunData(tiny_run.info, probe_steps=list(range(1, 301)))
    steps = frame_steps([long])
    assert len(steps) == MAX_FRAMES and steps[0] == 1 and steps[-1] == 300
    other = RunData(tiny_run.info, probe_steps=list(range(1, 301, 2)))
    assert set(frame_steps([long, other])) <= set(other.probe_steps)
    with pytest.raises(LocalizedError) as e:
        pack_html([RunData(tiny_run.info)], "en")  # no probe step: nothing to play
    assert e.value.key == "err.pack_no_probes"


def test_a_label_is_shown_as_text_not_markup(tiny_run: RunData) -> None:
    page = pack_html([train_tiny("post"), tiny_run], "en", labels=["</script><b>x", "B"])
    assert "</script><b>x" not in page and "&lt;/script&gt;&lt;b&gt;x" in page


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_cli_writes_a_pack_of_a_run_or_a_pair(tmp_path: Path, tiny_run: RunData) -> None:
    with Store(tmp_path / "runs.sqlite") as store:
        a, b = store.add_run(train_tiny("post")), store.add_run(tiny_run)
    flags = ("--store", str(tmp_path / "runs.sqlite"), "--out", str(tmp_path / "packs"))
    code, out, err = cli("runs", "export", str(a), "--format", "pack", "--vs", str(b), "--lang", "ko", *flags)
    assert (code, err) == (0, "")
    path = tmp_path / "packs" / f"ln-viz-pack-{a}-vs-{b}.ko.html"
    assert out.split() == [str(path)]
    page = path.read_text(encoding="utf-8")
    assert page.count(PLOTLY_BANNER) == 1 and "heatmap1" in page and t("pack.play", "ko") in page
    code, out, _ = cli("runs", "export", str(b), "--format", "pack", *flags)
    assert code == 0 and out.split() == [str(tmp_path / "packs" / f"ln-viz-pack-{b}.en.html")]
    code, _, err = cli("runs", "export", str(b), "--format", "csv", "--vs", str(a), *flags)
    assert code == 2 and "--vs is for --format pack, mp4 and gif only" in err


def test_a_pack_of_an_instability_lesson_shows_the_lecture_view_s_chart(tiny_run: RunData) -> None:
    """UX round 4, M1: the pack (and the video) of an instability scenario showed the gradient heatmaps, not
    the chart its takeaway talks about. Now the lecture view's choice (ln_viz.lessons.lesson_chart): with
    z-loss, the log Z chart in the heatmaps' place; a pair gets one chart of both runs across both places."""
    from ln_viz.lessons import lesson_chart
    from ln_viz.train import run
    from tests.runs import TINY

    zloss = run(TINY.replace(z_loss=1e-4))
    assert lesson_chart(None, [zloss.info.config]) == "log_z"
    for datas, ids in (
        ([zloss], ["loss", "heatmap0", "profile", "dist"]),
        ([zloss, tiny_run], ["loss", "heatmap0", "profile"]),
    ):
        page = pack_html(datas, "en")
        charts = {c["id"]: c for c in _payload(page)["charts"]}
        assert list(charts) == ids
        top = charts["heatmap0"]["fig"]
        assert {tr["type"] for tr in top["data"]} == {"scatter"}  # lines of log Z, no heatmap
        assert "log Z" in json.dumps(top["layout"]["title"])
    assert '<main class="pair lesson">' in page
    plain = {c["id"]: c for c in _payload(pack_html([tiny_run], "en"))["charts"]}
    assert plain["heatmap0"]["fig"]["data"][0]["type"] == "heatmap"  # no lesson: the heatmap, as before


def test_a_scenario_is_known_by_what_it_trains_not_by_how_often_it_is_probed() -> None:
    """The README's GIF probes the post-vs-pre pair every 15 steps (21 frames): its frames still carry the
    scenario's question and takeaway, as the pair with the presets' own cadence does."""
    from ln_viz.config import COMPARE_PRESETS, preset
    from ln_viz.lessons import scenario_of

    a, b, _ = COMPARE_PRESETS["post-vs-pre"]
    cfgs = [preset(a), preset(b)]
    assert scenario_of(cfgs) == "post-vs-pre"
    assert scenario_of([c.replace(probe_every=15, seed=3) for c in cfgs]) == "post-vs-pre"
    assert scenario_of([c.replace(lr=1e-2) for c in cfgs]) is None  # a trained setting changed: not the scenario
