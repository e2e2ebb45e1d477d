"""The Compare page's seeds (issue 20): the `seeds` control and URL key, N runs per side in the runner's
queue (roles compare.a.0, compare.b.0, compare.a.1, ...), each side's count line, the median seed's
label, and once all have ended the CLI's sentence with the gap's 95 % interval (ln_viz.sweep.compare)."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Sequence

import streamlit as st

from ln_viz.charts import median_seed
from ln_viz.config import RunConfig
from ln_viz.i18n import t
from ln_viz.runner import RunHandle, RunView
from ln_viz.snapshot import RunData
from ln_viz.stats import paired_t_interval
from ln_viz.sweep.compare import SeedComparison, Side
from ln_viz.urlstate import COMPARE_SEEDS, seeds_from_query

SEEDS_KEY = "cseeds"
SIDE_ROLES = ("compare.a", "compare.b")
ALL_ROLES = tuple(f"{side}.{i}" for side in SIDE_ROLES for i in range(COMPARE_SEEDS[1]))  # what Stop stops
_ENDS_SAID = ("stalled", "diverged", "failed", "stopped")  # counted at the end: "2 of 3 stalled"


def apply_query(lang: str) -> list[str]:
    """The link's `seeds` into the control (once per session, with the forms); its notice, if any."""
    n, notice = seeds_from_query(st.query_params.get("seeds"))
    st.session_state[SEEDS_KEY] = n
    return [notice.message(lang)] if notice else []


def seed_count() -> int:
    """Seeds per side, as the control (or the link) says; 1 before either has."""
    return int(st.session_state.setdefault(SEEDS_KEY, 1))


def seeds_input(lang: str, container=None) -> None:
    """The compact `seeds` box (1-8) beside the scenario box."""
    lo, hi = COMPARE_SEEDS
    (container or st).number_input(
        t("compare.seeds", lang), lo, hi, step=1, key=SEEDS_KEY, help=t("compare.seeds_help", lang), width=110
    )


def write_query() -> None:
    """The seeds into the URL, as the forms' fields are."""
    value = str(seed_count())
    if st.query_params.get("seeds") != value:
        st.query_params["seeds"] = value


def roles(n: int) -> list[list[str]]:
    """Each side's roles, seed by seed: [[compare.a.0, ...], [compare.b.0, ...]]."""
    return [[f"{side}.{i}" for i in range(n)] for side in SIDE_ROLES]


def seed_configs(cfg: RunConfig, n: int) -> list[RunConfig]:
    """The side's runs: its form's config at seeds s, s+1, ..., s+n-1 (s: the form's seed)."""
    return [cfg.replace(seed=cfg.seed + i) for i in range(n)]


def group_name(side: str, n: int) -> str | None:
    """The seed group a side's runs are stored under ("A-064112-3f2a": the side, the time of Start and 4
    random hex digits, unique across the class's sessions); one seed is no group."""
    return f"{side}-{time.strftime('%H%M%S')}-{secrets.token_hex(2)}" if n > 1 else None


def start(runs, configs: Sequence[RunConfig], n: int) -> None:
    """Check every run of both sides, then queue them in pairs (A0, B0, A1, B1, ...: a pair ends together)
    and stop the runs of seeds beyond `n` left from an earlier Start."""
    sides = [seed_configs(cfg, n) for cfg in configs]
    for cfg in (c for side in sides for c in side):
        cfg.validate()
    groups = [group_name(side, n) for side in "AB"]
    for i in range(n):
        for side_roles, side, group in zip(roles(n), sides, groups):
            runs.start(side_roles[i], side[i], group=group)
    for role in ALL_ROLES:
        if int(role.rsplit(".", 1)[1]) >= n:
            runs.stop(role)


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


def side_runs(handles: Sequence[Sequence[RunHandle]]) -> tuple[list[list[RunView]], list[list[RunData]], list[int]]:
    """Each side's views and data seed by seed (every probe step: `live.complete_data`), and the index of
    its median seed (`charts.median_seed`)."""
    from ln_viz.ui.live import complete_data, preview_data

    views = [[h.view() for h in side] for side in handles]
    groups = [[complete_data(h, v) or preview_data(v.config) for h, v in zip(hs, vs)] for hs, vs in zip(handles, views)]
    return views, groups, [median_seed(g) for g in groups]


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


_SIDE_NAMES = ("compare.run_a", "compare.run_b")


def status_lines(views: Sequence[Sequence[RunView]], lang: str, cap: int) -> list[str]:
    """One line per side: its run's status line with one seed ("**Run A:** Step 120/300 | ..."), else the
    count of its seeds ("**Run A:** 3 seeds, 2 done, 1 running")."""
    from ln_viz.ui.live import status_line

    return [
        f"**{t(key, lang)}:** {status_line(side[0], lang, cap) if len(side) == 1 else count_line(side, lang)}"
        for key, side in zip(_SIDE_NAMES, views)
    ]


def verdict_lines(sentence: str, views: Sequence[Sequence[RunView]], lang: str) -> list[str]:
    """The lecture view's status box once the seeds have ended: the sentence in bold, then both sides' counts
    on one line (the box has room for two)."""
    counts = " · ".join(f"{t(key, lang)}: {count_line(side, lang)}" for key, side in zip(_SIDE_NAMES, views))
    return [f"**{sentence}**", counts]


def show_sentence(sentence: str, report: str | None = None, lang: str = "en") -> None:
    """The sentence under the loss chart, in bold, in a box of its own (the browser tests find it by its key),
    and beside it the comparison's download (`report_json`)."""
    with st.container(key="seed_takeaway", horizontal=True, vertical_alignment="center"):
        st.markdown(f"**{sentence}**")
        if report is not None:
            label = t("compare.download", lang)
            st.download_button(
                label, report, "comparison.json", "application/json", key="seed_report", on_click="ignore"
            )
