"""The server's run store, opened once, and the stored runs every page's charts share (`RunCache`).
ln_viz.ui.storage holds one of each for the server (`st.cache_resource`)."""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence

from ln_viz.i18n import LocalizedError
from ln_viz.snapshot import RunData, aligned_probe_steps
from ln_viz.store import Store

log = logging.getLogger(__name__)


def open_store() -> Store | None:
    """The store at LN_VIZ_STORE or the user's data directory; None (and a logged reason) when it cannot
    be opened, so the app still trains and shows runs live."""
    try:
        return Store()
    except (LocalizedError, OSError) as e:
        log.warning("ln-viz: runs will not be stored: %s", e)
        return None


def usable_store(store: Store) -> Store | None:
    """The server's store, or None when it cannot be used now. A store file deleted or replaced under the
    server is noticed here (one `stat`) and the file at the path now is opened instead, so no page keeps
    listing a file that is gone; `store.notice` says so."""
    try:
        if store.reopen_if_moved():
            log.warning("ln-viz: %s", store.notice)
    except LocalizedError as e:  # what is there now is no store we can open (said once, here)
        log.warning("ln-viz: runs will not be stored: %s", e)
    return store if store.usable else None


# A stored run's charts show at most this many probe steps (evenly spaced): the heatmap draws 400 columns at
# most, and at depth 48 with a probe every step a whole 10,000-step run would hold ~750 MB in the cache
# (512 of its steps: ~38 MB). The downloads read the whole run from the store when they are built.
SHOWN_PROBE_STEPS = 512
# What the stored runs read for the charts may hold together, for every visitor at once: a bound in bytes,
# not in runs, since one run can be a thousand times another. About six of the largest runs' thinned copies.
MAX_CACHED_BYTES = 256 * 1024**2


class RunCache:
    """Stored runs as the charts read them, shared by every session; once they hold more than `max_bytes`
    together (RunData.nbytes), the least recently used go first. A run larger than that alone is returned
    without being kept. Reads happen outside the lock, so one slow read never holds up another page."""

    def __init__(self, max_bytes: int = MAX_CACHED_BYTES) -> None:
        self.max_bytes = max_bytes
        self.held_bytes = 0
        self._entries: OrderedDict[Hashable, tuple[RunData, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, load: Callable[[], RunData]) -> RunData:
        """The run cached under `key`, else `load()`'s (kept when it fits)."""
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key][0]
        data = load()
        size = data.nbytes()
        with self._lock:
            if key in self._entries:  # another session read it meanwhile: share that copy
                return self._entries[key][0]
            if size <= self.max_bytes:
                self._entries[key] = (data, size)
                self.held_bytes += size
                while self.held_bytes > self.max_bytes:
                    _, (_, dropped) = self._entries.popitem(last=False)
                    self.held_bytes -= dropped
        return data

    def __len__(self) -> int:
        return len(self._entries)

    def stored_run(
        self, store: Store, run_id: int, updated: float | None = None, steps: Sequence[int] | None = None
    ) -> RunData:
        """A stored run as the charts show it (at most SHOWN_PROBE_STEPS probe steps, or the probe `steps`
        given: `stored_pair`'s), read once and shared by every tab and page (Live's finished runs, Runs,
        Compare): the charts only read it. Keyed by the store's file (its path and `generation`: a file
        deleted or replaced under the server numbers its runs from 1 again, and an old id must not bring back
        the old file's run) and by the row's last change (`updated`; None for a finished run, which no longer
        changes)."""
        steps = None if steps is None else tuple(steps)
        key = (str(store.path), store.generation, run_id, updated, steps)
        if steps is None:
            return self.get(key, lambda: store.open_run(run_id, SHOWN_PROBE_STEPS))
        return self.get(key, lambda: store.open_run(run_id, probe_steps=steps))

    def stored_pair(self, store: Store, run_ids: Sequence[int]) -> list[RunData]:
        """Compare's stored runs, each with at most twice SHOWN_PROBE_STEPS probe steps, chosen so the steps
        they share line up (snapshot.aligned_probe_steps): thinned each on its own, they could share only a
        few; read whole, two long runs held gigabytes. Raises StoreError for a run deleted meanwhile."""
        updated = [store.summary(run_id).updated for run_id in run_ids]
        own = [store.probe_steps(run_id) for run_id in run_ids]
        common = sorted(set(own[0]).intersection(*own[1:]))
        return [
            self.stored_run(store, run_id, when, aligned_probe_steps(steps, common, SHOWN_PROBE_STEPS))
            for run_id, when, steps in zip(run_ids, updated, own)
        ]
