"""A run's settings as a lecturer says them, in the page's language: `Post-LN vs Pre-LN · 6 layers · Adam
lr 3e-3 · no warm-up`. The lecture view's header (ln_viz.ui.lecture_view) and the offline lecture pack
(ln_viz.pack) say the same words. No streamlit here."""

from __future__ import annotations

from collections.abc import Sequence

from ln_viz import charts
from ln_viz.config import OMIT_AT_DEFAULT, RunConfig
from ln_viz.i18n import t


def _lr_text(lr: float, plain_from: float = 0.1) -> str:
    """3e-3 rather than 0.003: how learning rates are said in papers and talks; from `plain_from` on, plain
    (the header says a learning rate as 1e-1, as the scenarios do; weight decay 0.1 stays 0.1)."""
    if lr >= plain_from:
        return f"{lr:g}"
    mantissa, exponent = f"{lr:.1e}".split("e")  # 1e-1 as the scenarios and takeaways say it, not 0.1 (L2)
    return f"{mantissa.removesuffix('.0')}e{int(exponent)}"


def _one_or_vs(values: Sequence[str], lang: str) -> str:
    return values[0] if len(set(values)) == 1 else t("lecture.vs", lang).join(values)


# issue 19's settings, said only where a run leaves the default (in this order, after the others)
_EXTRAS = ("norm_type", "qk_norm", "ln_scaling", "weight_decay", "z_loss", "grad_clip", "qk_clip")


def _at_default(c: RunConfig, name: str) -> bool:
    return getattr(c, name) == OMIT_AT_DEFAULT.get(name, "layernorm")  # norm_type's default: LayerNorm


def changed_settings(cfgs: Sequence[RunConfig]) -> list[str]:
    """The issue-19 fields that some run of `cfgs` has away from its default (QK-norm, DyT, ...)."""
    return [n for n in _EXTRAS if any(not _at_default(c, n) for c in cfgs)]


def _extra_word(c: RunConfig, name: str, lang: str) -> str:
    """One issue-19 setting in words; at its default, the words for "without it" (said only beside a
    run that has it)."""
    value = getattr(c, name)
    if name == "norm_type":
        alpha = c.dyt_alpha != OMIT_AT_DEFAULT["dyt_alpha"] and value == "dyt"
        return t(f"lecture.normtype.{value}", lang) + (
            " " + t("lecture.dyt_alpha", lang, v=f"{c.dyt_alpha:g}") if alpha else ""
        )
    if name == "qk_norm":
        return t(f"lecture.qknorm.{value}", lang)
    if name == "ln_scaling":
        return t("lecture.ln_scaling" if value else "lecture.no_ln_scaling", lang)
    return t(f"lecture.{name}", lang, v=_lr_text(value)) if value else t(f"lecture.no_{name}", lang)


def _optimizer_word(c: RunConfig, lang: str) -> str:
    """Adam, SGD; GI-Adam where Adam's second moment starts at the first gradient squared."""
    return t("lecture.opt.gi_adam", lang) if c.adam_init == "gi" else t(f"lecture.opt.{c.optimizer}", lang)


def field_word(c: RunConfig, name: str, lang: str) -> str | None:
    """One field of `c` as the lecture header says it ("lr 3e-3", "warm-up 100 steps", "QK-norm LayerNorm",
    "GI-Adam"); None for a field without words (the caller says it as name=value)."""
    if name in _EXTRAS:
        return _extra_word(c, name, lang)
    if name in ("optimizer", "adam_init"):
        return _optimizer_word(c, lang)
    if name == "lr":
        return t("lecture.lr", lang, lr=_lr_text(c.lr, 1))
    if name == "warmup_steps":
        return t("lecture.warmup", lang, n=c.warmup_steps) if c.warmup_steps else t("lecture.no_warmup", lang)
    if name == "depth":
        return t("lecture.layers", lang, n=c.depth)
    return None


def setting_words(c: RunConfig, lang: str, extras: Sequence[str] | None = None) -> list[str]:
    """A run's settings as a lecturer says them: norm position, depth, optimizer and lr, warm-up, then
    each of `extras` (issue-19 fields; by default those this run changes, `changed_settings`)."""
    extras = changed_settings([c]) if extras is None else extras
    return [
        charts.norm_label(c.norm_position, lang),
        t("lecture.layers", lang, n=c.depth),
        _optimizer_word(c, lang) + " " + t("lecture.lr", lang, lr=_lr_text(c.lr, 1)),
        t("lecture.warmup", lang, n=c.warmup_steps) if c.warmup_steps else t("lecture.no_warmup", lang),
        *(_extra_word(c, name, lang) for name in extras),
    ]


def describe(cfgs: Sequence[RunConfig], lang: str) -> str:
    """What is running, in words and numbers: `Post-LN vs Pre-LN · 6 layers · Adam lr 3e-3 · no warm-up`
    (a part that differs between the runs is said for each; an issue-19 setting only where a run has it:
    `... · no QK-norm vs QK-norm`)."""
    extras = changed_settings(cfgs)
    words = [setting_words(c, lang, extras) for c in cfgs]
    return " · ".join(_one_or_vs([w[j] for w in words], lang) for j in range(len(words[0])))


def unused_settings(c: RunConfig, lang: str) -> list[str]:
    """A sentence for each setting that changes nothing in this run (hostile round 4 L13): a norm type where the
    model has no norm (`norm_position` none), DyT's alpha with another norm type. Legal and harmless (a form,
    a sweep's grid or a link passes through such combinations), so said, not refused as `config.validate`
    refuses the combinations that would mislead (LayerNorm Scaling with Post-LN, QK-Clip with QK-norm)."""
    norm = t(f"lecture.normtype.{c.norm_type}", lang)
    if c.norm_position == "none" and c.norm_type != "layernorm":
        return [t("settings.unused_norm_type", lang, norm_type=norm)]
    if c.norm_type != "dyt" and c.dyt_alpha != OMIT_AT_DEFAULT["dyt_alpha"]:
        return [t("settings.unused_dyt_alpha", lang, alpha=f"{c.dyt_alpha:g}", norm_type=norm)]
    return []
