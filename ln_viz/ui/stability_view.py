"""The stability map page's server side as Streamlit holds it: the server's one sweep slot
(ln_viz.server.sweeps.SweepService), the shipped default map, the spec in the URL, and the map's chart
boxes (the settings form: ln_viz.ui.stability_form)."""

from __future__ import annotations

import uuid
from typing import Any

import streamlit as st

from ln_viz.i18n import LocalizedError
from ln_viz.server.sweeps import SweepService, read_shipped_default, stored_results
from ln_viz.sweep.presets import DEFAULT_SWEEP, SHIPPED_MAPS, SWEEP_PRESETS
from ln_viz.sweep.results import CellResult
from ln_viz.sweep.spec import QUERY_VARIANTS, SweepConfig, spec_from_query, spec_to_query
from ln_viz.ui import keys, layout


def example_cell(results: list[CellResult]) -> str | None:
    """The cell the lecture view shows before any click (its fingerprint): the first that did not learn, at the
    least warm-up and the largest lr, the takeaway's case (UX round 4 L6: the left column's lower third was
    empty until a click); else the highest final loss. None without a cell that has a curve."""
    drawn = [r for r in results if len(r.curve) > 1]
    if not drawn:
        return None
    worst = min(drawn, key=lambda r: (r.status == "learned", r.warmup_steps, -r.lr, -(r.final_loss or 0.0)))
    return worst.fingerprint


def session_key() -> str:
    """This browser session's own key (a sweep's owner)."""
    return st.session_state.setdefault(keys.SM_SESSION, uuid.uuid4().hex)


def _shutdown(service: SweepService) -> None:
    service.shutdown()


@st.cache_resource(show_spinner=False, on_release=_shutdown)
def service() -> SweepService:
    """The server's one sweep slot."""
    return SweepService()


@st.cache_data(show_spinner=False)
def shipped_maps() -> list[dict[str, Any]]:
    """The maps measured in advance (ln_viz.sweep.presets.SHIPPED_MAPS: the warm-up map, the GI-Adam map), read
    once."""
    return [m for m in map(read_shipped_default, SHIPPED_MAPS.values()) if m is not None]


def shipped_for(spec: SweepConfig) -> dict[str, Any] | None:
    """The map measured in advance whose spec is `spec`, or None."""
    return next((m for m in shipped_maps() if SweepConfig.from_dict(m["spec"]) == spec), None)


def map_results(spec: SweepConfig) -> tuple[list[CellResult], Any, bool, LocalizedError | None]:
    """(results, progress of the sweep training this spec or None, shipped, problem): a sweep of this
    spec training now (or ended: its cells are in memory); else the store's cells; else, for a map
    measured in advance (SHIPPED_MAPS), that measurement. `problem`: why cells are not in the store, one
    sentence, or None."""
    svc = service()
    sweep = svc.sweep
    if sweep is not None and sweep.spec == spec and (svc.busy() or sweep.progress().state != "pending"):
        progress = sweep.progress()
        return list(progress.results), (progress if svc.busy() else None), False, progress.store_problem
    stored, problem = stored_results(spec)
    shipped = shipped_for(spec)
    if len(stored) < spec.n_runs and shipped is not None:
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
            st.session_state[keys.SM_CELL] = cells[-1]

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
