"""Every user-facing sentence of ln-viz, in English and Korean, in one place.

The engine raises errors carrying a message key and its parameters; the CLI prints the English text,
the app prints the text of the language the user picked. Pages never hard-code a sentence: they call
`t(key, lang, **params)`. `tests/test_i18n.py` checks both catalogs have the same keys and
placeholders.
"""

from __future__ import annotations

import string

LANGS = ("en", "ko")
DEFAULT_LANG = "en"

EN: dict[str, str] = {
    # --- configuration errors (field names are the RunConfig / CLI names) -------------------
    "err.not_a_number": "{field} must be a number, got {value!r}.",
    "err.not_an_integer": "{field} must be a whole number, got {value!r}.",
    "err.not_finite": "{field} must be a finite number, got {value}.",
    "err.range": "{field} must be between {lo} and {hi}, got {value}.",
    "err.positive": "{field} must be greater than 0, got {value}.",
    "err.non_negative": "{field} must be 0 or more, got {value}.",
    "err.choice": "{field} must be one of {choices}, got {value!r}.",
    "err.lr_too_high": "lr must be at most {hi} (learning rates above that only measure overflow), got {value}.",
    "err.heads_divide": "d_model ({d_model}) must be divisible by heads ({heads}); try d_model={suggest}.",
    "err.warmup_longer": "warmup_steps ({warmup}) is longer than the run (steps={steps}); use at most {steps}.",
    "err.memory": (
        "this configuration needs about {need} of memory to train (batch {batch}, seq_len {seq}, "
        "depth {depth}, d_model {d_model}), more than the {limit} allowed; lower batch_size or seq_len."
    ),
    "err.device_cuda": "device 'cuda' was asked for but no CUDA device is present; use device='cpu'.",
    "err.unknown_preset": "unknown preset {value!r}; choose one of {choices}.",
    "err.user_text_missing": "corpus 'user' needs user_text (a string or a file).",
    "err.text_empty": "the text is empty; give at least {need} characters.",
    "err.text_not_utf8": "the file is not UTF-8 text (byte {pos} cannot be decoded); save it as UTF-8.",
    "err.text_binary": "the text looks binary ({count} control characters); give plain text.",
    "err.text_too_short": (
        "the text has {have} characters but seq_len {seq} needs at least {need}; give more text or lower seq_len."
    ),
    "err.text_too_large": "the text is {have} characters, above the limit of {limit}; give a shorter text.",
    "err.text_vocab": "the text has {have} distinct characters, above the limit of {limit}.",
    "err.file_missing": "file {path} does not exist.",
    "err.file_too_large": "file {path} is {have} bytes, above the limit of {limit} bytes.",
    # --- run store and run files (store.py, runfile.py) ------------------------------------------
    "err.store_not_sqlite": "{path} is not an ln-viz run store (not an SQLite database); give another --store path.",
    "err.store_open": "cannot open the run store {path} ({reason}); check the path and its permissions.",
    "err.store_newer": (
        "the run store {path} was written by a newer ln-viz (schema version {have}, this one reads up to "
        "{know}); upgrade ln-viz or use another --store path."
    ),
    "err.store_missing": "there is no run store at {path}; train with --store {path} to create one.",
    "err.store_old_readonly": (
        "the run store {path} has an older schema; open it once for writing (e.g. `python -m ln_viz runs list`) "
        "to upgrade it."
    ),
    "err.store_readonly": "the run store {path} was opened read-only; open it for writing to change it.",
    "err.run_not_found": "there is no run {run_id} in {path}; `python -m ln_viz runs list` shows the run ids.",
    "err.run_live": "run {run_id} is still being written by process {pid}; stop it before deleting it.",
    "err.label_too_long": "a label must be at most {limit} characters, got {have}.",
    "err.runfile_unpacked_too_large": "file {path} unpacks to more than {limit} bytes, too large for a run file.",
    "err.runfile_gzip": "file {path} is not a valid gzip file (it may be truncated); export the run again.",
    "err.runfile_json": "file {path} is not valid JSON ({reason}); it may be truncated or not a run file.",
    "err.runfile_format": "file {path} is not an ln-viz run file (its format is {value!r}, expected 'ln-viz-run').",
    "err.runfile_version_newer": (
        "file {path} is run file version {version}, newer than this ln-viz reads (up to {know}); upgrade ln-viz."
    ),
    "err.runfile_version": "file {path} has an unknown run file version {value!r}; expected a whole number from 1 to {know}.",
    "err.runfile_field": "file {path}: {where} is missing or is not of type {expected}.",
    "err.runfile_config": "file {path} holds an invalid run configuration: {reason}",
    "err.runfile_too_many_steps": "file {path} has {have} steps but its config says steps={steps}; it is not a run ln-viz wrote.",
    "err.runfile_steps": "file {path}: steps must be whole numbers increasing from 1 to at most {steps}, found {value} after {prev}.",
    "err.runfile_length": "file {path}: {where} has {have} values but the run has {want} steps.",
    "err.runfile_probe_step": "file {path}: probe step {value} is not one of the run's steps.",
    "err.runfile_shape": "file {path}: probe array {name} has shape {have}, but the run's header needs {want}.",
    "err.runfile_array": "file {path}: probe array {name} cannot be read as float32 data of shape {want}.",
    "err.runfile_not_finite": "file {path}: {where} must hold finite numbers, found {value}.",
    "err.runfile_range": "file {path}: {where} must be between {lo} and {hi}, found {value}.",
    "err.export_not_dir": "--out {path} is a file; csv and parquet exports write a folder of tables, so give a folder.",
    "err.export_too_large": (
        "run {run_id} would make a run file of {have} bytes, above the {limit} bytes an import accepts; keep fewer "
        "probe steps with --probe-stride."
    ),
    "err.export_is_dir": "--out {path} is a folder; a run file needs a file name, such as run.json.gz.",
    "err.write_failed": "cannot write {path} ({reason}); check that its folder exists, is writable and has space.",
    # --- run messages ---------------------------------------------------------------------------
    "msg.diverged": "The loss or a gradient became infinite or NaN at this step: the run diverged.",
    "msg.stopped": "The run was stopped; every step measured so far is kept.",
    "msg.time_cap": "The run reached this server's time limit of {seconds} s and was stopped; its steps are kept.",
    "msg.worker_error": "The run failed: {error}",
    "msg.worker_died": "The process training this run ended unexpectedly ({how}); the steps received are kept.",
    "msg.stalled": (
        "The loss has not got below the unigram loss (predicting letter frequencies only): the model is not learning."
    ),
    "msg.interrupted": (
        "The process training this run ended before the run did (closed, crashed or killed); the steps stored "
        "until then are kept."
    ),
    # --- presets: what the user should see -----------------------------------------------------
    "preset.post-ln-no-warmup": (
        "Post-LN, lr 3e-3, no warm-up: the loss stays flat on the unigram line; the model never gets past letter "
        "frequencies."
    ),
    "preset.post-ln-warmup": (
        "The same Post-LN model with 100 warm-up steps: once the learning rate has ramped up, the loss falls "
        "well below the unigram line."
    ),
    "preset.pre-ln-no-warmup": (
        "Pre-LN at the same learning rate, no warm-up: the loss drops at once and the gradient norms stay even "
        "across layers."
    ),
    "preset.deep-pre-ln": (
        "24 Pre-LN layers without warm-up still train; watch the residual stream widen layer by layer."
    ),
    "preset.deep-post-ln": (
        "24 Post-LN layers without warm-up: the gradients are largest next to the output and the loss stalls."
    ),
    "preset.deepnorm": (
        "24 DeepNorm layers (Post-LN with an up-weighted residual and a down-scaled init) train without "
        "warm-up, where 24 Post-LN layers stall."
    ),
    "preset.peri-ln": (
        "Peri-LN normalises each sub-layer's input and output: it trains without warm-up and keeps the "
        "residual stream tame."
    ),
    "preset.no-norm": (
        "No normalisation at all, as a control: the first steps overshoot (the loss jumps far above where it "
        "started) before it learns; nothing reins in the activations."
    ),
    # --- the app: labels, captions, status -----------------------------------------------------
    "ui.app_title": "ln-viz: LayerNorm placement, live",
    "nav.live": "Live training",
    "nav.compare": "Compare",
    "nav.init_lab": "Init lab",
    "nav.runs": "Runs",
    "nav.theory": "Theory",
    "compare.title": "Compare two configurations",
    "compare.scenario": "Scenario",
    "compare.post-vs-pre": (
        "Post-LN vs Pre-LN, no warm-up: same seed, same initial weights, same batches. Post-LN stays on the "
        "unigram line; Pre-LN drops below it at once."
    ),
    "compare.warmup-vs-none": (
        "Post-LN without and with 100 warm-up steps: the only difference is the learning-rate ramp, and it "
        "decides whether the model learns."
    ),
    "compare.deep-post-vs-pre": (
        "24 layers each, no warm-up: deep Post-LN stalls with its largest gradients next to the output; deep "
        "Pre-LN trains."
    ),
    "compare.deepnorm-rescue": (
        "24 layers each, no warm-up: Post-LN stalls; DeepNorm (an up-weighted residual and a down-scaled init) "
        "keeps Post-LN's placement and trains."
    ),
    "compare.run_a": "Run A",
    "compare.run_b": "Run B",
    "compare.start": "Start both",
    "compare.stop": "Stop both",
    "compare.stored": "Showing two stored runs (#{a} and #{b}); nothing is retrained.",
    "compare.clear_stored": "Back to live comparison",
    "compare.heatmaps_caption": (
        "Gradient norm per layer and step for A (left) and B (right), on one shared colour scale: the same "
        "colour means the same gradient."
    ),
    "compare.profile_caption": "Per-layer gradient norm (the paper's Figure 3) and residual std of both runs at the chosen step.",
    "compare.loss_caption": "Both training losses on one axis; the dashed line is the unigram loss.",
    "compare.differs": "A and B differ in: {fields}.",
    "compare.same": "A and B are the same configuration.",
    "init.title": "Init lab: gradients at initialisation",
    "init.intro": (
        "No training: one forward and backward pass per seed on a freshly initialised model, the measurement "
        "behind the paper's Figure 3. It takes seconds."
    ),
    "init.seeds": "Seeds",
    "init.param": "Weight matrix",
    "init.depths": "Depths for the last-layer chart",
    "init.noise_note": "Small batches make the per-layer shape noisy: at batch 8, sequence 32 it is much noisier.",
    "init.pick_position": "Pick at least one LayerNorm position.",
    "init.measuring": "Measuring gradients at initialisation...",
    "init.shipped": (
        "These default figures were measured in advance with this code (scripts/make_init_lab_default.py; "
        "the test suite measures them again and compares), so they appear at once. Change any setting to "
        "measure now."
    ),
    "init.pre_not_flat": (
        "Note: here Pre-LN's {param} gradient is not flat across layers as in the paper's Figure 3; it falls "
        "toward the output (last layer / first layer = {ratio}). Small models show this; what the paper "
        "predicts, and what holds here, is that Post-LN's gradient grows toward the output while Pre-LN's does not."
    ),
    "init.profile_caption": (
        "Gradient norm of one weight matrix in every layer at initialisation: the line is the mean over seeds, "
        "the band the range."
    ),
    "init.vs_depth_caption": (
        "The last layer's gradient against depth: Pre-LN's shrinks like 1/sqrt(L) (dashed reference); "
        "Post-LN's does not."
    ),
    "init.resid_caption": (
        "Mean square of the residual stream per layer, E||x_l||^2 / d: Pre-LN grows inside the paper's band "
        "1 + l/2 to 1 + 3l/2; Post-LN is renormalised to 1 after every layer."
    ),
    "init.cli_equivalent": "The same numbers from the command line",
    "ui.lang_label": "Language",
    "ui.preset": "Preset",
    "ui.preset_custom": "(your own settings)",
    "ui.depth": "Depth (layers)",
    "ui.norm_position": "LayerNorm position",
    "ui.lr": "Learning rate (peak)",
    "ui.warmup": "Warm-up steps",
    "ui.advanced": "Advanced",
    "ui.norm_type": "Norm type",
    "ui.d_model": "d_model (width)",
    "ui.heads": "Attention heads",
    "ui.batch_size": "Batch size",
    "ui.seq_len": "Sequence length",
    "ui.steps": "Training steps",
    "ui.seed": "Seed",
    "ui.optimizer": "Optimizer",
    "ui.schedule": "Schedule after warm-up",
    "ui.corpus": "Corpus",
    "ui.user_text": "Your text (used when the corpus is 'your text')",
    "ui.user_file": "...or upload a UTF-8 text file",
    "ui.probe_every": "Probe every N steps",
    "ui.start": "Start",
    "ui.stop": "Stop",
    "ui.not_started": "Pick a preset or your own settings, then press Start.",
    "ui.status_line": "Step {step}/{steps} | {rate} steps/s | ETA {eta} | {status}",
    "ui.queued": "Queued: place {pos} in line (this server trains at most {cap} at a time). It starts by itself.",
    "ui.thinned": (
        "While it trains, the charts over steps show one probe step in {stride} (at most {kept}), to keep the "
        "server light; every step is stored, and once the run ends the charts show all of them (up to 512)."
    ),
    "ui.thinned_finished": (
        "This run measured more probe steps than the charts draw: they show one in {stride}, evenly spaced "
        "(at most {kept}); the Runs page exports every one."
    ),
    "ui.thinned_unstored": (
        "These charts show one probe step in {stride}: the run could not be stored (the server log says why), "
        "so only the live copy is left."
    ),
    "ui.url_ignored": "Ignored '{param}={value}' from the link: {reason} The default is kept.",
    "ui.invalid_config": "Not started: {reason}",
    "ui.step_select": "Probe step to show",
    "ui.time_cap": "The run reached this server's time limit of {seconds} s and was stopped.",
    "status.queued": "queued",
    "status.running": "running",
    "status.completed": "completed",
    "status.diverged": "diverged",
    "status.stalled": "stalled",
    "status.stopped": "stopped",
    "status.failed": "failed",
    "status.interrupted": "interrupted",
    "norm.post": "Post-LN: x = LN(x + F(x))",
    "norm.pre": "Pre-LN: x = x + F(LN(x))",
    "norm.peri": "Peri-LN: x = x + LN(F(LN(x)))",
    "norm.deepnorm": "DeepNorm: x = LN(alpha*x + F(x))",
    "norm.none": "No normalisation",
    "normtype.layernorm": "LayerNorm",
    "normtype.rmsnorm": "RMSNorm",
    "corpus.english": "English text",
    "corpus.markov": "Synthetic Markov language (known entropy)",
    "corpus.user": "Your text",
    "schedule.constant": "constant",
    "schedule.inverse_sqrt": "inverse square root",
    "schedule.cosine": "cosine to zero",
    "optimizer.adam": "Adam (0.9, 0.98)",
    "optimizer.sgd": "SGD",
    "caption.loss": (
        "Training loss per step (nats per character) and held-out loss; the dashed line is the unigram loss "
        "(letter frequencies only). A run that stays on it is not learning. Dotted: the learning rate."
    ),
    "caption.grad_heatmap": (
        "Gradient norm of each layer (rows, input at the bottom) over the steps (columns), log colour: "
        "Post-LN's hot rows sit at the top, next to the output."
    ),
    "caption.act_dist": (
        "How the values in the residual stream are spread, layer by layer, at the chosen step: Post-LN stays "
        "at unit width; Pre-LN widens with depth."
    ),
    "caption.layer_profile": (
        "Gradient norm per layer at the chosen step (the paper's Figure 3) and the residual stream's standard "
        "deviation per layer."
    ),
    "caption.update_ratio": (
        "How much each step changes each layer's weights, relative to their size. Around 1e-3 is healthy; far "
        "above means the learning rate is too large for that layer."
    ),
    # --- charts (ln_viz/charts.py) ------------------------------------------------------------
    "chart.norm.post": "Post-LN",
    "chart.norm.pre": "Pre-LN",
    "chart.norm.peri": "Peri-LN",
    "chart.norm.deepnorm": "DeepNorm",
    "chart.norm.none": "no norm",
    "chart.waiting": "No steps yet",
    "chart.no_data": "No data yet.",
    "chart.step": "step",
    "chart.step_axis": "training step",
    "chart.loss": "loss",
    "chart.loss_axis": "loss (nats/char)",
    "chart.train_loss": "training loss",
    "chart.eval_loss": "held-out loss",
    "chart.unigram": "unigram loss: letter frequencies only",
    "chart.floor": "entropy floor: the lowest loss any model can reach",
    "chart.lr": "learning rate (planned)",
    "chart.lr_axis": "learning rate",
    "chart.diverged_at": "diverged at step {step}",
    "chart.stalled_since": "stalled since step {step}: stuck at the unigram loss",
    "chart.clipped": "loss above {limit} runs off the top (steps: {count})",
    "chart.loss_title": "Training loss · {norm}, {depth} layers",
    "chart.grad_heatmap_title": "Gradient norm per layer during training",
    "chart.grad_norm_axis": "gradient norm (Frobenius)",
    "chart.grad_norm": "gradient norm",
    "chart.layer": "layer",
    "chart.layer_axis": "layer (1 = input side)",
    "chart.layer_axis0": "layer (0 = embeddings, 1 = input side)",
    "chart.act_title": "Residual stream per layer · step {step}",
    "chart.act_title_empty": "Residual stream per layer",
    "chart.act_share": "share of values per bin",
    "chart.value": "value",
    "chart.value_axis": "activation value",
    "chart.share": "share",
    "chart.std": "std",
    "chart.std_pm": "±1 standard deviation",
    "chart.overflow": "beyond the histogram",
    "chart.below_edge": "< −{edge}",
    "chart.above_edge": "> {edge}",
    "chart.play": "Play",
    "chart.pause": "Pause",
    "chart.profile_title": "Per-layer gradients and residual size · step {step}",
    "chart.profile_title_empty": "Per-layer gradients and residual size",
    "chart.profile_grad": "gradient norm (Frobenius) per weight matrix",
    "chart.profile_std": "residual stream std after each layer",
    "chart.profile_param": "{param} gradient norm (Frobenius) per layer",
    "chart.resid_std": "residual std",
    "chart.resid_std_axis": "residual stream std",
    "chart.ratio_title": "Update size relative to the weights",
    "chart.ratio_axis": "‖Δw‖ / ‖w‖ per step",
    "chart.ratio_ref": "10⁻³ rule of thumb",
    "chart.update_ratio": "update / weight",
    "chart.layer_n": "layer {n}",
    "chart.compare_loss_title": "Training loss, runs compared",
    "chart.compare_profile_title": "Runs compared layer by layer · step {step}",
    "chart.compare_profile_title_any": "Runs compared layer by layer (each at its own step)",
    "chart.seed_mean": "{name} (mean of {n} seeds)",
    "chart.band_note": "band: min–max over seeds",
    "chart.init_profile_title": "Gradient of {param} per layer, at initialisation",
    "chart.depth": "depth",
    "chart.depth_axis": "depth L (layers)",
    "chart.depth_title": "Last layer's {param} gradient vs depth, at initialisation",
    "chart.ref_inv_sqrt": "∝ 1/√L (Pre-LN theory)",
    "chart.ref_flat": "independent of L (Post-LN theory)",
    "chart.resid_title": "Residual stream size per layer, at initialisation",
    "chart.mean_sq": "E‖x‖²/d",
    "chart.mean_sq_axis": "E‖x_l‖² / d (mean square per coordinate)",
    "chart.pre_band": "Pre-LN theory: 1 + l/2 to 1 + 3l/2",
    "chart.post_ref": "Post-LN theory: 3/2 (the sum entering each LN)",
    # --- the Runs page (pages/runs.py, ln_viz/ui/runs_view.py) and chart export (ln_viz/export.py) ---
    "runs.title": "Stored runs",
    "runs.intro": (
        "Every run trained on this server is kept with its measurements. Click a row to see its charts again "
        "without retraining; select two rows to compare them."
    ),
    "runs.no_store": "The run store cannot be opened, so this server keeps no runs; its log says why.",
    "runs.empty": (
        "No runs are stored yet. Load the bundled demo runs to show the effect at once (no training needed), "
        "train one on the live page, or import a run file below."
    ),
    "runs.load_demos": "Load the demo runs",
    "runs.loading_demos": "Loading the demo runs…",
    "runs.demos_loaded": "{count} demo runs loaded.",
    "runs.any": "any",
    "runs.filter_label": "Label contains",
    "runs.sort": "Sort by",
    "runs.sort.newest": "newest first",
    "runs.sort.oldest": "oldest first",
    "runs.sort.loss_low": "lowest final loss",
    "runs.sort.loss_high": "highest final loss",
    "runs.none_match": "No stored run matches these filters.",
    "runs.col.id": "Run",
    "runs.col.label": "Label",
    "runs.col.norm": "Norm",
    "runs.col.depth": "Depth",
    "runs.col.status": "Status",
    "runs.col.steps": "Steps",
    "runs.col.final_loss": "Final loss",
    "runs.col.created": "Started",
    "runs.col.source": "From",
    "runs.source.train": "trained here",
    "runs.source.import": "imported",
    "runs.source.demo": "demo",
    "runs.compare": "Compare these two",
    "runs.compare_pick_two": "Select exactly two runs in the table to compare them.",
    "runs.compare_missing": "The Compare page is not part of this version of ln-viz yet.",
    "runs.shown": "Run to show",
    "runs.pick": "Click a row in the table to open that run.",
    "runs.heading": "Run {id}: {label}",
    "runs.unlabelled": "no label",
    "runs.summary": (
        "{norm}, {depth} layers, lr {lr}, warm-up {warmup} steps · {status} after {done}/{steps} steps · "
        "final loss {loss}"
    ),
    "runs.live_note": "This run is still training; its charts show the steps stored so far.",
    "runs.manage": "Label, download or delete this run",
    "runs.label": "Label",
    "runs.label_save": "Save label",
    "runs.label_saved": "Label of run {id} saved.",
    "runs.delete": "Delete this run",
    "runs.delete_confirm": "Delete run {id} ({label}) and everything measured in it? This cannot be undone.",
    "runs.delete_yes": "Yes, delete it",
    "runs.delete_cancel": "Cancel",
    "runs.deleted": "Run {id} was deleted.",
    "runs.dl_csv": "Tables (CSV)",
    "runs.dl_parquet": "Tables (Parquet)",
    "runs.dl_run": "Run file",
    "runs.dl_charts_prepare": "Prepare chart files",
    "runs.dl_charts": "Charts (PNG, SVG, HTML)",
    "runs.dl_charts_wait": "Drawing the charts as PNG, SVG and HTML files…",
    "runs.dl_help": (
        "Tables and chart files come as zip archives. The run file (.json.gz) can be imported into any ln-viz; "
        "the HTML charts open offline and the distribution chart still plays."
    ),
    "runs.import": "Import a run file",
    "runs.import_help": (
        "A .json.gz or .json run file exported from ln-viz (this page or `python -m ln_viz runs export`)."
    ),
    "runs.imported": "Imported {name} as run {id}.",
    "runs.import_exists": "{name} is already stored as run {id}.",
    "runs.import_refused": "Not imported: {reason}",
    "err.export_charts_not_dir": "--out {path} is a file; chart exports write one file per chart, so give a folder.",
    "err.export_browser": (
        "PNG and SVG export needs Chromium or Google Chrome, and none was found; install the chromium package "
        "or set BROWSER_PATH to the browser, or export html instead."
    ),
    # --- the Theory page (pages/theory.py; structure in ln_viz/theory.py) ---------------------------
    "theory.page_title": "Theory: why the place of LayerNorm matters",
    "theory.intro": (
        "This page explains what the app shows: what a transformer block is, where its LayerNorm can sit, why one "
        "placement needs a learning-rate warm-up and the other does not (Xiong et al. 2020), what ln-viz's small "
        "model shows and where it differs from the paper, how to read each chart, and the variants the app offers. "
        "The papers are listed at the end."
    ),
    "theory.contents": "Contents",
    "theory.block.title": "A transformer block, and what LayerNorm does",
    "theory.block.residual": (
        "A transformer is a stack of L layers of the same shape. Each layer has two **sub-layers**: self-attention, "
        "which mixes information between positions (here: each character looks at the ones before it), and a "
        "feed-forward network (FFN), which transforms each position on its own. Each sub-layer F is wrapped in a "
        "**residual connection**: its output is added to its input, so the sub-layer only has to learn a correction "
        "to what it receives, not the whole vector anew."
    ),
    "theory.block.stream": (
        "What these additions build up, one vector of width $d$ per character, is the **residual stream**. It runs "
        "from the embeddings at the bottom to the output layer at the top."
    ),
    "theory.block.ln": (
        "**LayerNorm** (Ba et al. 2016) takes one such vector, subtracts the mean of its $d$ features and divides by "
        "their standard deviation, then applies a learnt scale γ and shift β (1 and 0 at initialisation). Whatever "
        "size came in, what comes out has mean 0 and variance 1 across its features: LayerNorm keeps the pattern of "
        "a vector and resets its size."
    ),
    "theory.block.where": (
        "The question this app asks is only *where* that normalisation sits relative to the residual sum."
    ),
    "theory.placement.title": "Post-LN and Pre-LN",
    "theory.placement.post": (
        "**Post-LN**, the original Transformer's choice (Vaswani et al. 2017), kept by BERT (Devlin et al. 2019), "
        "normalises *after* the residual sum. The whole output of each sub-layer, residual stream included, goes "
        "through a LayerNorm, so the stream's size is reset to 1 after every sub-layer."
    ),
    "theory.placement.pre": (
        "**Pre-LN**, used by GPT-2 (Radford et al. 2019) and by most large language models since, normalises only "
        "the *input of the sub-layer*, on the branch. The residual path itself is never normalised; one final "
        "LayerNorm sits before the output layer."
    ),
    "theory.placement.same": (
        "In both, one layer is two such steps: attention, then the FFN. The weights and the data are the same; only "
        "the place of the normalisation differs (Pre-LN has one extra LayerNorm at the end). That is why ln-viz can "
        "start every placement from the same initial weights and the same batches, so a comparison shows the effect "
        "of the placement and nothing else."
    ),
    "theory.warmup.title": "Why Post-LN needs a learning-rate warm-up",
    "theory.warmup.problem": (
        "Post-LN transformers are usually trained with a **learning-rate warm-up**: the learning rate starts near 0 "
        "and rises linearly to its peak over the first steps (4,000 of them in the original Transformer), then "
        "follows a schedule. Started at the same peak learning rate without warm-up, training can fail; with it, it "
        "works. Warm-up costs training time and is one more setting to tune."
    ),
    "theory.warmup.result": (
        "Xiong et al. 2020 explained why, with a mean-field analysis of the gradients at initialisation. For "
        "Post-LN, the bound on the gradient of the last layer's weights (below: the FFN's second matrix in layer L) "
        "**does not shrink as the model gets deeper**. For Pre-LN the same bound **shrinks like $1/\\sqrt L$**:"
    ),
    "theory.warmup.why": (
        "Their measurements agree: in Post-LN the gradient norm grows from the input layers toward the output (their "
        "Figure 3), while in Pre-LN it stays about the same across layers. So at the first step Post-LN's largest "
        "gradients sit right next to the output. Applying the full learning rate to them at once makes the updates "
        "there too large, and training becomes unstable before it has properly started. Warm-up keeps the first "
        "updates small while the model moves away from this starting point."
    ),
    "theory.warmup.setup": (
        "Their setting, which ln-viz follows: weights drawn with Xavier initialisation (the analysis assumes it) "
        "and, in the translation experiments, Adam with β₁ = 0.9, β₂ = 0.98. The practical result: **Pre-LN trains "
        "without any warm-up**, at learning rates where Post-LN without warm-up fails, and reaches comparable "
        "results in less training time."
    ),
    "theory.preln.title": "What Pre-LN changes, and what it costs",
    "theory.preln.identity": (
        "In Pre-LN the residual path is a clean identity from the embeddings to the final LayerNorm: the top of the "
        "stream is the input plus the outputs of all the sub-layers. A gradient arriving at the top has a direct "
        "path down to every layer that passes through no normalisation at all."
    ),
    "theory.preln.growth": (
        "The price of never normalising the stream is that it grows: every sub-layer adds a vector of roughly unit "
        "size per feature. Lemma 1 of Xiong et al. bounds this growth at initialisation, for the stream after $l$ "
        "layers:"
    ),
    "theory.preln.final": (
        "So the final LayerNorm receives a vector whose size grows like $\\sqrt L$ and divides it back to size 1. A "
        "gradient flowing back through it is divided by the same factor: that is the $1/\\sqrt L$ of the Pre-LN "
        "bound. The layers next to the output therefore do not get outsized gradients, and a large learning rate is "
        "safe from the first step."
    ),
    "theory.preln.cost": (
        "The cost, as later work describes it (Liu et al. 2020; Xie et al. 2023; Kim et al. 2025), and hedged "
        "accordingly: because the stream keeps growing, each later layer adds an ever smaller share to it. The "
        "representations of deep layers then change little from one layer to the next (sometimes called "
        "*representation collapse*), and the last layers may contribute less than their size suggests; very large "
        "activations in deep Pre-LN models have been reported too. Liu et al. find that when Post-LN does train, it "
        "can end up somewhat better. These are findings on large models: ln-viz shows the growing stream (the "
        "activation chart), but its models are too small to show the effect on quality."
    ),
    "theory.small.title": "What ln-viz's small model shows, honestly",
    "theory.small.scale": (
        "ln-viz's models are tiny: character-level, width $d$ = 64, 6 to 24 layers, a few hundred steps on a CPU. "
        "The paper's bounds are statements for large widths. What still holds at this size, checked by the tests on "
        "every change (`tests/test_paper_claims.py`), averaged over a few seeds:"
    ),
    "theory.small.holds": (
        "- At initialisation the last layer's gradient is larger in Post-LN than in Pre-LN, and the gap widens with "
        "depth, at about the $\\sqrt L$ rate the two bounds predict (a little faster).\n- Pre-LN's last-layer "
        "gradient shrinks like $1/\\sqrt L$; its residual stream grows within Lemma 1's bounds; Post-LN's stays at "
        "size 1.\n- In Post-LN the gradient rises toward the output, the largest next to it.\n- With Adam at "
        "learning rate 3e-3, a 6-layer Post-LN without warm-up stays on the unigram line, while Pre-LN and Post-LN "
        "with warm-up learn, from the same seed and the same batches."
    ),
    "theory.small.differs": (
        "What differs: in the paper's Figure 3, Pre-LN's gradient norm is nearly flat across layers. In ln-viz's "
        "small models it is not: at initialisation it **decreases toward the output**. With 12 layers, the FFN's "
        "second matrix gets a gradient about 2.5 times larger in the first layer than in the last; the Init lab "
        "shows it. So it is not the flat profile of the paper, but it points the other way from Post-LN's: Pre-LN's "
        "largest gradients sit at the input end, Post-LN's at the output end, where the paper locates the trouble. "
        "Our guess for the difference is the small width, far from the large-$d$ regime of the analysis."
    ),
    "theory.small.presets": (
        "The presets' learning rates and warm-up lengths were chosen by measurement on the machine ln-viz was "
        "developed on (for example: 6 layers of width 64, Adam at 3e-3, where Post-LN needs about 100 warm-up "
        "steps), not taken from the paper. Where training tips from 'learns' to 'stalls' depends on the seed, the "
        "depth, the width, the batch and the text, so a run near that edge can land on the other side. If Post-LN "
        "without warm-up happens to learn for you, raise the learning rate or the depth. In our measurements a "
        "failing Post-LN run usually **stalls** on the unigram line rather than blowing up to NaN."
    ),
    "theory.charts.title": "How to read each chart",
    "theory.charts.loss": (
        "**Loss.** The training loss at each step, in nats per character (the cross-entropy; e to the power of the "
        "loss, the perplexity, is roughly how many characters the model is still choosing between), and the held-out "
        "loss. The **unigram line** is the loss of predicting the letter frequencies only, without context (2.96 for "
        "the English text): a stalled run sits on it. For the synthetic Markov language a second line marks the "
        "**entropy floor**, the lowest loss any model can reach (1.50 nats per character, a little more over a short "
        "window because its first characters have less context): a good run approaches it, none can go below it. The "
        "learning-rate schedule is drawn on a second axis, so you can see where warm-up ends."
    ),
    "theory.charts.heatmap": (
        "**Gradient heatmap.** One row per layer (the input at the bottom), one column per measured step; the colour "
        "is the gradient norm of the layer's weights on a log scale, so a factor of 10 is always the same change of "
        "colour. In Post-LN without warm-up the hot rows are at the top, next to the output; in Pre-LN the warmer "
        "rows are at the bottom."
    ),
    "theory.charts.activations": (
        "**Activation distribution.** For each layer, a histogram of the values in the residual stream at the chosen "
        "step. Every layer and every step uses the same fixed bins (from −16 to 16), so widths can be compared "
        "directly: Post-LN's stay at width 1, Pre-LN's widen with depth, and without normalisation they can drift. "
        "Values beyond the bins are not dropped: they are counted and reported as overflow."
    ),
    "theory.charts.profile": (
        "**Gradient profile per layer.** The gradient norm of each layer at the chosen step, layers along the "
        "horizontal axis: the paper's Figure 3, from your own run. At the first measured step it is close to the "
        "picture at initialisation that the theory is about; later steps show how training changes it. The residual "
        "stream's standard deviation per layer is drawn with it."
    ),
    "theory.charts.update": (
        "**Update-to-weight ratio.** How much one step changes each layer's weights relative to their size, ‖Δw‖ / "
        "‖w‖. A rule of thumb from practice, not from the paper: around 1e-3 (0.1 % per step) is healthy; far above, "
        "the learning rate is too large for that layer; far below, the layer is hardly learning."
    ),
    "theory.charts.compare": (
        "**Compare page.** Runs side by side. Runs with the same seed start from the same weights and see the same "
        "batches, so any difference comes from the setting you changed. Classic pairs: Post-LN without and with "
        "warm-up; Post-LN against Pre-LN at the same learning rate."
    ),
    "theory.charts.initlab": (
        "**Init lab.** No training: the gradient of every layer after one forward and backward pass at "
        "initialisation, repeated over several seeds and shown as a mean with its spread, because one seed is noisy. "
        "A $1/\\sqrt L$ reference line shows how Pre-LN's last-layer gradient should shrink with depth, and a band "
        "shows Lemma 1's bounds on the growth of the residual stream."
    ),
    "theory.variants.title": "The variants, and what they predict",
    "theory.variants.intro": (
        "Besides Post-LN and Pre-LN, the app offers three more placements and a second kind of norm. One or two "
        "lines on each:"
    ),
    "theory.variants.peri": (
        "**Peri-LN**, the “sandwich”: normalise both the input and the output of every sub-layer, plus the final "
        "LayerNorm. Ding et al. 2021 introduced this sandwich-LN in CogView to keep the values in deep layers from "
        "blowing up; Kim et al. 2025 analyse it under the name Peri-LN and report steadier growth of the variance "
        "and steadier gradients than Pre-LN. Prediction: trains without warm-up; the stream still grows with depth, "
        "but each addition has a size set by the output norm, not by the weights."
    ),
    "theory.variants.deepnorm": (
        "**DeepNorm** (Wang et al. 2022, DeepNet): keep Post-LN's normalisation of the sum, but weight the residual "
        "by α > 1 and scale down the initial weights of the value and output projections and of the FFN by β < 1. "
        "The sub-layers then start as small corrections to a strong identity path, which bounds how far one update "
        "can move the model; DeepNet trained models of up to 1,000 layers this way. Prediction: Post-LN's normalised "
        "stream with Pre-LN's stability; the preset trains without warm-up. The constants are DeepNet's for "
        "decoder-only models:"
    ),
    "theory.variants.rmsnorm": (
        "**RMSNorm** (Zhang & Sennrich 2019) is another norm, not another place: it divides by the root mean square "
        "of the features, without subtracting the mean and without a shift, which makes it cheaper. Its authors "
        "found that the re-scaling alone keeps most of LayerNorm's benefit, and many recent large models use it "
        "(LLaMA among them, Touvron et al. 2023). Prediction: curves close to LayerNorm's in the same placement. "
        "Choose it under Advanced, Norm type."
    ),
    "theory.variants.none": (
        "**No normalisation**, as a control: the residual sum with nothing to bound it. The size of the stream and "
        "of the gradients then depends only on the initialisation and on what training does to the weights. "
        "Prediction: the stream grows with depth and nothing pulls it back. In the preset (lr 3e-3) the first steps "
        "overshoot, the loss jumping far above where it started, before the model learns; at higher learning rates "
        "expect the activations to drift and the loss to stall or diverge."
    ),
    "theory.references.title": "References",
    "theory.references.intro": "The papers this page cites, oldest first, with their arXiv identifiers.",
    # --- stability map
    "sweep.err.choice": "norm_position must be a list of {choices}; {value!r} is not one of them.",
    "sweep.err.seeds": "seeds must be a whole number from 1 to {hi}, got {value!r}.",
    "sweep.err.too_many": "the sweep has {n} runs, more than the {cap} allowed; use fewer values on an axis.",
    "sweep.err.warmup_longer": "warm-up {warmup} is longer than the runs (steps={steps}); use warm-ups of at most {steps}.",
    "sweep.err.empty_axis": "{field} needs at least one value.",
    "sweep.err.axis_too_long": "{field} has {have} values, more than {hi}; give fewer.",
    "sweep.err.duplicate": "{field} lists a value twice ({values}); give each value once.",
    "sweep.err.executor": "executor must be one of {choices}, got {value!r}.",
    "sweep.err.export_suffix": "cannot tell the format of {path}; name the file .csv or .parquet.",
    "sweep.err.preset": "unknown sweep preset {value!r}; choose one of {choices}.",
    "sweep.err.list": "{flag} must be a comma-separated list of {kind}, got {value!r}.",
    "sweep.err.workers": "workers must be between 1 and 256, got {value}.",
    "sweep.err.address_local": "--address names a Ray cluster; add --executor ray, or leave --address out.",
    "sweep.err.ray_missing": "the ray executor needs Ray: pip install -r requirements-ray.txt (ray=={version}).",
    "sweep.err.ray_connect": "cannot connect to the Ray cluster at {address} ({reason}); check the address and that the cluster runs.",
    "nav.stability_map": "Stability map",
    "sweep.status.learned": "learned",
    "sweep.status.stalled": "stalled",
    "sweep.status.diverged": "diverged",
    "sweep.status.failed": "failed",
    "sweep.cell.diverged": "diverged<br>step {step}",
    "sweep.axis.lr": "peak learning rate (log scale)",
    "sweep.axis.depth": "depth (blocks)",
    "sweep.axis.warmup": "warm-up steps",
    "sweep.axis.final_loss": "final loss (nats/char)",
    "sweep.axis.step": "training step",
    "sweep.axis.loss": "training loss (nats/char)",
    "sweep.chart.map_title": "Final loss: learning rate x warm-up, depth {depth}",
    "sweep.chart.depth_title": "Final loss: depth x warm-up, lr {lr}",
    "sweep.chart.sens_title": "Final loss against learning rate",
    "sweep.chart.unigram": "unigram loss: letter frequencies only",
    "sweep.chart.curve": "{norm}, warm-up {warmup}",
    "sweep.chart.curve_depth": ", depth {depth}",
    "sweep.chart.sens_label": "LR sens. {value}",
    "sweep.chart.train_loss": "training loss",
    "sweep.preset.warmup-map": "Warm-up map",
    "sweep.preset.depth-slice": "Depth slice",
    "sweep.ui.title": "Stability map",
    "sweep.ui.intro": (
        "One run can be a lucky seed. This page trains a grid of runs and colours each cell by its final loss: "
        "where Post-LN trains only with warm-up, and where Pre-LN trains without it."
    ),
    "sweep.ui.settings": "Sweep settings",
    "sweep.ui.preset": "Start from",
    "sweep.ui.custom": "as set below",
    "sweep.ui.norm": "Norm positions",
    "sweep.ui.lr": "Learning rates",
    "sweep.ui.warmup": "Warm-up steps",
    "sweep.ui.depth": "Depths",
    "sweep.ui.steps": "Steps per run",
    "sweep.ui.seeds": "Seeds per cell",
    "sweep.ui.executor": "Where to train",
    "sweep.ui.address": "Ray cluster address (empty: a private one on this machine)",
    "sweep.ui.run": "Run sweep",
    "sweep.ui.stop": "Stop",
    "sweep.ui.estimate": "{runs} runs x {steps} steps, about {time} on {cores} cores",
    "sweep.ui.busy": "A sweep is already training on this server; stop it first or wait for it.",
    "sweep.ui.progress": "{done} of {total} cells done, {running} training, about {eta} left",
    "sweep.ui.shipped": "Measured in advance with this code ({date}); press Run sweep to measure it again here.",
    "sweep.ui.empty": "No cell of this sweep is stored yet: press Run sweep.",
    "sweep.ui.how_to_read": (
        "Each cell is one run, coloured by its final training loss on one scale for all panels, from the best "
        "reached down to the loss at initialisation. A framed cell stalled at the unigram loss or diverged; "
        "grey cells are still to train. LR sensitivity (Wortsman et al. 2023): the mean, over the learning rates, "
        "of how far each final loss is above the best; 0 means the setting does not care about the learning rate."
    ),
    "sweep.ui.click_hint": "Click a cell to see its loss curve.",
    "sweep.ui.cell_title": "{norm}, lr {lr}, warm-up {warmup}, depth {depth}<br>{status}, final loss {loss}",
    "sweep.ui.open_live": "Open in Live",
    "sweep.ui.download": "Download cells (CSV)",
    "sweep.ui.bad_param": "The link's parameter {param} was not usable and is ignored.",
    "sweep.dur.s": "{n} s",
    "sweep.dur.min": "{n} min",
    "sweep.dur.h": "{n} h",
}

KO: dict[str, str] = {
    "err.not_a_number": "{field}은(는) 숫자여야 합니다. 입력값: {value!r}.",
    "err.not_an_integer": "{field}은(는) 정수여야 합니다. 입력값: {value!r}.",
    "err.not_finite": "{field}은(는) 유한한 수여야 합니다. 입력값: {value}.",
    "err.range": "{field}은(는) {lo}에서 {hi} 사이여야 합니다. 입력값: {value}.",
    "err.positive": "{field}은(는) 0보다 커야 합니다. 입력값: {value}.",
    "err.non_negative": "{field}은(는) 0 이상이어야 합니다. 입력값: {value}.",
    "err.choice": "{field}은(는) {choices} 중 하나여야 합니다. 입력값: {value!r}.",
    "err.lr_too_high": "lr은(는) {hi} 이하여야 합니다 (그보다 크면 오버플로만 측정됩니다). 입력값: {value}.",
    "err.heads_divide": "d_model({d_model})은(는) heads({heads})로 나누어떨어져야 합니다. d_model={suggest}을(를) 써 보세요.",
    "err.warmup_longer": "warmup_steps({warmup})가 전체 학습(steps={steps})보다 깁니다. {steps} 이하로 설정하세요.",
    "err.memory": (
        "이 설정은 학습에 약 {need}의 메모리가 필요합니다 (batch {batch}, seq_len {seq}, depth {depth}, "
        "d_model {d_model}). 허용치 {limit}를 넘으므로 batch_size나 seq_len을 줄이세요."
    ),
    "err.device_cuda": "device 'cuda'를 요청했지만 CUDA 장치가 없습니다. device='cpu'를 쓰세요.",
    "err.unknown_preset": "알 수 없는 프리셋 {value!r}입니다. {choices} 중에서 고르세요.",
    "err.user_text_missing": "corpus 'user'에는 user_text(문자열이나 파일)가 필요합니다.",
    "err.text_empty": "텍스트가 비어 있습니다. 최소 {need}자 이상 넣으세요.",
    "err.text_not_utf8": "파일이 UTF-8 텍스트가 아닙니다 ({pos}번째 바이트를 읽을 수 없음). UTF-8로 저장하세요.",
    "err.text_binary": "텍스트가 바이너리로 보입니다 (제어 문자 {count}개). 일반 텍스트를 넣으세요.",
    "err.text_too_short": (
        "텍스트는 {have}자이지만 seq_len {seq}에는 최소 {need}자가 필요합니다. 텍스트를 늘리거나 seq_len을 줄이세요."
    ),
    "err.text_too_large": "텍스트가 {have}자로, 한도 {limit}자를 넘습니다. 더 짧은 텍스트를 넣으세요.",
    "err.text_vocab": "텍스트의 서로 다른 문자가 {have}개로, 한도 {limit}개를 넘습니다.",
    "err.file_missing": "파일 {path}이(가) 없습니다.",
    "err.file_too_large": "파일 {path}은(는) {have}바이트로, 한도 {limit}바이트를 넘습니다.",
    "err.store_not_sqlite": "{path}은(는) ln-viz 실행 저장소가 아닙니다 (SQLite 데이터베이스가 아님). 다른 --store 경로를 주세요.",
    "err.store_open": "실행 저장소 {path}을(를) 열 수 없습니다 ({reason}). 경로와 권한을 확인하세요.",
    "err.store_newer": (
        "실행 저장소 {path}은(는) 더 새로운 ln-viz가 기록했습니다 (스키마 버전 {have}, 이 버전은 {know}까지 읽음). "
        "ln-viz를 업그레이드하거나 다른 --store 경로를 쓰세요."
    ),
    "err.store_missing": "{path}에 실행 저장소가 없습니다. --store {path}로 학습하면 만들어집니다.",
    "err.store_old_readonly": (
        "실행 저장소 {path}의 스키마가 오래되었습니다. 쓰기 모드로 한 번 열어 (예: `python -m ln_viz runs list`) "
        "업그레이드하세요."
    ),
    "err.store_readonly": "실행 저장소 {path}을(를) 읽기 전용으로 열었습니다. 바꾸려면 쓰기 모드로 여세요.",
    "err.run_not_found": "{path}에 실행 {run_id}이(가) 없습니다. `python -m ln_viz runs list`로 실행 번호를 확인하세요.",
    "err.run_live": "실행 {run_id}은(는) 아직 프로세스 {pid}가 기록 중입니다. 지우기 전에 멈추세요.",
    "err.label_too_long": "라벨은 최대 {limit}자여야 합니다. 입력: {have}자.",
    "err.runfile_unpacked_too_large": "파일 {path}은(는) 압축을 풀면 {limit}바이트를 넘어, 실행 파일로 보기에 너무 큽니다.",
    "err.runfile_gzip": "파일 {path}은(는) 올바른 gzip 파일이 아닙니다 (잘렸을 수 있음). 실행을 다시 내보내세요.",
    "err.runfile_json": "파일 {path}은(는) 올바른 JSON이 아닙니다 ({reason}). 잘렸거나 실행 파일이 아닐 수 있습니다.",
    "err.runfile_format": "파일 {path}은(는) ln-viz 실행 파일이 아닙니다 (format이 {value!r}, 'ln-viz-run'이어야 함).",
    "err.runfile_version_newer": (
        "파일 {path}은(는) 실행 파일 버전 {version}으로, 이 ln-viz가 읽는 버전({know}까지)보다 새롭습니다. "
        "ln-viz를 업그레이드하세요."
    ),
    "err.runfile_version": "파일 {path}의 실행 파일 버전 {value!r}을(를) 알 수 없습니다. 1에서 {know} 사이의 정수여야 합니다.",
    "err.runfile_field": "파일 {path}: {where}이(가) 없거나 {expected} 형식이 아닙니다.",
    "err.runfile_config": "파일 {path}의 실행 설정이 올바르지 않습니다: {reason}",
    "err.runfile_too_many_steps": (
        "파일 {path}에는 {have}개 스텝이 있지만 설정은 steps={steps}입니다. ln-viz가 기록한 실행이 아닙니다."
    ),
    "err.runfile_steps": "파일 {path}: 스텝은 1부터 최대 {steps}까지 증가하는 정수여야 하는데, {prev} 다음에 {value}이(가) 있습니다.",
    "err.runfile_length": "파일 {path}: {where}에 값이 {have}개 있지만 실행의 스텝은 {want}개입니다.",
    "err.runfile_probe_step": "파일 {path}: 프로브 스텝 {value}은(는) 실행의 스텝이 아닙니다.",
    "err.runfile_shape": "파일 {path}: 프로브 배열 {name}의 모양이 {have}이지만, 실행 헤더에 따르면 {want}이어야 합니다.",
    "err.runfile_array": "파일 {path}: 프로브 배열 {name}을(를) 모양 {want}의 float32 데이터로 읽을 수 없습니다.",
    "err.runfile_not_finite": "파일 {path}: {where}에는 유한한 수만 있어야 하는데, {value}이(가) 있습니다.",
    "err.runfile_range": "파일 {path}: {where}은(는) {lo}에서 {hi} 사이여야 하는데, {value}이(가) 있습니다.",
    "err.export_not_dir": "--out {path}은(는) 파일입니다. csv와 parquet 내보내기는 표 폴더를 쓰므로 폴더를 주세요.",
    "err.export_too_large": (
        "실행 {run_id}을(를) 내보내면 {have}바이트가 되어, 가져오기 한도 {limit}바이트를 넘습니다. "
        "--probe-stride로 프로브 스텝을 줄이세요."
    ),
    "err.export_is_dir": "--out {path}은(는) 폴더입니다. 실행 파일에는 run.json.gz 같은 파일 이름이 필요합니다.",
    "err.write_failed": "{path}에 쓸 수 없습니다 ({reason}). 폴더가 있는지, 쓰기 권한과 여유 공간이 있는지 확인하세요.",
    "msg.diverged": "이 스텝에서 손실이나 그래디언트가 무한대 또는 NaN이 되었습니다: 학습이 발산했습니다.",
    "msg.stopped": "학습을 멈췄습니다. 지금까지 측정한 스텝은 모두 남아 있습니다.",
    "msg.time_cap": "이 서버의 시간 제한 {seconds}초에 도달해 학습을 멈췄습니다. 스텝은 남아 있습니다.",
    "msg.worker_error": "학습이 실패했습니다: {error}",
    "msg.worker_died": "이 실행을 학습하던 프로세스가 예기치 않게 끝났습니다 ({how}). 받은 스텝은 남아 있습니다.",
    "msg.stalled": "손실이 유니그램 손실(글자 빈도만 맞히는 수준) 아래로 내려가지 않습니다: 모델이 배우지 못하고 있습니다.",
    "msg.interrupted": "이 실행을 학습하던 프로세스가 실행보다 먼저 끝났습니다 (닫힘, 충돌, 강제 종료). 그때까지 저장된 스텝은 남아 있습니다.",
    "preset.post-ln-no-warmup": (
        "Post-LN, 학습률 3e-3, 웜업 없음: 손실이 유니그램 선에 평평하게 머뭅니다. 모델이 글자 빈도 이상을 배우지 못합니다."
    ),
    "preset.post-ln-warmup": (
        "같은 Post-LN 모델에 웜업 100스텝: 학습률이 다 오르고 나면 손실이 유니그램 선 아래로 한참 내려갑니다."
    ),
    "preset.pre-ln-no-warmup": (
        "같은 학습률의 Pre-LN, 웜업 없음: 손실이 곧바로 내려가고 그래디언트 노름이 층마다 고르게 유지됩니다."
    ),
    "preset.deep-pre-ln": "웜업 없는 24층 Pre-LN도 학습됩니다. 잔차 스트림이 층마다 넓어지는 것을 보세요.",
    "preset.deep-post-ln": "웜업 없는 24층 Post-LN: 출력 가까운 층의 그래디언트가 가장 크고, 손실이 멈춰 있습니다.",
    "preset.deepnorm": (
        "24층 DeepNorm(잔차에 가중치를 키우고 초기화를 줄인 Post-LN)은 웜업 없이도 학습됩니다. 같은 깊이의 Post-LN은 멈춰 있습니다."
    ),
    "preset.peri-ln": "Peri-LN은 각 서브층의 입력과 출력을 정규화합니다. 웜업 없이 학습되고 잔차 스트림이 안정적입니다.",
    "preset.no-norm": (
        "정규화가 전혀 없는 대조군: 처음 몇 스텝에서 손실이 시작점보다 훨씬 높이 튀었다가 배우기 시작합니다. 활성값을 잡아 줄 것이 없습니다."
    ),
    "ui.app_title": "ln-viz: 레이어 정규화 위치, 실시간으로",
    "nav.live": "실시간 학습",
    "nav.compare": "비교",
    "nav.init_lab": "초기화 실험실",
    "nav.runs": "저장된 실행",
    "nav.theory": "이론",
    "compare.title": "두 설정 비교",
    "compare.scenario": "시나리오",
    "compare.post-vs-pre": (
        "웜업 없는 Post-LN 대 Pre-LN: 같은 시드, 같은 초기 가중치, 같은 배치입니다. Post-LN은 유니그램 선에 머물고, "
        "Pre-LN은 곧바로 그 아래로 내려갑니다."
    ),
    "compare.warmup-vs-none": (
        "웜업 없는 Post-LN과 웜업 100스텝 Post-LN: 다른 점은 학습률을 서서히 올리는 것뿐인데, 그것이 학습 여부를 가릅니다."
    ),
    "compare.deep-post-vs-pre": (
        "둘 다 24층, 웜업 없음: 깊은 Post-LN은 출력 근처에서 그래디언트가 가장 크고 학습이 멈춥니다. 깊은 Pre-LN은 학습됩니다."
    ),
    "compare.deepnorm-rescue": (
        "둘 다 24층, 웜업 없음: Post-LN은 멈추고, DeepNorm(잔차에 가중치를 키우고 초기화를 줄인 방식)은 Post-LN의 위치를 "
        "그대로 두고도 학습됩니다."
    ),
    "compare.run_a": "실행 A",
    "compare.run_b": "실행 B",
    "compare.start": "둘 다 시작",
    "compare.stop": "둘 다 정지",
    "compare.stored": "저장된 실행 두 개(#{a}, #{b})를 보여 줍니다. 다시 학습하지 않습니다.",
    "compare.clear_stored": "실시간 비교로 돌아가기",
    "compare.heatmaps_caption": (
        "A(왼쪽)와 B(오른쪽)의 층별·스텝별 그래디언트 노름을 하나의 공통 색 척도로 그렸습니다. 같은 색은 같은 크기입니다."
    ),
    "compare.profile_caption": "선택한 스텝에서 두 실행의 층별 그래디언트 노름(논문 그림 3)과 잔차 표준편차입니다.",
    "compare.loss_caption": "두 학습 손실을 한 축에 그렸습니다. 점선은 유니그램 손실입니다.",
    "compare.differs": "A와 B의 차이: {fields}.",
    "compare.same": "A와 B는 같은 설정입니다.",
    "init.title": "초기화 실험실: 초기화 시점의 그래디언트",
    "init.intro": (
        "학습 없이, 막 초기화한 모델에서 시드마다 순전파와 역전파를 한 번씩 합니다. 논문 그림 3의 측정이며 몇 초면 끝납니다."
    ),
    "init.seeds": "시드 수",
    "init.param": "가중치 행렬",
    "init.depths": "마지막 층 차트에 쓸 깊이",
    "init.noise_note": "배치가 작으면 층별 모양이 흔들립니다. 배치 8, 시퀀스 32에서는 훨씬 더 들쭉날쭉합니다.",
    "init.pick_position": "LayerNorm 위치를 하나 이상 고르세요.",
    "init.measuring": "초기화 시점의 그래디언트를 재는 중...",
    "init.shipped": (
        "이 기본값 그림은 같은 코드로 미리 측정해 둔 값입니다(scripts/make_init_lab_default.py; "
        "테스트가 다시 측정해 비교합니다). 그래서 바로 나타납니다. 설정을 하나라도 바꾸면 지금 측정합니다."
    ),
    "init.pre_not_flat": (
        "참고: 여기서 Pre-LN의 {param} 그래디언트는 논문 그림 3처럼 층마다 평평하지 않고, 출력 쪽으로 갈수록 줄어듭니다 "
        "(마지막 층 / 첫 층 = {ratio}). 작은 모델에서 나타나는 모습입니다. 논문의 예측 중 여기서도 성립하는 것은, "
        "Post-LN의 그래디언트는 출력 쪽으로 커지고 Pre-LN은 그렇지 않다는 점입니다."
    ),
    "init.profile_caption": "초기화 시점에 각 층의 가중치 행렬 하나의 그래디언트 노름입니다. 선은 시드 평균, 띠는 범위입니다.",
    "init.vs_depth_caption": (
        "깊이에 따른 마지막 층의 그래디언트: Pre-LN은 1/sqrt(L)처럼 줄어들고(점선 기준선), Post-LN은 그렇지 않습니다."
    ),
    "init.resid_caption": (
        "층별 잔차 스트림의 평균 제곱 E||x_l||^2 / d: Pre-LN은 논문의 범위 1 + l/2 ~ 1 + 3l/2 안에서 커지고, "
        "Post-LN은 층마다 다시 1로 정규화됩니다."
    ),
    "init.cli_equivalent": "명령줄로 같은 숫자 얻기",
    "ui.lang_label": "언어",
    "ui.preset": "프리셋",
    "ui.preset_custom": "(직접 설정)",
    "ui.depth": "깊이 (층 수)",
    "ui.norm_position": "LayerNorm 위치",
    "ui.lr": "학습률 (최대)",
    "ui.warmup": "웜업 스텝",
    "ui.advanced": "고급 설정",
    "ui.norm_type": "정규화 종류",
    "ui.d_model": "d_model (너비)",
    "ui.heads": "어텐션 헤드 수",
    "ui.batch_size": "배치 크기",
    "ui.seq_len": "시퀀스 길이",
    "ui.steps": "학습 스텝 수",
    "ui.seed": "시드",
    "ui.optimizer": "옵티마이저",
    "ui.schedule": "웜업 이후 스케줄",
    "ui.corpus": "말뭉치",
    "ui.user_text": "직접 넣은 텍스트 (말뭉치가 '직접 넣은 텍스트'일 때 사용)",
    "ui.user_file": "...또는 UTF-8 텍스트 파일 올리기",
    "ui.probe_every": "N 스텝마다 측정",
    "ui.start": "시작",
    "ui.stop": "정지",
    "ui.not_started": "프리셋이나 직접 설정을 고른 뒤 시작을 누르세요.",
    "ui.status_line": "스텝 {step}/{steps} | 초당 {rate} 스텝 | 남은 시간 {eta} | {status}",
    "ui.queued": "대기 중: {pos}번째 순서입니다 (이 서버에서는 동시에 {cap}개까지 학습합니다). 차례가 되면 자동으로 시작합니다.",
    "ui.thinned": (
        "학습 중에는 서버 부담을 줄이려고 스텝별 차트에 측정 스텝 {stride}개 중 1개만 그립니다(최대 {kept}개). "
        "모든 스텝은 저장되며, 학습이 끝나면 차트가 전부(최대 512개) 보여 줍니다."
    ),
    "ui.thinned_finished": (
        "이 실행은 차트가 그릴 수 있는 것보다 많은 측정 스텝을 쟀습니다: 측정 스텝 {stride}개 중 1개를 고르게 보여 줍니다"
        "(최대 {kept}개). 실행 목록 페이지에서 모두 내보낼 수 있습니다."
    ),
    "ui.thinned_unstored": (
        "이 차트는 측정 스텝 {stride}개 중 1개만 보여 줍니다: 실행을 저장하지 못해(이유는 서버 로그에 있습니다) "
        "학습 중 사본만 남았습니다."
    ),
    "ui.url_ignored": "링크의 '{param}={value}'은(는) 무시했습니다: {reason} 기본값을 유지합니다.",
    "ui.invalid_config": "시작하지 않았습니다: {reason}",
    "ui.step_select": "보여 줄 측정 스텝",
    "ui.time_cap": "이 서버의 시간 제한 {seconds}초에 도달해 학습을 멈췄습니다.",
    "status.queued": "대기 중",
    "status.running": "학습 중",
    "status.completed": "완료",
    "status.diverged": "발산",
    "status.stalled": "정체",
    "status.stopped": "정지됨",
    "status.failed": "실패",
    "status.interrupted": "중단됨",
    "norm.post": "Post-LN: x = LN(x + F(x))",
    "norm.pre": "Pre-LN: x = x + F(LN(x))",
    "norm.peri": "Peri-LN: x = x + LN(F(LN(x)))",
    "norm.deepnorm": "DeepNorm: x = LN(alpha*x + F(x))",
    "norm.none": "정규화 없음",
    "normtype.layernorm": "LayerNorm",
    "normtype.rmsnorm": "RMSNorm",
    "corpus.english": "영어 텍스트",
    "corpus.markov": "합성 마르코프 언어 (엔트로피를 정확히 앎)",
    "corpus.user": "직접 넣은 텍스트",
    "schedule.constant": "일정",
    "schedule.inverse_sqrt": "역제곱근 감소",
    "schedule.cosine": "코사인 감소 (0까지)",
    "optimizer.adam": "Adam (0.9, 0.98)",
    "optimizer.sgd": "SGD",
    "caption.loss": (
        "스텝별 학습 손실(글자당 내트, nats)과 검증 손실입니다. 점선은 유니그램 손실(글자 빈도만 아는 수준)로, 이 선에 머무는 "
        "학습은 아무것도 배우지 못하는 중입니다. 점 찍힌 선은 학습률입니다."
    ),
    "caption.grad_heatmap": (
        "층(행, 아래가 입력 쪽)과 스텝(열)별 그래디언트 노름, 로그 색상입니다. Post-LN은 출력 가까운 위쪽 행이 뜨겁습니다."
    ),
    "caption.act_dist": (
        "선택한 스텝에서 층마다 잔차 스트림 값이 퍼진 모양입니다. Post-LN은 폭이 1로 유지되고, Pre-LN은 깊어질수록 넓어집니다."
    ),
    "caption.layer_profile": ("선택한 스텝의 층별 그래디언트 노름(논문의 그림 3)과 층별 잔차 스트림 표준편차입니다."),
    "caption.update_ratio": (
        "스텝마다 각 층의 가중치가 자기 크기에 비해 얼마나 바뀌는지입니다. 1e-3 근처가 건강하고, 훨씬 크면 그 층에 "
        "학습률이 너무 큽니다."
    ),
    "chart.norm.post": "Post-LN",
    "chart.norm.pre": "Pre-LN",
    "chart.norm.peri": "Peri-LN",
    "chart.norm.deepnorm": "DeepNorm",
    "chart.norm.none": "정규화 없음",
    "chart.waiting": "아직 스텝 없음",
    "chart.no_data": "아직 데이터가 없습니다.",
    "chart.step": "스텝",
    "chart.step_axis": "학습 스텝",
    "chart.loss": "손실",
    "chart.loss_axis": "손실 (글자당 내트)",
    "chart.train_loss": "학습 손실",
    "chart.eval_loss": "검증 손실",
    "chart.unigram": "유니그램 손실: 글자 빈도만 아는 수준",
    "chart.floor": "엔트로피 하한: 어떤 모델도 이보다 낮아질 수 없음",
    "chart.lr": "학습률 (계획)",
    "chart.lr_axis": "학습률",
    "chart.diverged_at": "{step} 스텝에서 발산",
    "chart.stalled_since": "{step} 스텝부터 정체: 유니그램 손실에 머묾",
    "chart.clipped": "{limit}보다 큰 손실은 위로 잘립니다 (스텝 {count}개)",
    "chart.loss_title": "학습 손실 · {norm}, {depth}층",
    "chart.grad_heatmap_title": "학습 중 층별 그래디언트 노름",
    "chart.grad_norm_axis": "그래디언트 노름 (프로베니우스)",
    "chart.grad_norm": "그래디언트 노름",
    "chart.layer": "층",
    "chart.layer_axis": "층 (1 = 입력 쪽)",
    "chart.layer_axis0": "층 (0 = 임베딩, 1 = 입력 쪽)",
    "chart.act_title": "층별 잔차 스트림 분포 · {step} 스텝",
    "chart.act_title_empty": "층별 잔차 스트림 분포",
    "chart.act_share": "구간별 값의 비율",
    "chart.value": "값",
    "chart.value_axis": "활성값",
    "chart.share": "비율",
    "chart.std": "표준편차",
    "chart.std_pm": "±1 표준편차",
    "chart.overflow": "히스토그램 범위 밖",
    "chart.below_edge": "−{edge} 미만",
    "chart.above_edge": "{edge} 초과",
    "chart.play": "재생",
    "chart.pause": "일시정지",
    "chart.profile_title": "층별 그래디언트와 잔차 크기 · {step} 스텝",
    "chart.profile_title_empty": "층별 그래디언트와 잔차 크기",
    "chart.profile_grad": "가중치 행렬별 그래디언트 노름 (프로베니우스)",
    "chart.profile_std": "각 층을 지난 잔차 스트림의 표준편차",
    "chart.profile_param": "층별 {param} 그래디언트 노름 (프로베니우스)",
    "chart.resid_std": "잔차 표준편차",
    "chart.resid_std_axis": "잔차 스트림 표준편차",
    "chart.ratio_title": "가중치 대비 갱신 크기",
    "chart.ratio_axis": "스텝당 ‖Δw‖ / ‖w‖",
    "chart.ratio_ref": "경험칙 10⁻³",
    "chart.update_ratio": "갱신량 / 가중치",
    "chart.layer_n": "{n}층",
    "chart.compare_loss_title": "실행별 학습 손실 비교",
    "chart.compare_profile_title": "층별 비교 · {step} 스텝",
    "chart.compare_profile_title_any": "층별 비교 (실행마다 각자의 스텝)",
    "chart.seed_mean": "{name} (시드 {n}개 평균)",
    "chart.band_note": "띠: 시드별 최솟값–최댓값",
    "chart.init_profile_title": "초기화 시점의 층별 {param} 그래디언트",
    "chart.depth": "깊이",
    "chart.depth_axis": "깊이 L (층 수)",
    "chart.depth_title": "초기화 시점 마지막 층의 {param} 그래디언트와 깊이",
    "chart.ref_inv_sqrt": "∝ 1/√L (Pre-LN 이론)",
    "chart.ref_flat": "L과 무관 (Post-LN 이론)",
    "chart.resid_title": "초기화 시점의 층별 잔차 스트림 크기",
    "chart.mean_sq": "E‖x‖²/d",
    "chart.mean_sq_axis": "E‖x_l‖² / d (좌표당 평균 제곱)",
    "chart.pre_band": "Pre-LN 이론: 1 + l/2 ~ 1 + 3l/2",
    "chart.post_ref": "Post-LN 이론: 3/2 (각 LN에 들어가는 합)",
    # --- 저장된 실행 페이지와 차트 내보내기 ---
    "runs.title": "저장된 실행",
    "runs.intro": (
        "이 서버에서 학습한 실행은 측정값과 함께 모두 저장됩니다. 행을 클릭하면 다시 학습하지 않고 차트를 볼 수 "
        "있고, 두 행을 고르면 서로 비교할 수 있습니다."
    ),
    "runs.no_store": "실행 저장소를 열 수 없어 이 서버는 실행을 저장하지 않습니다. 이유는 서버 로그에 있습니다.",
    "runs.empty": (
        "아직 저장된 실행이 없습니다. 함께 제공되는 데모 실행을 불러오면 학습 없이 바로 효과를 보여 줄 수 있습니다. "
        "실시간 학습 페이지에서 직접 학습하거나 아래에서 실행 파일을 가져올 수도 있습니다."
    ),
    "runs.load_demos": "데모 실행 불러오기",
    "runs.loading_demos": "데모 실행을 불러오는 중…",
    "runs.demos_loaded": "데모 실행 {count}개를 불러왔습니다.",
    "runs.any": "전체",
    "runs.filter_label": "레이블 검색",
    "runs.sort": "정렬",
    "runs.sort.newest": "최신순",
    "runs.sort.oldest": "오래된 순",
    "runs.sort.loss_low": "최종 손실 낮은 순",
    "runs.sort.loss_high": "최종 손실 높은 순",
    "runs.none_match": "이 조건에 맞는 저장된 실행이 없습니다.",
    "runs.col.id": "실행",
    "runs.col.label": "레이블",
    "runs.col.norm": "정규화",
    "runs.col.depth": "깊이",
    "runs.col.status": "상태",
    "runs.col.steps": "스텝",
    "runs.col.final_loss": "최종 손실",
    "runs.col.created": "시작 시각",
    "runs.col.source": "출처",
    "runs.source.train": "이 서버에서 학습",
    "runs.source.import": "가져옴",
    "runs.source.demo": "데모",
    "runs.compare": "두 실행 비교하기",
    "runs.compare_pick_two": "비교하려면 표에서 실행을 정확히 두 개 고르세요.",
    "runs.compare_missing": "이 버전의 ln-viz에는 아직 비교 페이지가 없습니다.",
    "runs.shown": "표시할 실행",
    "runs.pick": "표에서 행을 클릭하면 그 실행을 엽니다.",
    "runs.heading": "실행 {id}: {label}",
    "runs.unlabelled": "레이블 없음",
    "runs.summary": (
        "{norm}, {depth}층, 학습률 {lr}, 웜업 {warmup} 스텝 · {done}/{steps} 스텝에서 {status} · 최종 손실 {loss}"
    ),
    "runs.live_note": "아직 학습 중인 실행입니다. 차트에는 지금까지 저장된 스텝만 나옵니다.",
    "runs.manage": "이 실행의 레이블 수정, 다운로드, 삭제",
    "runs.label": "레이블",
    "runs.label_save": "레이블 저장",
    "runs.label_saved": "실행 {id}의 레이블을 저장했습니다.",
    "runs.delete": "이 실행 삭제",
    "runs.delete_confirm": "실행 {id}({label})과 그 측정값을 모두 삭제할까요? 되돌릴 수 없습니다.",
    "runs.delete_yes": "네, 삭제합니다",
    "runs.delete_cancel": "취소",
    "runs.deleted": "실행 {id}을(를) 삭제했습니다.",
    "runs.dl_csv": "표 (CSV)",
    "runs.dl_parquet": "표 (Parquet)",
    "runs.dl_run": "실행 파일",
    "runs.dl_charts_prepare": "차트 파일 만들기",
    "runs.dl_charts": "차트 (PNG, SVG, HTML)",
    "runs.dl_charts_wait": "차트를 PNG, SVG, HTML 파일로 그리는 중…",
    "runs.dl_help": (
        "표와 차트 파일은 zip으로 묶어 받습니다. 실행 파일(.json.gz)은 다른 ln-viz에서도 가져올 수 있고, "
        "HTML 차트는 인터넷 없이 열리며 분포 차트의 애니메이션도 그대로 재생됩니다."
    ),
    "runs.import": "실행 파일 가져오기",
    "runs.import_help": (
        "ln-viz에서 내보낸 .json.gz 또는 .json 실행 파일 (이 페이지나 `python -m ln_viz runs export`로 내보낸 것)."
    ),
    "runs.imported": "{name}을(를) 실행 {id}(으)로 가져왔습니다.",
    "runs.import_exists": "{name}은(는) 이미 실행 {id}(으)로 저장되어 있습니다.",
    "runs.import_refused": "가져오지 않았습니다: {reason}",
    "err.export_charts_not_dir": (
        "--out {path}은(는) 파일입니다. 차트 내보내기는 차트마다 파일을 하나씩 쓰므로 폴더를 지정하세요."
    ),
    "err.export_browser": (
        "PNG와 SVG로 내보내려면 Chromium이나 Google Chrome이 필요한데 찾지 못했습니다. chromium 패키지를 "
        "설치하거나 BROWSER_PATH에 브라우저 경로를 지정하세요. html로 내보낼 수도 있습니다."
    ),
    "theory.page_title": "이론: LayerNorm의 위치가 왜 중요한가",
    "theory.intro": (
        "이 페이지는 앱이 보여 주는 현상의 배경을 설명합니다. 트랜스포머 블록이 무엇인지, 레이어 정규화(LayerNorm)를 "
        "어디에 둘 수 있는지, 왜 한쪽 방식은 학습률 웜업이 꼭 필요하고 다른 쪽은 그렇지 않은지(Xiong et al. 2020)를 "
        "먼저 살펴봅니다. 이어서 ln-viz의 작은 모델에서 무엇이 논문대로 보이고 무엇이 다른지, 차트를 어떻게 읽는지, "
        "앱에서 고를 수 있는 변형들이 무엇인지 다룹니다. 인용한 논문은 맨 끝에 모아 두었습니다."
    ),
    "theory.contents": "목차",
    "theory.block.title": "트랜스포머 블록과 레이어 정규화",
    "theory.block.residual": (
        "트랜스포머는 같은 모양의 층 L개를 쌓아 올린 모델입니다. 층마다 **서브층**이 두 개 있습니다. 하나는 위치와 "
        "위치 사이에서 정보를 섞는 셀프 어텐션이고(여기서는 각 글자가 자기보다 앞에 있는 글자들을 참고합니다), 다른 "
        "하나는 위치마다 따로 벡터를 변환하는 피드포워드 네트워크(FFN)입니다. 각 서브층 F는 **잔차 연결**로 감싸여 "
        "있어서 출력이 입력에 그대로 더해집니다. 덕분에 서브층은 벡터 전체를 새로 만들 필요 없이, 들어온 값을 얼마나 "
        "고칠지만 배우면 됩니다."
    ),
    "theory.block.stream": (
        "이렇게 더해지며 쌓이는 값, 곧 글자마다 하나씩 있는 폭 $d$의 벡터를 **잔차 스트림**이라고 부릅니다. 맨 아래 "
        "임베딩에서 시작해 맨 위 출력층까지 이어지는 흐름입니다."
    ),
    "theory.block.ln": (
        "**레이어 정규화**(LayerNorm, Ba et al. 2016)는 이런 벡터 하나를 받아 $d$개 성분의 평균을 빼고 표준편차로 "
        "나눈 다음, 학습되는 배율 γ와 이동 β를 적용합니다(초깃값은 각각 1과 0). 들어온 값의 크기가 어떻든 나가는 "
        "값은 성분들의 평균이 0, 분산이 1이 됩니다. 즉 LayerNorm은 벡터의 생김새는 그대로 두고 크기만 다시 맞춥니다."
    ),
    "theory.block.where": (
        "이 앱이 묻는 것은 하나뿐입니다. 이 정규화를 잔차 덧셈의 **앞**에 두느냐, **뒤**에 두느냐입니다."
    ),
    "theory.placement.title": "Post-LN과 Pre-LN",
    "theory.placement.post": (
        "**Post-LN**은 원래 트랜스포머(Vaswani et al. 2017)가 택하고 BERT(Devlin et al. 2019)가 이어받은 방식으로, "
        "잔차 덧셈을 **마친 뒤에** 정규화합니다. 잔차 스트림까지 포함해 서브층의 출력 전체가 LayerNorm을 통과하므로, "
        "서브층을 하나 지날 때마다 스트림의 크기가 1로 다시 맞춰집니다."
    ),
    "theory.placement.pre": (
        "**Pre-LN**은 GPT-2(Radford et al. 2019) 이후 대부분의 대형 언어 모델이 쓰는 방식으로, 곁가지에 있는 "
        "**서브층의 입력만** 정규화합니다. 잔차 경로 자체는 한 번도 정규화되지 않고, 출력층 바로 앞에 마지막 "
        "LayerNorm이 하나 놓입니다."
    ),
    "theory.placement.same": (
        "두 방식 모두 한 층은 이런 단계 두 번, 즉 어텐션 다음 FFN으로 이루어집니다. 가중치도 데이터도 같고 정규화의 "
        "위치만 다릅니다(Pre-LN에는 마지막 LayerNorm이 하나 더 있을 뿐입니다). 그래서 ln-viz는 모든 정규화 위치를 "
        "같은 초기 가중치와 같은 미니배치로 시작할 수 있고, 비교했을 때 보이는 차이는 오로지 위치 때문입니다."
    ),
    "theory.warmup.title": "Post-LN에 학습률 웜업이 필요한 이유",
    "theory.warmup.problem": (
        "Post-LN 트랜스포머는 보통 **학습률 웜업**을 두고 학습합니다. 학습률을 0 가까이에서 시작해 처음 몇 스텝(원래 "
        "트랜스포머에서는 4,000스텝) 동안 최댓값까지 선형으로 올린 뒤, 정해 둔 스케줄을 따릅니다. 웜업 없이 같은 "
        "최대 학습률로 바로 시작하면 학습이 실패할 수 있고, 웜업을 두면 잘 됩니다. 대신 웜업은 학습 시간을 잡아먹고, "
        "조정해야 할 하이퍼파라미터를 하나 더 늘립니다."
    ),
    "theory.warmup.result": (
        "Xiong et al. 2020은 초기화 시점의 그래디언트를 평균장(mean-field) 이론으로 분석해 그 이유를 밝혔습니다. "
        "Post-LN에서 마지막 층 가중치(아래 식에서는 L번째 층 FFN의 두 번째 행렬)의 그래디언트 상한은 **모델이 "
        "깊어져도 줄지 않습니다**. 반면 Pre-LN에서는 같은 상한이 **$1/\\sqrt L$에 비례해 줄어듭니다**."
    ),
    "theory.warmup.why": (
        "측정 결과도 같은 이야기를 합니다. Post-LN의 그래디언트 노름은 입력 쪽 층에서 출력 쪽 층으로 갈수록 "
        "커지고(논문의 그림 3), Pre-LN에서는 층마다 거의 비슷합니다. 다시 말해 첫 스텝에서 Post-LN의 가장 큰 "
        "그래디언트는 출력 바로 옆에 몰려 있습니다. 여기에 처음부터 최대 학습률을 적용하면 그 층들의 업데이트가 "
        "지나치게 커져, 학습이 제대로 시작되기도 전에 불안정해집니다. 웜업은 모델이 이 출발점을 벗어나는 동안 처음 "
        "업데이트들을 작게 묶어 둡니다."
    ),
    "theory.warmup.setup": (
        "ln-viz도 따르는 논문의 설정은 이렇습니다. 가중치는 Xavier 초기화로 뽑고(분석이 이를 가정합니다), 번역 "
        "실험에서는 Adam을 β₁ = 0.9, β₂ = 0.98로 썼습니다. 실용적인 결론은 **Pre-LN은 웜업 없이도 학습된다**는 "
        "것입니다. 웜업 없는 Post-LN이 실패하는 학습률에서도 잘 학습되고, 더 짧은 학습 시간에 비슷한 성능에 "
        "도달합니다."
    ),
    "theory.preln.title": "Pre-LN이 바꾸는 것, 그리고 그 대가",
    "theory.preln.identity": (
        "Pre-LN에서 잔차 경로는 임베딩에서 마지막 LayerNorm까지 아무것도 거치지 않는 깨끗한 항등 경로입니다. "
        "스트림의 맨 위는 입력에 모든 서브층의 출력을 더한 값일 뿐입니다. 그래서 맨 위로 들어온 그래디언트에게는 "
        "정규화를 한 번도 거치지 않고 모든 층까지 곧장 내려가는 길이 있습니다."
    ),
    "theory.preln.growth": (
        "스트림을 정규화하지 않는 대가로 스트림은 점점 커집니다. 서브층마다 성분당 대략 1 정도 크기의 벡터를 하나씩 "
        "더하기 때문입니다. Xiong et al.의 보조정리 1(Lemma 1)은 초기화 시점에 $l$개 층을 지난 스트림이 얼마나 "
        "커지는지 위아래로 묶어 줍니다."
    ),
    "theory.preln.final": (
        "따라서 마지막 LayerNorm은 크기가 $\\sqrt L$에 비례해 커진 벡터를 받아 다시 크기 1로 나눕니다. 이 "
        "LayerNorm을 거꾸로 지나는 그래디언트도 같은 값으로 나뉘는데, 이것이 Pre-LN 상한에 나오는 $1/\\sqrt "
        "L$입니다. 그 결과 출력 가까운 층이 유독 큰 그래디언트를 받는 일이 없어서, 첫 스텝부터 큰 학습률을 써도 "
        "안전합니다."
    ),
    "theory.preln.cost": (
        "대가도 있습니다. 이후 연구(Liu et al. 2020; Xie et al. 2023; Kim et al. 2025)의 설명을 조심스럽게 옮기면 "
        "이렇습니다. 스트림이 계속 커지므로 뒤쪽 층이 보태는 몫은 점점 작아집니다. 그러면 깊은 층의 표현이 층을 "
        "지나도 별로 바뀌지 않고('표현 붕괴', representation collapse라고도 부릅니다), 마지막 층들이 덩치에 비해 "
        "기여를 덜 할 수 있습니다. 깊은 Pre-LN 모델에서 활성값이 매우 커진다는 보고도 있습니다. Liu et al.은 "
        "Post-LN이 일단 학습에 성공하면 결과가 조금 더 좋을 수 있다고 봅니다. 다만 이는 큰 모델에서 나온 결과입니다. "
        "ln-viz에서도 커지는 스트림은 볼 수 있지만(활성값 분포 차트), 모델이 작아서 성능에 미치는 영향까지는 "
        "드러나지 않습니다."
    ),
    "theory.small.title": "ln-viz의 작은 모델이 보여 주는 것 (솔직하게)",
    "theory.small.scale": (
        "ln-viz의 모델은 아주 작습니다. 글자 단위이고, 폭 $d$ = 64, 층은 6~24개이며, CPU에서 수백 스텝 학습합니다. "
        "논문의 상한은 폭이 큰 경우에 대한 결과입니다. 이 크기에서도 성립하는 것들을 아래에 적었습니다. 모두 시드 몇 "
        "개의 평균으로, 코드가 바뀔 때마다 테스트(`tests/test_paper_claims.py`)가 확인합니다."
    ),
    "theory.small.holds": (
        "- 초기화 시점에 마지막 층의 그래디언트는 Post-LN이 Pre-LN보다 크고, 그 차이는 깊어질수록 벌어집니다. "
        "벌어지는 속도는 두 상한이 예측하는 $\\sqrt L$ 정도입니다(실제로는 조금 더 빠릅니다).\n- Pre-LN의 마지막 층 "
        "그래디언트는 $1/\\sqrt L$에 비례해 줄어듭니다. Pre-LN의 잔차 스트림은 보조정리 1의 범위 안에서 커지고, "
        "Post-LN의 스트림은 크기 1을 유지합니다.\n- Post-LN에서는 그래디언트가 출력 쪽으로 갈수록 커지고, 출력 바로 "
        "옆에서 가장 큽니다.\n- Adam, 학습률 3e-3에서 웜업 없는 6층 Post-LN은 유니그램 선에 머무는 반면, Pre-LN과 "
        "웜업을 둔 Post-LN은 같은 시드, 같은 미니배치로 잘 학습됩니다."
    ),
    "theory.small.differs": (
        "다른 점도 있습니다. 논문의 그림 3에서 Pre-LN의 그래디언트 노름은 층마다 거의 평평합니다. ln-viz의 작은 "
        "모델에서는 그렇지 않고, 초기화 시점에 **출력 쪽으로 갈수록 작아집니다**. 12층 모델에서 FFN의 두 번째 행렬이 "
        "받는 그래디언트는 첫 층이 마지막 층보다 약 2.5배 큽니다. 초기화 실험실에서 직접 볼 수 있습니다. 논문처럼 "
        "평평하지는 않지만 방향이 Post-LN과 반대라는 점이 중요합니다. Pre-LN의 가장 큰 그래디언트는 입력 쪽에, "
        "Post-LN의 가장 큰 그래디언트는 논문이 문제의 근원으로 지목한 출력 쪽에 있습니다. 차이가 나는 이유는 폭이 "
        "작아서, 분석이 가정하는 큰 $d$와 거리가 멀기 때문이라고 추측합니다."
    ),
    "theory.small.presets": (
        "프리셋의 학습률과 웜업 길이는 논문에서 가져온 값이 아니라, ln-viz를 개발한 컴퓨터에서 직접 측정해 고른 "
        "값입니다(예: 폭 64인 6층 모델, Adam 3e-3에서 Post-LN에는 웜업이 100스텝쯤 필요합니다). '학습된다'와 "
        "'정체된다'의 경계는 시드, 깊이, 폭, 배치, 텍스트에 따라 움직이므로, 경계 근처의 실행은 반대편으로 넘어갈 수 "
        "있습니다. 웜업 없는 Post-LN이 어쩌다 학습된다면 학습률이나 깊이를 올려 보세요. 저희가 측정한 범위에서 "
        "실패하는 Post-LN은 대개 NaN으로 터지기보다 유니그램 선에 **정체**했습니다."
    ),
    "theory.charts.title": "차트 읽는 법",
    "theory.charts.loss": (
        "**손실.** 스텝마다의 학습 손실(글자당 nats, 곧 교차 엔트로피)과 검증 손실입니다. e를 손실만큼 거듭제곱한 "
        "값(퍼플렉서티)은 모델이 아직 대략 몇 글자 사이에서 망설이고 있는지를 나타냅니다. **유니그램 선**은 문맥 "
        "없이 글자 빈도만으로 예측할 때의 손실로(영어 텍스트에서 2.96), 정체된 실행은 이 선 위에 머뭅니다. 합성 "
        "마르코프 언어에서는 선이 하나 더 있는데, 어떤 모델도 이보다 낮출 수 없는 **엔트로피 하한**입니다(글자당 "
        "1.50 nats, 창이 짧으면 앞쪽 글자들의 문맥이 짧아서 조금 더 높습니다). 잘 되는 실행은 이 선에 다가가지만 "
        "아래로 내려갈 수는 없습니다. 학습률 스케줄은 보조 축에 그려서 웜업이 어디서 끝나는지 보이게 했습니다."
    ),
    "theory.charts.heatmap": (
        "**그래디언트 히트맵.** 행은 층(아래가 입력 쪽), 열은 측정한 스텝이고, 색은 그 층 가중치의 그래디언트 노름을 "
        "로그 눈금으로 나타냅니다. 그래서 10배 차이는 언제나 같은 만큼의 색 변화로 보입니다. 웜업 없는 Post-LN에서는 "
        "출력에 가까운 위쪽 행이 뜨겁고, Pre-LN에서는 아래쪽 행이 더 따뜻합니다."
    ),
    "theory.charts.activations": (
        "**활성값 분포.** 선택한 스텝에서 층마다 잔차 스트림 값의 히스토그램입니다. 모든 층과 모든 스텝이 같은 고정 "
        "구간(−16에서 16까지)을 쓰므로 폭을 그대로 비교할 수 있습니다. Post-LN은 폭 1을 유지하고, Pre-LN은 "
        "깊어질수록 넓어지며, 정규화가 없으면 값이 떠내려갈 수 있습니다. 구간을 벗어난 값은 버리지 않고 따로 세어 "
        "범위 초과로 표시합니다."
    ),
    "theory.charts.profile": (
        "**층별 그래디언트와 잔차 크기.** 선택한 스텝에서 층마다의 그래디언트 노름을 가로축에 층을 두고 그린 것으로, "
        "여러분의 실행으로 그린 논문의 그림 3입니다. 첫 측정 스텝에서는 이론이 다루는 초기화 시점의 모습에 가깝고, "
        "뒤의 스텝은 학습이 그 모습을 어떻게 바꾸는지 보여 줍니다. 층별 잔차 스트림의 표준편차도 함께 그립니다."
    ),
    "theory.charts.update": (
        "**가중치 대비 갱신 크기.** 한 스텝이 각 층의 가중치를 자기 크기에 비해 얼마나 바꾸는지, 곧 ‖Δw‖ / "
        "‖w‖입니다. 논문이 아니라 실무에서 쓰는 경험칙으로, 1e-3(스텝당 0.1 %) 근처면 건강합니다. 이보다 훨씬 크면 "
        "그 층에 학습률이 너무 크고, 훨씬 작으면 그 층은 거의 배우지 못하고 있습니다."
    ),
    "theory.charts.compare": (
        "**비교 페이지.** 여러 실행을 나란히 놓고 봅니다. 시드가 같은 실행은 같은 가중치에서 출발해 같은 미니배치를 "
        "보므로, 차이는 모두 여러분이 바꾼 설정에서 나옵니다. 대표적인 짝은 웜업이 없는 Post-LN과 있는 Post-LN, "
        "그리고 같은 학습률의 Post-LN과 Pre-LN입니다."
    ),
    "theory.charts.initlab": (
        "**초기화 실험실.** 학습은 하지 않습니다. 초기화 시점에 순전파와 역전파를 한 번 해서 층마다 그래디언트를 "
        "재고, 시드 하나로는 잡음이 크므로 여러 시드에서 반복해 평균과 퍼짐을 보여 줍니다. $1/\\sqrt L$ 기준선은 "
        "Pre-LN의 마지막 층 그래디언트가 깊이에 따라 어떻게 줄어야 하는지를, 띠는 잔차 스트림의 성장에 대한 보조정리 "
        "1의 범위를 나타냅니다."
    ),
    "theory.variants.title": "변형들과 그 예측",
    "theory.variants.intro": (
        "Post-LN과 Pre-LN 말고도 앱에는 정규화 위치 세 가지와 다른 종류의 정규화 하나가 더 있습니다. 각각 한두 줄씩 "
        "소개합니다."
    ),
    "theory.variants.peri": (
        "**Peri-LN**('샌드위치'): 서브층의 입력과 출력을 모두 정규화하고, 마지막 LayerNorm도 둡니다. Ding et al. "
        "2021이 CogView에서 깊은 층의 값이 폭주하지 않도록 이 sandwich-LN을 도입했고, Kim et al. 2025는 이를 "
        "Peri-LN이라는 이름으로 분석해 Pre-LN보다 분산이 고르게 커지고 그래디언트도 안정적이라고 보고했습니다. 예측: "
        "웜업 없이 학습됩니다. 스트림은 여전히 깊이에 따라 커지지만, 한 번에 더해지는 크기를 가중치가 아니라 출력 쪽 "
        "정규화가 정합니다."
    ),
    "theory.variants.deepnorm": (
        "**DeepNorm**(Wang et al. 2022, DeepNet): Post-LN처럼 덧셈 결과를 정규화하되, 잔차에 α > 1의 가중치를 주고 "
        "value·output 프로젝션과 FFN의 초기 가중치를 β < 1배로 줄입니다. 그러면 서브층은 강한 항등 경로 위의 작은 "
        "보정으로 출발하고, 업데이트 한 번에 모델이 움직이는 폭이 제한됩니다. DeepNet은 이 방법으로 1,000층까지 "
        "학습했습니다. 예측: 정규화된 스트림은 Post-LN 그대로이면서 안정성은 Pre-LN에 가깝고, 프리셋도 웜업 없이 "
        "학습됩니다. 아래 상수는 디코더 전용 모델에 대한 DeepNet의 값입니다."
    ),
    "theory.variants.rmsnorm": (
        "**RMSNorm**(Zhang & Sennrich 2019)은 위치가 아니라 정규화의 종류가 다릅니다. 평균을 빼지 않고 이동(bias)도 "
        "없이, 성분들의 제곱평균제곱근(RMS)으로만 나누기 때문에 계산이 더 가볍습니다. 저자들은 크기 조정만으로도 "
        "LayerNorm의 이점 대부분이 유지된다고 보고했고, 최근의 많은 대형 모델이 이를 씁니다(LLaMA도 그중 하나입니다, "
        "Touvron et al. 2023). 예측: 같은 위치라면 LayerNorm과 거의 같은 곡선이 나옵니다. 고급 설정의 정규화 "
        "종류에서 고를 수 있습니다."
    ),
    "theory.variants.none": (
        "**정규화 없음**은 대조군입니다. 잔차 덧셈만 있고 크기를 잡아 줄 것이 전혀 없어서, 스트림과 그래디언트의 "
        "크기는 오로지 초기화, 그리고 학습이 가중치를 어떻게 바꾸는지에 달려 있습니다. 예측: 스트림은 깊이에 따라 "
        "커지고 아무것도 이를 되돌리지 않습니다. 프리셋(학습률 3e-3)에서는 처음 몇 스텝에서 손실이 시작점보다 훨씬 "
        "높이 튀었다가 배우기 시작합니다. 학습률을 더 높이면 활성값이 떠내려가고 손실이 정체하거나 발산할 것으로 "
        "예상합니다."
    ),
    "theory.references.title": "참고 문헌",
    "theory.references.intro": (
        "이 페이지에서 인용한 논문을 오래된 순서로, arXiv 번호와 함께 적었습니다. 제목은 원문 그대로 두었습니다."
    ),
    # --- stability map
    "sweep.err.choice": "norm_position은(는) {choices} 중에서 고른 목록이어야 합니다. {value!r}은(는) 그중 하나가 아닙니다.",
    "sweep.err.seeds": "seeds는 1부터 {hi}까지의 정수여야 합니다. 입력값: {value!r}.",
    "sweep.err.too_many": "스윕의 실행 수가 {n}개로, 허용되는 {cap}개보다 많습니다. 축의 값을 줄이세요.",
    "sweep.err.warmup_longer": "워밍업 {warmup}이(가) 실행 길이(steps={steps})보다 깁니다. 워밍업은 {steps} 이하로 하세요.",
    "sweep.err.empty_axis": "{field}에는 값이 하나 이상 있어야 합니다.",
    "sweep.err.axis_too_long": "{field}의 값이 {have}개로 {hi}개보다 많습니다. 줄이세요.",
    "sweep.err.duplicate": "{field}에 같은 값이 두 번 있습니다 ({values}). 값마다 한 번씩만 쓰세요.",
    "sweep.err.executor": "executor는 {choices} 중 하나여야 합니다. 입력값: {value!r}.",
    "sweep.err.export_suffix": "{path}의 형식을 알 수 없습니다. 파일 이름을 .csv 또는 .parquet로 끝내세요.",
    "sweep.err.preset": "알 수 없는 스윕 프리셋 {value!r}입니다. {choices} 중에서 고르세요.",
    "sweep.err.list": "{flag}은(는) 쉼표로 구분한 {kind} 목록이어야 합니다. 입력값: {value!r}.",
    "sweep.err.workers": "workers는 1에서 256 사이여야 합니다. 입력값: {value}.",
    "sweep.err.address_local": "--address는 Ray 클러스터를 가리킵니다. --executor ray를 함께 쓰거나 --address를 빼세요.",
    "sweep.err.ray_missing": "ray 실행기에는 Ray가 필요합니다: pip install -r requirements-ray.txt (ray=={version}).",
    "sweep.err.ray_connect": "{address}의 Ray 클러스터에 연결할 수 없습니다 ({reason}). 주소와 클러스터가 실행 중인지 확인하세요.",
    "nav.stability_map": "안정성 지도",
    "sweep.status.learned": "학습됨",
    "sweep.status.stalled": "정체",
    "sweep.status.diverged": "발산",
    "sweep.status.failed": "실패",
    "sweep.cell.diverged": "발산<br>{step} 스텝",
    "sweep.axis.lr": "최대 학습률 (로그 눈금)",
    "sweep.axis.depth": "깊이 (블록 수)",
    "sweep.axis.warmup": "워밍업 스텝",
    "sweep.axis.final_loss": "최종 손실 (nats/글자)",
    "sweep.axis.step": "학습 스텝",
    "sweep.axis.loss": "학습 손실 (nats/글자)",
    "sweep.chart.map_title": "최종 손실: 학습률 x 워밍업, 깊이 {depth}",
    "sweep.chart.depth_title": "최종 손실: 깊이 x 워밍업, 학습률 {lr}",
    "sweep.chart.sens_title": "학습률에 따른 최종 손실",
    "sweep.chart.unigram": "유니그램 손실: 글자 빈도만 맞히는 수준",
    "sweep.chart.curve": "{norm}, 워밍업 {warmup}",
    "sweep.chart.curve_depth": ", 깊이 {depth}",
    "sweep.chart.sens_label": "학습률 민감도 {value}",
    "sweep.chart.train_loss": "학습 손실",
    "sweep.preset.warmup-map": "워밍업 지도",
    "sweep.preset.depth-slice": "깊이 단면",
    "sweep.ui.title": "안정성 지도",
    "sweep.ui.intro": (
        "실행 하나는 운 좋은 시드일 수 있습니다. 이 페이지는 여러 실행을 격자로 학습하고 각 칸을 최종 손실로 칠합니다. "
        "Post-LN이 워밍업이 있어야만 학습되는 영역과 Pre-LN이 워밍업 없이도 학습되는 영역이 보입니다."
    ),
    "sweep.ui.settings": "스윕 설정",
    "sweep.ui.preset": "시작점",
    "sweep.ui.custom": "아래 설정 그대로",
    "sweep.ui.norm": "정규화 위치",
    "sweep.ui.lr": "학습률",
    "sweep.ui.warmup": "워밍업 스텝",
    "sweep.ui.depth": "깊이",
    "sweep.ui.steps": "실행당 스텝 수",
    "sweep.ui.seeds": "칸당 시드 수",
    "sweep.ui.executor": "학습할 곳",
    "sweep.ui.address": "Ray 클러스터 주소 (비우면 이 컴퓨터에 전용 클러스터를 띄웁니다)",
    "sweep.ui.run": "스윕 실행",
    "sweep.ui.stop": "멈춤",
    "sweep.ui.estimate": "실행 {runs}개 x {steps} 스텝, 코어 {cores}개로 약 {time}",
    "sweep.ui.busy": "이 서버에서 이미 스윕이 학습 중입니다. 먼저 멈추거나 끝날 때까지 기다리세요.",
    "sweep.ui.progress": "{total}칸 중 {done}칸 완료, {running}개 학습 중, 약 {eta} 남음",
    "sweep.ui.shipped": "이 코드로 미리 측정한 결과입니다 ({date}). 여기서 다시 측정하려면 스윕 실행을 누르세요.",
    "sweep.ui.empty": "이 스윕의 칸은 아직 저장된 것이 없습니다. 스윕 실행을 누르세요.",
    "sweep.ui.how_to_read": (
        "칸 하나가 실행 하나이며, 모든 패널에 같은 눈금으로 최종 학습 손실을 칠했습니다. 눈금은 도달한 최저 손실부터 "
        "초기화 시점의 손실까지입니다. 테두리가 있는 칸은 유니그램 손실에서 정체했거나 발산한 칸이고, 회색 칸은 아직 "
        "학습하지 않은 칸입니다. 학습률 민감도(Wortsman 외 2023)는 학습률마다 최종 손실이 최선보다 얼마나 높은지의 "
        "평균이며, 0이면 그 설정은 학습률에 영향을 받지 않는다는 뜻입니다."
    ),
    "sweep.ui.click_hint": "칸을 누르면 그 실행의 손실 곡선이 보입니다.",
    "sweep.ui.cell_title": "{norm}, 학습률 {lr}, 워밍업 {warmup}, 깊이 {depth}<br>{status}, 최종 손실 {loss}",
    "sweep.ui.open_live": "실시간 학습에서 열기",
    "sweep.ui.download": "칸 내려받기 (CSV)",
    "sweep.ui.bad_param": "링크의 매개변수 {param}은(는) 쓸 수 없어 무시했습니다.",
    "sweep.dur.s": "{n}초",
    "sweep.dur.min": "{n}분",
    "sweep.dur.h": "{n}시간",
}

CATALOGS: dict[str, dict[str, str]] = {"en": EN, "ko": KO}


def t(key: str, lang: str = DEFAULT_LANG, **params: object) -> str:
    """The sentence `key` in `lang`, with `params` filled in. Unknown languages fall back to English."""
    catalog = CATALOGS.get(lang, EN)
    template = catalog.get(key)
    if template is None:
        template = EN[key]  # a missing key is our bug: KeyError names it
    return template.format(**params)


def placeholders(template: str) -> set[str]:
    """The names of the `{placeholders}` in a template (used by the catalog test)."""
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


class LocalizedError(ValueError):
    """An error a user can cause: one sentence, translatable.

    `str(err)` is the English sentence; `err.message(lang)` gives it in another language.
    """

    def __init__(self, key: str, field: str | None = None, **params: object) -> None:
        self.key = key
        self.field = field
        self.params = dict(params)
        if field is not None:
            self.params.setdefault("field", field)
        super().__init__(t(key, "en", **self.params))

    def message(self, lang: str = DEFAULT_LANG) -> str:
        return t(self.key, lang, **self.params)
