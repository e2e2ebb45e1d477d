"""The Runs page's table of stored runs, as data: one row per run (labels and statuses translated, a seed
group with its size, a damaged row said so), a run's final loss as shown, a seed group's runs together.
ln_viz.ui.runs_view draws it."""

from __future__ import annotations

from datetime import datetime

import pandas as pd

from ln_viz.config import NORM_POSITIONS
from ln_viz.i18n import t
from ln_viz.store import RunSummary
from ln_viz.store.rows import ATTACHED_PLACEMENTS
from ln_viz.sweep.labels import lr_label
from ln_viz.text import one_line


def final_loss_text(summary: RunSummary, lang: str) -> str:
    """The final loss as shown: 3 decimals; "diverged" for a run that diverged (its last finite losses,
    in the millions, would read as a result)."""
    if summary.status == "diverged":
        return t("status.diverged", lang)
    return f"{summary.final_loss:.3f}" if summary.final_loss is not None else "-"


def placement_options(runs: list[RunSummary]) -> tuple[str, ...]:
    """The placements the Runs page's filter offers: ln-viz's own, then those of the stored runs of users'
    own models that ln-viz cannot train (an OLMo 2 is "reordered", a GPT-NeoX "parallel"), so every run
    listed can be filtered to."""
    stored = {r.norm_position for r in runs if r.damage() is None}
    return NORM_POSITIONS + tuple(p for p in ATTACHED_PLACEMENTS if p in stored and p not in NORM_POSITIONS)


def group_together(runs: list[RunSummary]) -> list[RunSummary]:
    """The runs in the given order, except that a seed group's runs follow its first one (in their own
    order): the sort decides where a group sits, and its seeds are read side by side."""
    first: dict[tuple, list[RunSummary]] = {}
    for r in runs:  # an ungrouped run is a group of its own
        first.setdefault(("group", r.seed_group) if r.seed_group else ("run", r.id), []).append(r)
    return [r for members in first.values() for r in members]


def group_cell(group: str | None, sizes: dict[str, int], lang: str) -> str:
    """A seed group as the table shows it: its name, cut short, and its size in the store."""
    if not group:
        return ""
    return t("runs.group_cell", lang, name=one_line(group)[:20], count=sizes.get(group, 1))


def runs_frame(runs: list[RunSummary], lang: str, group_sizes: dict[str, int] | None = None) -> pd.DataFrame:
    """The table the page shows: one row per run, in the given order, labels and statuses translated, a
    seed group with its size (`group_sizes`, the store's). A damaged row (`RunSummary.damage`) keeps its
    id and says "damaged"; its other cells stay empty."""
    sizes = group_sizes or {}
    rows = [_frame_row(r, lang, sizes) if r.damage() is None else _damaged_row(r, lang) for r in runs]
    return pd.DataFrame(rows, columns=_FRAME_COLUMNS)


_FRAME_COLUMNS = (
    "id", "label", "group", "norm", "depth", "lr", "warmup", "status", "steps", "final_loss", "created", "source"
)  # fmt: skip


def _frame_row(r: RunSummary, lang: str, sizes: dict[str, int]) -> dict:
    attached = r.source == "attach"  # recorded by ln_viz.attach from the user's own model
    return {
        "id": r.id,
        "label": one_line(r.label or ""),  # a bidi override or newline as a visible escape, as in the heading
        "group": group_cell(r.seed_group, sizes, lang),
        "norm": t(f"chart.norm.{r.norm_position}", lang),
        "depth": r.depth,
        "lr": lr_label(r.lr),  # the run's two settings that decide a Post-LN's fate (issue 21 N20)
        "warmup": t("runs.warmup_unknown", lang) if attached else str(r.warmup_steps),  # the user's loop's: not known
        "status": t(f"status.{r.status}", lang),
        "steps": f"{r.steps_done}/{r.steps}" if r.steps or not attached else str(r.steps_done),  # known at its end
        "final_loss": final_loss_text(r, lang),
        "created": datetime.fromtimestamp(r.created),
        "source": t(f"runs.source.{r.source}", lang),
    }


def _damaged_row(r: RunSummary, lang: str) -> dict:
    blank = dict.fromkeys(_FRAME_COLUMNS, "")
    status = t("runs.damaged", lang)
    return {**blank, "id": r.id, "depth": None, "final_loss": None, "created": pd.NaT, "status": status}
