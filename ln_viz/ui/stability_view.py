"""The stability map page's server side: the one sweep a server trains at a time, the spec form, the
spec in the URL, and the shipped default map.

One sweep per server, whoever started it: a grid of 32 runs takes both cores of a 2-core machine for
minutes, and two at once would each take twice as long. Every tab sees the sweep that is training,
and the store keeps every finished cell, so any tab reopens any map without retraining.
"""

from __future__ import annotations

import importlib.util
import json
import threading
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from ln_viz.config import FIELDS, NORM_POSITIONS, NORM_TYPES, QK_NORMS
from ln_viz.i18n import t
from ln_viz.sweep.presets import DEFAULT_MAP, DEFAULT_SWEEP, SWEEP_PRESETS
from ln_viz.sweep.results import CellResult
from ln_viz.sweep.spec import MAX_SEEDS, QUERY_VARIANTS, SweepConfig, spec_from_query, spec_to_query
from ln_viz.text import error_line
from ln_viz.ui import language, layout

SWEEP_NICE = 15  # below the Runner's workers (nice 10, ln_viz.runner): a user's Start gets the cores first
LR_CHOICES = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2)
WARMUP_CHOICES = (0, 10, 30, 50, 100, 200, 400)
DEPTH_CHOICES = (1, 2, 3, 4, 6, 8, 12, 16, 24)
NORM_CHOICES = NORM_POSITIONS
WEIGHT_DECAY_CHOICES = (0.0, 0.01, 0.1)


@dataclass
class SweepService:
    """The server's sweep slot: at most one SweepRun trains, in a thread of its own."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    sweep: Any = None  # SweepRun
    thread: threading.Thread | None = None
    error: Exception | None = None  # why the last sweep failed (an unreachable cluster, say)

    def busy(self) -> bool:
        """Whether a sweep is training now."""
        return self.thread is not None and self.thread.is_alive()

    def start(self, spec: SweepConfig, executor: str, address: str | None) -> bool:
        """Start a sweep of `spec`; False when one is already training."""
        from ln_viz.sweep.chooser import make_executor
        from ln_viz.sweep.driver import SweepRun
        from ln_viz.sweep.storage import SweepStore

        with self.lock:
            if self.busy():
                return False
            store = SweepStore()  # the app's run store ($LN_VIZ_STORE, else the default path)
            self.sweep = SweepRun(spec, make_executor(executor, address=address, nice=SWEEP_NICE), store)
            self.error = None
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

    def stop(self) -> None:
        if self.sweep is not None:
            self.sweep.stop()

    def shutdown(self) -> None:
        self.stop()
        if self.thread is not None:
            self.thread.join(5)


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


def stored_results(spec: SweepConfig) -> list[CellResult]:
    """The cells of `spec` the app's store has (none when there is no store yet)."""
    from ln_viz.store import resolve_store_path
    from ln_viz.sweep.storage import SweepStore

    if not resolve_store_path().exists():
        return []
    with SweepStore() as store:
        return store.results(spec)


def ray_available() -> bool:
    """Whether Ray is installed (the page offers the ray executor only then)."""
    return importlib.util.find_spec("ray") is not None


def error_text(e: Exception, lang: str) -> str:
    """A sweep's failure in the user's language when it is one of ours, else its first line."""
    from ln_viz.i18n import LocalizedError

    return e.message(lang) if isinstance(e, LocalizedError) else error_line(e, named=False)


def map_results(spec: SweepConfig) -> tuple[list[CellResult], Any, bool]:
    """(results, progress of the sweep training this spec or None, shipped): a sweep of this spec
    training now; else the store's cells; else, for the default map, the shipped measurement."""
    svc = service()
    sweep = svc.sweep
    if sweep is not None and sweep.spec == spec and (svc.busy() or sweep.progress().state != "pending"):
        progress = sweep.progress()
        return list(progress.results), (progress if svc.busy() else None), False
    stored = stored_results(spec)
    shipped = shipped_default()
    if len(stored) < spec.n_runs and shipped is not None and SweepConfig.from_dict(shipped["spec"]) == spec:
        return shipped["results"], None, True
    return stored, None, False


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
_ZOOMED = """[class*="st-key-{box}"] {{height: {height}; flex: 0 0 auto !important; overflow: hidden;}}
[class*="st-key-{box}"] [data-testid="stFullScreenFrame"] {{zoom: var(--ln-zoom);
    width: calc(100% / var(--ln-zoom)) !important; height: calc(100% / var(--ln-zoom)) !important;}}
"""
LECTURE_CSS = _ZOOMED.format(box=MAP_BOX, height="calc((100vh - var(--ln-chrome)) * 0.58)") + _ZOOMED.format(
    box=CELL_BOX, height="calc((100vh - var(--ln-chrome)) * 0.42 - 3.4rem)"
)


def chart_box(fig: Any, key: str, box: str, lecture: bool, on_select: str = "ignore") -> Any:
    """A chart of the map page: in the lecture view in a box sized from the viewport (no modebar over the
    map), else at the figure's own height. Returns the selection event (`on_select="rerun"`)."""
    kwargs = {"on_select": on_select, "selection_mode": "points"} if on_select != "ignore" else {}
    if not lecture:
        return st.plotly_chart(fig, key=key, theme=None, **kwargs)
    if fig.layout.height is None:
        fig.layout.height = NOMINAL_PX.get(box) or layout.NOMINAL_PX[box]
    with st.container(key=box + key):
        config = {"displayModeBar": False}
        return st.plotly_chart(fig, key=key, width="stretch", height="stretch", theme=None, config=config, **kwargs)


def settings_form(lang: str) -> tuple[SweepConfig, str, str | None]:
    """The settings expander's content: a preset, the axes, the executor; returns (the spec the widgets
    say, not validated yet; the executor; the Ray address or None)."""
    preset = st.radio(
        t("sweep.ui.preset", lang),
        ["-", *SWEEP_PRESETS],
        horizontal=True,
        key=language.translated("sm_preset"),
        format_func=lambda p: t("sweep.ui.custom" if p == "-" else f"sweep.preset.{p}", lang),
    )
    if preset != "-" and st.session_state.get("sm_preset_applied") != preset:
        st.session_state["sm_preset_applied"] = preset
        st.session_state["sm_spec"] = SWEEP_PRESETS[preset]
        for k in ("sm_norm", "sm_lr", "sm_warmup", "sm_depth", "sm_steps", "sm_seeds", "sm_qk", "sm_normtype", "sm_wd"):
            st.session_state.pop(k, None)
        st.rerun()
    candidate = spec_form(st.session_state["sm_spec"], lang, st)
    executor, address = "local", None
    if ray_available():
        e1, e2 = st.columns(2)
        executor = e1.radio(t("sweep.ui.executor", lang), ["local", "ray"], horizontal=True, key="sm_executor")
        if executor == "ray":
            address = e2.text_input(t("sweep.ui.address", lang), key="sm_address") or None
    return candidate, executor, address


def lecture_title(spec: SweepConfig, lang: str) -> str:
    """The lecture view's header: the norm positions, depth and steps the map is of."""
    from ln_viz.charts import norm_label

    norms = " / ".join(norm_label(n, lang) for n in spec.norm_position)
    return t("sweep.lecture.title", lang, norms=norms, depth=", ".join(map(str, spec.depth)), steps=spec.steps)


def lecture_takeaway(spec: SweepConfig) -> str | None:
    """The takeaway's catalog key: the default map's sentence (read off the shipped map), else None (a
    map nobody has read yet has no sentence)."""
    return "sweep.lecture.takeaway" if spec == SWEEP_PRESETS[DEFAULT_SWEEP] else None


def spec_form(spec: SweepConfig, lang: str, container: Any) -> SweepConfig:
    """The axes as widgets, starting from `spec`; returns what they say (validated by the caller)."""
    import dataclasses

    c1, c2, c3, c4 = container.columns(4)
    st.session_state.setdefault("sm_norm", list(spec.norm_position))  # no default= beside a key set in code
    norm = c1.multiselect(
        t("sweep.ui.norm", lang),
        NORM_CHOICES,
        format_func=lambda v: t(f"chart.norm.{v}", lang),
        key=language.translated("sm_norm"),
    )
    lrs = _axis_select(c2, t("sweep.ui.lr", lang), LR_CHOICES, spec.lr, "sm_lr", format_func=lambda v: f"{v:.0e}")
    warm = _axis_select(c3, t("sweep.ui.warmup", lang), WARMUP_CHOICES, spec.warmup_steps, "sm_warmup")
    depth = _axis_select(c4, t("sweep.ui.depth", lang), DEPTH_CHOICES, spec.depth, "sm_depth")
    d1, d2 = container.columns(2)
    # the bounds validate() applies (a bookmark may hold any value it accepts)
    steps_field = FIELDS["steps"]
    steps = d1.number_input(
        t("sweep.ui.steps", lang), steps_field.lo, steps_field.hi, spec.steps, step=10, key="sm_steps"
    )
    seeds = d2.slider(t("sweep.ui.seeds", lang), 1, MAX_SEEDS, spec.seeds, key="sm_seeds")
    return dataclasses.replace(
        spec,
        **_variant_form(spec, lang, container),
        norm_position=tuple(n for n in NORM_CHOICES if n in norm),
        lr=tuple(sorted(lrs)),
        warmup_steps=tuple(sorted(warm)),
        depth=tuple(sorted(depth)),
        seeds=seeds,
        steps=steps,
    )


def _variant_form(spec: SweepConfig, lang: str, container: Any) -> dict[str, tuple]:
    """The variant axes (QK-norm, norm type, weight decay); none chosen, or the base's one, is the base's."""
    v1, v2, v3 = container.columns(3)
    chosen = {}
    for column, name, key, choices, prefix in (
        (v1, "qk_norm", "sm_qk", QK_NORMS, "qknorm"),
        (v2, "norm_type", "sm_normtype", NORM_TYPES, "sweep.chart.normtype"),
    ):  # translated labels: the value set here, not by default= (as the norm positions')
        st.session_state.setdefault(key, list(spec.values(name)))
        label = t(f"sweep.ui.{name}", lang)
        picked = column.multiselect(label, choices, format_func=_label(prefix, lang), key=language.translated(key))
        chosen[name] = tuple(v for v in choices if v in picked)
    wd = _axis_select(v3, t("sweep.ui.weight_decay", lang), WEIGHT_DECAY_CHOICES, spec.values("weight_decay"), "sm_wd")
    return chosen | {"weight_decay": tuple(sorted(wd))}


def _label(prefix: str, lang: str) -> Any:
    return lambda v: t(f"{prefix}.{v}", lang)


def _axis_select(column: Any, label: str, choices: tuple, values: tuple, key: str, **kwargs: Any) -> list:
    """One axis's values, offered from `choices` and the spec's own (a bookmark may hold others)."""
    return column.multiselect(label, sorted(set(choices) | set(values)), default=list(values), key=key, **kwargs)


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
