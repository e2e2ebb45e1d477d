"""A page's configuration in its URL's query parameters, so a scenario can be bookmarked and shared.

`config_to_query` writes every field of a RunConfig that has a URL key in `config.FIELDS` (not the
user's text, which does not fit a URL); `config_from_query` reads them back, ignoring each malformed
parameter with a notice and keeping the default for it, so a mistyped bookmark still opens a working page.
`unknown_params`, `lang_from_query` and `present_from_query` give the notices for the rest of a link: a
parameter no page reads, a language or lecture value that is not one of the choices. `live_link`: the
Live page's address for a stability map's cell.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ln_viz.config import FIELDS, ConfigError, RunConfig
from ln_viz.i18n import DEFAULT_LANG, LANGS, LocalizedError, t
from ln_viz.text import plain_number

if TYPE_CHECKING:
    from ln_viz.sweep.results import CellResult

# short, readable parameter names -> RunConfig fields (config.FIELDS names them)
QUERY_FIELDS: dict[str, str] = {spec.url: spec.name for spec in FIELDS.values() if spec.url}


# where parameters appear: the live page's form has none, the Compare page's sides have "a." and "b."
PREFIXES = ("", "a.", "b.")
# read by ln_viz/ui/language.py, lecture_switch.py, pages/compare.py (the scenario, the seeds per side),
# ln_viz/ui/watch.py (a watched run: ln_viz/watchlink.py), ln_viz/ui/reattach.py (the tab's runs, for a reload),
# ln_viz/ui/runs_view.py (`pair`: the two stored runs the Runs page sent to Compare, for a reload)
PAGE_KEYS = ("lang", "present", "cpreset", "seeds", "watch", "session", "pair")
COMPARE_SEEDS = (1, 8)  # Compare's seeds per side: 8 on each side is 16 runs, already a long wait on 2 cores
PRESENT_ON, PRESENT_OFF = ("1", "true", "yes"), ("0", "false", "no", "")


@dataclasses.dataclass(frozen=True)
class Notice:
    """A query parameter that was ignored: its name, its value, and why (an error with its i18n key and
    params); no reason means ln-viz has no such parameter."""

    param: str
    value: str
    reason: LocalizedError | None = None

    def message(self, lang: str) -> str:
        """The sentence a page shows for it, in `lang` (the value cut short, as every echoed value)."""
        if self.reason is None:
            return t("ui.url_unknown", lang, param=self.param, value=self.value)
        return t("ui.url_ignored", lang, param=self.param, value=self.value, reason=self.reason.message(lang))


def _last(raw: str | list[str]) -> str:
    """A repeated parameter counts once, by its last value (what a browser's address bar shows last)."""
    return (raw[-1] if raw else "") if isinstance(raw, list) else raw


def known_params() -> set[str]:
    """Every parameter some page reads: the fields and preset of each form, the language, the lecture view,
    the Compare page's scenario and the stability map's spec."""
    from ln_viz.sweep.spec import QUERY_KEYS  # the stability map's spec

    names = [*QUERY_FIELDS, "preset"]
    known = {prefix + name for prefix in PREFIXES for name in names} | set(PAGE_KEYS) | set(QUERY_KEYS)
    return known | set(LOSS_VIEW_KEYS)


WATCH_KEYS = ("watch", "present", "lang", "session")  # what a watch link's page reads (or keeps), and the loss view


def ignored_by_watch(params: Mapping[str, str | list[str]]) -> list[str]:
    """The parameters of a watch link that another page reads but the watch page does not (Live's settings, a
    preset, a scenario): it shows the run as it was started. A parameter no page reads has its own notice."""
    known = known_params()
    return [key for key in params if key in known and key not in (*WATCH_KEYS, *LOSS_VIEW_KEYS)]


def unknown_params(params: Mapping[str, str | list[str]]) -> list[Notice]:
    """One Notice for each parameter no page reads (a typo such as `detph=3` would otherwise do nothing)."""
    known = known_params()
    return [Notice(key, _last(raw)) for key, raw in params.items() if key not in known]


def lang_from_query(raw: str | list[str] | None) -> tuple[str, Notice | None]:
    """The language a link asks for: `lang=ko`; another value gives English and a Notice."""
    if raw is None:
        return DEFAULT_LANG, None
    value = _last(raw)
    if value in LANGS:
        return value, None
    err = ConfigError("err.choice", "lang", choices=", ".join(LANGS), value=value)
    return DEFAULT_LANG, Notice("lang", value, err)


def present_from_query(raw: str | list[str] | None) -> tuple[bool | None, Notice | None]:
    """The lecture view from `present=1` (or true, yes; 0, false, no turn it off); None when the link does
    not say. Another value keeps it off, with a Notice."""
    if raw is None:
        return None, None
    value = _last(raw)
    if value.lower() in PRESENT_ON + PRESENT_OFF:
        return value.lower() in PRESENT_ON, None
    err = ConfigError("err.choice", "present", choices=", ".join(PRESENT_ON + PRESENT_OFF[:-1]), value=value)
    return False, Notice("present", value, err)


def seeds_from_query(raw: str | list[str] | None) -> tuple[int, Notice | None]:
    """Compare's seeds per side from `seeds=3`: a whole number in COMPARE_SEEDS; another value gives 1 and
    a Notice (None when the link does not say)."""
    if raw is None:
        return 1, None
    value, (lo, hi) = _last(raw), COMPARE_SEEDS
    try:
        n = int(plain_number(value))
    except ValueError:
        return 1, Notice("seeds", value, ConfigError("err.not_an_integer", "seeds", value=value))
    if not lo <= n <= hi:
        return 1, Notice("seeds", value, ConfigError("err.range", "seeds", lo=lo, hi=hi, value=n))
    return n, None


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
    parameters are fine one by one but not together (say d not divisible by heads), the field each
    check blames goes back to `base`'s value, with a Notice each, until the whole is valid; when a check
    blames a field the link did not set, `base` is kept whole."""
    cfg, notices = base, []
    applied: dict[str, tuple[str, str]] = {}  # field -> (parameter, raw value) the link set
    for short, name in QUERY_FIELDS.items():
        key = prefix + short
        if key not in params:
            continue
        raw = _last(params[key])
        spec = FIELDS[name]
        try:
            value = spec.parse(raw)
            spec.check(value)  # the field alone: combinations are checked once all are applied
        except ConfigError as e:
            notices.append(Notice(key, raw, e))
            continue
        cfg = cfg.replace(**{name: value})
        applied[name] = (key, raw)
    while True:  # each pass reverts one field the link set, so this ends
        try:
            return cfg.validate(), notices
        except ConfigError as e:
            if e.field == "user_text" and "corpus" in applied:  # a link never carries the text: `corpus=user` asked
                e = ConfigError("err.link_user_text", "corpus")
            if e.field not in applied:
                notices.append(Notice(prefix + _short(e.field), str(getattr(cfg, e.field or "", "")), e))
                return base, notices
            key, raw = applied.pop(e.field)
            notices.append(Notice(key, raw, e))
            cfg = cfg.replace(**{e.field: getattr(base, e.field)})


def _short(field: str | None) -> str:
    return next((s for s, n in QUERY_FIELDS.items() if n == field), field or "")


# The loss charts' view (ln_viz/ui/loss_view.py): every page with a loss chart reads them.
LOSS_VIEW_KEYS = ("smooth", "logy")
SMOOTH_MAX = 0.99  # TensorBoard's slider ends there: at 1 the EMA would never move


def smoothing_from_query(raw: str | list[str] | None) -> tuple[float, Notice | None]:
    """The loss charts' smoothing a link asks for: `smooth=0.9` (0 to 0.99, TensorBoard's weight); no
    parameter gives 0 (raw), another value 0 and a Notice."""
    if raw is None:
        return 0.0, None
    value = _last(raw)
    try:
        weight = float(plain_number(value))
    except ValueError:
        return 0.0, Notice("smooth", value, ConfigError("err.not_a_number", "smooth", value=value))
    if not 0.0 <= weight <= SMOOTH_MAX:  # nan fails both comparisons
        return 0.0, Notice("smooth", value, ConfigError("err.range", "smooth", lo=0, hi=SMOOTH_MAX, value=value))
    return weight, None


def log_y_from_query(raw: str | list[str] | None) -> tuple[bool, Notice | None]:
    """The loss on a log axis from `logy=1` (or true, yes; 0, false, no: linear); another value keeps it
    linear, with a Notice."""
    if raw is None:
        return False, None
    value = _last(raw)
    if value.lower() in PRESENT_ON + PRESENT_OFF:
        return value.lower() in PRESENT_ON, None
    return False, Notice("logy", value, ConfigError("err.not_a_bool", "logy", value=value))


def loss_view_to_query(smoothing: float, log_y: bool) -> dict[str, str]:
    """The loss charts' settings as query parameters: each only when it is not the default."""
    out = {"smooth": f"{smoothing:g}"} if smoothing > 0 else {}
    return out | ({"logy": "1"} if log_y else {})


def live_link(r: CellResult, lang: str, lecture: bool) -> str:
    """The Live page's address with this cell's config, the language and the lecture view (Live reads the
    URL when a session starts: the link loads the page afresh, in the same tab, see `live_link_html`)."""
    from urllib.parse import urlencode

    cfg = RunConfig.from_dict(r.config).replace(probe_every=10, eval_every=50)  # the Live page's probes
    query = config_to_query(cfg) | {"lang": lang} | ({"present": "1"} if lecture else {})
    return "./?" + urlencode(query)


def live_link_html(url: str, label: str) -> str:
    """A link drawn as a button that opens `url` in this tab (st.link_button always opens a new one)."""
    from html import escape

    style = (
        "display:inline-block;padding:0.25rem 0.75rem;border:1px solid rgba(49,51,63,0.2);border-radius:0.5rem;"
        "color:inherit;text-decoration:none"
    )
    return f'<a href="{escape(url)}" target="_self" style="{style}">{escape(label)}</a>'
