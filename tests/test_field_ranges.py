"""One range per RunConfig field: the sidebar form's widgets, the Init lab's widgets, the CLI's flags and
the URL's parameters accept and refuse exactly what `RunConfig.validate` does, for every field, at,
inside and outside its bounds, and for values of the wrong kind."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from ln_viz.cli import build_parser
from ln_viz.cli.parser import UsageError
from ln_viz.cli.train import config_from_args
from ln_viz.config import FIELDS, MAX_STEPS, ConfigError, RunConfig
from ln_viz.i18n import t
from ln_viz.ui.config_form import FORM_FIELDS, lr_stops
from ln_viz.urlstate import QUERY_FIELDS, config_from_query

ROOT = Path(__file__).resolve().parent.parent
# Small sizes, so that every field's extremes fit in memory, and every warm-up fits in the run.
SMALL = RunConfig(depth=1, d_model=64, heads=1, batch_size=1, seq_len=2, steps=MAX_STEPS, probe_every=0)
INT_FIELDS = [s.name for s in FIELDS.values() if s.kind is int]
CHOICE_FIELDS = [s.name for s in FIELDS.values() if s.choices]


def base_for(name: str, value: Any) -> RunConfig:
    """SMALL, with heads' companion d_model made divisible, so only the field itself can be wrong."""
    if name == "heads" and isinstance(value, int) and 1 <= value <= 512:  # d_model 2048 at most
        return SMALL.replace(d_model=4 * value)
    return SMALL


def validate_accepts(name: str, value: Any) -> bool:
    try:
        base_for(name, value).replace(**{name: value}).validate()
    except ConfigError:
        return False
    return True


def int_cases(name: str) -> list[Any]:
    lo, hi = int(FIELDS[name].lo), int(FIELDS[name].hi)
    return [lo - 1, lo, lo + 1, (lo + hi) // 2, hi - 1, hi, hi + 1, -(10**12), 10**12, 2.5, "abc", True]


FLOAT_CASES = [0.0, -1e-3, 1e-12, 3e-3, 10.0, 10.000001, 11.0, math.nan, math.inf, -math.inf, "fast"]


def cases(name: str) -> list[Any]:
    spec = FIELDS[name]
    if spec.choices:
        return [*spec.choices, "bogus", ""]
    if spec.kind is bool:
        return [True, False, "bogus", "", 2]
    return int_cases(name) if spec.kind is int else FLOAT_CASES


ALL_CASES = [(n, v) for n in FIELDS if n != "user_text" for v in cases(n)]  # user_text: tests/test_corpus.py


def test_every_runconfig_field_has_one_declaration():
    assert list(FIELDS) == [f.name for f in dataclasses.fields(RunConfig)]
    for spec in FIELDS.values():
        assert (spec.lo is None) == (spec.hi is None) == (spec.kind in (str, bool)), spec
        assert spec.widget is None or spec.label, spec
    assert set(FORM_FIELDS) == {s.name for s in FIELDS.values() if s.widget}


@pytest.mark.parametrize("name,value", ALL_CASES, ids=[f"{n}={v!r}" for n, v in ALL_CASES])
def test_the_cli_accepts_what_validate_accepts(name, value):
    spec = FIELDS[name]
    if spec.cli is None:
        return
    argv = ["train", spec.cli, str(value)]
    flags = {"depth": "--depth", "d_model": "--d-model", "heads": "--heads", "batch_size": "--batch-size"}
    base = base_for(name, value)
    for field, flag in flags.items():  # the base's sizes, as flags: the CLI starts from RunConfig()
        if field != name:
            argv += [flag, str(getattr(base, field))]
    argv += ["--seq-len", str(base.seq_len)] if name != "seq_len" else []
    argv += ["--steps", str(base.steps)] if name != "steps" else []
    try:
        config_from_args(build_parser().parse_args(argv))
        accepted = True
    except (UsageError, ConfigError):
        accepted = False
    assert accepted == validate_accepts(name, value)


@pytest.mark.parametrize("name,value", ALL_CASES, ids=[f"{n}={v!r}" for n, v in ALL_CASES])
def test_the_url_accepts_what_validate_accepts(name, value):
    key = next((k for k, n in QUERY_FIELDS.items() if n == name), None)
    if key is None:
        assert FIELDS[name].url is None
        return
    base = base_for(name, value)
    cfg, notices = config_from_query({key: str(value)}, base)
    if validate_accepts(name, value):
        assert notices == [] and getattr(cfg, name) == value
    else:
        assert len(notices) == 1 and cfg == base  # the notice names the parameter, or the field at fault


def draw_form() -> None:
    from ln_viz.ui.config_form import config_form

    config_form("en")


@pytest.fixture(scope="module")
def form() -> AppTest:
    at = AppTest.from_function(draw_form, default_timeout=30)
    at.run()
    assert not at.exception, at.exception
    return at


def widget(at: AppTest, key: str) -> Any:
    for kind in (at.number_input, at.slider, at.selectbox, at.select_slider):
        found = [w for w in kind if w.key == key]
        if found:
            return found[0]
    raise AssertionError(f"no widget {key}")


@pytest.mark.parametrize("name", [n for n in FORM_FIELDS if n in INT_FIELDS])
def test_the_forms_number_widgets_hold_what_validate_accepts(form, name):
    w = widget(form, name)
    for value in int_cases(name):
        if isinstance(value, int) and not isinstance(value, bool):  # a number widget holds only numbers
            assert (w.min <= value <= w.max) == validate_accepts(name, value), (name, value, w.min, w.max)


@pytest.mark.parametrize("name", [n for n in FORM_FIELDS if n in CHOICE_FIELDS])
def test_the_forms_choices_are_the_fields_choices(form, name):
    spec = FIELDS[name]
    assert widget(form, name).options == [t(f"{spec.choice_label}.{c}", "en") for c in spec.choices]
    for choice in spec.choices:  # "user" comes with the text area's text
        SMALL.replace(**{name: choice}, user_text="a text " * 200).validate()


@pytest.mark.parametrize("name", [n for n in FORM_FIELDS if FIELDS[n].widget == "float"])
def test_the_forms_float_widgets_hold_what_validate_accepts(form, name):
    w = widget(form, name)
    for value in FLOAT_CASES:
        if isinstance(value, float) and math.isfinite(value):
            assert (w.min <= value <= w.max) == validate_accepts(name, value), (name, value, w.min, w.max)


def test_the_forms_checkboxes_are_the_bool_fields(form):
    boxes = {w.key for w in form.checkbox}
    assert {n for n in FORM_FIELDS if FIELDS[n].kind is bool} == boxes & set(FORM_FIELDS)


def test_every_learning_rate_the_form_offers_is_valid(form):
    stops = lr_stops(SMALL.lr)
    assert len(widget(form, "lr").options) == len(stops)
    assert all(validate_accepts("lr", v) for v in stops)


def test_the_init_labs_size_widgets_hold_what_validate_accepts():
    at = AppTest.from_file(str(ROOT / "pages" / "init_lab.py"), default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    keys = {"depth": "init_depth", "d_model": "init_d_model", "heads": "init_heads", "batch_size": "init_batch"}
    keys["seq_len"] = "init_seq"
    for name, key in keys.items():
        w = widget(at, key)
        for value in int_cases(name):
            if isinstance(value, int) and not isinstance(value, bool):
                assert (w.min <= value <= w.max) == validate_accepts(name, value), (name, value)
