"""Every user-facing sentence of ln-viz, in English and Korean: the catalogs and the function that reads them.

The sentences live in `ln_viz/locales/<lang>.toml`, one file per language, read once at import; the Theory page's
prose lives apart, in `ln_viz/content/` (see `ln_viz/theory.py`). The engine raises errors carrying a message key
and its parameters; the CLI prints the English text, the app prints the text of the language the user picked.
Pages never hard-code a sentence: they call `t(key, lang, **params)`. `tests/test_i18n.py` checks both catalogs
have the same keys and placeholders.
"""

from __future__ import annotations

import string
import tomllib
from importlib import resources

from ln_viz.text import ECHO_LIMITS, Echo

LANGS = ("en", "ko")
DEFAULT_LANG = "en"


def flatten_catalog(table: dict[str, object], prefix: str = "") -> dict[str, str]:
    """{"err": {"range": s}} -> {"err.range": s}: TOML's dotted keys are nested tables, ours are flat strings."""
    flat: dict[str, str] = {}
    for name, value in table.items():
        key = prefix + name
        items = flatten_catalog(value, key + ".") if isinstance(value, dict) else {key: value}
        for k, v in items.items():
            if not isinstance(v, str):
                raise TypeError(f"catalog key {k!r} holds a {type(v).__name__}, not a string")
            if k in flat:  # `"a.b" = ...` beside `a.b = ...`: TOML allows both, the catalog cannot
                raise KeyError(f"catalog key {k!r} is defined twice")
            flat[k] = v
    return flat


def load_catalog(lang: str) -> dict[str, str]:
    """The catalog of `lang` from ln_viz/locales/<lang>.toml, as {dotted key: template}."""
    text = resources.files(__package__).joinpath("locales", f"{lang}.toml").read_text(encoding="utf-8")
    return flatten_catalog(tomllib.loads(text))


EN: dict[str, str] = load_catalog("en")
KO: dict[str, str] = load_catalog("ko")
CATALOGS: dict[str, dict[str, str]] = {"en": EN, "ko": KO}


def t(key: str, lang: str = DEFAULT_LANG, **params: object) -> str:
    """The sentence `key` in `lang`, with `params` filled in. Unknown languages fall back to English.
    A string parameter that echoes a value from outside (`value`, `path`, ... : `ln_viz.text.ECHO_LIMITS`)
    is shown on one line and cut to a short prefix with its length, so no sentence grows with its input."""
    catalog = CATALOGS.get(lang, EN)
    template = catalog.get(key)
    if template is None:
        template = EN[key]  # a missing key is our bug: KeyError names it
    note = catalog.get("text.length", EN["text.length"])
    for name, limit in ECHO_LIMITS.items():
        if isinstance(params.get(name), str):
            params[name] = Echo(params[name], limit, note)
    return template.format(**params)


def placeholders(template: str) -> set[str]:
    """The names of the `{placeholders}` in a template (used by the catalog test)."""
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


class LocalizedError(ValueError):
    """An error a user can cause: one sentence, translatable.

    `str(err)` is the English sentence; `err.message(lang)` gives it in another language.
    """

    def __init__(self, key: str, field: str | None = None, **params: object) -> None:
        self.key = key
        self.field = field
        self.params = dict(params)
        if field is not None:
            self.params.setdefault("field", field)
        super().__init__(t(key, "en", **self.params))

    def message(self, lang: str = DEFAULT_LANG) -> str:
        return t(self.key, lang, **self.params)
