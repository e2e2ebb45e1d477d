"""The Theory page: why LayerNorm placement decides whether a deep transformer trains, and how to read the
app's charts. The text is ln_viz/content/theory.<lang>.md, read and split by ln_viz/theory.py."""

import streamlit as st

from ln_viz import theory
from ln_viz.theory import Formula, ReferenceList, Text, references_markdown
from ln_viz.ui import language, links
from ln_viz.ui.safe import md

READING_WIDTH_PX = 860  # a readable line length, also under the app's wide layout
# Korean wraps between words (eojeol), not inside them, as Korean text is set; browsers default to breaking
# anywhere in Hangul.
KEEP_WORDS_CSS = (
    "<style>[data-testid='stMarkdownContainer'] :is(p, li), h1, h2 "
    "{word-break: keep-all; overflow-wrap: break-word;}</style>"
)


lang = language.current_lang()
if lang == "ko":
    st.html(KEEP_WORDS_CSS)
doc = theory.page(lang)
page = st.container(width=READING_WIDTH_PX)
page.title(doc.title)
for notice in links.link_notices(lang):
    page.warning(md(notice))
for paragraph in doc.intro:
    page.markdown(paragraph)
contents = "\n".join(f"{i}. [{s.title}](#{s.anchor})" for i, s in enumerate(doc.sections, 1))
page.markdown(f"**{doc.contents}**\n\n{contents}")

for section in doc.sections:
    page.header(section.title, anchor=section.anchor, divider="gray")
    for part in section.parts:
        if isinstance(part, Formula):
            page.latex(part.latex)
        elif isinstance(part, Text):
            page.markdown(part.markdown)
        elif isinstance(part, ReferenceList):
            page.markdown(references_markdown())
