"""The stability map page's server side: the one sweep a server trains at a time, the spec in the URL,
and the shipped default map (the settings form: ln_viz.ui.stability_form).

One sweep per server: a grid of 32 runs takes both cores of a 2-core machine for minutes, and two at
once would each take twice as long. Every tab sees the sweep that is training, but only the tab that
started it can stop it; the store keeps every finished cell, so any tab reopens any map without
retraining. A visitor's sweep gets the classroom caps (ln_viz.ui.training.sweep_caps): steps and
seconds per run as Live's, runs per sweep, and an estimate above the bound is refused in one sentence.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from ln_viz.i18n import LocalizedError, t
from ln_viz.sweep.presets import DEFAULT_MAP, DEFAULT_SWEEP, SWEEP_PRESETS
from ln_viz.sweep.results import CellResult
from ln_viz.sweep.spec import (
    QUERY_VARIANTS,
    SweepConfig,
    SweepError,
    WorkEstimate,
    duration_text,
    spec_from_query,
    spec_to_query,
)
from ln_viz.text import error_line
from ln_viz.ui import layout
from ln_viz.ui.training import SweepCaps, sweep_caps

log = logging.getLogger(__name__)

SWEEP_NICE = 15  # below the Runner's workers (nice 10, ln_viz.runner): a user's Start gets the cores first


@dataclass
class SweepService:
    """The server's sweep slot: at most one SweepRun trains, in a thread of its own, and belongs to
    the session that started it (`owner`): only that one may stop it."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    sweep: Any = None  # SweepRun
    thread: threading.Thread | None = None
    error: Exception | None = None  # why the last sweep failed (an unreachable cluster, say)
    owner: str | None = None  # the session that started the sweep (session_key())

    def busy(self) -> bool:
        """Whether a sweep is training now."""
        return self.thread is not None and self.thread.is_alive()

    def start(
        self,
        spec: SweepConfig,
        executor: str,
        address: str | None,
        owner: str | None = None,
        caps: SweepCaps | None = None,
    ) -> bool:
        """Start a sweep of `spec` for session `owner`; False when one is already training. A sweep
        above `caps` (default: the server's) is refused with its SweepError; a store that cannot be
        opened with its StoreError."""
        from ln_viz.sweep.chooser import make_executor
        from ln_viz.sweep.driver import SweepRun
        from ln_viz.sweep.spec import estimate
        from ln_viz.sweep.storage import SweepStore

        caps = caps or sweep_caps()
        with self.lock:
            if self.busy():
                return False
            run_on = make_executor(executor, address=address, nice=SWEEP_NICE)
            refused = cap_error(spec, estimate(spec, run_on.workers), caps)
            if refused is not None:
                raise refused
            if hasattr(run_on, "max_seconds"):  # the local executor: each run within Live's time cap
                run_on.max_seconds = caps.max_seconds
            store = SweepStore()  # the app's run store ($LN_VIZ_STORE, else the default path)
            self.sweep = SweepRun(spec, run_on, store, on_problem=_log_problem)
            self.error, self.owner = None, owner
            self.thread = threading.Thread(target=self._run, args=(self.sweep, store), daemon=True, name="ln-viz-sweep")
            self.thread.start()
            return True

    def _run(self, sweep: Any, store: Any) -> None:
        try:
            sweep.run()
        except Exception as e:  # noqa: BLE001 -- shown on the page
            self.error = e
        finally:
            store.close()

    def owned_by(self, session: str | None) -> bool:
        """Whether `session` started the sweep (and so may stop it)."""
        return self.owner is not None and self.owner == session

    def stop(self, session: str | None = None) -> bool:
        """Stop the sweep for the session that started it; False (nothing stopped) for another."""
        if self.sweep is None or not self.owned_by(session):
            return False
        self.sweep.stop()
        return True

    def shutdown(self) -> None:
        if self.sweep is not None:
            self.sweep.stop()
        if self.thread is not None:
            self.thread.join(5)


def _log_problem(problem: LocalizedError | None) -> None:
    """The server log says a sweep's store trouble once when it starts and once when it clears."""
    if problem is not None:
        log.warning("ln-viz: sweep: %s", problem)
    else:
        log.warning("ln-viz: sweep: the store takes its cells again; none was lost")


def cap_error(spec: SweepConfig, work: WorkEstimate, caps: SweepCaps) -> SweepError | None:
    """Why a visitor may not start this sweep on this server (one sentence with the cap and how the
    operator raises it), or None."""
    if spec.steps > caps.max_steps:
        return SweepError("sweep.err.cap_steps", "steps", steps=spec.steps, cap=caps.max_steps)
    if spec.n_runs > caps.max_runs:
        return SweepError("sweep.err.cap_runs", "n_runs", n=spec.n_runs, cap=caps.max_runs, env=caps.RUNS_ENV)
    if work.seconds > caps.max_minutes * 60:
        return SweepError(
            "sweep.err.cap_time", "steps", time=duration_text(work.seconds), cores=work.workers,
            cap=f"{caps.max_minutes:g}", env=caps.MINUTES_ENV,
        )  # fmt: skip
    return None


def session_key() -> str:
    """This browser session's own key (a sweep's owner)."""
    return st.session_state.setdefault("_sm_session", uuid.uuid4().hex)


def _shutdown(service: SweepService) -> None:
    service.shutdown()


@st.cache_resource(show_spinner=False, on_release=_shutdown)
def service() -> SweepService:
    """The server's one sweep slot."""
    return SweepService()


@st.cache_data(show_spinner=False)
def shipped_default() -> dict[str, Any] | None:
    """The warm-up map measured in advance (scripts/make_stability_map_default.py), or None."""
    try:
        data = json.loads(DEFAULT_MAP.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    data["results"] = [CellResult.from_dict(r) for r in data["results"]]
    return data


def stored_results(spec: SweepConfig) -> tuple[list[CellResult], LocalizedError | None]:
    """The cells of `spec` the app's store has (none when there is no store yet), and why the store
    could not be read (damaged sweep tables: one sentence for the page, the map still drawn)."""
    from ln_viz.store import resolve_store_path
    from ln_viz.sweep.storage import SweepStore

    if not resolve_store_path().exists():
        return [], None
    try:
        with SweepStore() as store:
            return store.results(spec), None
    except LocalizedError as e:
        return [], e


def ray_available() -> bool:
    """Whether Ray is installed (the page offers the ray executor only then)."""
    return importlib.util.find_spec("ray") is not None


def ray_cluster() -> tuple[str | None, Exception | None]:
    """The Ray cluster the operator set for this server ($LN_VIZ_RAY_ADDRESS; `local`: a private one),
    or None: the page offers this machine's cores only. A visitor never chooses where the server
    connects (issue 21, S1). The second item says why a set address cannot be used."""
    from ln_viz.sweep.ray_address import configured_address
    from ln_viz.sweep.spec import SweepError

    address, problem = configured_address()
    if address is not None and not ray_available():
        from ln_viz.sweep.ray_exec import RAY_VERSION

        return None, SweepError("sweep.err.ray_missing", "executor", version=RAY_VERSION)
    return address, problem


def error_text(e: Exception, lang: str) -> str:
    """A sweep's failure in the user's language when it is one of ours, else its first line."""
    from ln_viz.i18n import LocalizedError

    return e.message(lang) if isinstance(e, LocalizedError) else error_line(e, named=False)


def map_results(spec: SweepConfig) -> tuple[list[CellResult], Any, bool, LocalizedError | None]:
    """(results, progress of the sweep training this spec or None, shipped, problem): a sweep of this
    spec training now (or ended: its cells are in memory); else the store's cells; else, for the default
    map, the shipped measurement. `problem`: why cells are not in the store, one sentence, or None."""
    svc = service()
    sweep = svc.sweep
    if sweep is not None and sweep.spec == spec and (svc.busy() or sweep.progress().state != "pending"):
        progress = sweep.progress()
        return list(progress.results), (progress if svc.busy() else None), False, progress.store_problem
    stored, problem = stored_results(spec)
    shipped = shipped_default()
    if len(stored) < spec.n_runs and shipped is not None and SweepConfig.from_dict(shipped["spec"]) == spec:
        return shipped["results"], None, True, problem
    return stored, None, False, problem


def read_spec_from_url() -> tuple[SweepConfig, list[str]]:
    """The spec in the URL (once per session; the form keeps it afterwards), else the default map."""
    params = {k: st.query_params.get_all(k) for k in st.query_params}
    return spec_from_query(params, SWEEP_PRESETS[DEFAULT_SWEEP])


def write_spec_to_url(spec: SweepConfig) -> None:
    """Keep the spec in the address bar, so a map can be bookmarked."""
    query = spec_to_query(spec)
    for key, value in query.items():
        st.query_params[key] = value
    for key in QUERY_VARIANTS:  # a variant axis back at the base's value leaves the address
        if key not in query and key in st.query_params:
            del st.query_params[key]


# The lecture view's boxes, sized from the viewport as SCREEN_CSS of ln_viz.ui.lecture_view sizes Live's
# (and zoomed as its charts are): the map over a clicked cell's curve (which leaves room for its "Open in
# Live" row) on the left, the LR-sensitivity chart the whole height on the right.
MAP_BOX, CELL_BOX, SENS_BOX, HALF_BOX = "smmap__", "smcell__", layout.FULL, layout.HALF
NOMINAL_PX = {MAP_BOX: 490, CELL_BOX: 300}  # their heights at 1920x1080, the lecture view's own px
_SIZED = """[class*="st-key-{box}"] {{height: {height}; flex: 0 0 auto !important; overflow: hidden;}}
"""
LECTURE_CSS = (
    _SIZED.format(box=MAP_BOX, height="calc((100vh - var(--ln-chrome)) * 0.58)")
    + _SIZED.format(box=CELL_BOX, height="calc((100vh - var(--ln-chrome)) * 0.42 - 3.4rem)")
    + layout.scaled_charts(MAP_BOX)
    + layout.scaled_charts(CELL_BOX)
)


# A phone gets the map with its panels stacked (issue 21 N29):
# Streamlit cannot tell the server the screen's width, so both forms are sent and CSS shows the one that fits.
WIDE, NARROW = "smwide__", "smnarrow__"
PHONE_WIDTH_PX = 640  # as ln_viz.ui.layout's phone margins
PHONE_CSS = f"""
@media (max-width: {PHONE_WIDTH_PX}px) {{ [class*="st-key-{WIDE}"] {{display: none !important;}} }}
@media (min-width: {PHONE_WIDTH_PX + 1}px) {{ [class*="st-key-{NARROW}"] {{display: none !important;}} }}
"""


def wide_or_narrow(wide: Any, narrow: Any, key: str, pick: bool = False) -> None:
    """Draw `wide` on a screen wider than a phone's and `narrow` on a phone (the other one hidden); a
    click on a cell of either shows its curve when `pick`."""
    for box, fig in ((WIDE, wide), (NARROW, narrow)):
        chart_key = key + ("" if box == WIDE else "_phone")
        with st.container(key=box + key):
            chart_box(fig, chart_key, box, False, pick_on_select(chart_key) if pick else "ignore")


def selected_cells(event: Any) -> list[str]:
    """The fingerprints of the map cells a selection event holds (a click: one)."""
    points = (event or {}).get("selection", {}).get("points", []) if event else []
    return [p["customdata"] for p in points if p.get("customdata")]


def pick_on_select(key: str) -> Any:
    """A map's on_select callback: the clicked cell becomes the one shown (`sm_cell`). It runs before the
    page reruns, so the map is drawn with the cell already framed (issue 21 N9), and the latest click
    wins whichever of the page's maps it was on."""

    def picked() -> None:
        cells = selected_cells(st.session_state.get(key))
        if cells:
            st.session_state["sm_cell"] = cells[-1]

    return picked


def chart_box(fig: Any, key: str, box: str, lecture: bool, on_select: Any = "ignore") -> Any:
    """A chart of the map page: in the lecture view in a box sized from the viewport (no modebar over the
    map), else at the figure's own height. `on_select`: "ignore", "rerun" (then it returns the selection
    event) or a callback (`pick_on_select`)."""
    kwargs = {"on_select": on_select, "selection_mode": "points"} if on_select != "ignore" else {}
    if not lecture:
        return st.plotly_chart(fig, key=key, theme=None, **kwargs)
    if fig.layout.height is None:
        fig.layout.height = NOMINAL_PX.get(box) or layout.NOMINAL_PX[box]
    with st.container(key=box + key):
        config = {"displayModeBar": False}
        return st.plotly_chart(fig, key=key, width="stretch", height="stretch", theme=None, config=config, **kwargs)


def lecture_title(spec: SweepConfig, lang: str) -> str:
    """The lecture view's header: the norm positions, depth and steps the map is of."""
    from ln_viz.charts import norm_label

    norms = " / ".join(norm_label(n, lang) for n in spec.norm_position)
    return t("sweep.lecture.title", lang, norms=norms, depth=", ".join(map(str, spec.depth)), steps=spec.steps)


def lecture_takeaway(spec: SweepConfig) -> str | None:
    """The takeaway's catalog key: the default map's sentence (read off the shipped map), else None (a
    map nobody has read yet has no sentence)."""
    return "sweep.lecture.takeaway" if spec == SWEEP_PRESETS[DEFAULT_SWEEP] else None


def cell_title(r: CellResult, lang: str) -> str:
    """Post-LN, lr 3e-3, warm-up 0, depth 6: learned, final loss 2.16."""
    from ln_viz.charts import norm_label
    from ln_viz.sweep.labels import lr_label

    loss = f"{r.final_loss:.2f}" if r.final_loss is not None else "-"
    status = t(f"sweep.status.{r.status}", lang)
    norm = norm_label(r.norm_position, lang)
    # a diverged run's "final loss" is the mean of its last finite steps (1181043.93, say): not a result
    key = "sweep.ui.cell_title_diverged" if r.status == "diverged" else "sweep.ui.cell_title"
    words = {"norm": norm, "lr": lr_label(r.lr), "warmup": r.warmup_steps, "depth": r.depth}
    return t(key, lang, **words, status=status, loss=loss, step=r.diverged_step if r.diverged_step else "-")


def live_link(r: CellResult, lang: str, lecture: bool) -> str:
    """The Live page's address with this cell's config, the language and the lecture view (Live reads the
    URL when a session starts: the link loads the page afresh, in the same tab, see `live_link_html`)."""
    from urllib.parse import urlencode

    from ln_viz.config import RunConfig
    from ln_viz.urlstate import config_to_query

    cfg = RunConfig.from_dict(r.config).replace(probe_every=10, eval_every=50)  # the Live page's probes
    query = config_to_query(cfg) | {"lang": lang} | ({"present": "1"} if lecture else {})
    return "./?" + urlencode(query)


def live_link_html(url: str, label: str) -> str:
    """A link drawn as a button that opens `url` in this tab (st.link_button always opens a new one)."""
    from html import escape

    style = (
        "display:inline-block;padding:0.25rem 0.75rem;border:1px solid rgba(49,51,63,0.2);border-radius:0.5rem;"
        "color:inherit;text-decoration:none"
    )
    return f'<a href="{escape(url)}" target="_self" style="{style}">{escape(label)}</a>'
