"""What a run's label and times may be, and how a time is written: the rules the run file (ln_viz.runfile)
and the store (ln_viz.store) both hold a run to, in one leaf module that both import."""

from __future__ import annotations

import re
from datetime import UTC, datetime

MAX_LABEL_CHARS = 200
_SURROGATE = re.compile("[\ud800-\udfff]")
# A run's times: after 1970 and before 3000 (what time.time() gives), so every page, table and export can
# show them in any time zone; an import refuses others, and a row holding one is shown as damaged.
TIME_RANGE = (0.0, datetime(3000, 1, 1, tzinfo=UTC).timestamp())


def in_time_range(x: object) -> bool:
    """Whether `x` is unix seconds within TIME_RANGE (a number, not a bool)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and TIME_RANGE[0] <= x < TIME_RANGE[1]


def iso_time(t: float | None) -> str | None:
    """Unix seconds as ISO 8601 UTC text to the millisecond (what the run file round-trips), or None."""
    if t is None:
        return None
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds")


def first_surrogate(text: str) -> int | None:
    """The 1-based position of the first lone surrogate in `text`, or None. Such a character is no Unicode
    text: a command line's non-UTF-8 byte (Python keeps it as U+DC80-U+DCFF) or a JSON `\\ud800` escape
    without its pair; SQLite, a terminal and a page all refuse to encode it."""
    m = _SURROGATE.search(text)
    return None if m is None else m.start() + 1
