"""The Compare page's seeds (issue 20): the `seeds` control and URL key, N runs per side in the runner's
queue (roles compare.a.0, compare.b.0, compare.a.1, ...), each side's runs read seed by seed, and once all
have ended the CLI's sentence with the gap's 95 % interval (ln_viz.sweep.compare) in its box. The words (each
side's count line, the median seed's label, the comparison) are ln_viz.run_frames'."""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence

import streamlit as st

from ln_viz.charts import median_seed
from ln_viz.config import RunConfig
from ln_viz.i18n import t
from ln_viz.runner import RunHandle, RunView
from ln_viz.snapshot import RunData
from ln_viz.ui import keys
from ln_viz.urlstate import COMPARE_SEEDS, seeds_from_query

SEEDS_KEY = keys.COMPARE_SEEDS
SIDE_ROLES = ("compare.a", "compare.b")
ALL_ROLES = tuple(f"{side}.{i}" for side in SIDE_ROLES for i in range(COMPARE_SEEDS[1]))  # what Stop stops


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
    st.session_state[SEEDS_KEY] = seed_count()  # kept when the lecture view's box (another widget) drew it last
    (container or st).number_input(
        t("compare.seeds", lang), lo, hi, step=1, key=SEEDS_KEY, help=t("compare.seeds_help", lang), width=110
    )


# The lecture view's box, in its top row at the back row's 24 px (the view is zoomed to the screen as a whole)
LECTURE_SEEDS_CSS = """.st-key-lecture_top .st-key-cseeds, .st-key-lecture_top .st-key-cseeds * {font-size: 24px;}"""


def lecture_seeds(lang: str, row) -> None:
    """The lecture view's seeds (issue 32, UX round 4 M8: a lecturer had to leave the view, type 3 and come
    back, 11 s): a compact box in the header's row whose choice reads "3 seeds per side", so the header says
    how many before Start too. The same key as the page view's box: the choice is kept when the view changes."""
    from ln_viz.ui import layout

    lo, hi = COMPARE_SEEDS
    st.session_state[SEEDS_KEY] = seed_count()  # kept when the page view's box (another widget) drew it last
    layout.css(LECTURE_SEEDS_CSS)
    row.selectbox(
        t("compare.seeds", lang),
        list(range(lo, hi + 1)),
        key=SEEDS_KEY,
        format_func=lambda n: t("compare.seeds_n", lang, n=n) if n > 1 else t("compare.seeds_one", lang),
        help=t("compare.seeds_help", lang),
        label_visibility="collapsed",
        width=230,
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


def shown_handles(runs, runner, side_cfgs: Sequence[Sequence[RunConfig]]) -> list[list[RunHandle]]:
    """Each side's runs of these settings, seed by seed, in this tab (`runs`, a training.SessionRuns) and the
    `runner`; [] unless every one of them is there (before Start, or after a setting changed)."""
    shown = [[runs.shown(r, c) for r, c in zip(rs, cs)] for rs, cs in zip(roles(len(side_cfgs[0])), side_cfgs)]
    handles = [[runner.get(i) for i in side] for side in shown] if all(all(side) for side in shown) else []
    return handles if all(h is not None for side in handles for h in side) else []


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


def side_runs(handles: Sequence[Sequence[RunHandle]]) -> tuple[list[list[RunView]], list[list[RunData]], list[int]]:
    """Each side's views and data seed by seed (every probe step: `live.complete_data`), and the index of
    its median seed (`charts.median_seed`)."""
    from ln_viz.ui.live import complete_data, preview_data

    views = [[h.view() for h in side] for side in handles]
    groups = [[complete_data(h, v) or preview_data(v.config) for h, v in zip(hs, vs)] for hs, vs in zip(handles, views)]
    return views, groups, [median_seed(g) for g in groups]


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
