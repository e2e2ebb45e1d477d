"""The offline lecture pack: one self-contained HTML file of a run (or a compared pair) for a talk in a
room with no network. The lecture view's charts (the loss, the gradient heatmap(s), the per-layer
profile and, for one run, the distribution), one shared Play button and step slider that move every
chart at once, the settings in words, how each run ended and the scenario's takeaway; plotly.js is
inlined once, so the file opens from a USB stick with no server, in any current browser.

    html = pack_html([data], lang="ko")              # one run
    html = pack_html([post, pre], labels=["A", "B"])  # a pair, as Compare shows it
    write_pack([data], "out/lecture.html")

How the step moves the charts: the step-bound charts (profile, distribution) get Plotly's own animation
frames (`Plotly.addFrames`, one per shown probe step) and `Plotly.animate` jumps to one; the charts over
all steps (loss, heatmaps) keep their data and move a dotted step marker (`Plotly.relayout`). The frames
are thinned to MAX_FRAMES probe steps and every number is rounded to 4 significant digits, so a
300-step run probed every 5 steps is about 5.2 MB, plotly.js's 4.8 MB of it (`benchmarks/bench.py`).

Text comes from the catalogs (`pack.*`, `lecture.*`); the fonts are the viewer's (no web font), so Korean
needs a Korean system font, which every current desktop has. No streamlit here."""

from __future__ import annotations

import base64
import html
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import plotly.graph_objects as go

from ln_viz import charts
from ln_viz.export import _plain_template
from ln_viz.i18n import LocalizedError, t
from ln_viz.lessons import lesson_chart, scenario_of
from ln_viz.snapshot import RunData
from ln_viz.words import describe, setting_words

MAX_FRAMES = 60  # probe steps the slider visits: smooth enough for a room, small enough for a USB stick
DIGITS = 4  # significant digits of every number in the file
_MARKER = {"type": "line", "xref": "x", "yref": "paper", "y0": 0, "y1": 1,
           "line": {"color": "#222222", "width": 2, "dash": "dot"}}  # fmt: skip


def frame_steps(datas: Sequence[RunData], max_frames: int = MAX_FRAMES) -> list[int]:
    """The probe steps the slider visits: those every run measured, at most `max_frames`, evenly spread,
    the first and the last always among them."""
    common = set(datas[0].probe_steps).intersection(*(d.probe_steps for d in datas[1:]))
    steps = sorted(common)
    if len(steps) <= max_frames:
        return steps
    picks = np.unique(np.linspace(0, len(steps) - 1, max_frames).round().astype(int))
    return [steps[i] for i in picks]


# --- numbers: rounded, plain JSON --------------------------------------------------------------------
def _round(x: float) -> float | None:
    if not math.isfinite(x):
        return None
    return float(f"{x:.{DIGITS}g}")


def _plain(obj: Any) -> Any:
    """A figure's dict as plain JSON: Plotly's typed arrays ({dtype, bdata, shape}) and numpy arrays
    decoded to lists, floats rounded to DIGITS significant digits, NaN and inf as null."""
    if isinstance(obj, dict):
        if "bdata" in obj and "dtype" in obj:
            arr = np.frombuffer(base64.b64decode(obj["bdata"]), dtype=np.dtype(obj["dtype"]))
            if "shape" in obj:
                arr = arr.reshape([int(n) for n in str(obj["shape"]).split(",")])
            return _plain(arr)
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, np.ndarray):
        return _plain(obj.tolist())
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, (bool, int, str)) or obj is None:
        return obj
    if isinstance(obj, (float, np.floating)):
        return _round(float(obj))
    if isinstance(obj, np.integer):
        return int(obj)
    return obj


def _fig_json(fig: go.Figure) -> dict[str, Any]:
    d = _plain(fig.to_dict())
    d["layout"].pop("height", None)  # the page's boxes size the charts
    d["layout"]["autosize"] = True
    return d


# --- the charts --------------------------------------------------------------------------------------
def _marked(fig: go.Figure, cid: str, step: int) -> dict[str, Any]:
    """A chart over all steps with a dotted marker at the shown step (moved by relayout)."""
    d = _fig_json(fig)
    shapes = d["layout"].setdefault("shapes", [])
    shapes.append({**_MARKER, "x0": step, "x1": step})
    return {"id": cid, "fig": d, "marker": len(shapes) - 1}


def _framed(build, cid: str, steps: Sequence[int]) -> dict[str, Any]:
    """A step-bound chart: its figure at the last step and one Plotly frame per step (the traces' data,
    the title and the notes)."""
    figs = [_fig_json(build(s)) for s in steps]
    base = figs[-1]["data"]
    for s, f in zip(steps, figs):
        if len(f["data"]) != len(base):
            raise ValueError(f"{cid}: step {s} draws {len(f['data'])} traces, the last step {len(base)}")
    # a frame carries only what some step changes (a frame updates its traces as restyle does): a third
    # of the size, since colour scales, bars and hover templates are the same at every step
    varying = [
        {k for f in figs for k in f["data"][i] if f["data"][i].get(k) != base[i].get(k)} for i in range(len(base))
    ]
    frames = []
    for s, f in zip(steps, figs):
        data = [{k: tr.get(k) for k in keys} for tr, keys in zip(f["data"], varying)]
        layout = {k: f["layout"][k] for k in ("title", "annotations") if k in f["layout"]}
        frames.append({"name": str(s), "data": data, "layout": layout})
    return {"id": cid, "fig": figs[-1], "frames": frames}


def _lesson_of(datas: Sequence[RunData]) -> str | None:
    """The lecture view's chart in the heatmaps' place (ln_viz.lessons), when every run measured it."""
    cfgs = [d.info.config for d in datas]
    lesson = lesson_chart(scenario_of(cfgs), cfgs)
    return lesson if lesson and all(charts.has_instability_probes(d) for d in datas) else None


_LESSONS = {"attn_logit": charts.attn_logit_chart, "log_z": charts.log_z_chart,
            "angular_update": charts.angular_update_chart}  # fmt: skip


def _chart_specs(datas: Sequence[RunData], labels: Sequence[str] | None, lang: str, steps: list[int]) -> list[dict]:
    """The lecture view's charts as the page lays them out: loss, heatmap(s) (or the scenario's lesson
    chart, as the lecture view shows it), profile, distribution."""
    from ln_viz.video_charts import lr_title_above

    last = steps[-1]
    lesson = _lesson_of(datas)
    if len(datas) == 1:
        d = datas[0]
        top = _LESSONS[lesson](d, lang, True) if lesson else charts.grad_heatmap(d, lang, lecture=True)
        return [
            _marked(lr_title_above(charts.loss_chart(d, lang, lecture=True)), "loss", last),
            _marked(top, "heatmap0", last),
            _framed(lambda s: charts.layer_profile(d, lang, s, lecture=True), "profile", steps),
            _framed(lambda s: charts.act_dist(d, lang, s, lecture=True), "dist", steps),
        ]
    specs = [_marked(lr_title_above(charts.loss_chart(list(datas), lang, True, labels)), "loss", last)]
    if lesson:  # both runs on one chart, across both heatmaps' places
        specs.append(_marked(_LESSONS[lesson](list(datas), lang, True, labels=labels), "heatmap0", last))
    else:
        zrange = charts.shared_zrange(datas)
        for i, d in enumerate(datas):
            fig = charts.grad_heatmap(d, lang, zrange=zrange, lecture=True)
            name = labels[i] if labels else charts.norm_label(d.info.placement, lang)
            fig.update_layout(title={"text": name})
            if i < len(datas) - 1:
                fig.update_traces(showscale=False)  # one colour bar for both, as Compare draws them
            specs.append(_marked(fig, f"heatmap{i}", last))
    # the gradient panel alone, as the lecture view and the video show a pair: with the residual std under it, the
    # half-height box left the two panels ~70 and ~40 px (UX round 4 L15)
    profile = lambda s: charts.layer_profile(list(datas), lang, s, True, labels, std=False)  # noqa: E731
    specs.append(_framed(profile, "profile", steps))
    return specs


# --- the page ----------------------------------------------------------------------------------------
def _run_line(d: RunData, label: str | None, lang: str) -> str:
    """One run in words: its name, its settings, how it ended and its final loss."""
    words = setting_words(d.info.config, lang)
    words = words[1:] if label and words[0] == label else words  # "Post-LN: 24 layers …", not "Post-LN: Post-LN · …"
    final = d.final_loss()
    ended = t(f"status.{d.status}", lang) + (
        " · " + t("pack.final_loss", lang, loss=f"{final:.2f}") if final is not None else ""
    )
    head = f"<b>{html.escape(label)}</b>: " if label else ""
    return f"<li>{head}{html.escape(' · '.join(words))} — {html.escape(ended)}</li>"


def pack_html(datas: Sequence[RunData], lang: str = "en", labels: Sequence[str] | None = None) -> str:
    """The lecture pack of one run or two compared runs (`labels`: their names, by default their norm
    positions) as one HTML page's text; plotly.js inside, once. A run with no probe step is refused
    (a LocalizedError): the pack has nothing to step through."""
    from plotly.offline import get_plotlyjs

    if not 1 <= len(datas) <= 2:
        raise ValueError(f"a lecture pack shows one run or two, got {len(datas)}")
    steps = frame_steps(datas)
    if not steps:
        raise LocalizedError("err.pack_no_probes")
    with _plain_template():
        specs = _chart_specs(datas, labels, lang, steps)
    cfgs = [d.info.config for d in datas]
    name = scenario_of(cfgs)
    title = describe(cfgs, lang)
    payload = {
        "steps": steps,
        "charts": specs,
        "text": {k: t(f"pack.{k}", lang) for k in ("play", "pause", "step")},
    }
    data_js = json.dumps(payload, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    names = labels or [None] * len(datas)
    if len(datas) == 2 and labels is None:
        names = [charts.norm_label(c.norm_position, lang) for c in cfgs]
    takeaway = t(f"lecture.takeaway.{name}", lang) if name else ""
    return _PAGE.format(
        lang=lang,
        title=html.escape(title),
        runs="".join(_run_line(d, n, lang) for d, n in zip(datas, names)),
        takeaway=html.escape(takeaway),
        note=html.escape(t("pack.note", lang, frames=len(steps))),
        play=html.escape(t("pack.play", lang)),
        step_label=html.escape(t("pack.step", lang)),
        layout="one" if len(datas) == 1 else "pair lesson" if _lesson_of(datas) else "pair",
        divs="".join(f'<div style="grid-area: {c["id"]}"><div id="{c["id"]}" class="plot"></div></div>' for c in specs),
        plotly_js=get_plotlyjs(),
        data=data_js,
        script=_SCRIPT,
    )


def write_pack(
    datas: Sequence[RunData], path: str | Path, lang: str = "en", labels: Sequence[str] | None = None
) -> Path:
    """`pack_html` written to `path` (UTF-8); an unwritable place is a LocalizedError."""
    path = Path(path)
    try:
        path.write_text(pack_html(datas, lang, labels), encoding="utf-8")
    except OSError as e:
        raise LocalizedError("err.write_failed", path=str(path), reason=e.strerror) from e
    return path


_SCRIPT = """
(function () {
  const P = PACK, steps = P.steps, last = steps.length - 1;
  const cfg = {responsive: true, displaylogo: false, scrollZoom: false};
  const jump = {mode: "immediate", frame: {duration: 0, redraw: true}, transition: {duration: 0}};
  const slider = document.getElementById("step"), label = document.getElementById("step-value");
  const play = document.getElementById("play");
  // one draw at a time; a step asked for meanwhile replaces any other waiting (a dragged slider never
  // lags behind), and Play moves on 0.25 s after every chart has drawn its step
  let index = last, wanted = null, drawing = true, playing = false, tick = null;
  const ready = P.charts.map(function (c) {
    const gd = document.getElementById(c.id);
    return Plotly.newPlot(gd, c.fig.data, c.fig.layout, cfg).then(function () {
      return c.frames ? Plotly.addFrames(gd, c.frames) : null;
    });
  });
  function draw(s) {
    return Promise.all(P.charts.map(function (c) {
      const gd = document.getElementById(c.id);
      if (c.frames) return Plotly.animate(gd, [String(s)], jump);
      const u = {}; u["shapes[" + c.marker + "].x0"] = s; u["shapes[" + c.marker + "].x1"] = s;
      return Plotly.relayout(gd, u);
    }));
  }
  function pump() {
    if (wanted === null) { drawing = false; return; }
    drawing = true;
    const s = wanted; wanted = null;
    draw(s).then(function () { document.body.dataset.shown = s; next(); pump(); });
  }
  function show(i) {
    index = i; slider.value = i; label.textContent = steps[i]; wanted = steps[i];
    if (!drawing) pump();
  }
  function next() {
    if (!playing || wanted !== null || tick !== null) return;
    tick = setTimeout(function () {
      tick = null;
      if (playing) { if (index >= last) stop(); else show(index + 1); }
    }, 250);
  }
  function stop() { playing = false; clearTimeout(tick); tick = null; play.textContent = "\\u25B6 " + P.text.play; }
  play.addEventListener("click", function () {
    if (playing) { stop(); return; }
    playing = true; play.textContent = "\\u275A\\u275A " + P.text.pause;
    show(index >= last ? 0 : index + 1);
  });
  slider.addEventListener("input", function () { stop(); show(Number(slider.value)); });
  Promise.all(ready).then(function () { document.body.dataset.ready = "1"; pump(); });
})();
"""

_PAGE = """<!DOCTYPE html>
<html lang="{lang}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
body {{margin: 0; font-family: system-ui, "Noto Sans", "Noto Sans CJK KR", "Apple SD Gothic Neo", "Malgun Gothic",
  sans-serif; color: #222; background: #fff;}}
header, footer, #controls {{padding: 0.4rem 1.2rem;}}
h1 {{font-size: clamp(20px, 1.8vw, 34px); margin: 0.2rem 0;}}
ul.runs {{margin: 0; padding-left: 1.2rem; font-size: clamp(14px, 1vw, 19px);}}
#controls {{display: flex; gap: 1rem; align-items: center; font-size: 18px; position: sticky; top: 0;
  background: #fff; z-index: 5;}}
#controls button {{font-size: 18px; padding: 0.3rem 1rem; cursor: pointer;}}
#controls input {{flex: 0 1 40%;}}
main {{display: grid; gap: 0.3rem; padding: 0 0.6rem; height: calc(100vh - 14rem); min-height: 480px;}}
main.one {{grid-template-columns: 1fr 0.63fr 0.52fr; grid-template-rows: 1fr 1fr;
  grid-template-areas: "loss heatmap0 heatmap0" "loss profile dist";}}
main.pair {{grid-template-columns: 1.1fr 0.5fr 0.5fr; grid-template-rows: 1fr 1fr;
  grid-template-areas: "loss heatmap0 heatmap1" "loss profile profile";}}
main.pair.lesson {{grid-template-areas: "loss heatmap0 heatmap0" "loss profile profile";}}
main > div {{min-width: 0; min-height: 0; overflow: hidden;}}
/* Plotly's fonts are in px: laid out for 1920x1080 and zoomed on a smaller screen, as the lecture view is */
:root {{--z: 1;}}
@media (max-width: 1700px), (max-height: 960px) {{ :root {{--z: 0.85;}} }}
@media (max-width: 1500px), (max-height: 850px) {{ :root {{--z: 0.75;}} }}
@media (max-width: 1350px), (max-height: 760px) {{ :root {{--z: 0.6667;}} }}
.plot {{zoom: var(--z); width: 100%; height: 100%;}}
.takeaway {{font-size: clamp(18px, 1.5vw, 28px); margin: 0.2rem 0;}}
.note {{font-size: 13px; color: #666; margin: 0.2rem 0;}}
@media (max-width: 900px) {{
  main, main.one, main.pair {{display: block; height: auto;}}
  main > div {{height: 75vh;}}
  :root {{--z: 0.6667;}}
}}
</style>
<script>{plotly_js}</script>
</head><body>
<header><h1>{title}</h1><ul class="runs">{runs}</ul></header>
<div id="controls"><button id="play" type="button">&#9654; {play}</button>
<input id="step" type="range" min="0" max="0" value="0" aria-label="{step_label}">
<span>{step_label} <b id="step-value"></b></span></div>
<main class="{layout}">{divs}</main>
<footer><p class="takeaway">{takeaway}</p><p class="note">{note}</p></footer>
<script>const PACK = {data};
(function () {{ const s = document.getElementById("step"); s.max = PACK.steps.length - 1; s.value = s.max;
  document.getElementById("step-value").textContent = PACK.steps[PACK.steps.length - 1]; }})();
</script>
<script>{script}</script>
</body></html>
"""
