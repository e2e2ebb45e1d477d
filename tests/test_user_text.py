"""Text from users is text: every echoed value is cut to a short prefix with its length and kept on one
line (ln_viz/text.py, applied by ln_viz.i18n.t), and every user string the app shows is Markdown that
renders as exactly that string (ln_viz/ui/safe.py): on the Runs page, in a link's notices, in errors.
The rendering in a real browser is checked by tests/e2e/test_user_text_e2e.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import streamlit as st
from hypothesis import given
from hypothesis import strategies as hs
from streamlit.testing.v1 import AppTest

from ln_viz.config import FIELDS, ConfigError, RunConfig
from ln_viz.corpus import CorpusError, decode_text, load_corpus
from ln_viz.i18n import t
from ln_viz.runfile import read_run_file
from ln_viz.store import Store
from ln_viz.store.transfer import DEMO_DIR, add_loaded_run
from ln_viz.text import error_line, one_line, quoted, shown
from ln_viz.ui.safe import WORD_JOINER, md

APP = "../app.py"
HOSTILE_LABEL = "![i](http://host/p.png) **bold** [link](http://host) <b>x</b>\n# out :red[r] $x$ :smile: a->b"
MEGA = "a" * 1_000_000


# --- echoed values: short, one line -------------------------------------------------------------------
def test_an_echoed_value_is_cut_to_a_prefix_with_its_length():
    with pytest.raises(ConfigError) as e:
        FIELDS["depth"].parse(MEGA)
    assert len(str(e.value)) < 200 and "'aaaa" in str(e.value) and "…' (1,000,000 characters)" in str(e.value)
    assert "(총 1,000,000자)" in e.value.message("ko") and len(e.value.message("ko")) < 200
    long_path = "/tmp/" + "d" * 5000
    assert len(t("err.file_missing", path=long_path)) < 300


def test_an_echoed_value_shows_control_characters_as_escapes():
    sentence = t("err.choice", field="norm_position", choices="pre, post", value="pre\x1b[2J\nfake row\t\u202e")
    assert sentence.count("\n") == 0 and "\x1b" not in sentence and "\u202e" not in sentence
    assert r"\x1b[2J\nfake row\t\u202e" in sentence
    assert t("err.file_missing", path="a\nb") == r"file a\nb does not exist."


def test_short_values_are_echoed_as_before():
    assert t("err.choice", field="f", choices="a, b", value="c") == "f must be one of a, b, got 'c'."
    assert shown("t.txt") == "t.txt" and quoted(12) == "12" and quoted(0.5) == "0.5"


def test_an_exception_is_one_line_named_by_its_type():
    e = ValueError("  bad value\n  File x.py, line 3\nKeyError: 'cause'\n")
    assert error_line(e) == "ValueError: bad value"
    assert error_line(e, named=False) == "bad value"
    assert error_line(e, last=True) == "ValueError: KeyError: 'cause'"  # a remote traceback ends in its cause
    assert error_line(RuntimeError()) == error_line(RuntimeError(" \n"), named=False) == "RuntimeError"


def test_a_huge_integer_is_echoed_without_raising():
    assert quoted(10**10_000) == "<an integer of about 10,001 digits>"  # repr() itself would raise
    assert one_line("tab\there") == r"tab\there"


# --- Markdown that renders as the text ----------------------------------------------------------------
def unescape(source: str) -> str:
    """What CommonMark shows for `md`'s output: a backslash before ASCII punctuation is dropped (and the
    invisible word joiners are not seen)."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", source).replace(WORD_JOINER, "")


def expected(text: str) -> str:
    """What a reader should see: the text on one line; leading spaces are shown as no-break spaces, which a
    browser draws the same, because four spaces would start a code block."""
    line = one_line(text)
    shown = "\u00a0" * (len(line) - len(line.lstrip(" "))) + line.lstrip(" ")
    return shown.replace(WORD_JOINER, "")  # invisible: a joiner in the text itself is not seen either


OPENERS = re.compile(  # what could start Markdown or a Streamlit extension if it were not escaped
    r"(?<!\\)(?:\\\\)*([`*~\[\]<$@]|:(?=\S)|&(?=[#A-Za-z])|(?<![^\W_])_|_(?![^\W_]))"
)


@pytest.mark.parametrize(
    "text",
    [HOSTILE_LABEL, "# heading", "1. item", "- item", "> quote", "    code", "---", "www.host.com", "a@b.co",
     "&lt;script&gt;", ":material/home:", "`code`", "~~gone~~", "\\*not bold\\*", "_em_ snake_case"],
)  # fmt: skip
def test_markdown_escape_leaves_no_syntax_and_shows_the_text(text):
    source = md(text)
    assert unescape(source) == expected(text)
    assert not OPENERS.search(source), source
    assert "\n" not in source and not source.startswith(("#", ">", "-", "+", " "))
    assert not re.match(r"\d+[.)]", source)
    parsed = re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", source)  # the text Streamlit's own plugins then see
    assert not re.search(r"->|<-|--|>=|<=|~=|:[a-z]", parsed), parsed  # arrows, dashes, emoji shortcodes


@given(hs.text(max_size=60))
def test_markdown_escape_round_trips_any_text(text):
    source = md(text)
    assert unescape(source) == expected(text)
    assert not OPENERS.search(source)


def test_text_that_needs_no_escape_is_unchanged():
    for text in ("Run 3: tiny pre", "needs user_text", "Ignored 'depth=abc' from the link.", "#3 tiny", "실행 3"):
        assert md(text) == text


# --- the app ------------------------------------------------------------------------------------------
@pytest.fixture
def hostile_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[int]]:
    """A store with two demo runs, each labelled with Markdown and a newline."""
    path = tmp_path / "runs.sqlite"
    monkeypatch.setenv("LN_VIZ_STORE", str(path))
    monkeypatch.delenv("LN_VIZ_LOAD_DEMOS", raising=False)
    ids = []
    with Store(path) as store:
        for demo in sorted(DEMO_DIR.glob("*.json.gz"))[:2]:
            run_id, _ = add_loaded_run(store, read_run_file(demo))
            store.label(run_id, HOSTILE_LABEL)
            ids.append(run_id)
    yield path, ids
    st.cache_resource.clear()


def test_a_label_is_shown_as_text_on_the_runs_page(hostile_store):
    _, ids = hostile_store
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page("pages/runs.py").run()
    table = next(d for d in at.dataframe if d.key and d.key.startswith("runs_table_"))
    at.session_state[table.key] = {"selection": {"rows": [0, 1], "columns": [], "cells": []}}
    at.run()
    assert not at.exception, at.exception
    heading = at.subheader[0].value
    assert heading == md(f"Run {ids[-1]}: {HOSTILE_LABEL}") and not OPENERS.search(heading)
    assert all(not OPENERS.search(o) for o in at.radio(key="runs_shown").options)
    at.button(key="runs_delete").click().run()
    assert not OPENERS.search(at.warning[0].value) and r"\\n# out" in at.warning[0].value  # the newline shown, not kept


def test_every_bad_part_of_a_link_gets_its_own_notice(tmp_path, monkeypatch):
    monkeypatch.setenv("LN_VIZ_STORE", str(tmp_path / "runs.sqlite"))
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update({"lang": "xx", "present": "2", "detph": "3", "d": "65", "warmup": "5000"})
    at.run()
    try:
        assert not at.exception
        notices = [w.value for w in at.warning]
        for param in ("lang=xx", "present=2", "detph=3", "d=65", "warmup=5000"):
            assert sum(f"'{param}'" in n for n in notices) == 1, notices
        assert any("no such link parameter" in n for n in notices)
        at.run()  # a rerun keeps them, once each
        assert len(at.warning) == len(notices)
    finally:
        st.cache_resource.clear()


def test_a_link_value_in_a_notice_is_cut_and_escaped(tmp_path, monkeypatch):
    monkeypatch.setenv("LN_VIZ_STORE", str(tmp_path / "runs.sqlite"))
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update({"depth": "![i](http://host/p.png)" + "x" * 10_000})
    at.run()
    try:
        (notice,) = [w.value for w in at.warning]
        assert len(notice) < 400 and "(10,023 characters)" in notice and not OPENERS.search(notice)
    finally:
        st.cache_resource.clear()


def test_an_empty_uploaded_text_is_said_to_be_empty():
    # the form's upload path: an uploaded file's bytes, decoded, are the run's text (config_form.read_config)
    cfg = RunConfig(corpus="user", user_text=decode_text(b"")).validate()  # given, though empty
    with pytest.raises(CorpusError, match="the text is empty"):
        load_corpus(cfg.corpus, cfg.user_text, cfg.seq_len)
