"""The Theory page: why LayerNorm placement decides whether a deep transformer trains, and how to read the
app's charts. The structure is ln_viz/theory.py, the prose ln_viz/i18n.py (`theory.*`, English and Korean)."""

import streamlit as st

from ln_viz.i18n import t
from ln_viz.theory import (
    CONTENTS_KEY,
    INTRO_KEY,
    PAGE_TITLE_KEY,
    SECTIONS,
    Formula,
    ReferenceList,
    Text,
    references_markdown,
)
from ln_viz.ui import session

READING_WIDTH_PX = 860  # a readable line length, also under the app's wide layout
# Korean wraps between words (eojeol), not inside them, as Korean text is set; browsers default to breaking
# anywhere in Hangul.
KEEP_WORDS_CSS = (
    "<style>[data-testid='stMarkdownContainer'] :is(p, li), h1, h2 "
    "{word-break: keep-all; overflow-wrap: break-word;}</style>"
)


lang = session.current_lang()
if lang == "ko":
    st.html(KEEP_WORDS_CSS)
page = st.container(width=READING_WIDTH_PX)
page.title(t(PAGE_TITLE_KEY, lang))
page.markdown(t(INTRO_KEY, lang))
contents = "\n".join(f"{i}. [{t(s.title_key, lang)}](#{s.anchor})" for i, s in enumerate(SECTIONS, 1))
page.markdown(f"**{t(CONTENTS_KEY, lang)}**\n\n{contents}")

for section in SECTIONS:
    page.header(t(section.title_key, lang), anchor=section.anchor, divider="gray")
    for part in section.parts:
        if isinstance(part, Formula):
            page.latex(part.latex)
        elif isinstance(part, Text):
            page.markdown(t(part.key, lang))
        elif isinstance(part, ReferenceList):
            page.markdown(references_markdown())
