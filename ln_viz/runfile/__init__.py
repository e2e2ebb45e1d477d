"""Runs as files: one JSON run file to share (this package), and the tidy tables (ln_viz.tables),
re-exported here. Putting a run file into a store and getting it out again is the store's part
(ln_viz.store.transfer: import_run, add_loaded_run, export_run, load_demo_runs, DEMO_DIR).

The run file (`write_run_file`, `read_run_file`): one JSON object, UTF-8, gzip-compressed when the
name ends in `.gz` (reading detects gzip by its magic bytes, not the name):

    format        "ln-viz-run"
    version       1 (FORMAT_VERSION); a reader refuses a newer version
    label         string or null
    created       ISO 8601 time the run started, or null
    status        one of names.STATUSES; message: i18n key or null
    stalled_since, diverged_at      step or null
    info          RunInfo.to_dict(): config (RunConfig fields), vocab_size, n_params,
                  unigram_entropy, floor, norm_names, param_names, stat_names, hist_edges
    scalars       {name: [...]} for each schema.SCALARS name, in the table below ("step": [1, 2, ...]):
                  equal-length lists; a number, null for NaN, "inf" or "-inf"
    probe_steps   [steps with probes], a subset of scalars.step (may be thinned: `probe_stride`)
    probes        {name: array} for each schema.PROBES name, shape (len(probe_steps), ...):
                  {"shape": [...], "encoding": "base64", "data": base64 of little-endian float32,
                  C order}; a reader also accepts {"shape": [...], "encoding": "list", "data": nested
                  lists of numbers, null for NaN}

The measurements (ln_viz.schema; a probe's shape is per probe step, in named dimensions; a test
checks this table against the schema):

    scalar  step            ()                       int64    step
            1-based update number
    scalar  loss            ()                       float64  nats
            mean cross-entropy per token of the step's batch (NaN or inf at divergence)
    scalar  lr              ()                       float64  1
            learning rate of the step's update
    scalar  grad_norm       ()                       float64  L2 norm
            norm of all parameters' gradients together
    scalar  elapsed         ()                       float64  s
            seconds since training started
    scalar  steps_per_sec   ()                       float64  steps/s
            moving average of the training rate
    scalar  eval_loss       ()                       float64  nats
            held-out loss; NaN except at eval steps
    probe   resid_hist      (depth, bins)            float32  fraction
            residual stream after each block: fraction of elements per bin
    probe   resid_stats     (depth, stats)           float32  value
            residual stream after each block: stats
    probe   norm_in_hist    (depth, norms, bins)     float32  fraction
            input of each norm (Post-LN: x + F(x)): fraction of elements per bin
    probe   norm_in_stats   (depth, norms, stats)    float32  value
            input of each norm: stats
    probe   attn_entropy    (depth)                  float32  nats
            mean attention entropy over heads and positions of the batch's first 8 sequences
    probe   input_stats     (stats)                  float32  value
            embeddings into block 1 (layer 0): stats
    probe   grad_norm       (depth, params)          float32  L2 norm
            Frobenius norm of each weight matrix's gradient (NaN at a diverged step)
    probe   block_grad_norm (depth)                  float32  L2 norm
            norm of all of a block's gradients together (NaN at a diverged step)
    probe   update_ratio    (depth)                  float32  ratio
            ||w_after - w_before|| / ||w_before|| per block
    probe   attn_logit_max  (depth)                  float32  logit
            largest |q.k|/sqrt(d_head) before the softmax, the batch's first 8 sequences (Wortsman 2023)
    probe   logz_stats      (stats)                  float32  nats
            log Z (logsumexp of the output logits) of each token of the batch: stats
    probe   massive_act     (depth)                  float32  ratio
            residual stream after each block: largest |h| over the median |h| (Sun 2024, massive activations)
    probe   dyt_saturation  (depth, norms)           float32  fraction
            fraction of each DyT norm's tanh inputs with |alpha x| > 2 (NaN for a norm that is not DyT)
    probe   angular_update  (depth)                  float32  rad
            largest angle between a block weight matrix before and after the step, over the block's six (Kosson 2024)
    probe   precond_lag     (depth)                  float32  ratio
            largest |g| / (sqrt(v_hat) + eps) over a block's weight matrices after the step (NaN: not Adam)
    probe   norm_in_min_rms (depth, norms)           float32  value
            input of each norm: smallest per-token std (LayerNorm) or RMS (RMSNorm, DyT) (Odonnat 2024)
    probe   attn_logit_max_head (depth, heads)           float32  logit
            largest |q.k|/sqrt(d_head) of each head over the whole batch (QK-Clip's S, Kimi K2 2025)

Reading validates everything before anything is stored: a file ln-viz would not have written is
refused with one sentence (RunFileError, in English and Korean; a value it repeats is cut to a short
prefix with its length) and the store is left unchanged. Nothing is ever unpickled or torch.load-ed.
Import is the one gate: what it accepts, every page, chart, table and export can draw. So beyond types
and shapes it holds each field to what a trainer writes: `created` between 1970 and 3000; the header's
vocab_size within the corpus's MAX_VOCAB, unigram_entropy and floor within [0, ln(vocab_size)]; the
names (norm_names, param_names, stat_names) and hist_edges exactly ln-viz's; each scalar and probe value
within the schema's range (ln_viz.schema: lo/hi, STAT_RANGES, finite ones within float32's range);
`message` a `msg.*` catalog key; the config as RunConfig.validate checks it, its user text within the
corpus's limits (2,000,000 characters); scalar and probe names only the schema's. Before the JSON parse
the file's values are counted (`count_values`) and capped at MAX_JSON_VALUES, so a small file of
`[],[],...` cannot take a gigabyte to parse. A stored row that fails the same checks (an older ln-viz,
another program) is read back as damaged: one sentence, never a page's exception.
"""

from ln_viz.runfile.document import (
    MAX_FILE_BYTES,
    MAX_JSON_VALUES,
    MAX_LISTED_VALUES,
    MAX_UNPACKED_BYTES,
    LoadedRun,
    count_values,
    encode_run,
    fingerprint_of,
    parse_run,
    read_run_bytes,
    read_run_data,
    read_run_file,
    run_document,
    thin_probe_steps,
    unpack_run_bytes,
    write_run_file,
)
from ln_viz.runfile.format import FORMAT, FORMAT_VERSION, RunFileError
from ln_viz.tables import (
    EXPORT_FORMATS,
    TABLE_FORMATS,
    TABLES,
    export_tables,
    grad_norm_table,
    histogram_table,
    layer_stats_table,
    layer_table,
    log_z_table,
    scalars_table,
    tables,
)

__all__ = [
    "EXPORT_FORMATS",
    "FORMAT",
    "FORMAT_VERSION",
    "MAX_FILE_BYTES",
    "MAX_JSON_VALUES",
    "MAX_LISTED_VALUES",
    "MAX_UNPACKED_BYTES",
    "TABLES",
    "TABLE_FORMATS",
    "LoadedRun",
    "RunFileError",
    "encode_run",
    "export_tables",
    "count_values",
    "fingerprint_of",
    "grad_norm_table",
    "histogram_table",
    "layer_stats_table",
    "layer_table",
    "log_z_table",
    "parse_run",
    "read_run_bytes",
    "read_run_data",
    "read_run_file",
    "run_document",
    "scalars_table",
    "tables",
    "thin_probe_steps",
    "unpack_run_bytes",
    "write_run_file",
]
