"""The Init lab on real architectures: Xiong et al.'s Figure 3 (the gradient per layer at initialisation)
on Hugging Face's own blocks, BERT, GPT-2, Llama, Gemma 3 and OLMo 2, at HF's own init and at Xavier's, over
seeds; and the sentence the measurement supports, never the toy's result painted on a real model.

Imports neither torch nor transformers: the measurement (ln_viz/byom/figure3.py) runs in the Init lab's
worker processes (ln_viz.init_lab.make_executor), one task per architecture and init, and the server only
summarises. The page's default measurement ships with the app (BUNDLED_DEFAULT), as the Init lab's does.
"""

from __future__ import annotations

import importlib.util
import json
import logging
from collections.abc import Iterable
from concurrent.futures import Executor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import ClassVar, NamedTuple

import pandas as pd

from ln_viz.i18n import t

log = logging.getLogger(__name__)


class Arch(NamedTuple):
    model_type: str  # AutoConfig.for_model's name
    loss: str  # "mlm" (masked LM, BERT) | "clm" (next token)
    label: str  # as the page names it


ARCHS: dict[str, Arch] = {
    "bert": Arch("bert", "mlm", "BERT"),
    "gpt2": Arch("gpt2", "clm", "GPT-2"),
    "llama": Arch("llama", "clm", "Llama"),
    "gemma3_text": Arch("gemma3_text", "clm", "Gemma 3"),
    "olmo2": Arch("olmo2", "clm", "OLMo 2"),
}
INITS = ("hf", "xavier")  # HF's own _init_weights (normal, std 0.02 mostly) | Xavier-uniform, as the paper
FFN_OUT = "ffn.out"  # the paper's Figure 3 matrix (the FFN's output; BERT output.dense, GPT-2 mlp.c_proj)
ROLES = (FFN_OUT, "attn.o")  # the matrices measured: the two that write into the residual stream
FLAT = (0.9, 1.1)  # the median's band for "flat"; every seed above (below) it is "grows" ("shrinks")
NEAR_FLAT = (0.8, 1.25)  # and, for "flat", every seed inside this one
INSTALL = 'pip install "ln-viz[hf]"'


@dataclass(frozen=True)
class Setup:
    """The tiny random configs and the batch: the issue's 12 layers, d 64, 4 heads, 5 seeds."""

    depth: int = 12
    d_model: int = 64
    heads: int = 4
    vocab: int = 96
    batch: int = 16
    seq_len: int = 64
    seeds: int = 5
    mask_rate: float = 0.15  # BERT's masked-LM share of positions
    MASK_ID: ClassVar[int] = 3  # special ids: pad 0, bos 1, eos 2, mask 3; random tokens are drawn from 4 on
    FIRST_TOKEN: ClassVar[int] = 4


@dataclass
class Measured:
    """One architecture at one init: the placement ln_viz.describe found and every block matrix's gradient."""

    arch: str
    init: str
    placement: str  # post | pre | peri | reordered | ... (ln_viz.byom.card.PLACEMENTS)
    grads: pd.DataFrame  # seed, layer (1 = input side), matrix, role, grad_norm


class Ratio(NamedTuple):
    """The last layer's gradient norm over the first's, per seed: the median and the range over seeds."""

    median: float
    lo: float
    hi: float
    n: int


def seed_ratios(grads: pd.DataFrame, role: str = FFN_OUT) -> pd.Series:
    """Per seed, the last layer's gradient norm of the `role` matrix over the first layer's."""
    g = grads[grads.role == role]
    first, last = g.layer.min(), g.layer.max()
    by_seed = g.pivot_table(index="seed", columns="layer", values="grad_norm", aggfunc="sum")
    return by_seed[last] / by_seed[first]


def ratio(grads: pd.DataFrame, role: str = FFN_OUT) -> Ratio:
    """The seeds' last/first ratios of `role`: median, min, max, count."""
    r = seed_ratios(grads, role)
    return Ratio(float(r.median()), float(r.min()), float(r.max()), int(r.size))


def verdict(r: Ratio) -> str:
    """What the seeds agree on: "grows" toward the output (every seed's ratio above FLAT), "shrinks" (every
    seed's below), "flat" (the median inside FLAT, every seed inside NEAR_FLAT), else "mixed" (the seeds
    disagree: no direction can be claimed)."""
    if r.lo > FLAT[1]:
        return "grows"
    if r.hi < FLAT[0]:
        return "shrinks"
    if FLAT[0] <= r.median <= FLAT[1] and NEAR_FLAT[0] <= r.lo and r.hi <= NEAR_FLAT[1]:
        return "flat"
    return "mixed"


def ratio_sentence(label: str, placement: str, r: Ratio, lang: str, role: str = FFN_OUT, short: bool = False) -> str:
    """One sentence from a measurement: the ratio, its spread over seeds, and the verdict (`short`: a clause
    of the lecture's one sentence)."""
    return t(
        f"init.hf.{'short' if short else 'verdict'}.{verdict(r)}",
        lang,
        arch=label,
        placement=t(f"init.hf.placement.{placement}", lang),
        role=role,
        median=f"{r.median:.2f}",
        lo=f"{r.lo:.2f}",
        hi=f"{r.hi:.2f}",
        n=r.n,
    )


def arch_sentence(m: Measured, lang: str, role: str = FFN_OUT) -> str:
    """`ratio_sentence` of one architecture at one init."""
    return ratio_sentence(ARCHS[m.arch].label, m.placement, ratio(m.grads, role), lang, role)


def pair_sentence(post: tuple[str, str, Ratio], pre: tuple[str, str, Ratio], lang: str, role: str = FFN_OUT) -> str:
    """The lecture's one sentence for a Post-LN and a Pre-LN model, each (label, placement, ratio): whether
    the paper's picture holds here (the Post-LN model's gradient grows toward the output on every seed, the
    Pre-LN model's does not grow), then what each one measured."""
    post_grows, pre_grows = verdict(post[2]) == "grows", verdict(pre[2]) == "grows"
    lead = t("init.hf." + ("not_paper" if not post_grows else "both_grow" if pre_grows else "as_paper"), lang)
    post_text, pre_text = (ratio_sentence(*m, lang, role, short=True) for m in (post, pre))
    return t("init.hf.pair", lang, lead=lead, post=post_text, pre=pre_text)


def measured_pair(post: Measured, pre: Measured, lang: str, role: str = FFN_OUT) -> str:
    """`pair_sentence` of two measured architectures (BERT and GPT-2)."""

    def three(m: Measured) -> tuple[str, str, Ratio]:
        return ARCHS[m.arch].label, m.placement, ratio(m.grads, role)

    return pair_sentence(three(post), three(pre), lang, role)


# --- transformers, optional -------------------------------------------------------------------------------
def transformers_missing() -> bool:
    """Whether `transformers` cannot be imported here (looked up, not imported: it takes seconds)."""
    try:
        return importlib.util.find_spec("transformers") is None
    except (ImportError, ValueError):
        return True


def missing_sentence(lang: str) -> str:
    """The one sentence where `transformers` is not installed: how to add it."""
    return t("init.hf.missing", lang, command=INSTALL)


# --- measuring, in worker processes ------------------------------------------------------------------------
@dataclass
class HfLab:
    """Every (architecture, init) measured for one Setup."""

    setup: Setup
    measured: dict[tuple[str, str], Measured]

    def get(self, arch: str, init: str) -> Measured | None:
        return self.measured.get((arch, init))

    def table(self, role: str = FFN_OUT) -> pd.DataFrame:
        """arch, init, placement, median, lo, hi, n, verdict: one row per measurement."""
        rows = []
        for (arch, init), m in self.measured.items():
            r = ratio(m.grads, role)
            rows.append((arch, init, m.placement, *r, verdict(r)))
        return pd.DataFrame(rows, columns=["arch", "init", "placement", "median", "lo", "hi", "n", "verdict"])


def hf_lab(
    setup: Setup = Setup(),
    archs: Iterable[str] = tuple(ARCHS),
    inits: Iterable[str] = INITS,
    executor: Executor | None = None,
) -> HfLab:
    """Measure every architecture at every init, in `executor`'s processes when given (one task each)."""
    jobs = [(arch, init, setup) for arch in archs for init in inits]
    run = executor.map if executor is not None else map
    measured = {}
    for (arch, init, _), (placement, grads) in zip(jobs, run(_measure, jobs)):
        measured[(arch, init)] = Measured(arch, init, placement, grads)
    return HfLab(setup, measured)


def _measure(job: tuple[str, str, Setup]) -> tuple[str, pd.DataFrame]:
    from ln_viz.byom.figure3 import measure

    arch, init, setup = job
    return measure(ARCHS[arch].model_type, ARCHS[arch].loss, init, setup, ROLES)


# --- the shipped default ---------------------------------------------------------------------------------
BUNDLED_DEFAULT = Path(__file__).with_name("data") / "init_lab_hf_default.json"
BUNDLE_FORMAT = 1


def lab_to_dict(lab: HfLab) -> dict:
    return {
        "setup": asdict(lab.setup),
        "measured": [
            {"arch": m.arch, "init": m.init, "placement": m.placement, "grads": m.grads.to_dict(orient="list")}
            for m in lab.measured.values()
        ],
    }


def lab_from_dict(d: dict) -> HfLab:
    measured = {
        (m["arch"], m["init"]): Measured(m["arch"], m["init"], m["placement"], pd.DataFrame(m["grads"]))
        for m in d["measured"]
    }
    return HfLab(Setup(**d["setup"]), measured)


def write_bundled_default(path: Path = BUNDLED_DEFAULT, executor: Executor | None = None) -> HfLab:
    """Measure the default Setup (every architecture, both inits) and write it where `bundled_default` reads."""
    import torch
    import transformers

    lab = hf_lab(executor=executor)
    doc = {
        "format": BUNDLE_FORMAT,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "made_by": "scripts/make_init_lab_default.py",
        "lab": lab_to_dict(lab),
    }
    path.write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    return lab


def bundled_default(path: Path | None = None) -> tuple[HfLab, str] | None:
    """(the shipped measurement of the default Setup, the transformers version it was made with), from `path`
    (default: BUNDLED_DEFAULT); None (logged) when the file is missing, unreadable or for another setup: the
    caller then measures."""
    path = path or BUNDLED_DEFAULT
    try:
        doc = json.loads(path.read_text())
        lab = lab_from_dict(doc["lab"])
        if doc["format"] != BUNDLE_FORMAT or lab.setup != Setup():
            log.warning("ln-viz: %s is for another setup; measuring instead", path)
            return None
        return lab, str(doc["transformers"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        log.warning("ln-viz: cannot read %s (%s); measuring instead", path, e)
        return None
