"""A run as tidy tables (CSV, Parquet) to analyse elsewhere; the columns are ln_viz.schema's measurements.

Tidy tables (`tables(data)`; `export_tables` writes each as `<name>.csv` or `<name>.parquet` plus
`info.json`, the run's header). Layers count from 1 at the input side; layer 0 is the embeddings.
A site is where in a block a tensor was measured: `resid` is the residual stream after the block,
a norm name (`ln1`, `ln2`, and for Peri-LN and reordered `ln1_out`, `ln2_out`) is that norm's input.

    table        columns
    -----------  ------------------------------------------------------------------------------------
    scalars      step, loss, lr, grad_norm, eval_loss, elapsed, steps_per_sec    one row per step;
                 each as ln_viz.schema.SCALARS describes it (unit, NaN where undefined)
    histograms   step, layer, site, bin_left, bin_right, fraction               long format: the
                 fraction of a tensor's elements in [bin_left, bin_right); rows only for bins with a
                 non-zero fraction (an absent bin is 0); values beyond the edges are in layer_stats
    layer_stats  step, layer, site, mean, std, rms, max_abs, frac_below, frac_above, dyt_saturation, min_token_rms
                 one row per (probe step, layer, site); site `input` at layer 0 is the embeddings into
                 block 1; dyt_saturation is a DyT norm's (NaN at resid, input and other norms);
                 min_token_rms is a norm input's smallest per-token std (LayerNorm) or RMS (RMSNorm,
                 DyT): schema's norm_in_min_rms, NaN at resid and input
    grad_norms   step, layer, param, grad_norm           Frobenius norm of each weight's gradient;
                 param is attn.q, attn.k, attn.v, attn.o, ffn.w1, ffn.w2
    layers       step, layer, attn_entropy, block_grad_norm, update_ratio, attn_logit_max, massive_act,
                 angular_update, precond_lag
                 the probe arrays with one value per block, as ln_viz.schema.PROBES describes them
    log_z        step, mean, std, rms, max_abs, frac_below, frac_above    one row per probe step: the
                 stats of log Z (logsumexp of the output logits) over the step's tokens (logz_stats)

Probe values are float32 (as measured), scalars float64; CSV writes each value as the shortest text
that reads back to the same number at that precision (read probe columns as float32 to get them bit
for bit). NaN (an empty CSV cell) marks a value not measured, such as a diverged step's gradients.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ln_viz.i18n import LocalizedError
from ln_viz.schema import PROBES, SCALARS

if TYPE_CHECKING:
    from ln_viz.snapshot import RunData

TABLE_FORMATS = ("csv", "parquet")
EXPORT_FORMATS = ("csv", "parquet", "run")  # the tables, or one run file (ln_viz.runfile)
# measurements first, wall-clock bookkeeping last
SCALAR_TABLE_COLUMNS = tuple(sorted(SCALARS, key=lambda name: SCALARS[name].timing))
LAYER_COLUMNS = tuple(name for name, m in PROBES.items() if m.shape == ("depth",))  # one value per block


def scalars_table(data: RunData) -> pd.DataFrame:
    """One row per step: step, loss, lr, grad_norm, eval_loss, elapsed, steps_per_sec."""
    return data.scalars_df()[list(SCALAR_TABLE_COLUMNS)]


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
    saturation = dict(_sites(data, "resid_stats", "dyt_saturation")[1:])  # norm name -> (P, L)
    min_rms = dict(_sites(data, "resid_stats", "norm_in_min_rms")[1:])  # norm name -> (P, L)
    for site, stats in _sites(data, "resid_stats", "norm_in_stats"):  # (P, L, stats)
        P, L, _ = stats.shape
        frame = pd.DataFrame(
            {
                "step": np.repeat(steps, L),
                "layer": np.tile(np.arange(1, L + 1), P),
                "site": site,
            }
        )
        frame = frame.join(pd.DataFrame(stats.reshape(P * L, -1), columns=stat_names))
        frame["dyt_saturation"] = saturation[site].reshape(-1) if site in saturation else np.float32("nan")
        frame["min_token_rms"] = min_rms[site].reshape(-1) if site in min_rms else np.float32("nan")
        parts.append(frame)
    columns = {"step": np.int64, "layer": np.int64, "site": str} | dict.fromkeys(stat_names, np.float32)
    columns["dyt_saturation"] = columns["min_token_rms"] = np.float32
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
    """step, layer, then each probe with one value per block (attn_entropy, ..., massive_act)."""
    steps = np.asarray(data.probe_steps, np.int64)
    L = data.info.config.depth
    frame = {
        "step": np.repeat(steps, L),
        "layer": np.tile(np.arange(1, L + 1), len(steps)),
    }
    for name in LAYER_COLUMNS:
        values = data.probe(name)
        frame[name] = values.reshape(-1) if len(steps) else np.zeros(0, np.float32)
    return pd.DataFrame(frame).astype({"step": np.int64, "layer": np.int64})


def log_z_table(data: RunData) -> pd.DataFrame:
    """step, then the stats of log Z over the step's tokens (mean, std, rms, max_abs, ...)."""
    steps = np.asarray(data.probe_steps, np.int64)
    stat_names = list(data.info.stat_names)
    values = data.probe("logz_stats") if len(steps) else np.zeros((0, len(stat_names)), np.float32)
    frame = pd.DataFrame({"step": steps}).join(pd.DataFrame(values, columns=stat_names))
    return frame.astype({"step": np.int64} | dict.fromkeys(stat_names, np.float32))


TABLES = {
    "scalars": scalars_table,
    "histograms": histogram_table,
    "layer_stats": layer_stats_table,
    "grad_norms": grad_norm_table,
    "layers": layer_table,
    "log_z": log_z_table,
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
