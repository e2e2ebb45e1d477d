"""The run's settings as widgets: a preset picker, the main knobs, an Advanced expander.

Widget values live in st.session_state under `prefix + field` keys. Choosing a preset writes its values
into those keys (an on_change callback, before the widgets are drawn), so the widgets show them.
`read_config` turns the current values into a RunConfig; validation happens on Start.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from ln_viz.config import DEFAULT_PRESET, FIELDS, PRESETS, ConfigError, FieldSpec, RunConfig
from ln_viz.corpus import MAX_USER_FILE_BYTES, decode_text
from ln_viz.i18n import LocalizedError, t
from ln_viz.sweep.labels import lr_label
from ln_viz.ui import keys, language
from ln_viz.urlstate import QUERY_FIELDS, config_from_query, config_to_query
from ln_viz.words import unused_settings

# The learning-rate slider's stops: a log scale from 1e-5 to 1 (four per decade). A value from a preset
# or a link that is not a stop is added as one, never rounded to a neighbour.
LR_STOPS = [round(m * 10.0**e, 10) for e in range(-5, 0) for m in (1, 2, 3, 5)] + [1.0]
CUSTOM = "__custom__"
# The form's fields in the order they are drawn: the first ones in the sidebar, the rest under
# Advanced. What each widget is and what it accepts comes from config.FIELDS.
MAIN_FIELDS = ("norm_position", "depth", "lr", "warmup_steps")
ADVANCED_FIELDS = (
    "norm_type",
    "d_model",
    "heads",
    "batch_size",
    "seq_len",
    "steps",
    "seed",
    "optimizer",
    "adam_init",
    "qk_clip",
    "schedule",
    "probe_every",
    "corpus",
    "qk_norm",
    "weight_decay",
    "grad_clip",
    "z_loss",
    "dyt_alpha",
    "ln_scaling",
)
FORM_FIELDS = MAIN_FIELDS + ADVANCED_FIELDS


def form_keys(prefix: str = "") -> list[str]:
    """The session-state keys of one form's settings: its preset, every field, the user's text."""
    return [prefix + keys.PRESET, *(prefix + name for name in FORM_FIELDS), prefix + keys.USER_TEXT]


def widget_bounds(name: str) -> dict[str, int]:
    """A number widget's or slider's min_value, max_value and step: the field's range in config.FIELDS."""
    spec = FIELDS[name]
    return {"min_value": int(spec.lo), "max_value": int(spec.hi), "step": spec.step}


def _widget(c: Any, spec: FieldSpec, lang: str, prefix: str) -> None:
    """Draw one field's widget (its kind, label and bounds from `spec`) into `c`."""
    label, key = t(spec.label, lang), prefix + spec.name
    if spec.widget == "select":
        names = spec.choice_label
        c.selectbox(label, spec.choices, key=language.translated(key), format_func=lambda v: t(f"{names}.{v}", lang))
    elif spec.widget == "slider":
        c.slider(label, key=key, **widget_bounds(spec.name))
    elif spec.widget == "checkbox":
        c.checkbox(label, key=key)
    elif spec.widget == "float":  # a closed float range (weight_decay 0 = off)
        c.number_input(label, min_value=spec.lo, max_value=spec.hi, step=spec.float_step, format="%g", key=key)
    elif spec.widget == "select_slider":
        c.select_slider(label, lr_stops(st.session_state[key]), key=key, format_func=lr_label)  # 3e-2, as the map
    else:
        c.number_input(label, key=key, **widget_bounds(spec.name))


def lr_stops(current: float) -> list[float]:
    """The learning-rate slider's stops, with `current` among them."""
    return sorted({*LR_STOPS, float(current)})


def set_form(cfg: RunConfig, prefix: str = "") -> None:
    """Put a configuration's values into the widgets' session-state keys."""
    for name in FORM_FIELDS:
        value = getattr(cfg, name)
        st.session_state[prefix + name] = value


def _apply_preset(prefix: str) -> None:
    name = st.session_state[prefix + keys.PRESET]
    if name in PRESETS:
        set_form(PRESETS[name].config, prefix)


def choose_preset(name: str, prefix: str = "") -> None:
    """Pick a preset as its selectbox does (a callback: before the widgets are drawn)."""
    st.session_state[prefix + keys.PRESET] = name
    _apply_preset(prefix)


def mark_custom(prefix: str = "") -> None:
    """Once a setting no longer matches the chosen preset, the preset box says "your own settings"
    (and the link drops the preset). Called before the preset box is drawn."""
    name = st.session_state.get(prefix + keys.PRESET)
    if name not in PRESETS:
        return
    try:
        cfg = read_config(prefix)
    except LocalizedError:
        return
    if any(getattr(cfg, f) != getattr(PRESETS[name].config, f) for f in FORM_FIELDS):
        st.session_state[prefix + keys.PRESET] = CUSTOM


def ensure_defaults(prefix: str = "", cfg: RunConfig | None = None) -> None:
    """Fill missing widget keys (first visit, or after another page dropped them)."""
    base = cfg or PRESETS[DEFAULT_PRESET].config
    if prefix + keys.PRESET not in st.session_state:
        st.session_state[prefix + keys.PRESET] = DEFAULT_PRESET if cfg is None else CUSTOM
    for name in FORM_FIELDS:
        if prefix + name not in st.session_state:
            value = getattr(base, name)
            st.session_state[prefix + name] = value


def config_form(lang: str, prefix: str = "", container: Any = None, compact: bool = False) -> None:
    """Draw the settings widgets into `container` (the sidebar by default)."""
    c = container if container is not None else st.sidebar
    ensure_defaults(prefix)
    mark_custom(prefix)
    names = [*PRESETS, CUSTOM]
    c.selectbox(
        t("ui.preset", lang),
        names,
        key=language.translated(prefix + keys.PRESET),
        format_func=lambda n: t("ui.preset_custom", lang) if n == CUSTOM else t(f"lecture.preset.{n}", lang),
        on_change=_apply_preset,
        args=(prefix,),
    )
    chosen = st.session_state[prefix + keys.PRESET]
    c.caption(t(PRESETS[chosen].expect_key, lang) if chosen in PRESETS else t("lecture.custom_caption", lang))
    for name in MAIN_FIELDS:
        _widget(c, FIELDS[name], lang, prefix)
    with c.expander(t("ui.advanced", lang), expanded=False):
        for name in ADVANCED_FIELDS:
            _widget(st, FIELDS[name], lang, prefix)
        if not compact and st.session_state[prefix + keys.CORPUS] == "user":
            st.text_area(t("ui.user_text", lang), key=prefix + keys.USER_TEXT, height=120)
            st.file_uploader(
                t("ui.user_file", lang),
                type=["txt", "md"],
                key=prefix + keys.USER_FILE,
                max_upload_size=MAX_USER_FILE_BYTES // 2**20,
            )
    try:  # a setting that changes nothing here, said outside the folded expander (hostile round 4 L13)
        unused = unused_settings(read_config(prefix), lang)
    except LocalizedError:  # an upload that is not UTF-8: Start says so
        unused = []
    for note in unused:
        c.caption(note)


def read_config(prefix: str = "") -> RunConfig:
    """A RunConfig from the widgets' current values (not validated yet). An uploaded file wins over the
    text area; CorpusError if its bytes are not UTF-8."""
    ensure_defaults(prefix)
    values = {name: st.session_state[prefix + name] for name in FORM_FIELDS}
    for name in FORM_FIELDS:
        if FIELDS[name].kind is not str:
            values[name] = FIELDS[name].kind(values[name])
    if values["corpus"] == "user":
        upload = st.session_state.get(prefix + keys.USER_FILE)
        text = st.session_state.get(prefix + keys.USER_TEXT) or None
        values["user_text"] = decode_text(upload.getvalue()) if upload is not None else text
    return RunConfig(**values)


def apply_query(prefix: str, lang: str) -> list[str]:
    """Set the form from the URL's query parameters (a shared scenario). Each malformed parameter is
    ignored and its default kept; returns one sentence per ignored parameter, for the page to show."""
    params = st.query_params.to_dict()
    notices: list[str] = []
    name = params.get(prefix + "preset")
    if name is not None and name not in PRESETS:
        err = ConfigError("err.unknown_preset", "preset", value=name, choices=", ".join(PRESETS))
        notices.append(t("ui.url_ignored", lang, param=prefix + "preset", value=name, reason=err.message(lang)))
        name = None
    # the link's preset, else what the form holds now (the default, or the Compare scenario's side)
    base = PRESETS[name].config if name is not None else read_config(prefix).replace(user_text=None)
    has_fields = any(k.startswith(prefix) and k[len(prefix) :] in QUERY_FIELDS for k in params)
    if name is None and not has_fields:
        return notices
    cfg, bad = config_from_query(params, base, prefix)
    notices += [t("ui.url_ignored", lang, param=n.param, value=n.value, reason=n.reason.message(lang)) for n in bad]
    set_form(cfg, prefix)
    matching = [p for p, pr in PRESETS.items() if pr.config == cfg]
    st.session_state[prefix + keys.PRESET] = name if name in matching else (matching[0] if matching else CUSTOM)
    return notices


def write_query(prefix: str) -> None:
    """Keep the URL in step with the form, so the address bar is always a bookmark of this scenario."""
    try:
        cfg = read_config(prefix)
    except LocalizedError:  # an upload that is not UTF-8: Start will say so
        return
    query = config_to_query(cfg, prefix)
    chosen = st.session_state.get(prefix + keys.PRESET)
    if chosen in PRESETS:
        query[prefix + "preset"] = chosen
    elif prefix + "preset" in st.query_params:
        del st.query_params[prefix + "preset"]
    for key, value in query.items():
        if st.query_params.get(key) != value:
            st.query_params[key] = value
