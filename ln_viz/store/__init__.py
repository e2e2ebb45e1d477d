"""Runs on disk: an embedded SQLite store, written while the run trains, read by pages and the CLI.

Layout (schema version in `PRAGMA user_version`, upgraded by migrations.MIGRATIONS):

    runs     one row per run: the header (config and info as JSON) plus summary columns that lists sort
             and filter on without parsing JSON (status, steps_done, final_loss, norm_position, depth...)
    scalars  one row per (run, step): the scalars of ln_viz.schema.SCALARS, then stalled, has_probes
    probes   one row per (run, schema.PROBES name, step): the array as raw little-endian float32 bytes
             and its shape ("12,128"); never pickle, so a store file can come from anyone
    meta     key-value: the fingerprints of bundled demo runs ever loaded (so a deleted demo stays gone)

The package, one seam per module: db (where the file lives, opening it, errors), migrations (schema
versions), lock (the writer lock), rows (rows <-> RunInfo, Snapshot, RunData, summaries), reader (Store),
writer (RunWriter), transfer (run files in and out of a store).

Writing. `RunWriter.add(snap)` only serialises the snapshot into a buffer; a background thread
commits the buffer every `flush_every` seconds (0.5 s), so a crash of the training process loses at
most the last half second or so, and the training loop never waits on the disk. SQLite runs in WAL
mode with `synchronous=NORMAL`: a commit survives the process being killed (it is in the WAL file),
though not necessarily a power cut, which is the right trade for a classroom tool.

Reading. Readers use short read transactions; in WAL mode they never block the writer and the writer
never blocks them.

Live or dead? A run whose row says `running` or `queued` may be being written right now, or its
process may have died (closed laptop, SIGKILL, crash). Each RunWriter holds an exclusive `flock` on a
lock file `<store>.locks/<token>.lock` for as long as it writes, and its row names the token. The
kernel drops that lock when the process dies, however it dies. Opening a Store for writing calls
`recover()`, which tries to take each such lock without waiting: if it can, nobody holds it, so the
run is marked `interrupted` (keeping every step it stored); if it cannot, the writer is alive and the
run is left alone. So any number of readers and writers may open the store while runs train.
Details that make this safe:
- the writer locks its file before its row exists and unlocks only after its final commit, and the
  `interrupted` update is conditional on the row still being live, so a writer that finishes while
  `recover()` looks at it is never marked;
- `flock` (not POSIX `lockf`) because flock locks belong to the open file, so a writer thread and a
  reader in the same process (the app) still see each other's locks;
- pids are stored for people to read, never trusted: a pid may be reused by another process.
On network file systems flock may not work across machines; keep the store on a local disk.
"""

from ln_viz.store.db import StoreError, connect, default_store_path, resolve_store_path
from ln_viz.store.lock import WriterLock
from ln_viz.store.migrations import MIGRATIONS, SCHEMA_VERSION, migrate
from ln_viz.store.reader import Store
from ln_viz.store.rows import (
    LIVE_STATUSES,
    SORT_KEYS,
    RunFilter,
    RunSummary,
    array_to_blob,
    blob_to_array,
)
from ln_viz.store.writer import RunWriter

__all__ = [
    "LIVE_STATUSES",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "SORT_KEYS",
    "RunFilter",
    "RunSummary",
    "RunWriter",
    "Store",
    "StoreError",
    "WriterLock",
    "array_to_blob",
    "blob_to_array",
    "connect",
    "default_store_path",
    "migrate",
    "resolve_store_path",
]
