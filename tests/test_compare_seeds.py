"""Compare with seeds (issue 20): the band and median helpers on fixed numbers, the `seeds` link key, and
the page with 3 seeds per side in AppTest (replayed runs: tests/replay.py), en and ko."""

import copy
import json
import math

import numpy as np
import pytest

from ln_viz import charts
from ln_viz.config import RunConfig
from ln_viz.snapshot import RunData, RunInfo
from ln_viz.stats import t_quantile
from ln_viz.urlstate import seeds_from_query
from tests.test_app import wait_for


def _run(losses: list[float], diverged_at: int | None = None) -> RunData:
    """A RunData with these training losses at steps 1, 2, ... (nothing else: what the helpers read)."""
    data = RunData(RunInfo.preview(RunConfig(steps=10)))
    data.scalars["step"] = list(range(1, len(losses) + 1))
    data.scalars["loss"] = list(losses)
    data.diverged_at = diverged_at
    return data


def test_the_band_of_three_seeds_is_their_range_over_the_steps_all_have_reached():
    runs = [_run([3.0, 2.0, 1.0]), _run([4.0, 3.0]), _run([5.0, 1.0, 0.5, 0.1])]
    band = charts.seed_band(runs)
    assert band.kind == "range" and band.n == 3
    assert band.steps.tolist() == [1, 2]  # the second seed is at step 2: the band waits for it
    assert band.mean.tolist() == [4.0, 2.0]
    assert band.low.tolist() == [3.0, 1.0] and band.high.tolist() == [5.0, 3.0]


def test_from_five_seeds_the_band_is_one_sd_and_a_diverged_seed_leaves_it():
    runs = [_run([1.0, 1.0]), _run([2.0, 2.0]), _run([3.0, 3.0]), _run([4.0, 4.0]), _run([5.0, float("nan")], 2)]
    band = charts.seed_band(runs)
    assert band.kind == "sd"
    assert band.steps.tolist() == [1, 2]
    assert band.mean.tolist() == [3.0, 2.5]
    sd1, sd2 = np.std([1, 2, 3, 4, 5], ddof=1), np.std([1, 2, 3, 4], ddof=1)  # the nan step: four seeds
    assert np.allclose(band.high - band.mean, [sd1, sd2]) and np.allclose(band.mean - band.low, [sd1, sd2])


def test_the_median_seed_is_the_one_whose_final_loss_is_the_median():
    assert charts.median_seed([_run([2.0]), _run([1.0]), _run([3.0])]) == 0
    assert charts.median_seed([_run([2.0]), _run([1.0]), _run([3.0]), _run([4.0])]) == 0  # the lower one
    assert charts.median_seed([_run([float("nan")], 1), _run([1.0]), _run([3.0])]) == 2  # no final: the highest


def test_one_seed_per_side_draws_the_compared_loss_chart_unchanged():
    a, b = _run([3.0, 2.0]), _run([2.5, 1.5])
    assert charts.seed_loss_chart([[a], [b]]).to_json() == charts.loss_chart([a, b]).to_json()


def test_a_seeds_link_value_is_a_whole_number_from_1_to_8():
    assert seeds_from_query("3") == (3, None)
    assert seeds_from_query(None) == (1, None)
    for bad in ("9", "0", "three"):
        n, notice = seeds_from_query(bad)
        assert n == 1 and notice is not None and notice.param == "seeds"
    assert "between 1 and 8" in seeds_from_query("9")[1].message("en")


@pytest.fixture
def at(start_app):
    app = start_app(60)
    assert not app.exception
    return app


SHIFT = {"post": 0.03, "pre": 0.01}  # nats per seed: the paired differences are 0.02 apart


@pytest.fixture
def shifted_seeds(monkeypatch):
    """Each replayed run's losses raised by SHIFT[norm] * seed, so the seeds differ and their gaps spread."""
    import tests.replay

    nearest = tests.replay.nearest_demo

    def shifted(cfg: RunConfig) -> RunData:
        base = nearest(cfg)
        data = copy.copy(base)
        shift = SHIFT.get(cfg.norm_position, 0.0) * cfg.seed
        data.scalars = {**base.scalars, "loss": [x + shift for x in base.scalars["loss"]]}
        return data

    monkeypatch.setattr(tests.replay, "nearest_demo", shifted)
    return nearest


def _seeded_compare(at, replay_runner, lang: str):
    at.query_params["seeds"] = "3"
    at.switch_page("pages/compare.py").run()
    if lang == "ko":
        at.session_state["lang"] = "ko"
        at.run()
    box = at.selectbox(key="cseeds") if "present" in at.query_params else at.number_input(key="cseeds")
    assert box.value == 3
    at.button(key="compare_start").click().run()
    wait_for(lambda: len(replay_runner.handles()) == 6 and all(h.done for h in replay_runner.handles()), timeout=30)
    at.run()
    assert not at.exception and not at.error
    return {c.key: json.loads(c.proto.spec) for c in at.get("plotly_chart")}


def test_three_seeds_per_side_draw_bands_name_the_median_and_state_the_interval(replay_runner, at, shifted_seeds):
    figs = _seeded_compare(at, replay_runner, "en")
    assert sorted((c.norm_position, c.seed) for c in replay_runner.started) == [
        ("post", 0), ("post", 1), ("post", 2), ("pre", 0), ("pre", 1), ("pre", 2)
    ]  # fmt: skip
    groups = {}  # each side's three runs are one seed group, which the store and the Runs page keep together
    for h in replay_runner.handles():
        groups.setdefault(h.group, set()).add(h.config.norm_position)
    assert len(groups) == 2 and sorted(map(sorted, groups.values())) == [["post"], ["pre"]], groups
    assert all(g and g[0] in "AB" for g in groups)
    traces = figs["compare_loss"]["data"]
    bands = [tr for tr in traces if tr.get("fill") == "toself"]
    assert len(bands) == 2
    names = [tr["name"] for tr in traces if tr.get("showlegend") is not False]
    assert names == ["Post-LN: mean of 3 seeds, band min-max", "Pre-LN: mean of 3 seeds, band min-max"]
    titles = " ".join(m.value for m in at.markdown)
    assert "Post-LN, median of 3 seeds: seed 1" in titles and "Pre-LN, median of 3 seeds: seed 1" in titles
    profile = [tr["name"] for tr in figs["compare_profile"]["data"] if tr.get("name")]
    assert "Post-LN, median of 3 seeds: seed 1" in profile
    status = at.markdown[0].value
    assert status.startswith("**Post-LN:** 3 seeds, 3 done") and "**Pre-LN:** 3 seeds, 3 done" in status
    # the gap: the demo runs' final losses, plus 0.02 nats per seed: mean gap + 0.02, sd 0.02, n 3
    post, pre = (shifted_seeds(RunConfig(norm_position=p)).final_loss() for p in ("post", "pre"))
    gap = post - pre + 0.02
    half = t_quantile(0.975, 2) * 0.02 / math.sqrt(3)
    sentence = f"Post-LN ends {gap:.2f} nats above Pre-LN (95 % CI {gap - half:.2f}-{gap + half:.2f}, 3 seeds)"
    assert any(sentence in m.value for m in at.markdown), sentence
    # beside it, the comparison to download: the CLI's `compare --json` object and the sentence
    (button,) = [b for b in at.get("download_button") if b.proto.label == "Download the comparison (JSON)"]
    from ln_viz.ui import compare_seeds
    from ln_viz.views import run_frames

    handles = sorted(replay_runner.handles(), key=lambda h: (h.config.norm_position != "post", h.config.seed))
    views, groups, _ = compare_seeds.side_runs([handles[:3], handles[3:]])
    cfgs = [replay_runner.started[0::2], replay_runner.started[1::2]]  # queued A0, B0, A1, B1, ...
    result = run_frames.comparison(cfgs, views, groups)
    from ln_viz.sweep.compare import takeaway

    report = json.loads(run_frames.report_json(result, takeaway(result, "en")))
    assert report["takeaway"] == sentence and report["seeds"] == [0, 1, 2] and report["gap"]["n"] == 3
    assert report["gap"]["mean"] == pytest.approx(gap) and report["a"]["statuses"] == ["stalled"] * 3
    assert set(report) == {"a", "b", "seeds", "gap", "executor", "state", "takeaway"}


def test_three_seeds_in_korean_count_the_seeds_and_state_the_interval(replay_runner, at, shifted_seeds):
    figs = _seeded_compare(at, replay_runner, "ko")
    names = [tr["name"] for tr in figs["compare_loss"]["data"] if tr.get("showlegend") is not False]
    assert names == ["Post-LN: 시드 3개 평균, 띠 최소-최대", "Pre-LN: 시드 3개 평균, 띠 최소-최대"]
    assert at.markdown[0].value.startswith("**Post-LN:** 시드 3개, 3개 끝남")
    text = " ".join(m.value for m in at.markdown)
    assert "Post-LN, 시드 3개의 중앙값: 시드 1" in text
    assert "95 % 신뢰구간" in text and "시드 3개)" in text and "높습니다" in text


def test_one_seed_says_it_gives_no_interval(replay_runner, at):
    at.switch_page("pages/compare.py").run()
    at.button(key="compare_start").click().run()
    wait_for(lambda: all(h.done for h in replay_runner.handles()), timeout=30)
    at.run()
    assert len(replay_runner.handles()) == 2
    assert any("(1 seed: no interval)" in m.value for m in at.markdown)
    assert not any("nan" in m.value for m in at.markdown)


def test_a_bad_seeds_value_in_a_link_gives_one_line(at):
    at.query_params["seeds"] = "12"
    at.switch_page("pages/compare.py").run()
    assert at.number_input(key="cseeds").value == 1
    assert [w.value for w in at.warning if "seeds=12" in w.value] == [
        "Ignored 'seeds=12' from the link: seeds must be between 1 and 8, got 12. The default is kept."
    ]


@pytest.mark.parametrize("n", [1, 3])
def test_the_sentence_of_two_sides_that_end_at_the_same_loss_names_its_seeds(n):
    from ln_viz.stats import paired_t_interval
    from ln_viz.sweep.compare import SeedComparison, Side, takeaway

    cfg = RunConfig()
    side = Side(cfg, (2.5,) * n, ("completed",) * n, (None,) * n)
    gap = paired_t_interval(side.final_losses, side.final_losses)
    result = SeedComparison(side, side, tuple(range(n)), gap, "runner", 0.0, "done")
    why = "1 seed: no interval" if n == 1 else "95 % CI 0.00-0.00, 3 seeds"
    assert takeaway(result, "en") == f"Pre-LN (A) and Pre-LN (B) end at the same loss ({why})"


def test_the_lecture_view_with_three_seeds_says_the_interval_in_its_verdict_box(replay_runner, at, shifted_seeds):
    at.query_params["present"] = "1"
    figs = _seeded_compare(at, replay_runner, "en")
    assert len([tr for tr in figs["compare_loss"]["data"] if tr.get("fill") == "toself"]) == 2
    status = [m.value for m in at.markdown if "95 % CI" in m.value]
    assert len(status) == 1 and status[0].startswith("**Post-LN ends ") and "3 seeds)**" in status[0]
    assert "Post-LN: 3 seeds, 3 done, 3 of 3 stalled · Pre-LN: 3 seeds, 3 done" in status[0]  # the demo Post-LN stalls


def test_seeds_are_set_in_the_lecture_view_s_header_and_kept_when_the_view_changes(replay_runner, at):
    """UX round 4 M8: the lecture view had no Seeds control (leave it, type 3, come back: 11 s), and its header
    did not say "3 seeds" before the runs ended. Now a box in the header's row says it, in words."""
    at.query_params["present"] = "1"
    at.switch_page("pages/compare.py").run()
    box = at.selectbox(key="cseeds")
    assert box.value == 1 and box.format_func(1) == "1 seed per side"
    box.set_value(3).run()
    assert not at.exception
    assert at.selectbox(key="cseeds").format_func(3) == "3 seeds per side"
    assert at.query_params["seeds"] in ("3", ["3"])  # in the address too, as the page view's box
    at.button(key="compare_start").click().run()
    wait_for(lambda: len(replay_runner.handles()) == 6 and all(h.done for h in replay_runner.handles()), timeout=30)
    at.run()
    assert sorted(c.seed for c in replay_runner.started) == [0, 0, 1, 1, 2, 2]
    at.session_state["_lecture_view"] = False  # leave the view: the page view's box holds the same 3
    at.query_params.pop("present", None)
    at.run()
    assert at.number_input(key="cseeds").value == 3
    at.session_state["lang"] = "ko"
    at.session_state["_lecture_view"] = True
    at.run()
    assert at.selectbox(key="cseeds").format_func(3) == "양쪽 시드 3개씩"


@pytest.mark.parametrize("lecture", [False, True])
def test_the_seeds_loss_chart_is_on_a_linear_axis_in_both_views(lecture):
    """The bands are drawn raw on a linear loss axis; the lecture view's flag once went where the log-axis
    flag goes, so the lecture view drew the seeds' loss on a log axis (a different chart from the one
    the room saw a moment before with one seed)."""
    sides = [[_run([3.0, 2.0, 1.0]), _run([3.2, 2.1, 1.1])], [_run([3.1, 3.0, 2.9]), _run([3.3, 3.1, 3.0])]]
    fig = charts.seed_loss_chart(sides, "en", lecture, ["A", "B"])
    assert fig.layout.yaxis.type in (None, "linear")
    assert fig.layout.yaxis.range[0] == 0


def _contrast_on_white(rgba: str) -> float:
    """WCAG contrast ratio of a translucent fill drawn on the chart's white ground, and that ground."""
    *rgb, alpha = (float(v) for v in rgba[rgba.index("(") + 1 : -1].split(","))
    shown = [(255 * (1 - alpha) + c * alpha) / 255 for c in rgb]  # the tint over white, 0..1
    lum = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in shown]
    y = 0.2126 * lum[0] + 0.7152 * lum[1] + 0.0722 * lum[2]
    return 1.05 / (y + 0.05)


def test_the_bands_stand_out_on_a_projector_in_the_lecture_view():
    """Issue 32: at the page's 0.2 the bands were faint on a projector (?present=1): there, each side's band is a
    stronger tint of its own colour-blind-safe colour, outlined in that colour and the side's dash."""
    sides = [[_run([3.0, 2.0, 1.0]), _run([3.2, 2.1, 1.1])], [_run([3.1, 3.0, 2.9]), _run([3.3, 3.1, 3.0])]]
    page, lecture = (charts.seed_loss_chart(sides, "en", on, ["A", "B"]) for on in (False, True))
    bands = [[tr for tr in fig.data if tr.fill == "toself"] for fig in (page, lecture)]
    lines = [tr for tr in lecture.data if tr.fill != "toself" and tr.showlegend is not False and tr.name]
    assert len(bands[0]) == len(bands[1]) == 2
    for on_page, on_screen in zip(*bands):
        assert _contrast_on_white(on_screen.fillcolor) >= 1.35, on_screen.fillcolor
        assert _contrast_on_white(on_screen.fillcolor) > 1.15 * _contrast_on_white(on_page.fillcolor)
        assert on_screen.line.width >= 1 and on_page.line.width == 0  # outlined in the lecture view only
        mean = next(tr for tr in lines if tr.name == on_screen.name)  # its side's mean line: same hue and dash
        assert on_screen.line.color.startswith(_rgb_of(mean.line.color)) and on_screen.line.dash == mean.line.dash


def _rgb_of(hex_color: str) -> str:
    h = hex_color.lstrip("#")
    return "rgba(" + ",".join(str(int(h[i : i + 2], 16)) for i in (0, 2, 4)) + ","
