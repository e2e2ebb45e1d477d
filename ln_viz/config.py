"""RunConfig: everything that defines a training run, validated, plus the named presets."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from ln_viz.i18n import LocalizedError

NORM_POSITIONS = ("post", "pre", "peri", "deepnorm", "none")
NORM_TYPES = ("layernorm", "rmsnorm")
OPTIMIZERS = ("adam", "sgd")
SCHEDULES = ("constant", "inverse_sqrt", "cosine")
CORPORA = ("english", "markov", "user")
DEVICES = ("cpu", "cuda")

ADAM_BETAS = (0.9, 0.98)  # Xiong et al. 2020, section 4 (and Vaswani et al. 2017)
ADAM_EPS = 1e-8  # torch's default; our probes show grads far larger than this
MAX_DEPTH = 48
MAX_LR = 10.0
MAX_STEPS = 100_000
MEMORY_LIMIT_BYTES = 8 * 1024**3  # what one training run may take on a 24 GiB, 2-core machine


class ConfigError(LocalizedError):
    """A bad RunConfig field: names the field and says what to change."""


@dataclass(frozen=True)
class RunConfig:
    """One training run. Field names are the paper's words; the CLI flags are the same with dashes."""

    norm_position: str = "pre"  # post: LN(x+F(x)); pre: x+F(LN(x)) + final LN; peri; deepnorm; none
    norm_type: str = "layernorm"  # layernorm | rmsnorm
    depth: int = 6  # number of transformer blocks, L
    d_model: int = 64  # residual stream width, d
    heads: int = 4  # attention heads; d_model must be divisible by heads
    d_ff: int | None = None  # FFN hidden width; None means 4 * d_model
    seq_len: int = 64  # tokens (characters) per training window
    batch_size: int = 32  # windows per step
    optimizer: str = "adam"  # adam (betas 0.9, 0.98 as in the paper) | sgd
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

    @property
    def ffn_width(self) -> int:
        return self.d_ff if self.d_ff is not None else 4 * self.d_model

    def replace(self, **changes: Any) -> RunConfig:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunConfig:
        """Build from a dict (JSON, URL), ignoring unknown keys; call `validate()` on the result."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def validate(self) -> RunConfig:
        """Raise ConfigError on the first bad field; return self so calls can chain."""
        _choice("norm_position", self.norm_position, NORM_POSITIONS)
        _choice("norm_type", self.norm_type, NORM_TYPES)
        _int_range("depth", self.depth, 1, MAX_DEPTH)
        _int_range("d_model", self.d_model, 4, 2048)
        _int_range("heads", self.heads, 1, 64)
        if self.d_model % self.heads:
            suggest = max(self.heads, round(self.d_model / self.heads) * self.heads)
            raise ConfigError(
                "err.heads_divide",
                "d_model",
                d_model=self.d_model,
                heads=self.heads,
                suggest=suggest,
            )
        if self.d_ff is not None:
            _int_range("d_ff", self.d_ff, 1, 16384)
        _int_range("seq_len", self.seq_len, 2, 4096)
        _int_range("batch_size", self.batch_size, 1, 4096)
        _choice("optimizer", self.optimizer, OPTIMIZERS)
        lr = _finite("lr", self.lr)
        if lr <= 0:
            raise ConfigError("err.positive", "lr", value=lr)
        if lr > MAX_LR:
            raise ConfigError("err.lr_too_high", "lr", value=lr, hi=MAX_LR)
        _int_range("steps", self.steps, 1, MAX_STEPS)
        _int_range("warmup_steps", self.warmup_steps, 0, MAX_STEPS)
        if self.warmup_steps > self.steps:
            raise ConfigError(
                "err.warmup_longer",
                "warmup_steps",
                warmup=self.warmup_steps,
                steps=self.steps,
            )
        _choice("schedule", self.schedule, SCHEDULES)
        _int_range("seed", self.seed, 0, 2**31 - 1)
        _choice("corpus", self.corpus, CORPORA)
        if self.corpus == "user" and not self.user_text:
            raise ConfigError("err.user_text_missing", "user_text")
        _int_range("probe_every", self.probe_every, 0, MAX_STEPS)
        _int_range("eval_every", self.eval_every, 0, MAX_STEPS)
        _choice("device", self.device, DEVICES)
        if self.device == "cuda":
            import torch

            if not torch.cuda.is_available():
                raise ConfigError("err.device_cuda", "device")
        need = estimate_memory_bytes(self)
        if need > MEMORY_LIMIT_BYTES:
            raise ConfigError(
                "err.memory",
                "batch_size",
                need=_gib(need),
                limit=_gib(MEMORY_LIMIT_BYTES),
                batch=self.batch_size,
                seq=self.seq_len,
                depth=self.depth,
                d_model=self.d_model,
            )
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


# --- presets -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Preset:
    """A named configuration with one sentence of what the user should see (message keys)."""

    name: str
    config: RunConfig
    expect_key: str  # i18n key of the sentence "what you should see"


# Preset sizes, chosen by measurement (issue notes; benchmarks/): batch 16 x 32 characters is a quarter
# of the work per step of the paper-like 32 x 64, so every preset shows its effect within 15 s on two
# cores, also with two runs side by side. What it trades: a noisier loss and a shorter context. The
# effect is the same at 32 x 64 (tests/test_paper_claims.py trains that size).
_BASE = RunConfig(
    depth=6, d_model=64, heads=4, batch_size=16, seq_len=32, lr=3e-3, steps=300, probe_every=5, eval_every=50
)
_DEEP = _BASE.replace(depth=24, steps=200)

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
    ]
}
DEFAULT_PRESET = "pre-ln-no-warmup"

# The Compare page's scenarios: two presets (A, B) that differ in one thing, and what to expect.
COMPARE_PRESETS: dict[str, tuple[str, str, str]] = {
    "post-vs-pre": ("post-ln-no-warmup", "pre-ln-no-warmup", "compare.post-vs-pre"),
    "warmup-vs-none": ("post-ln-no-warmup", "post-ln-warmup", "compare.warmup-vs-none"),
    "deep-post-vs-pre": ("deep-post-ln", "deep-pre-ln", "compare.deep-post-vs-pre"),
    "deepnorm-rescue": ("deep-post-ln", "deepnorm", "compare.deepnorm-rescue"),
}
DEFAULT_COMPARE = "post-vs-pre"


def preset(name: str) -> RunConfig:
    """The RunConfig of a preset; ConfigError names the choices for an unknown name."""
    if name not in PRESETS:
        raise ConfigError("err.unknown_preset", "preset", value=name, choices=", ".join(PRESETS))
    return PRESETS[name].config
