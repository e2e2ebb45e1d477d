"""Rows <-> runs: how a RunInfo, a Snapshot and a run's summary map onto the store's tables, and back.

The scalars table's columns are ln_viz.schema's scalars (`step` and the float columns, in the schema's
order) plus two flags; a probes row is one schema.PROBES array of one step, as raw little-endian float32
bytes and its shape text ("12,128"): never pickle, so a store file can come from anyone.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import socket
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ln_viz.config import NORM_POSITIONS
from ln_viz.i18n import LocalizedError, t
from ln_viz.runfile.validate import Validator
from ln_viz.runmeta import MAX_LABEL_CHARS, first_surrogate, in_time_range, iso_time
from ln_viz.schema import PROBE_NAMES, SCALAR_NAMES, STATUSES
from ln_viz.snapshot import RunData, RunInfo, Snapshot, thin_plan
from ln_viz.store.db import StoreError

LIVE_STATUSES = ("queued", "running")
LIVE_SQL = "('queued', 'running')"  # LIVE_STATUSES as an SQL list
SOURCES = ("train", "import", "demo", "attach")  # attach: recorded by ln_viz.attach from the user's own model
# the placements an attached run's card may name (ln_viz.byom.card): ln-viz's own and those of other models
ATTACHED_PLACEMENTS = ("post", "pre", "peri", "reordered", "parallel", "none", "unknown")
MAX_GROUP_CHARS = 64  # a seed group's name: made by the app ("compare-3f2a..."), never typed
# RunConfig fields copied into the runs row, so lists sort and filter without parsing JSON
CONFIG_COLUMNS = ("norm_position", "norm_type", "depth", "d_model", "lr", "warmup_steps", "steps", "corpus", "seed")
SCALAR_COLUMNS = (*SCALAR_NAMES, "stalled", "has_probes")  # the scalars table, after run_id
_SCALAR_SQL = ", ".join(SCALAR_COLUMNS)


# --- values -------------------------------------------------------------------------------------------
def array_to_blob(a: np.ndarray) -> tuple[str, bytes]:
    """(shape text, little-endian float32 bytes) of an array."""
    a = np.ascontiguousarray(a, dtype="<f4")
    return ",".join(str(n) for n in a.shape), a.tobytes()


def blob_to_array(shape: str, data: bytes) -> np.ndarray:
    """The float32 array stored as `array_to_blob` wrote it (a writable copy)."""
    dims = tuple(int(n) for n in shape.split(",")) if shape else ()
    return np.frombuffer(data, dtype="<f4").reshape(dims).astype(np.float32)


def nan_to_none(x: float | None) -> float | None:
    """SQLite has no NaN: NULL stands for it (infinities are stored as they are)."""
    return None if x is None or math.isnan(x) else float(x)


def none_to_nan(x: float | None) -> float:
    return math.nan if x is None else float(x)


# --- the runs list --------------------------------------------------------------------------------------
@dataclass
class RunSummary:
    """One row of the runs list: what a table or the CLI shows, without the run's data."""

    id: int
    created: float  # unix seconds
    updated: float
    label: str | None
    status: str
    message: str | None
    norm_position: str
    norm_type: str
    depth: int
    d_model: int
    lr: float
    warmup_steps: int
    steps: int  # planned
    steps_done: int
    final_loss: float | None
    corpus: str
    seed: int
    writer_pid: int | None
    source: str  # train | import | demo
    seed_group: str | None = None  # the runs one Start trained over several seeds share it

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: times as ISO 8601 UTC strings. A damaged row (`damage()`) also has "damaged", the
        sentence; its values that JSON or a time cannot hold are null."""
        damage = self.damage()
        if damage is None:
            d = asdict(self)
            d["created"], d["updated"] = iso_time(self.created), iso_time(self.updated)
            return d
        d = {k: _json_safe(v) for k, v in asdict(self).items()}
        for key in ("created", "updated"):
            d[key] = iso_time(d[key]) if in_time_range(d[key]) else None
        return {**d, "damaged": damage.message()}

    def damage(self) -> LocalizedError | None:
        """Why this row cannot be shown as a run (a value no page, table or export can draw), or None.
        Imports refuse such values; a row may still hold one from an older ln-viz or another program."""
        checks = (
            ("id", isinstance(self.id, int)),
            ("created", in_time_range(self.created)),
            ("updated", in_time_range(self.updated)),
            ("label", self.label is None or (isinstance(self.label, str) and len(self.label) <= MAX_LABEL_CHARS)),
            ("status", self.status in STATUSES),
            ("message", self.message is None or isinstance(self.message, str)),
            (
                "norm_position",
                self.norm_position in (ATTACHED_PLACEMENTS if self.source == "attach" else NORM_POSITIONS),
            ),
            ("final_loss", self.final_loss is None or _is_number(self.final_loss)),
            ("source", self.source in SOURCES),
            (
                "seed_group",
                self.seed_group is None
                or (isinstance(self.seed_group, str) and len(self.seed_group) <= MAX_GROUP_CHARS),
            ),
            ("lr", _is_number(self.lr)),
            *((name, _is_count(getattr(self, name))) for name in ("depth", "d_model", "warmup_steps", "steps")),
            *((name, _is_count(getattr(self, name))) for name in ("steps_done", "seed")),
        )
        for column, ok in checks:
            if not ok:
                return StoreError("err.run_damaged_value", run_id=_short(self.id), column=column,
                                  value=_short(getattr(self, column)))  # fmt: skip
        return None


SUMMARY_COLUMNS = ", ".join(RunSummary.__dataclass_fields__)
SORT_KEYS = {
    "created": "created",
    "updated": "updated",
    "id": "id",
    "final_loss": "final_loss",
    "depth": "depth",
    "status": "status",
    "label": "label",
}


@dataclass
class RunFilter:
    """Which runs `list_runs` returns; None means any."""

    status: tuple[str, ...] | None = None
    norm_position: tuple[str, ...] | None = None
    depth: int | None = None
    label_contains: str | None = None
    seed_group: str | None = None  # only this group's runs

    def sql(self) -> tuple[str, list[Any]]:
        """(" WHERE ..." or "", its arguments)."""
        where, args = [], []
        for column, values in (("status", self.status), ("norm_position", self.norm_position)):
            if values:
                where.append(f"{column} IN ({','.join('?' * len(values))})")
                args.extend(values)
        if self.depth is not None:
            where.append("depth = ?")
            args.append(self.depth)
        if self.seed_group is not None:
            where.append("seed_group = ?")
            args.append(self.seed_group)
        if self.label_contains:
            where.append("instr(lower(coalesce(label, '')), lower(?)) > 0")
            args.append(self.label_contains)
        return (" WHERE " + " AND ".join(where)) if where else "", args


def _is_number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _is_count(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 2**63


def _json_safe(x: object) -> object:
    """A row's value as JSON can hold it: non-finite numbers and bytes as null."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return None if isinstance(x, bytes) else x


def _short(x: object) -> str:
    """A row's value as a sentence shows it: cut to a short prefix with its length."""
    text = repr(x) if not isinstance(x, bytes) else f"{len(x)} bytes"
    return text if len(text) <= 40 else f"{text[:40]}... ({len(text)} characters)"


def check_label(label: str | None) -> None:
    """Refuse a label no runs row can hold: too long, or not Unicode text (`runmeta.first_surrogate`)."""
    if label is not None and len(label) > MAX_LABEL_CHARS:
        raise StoreError("err.label_too_long", have=len(label), limit=MAX_LABEL_CHARS)
    if label is not None and (at := first_surrogate(label)) is not None:
        raise StoreError("err.label_not_unicode", at=at)


# --- writing rows ---------------------------------------------------------------------------------------
def insert_run(
    db: sqlite3.Connection,
    info: RunInfo,
    *,
    label: str | None,
    status: str,
    created: float | None = None,
    writer_token: str | None = None,
    group: str | None = None,
    model_card: dict[str, Any] | None = None,
) -> int:
    """A new runs row for `info` (header as JSON, config fields copied), in seed group `group`; its id.
    With a `model_card` (a run `ln_viz.attach` records), the row's source is 'attach', the card is kept
    as JSON (a column since version 4), and its placement fills the norm_position column."""
    info_dict = info.to_dict()
    config = info_dict.pop("config")
    check_label(label)
    now = time.time()
    header = {
        "created": created if created is not None else now,
        "updated": now,
        "label": label or None,
        "status": status,
        "config": json.dumps(config),
        "info": json.dumps(info_dict),
        **{name: getattr(info.config, name) for name in CONFIG_COLUMNS},
        "writer_token": writer_token,
        "writer_pid": os.getpid() if writer_token else None,
        "writer_host": socket.gethostname() if writer_token else None,
        **({"seed_group": group} if group is not None else {}),  # a column since version 3
    }
    if model_card is not None:
        header.update(source="attach", model_card=json.dumps(model_card), norm_position=model_card["placement"])
    cur = db.execute(
        f"INSERT INTO runs ({', '.join(header)}) VALUES ({', '.join('?' * len(header))})", tuple(header.values())
    )
    return int(cur.lastrowid)


def scalar_row(run_id: int, snap: Snapshot) -> tuple:
    """The scalars table's row of one step."""
    values = (nan_to_none(getattr(snap, name)) for name in SCALAR_NAMES[1:])
    return (run_id, snap.step, *values, int(snap.stalled), int(snap.probes is not None))


def probe_rows(run_id: int, snap: Snapshot) -> list[tuple]:
    """The probes table's rows of one step (none for an array not measured at it)."""
    return [
        (run_id, snap.step, name, *array_to_blob(values))
        for name, values in (snap.probes or {}).items()
        if values is not None
    ]


def write_rows(db: sqlite3.Connection, rows: list[tuple], blobs: list[tuple]) -> None:
    """Insert scalar rows and probe rows (inside the caller's transaction)."""
    marks = ", ".join("?" * (len(SCALAR_COLUMNS) + 1))
    db.executemany(f"INSERT INTO scalars (run_id, {_SCALAR_SQL}) VALUES ({marks})", rows)
    db.executemany("INSERT INTO probes (run_id, step, name, shape, data) VALUES (?, ?, ?, ?, ?)", blobs)


def update_summary(db: sqlite3.Connection, run_id: int, **columns: Any) -> int:
    """Set a run's summary columns (RunData.summary()'s keys, and any other runs column)."""
    columns["updated"] = time.time()
    if "final_loss" in columns:
        columns["final_loss"] = nan_to_none(columns["final_loss"])
    sets = ", ".join(f"{k} = ?" for k in columns)
    return db.execute(f"UPDATE runs SET {sets} WHERE id = ?", (*columns.values(), run_id)).rowcount


# --- reading rows ---------------------------------------------------------------------------------------
_STEPS_PER_QUERY = 900  # under SQLite's oldest limit of 999 bound values per statement


def read_run(
    db: sqlite3.Connection,
    run_id: int,
    max_probe_steps: int | None = None,
    name: str = "the store",
    probe_steps: Sequence[int] | None = None,
) -> RunData | None:
    """A stored run replayed step by step into RunData (None when there is no such run), with at most
    `max_probe_steps` probe steps as RunData thins them, or only the `probe_steps` listed (of those it
    measured). The steps are chosen from the scalar rows first and only their arrays are read and
    decoded: a 10,000-step depth-48 run probed every step holds about 750 MB of arrays, of which a
    page shows 512 steps. A row that no page could draw (a header an import would refuse, a probe blob
    of another shape) is a StoreError naming the run as damaged (`name`: the store, for the sentence). A run
    ln_viz.attach recorded keeps its model's own norm and matrix names, and its card (`RunInfo.model_card`)."""
    sql = "SELECT config, info, status, message, diverged_at, steps FROM runs WHERE id = ?"
    row = db.execute(sql, (run_id,)).fetchone()
    if row is None:
        return None
    card = attached_card(db, run_id)
    scalars = db.execute(f"SELECT {_SCALAR_SQL} FROM scalars WHERE run_id = ? ORDER BY step", (run_id,)).fetchall()
    measured = [values[0] for values in scalars if values[-1]]  # the steps whose has_probes is set
    if probe_steps is None:
        keep, stride = thin_plan(len(measured), max_probe_steps)
    else:
        wanted = set(probe_steps)
        keep = [i for i, step in enumerate(measured) if step in wanted]
        stride = max(1, round(len(measured) / max(1, len(keep))))  # about every stride-th: for the note
    kept = [measured[i] for i in keep]
    config, info, status, message, diverged_at, planned = row
    try:
        if card is not None:  # ln_viz.attach's header: the model's own norms and matrices (the card holds them)
            run_info = RunInfo.from_dict({**json.loads(info), "config": json.loads(config)})
            run_info.model_card = card
            if isinstance(planned, int) and planned > run_info.config.steps:  # known when its loop ended
                run_info.config = dataclasses.replace(run_info.config, steps=planned)
        else:
            run_info = stored_info(config, info, name)
        by_step = _probe_arrays(db, run_id, kept, whole=len(kept) == len(measured))
        snaps = (_snapshot(values, by_step) for values in scalars)
        # replaying through append() rebuilds stalled_since exactly as the live run had it
        data = RunData.from_snapshots(run_info, snaps)
        if len(kept) < len(measured):
            data.mark_thinned(max_probe_steps if probe_steps is None else len(kept), stride, keep, len(measured))
        data.settle(status, message, diverged_at)
    except (ValueError, TypeError, KeyError, AttributeError) as e:  # LocalizedError is a ValueError
        raise DamagedRunError(run_id, name, e) from None
    return data


def _probe_arrays(
    db: sqlite3.Connection, run_id: int, steps: list[int], whole: bool
) -> dict[int, dict[str, np.ndarray]]:
    """{step: {name: array}} of the schema's probe arrays at `steps` (all the run's when `whole`): only
    these rows are read and decoded. A step measured but without rows gets an empty dict (NaN arrays)."""
    names = f"name IN ({', '.join('?' * len(PROBE_NAMES))})"  # a newer writer's extra arrays are not ours to show
    sql = f"SELECT step, name, shape, data FROM probes WHERE run_id = ? AND {names}"
    if whole:
        chunks: list[list[int]] = [[]]
    else:
        chunks = [steps[i : i + _STEPS_PER_QUERY] for i in range(0, len(steps), _STEPS_PER_QUERY)]
    by_step: dict[int, dict[str, np.ndarray]] = {step: {} for step in steps}
    for chunk in chunks:
        where = "" if whole else f" AND step IN ({', '.join('?' * len(chunk))})"
        for step, probe, shape, blob in db.execute(sql + where, (run_id, *PROBE_NAMES, *chunk)):
            by_step.setdefault(step, {})[probe] = blob_to_array(shape, blob)
    return by_step


def stored_info(config: str, info: str, name: str) -> RunInfo:
    """A runs row's header, held to what an import accepts (ln_viz.runfile.validate), so a row written by
    an older ln-viz or another program is damaged rather than a page's exception."""
    header = json.loads(info)
    if not isinstance(header, dict):
        raise TypeError("the header is not an object")
    return Validator(name, corpus_checks=False).info({**header, "config": json.loads(config)})


class DamagedRunError(StoreError):
    """A stored run no page can draw: one sentence naming the run, the cause and how to delete it."""

    def __init__(self, run_id: int, path: str, cause: Exception) -> None:
        self.cause = cause if isinstance(cause, LocalizedError) else None
        reason = str(cause) if self.cause else _short(f"{type(cause).__name__}: {cause}")
        super().__init__("err.run_damaged", run_id=run_id, path=path, reason=reason)

    def message(self, lang: str = "en") -> str:
        if self.cause is None:
            return super().message(lang)
        return t(self.key, lang, **{**self.params, "reason": self.cause.message(lang)})


def attached_card(db: sqlite3.Connection, run_id: int) -> dict[str, Any] | None:
    """The model card of a run `ln_viz.attach` recorded; None for ln-viz's own runs."""
    row = db.execute("SELECT model_card FROM runs WHERE id = ? AND source = 'attach'", (run_id,)).fetchone()
    if row is None or row[0] is None:
        return None
    try:
        card = json.loads(row[0])
    except ValueError:
        card = None
    return card if isinstance(card, dict) else {}


def _snapshot(values: tuple, by_step: dict[int, dict[str, np.ndarray]]) -> Snapshot:
    """One scalars row as a Snapshot; its probes only at the steps read (`by_step`'s keys)."""
    step, *floats, stalled, has_probes = values
    return Snapshot(
        step,
        **{name: none_to_nan(v) for name, v in zip(SCALAR_NAMES[1:], floats)},  # NULL is NaN (eval_loss: not measured)
        stalled=bool(stalled),
        probes=by_step.get(step) if has_probes else None,
    )
