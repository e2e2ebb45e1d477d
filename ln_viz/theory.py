"""The Theory page's structure: ordered sections, each a title and its paragraphs and formulas in reading order.

The prose lives in `ln_viz/i18n.py` under `theory.*` keys, in English and Korean. Formulas are LaTeX for
`st.latex` and the same in every language; so is the reference list. `pages/theory.py` only draws this.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Text:
    """A markdown paragraph (or list): an i18n key."""

    key: str


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
    anchor: str  # URL fragment (#anchor), ASCII, the same in every language
    parts: tuple[Part, ...]

    @property
    def title_key(self) -> str:
        return f"theory.{self.anchor}.title"

    @property
    def body_keys(self) -> list[str]:
        return [p.key for p in self.parts if isinstance(p, Text)]

    @property
    def formulas(self) -> list[str]:
        return [p.latex for p in self.parts if isinstance(p, Formula)]


@dataclass(frozen=True)
class Reference:
    authors: str
    year: int
    title: str
    arxiv: str | None = None  # arXiv identifier, when the work has one
    note: str = ""  # e.g. where it appeared, when there is no arXiv id

    def markdown(self) -> str:
        where = f"arXiv:[{self.arxiv}](https://arxiv.org/abs/{self.arxiv})" if self.arxiv else self.note
        return f"{self.authors} ({self.year}). *{self.title}*. {where}."


def _texts(section: str, *names: str) -> tuple[Text, ...]:
    return tuple(Text(f"theory.{section}.{name}") for name in names)


LN = r"\mathrm{LN}"
GRAD_W2 = r"\left\lVert \dfrac{\partial \mathcal{L}}{\partial W^{2,L}} \right\rVert_F"

# Page header keys (not part of a section).
PAGE_TITLE_KEY = "theory.page_title"
INTRO_KEY = "theory.intro"
CONTENTS_KEY = "theory.contents"

SECTIONS: tuple[Section, ...] = (
    Section(
        "block",
        (
            *_texts("block", "residual"),
            Formula(r"x_{l+1} = x_l + F(x_l)"),
            *_texts("block", "stream", "ln"),
            Formula(
                LN + r"(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta, \qquad "
                r"\mu = \frac{1}{d}\sum_{i=1}^{d} x_i, \quad \sigma^2 = \frac{1}{d}\sum_{i=1}^{d} (x_i - \mu)^2"
            ),
            *_texts("block", "where"),
        ),
    ),
    Section(
        "placement",
        (
            *_texts("placement", "post"),
            Formula(r"\text{Post-LN:}\quad x_{l+1} = " + LN + r"\big(x_l + F(x_l)\big)"),
            *_texts("placement", "pre"),
            Formula(
                r"\text{Pre-LN:}\quad x_{l+1} = x_l + F\big(" + LN + r"(x_l)\big), "
                r"\qquad \text{logits} = W_{\text{out}}\, " + LN + r"(x_L)"
            ),
            *_texts("placement", "same"),
        ),
    ),
    Section(
        "warmup",
        (
            *_texts("warmup", "problem"),
            Formula(
                r"\mathrm{lr}(t) = \frac{t}{T_{\text{warmup}}}\,\mathrm{lr}_{\max} \qquad (t \le T_{\text{warmup}})"
            ),
            *_texts("warmup", "result"),
            Formula(
                r"\begin{aligned} \text{Post-LN:}\quad & " + GRAD_W2 + r" \le \mathcal{O}\big(d\sqrt{\ln d}\big) \\ "
                r"\text{Pre-LN:}\quad & " + GRAD_W2 + r" \le \mathcal{O}\Big(d\sqrt{\tfrac{\ln d}{L}}\Big) "
                r"\end{aligned}"
            ),
            *_texts("warmup", "why", "setup"),
        ),
    ),
    Section(
        "preln",
        (
            *_texts("preln", "identity"),
            Formula(r"x_L = x_0 + \sum_{l=0}^{L-1} F_l\big(" + LN + r"(x_l)\big)"),
            *_texts("preln", "growth"),
            Formula(
                r"\Big(1 + \frac{l}{2}\Big)\, d \;\le\; \mathbb{E}\,\lVert x_l \rVert_2^2 "
                r"\;\le\; \Big(1 + \frac{3l}{2}\Big)\, d"
            ),
            *_texts("preln", "final", "cost"),
        ),
    ),
    Section("small", _texts("small", "scale", "holds", "differs", "presets")),
    Section(
        "charts",
        _texts("charts", "loss", "heatmap", "activations", "profile", "update", "compare", "initlab"),
    ),
    Section(
        "variants",
        (
            *_texts("variants", "intro", "peri"),
            Formula(r"x_{l+1} = x_l + " + LN + r"\Big(F\big(" + LN + r"(x_l)\big)\Big)"),
            *_texts("variants", "deepnorm"),
            Formula(
                r"x_{l+1} = " + LN + r"\big(\alpha\, x_l + F(x_l)\big), "
                r"\qquad \alpha = (2L)^{1/4}, \quad \beta = (8L)^{-1/4}"
            ),
            *_texts("variants", "rmsnorm"),
            Formula(r"\mathrm{RMSNorm}(x) = g \odot \frac{x}{\sqrt{\frac{1}{d}\sum_{i=1}^{d} x_i^2 + \epsilon}}"),
            *_texts("variants", "none"),
            Formula(r"x_{l+1} = x_l + F(x_l)"),
        ),
    ),
    Section("references", (*_texts("references", "intro"), ReferenceList())),
)

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


def all_keys() -> list[str]:
    """Every i18n key the page uses, in page order."""
    keys = [PAGE_TITLE_KEY, INTRO_KEY, CONTENTS_KEY]
    for section in SECTIONS:
        keys += [section.title_key, *section.body_keys]
    return keys
