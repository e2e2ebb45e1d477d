"""The Theory page: its text (ln_viz/content/theory.<lang>.md) has the same sections, anchors and formulas in
both languages, and the page draws every section, in English and Korean."""

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ln_viz import theory
from ln_viz.i18n import LANGS
from ln_viz.theory import REFERENCES, Formula, ReferenceList, Text, references_markdown

PAGE = Path(__file__).resolve().parent.parent / "pages" / "theory.py"
HANGUL = re.compile("[\uac00-\ud7a3]")


def shape(doc: theory.TheoryPage) -> list[tuple[str, list[str]]]:
    """Each section's anchor and the kinds of its parts, in order: what must not differ between languages."""
    return [(s.anchor, [type(p).__name__ for p in s.parts]) for s in doc.sections]


def test_both_languages_have_the_same_anchors_structure_and_formulas():
    en, ko = theory.page("en"), theory.page("ko")
    anchors = [s.anchor for s in en.sections]
    assert len(anchors) == len(set(anchors)) >= 8
    assert all(re.fullmatch(r"[a-z0-9-]+", a) for a in anchors)
    assert shape(ko) == shape(en)
    assert [s.formulas for s in ko.sections] == [s.formulas for s in en.sections]
    assert sum(len(s.formulas) for s in en.sections) >= 10
    assert len(ko.intro) == len(en.intro) >= 1
    for doc in (en, ko):
        assert sum(isinstance(p, ReferenceList) for s in doc.sections for p in s.parts) == 1
        for text in [doc.title, doc.contents, *doc.intro, *(t for s in doc.sections for t in [s.title, *s.texts])]:
            assert text and text == text.strip(), text[:80]  # nothing empty, no stray blank lines kept


def test_unknown_language_falls_back_to_english():
    assert theory.page("fr") == theory.page("en")
    assert set(LANGS) == {"en", "ko"}


def test_parse_reads_the_conventions_and_refuses_a_heading_without_anchor():
    text = (
        '+++\ncontents = "Contents"\n+++\n\n# Title\n\nIntro.\n\n## One {#one}\n\nA paragraph.\n- a list\n- of two\n\n'
        "$$\nx = 1\n$$\n\n<!-- references -->\n"
    )
    doc = theory.parse(text)
    assert (doc.title, doc.intro, doc.contents) == ("Title", ("Intro.",), "Contents")
    (section,) = doc.sections
    assert (section.anchor, section.title) == ("one", "One")
    assert section.parts == (Text("A paragraph.\n- a list\n- of two"), Formula("x = 1"), ReferenceList())
    with pytest.raises(ValueError, match="anchor"):
        theory.parse(text.replace(" {#one}", ""))
    with pytest.raises(ValueError, match="front matter"):
        theory.parse(text.removeprefix("+++\n"))
    with pytest.raises(ValueError, match="introduction"):
        theory.parse(text.replace("Intro.", "$$\ny\n$$"))


def test_references_have_arxiv_ids_of_the_right_shape():
    for ref in REFERENCES:
        assert ref.arxiv is None or re.fullmatch(r"\d{4}\.\d{4,5}", ref.arxiv), ref
        assert ref.arxiv or ref.note, ref
    assert "arxiv.org/abs/2002.04745" in references_markdown()  # the paper the app is about
    years = [ref.year for ref in REFERENCES]
    assert years == sorted(years)  # "oldest first", as the section says


# issue 19's papers: Wortsman, Dehghani (QK-norm), PaLM (z-loss), Mix-LN, LayerNorm Scaling, DyT, massive
# activations, AdamW
ISSUE_19_PAPERS = {"2309.14322", "2302.05442", "2204.02311", "2412.13795", "2502.05795", "2503.10622", "2402.17762"}


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_every_listed_work_is_cited_in_the_text_and_every_cited_id_listed(lang):
    listed = {ref.arxiv for ref in REFERENCES}
    assert ISSUE_19_PAPERS | {"1711.05101"} <= listed
    doc = theory.page(lang)
    paragraphs = [*doc.intro, *(t for s in doc.sections for t in s.texts)]
    named = set(re.findall(r"arXiv (\d{4}\.\d{4,5})", "\n".join(paragraphs)))
    assert named and named <= listed, named - listed
    for ref in REFERENCES:  # "the papers this page cites": each by its first author and year, in one paragraph
        surname = ref.authors.split(",")[0]
        assert any(surname in p and str(ref.year) in p for p in paragraphs), (surname, ref.year)


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
    at, doc = pages[lang], theory.page(lang)
    assert [h.value for h in at.title] == [doc.title]
    assert [h.value for h in at.header] == [s.title for s in doc.sections]
    markdown = [m.value for m in at.markdown]
    for text in [*doc.intro, *(t for s in doc.sections for t in s.texts)]:
        assert text in markdown, text[:80]
    toc = next(m for m in markdown if m.startswith(f"**{doc.contents}**"))
    assert all(f"(#{s.anchor})" in toc for s in doc.sections)
    drawn = [el.value.removeprefix("$$\n").removesuffix("\n$$") for el in at.latex]  # st.latex adds $$...$$
    assert drawn == [f for s in doc.sections for f in s.formulas]  # the same formulas, in order, in every language
    assert references_markdown() in markdown


def test_korean_page_has_no_english_paragraph(pages):
    en = {m.value for m in pages["en"].markdown}
    ko = [m.value for m in pages["ko"].markdown]
    prose = [m for m in ko if m != references_markdown()]  # paper titles stay in English
    assert prose
    for text in prose:
        assert text not in en, text[:80]
        assert HANGUL.search(text), text[:80]
    for section in theory.page("ko").sections:
        assert HANGUL.search(section.title), section.anchor


# How to read the stability map, the LR-sensitivity chart and the attention-entropy chart (issue 21 N26):
# a paragraph each in "How to read each chart", in both languages, with the numbers the charts use
READ_CHARTS = {"en": ("**Stability map.**", "**LR sensitivity.**", "**Attention entropy.**"),
               "ko": ("**안정성 지도.**", "**학습률 민감도.**", "**어텐션 엔트로피.**")}  # fmt: skip


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_how_to_read_covers_the_map_the_lr_sensitivity_and_the_attention_entropy(lang):
    from ln_viz.charts.entropy import uniform_entropy
    from ln_viz.config import PRESETS
    from ln_viz.snapshot import FINAL_LOSS_WINDOW
    from ln_viz.sweep.charts import TOP_ABOVE_UNIGRAM
    from ln_viz.train import STALL_MARGIN

    section = next(s for s in theory.page(lang).sections if s.anchor == "charts")
    paragraphs = {head: next((p for p in section.texts if p.startswith(head)), "") for head in READ_CHARTS[lang]}
    the_map, sens, entropy = paragraphs.values()
    assert all(paragraphs.values()), [h for h, p in paragraphs.items() if not p]
    assert f"{FINAL_LOSS_WINDOW}" in the_map and f"{STALL_MARGIN:.0%}".replace("%", " %") in the_map
    assert f"+ {TOP_ABOVE_UNIGRAM:g} nat" in the_map and f"+ {TOP_ABOVE_UNIGRAM:g} nat" in sens
    assert "Wortsman" in sens and "2023" in sens
    seq = PRESETS["post-ln-no-warmup"].config.seq_len
    assert f"{uniform_entropy(seq):.2f}" in entropy and f"{seq}" in entropy and "8" in entropy
