"""A run's watch link: `?watch=<run id>` on the Live page opens that run read-only, live, in any browser.

The id is the store's run number (the one the Runs page and `runs list` show), for a run training now as
for one finished long ago: the recorder stores a run from its first step. `parse_watch_id` reads the
link's value (one sentence for anything that is not a run number), `watch_url` builds the link from the
address the visitor's browser shows, `only_this_computer` says when no student could open it, and
`qr_png` draws it as a QR code for the projector (segno, pure Python).
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from urllib.parse import urlencode, urlsplit, urlunsplit

from ln_viz.i18n import LocalizedError

WATCH_PARAM = "watch"
MAX_ID_DIGITS = 12  # SQLite's ids fit; a longer "number" is a typo or a probe, refused before any query


class WatchLinkError(LocalizedError):
    """A watch link's value that is no run number, or names no run this server has (one sentence)."""


def parse_watch_id(raw: str | list[str] | None) -> int:
    """The run number of `?watch=12` (a repeated parameter counts by its last value). Anything else (empty,
    not digits, 0, too long) raises WatchLinkError, whose sentence quotes the value cut short."""
    value = (raw[-1] if raw else "") if isinstance(raw, list) else (raw or "")
    text = value.strip()
    if not text.isascii() or not text.isdigit() or len(text) > MAX_ID_DIGITS or int(text) < 1:
        raise WatchLinkError("watch.bad_id", value=value)
    return int(text)


LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1", "[::1]", "0.0.0.0")


def is_loopback(host: str | None) -> bool:
    return bool(host) and (host.lower() in LOOPBACK_HOSTS or host.startswith("127."))


def watch_url(
    app_url: str | None, run_id: int, lang: str, page_paths: Iterable[str] = (), network_host: str | None = None
) -> str:
    """The watch link of run `run_id` on the Live page (the app's default page), from `app_url`, the
    address the visitor's browser shows (Streamlit's `st.context.url`: scheme, host, port, path, no query):
    its path keeps the server's base path but loses a page's own (`page_paths`, e.g. "runs"), so a link
    copied on the Runs page also opens Live. `lang` is kept, so a Korean class gets Korean. Without an
    address (a test, an old browser) the link is relative: `/?watch=12&lang=en`. `network_host`: the address
    the server is reached at from the network, put in place of a loopback host (localhost, 127.x)."""
    query = urlencode({WATCH_PARAM: str(run_id), "lang": lang})
    if not app_url:
        return f"/?{query}"
    parts = urlsplit(app_url)
    netloc = parts.netloc
    if network_host and is_loopback(parts.hostname):  # the presenter's own browser opened localhost:8501, which
        netloc = network_host + (f":{parts.port}" if parts.port else "")  # no student's phone can open
    segments = [s for s in parts.path.split("/") if s]
    if segments and segments[-1] in set(page_paths):
        segments.pop()
    path = "/" + "".join(s + "/" for s in segments)
    return urlunsplit((parts.scheme, netloc, path, query, ""))


def only_this_computer(url: str) -> bool:
    """Whether nobody but this computer can open `url`: its host is a loopback address (the server listens
    on 127.0.0.1, the default, so `watch_url` had no network address to put in). Such a link gets no QR code,
    only the sentence that says so and how to share it; a relative link (no browser address) is not judged."""
    return is_loopback(urlsplit(url).hostname)


def short_text(url: str) -> str:
    """The link as it is read aloud or typed from the projector: without `http://` or `https://`."""
    for scheme in ("https://", "http://"):
        if url.startswith(scheme):
            return url[len(scheme) :]
    return url


def qr_png(url: str, scale: int = 8) -> bytes:
    """`url` as a QR code, a PNG of `scale` pixels per module with the standard quiet zone (error
    correction M: readable from the back of a room off a projector)."""
    import segno  # only where a link is drawn: the CLI never needs it

    out = io.BytesIO()
    segno.make(url, error="m", micro=False).save(out, kind="png", scale=scale, border=4)
    return out.getvalue()


# A watcher's page re-runs its charts on the server at every refresh (a script run, six figures serialised and
# sent: ~30-40 ms of the server's one Python thread at a time). Measured with benchmarks/load_test.py
# --watchers on the 2-core machine, refreshing every second: 40 watchers got 32 refreshes/s and a health check
# at 1.0 s; 60 got 8/s (each page moved every 7 s) and the health check took 3.5 s. So the watchers of the
# server share a budget of refreshes: up to WATCH_BUDGET_PER_S watchers refresh every second, more every
# ceil(n / budget) seconds (60: 3 s), never slower than WATCH_MAX_PERIOD_S. With that at 5 s and no cap, 240 watchers
# made ~48 refreshes a second, the health check took up to 13 s and another visitor's first step came 30 s after
# Start (hostile round 4, M7; 0.21 s at 120). A period of 12 s held 240 to 16 refreshes a second, but their pages'
# refreshes still queued (p50 4 s) and a visitor's Start trained nothing in 15 s (load_test --watchers 240). So a
# tab past WATCH_MAX_WATCHERS, the budget's worth at the longest period, is told so instead of being served.
WATCH_BUDGET_PER_S = 20
WATCH_MAX_PERIOD_S = 6
WATCH_MAX_WATCHERS = WATCH_BUDGET_PER_S * WATCH_MAX_PERIOD_S
WATCHER_TTL_S = 15.0  # a watcher not seen for this long has closed its tab


class Watchers:
    """The server's watcher tabs (session ids, last seen), and the refresh period they share."""

    def __init__(self) -> None:
        import threading

        self._seen: dict[str, float] = {}
        self._lock = threading.Lock()

    def seen(self, session: str, now: float) -> int:
        """Record `session` as watching at `now` (s, monotonic); how many watch now."""
        with self._lock:
            self._seen[session] = now
            self._forget_closed(now)
            return len(self._seen)

    def full(self, session: str, now: float) -> bool:
        """Whether `session`, not watching yet, would be one too many (WATCH_MAX_WATCHERS watch already)."""
        with self._lock:
            self._forget_closed(now)
            return session not in self._seen and len(self._seen) >= WATCH_MAX_WATCHERS

    def _forget_closed(self, now: float) -> None:
        """Drop the tabs not seen for WATCHER_TTL_S (closed); the caller holds the lock."""
        for s in [s for s, t in self._seen.items() if now - t > WATCHER_TTL_S]:
            del self._seen[s]

    def leave(self, session: str) -> None:
        with self._lock:
            self._seen.pop(session, None)


def watch_period(watchers: int) -> int:
    """Seconds between a watcher's refreshes when `watchers` tabs watch: 1 up to the budget, then longer."""
    return max(1, min(WATCH_MAX_PERIOD_S, -(-watchers // WATCH_BUDGET_PER_S)))
