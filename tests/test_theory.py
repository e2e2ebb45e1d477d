"""The Theory page: its text exists in both languages, and the page draws every section, in English and Korean."""

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ln_viz.i18n import EN, KO, placeholders, t
from ln_viz.theory import INTRO_KEY, PAGE_TITLE_KEY, REFERENCES, SECTIONS, all_keys, references_markdown

PAGE = Path(__file__).resolve().parent.parent / "pages" / "theory.py"
HANGUL = re.compile("[\uac00-\ud7a3]")


def test_every_theory_key_is_in_both_catalogs_with_the_same_placeholders():
    keys = all_keys()
    assert len(keys) == len(set(keys))
    for key in keys:
        assert key in EN and key in KO, key
        assert placeholders(EN[key]) == placeholders(KO[key]), key
    # no orphan prose: every theory.* entry is drawn by the page
    assert {k for k in EN if k.startswith("theory.")} == set(keys)
    assert {k for k in KO if k.startswith("theory.")} == set(keys)


def test_references_have_arxiv_ids_of_the_right_shape():
    for ref in REFERENCES:
        assert ref.arxiv is None or re.fullmatch(r"\d{4}\.\d{4,5}", ref.arxiv), ref
        assert ref.arxiv or ref.note, ref
    assert "arxiv.org/abs/2002.04745" in references_markdown()  # the paper the app is about


def run_page(lang: str) -> AppTest:
    at = AppTest.from_file(str(PAGE), default_timeout=30)
    at.session_state["lang"] = lang
    at.run()
    assert not at.exception, at.exception
    return at


@pytest.fixture(scope="module")
def pages() -> dict[str, AppTest]:
    return {lang: run_page(lang) for lang in ("en", "ko")}


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_page_draws_every_section_title_body_and_formula(pages, lang):
    at = pages[lang]
    assert [h.value for h in at.title] == [t(PAGE_TITLE_KEY, lang)]
    headers = [h.value for h in at.header]
    assert headers == [t(s.title_key, lang) for s in SECTIONS]
    markdown = [m.value for m in at.markdown]
    for key in [INTRO_KEY] + [k for s in SECTIONS for k in s.body_keys]:
        assert t(key, lang) in markdown, key
    formulas = [s for section in SECTIONS for s in section.formulas]
    assert len(formulas) >= 10
    drawn = [el.value.removeprefix("$$\n").removesuffix("\n$$") for el in at.latex]  # st.latex adds $$...$$
    assert drawn == formulas  # the same formulas, in order, in every language
    assert references_markdown() in markdown


def test_korean_page_has_no_english_paragraph(pages):
    en = {m.value for m in pages["en"].markdown}
    ko = [m.value for m in pages["ko"].markdown]
    prose = [m for m in ko if m != references_markdown()]  # paper titles stay in English
    assert prose
    for text in prose:
        assert text not in en, text[:80]
        assert HANGUL.search(text), text[:80]
    for section in SECTIONS:
        assert HANGUL.search(t(section.title_key, "ko")), section.anchor
