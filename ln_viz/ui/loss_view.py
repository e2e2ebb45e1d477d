"""How the loss charts are drawn: smoothing (TensorBoard's debiased EMA weight, 0 = raw) and a log loss
axis. One pair for the session's every loss chart (Live, Compare, a stored run on the Runs page, the
lecture view), set in a popover beside Start and Stop (on Runs, above the stored run's charts; there it
adds no height, so the charts under the loss stay where they were) or by a link (`smooth`, `logy`); the
lecture view has no room for it and draws what it was last set to."""

from __future__ import annotations

from typing import Any, NamedTuple

import streamlit as st

from ln_viz.i18n import t
from ln_viz.ui import keys
from ln_viz.ui.links import note_link
from ln_viz.urlstate import SMOOTH_MAX, log_y_from_query, loss_view_to_query, smoothing_from_query

SMOOTH_KEY, LOG_KEY = keys.LOSS_SMOOTH, keys.LOSS_LOG_Y
KEYS = (SMOOTH_KEY, LOG_KEY)
_STATE = keys.LOSS_VIEW  # the session's LossView (a plain entry: no page's widget owns it)


class LossView(NamedTuple):
    """The loss charts' settings (hashable: a finished run's cached figures are keyed by it)."""

    smoothing: float = 0.0  # 0 (raw) to SMOOTH_MAX; 0 keeps the figures as they were before smoothing
    log_y: bool = False

    def kwargs(self) -> dict[str, Any]:
        """As `charts.loss_chart` takes them."""
        return {"smoothing": self.smoothing, "log_y": self.log_y}


RAW = LossView()  # the default: the raw loss on a linear axis


def read_link() -> None:
    """Once per session, before the page draws (the router calls it): the link's `smooth` and `logy`,
    a bad value ignored with a notice."""
    if _STATE not in st.session_state:
        smoothing, notice = smoothing_from_query(st.query_params.get_all("smooth") or None)
        note_link(notice)
        log_y, notice = log_y_from_query(st.query_params.get_all("logy") or None)
        note_link(notice)
        st.session_state[_STATE] = LossView(smoothing, log_y)


def current() -> LossView:
    """The settings now, written into the URL (each only when it is not the default)."""
    read_link()  # done already, unless the page ran without the router (AppTest's switch_page on a new session)
    view = st.session_state[_STATE]
    query = loss_view_to_query(view.smoothing, view.log_y)
    for key in ("smooth", "logy"):
        if key in query and st.query_params.get(key) != query[key]:
            st.query_params[key] = query[key]
        elif key not in query and key in st.query_params:
            del st.query_params[key]
    return view


def _changed() -> None:
    st.session_state[_STATE] = LossView(float(st.session_state[SMOOTH_KEY]), bool(st.session_state[LOG_KEY]))


def _label(view: LossView, lang: str) -> str:
    """The popover's button: what the loss charts are set to ("Smoothing 0.90 · log axis")."""
    words = [
        t("ui.loss_smoothing_at", lang, weight=f"{view.smoothing:.2f}") if view.smoothing else t("ui.loss_raw", lang)
    ]
    return " · ".join([*words, t("ui.loss_log_short", lang)] if view.log_y else words)


def controls(lang: str, container: Any = None) -> LossView:
    """A button that says the settings and opens the smoothing slider and the log-axis toggle, in
    `container` (a row beside Start and Stop, where it takes no height of its own); returns the settings."""
    view = current()
    # The session's values, not the widgets': the same two keys on another page are other widgets, which
    # Streamlit would start at their defaults.
    st.session_state[SMOOTH_KEY], st.session_state[LOG_KEY] = view.smoothing, view.log_y
    box = (container or st).popover(_label(view, lang), icon=":material/tune:", key="loss_view")
    shared = {"on_change": _changed}
    box.slider(
        t("ui.loss_smoothing", lang),
        0.0,
        SMOOTH_MAX,
        step=0.01,
        format="%.2f",
        key=SMOOTH_KEY,
        help=t("ui.loss_smoothing_help", lang),
        width=260,
        **shared,
    )
    box.toggle(t("ui.loss_log_y", lang), key=LOG_KEY, help=t("ui.loss_log_y_help", lang), **shared)
    return view
