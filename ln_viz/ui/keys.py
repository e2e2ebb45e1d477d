"""Every key of `st.session_state` the app reads or writes, named once, with the module it belongs to: a
plain entry the code keeps, or a widget's `key=` that is read back (or set) through the session state.
A key starting with `_` is never a widget's. A name for a part of a key (a prefix ending in `_`, a suffix
starting with `__`) is joined to the caller's part: a container's key, a chart's axis, a form's prefix.
tests/test_architecture.py fails on a literal key of `st.session_state` anywhere else."""

from __future__ import annotations

# --- the page's language (ln_viz.ui.language; the lecture view's switch sets LANG too) ----------------
LANG = "lang"  # the language picked: a plain entry, so it survives every page switch
LANG_CHOICE = "lang_choice"  # the sidebar's language radio
WIDGETS_LANG = "_widgets_lang"  # the language the translated widgets were last drawn in
TRANSLATED = "_translated_widgets"  # the keys of widgets whose option labels are translated

# --- the lecture view's switch (ln_viz.ui.lecture_switch) --------------------------------------------
LECTURE_VIEW = "_lecture_view"  # on or off for the session (?present=1 or the toggle)
LECTURE_TOGGLE = "lecture_toggle"  # the sidebar's toggle

# --- a shared link's notices (ln_viz.ui.links) ---------------------------------------------------------
LINK_NOTICES = "_link_notices"  # param -> Notice, for the parts of a link a parser refused
LINK_UNKNOWN = "_link_unknown"  # the notices for the parameters no page reads, read once per session

# --- layout (ln_viz.ui.layout) -------------------------------------------------------------------------
SCROLLED = "_scrolled_"  # + a container's key: the token it was last scrolled into view for

# --- the run settings form (ln_viz.ui.config_form): each key is a form's prefix + one of these ---------
# (the prefixes: "" for Live's form, "a." and "b." for Compare's sides; ln_viz.urlstate.PREFIXES)
PRESET = "preset"  # the preset box
USER_TEXT = "user_text"  # the corpus text area (corpus "user")
USER_FILE = "user_file"  # the corpus file uploader
CORPUS = "corpus"  # the corpus box (its value decides whether the text area and uploader are drawn)
# and + every other name of ln_viz.ui.config_form.FORM_FIELDS (a RunConfig field): that field's widget

# --- the Runs page (ln_viz.ui.runs_view, pages/runs.py) ----------------------------------------------
RUNS_NOTICE = "_runs_notice"  # (kind, sentence) a button left before its rerun, shown once
RUNS_DELETE = "_runs_delete"  # the id of the run whose delete awaits its confirmation
RUNS_IMPORTED = "_runs_imported"  # upload file_id -> (kind, sentence): each upload handled once
RUNS_F_NORM = "runs_f_norm"  # the filters with translated options, and the sort
RUNS_F_DEPTH = "runs_f_depth"
RUNS_F_STATUS = "runs_f_status"
RUNS_SORT = "runs_sort"
RUNS_PROBE_STEP = "runs_probe_step"  # the opened run's step control (live.draw_charts' key_prefix "runs_")
COMPARE_RUNS = "compare_runs"  # the two stored run ids the Runs page hands to Compare (pages/compare.py)
RUNS_CHARTS = "_runs_charts"  # the opened run's chart files, once made (ln_viz.ui.run_downloads)
VIDEO = "_video_"  # + a page's video key: the video or GIF made last (ln_viz.ui.video_export)
VIDEO_JOB = "_video_job_"  # + a page's video key: the video being drawn in its own thread (ln_viz.ui.video_export)

# --- the Init lab page (pages/init_lab.py): its widgets, set in code and kept across pages -----------
INIT_POSITIONS = "init_positions"
INIT_DEPTH = "init_depth"
INIT_SEEDS = "init_seeds"
INIT_PARAM = "init_param"
INIT_D_MODEL = "init_d_model"
INIT_HEADS = "init_heads"
INIT_BATCH = "init_batch"
INIT_SEQ = "init_seq"
INIT_DEPTHS = "init_depths"
INIT_HF_ARCHS = "init_hf_archs"  # the real-architecture view (ln_viz.ui.init_lab_hf)
INIT_HF_INIT = "init_hf_init"
INIT_HF_ROLE = "init_hf_role"
INIT_LECTURE_VIEW = "init_lecture_view"  # the lecture view's choice: ln-viz's model, BERT vs GPT-2 at either init

# --- the stability map (ln_viz.ui.stability_view, stability_form, pages/stability_map.py) --------------
SM_SESSION = "_sm_session"  # this session's own key: a sweep's owner
SM_SPEC = "sm_spec"  # the spec the form holds (from the URL once, then the form's)
SM_BAD = "sm_bad"  # the URL's refused values, read once per session
SM_CELL = "sm_cell"  # the fingerprint of the cell whose curve is shown (a click on the map)
SM_WAS_BUSY = "sm_was_busy"  # a sweep was training at the map's last draw
SM_MAP = "sm_map_"  # + the map's x axis (+ "_phone"): the map chart, its selection read back
SM_PRESET = "sm_preset"  # the preset radio
SM_PRESET_APPLIED = "sm_preset_applied"  # the preset last written into the form
SM_NORM = "sm_norm"  # the axes' widgets, cleared when a preset is applied
SM_LR = "sm_lr"
SM_WARMUP = "sm_warmup"
SM_DEPTH = "sm_depth"
SM_STEPS = "sm_steps"
SM_SEEDS = "sm_seeds"
SM_QK = "sm_qk"
SM_NORMTYPE = "sm_normtype"
SM_WD = "sm_wd"
SM_ADAMINIT = "sm_adaminit"
SM_AXES = (SM_NORM, SM_LR, SM_WARMUP, SM_DEPTH, SM_STEPS, SM_SEEDS, SM_QK, SM_NORMTYPE, SM_WD, SM_ADAMINIT)

# --- the run view: Live, Compare, watch (the runview files still write these as literals; they adopt
# the names below when they move to one component) ------------------------------------------------------
LIVE_NOTICES = "_live_notices"  # pages/live.py: the link's notices, set once per session
LIVE_RUN_ID = "live_run_id"  # pages/live.py: the run Live shows
COMPARE_NOTICES = "_compare_notices"  # pages/compare.py: the link's notices, set once per session
COMPARE_PRESET = "cpreset"  # pages/compare.py: the Compare scenario box
COMPARE_SEEDS = "cseeds"  # ln_viz.ui.compare_seeds.SEEDS_KEY: seeds per side
LECTURE_CHOICE = "lecture_choice"  # ln_viz.ui.lecture_view: the scenario buttons
LECTURE_MORE = "lecture_more"  # ln_viz.ui.lecture_view: the other scenarios' box
LOSS_SMOOTH = "loss_smooth"  # ln_viz.ui.loss_view.SMOOTH_KEY: the smoothing slider
LOSS_LOG_Y = "loss_logy"  # ln_viz.ui.loss_view.LOG_KEY: the log-axis toggle
LOSS_VIEW = "_loss_view"  # ln_viz.ui.loss_view._STATE: the session's LossView
KEPT_SETTINGS = "_kept_settings"  # ln_viz.ui.page_state._VALUES: widget key -> its last value
KEPT_KEYS = "_kept_keys"  # ln_viz.ui.page_state._KEYS: the widget keys kept across pages
KEPT_PAGE = "_kept_page"  # ln_viz.ui.page_state._PAGE: the page the last full run drew (its script hash)
KEPT_ARRIVED = "_kept_arrived"  # ln_viz.ui.page_state._ARRIVED: this run draws another page than the last
STEP_PLAYING = "__playing"  # ln_viz.ui.stepper: a step control's key + this: Play is on
STEP_CHOSEN = "__step"  # ln_viz.ui.stepper: a step control's key + this: the step chosen
STEP_AT_END = "__at_end"  # ln_viz.ui.stepper: a step control's key + this: at its last step
STEP_IDLE = "_idle"  # suffix: the disabled step slider drawn while the run trains (its thumb set each run)

# --- a newcomer's way to the lesson (ln_viz.ui.first_visit) ------------------------------------------------------
START_COMPARE = "_start_compare"  # Live's lead button asked Compare to start both runs as it draws
WATCH_REFRESH = "_watch_refresh"  # ln_viz.ui.watch: this tab's refreshes (one still open? its slowdown)
