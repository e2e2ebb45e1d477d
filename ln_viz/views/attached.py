"""A run ln_viz.attach recorded from the user's own model, as the pages say it, without Streamlit: its name on a chart
("LlamaForCausalLM · Pre-LN"), its card in one line (a watched run's heading), and its card and matrices as rows
(the Runs page). Everything a model sent is text from outside: one line, cut short."""

from __future__ import annotations

import re
from typing import Any

from ln_viz.i18n import EN, t
from ln_viz.text import shown

_HEAD = re.compile(r"(For[A-Z]\w*|LMHeadModel|Model)$")  # HF's task heads: LlamaForCausalLM is a Llama


def _family(card: dict[str, Any], short: bool = False) -> str:
    """The model's class name (text from outside, cut short); `short`: without HF's head ("Olmo2")."""
    family = str(card.get("family", "?"))
    return shown((_HEAD.sub("", family) or family) if short else family, 40)


def attached_label(card: dict[str, Any], lang: str) -> str:
    """A run of the user's own model on a chart: "Llama · Pre-LN" (its class without HF's head, its placement)."""
    return t("attached.label", lang, model=_family(card, short=True), norm=t(f"chart.norm.{_placement(card)}", lang))


def _placement(card: dict[str, Any]) -> str:
    placement = str(card.get("placement", "unknown"))
    return placement if f"chart.norm.{placement}" in EN else "unknown"


def attached_words(card: dict[str, Any], lang: str) -> str:
    """ "Llama · Pre-LN · 2 blocks · QK-norm": the card in one line (a watched run's heading, the Runs page)."""
    norm = t(f"chart.norm.{_placement(card)}", lang)
    words = t("attached.words", lang, model=_family(card, short=True), norm=norm, depth=card.get("depth", "?"))
    return words + (t("attached.words_qk", lang) if card.get("qk_norm") else "")


def card_rows(card: dict[str, Any], lang: str) -> list[tuple[str, str]]:
    """The card as (what, value) rows, as the Runs page shows it under an attached run's heading: the model, where
    its blocks are, depth, width, heads, placement, QK-norm, its norms and attention, parameters. Everything a
    model sent is text, cut short."""
    yes_no = lambda v: t("attached.yes" if v else "attached.no", lang)  # noqa: E731
    norms = ", ".join(f"{shown(str(n.get('name', '?')), 40)} ({n.get('role', '?')})" for n in card.get("norms", ()))
    heads = card.get("heads")
    rows = [
        ("family", _family(card)),
        ("blocks", shown(str(card.get("blocks", "?")), 60)),
        ("depth", str(card.get("depth", "?"))),
        ("d_model", str(card.get("d_model", "?"))),
        ("heads", str(heads) if heads else "-"),
        ("placement", t(f"chart.norm.{_placement(card)}", lang)),
        ("qk_norm", yes_no(card.get("qk_norm"))),
        ("norms", norms or "-"),
        ("attention", shown(f"{card.get('attention') or '-'} ({card.get('attention_impl', '?')})", 60)),
        ("n_params", f"{int(card.get('n_params', 0)):,}"),
    ]
    return [(t(f"attached.card.{k}", lang), v) for k, v in rows]


def matrix_rows(card: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The card's matrices of one block: (name, role, shape), as the run recorded them."""
    return [
        (
            shown(str(m.get("name", "?")), 60),
            str(m.get("role", "other")),
            " x ".join(str(n) for n in m.get("shape", ())),
        )
        for m in card.get("matrices", ())
    ]
