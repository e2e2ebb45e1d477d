"""The run file's bytes: a RunData written as the run file's JSON document, and a file's bytes read,
size-checked and parsed (the checks themselves are in ln_viz.runfile.validate). See ln_viz.runfile
for the format.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import math
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ln_viz.config import FIELDS
from ln_viz.corpus import read_regular_file
from ln_viz.i18n import LocalizedError
from ln_viz.runfile.format import FORMAT, FORMAT_VERSION, RunFileError
from ln_viz.runfile.validate import Validator
from ln_viz.runmeta import iso_time
from ln_viz.schema import PROBES, SCALAR_NAMES
from ln_viz.snapshot import thinned

if TYPE_CHECKING:
    from ln_viz.snapshot import RunData

MAX_FILE_BYTES = 50 * 1024**2  # a 1,000-step depth-12 run with all probes is about 3 MB
MAX_UNPACKED_BYTES = 50 * 1024**2  # guards against a small gzip that unpacks to gigabytes
# Python's json holds each value as an object of 24-64 bytes: 50 MB of `[],[],...` took 1.3 GB. Before
# parsing, the values a file can hold are counted (`count_values`) and capped at what the largest valid
# run holds: every scalar of MAX_STEPS steps and its probe steps, plus MAX_LISTED_VALUES numbers of probe
# arrays written as lists (the writer's base64 strings are one value each), so a file's parse takes at
# most about 150 MB beyond its bytes.
MAX_LISTED_VALUES = 1_000_000
MAX_JSON_VALUES = (len(SCALAR_NAMES) + 1) * int(FIELDS["steps"].hi) + MAX_LISTED_VALUES + 10_000
_USER_TEXT = re.compile(r'"user_text"\s*:\s*"')


# --- writing ----------------------------------------------------------------------------------------
def _json_float(x: float) -> float | str | None:
    if math.isnan(x):
        return None
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return float(x)


def thin_probe_steps(n: int, stride: int) -> list[int]:
    """Indices of probe steps kept with `stride`: 0, stride, 2*stride... and always the last (the live
    copy's rule, RunData's, applied to the probe steps as measured)."""
    return thinned(range(n), max(stride, 1))


def run_document(
    data: RunData,
    *,
    label: str | None = None,
    created: float | None = None,
    probe_stride: int = 1,
    model_card: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The run file's JSON object (see the module docstring); a run ln_viz.attach recorded also carries
    its `model_card` (by default the one its RunInfo holds)."""
    model_card = model_card if model_card is not None else data.info.model_card
    keep = thin_probe_steps(len(data.probe_steps), probe_stride)
    shapes = data.info.probe_shapes()
    probes = {}
    for name in PROBES:
        values = data.probe(name)[keep] if keep else np.zeros((0,), np.float32)
        arr = np.ascontiguousarray(values, dtype="<f4")
        shape = list(arr.shape) if keep else [0, *shapes[name]]
        probes[name] = {
            "shape": shape,
            "encoding": "base64",
            "data": base64.b64encode(arr.tobytes()).decode("ascii"),
        }
    s = data.scalars
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "label": label,
        "created": iso_time(created),
        "status": data.status,
        "message": data.message,
        "stalled_since": data.stalled_since,
        "diverged_at": data.diverged_at,
        "info": data.info.to_dict(),
        "scalars": {
            "step": [int(x) for x in s["step"]],
            **{c: [_json_float(x) for x in s[c]] for c in SCALAR_NAMES[1:]},
        },
        "probe_steps": [int(data.probe_steps[i]) for i in keep],
        "probes": probes,
        **({"model_card": model_card} if model_card is not None else {}),
    }


def encode_run(document: dict[str, Any], compress: bool) -> bytes:
    """The file's bytes; gzip without a timestamp, so the same run gives the same bytes."""
    raw = json.dumps(document, separators=(",", ":"), allow_nan=False).encode("utf-8")
    return gzip.compress(raw, compresslevel=9, mtime=0) if compress else raw


def write_run_file(
    data: RunData,
    path: str | Path,
    *,
    label: str | None = None,
    created: float | None = None,
    probe_stride: int = 1,
    compress: bool | None = None,
    model_card: dict[str, Any] | None = None,
) -> Path:
    """Write a run file (gzip when `compress`, default: when the name ends in .gz); refuse to write
    one larger than an import accepts."""
    path = Path(path)
    if compress is None:
        compress = path.name.endswith(".gz")
    doc = run_document(data, label=label, created=created, probe_stride=probe_stride, model_card=model_card)
    blob = encode_run(doc, compress)
    if len(blob) > MAX_FILE_BYTES:
        raise LocalizedError(
            "err.export_too_large",
            run_id=label or path.name,
            have=len(blob),
            limit=MAX_FILE_BYTES,
        )
    if path.is_dir():
        raise LocalizedError("err.export_is_dir", path=str(path))
    tmp = path.with_name(path.name + ".part")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(blob)
        tmp.replace(path)  # never leave half a file under the real name
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise LocalizedError("err.write_failed", path=str(path), reason=e.strerror) from e
    return path


# --- reading ----------------------------------------------------------------------------------------
@dataclass
class LoadedRun:
    """A validated run file: the run and the file's own metadata."""

    data: RunData
    label: str | None
    created: float | None  # unix seconds
    fingerprint: str  # sha256 of the JSON text (after gunzip): the same run file, the same value


# the sentence of each way a run file's path can be refused (corpus.read_regular_file's problems)
_FILE_KEYS = {
    "missing": "err.file_missing",
    "is_dir": "err.runfile_is_dir",
    "not_regular": "err.runfile_not_regular",
    "unreadable": "err.file_unreadable",
    "too_large": "err.file_too_large",
}


def read_run_bytes(path: str | Path) -> bytes:
    """The JSON bytes of a run file (gunzipped when it is gzip), with the size limits applied; a path that
    is missing, a folder, not a regular file (a FIFO, a device) or unreadable is one sentence each."""
    raw = read_regular_file(path, MAX_FILE_BYTES, lambda problem, **params: RunFileError(_FILE_KEYS[problem], **params))
    return unpack_run_bytes(raw, str(path))


def unpack_run_bytes(raw: bytes, name: str) -> bytes:
    """The JSON bytes of a run file's bytes (gunzipped when they are gzip), with the size limits
    applied; `name` is for messages."""
    if len(raw) > MAX_FILE_BYTES:
        raise RunFileError("err.file_too_large", path=name, have=len(raw), limit=MAX_FILE_BYTES)
    if raw[:2] != b"\x1f\x8b":
        return raw
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as f:
            unpacked = f.read(MAX_UNPACKED_BYTES + 1)
    except (OSError, EOFError, zlib.error):
        raise RunFileError("err.runfile_gzip", path=name) from None
    if len(unpacked) > MAX_UNPACKED_BYTES:
        raise RunFileError("err.runfile_unpacked_too_large", path=name, limit=MAX_UNPACKED_BYTES)
    return unpacked


def fingerprint_of(raw_json: bytes) -> str:
    """sha256 of a run file's JSON bytes: the same file, the same run in the store."""
    return hashlib.sha256(raw_json).hexdigest()


def read_run_file(path: str | Path) -> LoadedRun:
    """Read and validate a run file; RunFileError names the first problem in one sentence."""
    raw = read_run_bytes(path)
    return parse_run(raw, str(path))


def read_run_data(raw: bytes, name: str) -> LoadedRun:
    """Read and validate a run file given as its bytes (an upload), gzip or not; `name` is for messages."""
    return parse_run(unpack_run_bytes(raw, name), name)


def count_values(text: str) -> int:
    """At least the number of JSON values in `text`, counted without building them: each value is the
    first in its array or object or follows a comma, so commas and openings bound them. Commas and
    brackets inside the user text (the one long free text of a run file) are not values and are not
    counted. The pattern's closing quote follows a letter, so it is never inside a string: the quote
    after its colon opens a real string (or the JSON before it is broken and the parse stops there)."""
    n = text.count(",") + text.count("[") + text.count("{") + 1
    for k, m in enumerate(_USER_TEXT.finditer(text)):
        if k == 2:  # a run file holds one user text
            break
        try:
            _, end = json.decoder.scanstring(text, m.end())
        except ValueError:
            break
        n -= sum(text.count(c, m.end(), end) for c in ",[{")
    return n


def parse_run(raw: bytes, name: str) -> LoadedRun:
    """Validate the JSON bytes of a run file (`name` is for messages) and build its RunData."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RunFileError("err.runfile_json", path=name, reason=f"byte {e.start} is not UTF-8") from None
    have = count_values(text)
    if have > MAX_JSON_VALUES:
        raise RunFileError("err.runfile_too_many_values", path=name, have=have, limit=MAX_JSON_VALUES)
    try:
        doc = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as e:
        raise RunFileError(
            "err.runfile_json",
            path=name,
            reason=f"{e.msg} at line {e.lineno}, column {e.colno}",
        ) from None
    except (ValueError, RecursionError) as e:
        raise RunFileError("err.runfile_json", path=name, reason=str(e)[:80]) from None
    if isinstance(doc, dict) and "model_card" in doc:  # a run ln_viz.attach recorded: its model's own shapes
        raise RunFileError("err.runfile_attached", path=name)
    data, label, created = Validator(name).run(doc)
    return LoadedRun(data, label, created, fingerprint_of(raw))


def _refuse_constant(token: str) -> None:
    # NaN and Infinity are not JSON; our files write null and "inf"
    raise ValueError(f"{token} is not valid JSON")
