"""A reload keeps the tab's runs (issue 32, UX round 4 M7: a reload during a run stopped it, and after a reload
Live showed empty charts and Compare no longer its pair, its pack or its video buttons).

A reload is a new Streamlit session: the old one's session state is gone and its SessionRuns released (which
stopped its runs). So the tab's address carries its runs' owner token (`session=`, written while it has runs:
`keep_in_link`), and a released tab's runs are kept aside (`release`) instead of stopped: a run that still trains
for GRACE_S seconds, the runs themselves for KEEP_S. A new session whose address names them takes them over
(`adopt_from_link`), and the pages show them as before, since the address also carries the settings that
started them. Only runs of a tab that has gone are taken over: a link copied from a tab that is still open (a
lecturer's address shared with the class) names runs nobody can take, and the token (48 random bits) is not
guessable."""

from __future__ import annotations

import threading
import time
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

import streamlit as st

from ln_viz.ui import keys

if TYPE_CHECKING:
    from ln_viz.server.runs import SessionRuns

SESSION_PARAM = "session"
GRACE_S = 6.0  # a released tab's training runs wait this long for its reload before they stop (a reload: ~1-3 s)
KEEP_S = 600.0  # its runs, ended or stopped, can be taken over this long (then forgotten: the store keeps them)
MAX_KEPT = 32  # released tabs kept at once (the oldest go first): closed tabs cannot pile up runs in memory
ARRIVAL_WAIT_S = 1.5  # a reload's new session can run before the old one is released: wait that long for it


@dataclass
class _Released:
    runs: SessionRuns
    at: float
    stop_timer: threading.Timer
    drop_timer: threading.Timer


_lock = threading.Lock()
_released: dict[str, _Released] = {}  # owner token -> a released tab's runs
_open: weakref.WeakValueDictionary[str, SessionRuns] = weakref.WeakValueDictionary()  # the tabs not released yet


def release(runs: SessionRuns) -> None:
    """A tab's session has ended (closed, or reloaded): keep its runs for its reload (see the module)."""
    with _lock:
        _open.pop(runs.owner, None)
    if not runs.runs:
        return
    stop = threading.Timer(GRACE_S, _stop_training, (runs.owner,))
    drop = threading.Timer(KEEP_S, _drop, (runs.owner,))
    stop.daemon = drop.daemon = True
    with _lock:
        _released[runs.owner] = _Released(runs, time.monotonic(), stop, drop)
        oldest = sorted(_released, key=lambda k: _released[k].at)[: max(0, len(_released) - MAX_KEPT)]
    for owner in oldest:
        _drop(owner)
    stop.start()
    drop.start()


def _stop_training(owner: str) -> None:
    with _lock:
        kept = _released.get(owner)
    if kept is not None:  # nobody reloaded it in time: stopped, as a closed tab's runs are, but still shown
        for run_id in kept.runs.runs.values():
            kept.runs.runner.stop(run_id)


def _drop(owner: str) -> None:
    with _lock:
        kept = _released.pop(owner, None)
    if kept is not None:
        kept.stop_timer.cancel()
        kept.drop_timer.cancel()
        kept.runs.stop_all()  # stopped and forgotten once ended: what a closed tab's release did at once


def drop_all() -> None:
    """Forget every released tab (the server's Runner shuts down)."""
    for owner in list(_released):
        _drop(owner)


def adopt(runs: SessionRuns, owner: str, wait_s: float = 0.0) -> bool:
    """Give `runs` (a new tab's) the runs of the released tab `owner`, with its token; False when there is no
    such tab (still open, long gone, or another server's), waiting up to `wait_s` for its release."""
    deadline = time.monotonic() + wait_s
    while True:
        with _lock:
            kept = _released.pop(owner, None)
        if kept is not None or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    if kept is None or kept.runs.runner is not runs.runner:
        return False
    kept.stop_timer.cancel()
    kept.drop_timer.cancel()
    runs.runs.update(kept.runs.runs)
    runs.asked.update(kept.runs.asked)
    runs.owner = kept.runs.owner  # the same tab to the queue, and the same token in the address
    with _lock:
        _open[runs.owner] = runs
    return True


def adopt_from_link(runs: SessionRuns) -> None:
    """A new tab whose address names a released tab's runs takes them over (called once, as its runs are made)."""
    owner = st.query_params.get(SESSION_PARAM)
    with _lock:
        _open[runs.owner] = runs
        still_open = owner in _open  # its old session not released yet (a reload's race), or a tab still open
    if owner and owner != runs.owner:
        adopt(runs, owner, ARRIVAL_WAIT_S if still_open else 0.0)  # an unknown token waits for nothing


def keep_in_link(runs: SessionRuns) -> None:
    """The tab's token in its address while it has runs, so that a reload finds them (the router, every page)."""
    if runs.runs and st.query_params.get(SESSION_PARAM) != runs.owner:
        st.query_params[SESSION_PARAM] = runs.owner


PAIR_PARAM = "pair"  # Compare's address names the two stored runs it draws: `pair=3,7`


def compare_pair() -> list[int] | None:
    """The two stored runs Compare draws (the Runs page's "Compare" button), or None: it trains its own. The
    pair is kept in the page's address, so a reload (a new session) draws it again (issue 32: it fell back to
    the live comparison); a `pair` that names no two run numbers is left out."""
    pair = st.session_state.get(keys.COMPARE_RUNS)
    if not pair:
        raw = st.query_params.get(PAIR_PARAM, "").split(",")
        if len(raw) == 2 and all(r.strip().isascii() and r.strip().isdigit() and int(r) > 0 for r in raw):
            pair = st.session_state[keys.COMPARE_RUNS] = [int(r) for r in raw]
        elif PAIR_PARAM in st.query_params:
            del st.query_params[PAIR_PARAM]
            return None
    if pair:
        st.query_params[PAIR_PARAM] = ",".join(str(r) for r in pair)
    return pair or None


def forget_compare_pair() -> None:
    """Back to the live comparison: the pair leaves the session and the address."""
    st.session_state.pop(keys.COMPARE_RUNS, None)
    if PAIR_PARAM in st.query_params:
        del st.query_params[PAIR_PARAM]
