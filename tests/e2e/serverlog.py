"""Reading the app's server log in the browser tests: the tracebacks that are ln-viz's to answer for.

One traceback is not: Streamlit's own websocket endpoint (1.67, on Starlette) logs "Exception in ASGI application"
with a `starlette.websockets.WebSocketDisconnected` chain when a browser drops its websocket before the server
has accepted it (a page closed while it reconnects). Every frame of it is inside the installed packages, and
nothing of the app ran. CI met it once in ~100 browser tests (stop 40). `tracebacks` leaves out exactly such a
block, and keeps every other one, a Starlette one with a frame of ours included.
"""

from __future__ import annotations

import re

_HEADER = "Exception in ASGI application"
_FRAME = re.compile(r'^\s+File "([^"]+)", line \d+')
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(: .*)?$")
_CHAIN = ("Traceback (most recent call last):", "During handling of the above exception, another exception occurred:",
          "The above exception was the direct cause of the following exception:")  # fmt: skip
_CLIENT_GONE = "starlette.websockets.WebSocketDisconnected"


def _block_end(lines: list[str], start: int) -> int:
    """The index after the traceback that starts at `lines[start]` (its header line): frames, then an exception
    line, then either a chain separator ("During handling ...") and the next traceback, or the end."""
    i = start + 1
    while i < len(lines):
        line = lines[i]
        if line.startswith((" ", "\t")) or line == _CHAIN[0]:
            i += 1
        elif _EXCEPTION.match(line):
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            if j < len(lines) and lines[j] in _CHAIN[1:]:
                i = j + 1  # the chain goes on
                while i < len(lines) and not lines[i].strip():
                    i += 1
            else:
                return i + 1
        else:
            return i
    return i


def _client_gone(block: list[str]) -> bool:
    """Streamlit's dropped-websocket traceback, and nothing else: every frame in the installed packages and none
    of ln-viz's, every traceback of the chain ending on starlette's WebSocketDisconnected (one per "Traceback"),
    the block ending on one, and no exception group (whose `|`-prefixed frames could hide anything)."""
    lines = [line for line in block if line.strip()]
    files = [m.group(1) for m in map(_FRAME.match, lines) if m]
    raised = [line for line in lines[1:] if not line.startswith((" ", "\t")) and line not in _CHAIN]
    gone = [line for line in raised if line == _CLIENT_GONE or line.startswith(_CLIENT_GONE + ":")]
    ours = ("/ln_viz/", "/app.py", "/pages/", "/tests/")
    return (
        bool(files)
        and all("site-packages" in f and not any(o in f for o in ours) for f in files)
        and not any(line.lstrip().startswith(("|", "+")) for line in lines)
        and len(gone) == len(raised) == sum(line == _CHAIN[0] for line in lines)
        and lines[-1] in gone
    )


def tracebacks(log: str) -> str:
    """`log` without Streamlit's dropped-websocket tracebacks (the module's docstring): "Traceback" in what it
    returns is a traceback of ln-viz's to answer for."""
    lines = log.splitlines()
    kept: list[str] = []
    i = 0
    while i < len(lines):
        if lines[i] == _HEADER:
            end = _block_end(lines, i)
            if not _client_gone(lines[i:end]):
                kept.extend(lines[i:end])
            i = end
        else:
            kept.append(lines[i])
            i += 1
    return "\n".join(kept)
