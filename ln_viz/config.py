"""RunConfig: everything that defines a training run, validated, plus the named presets."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from ln_viz.i18n import LocalizedError
from ln_viz.text import plain_number

NORM_POSITIONS = ("post", "pre", "peri", "deepnorm", "none", "mix", "reordered")
NORM_TYPES = ("layernorm", "rmsnorm", "dyt")
QK_NORMS = ("none", "layernorm", "rmsnorm")
LN_SCALING_POSITIONS = ("pre", "peri", "mix")  # LayerNorm Scaling needs norms in front of the sublayers
OPTIMIZERS = ("adam", "sgd", "muon")  # muon: Muon on the blocks' matrices, Adam on the rest
ADAM_INITS = ("zero", "gi")  # Adam's second moment at the start: 0, or the first gradient squared (GI-Adam)
SCHEDULES = ("constant", "inverse_sqrt", "cosine")
CORPORA = ("english", "markov", "user")
DEVICES = ("cpu", "cuda")

ADAM_BETAS = (0.9, 0.98)  # Xiong et al. 2020, section 4 (and Vaswani et al. 2017)
ADAM_EPS = 1e-8  # torch's default; our probes show grads far larger than this
MAX_DEPTH = 48
MAX_LR = 10.0
MAX_STEPS = 100_000
MAX_QK_CLIP = 1e6  # QK-Clip's tau: a logit of 1e6 is far past where softmax saturates (one-hot beyond ~40)
MEMORY_LIMIT_BYTES = 8 * 1024**3  # what one training run may take on a 24 GiB, 2-core machine


class ConfigError(LocalizedError):
    """A bad RunConfig field: names the field and says what to change."""


@dataclass(frozen=True)
class RunConfig:
    """One training run. Field names are the paper's words; the CLI flags are the same with dashes."""

    norm_position: str = "pre"  # post: LN(x+F(x)); pre: x+F(LN(x)) + final LN; peri; deepnorm; none; mix; reordered
    norm_type: str = "layernorm"  # layernorm | rmsnorm
    depth: int = 6  # number of transformer blocks, L
    d_model: int = 64  # residual stream width, d
    heads: int = 4  # attention heads; d_model must be divisible by heads
    d_ff: int | None = None  # FFN hidden width; None means 4 * d_model
    seq_len: int = 64  # tokens (characters) per training window
    batch_size: int = 32  # windows per step
    optimizer: str = "adam"  # adam (betas 0.9, 0.98 as in the paper) | sgd | muon (Muon on the blocks' matrices)
    lr: float = 3e-3  # peak learning rate, reached at the end of warm-up
    warmup_steps: int = 0  # linear warm-up from 0: lr(t) = t / warmup_steps * lr
    schedule: str = "constant"  # after warm-up: constant | inverse_sqrt | cosine
    steps: int = 400  # optimizer steps
    seed: int = 0  # one seed: initial weights and batches
    corpus: str = "english"  # english | markov | user
    user_text: str | None = field(default=None, repr=False)  # the text when corpus == "user"
    probe_every: int = 10  # probes at step 1, every N steps and the last step; 0 = off
    eval_every: int = 50  # held-out loss every N steps (and at the end); 0 = off
    device: str = "cpu"  # cpu | cuda (only when asked for and present)
    # issue 19: the instability lab and the norm zoo (defaults leave every earlier run as it was)
    qk_norm: str = "none"  # none | layernorm | rmsnorm over each head's q and k (Dehghani 2023, Wortsman 2023)
    weight_decay: float = 0.0  # decoupled, as torch.optim.AdamW: p *= 1 - lr * weight_decay (SGD: same)
    grad_clip: float = 0.0  # max global L2 norm of the gradients; 0 = off
    z_loss: float = 0.0  # coefficient of mean(log Z)^2 added to the training loss (PaLM: 1e-4)
    dyt_alpha: float = 0.5  # DyT's alpha at initialisation (Zhu et al. 2025)
    ln_scaling: bool = False  # each block's norm outputs times 1/sqrt(l), l 1-based (Sun et al. 2025)
    adam_init: str = "zero"  # zero | gi: GI-Adam, v0 = g0^2 (Kalra & Barkeshli 2024); Adam's other lines unchanged
    qk_clip: float = 0.0  # QK-Clip's tau (Kimi K2): a head whose largest |logit| S > tau: W_q, W_k *= sqrt(tau/S)

    @property
    def ffn_width(self) -> int:
        """The FFN's hidden width: d_ff, or 4 * d_model when unset."""
        return self.d_ff if self.d_ff is not None else 4 * self.d_model

    def replace(self, **changes: Any) -> RunConfig:
        """A copy with `changes` applied (not validated)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Every field, by name (JSON-ready), but the issue-19 and issue-33 fields while at their defaults: configs
        from before them keep their dicts, so sweep fingerprints, the shipped map and stored runs match as they did."""
        data = dataclasses.asdict(self)
        for name, default in OMIT_AT_DEFAULT.items():
            if data[name] == default:
                del data[name]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunConfig:
        """Build from a dict (JSON, URL), ignoring unknown keys; call `validate()` on the result."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def validate(self) -> RunConfig:
        """Raise ConfigError on the first bad field (each checked against its FIELDS entry, in field
        order), then on the first bad combination; return self so calls can chain."""
        for spec in FIELDS.values():
            spec.check(getattr(self, spec.name))
        if self.d_model % self.heads:
            suggest = max(self.heads, round(self.d_model / self.heads) * self.heads)
            raise ConfigError("err.heads_divide", "d_model", d_model=self.d_model, heads=self.heads, suggest=suggest)
        if self.warmup_steps > self.steps:
            raise ConfigError("err.warmup_longer", "warmup_steps", warmup=self.warmup_steps, steps=self.steps)
        if self.ln_scaling and self.norm_position not in LN_SCALING_POSITIONS:
            allowed = ", ".join(LN_SCALING_POSITIONS)
            raise ConfigError("err.ln_scaling_position", "ln_scaling", position=self.norm_position, allowed=allowed)
        if self.adam_init != "zero" and self.optimizer != "adam":
            raise ConfigError("err.adam_init_optimizer", "adam_init", init=self.adam_init, optimizer=self.optimizer)
        if self.qk_clip and self.qk_norm != "none":  # the norm undoes a scaled W_q, W_k: the clip would change nothing
            raise ConfigError("err.qk_clip_qk_norm", "qk_clip", tau=self.qk_clip, qk_norm=self.qk_norm)
        if self.corpus == "user" and self.user_text is None:  # "" is a text, and ln_viz.corpus says it is empty
            raise ConfigError("err.user_text_missing", "user_text")
        if self.device == "cuda":
            import torch

            if not torch.cuda.is_available():
                raise ConfigError("err.device_cuda", "device")
        need = estimate_memory_bytes(self)
        if need > MEMORY_LIMIT_BYTES:
            sizes = {"batch": self.batch_size, "seq": self.seq_len, "depth": self.depth, "d_model": self.d_model}
            raise ConfigError("err.memory", "batch_size", need=_gib(need), limit=_gib(MEMORY_LIMIT_BYTES), **sizes)
        return self


def estimate_memory_bytes(cfg: RunConfig, vocab: int = 256) -> int:
    """Rough peak bytes of one training step (float32): weights with Adam state, plus activations kept
    for backward. Per block and token: about 14 d-wide tensors (norms, q, k, v, attention output,
    residuals), 2 ffn-wide ones, and 2 heads x seq_len attention maps (softmax and its input).
    Measured within a factor of 2 of peak RSS on CPU; used only to refuse absurd sizes up front."""
    d, f, n_tok = cfg.d_model, cfg.ffn_width, cfg.batch_size * cfg.seq_len
    params = cfg.depth * (4 * d * d + 2 * d * f) + vocab * d * 2 + cfg.seq_len * d
    per_token_block = 14 * d + 2 * f + 2 * cfg.heads * cfg.seq_len
    activations = cfg.depth * n_tok * per_token_block + n_tok * vocab * 3
    return 4 * (4 * params + activations)


def _gib(n: int) -> str:
    return f"{n / 1024**3:.1f} GiB"


def _choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ConfigError("err.choice", name, value=value, choices=", ".join(choices))


def _int_range(name: str, value: Any, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise ConfigError("err.not_an_integer", name, value=value)
    if not lo <= value <= hi:
        raise ConfigError("err.range", name, value=value, lo=lo, hi=hi)
    return value


def _finite(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError("err.not_a_number", name, value=value)
    if not math.isfinite(value):
        raise ConfigError("err.not_finite", name, value=value)
    return float(value)


# --- field metadata ------------------------------------------------------------------------------
@dataclass(frozen=True)
class FieldSpec:
    """What one RunConfig field accepts and where it appears: the one declaration from which
    `RunConfig.validate`, the CLI flags (ln_viz/cli/train.py), the URL parser (ln_viz/urlstate.py) and the
    sidebar form (ln_viz/ui/config_form.py) take its range, kind and names."""

    name: str
    kind: type  # int | float | str: how a flag or a URL parameter is parsed
    lo: float | None = None  # int: inclusive; float: exclusive (lr must be > 0) unless `closed`
    hi: float | None = None  # inclusive
    choices: tuple[str, ...] = ()  # str fields with a fixed set of values
    optional: bool = False  # None is allowed (and means a default: d_ff)
    label: str | None = None  # i18n key of the widget's label
    choice_label: str | None = None  # i18n key prefix of each choice's name: f"{choice_label}.{value}"
    widget: str | None = None  # select | slider | select_slider | number; None: not in the form
    step: int = 1  # the number widget's +/- step
    float_step: float = 1e-4  # the float widget's +/- step
    cli: str | None = None  # the flag; None: no flag
    cli_help: str = ""  # the flag's help, without the range (added from lo/hi)
    train_only: bool = False  # a flag of `train` only (init-grads has no optimizer, schedule, ...)
    url: str | None = None  # the short query parameter; None: not in the URL
    closed: bool = False  # float: lo itself is allowed (weight_decay 0 = off)

    def check(self, value: Any) -> None:
        """Raise ConfigError if `value` is not one this field accepts (alone: combinations are
        RunConfig.validate's)."""
        if self.choices:
            _choice(self.name, value, self.choices)
        elif self.kind is bool:
            if not isinstance(value, bool):
                raise ConfigError("err.not_a_bool", self.name, value=value)
        elif self.kind is int and not (self.optional and value is None):
            _int_range(self.name, value, int(self.lo), int(self.hi))
        elif self.kind is float:
            x = _finite(self.name, value)
            if self.closed:
                if not self.lo <= x <= self.hi:
                    raise ConfigError("err.range", self.name, value=x, lo=self.lo, hi=self.hi)
            elif x <= self.lo:
                raise ConfigError("err.positive", self.name, value=x)
            if x > self.hi:  # lr is the only float field; its sentence says why the cap
                raise ConfigError("err.lr_too_high", self.name, value=x, hi=self.hi)

    def parse(self, raw: str) -> Any:
        """A URL parameter's text as this field's kind (int() or float(), as the CLI's argparse types
        parse a flag); ConfigError when it is not one."""
        if self.kind is int:
            try:
                return int(plain_number(raw))
            except ValueError:
                raise ConfigError("err.not_an_integer", self.name, value=raw) from None
        if self.kind is float:
            try:
                return float(plain_number(raw))
            except ValueError:
                raise ConfigError("err.not_a_number", self.name, value=raw) from None
        if self.kind is bool:
            try:
                return on_off(raw)
            except ValueError:
                raise ConfigError("err.not_a_bool", self.name, value=raw) from None
        return raw

    def help(self) -> str:
        """The CLI help: the text, then the choices or the range."""
        if self.choices:
            allowed = "|".join(self.choices)
        elif self.kind is bool:
            allowed = "on or off"
        elif self.closed or self.kind is int:
            allowed = f"{self.lo}-{self.hi}"
        else:
            allowed = f"above {self.lo}, at most {self.hi}"
        return f"{self.cli_help}: {allowed}" if self.cli_help else allowed


BOOL_WORDS = {"true": True, "1": True, "on": True, "false": False, "0": False, "off": False}


def on_off(raw: str) -> bool:
    """A bool field's flag or URL value: on/off, true/false, 1/0 (any case); ValueError otherwise (argparse
    then says "invalid on_off value")."""
    if raw.lower() not in BOOL_WORDS:
        raise ValueError(raw)
    return BOOL_WORDS[raw.lower()]


# One entry per RunConfig field, in field order (the order of validation, of the URL's parameters and of the CLI's
# flags). Ranges are what training can do on one machine; MEMORY_LIMIT_BYTES caps the product of the sizes.
FIELDS: dict[str, FieldSpec] = {
    s.name: s
    for s in [
        FieldSpec("norm_position", str, choices=NORM_POSITIONS, label="ui.norm_position", choice_label="norm",
              widget="select", cli="--norm-position", url="norm"),
        FieldSpec("norm_type", str, choices=NORM_TYPES, label="ui.norm_type", choice_label="normtype", widget="select",
              cli="--norm-type", url="normtype"),
        FieldSpec("depth", int, lo=1, hi=MAX_DEPTH, label="ui.depth", widget="slider", cli="--depth",
              cli_help="number of blocks", url="depth"),
        FieldSpec("d_model", int, lo=4, hi=2048, label="ui.d_model", widget="number", step=8, cli="--d-model",
              cli_help="residual width, divisible by --heads", url="d"),
        FieldSpec("heads", int, lo=1, hi=64, label="ui.heads", widget="number", cli="--heads",
              cli_help="attention heads", url="heads"),
        FieldSpec("d_ff", int, lo=1, hi=16384, optional=True, cli="--d-ff", cli_help="FFN width, default 4 * d_model",
              url="dff"),
        FieldSpec("seq_len", int, lo=2, hi=4096, label="ui.seq_len", widget="number", step=16, cli="--seq-len",
              cli_help="characters per window", url="seq"),
        FieldSpec("batch_size", int, lo=1, hi=4096, label="ui.batch_size", widget="number", step=8, cli="--batch-size",
              cli_help="windows per step", url="batch"),
        FieldSpec("optimizer", str, choices=OPTIMIZERS, label="ui.optimizer", choice_label="optimizer", widget="select",
              cli="--optimizer", train_only=True, url="opt"),
        FieldSpec("lr", float, lo=0.0, hi=MAX_LR, label="ui.lr", widget="select_slider", cli="--lr",
              cli_help="peak learning rate", train_only=True, url="lr"),
        FieldSpec("warmup_steps", int, lo=0, hi=MAX_STEPS, label="ui.warmup", widget="number", step=10, cli="--warmup",
              cli_help="linear warm-up steps, 0 = none", train_only=True, url="warmup"),
        FieldSpec("schedule", str, choices=SCHEDULES, label="ui.schedule", choice_label="schedule", widget="select",
              cli="--schedule", train_only=True, url="sched"),
        FieldSpec("steps", int, lo=1, hi=MAX_STEPS, label="ui.steps", widget="number", step=50, cli="--steps",
              cli_help="optimizer steps", train_only=True, url="steps"),
        FieldSpec("seed", int, lo=0, hi=2**31 - 1, label="ui.seed", widget="number", cli="--seed",
              cli_help="weights and batches", train_only=True, url="seed"),
        FieldSpec("corpus", str, choices=CORPORA, label="ui.corpus", choice_label="corpus", widget="select",
              cli="--corpus", url="corpus"),
        FieldSpec("user_text", str, optional=True),  # a text area and --text-file: checked by ln_viz.corpus
        FieldSpec("probe_every", int, lo=0, hi=MAX_STEPS, label="ui.probe_every", widget="number", cli="--probe-every",
              cli_help="probe every N steps, 0 = off", train_only=True, url="probe"),
        FieldSpec("eval_every", int, lo=0, hi=MAX_STEPS, cli="--eval-every",
              cli_help="held-out loss every N steps, 0 = off", train_only=True, url="eval"),
        FieldSpec("device", str, choices=DEVICES, cli="--device", cli_help="default cpu"),
        FieldSpec("qk_norm", str, choices=QK_NORMS, label="ui.qk_norm", choice_label="qknorm", widget="select",
              cli="--qk-norm", url="qknorm"),
        FieldSpec("weight_decay", float, lo=0.0, hi=10.0, closed=True, label="ui.weight_decay", widget="float",
              cli="--weight-decay", cli_help="decoupled, as torch.optim.AdamW", train_only=True, url="wd"),
        FieldSpec("grad_clip", float, lo=0.0, hi=1000.0, closed=True, label="ui.grad_clip", widget="float",
              cli="--grad-clip", cli_help="max global gradient L2 norm, 0 = off", train_only=True, url="clip"),
        FieldSpec("z_loss", float, lo=0.0, hi=1.0, closed=True, label="ui.z_loss", widget="float", cli="--z-loss",
              cli_help="coefficient of mean(log Z)^2 (PaLM: 1e-4)", train_only=True, url="zloss"),
        FieldSpec("dyt_alpha", float, lo=0.0, hi=10.0, closed=True, label="ui.dyt_alpha", widget="float",
              cli="--dyt-alpha", cli_help="DyT's alpha at initialisation", url="dytalpha"),
        FieldSpec("ln_scaling", bool, label="ui.ln_scaling", widget="checkbox", cli="--ln-scaling",
              cli_help="norm outputs times 1/sqrt(layer) (pre, peri, mix)", url="lnscale"),
        FieldSpec("adam_init", str, choices=ADAM_INITS, label="ui.adam_init", choice_label="adaminit", widget="select",
              cli="--adam-init", cli_help="second moment v0: 0, or g0^2 (GI-Adam)", train_only=True, url="adaminit"),
        FieldSpec("qk_clip", float, lo=0.0, hi=MAX_QK_CLIP, closed=True, label="ui.qk_clip", widget="float",
              float_step=10.0, cli="--qk-clip", train_only=True, url="qkclip",
              cli_help="QK-Clip's tau, the largest attention logit kept (Kimi K2), 0 = off"),
    ]
}  # fmt: skip


# Added by issues 19 and 33: left out of RunConfig.to_dict while at their default (see there).
_OMITTED = ("qk_norm", "weight_decay", "grad_clip", "z_loss", "dyt_alpha", "ln_scaling", "adam_init", "qk_clip")
OMIT_AT_DEFAULT: dict[str, Any] = {f.name: f.default for f in dataclasses.fields(RunConfig) if f.name in _OMITTED}


# --- presets -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Preset:
    """A named configuration with one sentence of what the user should see (message keys)."""

    name: str
    config: RunConfig
    expect_key: str  # i18n key of the sentence "what you should see"


# Preset sizes, by measurement: batch 16 x 32 is a quarter of the paper-like 32 x 64's work per step, so each preset
# shows its effect within 15 s on two cores, two runs at once; it trades a noisier loss and a shorter context (the
# effect holds at 32 x 64: tests/test_paper_claims.py).
_BASE = RunConfig(
    depth=6, d_model=64, heads=4, batch_size=16, seq_len=32, lr=3e-3, steps=300, probe_every=5, eval_every=50
)
_DEEP = _BASE.replace(depth=24, steps=200)
_HIGH = _BASE.replace(norm_position="pre", lr=3e-2)
_MUON = _HIGH.replace(optimizer="muon")

PRESETS: dict[str, Preset] = {
    p.name: p
    for p in [
        Preset("pre-ln-no-warmup", _BASE.replace(norm_position="pre"), "preset.pre-ln-no-warmup"),
        Preset("post-ln-no-warmup", _BASE.replace(norm_position="post"), "preset.post-ln-no-warmup"),
        Preset("post-ln-warmup", _BASE.replace(norm_position="post", warmup_steps=100), "preset.post-ln-warmup"),
        Preset("deep-pre-ln", _DEEP.replace(norm_position="pre"), "preset.deep-pre-ln"),
        Preset("deep-post-ln", _DEEP.replace(norm_position="post"), "preset.deep-post-ln"),
        Preset("deepnorm", _DEEP.replace(norm_position="deepnorm"), "preset.deepnorm"),
        Preset("peri-ln", _BASE.replace(norm_position="peri"), "preset.peri-ln"),
        Preset("no-norm", _BASE.replace(norm_position="none"), "preset.no-norm"),
        # Wortsman et al. 2023's first instability: attention logits grow at a high lr; QK-norm bounds them.
        Preset("high-lr", _HIGH, "preset.high-lr"),
        Preset("high-lr-qk-norm", _HIGH.replace(qk_norm="layernorm"), "preset.high-lr-qk-norm"),
        Preset("very-high-lr", _HIGH.replace(lr=1e-1), "preset.very-high-lr"),
        Preset("very-high-lr-qk-norm", _HIGH.replace(lr=1e-1, qk_norm="layernorm"), "preset.very-high-lr-qk-norm"),
        # The second instability's fix and the norm zoo, each against a preset above (scripts/measure_scenarios.py)
        Preset("z-loss", _BASE.replace(norm_position="pre", z_loss=1e-2), "preset.z-loss"),
        Preset("dyt", _BASE.replace(norm_position="pre", norm_type="dyt"), "preset.dyt"),
        Preset("mix-ln-no-warmup", _BASE.replace(norm_position="mix"), "preset.mix-ln-no-warmup"),
        Preset("deep-pre-ln-lns", _DEEP.replace(norm_position="pre", ln_scaling=True), "preset.deep-pre-ln-lns"),
        Preset("high-lr-warmup", _HIGH.replace(warmup_steps=100), "preset.high-lr-warmup"),  # issue 33, Kosson 2024
        # issue 33: GI-Adam in warm-up's place (Kalra & Barkeshli 2024); OLMo 2's reordered norm against Pre-LN
        Preset("post-ln-gi-adam", _BASE.replace(norm_position="post", adam_init="gi"), "preset.post-ln-gi-adam"),
        Preset("deep-reordered", _DEEP.replace(norm_position="reordered"), "preset.deep-reordered"),
        Preset("high-lr-reordered", _HIGH.replace(norm_position="reordered"), "preset.high-lr-reordered"),
        # issue 33: the high-lr run with Muon on the block matrices (Adam on the rest), then with QK-Clip at tau 30
        Preset("muon-high-lr", _MUON, "preset.muon-high-lr"),
        Preset("muon-high-lr-qk-clip", _MUON.replace(qk_clip=30.0), "preset.muon-high-lr-qk-clip"),
    ]
}
DEFAULT_PRESET = "pre-ln-no-warmup"

# The Compare page's scenarios: two presets (A, B) that differ in one thing, and what to expect.
COMPARE_PRESETS: dict[str, tuple[str, str, str]] = {
    "post-vs-pre": ("post-ln-no-warmup", "pre-ln-no-warmup", "compare.post-vs-pre"),
    "warmup-vs-none": ("post-ln-no-warmup", "post-ln-warmup", "compare.warmup-vs-none"),
    "deep-post-vs-pre": ("deep-post-ln", "deep-pre-ln", "compare.deep-post-vs-pre"),
    "deepnorm-rescue": ("deep-post-ln", "deepnorm", "compare.deepnorm-rescue"),
    "qk-norm-logits": ("high-lr", "high-lr-qk-norm", "compare.qk-norm-logits"),
    "qk-norm-rescue": ("very-high-lr", "very-high-lr-qk-norm", "compare.qk-norm-rescue"),
    "z-loss-logz": ("pre-ln-no-warmup", "z-loss", "compare.z-loss-logz"),
    "dyt-vs-ln": ("pre-ln-no-warmup", "dyt", "compare.dyt-vs-ln"),
    "mix-ln": ("post-ln-no-warmup", "mix-ln-no-warmup", "compare.mix-ln"),
    "lns-deep": ("deep-pre-ln", "deep-pre-ln-lns", "compare.lns-deep"),
    "warmup-angular": ("high-lr", "high-lr-warmup", "compare.warmup-angular"),  # tests/test_update_probes.py
    # issue 33 (tests/test_scenarios.py measures each over 3 seeds)
    "gi-adam": ("post-ln-no-warmup", "post-ln-gi-adam", "compare.gi-adam"),
    "reordered-deep": ("deep-pre-ln", "deep-reordered", "compare.reordered-deep"),
    "reordered-high-lr": ("high-lr", "high-lr-reordered", "compare.reordered-high-lr"),
    "muon-vs-adam": ("high-lr", "muon-high-lr", "compare.muon-vs-adam"),  # these two: tests/test_muon.py
    "muon-qk-clip": ("muon-high-lr", "muon-high-lr-qk-clip", "compare.muon-qk-clip"),
}

DEFAULT_COMPARE = "post-vs-pre"


def preset(name: str) -> RunConfig:
    """The RunConfig of a preset; ConfigError names the choices for an unknown name."""
    if name not in PRESETS:
        raise ConfigError("err.unknown_preset", "preset", value=name, choices=", ".join(PRESETS))
    return PRESETS[name].config
