"""The stability map's settings form: a sweep preset, the axes (norm positions, learning rates,
warm-ups, depths, steps, seeds and the variant axes) and the executor the operator offers. Returns what
the widgets say; the page validates it (ln_viz.sweep.spec) and the service trains it
(ln_viz.server.sweeps)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from ln_viz.config import ADAM_INITS, FIELDS, NORM_POSITIONS, NORM_TYPES, QK_NORMS
from ln_viz.i18n import t
from ln_viz.server.sweeps import error_text, ray_cluster
from ln_viz.sweep.presets import SWEEP_PRESETS
from ln_viz.sweep.spec import MAX_SEEDS, SweepConfig
from ln_viz.ui import keys, language

LR_CHOICES = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2)
WARMUP_CHOICES = (0, 10, 30, 50, 100, 200, 400)
DEPTH_CHOICES = (1, 2, 3, 4, 6, 8, 12, 16, 24)
NORM_CHOICES = NORM_POSITIONS
WEIGHT_DECAY_CHOICES = (0.0, 0.01, 0.1)


def settings_form(lang: str) -> tuple[SweepConfig, str, str | None]:
    """The settings expander's content: a preset, the axes, the executor; returns (the spec the widgets
    say, not validated yet; the executor; the Ray address or None)."""
    preset = st.radio(
        t("sweep.ui.preset", lang),
        ["-", *SWEEP_PRESETS],
        horizontal=True,
        key=language.translated(keys.SM_PRESET),
        format_func=lambda p: t("sweep.ui.custom" if p == "-" else f"sweep.preset.{p}", lang),
    )
    if preset != "-" and st.session_state.get(keys.SM_PRESET_APPLIED) != preset:
        st.session_state[keys.SM_PRESET_APPLIED] = preset
        st.session_state[keys.SM_SPEC] = SWEEP_PRESETS[preset]
        for k in keys.SM_AXES:
            st.session_state.pop(k, None)
        st.rerun()
    candidate = spec_form(st.session_state[keys.SM_SPEC], lang, st)
    executor = "local"
    address, problem = ray_cluster()  # the operator's setting, never a visitor's (issue 21, S1)
    if address is not None:
        e1, e2 = st.columns(2)
        executor = e1.radio(t("sweep.ui.executor", lang), ["local", "ray"], horizontal=True, key="sm_executor")
        e2.caption(t("sweep.ui.cluster_private" if address == "local" else "sweep.ui.cluster", lang, address=address))
    else:
        st.caption(t("sweep.ui.cluster_none", lang))
    if problem is not None:
        st.warning(error_text(problem, lang))
    return candidate, executor, address


def spec_form(spec: SweepConfig, lang: str, container: Any) -> SweepConfig:
    """The axes as widgets, starting from `spec`; returns what they say (validated by the caller)."""
    import dataclasses

    c1, c2, c3, c4 = container.columns(4)
    st.session_state.setdefault(keys.SM_NORM, list(spec.norm_position))  # no default= beside a key set in code
    norm = c1.multiselect(
        t("sweep.ui.norm", lang),
        NORM_CHOICES,
        format_func=lambda v: t(f"chart.norm.{v}", lang),
        key=language.translated(keys.SM_NORM),
    )
    lrs = _axis_select(c2, t("sweep.ui.lr", lang), LR_CHOICES, spec.lr, keys.SM_LR, format_func=lambda v: f"{v:.0e}")
    warm = _axis_select(c3, t("sweep.ui.warmup", lang), WARMUP_CHOICES, spec.warmup_steps, keys.SM_WARMUP)
    depth = _axis_select(c4, t("sweep.ui.depth", lang), DEPTH_CHOICES, spec.depth, keys.SM_DEPTH)
    d1, d2 = container.columns(2)
    # the bounds validate() applies (a bookmark may hold any value it accepts)
    steps_field = FIELDS["steps"]
    steps = d1.number_input(
        t("sweep.ui.steps", lang), steps_field.lo, steps_field.hi, spec.steps, step=10, key=keys.SM_STEPS
    )
    seeds = d2.slider(t("sweep.ui.seeds", lang), 1, MAX_SEEDS, spec.seeds, key=keys.SM_SEEDS)
    return dataclasses.replace(
        spec,
        **_variant_form(spec, lang, container),
        norm_position=tuple(n for n in NORM_CHOICES if n in norm),
        lr=tuple(sorted(lrs)),
        warmup_steps=tuple(sorted(warm)),
        depth=tuple(sorted(depth)),
        seeds=seeds,
        steps=steps,
    )


def _variant_form(spec: SweepConfig, lang: str, container: Any) -> dict[str, tuple]:
    """The variant axes (QK-norm, norm type, weight decay, Adam's start); none chosen, or the base's one, is the
    base's."""
    v1, v2, v3, v4 = container.columns(4)
    chosen = {}
    for column, name, key, choices, prefix in (
        (v1, "qk_norm", keys.SM_QK, QK_NORMS, "qknorm"),
        (v2, "norm_type", keys.SM_NORMTYPE, NORM_TYPES, "sweep.chart.normtype"),
        (v4, "adam_init", keys.SM_ADAMINIT, ADAM_INITS, "sweep.chart.adaminit"),
    ):  # translated labels: the value set here, not by default= (as the norm positions')
        st.session_state.setdefault(key, list(spec.values(name)))
        label = t(f"sweep.ui.{name}", lang)
        picked = column.multiselect(label, choices, format_func=_label(prefix, lang), key=language.translated(key))
        chosen[name] = tuple(v for v in choices if v in picked)
    wd = _axis_select(
        v3, t("sweep.ui.weight_decay", lang), WEIGHT_DECAY_CHOICES, spec.values("weight_decay"), keys.SM_WD
    )
    return chosen | {"weight_decay": tuple(sorted(wd))}


def _label(prefix: str, lang: str) -> Any:
    return lambda v: t(f"{prefix}.{v}", lang)


def _axis_select(column: Any, label: str, choices: tuple, values: tuple, key: str, **kwargs: Any) -> list:
    """One axis's values, offered from `choices` and the spec's own (a bookmark may hold others)."""
    return column.multiselect(label, sorted(set(choices) | set(values)), default=list(values), key=key, **kwargs)
