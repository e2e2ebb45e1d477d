"""A page's configuration in its URL's query parameters, so a scenario can be bookmarked and shared.

`config_to_query` writes every field of a RunConfig (but the user's text, which does not fit a URL);
`config_from_query` reads them back, ignoring each malformed parameter with a notice and keeping the
default for it, so a mistyped bookmark still opens a working page.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from ln_viz.config import ConfigError, RunConfig

# short, readable parameter names -> RunConfig fields
QUERY_FIELDS: dict[str, str] = {
    "norm": "norm_position",
    "normtype": "norm_type",
    "depth": "depth",
    "d": "d_model",
    "heads": "heads",
    "dff": "d_ff",
    "seq": "seq_len",
    "batch": "batch_size",
    "opt": "optimizer",
    "lr": "lr",
    "warmup": "warmup_steps",
    "sched": "schedule",
    "steps": "steps",
    "seed": "seed",
    "corpus": "corpus",
    "probe": "probe_every",
    "eval": "eval_every",
}
_FIELD_TYPES = {f.name: f.type for f in dataclasses.fields(RunConfig)}


@dataclasses.dataclass(frozen=True)
class Notice:
    """A query parameter that was ignored: its name, its value, and why (an i18n key with params)."""

    param: str
    value: str
    reason: ConfigError


def config_to_query(cfg: RunConfig, prefix: str = "") -> dict[str, str]:
    out = {}
    for short, name in QUERY_FIELDS.items():
        value = getattr(cfg, name)
        if value is None or (name == "corpus" and value == "user"):
            continue
        out[prefix + short] = _fmt(value)
    return out


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _parse(name: str, raw: str) -> Any:
    kind = str(_FIELD_TYPES[name])
    if "int" in kind:
        try:
            return int(raw)
        except ValueError:
            raise ConfigError("err.not_an_integer", name, value=raw) from None
    if "float" in kind:
        try:
            value = float(raw)
        except ValueError:
            raise ConfigError("err.not_a_number", name, value=raw) from None
        if not math.isfinite(value):
            raise ConfigError("err.not_finite", name, value=raw)
        return value
    return raw


def config_from_query(
    params: Mapping[str, str | list[str]], base: RunConfig, prefix: str = ""
) -> tuple[RunConfig, list[Notice]]:
    """`base` with every well-formed parameter applied; each bad one is skipped with a Notice. If the
    parameters are fine one by one but not together (say d not divisible by heads), `base` is kept
    whole and the combination is reported."""
    cfg, notices = base, []
    for short, name in QUERY_FIELDS.items():
        key = prefix + short
        if key not in params:
            continue
        raw = params[key]
        raw = raw[-1] if isinstance(raw, list) else raw
        try:
            candidate = cfg.replace(**{name: _parse(name, raw)})
            _check_field(candidate, name)
        except ConfigError as e:
            notices.append(Notice(key, raw, e))
            continue
        cfg = candidate
    try:
        cfg.validate()
    except ConfigError as e:
        notices.append(Notice(prefix + _short(e.field), str(getattr(cfg, e.field or "", "")), e))
        cfg = base
    return cfg, notices


def _short(field: str | None) -> str:
    return next((s for s, n in QUERY_FIELDS.items() if n == field), field or "")


def _check_field(cfg: RunConfig, name: str) -> None:
    """Validate and report only errors about `name` itself (combinations are checked at the end)."""
    try:
        cfg.validate()
    except ConfigError as e:
        if e.field == name and e.key != "err.heads_divide" and e.key != "err.warmup_longer":
            raise
