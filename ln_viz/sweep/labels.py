"""The stability map's short labels: an lr as 3e-4, a curve's or a panel's variant (QK-norm, norm type,
weight decay) as ", QK-norm LayerNorm", in the user's language. Used by the charts and the page."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ln_viz.i18n import t
from ln_viz.sweep.spec import VARIANT_AXES


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
    return t(f"qknorm.{value}" if name == "qk_norm" else f"sweep.chart.normtype.{value}", lang)


# One x title under each panel of the map: short enough that two side by side do not run into each other
# (the log scale shows in the ticks 3e-4, 1e-3, ...).
PANEL_X_TITLE = {"lr": "sweep.axis.lr_panel", "depth": "sweep.axis.depth"}
