"""What a run view shows now, without Streamlit: the frame one refresh draws (`RunFrame`), and the words and keys
it is made of: a run's status line and verdict, the names of runs on one chart, a Compare pair's differences and
its seeds' count lines and sentence, a watched run's heading, the cache key of a finished run's figures.

The run view (ln_viz.ui.run_view) draws a RunFrame the same way whatever the run comes from: this server's
Runner, the store, a watch link. A new kind of run is one more source that makes RunFrames."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ln_viz.config import PRESETS, RunConfig
from ln_viz.i18n import EN, t
from ln_viz.runner import RunHandle, RunView
from ln_viz.snapshot import RunData
from ln_viz.stats import paired_t_interval
from ln_viz.store import LIVE_STATUSES
from ln_viz.sweep.compare import SeedComparison, Side
from ln_viz.text import shown
from ln_viz.views.attached import attached_label, attached_words
from ln_viz.words import describe


@dataclass(frozen=True)
class RunFrame:
    """One refresh of a run view: one run (`datas` of one) or a pair, and what is said about it.

    `lines`: the status lines above the charts (`info`: in a blue box, before Start); `lecture_lines`: the lecture
    view's status box; `queued`: the run waits in the queue (its charts are empty); `error`: one sentence and
    nothing else (the run is gone); `running`: something this view waits for still trains (when it stops, the
    page is drawn again: the timer ends, Stop is disabled, the takeaway shows); `caption`: a line under the
    status (where the run trains); `labels`: the runs' names on the charts (a pair); `seeds`: each side's runs
    seed by seed and their names (the pair's loss chart draws means and bands); `cache_key`, `shared`: the single
    run's figures are built once (ln_viz.ui.live.figures); `lesson`: the instability chart the lecture view
    shows in the heatmap's place; `notes()` draws the runs' messages under the loss (Streamlit, from the source).
    """

    datas: Sequence[RunData] = ()
    lines: Sequence[str] = ()
    lecture_lines: Sequence[str] = ()
    done: bool = False
    running: bool = False
    info: bool = False
    queued: bool = False
    error: str | None = None
    caption: str | None = None
    labels: Sequence[str] = ()
    seeds: tuple[Sequence[Sequence[RunData]], Sequence[str]] | None = None
    cache_key: str | None = None
    shared: bool = False
    lesson: str | None = None
    notes: Callable[[], None] | None = None
    titles: Sequence[str] = ()  # a pair's heatmap titles in the lecture view (default: `labels`)

    @property
    def pair(self) -> bool:
        return len(self.datas) > 1


# --- one run: status, messages, verdict, cache key -------------------------------------------------------------


def status_line(view: RunView, lang: str, cap: int) -> str:
    """`Step 120/300 | 12.3 steps/s | ETA 15 s | running` (or the queue place; `cap` runs train at once)."""
    if view.status == "queued":
        return t("ui.queued", lang, pos=view.queue_position or 1, cap=cap)
    data = view.data
    step = data.steps_done if data else 0
    if view.done:  # no ETA, and the whole run's time and mean rate, not the last steps' (UX round 4 L9)
        return ended_line(view, lang)
    rate = data.scalars["steps_per_sec"][-1] if data and data.scalars["steps_per_sec"] else 0.0
    remaining = view.config.steps - step
    if rate > 0:
        eta = t("ui.eta_seconds", lang, n=math.ceil(remaining / rate))
    else:
        eta = "..."
    return t(
        "ui.status_line",
        lang,
        step=step,
        steps=view.config.steps,
        rate=f"{rate:.1f}",
        eta=eta,
        status=t(f"status.{view.status}", lang),
    )


def ended_line(view: Any, lang: str) -> str:
    """A run that has ended: `Step 120/300 | stopped after 7.4 s of training (16.2 steps/s on average)`; with no
    step trained (stopped while queued) its status alone. No ETA, and no moving rate of its last steps."""
    data = view.data
    step = data.steps_done if data is not None else 0
    status = t(f"status.{view.status}", lang)
    elapsed = data.scalars["elapsed"][-1] if data is not None and len(data.scalars["elapsed"]) else 0.0
    if step == 0 or elapsed <= 0:
        return t("ui.status_ended_unstarted", lang, step=step, steps=view.config.steps, status=status)
    return t("ui.status_ended", lang, step=step, steps=view.config.steps, status=status, seconds=f"{elapsed:.1f}",
             rate=f"{step / elapsed:.1f}")  # fmt: skip


def message_lines(views: Sequence[Any], lang: str) -> list[str]:
    """The runs' end messages as coloured lines of text (the lecture view has no room for boxes)."""
    lines = []
    for view in views:
        if view.message:
            text = t(view.message, lang, **view.message_params)
            colour = "red" if view.status in ("diverged", "failed") else "orange"
            lines.append(f":{colour}[{text}]")
    return lines


def verdict(view: Any, label: str, lang: str) -> str:
    """How a run that has ended came out, in one line that names it (`label`), for the room: learned or
    stalled with its final and the unigram loss, diverged at its step, else its status at its step."""
    data = view.data
    final = data.final_loss() if data is not None else None
    step = data.steps_done if data is not None else 0
    if data is not None and data.info.attached and final is not None and view.status != "diverged":
        # a model of the user's own: no unigram loss to measure it against (its data is the user's)
        status = t(f"status.{view.status}", lang)
        return t("verdict.attached", lang, run=label, status=status, step=step, final=f"{final:.2f}")
    if final is None or view.status not in ("completed", "stalled"):
        key = "verdict.diverged" if view.status == "diverged" else "verdict.ended"
        at = data.diverged_at if view.status == "diverged" and data and data.diverged_at else step
        return t(key, lang, run=label, status=t(f"status.{view.status}", lang), step=at)
    unigram = data.info.unigram_entropy
    learned = view.status == "completed" and not data.stalled_since and final < unigram
    # not learned: how far from the unigram loss, in words that agree with both numbers (issue 21 N10)
    key = "verdict.learned" if learned else "verdict.stalled_" + ("above" if final > unigram else "below")
    words = {"status": t(f"status.{view.status}", lang), "final": f"{final:.2f}", "unigram": f"{unigram:.2f}"}
    return t(key, lang, run=label, pct=f"{abs(final - unigram) / unigram * 100:.1f}", **words)


def verdict_lines(views: Sequence[Any], labels: Sequence[str], lang: str) -> list[str]:
    """The lecture view's status once the runs have ended: each one's verdict in bold, naming it (two
    lines fit its box), and a failed run's message (what went wrong, which its verdict does not say)."""
    lines = [f"**{verdict(v, label, lang)}**" for v, label in zip(views, labels)]
    return lines + message_lines([v for v in views if v.status == "failed"], lang)


def finished_key(handle: RunHandle, view: RunView, data: RunData) -> str | None:
    """The cache key of a finished run's figures (None while it trains, or until it is stored)."""
    if not handle.done:
        return None
    return f"{handle.run_id}@{view.version}/{data.probe_stride}/{len(data.probe_steps)}/{data.steps_done}"


# --- the lecture view: its lesson chart, the step it marks ------------------------------------------------------

# Which chart tells a scenario's or preset's lesson: ln_viz.lessons (the pack and the video share it).


def step_mark(step: int | None, steps: Sequence[int], done: bool) -> int | None:
    """Where the charts over training steps mark the step the profile shows (issue 21 N15: Play a room can
    follow): once the runs have ended and the step control is moved off the last step (by hand or by Play);
    None while training (the step is the latest) and at the last step (the charts' right end)."""
    return step if done and step is not None and len(steps) > 1 and step != steps[-1] else None


# --- runs on one chart: names, the steps they share, what differs ----------------------------------------------


def run_labels(cfgs: Sequence[RunConfig], lang: str) -> list[str]:
    """Short names of runs on one chart: the norm position, plus what else tells them apart
    ("Post-LN · warm-up 100 steps", "Pre-LN · QK-norm")."""
    from ln_viz.words import changed_settings, setting_words

    extras = changed_settings(cfgs)
    words = [setting_words(c, lang, extras) for c in cfgs]
    differ = [j for j in range(1, len(words[0])) if len({w[j] for w in words}) > 1]
    return [" · ".join([w[0], *(w[j] for j in differ)]) for w in words]


def data_labels(datas: Sequence[RunData], lang: str) -> list[str]:
    """Runs named by their settings (`run_labels`); a run of the user's own model by its card
    ("LlamaForCausalLM · Pre-LN", `attached_label`)."""
    configs = [d.info.config for d in datas if not d.info.attached]
    own = iter(run_labels(configs, lang) if configs else [])
    return [attached_label(d.info.model_card, lang) if d.info.model_card is not None else next(own) for d in datas]


def stored_labels(datas: Sequence[RunData], ids: Sequence[int], lang: str) -> list[str]:
    """Stored runs named by their settings and id ("Post-LN (run 13)"), not by the id alone."""
    return [t("lecture.stored_label", lang, desc=n, id=i) for n, i in zip(data_labels(datas, lang), ids)]


def stored_titles(datas: Sequence[RunData], ids: Sequence[int], lang: str) -> list[str]:
    """Stored runs by their number first ("Run 2: Olmo2 · reordered (output norms)"): where a half-width chart
    cuts a long name, its end goes, not which run it is."""
    return [t("runs.heading", lang, id=i, label=n) for n, i in zip(data_labels(datas, lang), ids)]


@dataclass(frozen=True)
class _Ended:
    """A stored run as `verdict` reads a RunView."""

    data: RunData
    status: str
    message: str | None = None
    message_params: dict[str, Any] = field(default_factory=dict)


def stored_verdict_lines(datas: Sequence[RunData], labels: Sequence[str], lang: str) -> list[str]:
    """Stored runs' verdicts, one line each (the lecture view's status box of Compare's stored pair)."""
    return verdict_lines([_Ended(d, d.status) for d in datas], labels, lang)


def common_steps(datas: Sequence[RunData]) -> list[int]:
    """Probe steps both runs measured (the shared step slider moves over these)."""
    steps = set(datas[0].probe_steps)
    for d in datas[1:]:
        steps &= set(d.probe_steps)
    return sorted(steps)


# Field names and values as the forms show them (the catalog's), not the code's.
_LABEL_KEYS = {"warmup_steps": "ui.warmup"}
_VALUE_KEYS = {
    "norm_position": "chart.norm.",
    "optimizer": "lecture.opt.",
    "schedule": "schedule.",
    "norm_type": "normtype.",
    "qk_norm": "qknorm.",
    "corpus": "corpus.",
    "adam_init": "adaminit.",  # "0 (Adam)" / "first gradient squared (GI-Adam)", not zero / gi
}


def _field(name: str, lang: str) -> str:
    key = _LABEL_KEYS.get(name, f"ui.{name}")
    return t(key, lang) if key in EN else name


def _value(name: str, value: object, lang: str) -> str:
    key = _VALUE_KEYS.get(name, "?") + str(value)
    if key in EN:
        return t(key, lang)
    return f"{value:g}" if isinstance(value, float) else str(value)


def differences(a: RunConfig, b: RunConfig, lang: str) -> str:
    """One line naming the fields where A and B differ, so the comparison's one variable is explicit."""
    # every field, not to_dict's: that leaves issue 19's fields out at their defaults (config.OMIT_AT_DEFAULT),
    # and QK-norm against none read "A and B are the same configuration"
    names = [f.name for f in dataclasses.fields(a) if f.name != "user_text"]
    fields = [
        f"{_field(k, lang)} {_value(k, getattr(a, k), lang)} / {_value(k, getattr(b, k), lang)}"
        for k in names
        if getattr(a, k) != getattr(b, k)
    ]
    return t("compare.differs", lang, fields=", ".join(fields)) if fields else t("compare.same", lang)


# --- a Compare pair's seeds -------------------------------------------------------------------------------------

_ENDS_SAID = ("stalled", "diverged", "failed", "stopped")  # counted at the end: "2 of 3 stalled"
SIDE_NAMES = ("compare.run_a", "compare.run_b")


def count_line(views: Sequence[RunView], lang: str) -> str:
    """ "3 seeds, 2 done, 1 running"; at the end with how many stalled or diverged ("2 of 3 stalled")."""
    n = len(views)
    parts = [t("compare.seed_count", lang, n=n)]
    counts = {
        "compare.seed_done": sum(v.done for v in views),
        "compare.seed_running": sum(not v.done and v.status != "queued" for v in views),
        "compare.seed_queued": sum(v.status == "queued" for v in views),
    }
    parts += [t(key, lang, k=k) for key, k in counts.items() if k]
    for status in _ENDS_SAID:
        k = sum(v.status == status for v in views)
        if k:
            parts.append(t("compare.seed_ended", lang, k=k, n=n, status=t(f"status.{status}", lang)))
    return ", ".join(parts)


def median_labels(
    labels: Sequence[str], cfgs: Sequence[Sequence[RunConfig]], picks: Sequence[int], lang: str, short: bool = False
) -> list[str]:
    """ "Pre-LN, median of 3 seeds: seed 1": which run of each side the heatmap, profile and probes show;
    `short`: "Pre-LN, median seed 1 of 3", for the lecture view's heatmap titles (the long one was cut)."""
    key = "compare.median_short" if short else "compare.median_label"
    return [t(key, lang, run=label, n=len(side), seed=side[m].seed) for label, side, m in zip(labels, cfgs, picks)]


def _side(cfgs: Sequence[RunConfig], views: Sequence[RunView], datas: Sequence[RunData]) -> Side:
    """A side as the CLI's comparison holds it: a stopped or failed seed has no final loss."""
    finals = tuple(d.final_loss() if v.status not in ("stopped", "failed") else None for v, d in zip(views, datas))
    return Side(cfgs[0], finals, tuple(v.status for v in views), tuple(None for _ in views))


def comparison(
    cfgs: Sequence[Sequence[RunConfig]], views: Sequence[Sequence[RunView]], datas: Sequence[Sequence[RunData]]
) -> SeedComparison:
    """The ended runs as the CLI's comparison holds them (its sentence, its `--json`)."""
    a, b = (_side(c, v, d) for c, v, d in zip(cfgs, views, datas))
    gap = paired_t_interval(a.final_losses, b.final_losses)
    seeds = tuple(c.seed for c in cfgs[0])
    return SeedComparison(a, b, seeds, gap, "runner", 0.0, "done")


def report_json(result: SeedComparison, sentence: str) -> str:
    """The comparison to download: the object `python -m ln_viz compare --json` prints (a, b, seeds, gap
    with its interval and method), plus the sentence the page shows (`takeaway`, in the page's language)."""
    out = result.to_dict()
    del out["elapsed_s"]  # the page's runs queued among others: no one time of the comparison
    return json.dumps(out | {"takeaway": sentence}, ensure_ascii=False, allow_nan=False, indent=1)


def seed_status_lines(views: Sequence[Sequence[RunView]], names: Sequence[str], lang: str, cap: int) -> list[str]:
    """One line per side, named as the charts name it (`names`: "Post-LN", "Pre-LN · QK-norm"): its run's status
    line with one seed ("**Post-LN:** Step 120/300 | ..."), else the count of its seeds ("**Post-LN:** 3 seeds,
    2 done, 1 running"). Not "Run A" / "Run B", which no chart or sentence says (UX round 4 L10)."""
    return [
        f"**{name}:** {status_line(side[0], lang, cap) if len(side) == 1 else count_line(side, lang)}"
        for name, side in zip(names, views)
    ]


def seed_verdict_lines(sentence: str, views: Sequence[Sequence[RunView]], names: Sequence[str], lang: str) -> list[str]:
    """The lecture view's status box once the seeds have ended: the sentence in bold, then both sides' counts,
    each named as the charts name it, on one line (the box has room for two)."""
    counts = " · ".join(f"{name}: {count_line(side, lang)}" for name, side in zip(names, views))
    return [f"**{sentence}**", counts]


# --- a watched run ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Watched:
    """The watched run as the page draws it now (duck-typed as a RunView for `verdict_lines`)."""

    store_id: int
    label: str | None
    config: RunConfig
    status: str
    data: RunData
    cache_key: str  # names this state of the run's data: its figures are shared by every watcher
    status_text: str
    message: str | None = None
    message_params: dict[str, Any] = field(default_factory=dict)
    view: Any = None  # the Runner's RunView (shared by the watchers), while this server has the run in memory

    @property
    def done(self) -> bool:
        return self.status not in LIVE_STATUSES


def sayable(message: str | None, lang: str) -> str | None:
    """A stored run's message key, if the catalog can say it without parameters (the row keeps none)."""
    if not message:
        return None
    try:
        t(message, lang)
    except (KeyError, IndexError):  # a key from another version, or one that needs its parameters
        return None
    return message


def preset_of(cfg: RunConfig) -> str | None:
    """The preset whose settings the run has exactly, as Live names it when the presenter picked it (and
    forgets it once a setting is changed): the lecture view then shows that preset's lesson chart to the
    watchers too (the attention logits at lr 1e-1), not the default heatmap."""
    return next((name for name, p in PRESETS.items() if p.config == cfg), None)


def heading(watched: Watched, lang: str) -> str:
    """`Watching run 12 (tiny pre): Pre-LN · 6 layers · Adam lr 3e-3 · no warm-up`, as plain text."""
    card = watched.data.info.model_card
    words = describe([watched.config], lang) if card is None else attached_words(card, lang)
    if watched.label:
        label = shown(watched.label, 60)  # a label is text from outside: one line, cut short
        return t("watch.heading_label", lang, id=watched.store_id, label=label, words=words)
    return t("watch.heading", lang, id=watched.store_id, words=words)
