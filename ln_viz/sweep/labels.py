"""The stability map's short labels: an lr as 3e-4, a curve's or a panel's variant (QK-norm, norm type,
weight decay) as ", QK-norm LayerNorm", a cell's title, the lecture view's header and takeaway, in the
user's language. Used by the charts and the page."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ln_viz.i18n import t
from ln_viz.sweep.presets import DEFAULT_SWEEP, SWEEP_PRESETS
from ln_viz.sweep.results import CellResult
from ln_viz.sweep.spec import VARIANT_AXES, SweepConfig


def lr_label(lr: float) -> str:
    """3e-4, 1e-3, 0.01 -> '3e-4', '1e-3', '1e-2'."""
    mantissa, exp = f"{lr:.0e}".split("e")
    return f"{mantissa}e{int(exp)}" if math.isclose(float(mantissa) * 10 ** int(exp), lr) else f"{lr:.2g}"


def variant_text(variant: tuple, names: Sequence[str], lang: str) -> str:
    """ ", QK-norm LayerNorm": the variant axes in `names` (the ones a chart varies), in `lang`."""
    values = dict(zip(VARIANT_AXES, variant))
    return "".join(t(f"sweep.chart.variant.{n}", lang, value=_variant_value(n, values[n], lang)) for n in names)


def _variant_value(name: str, value: Any, lang: str) -> str:
    if name == "weight_decay":
        return f"{value:g}"
    prefix = {"qk_norm": "qknorm", "adam_init": "sweep.chart.adaminit"}.get(name, "sweep.chart.normtype")
    return t(f"{prefix}.{value}", lang)


# One x title under each panel of the map: short enough that two side by side do not run into each other
# (the log scale shows in the ticks 3e-4, 1e-3, ...).
PANEL_X_TITLE = {"lr": "sweep.axis.lr_panel", "depth": "sweep.axis.depth"}


def lecture_title(spec: SweepConfig, lang: str) -> str:
    """The lecture view's header: the norm positions, depth and steps the map is of."""
    from ln_viz.charts import norm_label

    norms = " / ".join(norm_label(n, lang) for n in spec.norm_position)
    return t("sweep.lecture.title", lang, norms=norms, depth=", ".join(map(str, spec.depth)), steps=spec.steps)


# The sentence of each shipped map, read off it (ln_viz.sweep.presets.SHIPPED_MAPS)
TAKEAWAYS = {DEFAULT_SWEEP: "sweep.lecture.takeaway", "gi-adam-map": "sweep.lecture.gi-adam-map"}


def lecture_takeaway(spec: SweepConfig) -> str | None:
    """The takeaway's catalog key: a shipped map's sentence (read off that map), else None (a map nobody
    has read yet has no sentence)."""
    return next((key for name, key in TAKEAWAYS.items() if spec == SWEEP_PRESETS[name]), None)


def cell_title(r: CellResult, lang: str) -> str:
    """Post-LN, lr 3e-3, warm-up 0, depth 6: learned, final loss 2.16."""
    from ln_viz.charts import norm_label

    loss = f"{r.final_loss:.2f}" if r.final_loss is not None else "-"
    status = t(f"sweep.status.{r.status}", lang)
    norm = norm_label(r.norm_position, lang)
    # a diverged run's "final loss" is the mean of its last finite steps (1181043.93, say): not a result
    key = "sweep.ui.cell_title_diverged" if r.status == "diverged" else "sweep.ui.cell_title"
    words = {"norm": norm, "lr": lr_label(r.lr), "warmup": r.warmup_steps, "depth": r.depth}
    return t(key, lang, **words, status=status, loss=loss, step=r.diverged_step if r.diverged_step else "-")
