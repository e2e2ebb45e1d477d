"""What a run's label and times may be, and how a time is written: the rules the run file (ln_viz.runfile)
and the store (ln_viz.store) both hold a run to, in one leaf module that both import."""

from __future__ import annotations

from datetime import UTC, datetime

MAX_LABEL_CHARS = 200
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
