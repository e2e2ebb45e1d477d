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


def _references() -> tuple[Reference, ...]:
    """The cited works, from ln_viz/content/references.toml (data a translator or editor can open)."""
    text = resources.files(__package__).joinpath("content", "references.toml").read_text(encoding="utf-8")
    return tuple(Reference(**entry) for entry in tomllib.loads(text)["reference"])


REFERENCES: tuple[Reference, ...] = _references()


def references_markdown() -> str:
    """The reference list as a numbered markdown list (the same in every language)."""
    return "\n".join(f"{i}. {ref.markdown()}" for i, ref in enumerate(REFERENCES, 1))
