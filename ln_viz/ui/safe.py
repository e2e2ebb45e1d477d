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

WORD_JOINER = "\u2060"  # invisible and unbreakable: it only keeps two characters from forming a pattern
# A backslash makes any ASCII punctuation literal (CommonMark). Escaped wherever they can open syntax on a
# single line: code, emphasis and strikethrough, links and images, raw HTML and `<autolinks>`, LaTeX, and
# email autolinks; `_` only where it could emphasise (inside a word it cannot, so `user_text` stays).
_ALWAYS = re.compile(r"([\\`*~\[\]<$@])")
_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")
_COLON = re.compile(r":(?=\S)")  # Streamlit's `:red[...]`, `:material/x:`, emoji `:smile:`; `http://`
_ENTITY = re.compile(r"&(?=[#A-Za-z])")  # `&lt;`, `&#x41;`
_WWW = re.compile(r"(?i)(?<![^\W_])(www)\.")  # GFM's `www.host` autolink
# At the start of the line: a heading, a quote, a list item, a rule, an ordered list item
_BLOCK = re.compile(r"^(#{1,6}(?=\s|$)|>|[-+=]|\d{1,9}(?=[.)]))")
# Streamlit converts these after parsing, in the text itself, where a backslash no longer counts:
# `:smile:` (emoji) and the typographic pairs `->`, `<-`, `--`, `>=`, `<=`, `~=`. A word joiner
# between the two characters leaves what a reader sees unchanged and the pattern unmatched.
_TYPOGRAPHIC = re.compile(r"([-<>~])(?=[->=])")
_LEADING_SPACES = re.compile(r"^ +")  # four of them would start a code block


def md(text: object) -> str:
    """Markdown that Streamlit shows as exactly `text`, on one line (control characters as visible
    escapes: a newline is `\\n`, so it cannot end a heading or start a list)."""
    line = one_line(str(text))
    line = _LEADING_SPACES.sub(lambda m: "\u00a0" * len(m.group()), line)
    line = _TYPOGRAPHIC.sub("\\1" + WORD_JOINER, line)  # before any escape: the pairs are adjacent
    line = _ALWAYS.sub(r"\\\1", line)
    line = _UNDERSCORE.sub(r"\\_", line)
    line = _COLON.sub("\\:" + WORD_JOINER, line)
    line = _ENTITY.sub(r"\\&", line)
    line = _WWW.sub(r"\1\\.", line)
    block = _BLOCK.match(line)
    if block:
        head = block.group()
        line = (rf"\{head}" if not head[0].isdigit() else head + "\\") + line[len(head) :]
    return line
