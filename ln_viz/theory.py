"""The Theory page's content: its text, read from one Markdown file per language, and the shared reference list.

`ln_viz/content/theory.<lang>.md` holds the page in reading order. Its conventions (see the files' front matter):
a TOML front matter between `+++` lines (`contents`: the heading of the table of contents), `# ` the page
title, the paragraphs before the first section the introduction, `## Title {#anchor}` a section (the anchor is
the URL fragment, ASCII, the same in every language), a `$$ ... $$` block a formula for `st.latex` (LaTeX, the
same in every language), `<!-- references -->` the place of the reference list. Blocks are separated by one
blank line and each reaches the page exactly as written. `pages/theory.py` only draws what `page()` returns.
"""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass
from importlib import resources

from ln_viz.i18n import DEFAULT_LANG, LANGS


@dataclass(frozen=True)
class Text:
    """A markdown paragraph (or list), as the page draws it."""

    markdown: str


@dataclass(frozen=True)
class Formula:
    """A displayed formula: LaTeX for st.latex, language-independent."""

    latex: str


@dataclass(frozen=True)
class ReferenceList:
    """Where the list of REFERENCES goes."""


Part = Text | Formula | ReferenceList


@dataclass(frozen=True)
class Section:
    """One `## Title {#anchor}` of the page and what follows it, in reading order."""

    anchor: str  # URL fragment (#anchor), ASCII, the same in every language
    title: str
    parts: tuple[Part, ...]

    @property
    def texts(self) -> list[str]:
        return [p.markdown for p in self.parts if isinstance(p, Text)]

    @property
    def formulas(self) -> list[str]:
        return [p.latex for p in self.parts if isinstance(p, Formula)]


@dataclass(frozen=True)
class TheoryPage:
    """The whole page in one language."""

    title: str
    intro: tuple[str, ...]  # markdown paragraphs before the first section
    contents: str  # the heading of the table of contents
    sections: tuple[Section, ...]


FRONT_MATTER = "+++"
REFERENCES_MARK = "<!-- references -->"
SECTION_RE = re.compile(r"## (?P<title>.+) \{#(?P<anchor>[a-z0-9-]+)\}")


def _part(block: str) -> Part:
    if block == REFERENCES_MARK:
        return ReferenceList()
    if block.startswith("$$\n") and block.endswith("\n$$"):
        return Formula(block[3:-3])
    return Text(block)


def parse(text: str, source: str = "<theory>") -> TheoryPage:
    """Split a theory Markdown file into its title, introduction and sections (see the module docstring)."""
    lines = text.split("\n")
    if lines[0] != FRONT_MATTER or FRONT_MATTER not in lines[1:]:
        raise ValueError(f"{source}: must start with a front matter between {FRONT_MATTER} lines")
    end = lines.index(FRONT_MATTER, 1)
    front = tomllib.loads("\n".join(lines[1:end]))
    blocks = "\n".join(lines[end + 1 :]).strip("\n").split("\n\n")
    if not blocks[0].startswith("# "):
        raise ValueError(f"{source}: the first block after the front matter must be the `# ` page title")
    intro: list[str] = []
    sections: list[tuple[str, str, list[Part]]] = []  # (anchor, title, parts)
    for block in blocks[1:]:
        if block.startswith("#"):
            m = SECTION_RE.fullmatch(block)
            if m is None:
                raise ValueError(f"{source}: a heading must read `## Title {{#anchor}}`, got {block[:60]!r}")
            sections.append((m["anchor"], m["title"], []))
        elif sections:
            sections[-1][2].append(_part(block))
        elif isinstance(_part(block), Text):
            intro.append(block)
        else:
            raise ValueError(f"{source}: the introduction holds paragraphs only, got {block[:60]!r}")
    return TheoryPage(
        title=blocks[0].removeprefix("# "),
        intro=tuple(intro),
        contents=front["contents"],
        sections=tuple(Section(a, title, tuple(parts)) for a, title, parts in sections),
    )


@functools.cache
def page(lang: str = DEFAULT_LANG) -> TheoryPage:
    """The Theory page in `lang`, from ln_viz/content/theory.<lang>.md (read once). Unknown languages: English."""
    lang = lang if lang in LANGS else DEFAULT_LANG
    name = f"theory.{lang}.md"
    return parse(resources.files(__package__).joinpath("content", name).read_text(encoding="utf-8"), name)


@dataclass(frozen=True)
class Reference:
    """A cited work; the list is shared by every language (titles stay as published)."""

    authors: str
    year: int
    title: str
    arxiv: str | None = None  # arXiv identifier, when the work has one
    note: str = ""  # e.g. where it appeared, when there is no arXiv id

    def markdown(self) -> str:
        """One entry of the list: authors (year). *Title*. arXiv link or note."""
        where = f"arXiv:[{self.arxiv}](https://arxiv.org/abs/{self.arxiv})" if self.arxiv else self.note
        return f"{self.authors} ({self.year}). *{self.title}*. {where}."


REFERENCES: tuple[Reference, ...] = (
    Reference("Ba, J. L., Kiros, J. R., & Hinton, G. E.", 2016, "Layer Normalization", "1607.06450"),
    Reference("Vaswani, A., et al.", 2017, "Attention Is All You Need", "1706.03762"),
    Reference(
        "Devlin, J., Chang, M.-W., Lee, K., & Toutanova, K.",
        2019,
        "BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding",
        "1810.04805",
    ),
    Reference(
        "Radford, A., et al.",
        2019,
        "Language Models are Unsupervised Multitask Learners",
        note="OpenAI technical report (GPT-2)",
    ),
    Reference("Zhang, B., & Sennrich, R.", 2019, "Root Mean Square Layer Normalization", "1910.07467"),
    Reference("Xiong, R., et al.", 2020, "On Layer Normalization in the Transformer Architecture", "2002.04745"),
    Reference(
        "Liu, L., Liu, X., Gao, J., Chen, W., & Han, J.",
        2020,
        "Understanding the Difficulty of Training Transformers",
        "2004.08249",
    ),
    Reference("Ding, M., et al.", 2021, "CogView: Mastering Text-to-Image Generation via Transformers", "2105.13290"),
    Reference("Wang, H., et al.", 2022, "DeepNet: Scaling Transformers to 1,000 Layers", "2203.00555"),
    Reference("Touvron, H., et al.", 2023, "LLaMA: Open and Efficient Foundation Language Models", "2302.13971"),
    Reference("Xie, S., et al.", 2023, "ResiDual: Transformer with Dual Residual Connections", "2304.14802"),
    Reference(
        "Kim, J., et al.",
        2025,
        "Peri-LN: Revisiting Normalization Layer in the Transformer Architecture",
        "2502.02732",
    ),
)


def references_markdown() -> str:
    """The reference list as a numbered markdown list (the same in every language)."""
    return "\n".join(f"{i}. {ref.markdown()}" for i, ref in enumerate(REFERENCES, 1))
