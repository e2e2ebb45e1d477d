"""Text that came from outside (a label, a file name, a link's value, a run file's field), as it is shown back.

One place decides how such a value is echoed, so no message can grow with its input or smuggle a control
character into a terminal: `one_line` makes every control character a visible escape (a newline is `\\n`,
an escape sequence starts with `\\x1b`), `shown` does that and cuts the value to a short prefix that says
the full length, and `quoted` is `shown` in quotes, the way `{value!r}` prints it. `Echo` wraps a value so
that `ln_viz.i18n.t` applies these to the parameters named in `ECHO_LIMITS`, in every sentence and language.
The app's Markdown escaping is in `ln_viz/ui/safe.py`.
"""

from __future__ import annotations

import re
import reprlib

# parameter name in the catalogs -> the longest prefix shown; a path or an error (a worker's exception) gets
# more, as real ones are long. Not `reason`: it holds whole sentences, whose own values are cut already.
ECHO_LIMITS: dict[str, int] = {
    "value": 80,
    "param": 80,
    "name": 80,
    "where": 80,
    "address": 80,
    "path": 240,
    "error": 240,
}
DEFAULT_LIMIT = 80
_REPR = reprlib.Repr()  # Python 3.11's Repr takes no arguments
_REPR.maxlevel, _REPR.maxlist, _REPR.maxtuple, _REPR.maxdict, _REPR.maxset = 2, 4, 4, 4, 4
_REPR.maxstring = _REPR.maxother = _REPR.maxlong = DEFAULT_LIMIT
LENGTH_NOTE = "({count} characters)"  # the English note; i18n passes the catalog's `text.length`

# C0 and C1 controls, DEL, the line and paragraph separators, the bidirectional overrides that can
# make a terminal show text in another order than it is stored, and lone surrogates (a non-UTF-8 byte of a
# command line, a JSON `\ud800` escape without its pair), which no UTF-8 terminal or page can encode
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069\u061c\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    c = match.group()
    return _NAMED.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def plain_number(raw: str) -> str:
    """`raw` when it is written in ASCII without '_': int() and float() also take 1_0 (10) and Arabic-Indic
    or full-width digits, which no link, flag or form means as a number (hostile round 4, L6); ValueError
    otherwise, as int() raises for text that is no number."""
    if not raw.isascii() or "_" in raw:
        raise ValueError(f"not a plain number: {raw!r}")
    return raw


def one_line(text: str) -> str:
    """`text` with every control character as a visible escape (`\\n`, `\\t`, `\\x1b`, `\\u202e`): one
    line that cannot move a terminal's cursor, change its colours or start a fake row."""
    return _CONTROL.sub(_escape, text)


def error_line(e: BaseException, *, named: bool = True, last: bool = False) -> str:
    """An exception as one English line for a log, a table cell or a sentence: `ValueError: the first line
    of its message` (`last`: the last line, where a remote task's traceback ends in its cause), without the
    type's name when not `named`; the type's name alone when the message is empty."""
    lines = str(e).strip().splitlines()
    if not lines:
        return type(e).__name__
    line = lines[-1 if last else 0]
    return f"{type(e).__name__}: {line}" if named else line


def _cut(text: str, limit: int) -> tuple[str, bool]:
    return (text, False) if len(text) <= limit else (text[:limit], True)


def shown(value: str, limit: int = DEFAULT_LIMIT, note: str = LENGTH_NOTE) -> str:
    """`value` on one line (`one_line`), cut to `limit` characters with its full length said:
    `aaaa… (1,000,000 characters)`."""
    head, cut = _cut(value, limit)
    head = one_line(head)
    return f"{head}… {note.format(count=f'{len(value):,}')}" if cut else head


def quoted(value: object, limit: int = DEFAULT_LIMIT, note: str = LENGTH_NOTE) -> str:
    """`repr(value)` (so a string is in quotes, its control characters escaped), cut like `shown`:
    `'aaaa…' (1,000,000 characters)`. Never raises, whatever the value (a 5,000-digit int included)."""
    if isinstance(value, str):
        head, cut = _cut(value, limit)
        text = repr(head)
        return f"{text[:-1]}…{text[-1]} {note.format(count=f'{len(value):,}')}" if cut else text
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 3 * limit:
        digits = int(value.bit_length() * 0.30103) + 1  # repr refuses ints over 4,300 digits: no prefix
        return f"<an integer of about {digits:,} digits>"
    try:  # reprlib: a container's repr stops after a few items and levels, before it can cost seconds
        text = _REPR.repr(value) if isinstance(value, (list, tuple, dict, set)) else repr(value)
    except Exception:  # noqa: BLE001 -- an echo must not fail: say what it was instead
        return f"<{type(value).__name__}>"
    return shown(text, limit, note)


class Echo:
    """A value from outside, as a sentence's parameter: `{p}` gives `shown(value)`, `{p!r}` gives
    `quoted(value)`, both cut to `limit` and noting the length with `note` (the sentence's language)."""

    __slots__ = ("value", "limit", "note")

    def __init__(self, value: object, limit: int = DEFAULT_LIMIT, note: str = LENGTH_NOTE) -> None:
        self.value, self.limit, self.note = value, limit, note

    def __str__(self) -> str:
        if not isinstance(self.value, str):  # a number or a list from a file: as repr, cut the same way
            return quoted(self.value, self.limit, self.note)
        return shown(self.value, self.limit, self.note)

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def __repr__(self) -> str:
        return quoted(self.value, self.limit, self.note)
