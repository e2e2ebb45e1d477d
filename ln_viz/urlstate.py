"""A page's configuration in its URL's query parameters, so a scenario can be bookmarked and shared.

`config_to_query` writes every field of a RunConfig that has a URL key in `config.FIELDS` (not the
user's text, which does not fit a URL); `config_from_query` reads them back, ignoring each malformed
parameter with a notice and keeping the default for it, so a mistyped bookmark still opens a working page.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ln_viz.config import FIELDS, ConfigError, RunConfig

# short, readable parameter names -> RunConfig fields (config.FIELDS names them)
QUERY_FIELDS: dict[str, str] = {spec.url: spec.name for spec in FIELDS.values() if spec.url}


@dataclasses.dataclass(frozen=True)
class Notice:
    """A query parameter that was ignored: its name, its value, and why (an i18n key with params)."""

    param: str
    value: str
    reason: ConfigError


def config_to_query(cfg: RunConfig, prefix: str = "") -> dict[str, str]:
    """The query parameters of `cfg`: every field with a URL key, but unset ones and the user's text."""
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
        spec = FIELDS[name]
        try:
            value = spec.parse(raw)
            spec.check(value)  # the field alone: combinations are checked once all are applied
        except ConfigError as e:
            notices.append(Notice(key, raw, e))
            continue
        cfg = cfg.replace(**{name: value})
    try:
        cfg.validate()
    except ConfigError as e:
        notices.append(Notice(prefix + _short(e.field), str(getattr(cfg, e.field or "", "")), e))
        cfg = base
    return cfg, notices


def _short(field: str | None) -> str:
    return next((s for s, n in QUERY_FIELDS.items() if n == field), field or "")
