"""Checking a parsed run file field by field before anything is built from it: a file ln-viz would not
have written is refused with one sentence naming the first problem. The rules for the measurements
(which scalars must be finite, which probe arrays lie in [0, 1] or are non-negative, their shapes)
come from ln_viz.schema.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import math
from datetime import UTC, datetime
from typing import Any

import numpy as np

from ln_viz.config import FIELDS, RunConfig
from ln_viz.corpus import MAX_USER_CHARS, MAX_VOCAB, user_text_corpus
from ln_viz.i18n import EN, LocalizedError
from ln_viz.runfile.format import FORMAT, FORMAT_VERSION, RunFileError
from ln_viz.runmeta import MAX_LABEL_CHARS, first_surrogate, in_time_range
from ln_viz.schema import (
    FINITE_LIMIT,
    HIST_EDGES,
    PARAM_NAMES,
    PROBES,
    SCALAR_NAMES,
    SCALARS,
    STAT_NAMES,
    STAT_RANGES,
    STATUSES,
    norm_names,
)
from ln_viz.snapshot import RunData, RunInfo, Snapshot
from ln_viz.text import Echo

MAX_N_PARAMS = 10**12
_LIMIT = f"{FINITE_LIMIT:.2g}"  # a bound as a sentence shows it: 3.4e+38
_FROM_THE_FILE = {"value", "have", "name", "prev", "version"}  # the parameters a sentence echoes from the file


class Validator:
    """Checks a parsed run document field by field; the first problem raises RunFileError."""

    def __init__(self, name: str, *, corpus_checks: bool = True) -> None:
        self.name = name
        # a user text is built into a corpus to check it (seconds for 2,000,000 characters): an import
        # does; a stored run read back, whose text no chart reads, only has its length checked
        self.corpus_checks = corpus_checks

    def fail(self, key: str, **params: object) -> RunFileError:
        """The refusal: every value it echoes is cut to a short prefix (a file may hold a megabyte where a
        word belongs, and the sentence is shown on a page)."""
        echoed = {k: Echo(v) if k in _FROM_THE_FILE else v for k, v in params.items()}
        return RunFileError(key, path=_path(self.name), **echoed)

    def field(self, obj: dict, key: str, kind: type | tuple, where: str) -> Any:
        value = obj.get(key) if isinstance(obj, dict) else None
        bad_bool = isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,))
        if not isinstance(value, kind) or bad_bool:
            if value is None and isinstance(obj, dict) and key in obj:  # there, and null: not "missing" (L8)
                raise self.fail("err.runfile_null", where=where, expected=_type_name(kind))
            raise self.fail("err.runfile_field", where=where, expected=_type_name(kind))
        return value

    def optional(self, obj: dict, key: str, kind: type | tuple, where: str) -> Any:
        if obj.get(key) is None:
            return None
        return self.field(obj, key, kind, where)

    def unicode(self, text: str, where: str) -> None:
        """Text a store, a terminal and a page can encode: no lone surrogate (valid JSON may hold one)."""
        at = first_surrogate(text)
        if at is not None:
            raise self.fail("err.runfile_not_unicode", where=where, at=at)

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
        message = self.message(doc.get("message"))
        label = self.optional(doc, "label", str, "label")
        if label is not None:
            self.range(len(label), 0, MAX_LABEL_CHARS, "len(label)")
            self.unicode(label, "label")
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
            raise self.fail("err.runfile_mark", where=key, value=value)
        return value

    def message(self, value: Any) -> str | None:
        """The run's last status message: a key of the catalog's `msg.*` sentences, or null."""
        if value is None:
            return None
        if not isinstance(value, str):
            raise self.fail("err.runfile_field", where="message", expected="msg.* key")
        if not value.startswith("msg.") or value not in EN:  # it is there: not "missing or not of type"
            raise self.fail("err.runfile_message", value=value)
        return value

    def known(self, d: dict, names: tuple[str, ...], where: str) -> None:
        """Only the schema's names: a renamed or unknown measurement is refused, not silently dropped."""
        for name in d:
            if name not in names:
                near = difflib.get_close_matches(str(name), list(names), n=3, cutoff=0.0)  # a sentence, not all names
                raise self.fail("err.runfile_unknown_name", where=where, name=name, n=len(names), known=", ".join(near))

    def probes(self, probes: dict, info: RunInfo, probe_steps: list[int]) -> dict[int, dict[str, np.ndarray]]:
        """{probe step: {name: that step's array}} of every schema.PROBES array, each of its shape."""
        self.known(probes, tuple(PROBES), "probes")
        shapes = info.probe_shapes()
        by_step: dict[int, dict[str, np.ndarray]] = {step: {} for step in probe_steps}
        if not probe_steps:
            return by_step  # a run without probes may leave them out
        for name, m in PROBES.items():
            want = (len(probe_steps), *shapes[name])
            if m.optional and name not in probes:  # a file from before this probe existed
                arr = np.full(want, np.nan, m.dtype)
            else:
                arr = self.array(name, self.field(probes, name, dict, f"probes.{name}"), want)
            for step, values in zip(probe_steps, arr):
                by_step[step][name] = values
        return by_step

    # --- the header -----------------------------------------------------------------------------
    def info(self, d: dict) -> RunInfo:
        """The header, checked against what a trainer writes, then parsed the one way RunInfo is
        (`RunInfo.from_dict`)."""
        cfg = self.config(self.field(d, "config", dict, "info.config"))
        vocab = self.field(d, "vocab_size", int, "info.vocab_size")
        self.range(vocab, 1, MAX_VOCAB, "info.vocab_size")
        self.range(self.field(d, "n_params", int, "info.n_params"), 0, MAX_N_PARAMS, "info.n_params")
        # an entropy of characters is at most that of a uniform guess, ln(V); so is the floor below it
        top = math.log(vocab) + 1e-6
        entropy = self.number(d.get("unigram_entropy"), "info.unigram_entropy")
        self.range(entropy, 0, top, "info.unigram_entropy")
        floor = self.optional(d, "floor", (int, float), "info.floor")
        if floor is not None:
            self.range(self.number(floor, "info.floor"), 0, top, "info.floor")
        for key, want in (
            ("norm_names", norm_names(cfg.norm_position)),
            ("param_names", PARAM_NAMES),
            ("stat_names", STAT_NAMES),
        ):
            if self.field(d, key, list, f"info.{key}") != list(want):
                raise self.fail("err.runfile_names", where=f"info.{key}", want=", ".join(want))
        edges = self.field(d, "hist_edges", list, "info.hist_edges")
        # Equal to ours up to rounding: the edges are sinh of a linspace, and sinh's last bit differs between
        # machines (a run file made on one CPU was refused on another). 1e-12 relative is a few ulps; a moved
        # edge (any real change of the bins) is refused.
        if len(edges) != len(HIST_EDGES) or any(
            isinstance(e, bool) or not isinstance(e, (int, float)) or not math.isclose(e, w, rel_tol=1e-12)
            for e, w in zip(edges, HIST_EDGES)
        ):
            raise self.fail("err.runfile_edges", n=len(HIST_EDGES), lo=HIST_EDGES[0], hi=HIST_EDGES[-1])
        return RunInfo.from_dict({**d, "config": cfg.to_dict()})

    def config(self, config: dict) -> RunConfig:
        """The run's RunConfig as RunConfig.validate checks it (the device's presence aside), whole numbers
        as int, and its user text within the corpus's limits."""
        text = config.get("user_text")
        if text is not None and not isinstance(text, str):
            raise self.fail("err.runfile_field", where="info.config.user_text", expected="string")
        if text is not None:
            self.unicode(text, "info.config.user_text")
        try:
            if text is not None and len(text) > MAX_USER_CHARS:  # before anything reads all of it
                raise LocalizedError("err.text_too_large", have=len(text), limit=MAX_USER_CHARS)
            cfg = RunConfig.from_dict(config)
            # a run trained on a GPU is still a valid run here: check all but the device's presence
            cfg.replace(device="cpu").validate()
            if cfg.corpus == "user" and self.corpus_checks:
                user_text_corpus(text or "", cfg.seq_len)
        except LocalizedError as e:
            raise RunFileError("err.runfile_config", cause=_cut_error(e), path=_path(self.name)) from None
        except (TypeError, ValueError):
            raise self.fail("err.runfile_field", where="info.config", expected="object") from None
        # validate() takes 6.0 for 6 (a link's parameter); a chart's range(depth) does not. Float fields
        # stay floats (JSON may hold weight_decay 0 as an int).
        kinds = {f.name: f.kind for f in FIELDS.values() if f.kind in (int, float)}
        fixed = {n: k(v) for n, k in kinds.items() if isinstance(v := getattr(cfg, n), (int, float))}
        return cfg.replace(**fixed)

    def number(self, value: Any, where: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail("err.runfile_field", where=where, expected="number")
        try:
            return float(value)
        except OverflowError:  # an integer of 400 digits
            raise self.fail("err.runfile_range", where=where, lo=f"-{_LIMIT}", hi=_LIMIT, value=value) from None

    def range(self, value: float, lo: float, hi: float, where: str) -> None:
        if not lo <= value <= hi:
            raise self.fail("err.runfile_range", where=where, lo=_number_text(lo), hi=_number_text(hi), value=value)

    # --- the measurements -----------------------------------------------------------------------
    def scalars(self, d: dict, planned: int) -> tuple[list[int], dict[str, list[float]]]:
        self.known(d, SCALAR_NAMES, "scalars")
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
            m = SCALARS[column]
            self.within(f"scalars.{column}", np.asarray(floats, dtype=np.float64), m.lo, m.hi)
            out[column] = floats
        return steps, out

    def scalar(self, value: Any, where: str) -> float:
        if value is None:
            return math.nan
        if value == "inf" or value == "-inf":
            return float(value)
        return self.number(value, where)

    def created(self, value: Any) -> float | None:
        """The run's start as unix seconds, one a page can show in any time zone (runmeta.TIME_RANGE)."""
        if value is None:
            return None
        when = None
        if isinstance(value, str) and len(value) <= 40:
            try:
                when = datetime.fromisoformat(value)
                if when.tzinfo is None:
                    when = when.replace(tzinfo=UTC)
                seconds = when.timestamp()
            except (ValueError, OverflowError, OSError):
                when = None
        if when is None:
            raise self.fail("err.runfile_field", where="created", expected="ISO 8601 string")
        if not in_time_range(seconds):
            raise self.fail("err.runfile_created", value=value)
        return seconds

    def probe_steps(self, values: list, step_set: set[int]) -> list[int]:
        """Steps of the run, each once, in increasing order; the sentence names the entry that is not."""
        prev = 0
        for i, v in enumerate(values):
            if isinstance(v, bool) or not isinstance(v, int):
                raise self.fail("err.runfile_field", where=f"probe_steps[{i}]", expected="integer")
            if v not in step_set:
                raise self.fail("err.runfile_probe_step", value=v)
            if v <= prev:
                raise self.fail("err.runfile_probe_order", value=v, prev=prev)
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
                with np.errstate(over="ignore"):  # 1e300 is inf in float32: the range check says so
                    arr = np.array(payload, dtype=np.float32).reshape(want)
            else:
                raise ValueError(encoding)
        except (binascii.Error, ValueError, TypeError, OverflowError, RecursionError):
            raise self.fail("err.runfile_array", name=name, want=list(want)) from None
        arr = arr.astype(np.float32)  # native order, writable
        m = PROBES[name]
        if m.shape and m.shape[-1] == "stats":
            for i, stat in enumerate(STAT_NAMES):  # each statistic has its own range (std >= 0, ...)
                self.within(f"probes.{name}[..., {i}] ({stat})", arr[..., i], *STAT_RANGES[stat])
        else:
            self.within(f"probes.{name}", arr, m.lo, m.hi)
        return arr

    def within(self, where: str, arr: np.ndarray, lo: float | None, hi: float | None) -> None:
        """Values within [lo, hi] (None: unbounded, then an infinity there passes), finite ones within
        +-FINITE_LIMIT; NaN passes (not measured, or a diverged step)."""
        with np.errstate(invalid="ignore"):
            top = np.inf if hi is None else hi + 1e-5  # float32 sums of histogram shares reach 1 + 1e-7
            bottom = -np.inf if lo is None else lo
            finite = np.isfinite(arr)
            bad = (arr < bottom) | (arr > top) | (finite & (np.abs(arr) > FINITE_LIMIT))
        if bad.any():
            value = float(arr[bad][0])
            huge = math.isfinite(value) and abs(value) > FINITE_LIMIT  # beyond float32, not an infinity
            shown_lo = f"-{_LIMIT}" if lo is None else _number_text(lo)
            shown_hi = (_LIMIT if huge else "inf") if hi is None else _number_text(hi)
            raise self.fail("err.runfile_range", where=where, lo=shown_lo, hi=shown_hi, value=value)


# --- echoed values: ln_viz.text.Echo cuts each value a sentence repeats (also lists and huge ints)


def _path(name: str) -> str:
    """A file's name in a sentence: whole (the user's own path), unless an upload's name is absurdly long."""
    return name if len(name) <= 200 else f"{name[:200]}... ({len(name)} characters)"


def _cut_error(e: LocalizedError) -> LocalizedError:
    """The same sentence with every echoed value cut (ConfigError repeats a field's value in full)."""
    return LocalizedError(e.key, **{k: Echo(v) for k, v in e.params.items()})


def _number_text(x: float) -> int | str:
    """0.0 -> 0, ln(V) to 6 digits, as the sentence shows a bound."""
    return int(x) if float(x).is_integer() and abs(x) < 2**63 else f"{x:.6g}"


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
