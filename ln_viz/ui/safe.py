"""Text from outside, shown by Streamlit as the text it is: never Markdown, never HTML.

Streamlit 1.67 renders the body of st.markdown, st.title/header/subheader, st.caption, st.info/warning/
error/success, widget labels and radio options as GitHub-flavoured Markdown plus its own extensions
(`:red[...]`, `:material/icon:`, `$LaTeX$`, emoji shortcodes, and `->` `--` `>=` turned into arrows and
dashes: its StreamlitMarkdown component). So a label such as `![i](http://host/p.png)` would make every
viewer's browser fetch that address. `md` turns any string into Markdown that shows exactly that string:
`tests/test_user_text.py` checks it with Markdown's own rules and, in Chromium, on the Runs page.
"""

from __future__ import annotations

import re

from ln_viz.text import one_line

WORD_JOINER = "\u2060"  # invisible, and no line break: it only keeps two characters from forming a code
# Every ASCII punctuation character: CommonMark lets a backslash make any of them literal, which stops
# links, images, emphasis, code, headings, lists, tables, raw HTML, entities, autolinks (`http\:`),
# Streamlit's directives (`\:red[`) and its LaTeX (`\$`).
_PUNCT = re.compile(r"([!-/:-@\[-`{-~])")
# Streamlit converts these after parsing, in the text itself, where a backslash no longer counts:
# `:smile:` (emoji) and the typographic pairs `->`, `<-`, `--`, `>=`, `<=`, `~=`. A word joiner
# between the two characters leaves what a reader sees unchanged and the pattern unmatched.
_SHORTCODE = re.compile(r":(?=\S)")
_TYPOGRAPHIC = re.compile(r"([-<>~])(?=[->=])")
_LEADING_SPACES = re.compile(r"^ +")  # four of them would start a code block


def md(text: object) -> str:
    """Markdown that Streamlit shows as exactly `text` on one line (control characters as visible
    escapes: a newline is `\\n`, so it cannot end a heading or start a list)."""
    line = one_line(str(text))
    line = _LEADING_SPACES.sub(lambda m: "\u00a0" * len(m.group()), line)
    line = _SHORTCODE.sub(":" + WORD_JOINER, line)  # before escaping: the pairs are next to each other
    line = _TYPOGRAPHIC.sub(r"\1" + WORD_JOINER, line)
    return _PUNCT.sub(r"\\\1", line)
