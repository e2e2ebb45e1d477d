"""Run files in and out of a store: import (validated whole before anything is written), export as a
run file or as tidy tables, and the bundled demo runs (each loaded once per store)."""

from __future__ import annotations

from pathlib import Path

from ln_viz.i18n import LocalizedError
from ln_viz.runfile.document import LoadedRun, fingerprint_of, parse_run, read_run_bytes, read_run_file, write_run_file
from ln_viz.runmeta import iso_time
from ln_viz.store.reader import Store
from ln_viz.tables import EXPORT_FORMATS, export_tables

DEMO_DIR = Path(__file__).parent.parent / "data" / "demo_runs"


def import_run(store: Store, path: str | Path, *, source: str = "import") -> tuple[int, bool]:
    """Validate and store a run file; (run id, True) when added, (id, False) when it was already there.

    Nothing is written unless the whole file is valid."""
    return add_loaded_run(store, read_run_file(path), source=source)


def add_loaded_run(store: Store, loaded: LoadedRun, *, source: str = "import") -> tuple[int, bool]:
    """Store an already validated run file; (run id, added) as `import_run`."""
    existing = store.find_fingerprint(loaded.fingerprint)
    if existing is not None:
        return existing, False
    run_id = store.add_run(
        loaded.data,
        label=loaded.label,
        created=loaded.created,
        source=source,
        fingerprint=loaded.fingerprint,
    )
    return run_id, True


def export_run(
    store: Store,
    run_id: int,
    fmt: str,
    out: str | Path,
    *,
    probe_stride: int = 1,
) -> list[Path]:
    """Export a stored run as tables (csv, parquet: a folder) or one run file (run); the paths written."""
    if fmt not in EXPORT_FORMATS:
        raise LocalizedError("err.choice", "--format", value=fmt, choices=", ".join(EXPORT_FORMATS))
    summary = store.summary(run_id)
    damage = summary.damage()
    if damage is not None:  # a value no table or run file can hold: one sentence, and how to delete it
        raise damage
    card = store.model_card(run_id)  # a run ln_viz.attach recorded: its own shapes, and its card in the file
    data = store.open_run(run_id) if card is None else store.open_attached_run(run_id)[0]
    if fmt == "run":
        try:
            path = write_run_file(
                data,
                out,
                label=summary.label,
                created=summary.created,
                probe_stride=probe_stride,
                model_card=card,
            )
        except LocalizedError as e:
            if e.key == "err.export_too_large":
                raise LocalizedError("err.export_too_large", **{**e.params, "run_id": run_id}) from None
            raise
        return [path]
    header = {
        "run_id": run_id,
        "label": summary.label,
        "created": iso_time(summary.created),
        "status": data.status,
        "message": data.message,
    }
    return export_tables(data, out, fmt, header=header)


def load_demo_runs(store: Store, folder: str | Path = DEMO_DIR) -> list[int]:
    """Import the bundled demo runs (`*.json.gz` in `folder`) not loaded before; the new run ids.

    Idempotent: a demo is loaded once per store, and not again after the user deleted it."""
    added = []
    for path in sorted(Path(folder).glob("*.json.gz")):
        raw = read_run_bytes(path)
        fingerprint = fingerprint_of(raw)
        if store.seen(fingerprint) or store.find_fingerprint(fingerprint) is not None:
            continue  # checked before parsing, the slow part
        loaded = parse_run(raw, str(path))
        run_id = store.add_run(
            loaded.data,
            label=loaded.label,
            created=loaded.created,
            source="demo",
            fingerprint=fingerprint,
            once=True,
        )
        if run_id is not None:
            added.append(run_id)
    return added


def reload_demo_runs(store: Store, folder: str | Path = DEMO_DIR) -> list[int]:
    """The Runs page's "Load the demo runs" button: add every bundled demo not stored now (an explicit
    request, so demos deleted earlier come back); the ids added. Idempotent: a stored demo is found by
    fingerprint."""
    added = []
    for path in sorted(Path(folder).glob("*.json.gz")):
        run_id, new = add_loaded_run(store, read_run_file(path), source="demo")
        if new:
            added.append(run_id)
    return added
