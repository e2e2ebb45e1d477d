"""Runs as files: tidy tables (CSV, Parquet) to analyse elsewhere, and one JSON run file to share.

Tidy tables (`tables(data)`; `export_tables` writes each as `<name>.csv` or `<name>.parquet` plus
`info.json`, the run's header). Layers count from 1 at the input side; layer 0 is the embeddings.
A site is where in a block a tensor was measured: `resid` is the residual stream after the block,
a norm name (`ln1`, `ln2`, and for Peri-LN `ln1_out`, `ln2_out`) is that norm's input.

    table        columns
    -----------  ------------------------------------------------------------------------------------
    scalars      step, loss, lr, grad_norm, eval_loss, elapsed, steps_per_sec    one row per step;
                 loss/grad_norm nats/L2 norm, NaN where undefined; eval_loss NaN except at eval steps;
                 elapsed seconds since start; steps_per_sec a moving average
    histograms   step, layer, site, bin_left, bin_right, fraction               long format: the
                 fraction of a tensor's elements in [bin_left, bin_right); rows only for bins with a
                 non-zero fraction (an absent bin is 0); values beyond the edges are in layer_stats
    layer_stats  step, layer, site, mean, std, rms, max_abs, frac_below, frac_above    one row per
                 (probe step, layer, site); site `input` at layer 0 is the embeddings into block 1
    grad_norms   step, layer, param, grad_norm           Frobenius norm of each weight's gradient;
                 param is attn.q, attn.k, attn.v, attn.o, ffn.w1, ffn.w2
    layers       step, layer, attn_entropy, block_grad_norm, update_ratio    attn_entropy in nats,
                 mean over heads and positions of the batch's first 8 sequences; update_ratio
                 ||w_after - w_before|| / ||w_before||

Probe values are float32 (as measured), scalars float64; CSV writes each value as the shortest text
that reads back to the same number at that precision (read probe columns as float32 to get them bit
for bit). NaN (an empty CSV cell) marks a value not measured, such as a diverged step's gradients.

The run file (`write_run_file`, `read_run_file`): one JSON object, UTF-8, gzip-compressed when the
name ends in `.gz` (reading detects gzip by its magic bytes, not the name):

    format        "ln-viz-run"
    version       1 (FORMAT_VERSION); a reader refuses a newer version
    label         string or null
    created       ISO 8601 time the run started, or null
    status        one of train.STATUSES; message: i18n key or null
    stalled_since, diverged_at      step or null
    info          RunInfo.to_dict(): config (RunConfig fields), vocab_size, n_params,
                  unigram_entropy, floor, norm_names, param_names, stat_names, hist_edges
    scalars       {"step": [1, 2, ...], "loss": [...], "lr", "grad_norm", "elapsed", "steps_per_sec",
                  "eval_loss"}: equal-length lists; a number, null for NaN, "inf" or "-inf"
    probe_steps   [steps with probes], a subset of scalars.step (may be thinned: `probe_stride`)
    probes        {name: array} for each snapshot.PROBE_ARRAYS name, shape (len(probe_steps), ...):
                  {"shape": [...], "encoding": "base64", "data": base64 of little-endian float32,
                  C order}; a reader also accepts {"shape": [...], "encoding": "list", "data": nested
                  lists of numbers, null for NaN}

Reading validates everything before anything is stored: a file ln-viz would not have written is
refused with one sentence (RunFileError, in English and Korean) and the store is left unchanged.
Nothing is ever unpickled or torch.load-ed.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import io
import json
import math
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ln_viz.i18n import LocalizedError, t
from ln_viz.store import MAX_LABEL_CHARS

if TYPE_CHECKING:
    from ln_viz.snapshot import RunData
    from ln_viz.store import Store

FORMAT = "ln-viz-run"
FORMAT_VERSION = 1
MAX_FILE_BYTES = 50 * 1024**2  # a 1,000-step depth-12 run with all probes is about 3 MB
MAX_UNPACKED_BYTES = 50 * 1024**2  # guards against a small gzip that unpacks to gigabytes
TABLE_FORMATS = ("csv", "parquet")
EXPORT_FORMATS = ("csv", "parquet", "run")
DEMO_DIR = Path(__file__).parent / "data" / "demo_runs"
_SCALARS = ("step", "loss", "lr", "grad_norm", "elapsed", "steps_per_sec", "eval_loss")
_HISTOGRAMS = ("resid_hist", "norm_in_hist")  # values are fractions in [0, 1]
_NON_NEGATIVE = ("attn_entropy", "grad_norm", "block_grad_norm", "update_ratio")
# scalars that are never NaN or infinite in a run ln-viz wrote (loss and grad_norm are, at divergence)
_FINITE_SCALARS = ("lr", "elapsed", "steps_per_sec")


class RunFileError(LocalizedError):
    """A run file ln-viz refuses: one sentence. `cause` is a nested error whose sentence is the reason."""

    def __init__(self, key: str, *, cause: LocalizedError | None = None, **params: object) -> None:
        self.cause = cause
        if cause is not None:
            params["reason"] = str(cause)
        super().__init__(key, **params)

    def message(self, lang: str = "en") -> str:
        if self.cause is None:
            return super().message(lang)
        return t(self.key, lang, **{**self.params, "reason": self.cause.message(lang)})


# --- tidy tables ------------------------------------------------------------------------------------
def scalars_table(data: RunData) -> pd.DataFrame:
    """One row per step: step, loss, lr, grad_norm, eval_loss, elapsed, steps_per_sec."""
    df = data.scalars_df()
    return df[["step", "loss", "lr", "grad_norm", "eval_loss", "elapsed", "steps_per_sec"]]


def histogram_table(data: RunData) -> pd.DataFrame:
    """Long format: step, layer, site, bin_left, bin_right, fraction (non-zero bins only)."""
    edges = np.asarray(data.info.hist_edges, np.float64)
    steps = np.asarray(data.probe_steps, np.int64)
    parts = []
    for site, hist in _sites(data, "resid_hist", "norm_in_hist"):  # hist: (P, L, bins)
        p, layer, b = np.nonzero(hist != 0)  # NaN != 0: a blank frame keeps its NaN rows
        parts.append(
            pd.DataFrame(
                {
                    "step": steps[p],
                    "layer": layer + 1,
                    "site": site,
                    "bin_left": edges[b],
                    "bin_right": edges[b + 1],
                    "fraction": hist[p, layer, b],
                }
            )
        )
    return _concat(
        parts,
        {
            "step": np.int64,
            "layer": np.int64,
            "site": str,
            "bin_left": np.float64,
            "bin_right": np.float64,
            "fraction": np.float32,
        },
    )


def layer_stats_table(data: RunData) -> pd.DataFrame:
    """step, layer, site, then one column per stat name (mean, std, rms, max_abs, frac_below, ...)."""
    stat_names = list(data.info.stat_names)
    steps = np.asarray(data.probe_steps, np.int64)
    parts = []
    inputs = data.probe("input_stats")  # (P, stats): layer 0
    if len(steps):
        parts.append(
            pd.DataFrame({"step": steps, "layer": 0, "site": "input"}).join(pd.DataFrame(inputs, columns=stat_names))
        )
    for site, stats in _sites(data, "resid_stats", "norm_in_stats"):  # (P, L, stats)
        P, L, _ = stats.shape
        frame = pd.DataFrame(
            {
                "step": np.repeat(steps, L),
                "layer": np.tile(np.arange(1, L + 1), P),
                "site": site,
            }
        )
        parts.append(frame.join(pd.DataFrame(stats.reshape(P * L, -1), columns=stat_names)))
    columns = {"step": np.int64, "layer": np.int64, "site": str} | dict.fromkeys(stat_names, np.float32)
    return _concat(parts, columns).sort_values(["step", "layer"], kind="stable", ignore_index=True)


def grad_norm_table(data: RunData) -> pd.DataFrame:
    """step, layer, param, grad_norm: the gradient norm of each weight matrix at each probe step."""
    grads = data.probe("grad_norm")
    steps = np.asarray(data.probe_steps, np.int64)
    params = list(data.info.param_names)
    if not len(steps):
        return _concat(
            [],
            {
                "step": np.int64,
                "layer": np.int64,
                "param": str,
                "grad_norm": np.float32,
            },
        )
    P, L, K = grads.shape
    return pd.DataFrame(
        {
            "step": np.repeat(steps, L * K),
            "layer": np.tile(np.repeat(np.arange(1, L + 1), K), P),
            "param": np.tile(params, P * L),
            "grad_norm": grads.reshape(-1),
        }
    )


def layer_table(data: RunData) -> pd.DataFrame:
    """step, layer, attn_entropy, block_grad_norm, update_ratio."""
    steps = np.asarray(data.probe_steps, np.int64)
    L = data.info.config.depth
    columns = ("attn_entropy", "block_grad_norm", "update_ratio")
    frame = {
        "step": np.repeat(steps, L),
        "layer": np.tile(np.arange(1, L + 1), len(steps)),
    }
    for name in columns:
        values = data.probe(name)
        frame[name] = values.reshape(-1) if len(steps) else np.zeros(0, np.float32)
    return pd.DataFrame(frame).astype({"step": np.int64, "layer": np.int64})


TABLES = {
    "scalars": scalars_table,
    "histograms": histogram_table,
    "layer_stats": layer_stats_table,
    "grad_norms": grad_norm_table,
    "layers": layer_table,
}


def tables(data: RunData) -> dict[str, pd.DataFrame]:
    """Every tidy table of a run, by name (see the module docstring for the columns)."""
    return {name: build(data) for name, build in TABLES.items()}


def _sites(data: RunData, resid: str, norm_in: str) -> list[tuple[str, np.ndarray]]:
    """(site, (P, L, ...) array) for the residual stream and each norm's input."""
    if not data.probe_steps:
        return []
    sites = [("resid", data.probe(resid))]
    by_norm = data.probe(norm_in)  # (P, L, norms, ...)
    for j, name in enumerate(data.info.norm_names):
        sites.append((name, by_norm[:, :, j]))
    return sites


def _concat(parts: list[pd.DataFrame], columns: dict[str, Any]) -> pd.DataFrame:
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype=d) for c, d in columns.items()})
    return pd.concat(parts, ignore_index=True).astype(columns)


def export_tables(data: RunData, out_dir: str | Path, fmt: str = "csv", *, header: dict | None = None) -> list[Path]:
    """Write each table as `<name>.csv` / `<name>.parquet` and `info.json` into `out_dir`."""
    if fmt not in TABLE_FORMATS:
        raise LocalizedError("err.choice", "--format", value=fmt, choices=", ".join(EXPORT_FORMATS))
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise LocalizedError("err.export_not_dir", path=str(out))
    written = []
    path = out
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name, df in tables(data).items():
            path = out / f"{name}.{fmt}"
            if fmt == "csv":
                df.to_csv(path, index=False)  # shortest round-trip repr: values come back exactly
            else:
                df.to_parquet(path, index=False)
            written.append(path)
        info = {**(header or {}), "info": data.info.to_dict()}
        path = out / "info.json"
        path.write_text(json.dumps(info, indent=1, allow_nan=False), encoding="utf-8")
    except OSError as e:
        raise LocalizedError("err.write_failed", path=str(path), reason=e.strerror) from e
    return [*written, path]


# --- the run file: writing ----------------------------------------------------------------------------
def _json_float(x: float) -> float | str | None:
    if math.isnan(x):
        return None
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return float(x)


def _iso(t: float | None) -> str | None:
    if t is None:
        return None
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds")


def thin_probe_steps(n: int, stride: int) -> list[int]:
    """Indices of probe steps kept with `stride`: 0, stride, 2*stride... and always the last."""
    if n == 0:
        return []
    keep = list(range(0, n, max(stride, 1)))
    if keep[-1] != n - 1:
        keep.append(n - 1)
    return keep


def run_document(
    data: RunData,
    *,
    label: str | None = None,
    created: float | None = None,
    probe_stride: int = 1,
) -> dict[str, Any]:
    """The run file's JSON object (see the module docstring)."""
    from ln_viz.snapshot import PROBE_ARRAYS

    keep = thin_probe_steps(len(data.probe_steps), probe_stride)
    probes = {}
    for name in PROBE_ARRAYS:
        values = data.probe(name)[keep] if keep else np.zeros((0,), np.float32)
        arr = np.ascontiguousarray(values, dtype="<f4")
        shape = list(arr.shape) if keep else [0, *_probe_shapes(data.info)[name]]
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
        "created": _iso(created),
        "status": data.status,
        "message": data.message,
        "stalled_since": data.stalled_since,
        "diverged_at": data.diverged_at,
        "info": data.info.to_dict(),
        "scalars": {
            "step": [int(x) for x in s["step"]],
            **{c: [_json_float(x) for x in s[c]] for c in _SCALARS[1:]},
        },
        "probe_steps": [int(data.probe_steps[i]) for i in keep],
        "probes": probes,
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
) -> Path:
    """Write a run file (gzip when `compress`, default: when the name ends in .gz); refuse to write
    one larger than an import accepts."""
    path = Path(path)
    if compress is None:
        compress = path.name.endswith(".gz")
    doc = run_document(data, label=label, created=created, probe_stride=probe_stride)
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


# --- the run file: reading ------------------------------------------------------------------------------
@dataclass
class LoadedRun:
    """A validated run file: the run and the file's own metadata."""

    data: RunData
    label: str | None
    created: float | None  # unix seconds
    fingerprint: str  # sha256 of the JSON text (after gunzip): the same run file, the same value


def read_run_bytes(path: str | Path) -> bytes:
    """The JSON bytes of a run file (gunzipped when it is gzip), with the size limits applied."""
    path = Path(path)
    name = str(path)
    if not path.is_file():
        raise RunFileError("err.file_missing", path=name)
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise RunFileError("err.file_too_large", path=name, have=size, limit=MAX_FILE_BYTES)
    raw = path.read_bytes()
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
    return hashlib.sha256(raw_json).hexdigest()


def read_run_file(path: str | Path) -> LoadedRun:
    """Read and validate a run file; RunFileError names the first problem in one sentence."""
    raw = read_run_bytes(path)
    return parse_run(raw, str(path))


def parse_run(raw: bytes, name: str) -> LoadedRun:
    """Validate the JSON bytes of a run file (`name` is for messages) and build its RunData."""
    try:
        doc = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
    except UnicodeDecodeError as e:
        raise RunFileError("err.runfile_json", path=name, reason=f"byte {e.start} is not UTF-8") from None
    except json.JSONDecodeError as e:
        raise RunFileError(
            "err.runfile_json",
            path=name,
            reason=f"{e.msg} at line {e.lineno}, column {e.colno}",
        ) from None
    except (ValueError, RecursionError) as e:
        raise RunFileError("err.runfile_json", path=name, reason=str(e)[:80]) from None
    return _Validator(name).run(doc, fingerprint_of(raw))


def _refuse_constant(token: str) -> None:
    # NaN and Infinity are not JSON; our files write null and "inf"
    raise ValueError(f"{token} is not valid JSON")


def _probe_shapes(info: Any) -> dict[str, tuple[int, ...]]:
    """The shape of one probe step's array of each name."""
    return info.probe_shapes()


class _Validator:
    """Checks a parsed run document field by field; the first problem raises RunFileError."""

    def __init__(self, name: str) -> None:
        self.name = name

    def fail(self, key: str, **params: object) -> RunFileError:
        return RunFileError(key, path=self.name, **params)

    def field(self, obj: dict, key: str, kind: type | tuple, where: str) -> Any:
        value = obj.get(key) if isinstance(obj, dict) else None
        bad_bool = isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,))
        if not isinstance(value, kind) or bad_bool:
            raise self.fail("err.runfile_field", where=where, expected=_type_name(kind))
        return value

    def optional(self, obj: dict, key: str, kind: type | tuple, where: str) -> Any:
        if obj.get(key) is None:
            return None
        return self.field(obj, key, kind, where)

    def finite(self, value: float, where: str) -> float:
        if not math.isfinite(value):
            raise self.fail("err.runfile_not_finite", where=where, value=value)
        return float(value)

    # --- the whole document ---------------------------------------------------------------------
    def run(self, doc: Any, fingerprint: str) -> LoadedRun:
        from ln_viz.names import STATUSES
        from ln_viz.snapshot import PROBE_ARRAYS, RunData

        if not isinstance(doc, dict):
            raise self.fail("err.runfile_format", value=type(doc).__name__)
        if doc.get("format") != FORMAT:
            raise self.fail("err.runfile_format", value=doc.get("format"))
        version = doc.get("version")
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise self.fail("err.runfile_version", value=version, know=FORMAT_VERSION)
        if version > FORMAT_VERSION:
            raise self.fail("err.runfile_version_newer", version=version, know=FORMAT_VERSION)
        info = self.info(self.field(doc, "info", dict, "info"))
        steps, scalars = self.scalars(self.field(doc, "scalars", dict, "scalars"), info.config.steps)
        status = self.field(doc, "status", str, "status")
        if status not in STATUSES:
            raise self.fail("err.runfile_field", where="status", expected=" | ".join(STATUSES))
        message = self.optional(doc, "message", str, "message")
        label = self.optional(doc, "label", str, "label")
        if label is not None:
            self.range(len(label), 0, MAX_LABEL_CHARS, "len(label)")
        created = self.created(doc.get("created"))
        step_set = set(steps)
        marks = {}
        for key in ("stalled_since", "diverged_at"):
            value = self.optional(doc, key, int, key)
            if value is not None and value not in step_set:
                raise self.fail("err.runfile_probe_step", value=value)
            marks[key] = value
        probe_steps = self.probe_steps(self.field(doc, "probe_steps", list, "probe_steps"), step_set)
        probes = self.field(doc, "probes", dict, "probes")
        shapes = _probe_shapes(info)
        data = RunData(info)
        data.scalars = scalars
        data.probe_steps = probe_steps
        for name in PROBE_ARRAYS:
            want = (len(probe_steps), *shapes[name])
            if not probe_steps and name not in probes:
                continue
            arr = self.array(name, self.field(probes, name, dict, f"probes.{name}"), want)
            data.probes[name] = list(arr)
        data.status, data.message = status, message
        data.stalled_since, data.diverged_at = (
            marks["stalled_since"],
            marks["diverged_at"],
        )
        return LoadedRun(data, label, created, fingerprint)

    # --- parts ----------------------------------------------------------------------------------
    def info(self, d: dict) -> Any:
        from ln_viz.config import RunConfig
        from ln_viz.snapshot import RunInfo

        config = self.field(d, "config", dict, "info.config")
        if config.get("user_text") is not None and not isinstance(config["user_text"], str):
            raise self.fail("err.runfile_field", where="info.config.user_text", expected="string")
        cfg = RunConfig.from_dict(config)
        try:
            # a run trained on a GPU is still a valid run here: check all but the device's presence
            cfg.replace(device="cpu").validate()
        except LocalizedError as e:
            raise RunFileError("err.runfile_config", cause=e, path=self.name) from None
        except (TypeError, ValueError):
            raise self.fail("err.runfile_field", where="info.config", expected="object") from None
        vocab = self.field(d, "vocab_size", int, "info.vocab_size")
        self.range(vocab, 1, 100_000, "info.vocab_size")
        n_params = self.field(d, "n_params", int, "info.n_params")
        self.range(n_params, 0, 10**12, "info.n_params")
        entropy = self.finite(
            self.field(d, "unigram_entropy", (int, float), "info.unigram_entropy"),
            "info.unigram_entropy",
        )
        floor = self.optional(d, "floor", (int, float), "info.floor")
        if floor is not None:
            floor = self.finite(floor, "info.floor")
        names = {}
        for key, most in (("norm_names", 8), ("param_names", 16), ("stat_names", 16)):
            value = self.field(d, key, list, f"info.{key}")
            if len(value) > most or not all(isinstance(v, str) and 0 < len(v) <= 40 for v in value):
                raise self.fail("err.runfile_field", where=f"info.{key}", expected="array")
            names[key] = value
        if not names["param_names"] or not names["stat_names"]:
            raise self.fail("err.runfile_field", where="info.stat_names", expected="array")
        edges = self.field(d, "hist_edges", list, "info.hist_edges")
        self.range(len(edges), 2, 1025, "len(info.hist_edges)")
        edge_values = [
            self.finite(self.number(e, f"info.hist_edges[{i}]"), f"info.hist_edges[{i}]") for i, e in enumerate(edges)
        ]
        if any(b <= a for a, b in zip(edge_values, edge_values[1:])):
            raise self.fail("err.runfile_field", where="info.hist_edges (increasing)", expected="array")
        return RunInfo(
            config=cfg,
            vocab_size=vocab,
            n_params=n_params,
            unigram_entropy=entropy,
            floor=floor,
            norm_names=names["norm_names"],
            param_names=tuple(names["param_names"]),
            stat_names=tuple(names["stat_names"]),
            hist_edges=np.asarray(edge_values, np.float64),
        )

    def number(self, value: Any, where: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail("err.runfile_field", where=where, expected="number")
        return float(value)

    def range(self, value: float, lo: float, hi: float, where: str) -> None:
        if not lo <= value <= hi:
            raise self.fail("err.runfile_range", where=where, lo=lo, hi=hi, value=value)

    def scalars(self, d: dict, planned: int) -> tuple[list[int], dict[str, list[float]]]:
        steps = self.field(d, "step", list, "scalars.step")
        if len(steps) > planned:
            raise self.fail("err.runfile_too_many_steps", have=len(steps), steps=planned)
        prev = 0
        for s in steps:
            if isinstance(s, bool) or not isinstance(s, int) or not prev < s <= planned:
                raise self.fail("err.runfile_steps", steps=planned, value=s, prev=prev)
            prev = s
        out: dict[str, list[float]] = {"step": list(steps)}
        for column in _SCALARS[1:]:
            values = self.field(d, column, list, f"scalars.{column}")
            if len(values) != len(steps):
                raise self.fail(
                    "err.runfile_length",
                    where=f"scalars.{column}",
                    have=len(values),
                    want=len(steps),
                )
            floats = [self.scalar(v, f"scalars.{column}[{i}]") for i, v in enumerate(values)]
            if column in _FINITE_SCALARS:
                for i, x in enumerate(floats):
                    self.finite(x, f"scalars.{column}[{i}]")
            out[column] = floats
        return steps, out

    def scalar(self, value: Any, where: str) -> float:
        if value is None:
            return math.nan
        if value == "inf" or value == "-inf":
            return float(value)
        return self.number(value, where)

    def created(self, value: Any) -> float | None:
        if value is None:
            return None
        if isinstance(value, str):
            try:
                when = datetime.fromisoformat(value)
            except ValueError:
                pass
            else:
                if when.tzinfo is None:
                    when = when.replace(tzinfo=UTC)
                return when.timestamp()
        raise self.fail("err.runfile_field", where="created", expected="ISO 8601 string")

    def probe_steps(self, values: list, step_set: set[int]) -> list[int]:
        prev = 0
        for v in values:
            if isinstance(v, bool) or not isinstance(v, int) or v <= prev:
                raise self.fail("err.runfile_field", where="probe_steps", expected="array")
            if v not in step_set:
                raise self.fail("err.runfile_probe_step", value=v)
            prev = v
        return list(values)

    def array(self, name: str, d: dict, want: tuple[int, ...]) -> np.ndarray:
        shape = d.get("shape")
        if (
            not isinstance(shape, list)
            or not all(isinstance(n, int) and not isinstance(n, bool) for n in shape)
            or tuple(shape) != want
        ):
            raise self.fail("err.runfile_shape", name=name, have=shape, want=list(want))
        encoding, payload = d.get("encoding"), d.get("data")
        try:
            if encoding == "base64" and isinstance(payload, str):
                buf = base64.b64decode(payload, validate=True)
                arr = np.frombuffer(buf, dtype="<f4").reshape(want)
            elif encoding == "list" and isinstance(payload, list):
                arr = np.array(payload, dtype=np.float32).reshape(want)
            else:
                raise ValueError(encoding)
        except (binascii.Error, ValueError, TypeError):
            raise self.fail("err.runfile_array", name=name, want=list(want)) from None
        arr = arr.astype(np.float32)  # native order, writable
        if name in _HISTOGRAMS:
            bad = ~np.isnan(arr) & ((arr < 0) | (arr > 1 + 1e-5))
            if bad.any():
                raise self.fail(
                    "err.runfile_range",
                    where=f"probes.{name}",
                    lo=0,
                    hi=1,
                    value=float(arr[bad][0]),
                )
        elif name in _NON_NEGATIVE and (arr < 0).any():
            raise self.fail(
                "err.runfile_range",
                where=f"probes.{name}",
                lo=0,
                hi="inf",
                value=float(arr[arr < 0][0]),
            )
        return arr


def _type_name(kind: type | tuple) -> str:
    names = {
        dict: "object",
        list: "array",
        str: "string",
        int: "integer",
        float: "number",
        bool: "boolean",
    }
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if set(kinds) == {int, float}:
        return "number"
    return " or ".join(names.get(k, k.__name__) for k in kinds)


# --- with a store ---------------------------------------------------------------------------------------
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
    data = store.open_run(run_id)
    if fmt == "run":
        try:
            path = write_run_file(
                data,
                out,
                label=summary.label,
                created=summary.created,
                probe_stride=probe_stride,
            )
        except LocalizedError as e:
            if e.key == "err.export_too_large":
                raise LocalizedError("err.export_too_large", **{**e.params, "run_id": run_id}) from None
            raise
        return [path]
    header = {
        "run_id": run_id,
        "label": summary.label,
        "created": _iso(summary.created),
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
