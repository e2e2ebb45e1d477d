"""Checking a parsed run file field by field before anything is built from it: a file ln-viz would not
have written is refused with one sentence naming the first problem. The rules for the measurements
(which scalars must be finite, which probe arrays lie in [0, 1] or are non-negative, their shapes)
come from ln_viz.schema.
"""

from __future__ import annotations

import base64
import binascii
import math
from datetime import UTC, datetime
from typing import Any

import numpy as np

from ln_viz.config import RunConfig
from ln_viz.i18n import LocalizedError
from ln_viz.names import STATUSES
from ln_viz.runfile.document import FORMAT, FORMAT_VERSION, RunFileError
from ln_viz.schema import PROBES, SCALAR_NAMES, SCALARS
from ln_viz.snapshot import RunData, RunInfo, Snapshot
from ln_viz.store.rows import MAX_LABEL_CHARS


class Validator:
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
    def run(self, doc: Any) -> tuple[RunData, str | None, float | None]:
        """(the run, the file's label, its created time in unix seconds) of a valid document."""
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
        stalled_since, diverged_at = (self.mark(doc, key, step_set) for key in ("stalled_since", "diverged_at"))
        probe_steps = self.probe_steps(self.field(doc, "probe_steps", list, "probe_steps"), step_set)
        probes = self.probes(self.field(doc, "probes", dict, "probes"), info, probe_steps)
        snaps = (
            Snapshot(
                **{name: column[i] for name, column in scalars.items()},
                stalled=stalled_since is not None and step >= stalled_since,
                probes=probes.get(step),
            )
            for i, step in enumerate(steps)
        )
        data = RunData.from_snapshots(info, snaps)  # replayed as the store's copy is: stalled_since from the flags
        data.settle(status, message, diverged_at)
        return data, label, created

    def mark(self, doc: dict, key: str, step_set: set[int]) -> int | None:
        """A step the run file marks (stalled_since, diverged_at): one of its steps, or null."""
        value = self.optional(doc, key, int, key)
        if value is not None and value not in step_set:
            raise self.fail("err.runfile_probe_step", value=value)
        return value

    def probes(self, probes: dict, info: RunInfo, probe_steps: list[int]) -> dict[int, dict[str, np.ndarray]]:
        """{probe step: {name: that step's array}} of every schema.PROBES array, each of its shape."""
        shapes = info.probe_shapes()
        by_step: dict[int, dict[str, np.ndarray]] = {step: {} for step in probe_steps}
        if not probe_steps:
            return by_step  # a run without probes may leave them out
        for name in PROBES:
            want = (len(probe_steps), *shapes[name])
            arr = self.array(name, self.field(probes, name, dict, f"probes.{name}"), want)
            for step, values in zip(probe_steps, arr):
                by_step[step][name] = values
        return by_step

    # --- parts ----------------------------------------------------------------------------------
    def info(self, d: dict) -> RunInfo:
        """The header, checked, then parsed the one way RunInfo is (`RunInfo.from_dict`)."""
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
        self.range(self.field(d, "n_params", int, "info.n_params"), 0, 10**12, "info.n_params")
        self.finite(self.field(d, "unigram_entropy", (int, float), "info.unigram_entropy"), "info.unigram_entropy")
        floor = self.optional(d, "floor", (int, float), "info.floor")
        if floor is not None:
            self.finite(floor, "info.floor")
        for key, most in (("norm_names", 8), ("param_names", 16), ("stat_names", 16)):
            value = self.field(d, key, list, f"info.{key}")
            if len(value) > most or not all(isinstance(v, str) and 0 < len(v) <= 40 for v in value):
                raise self.fail("err.runfile_field", where=f"info.{key}", expected="array")
        if not d["param_names"] or not d["stat_names"]:
            raise self.fail("err.runfile_field", where="info.stat_names", expected="array")
        edges = self.field(d, "hist_edges", list, "info.hist_edges")
        self.range(len(edges), 2, 1025, "len(info.hist_edges)")
        edge_values = [
            self.finite(self.number(e, f"info.hist_edges[{i}]"), f"info.hist_edges[{i}]") for i, e in enumerate(edges)
        ]
        if any(b <= a for a, b in zip(edge_values, edge_values[1:])):
            raise self.fail("err.runfile_field", where="info.hist_edges (increasing)", expected="array")
        return RunInfo.from_dict(d)

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
        for column in SCALAR_NAMES[1:]:
            values = self.field(d, column, list, f"scalars.{column}")
            if len(values) != len(steps):
                raise self.fail(
                    "err.runfile_length",
                    where=f"scalars.{column}",
                    have=len(values),
                    want=len(steps),
                )
            floats = [self.scalar(v, f"scalars.{column}[{i}]") for i, v in enumerate(values)]
            if SCALARS[column].finite:
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
        self.within(name, arr)
        return arr

    def within(self, name: str, arr: np.ndarray) -> None:
        """The schema's range of a probe array ([0, 1] for histograms, >= 0 for norms); NaN passes."""
        m = PROBES[name]
        if m.lo is None:
            return
        bad = (arr < m.lo) | (arr > m.hi + 1e-5) if m.hi is not None else arr < m.lo
        if bad.any():
            hi = "inf" if m.hi is None else _number_text(m.hi)
            where = f"probes.{name}"
            raise self.fail("err.runfile_range", where=where, lo=_number_text(m.lo), hi=hi, value=float(arr[bad][0]))


def _number_text(x: float) -> int | float:
    """0.0 -> 0, as the sentence shows a bound."""
    return int(x) if float(x).is_integer() else x


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
