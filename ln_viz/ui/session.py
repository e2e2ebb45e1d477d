"""What a page needs from the server and the session: the one Runner, this tab's runs, the language,
presenter mode, and the configuration in the URL."""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import streamlit as st
from streamlit.errors import StreamlitAPIException

from ln_viz.i18n import LANGS, t
from ln_viz.urlstate import Notice, lang_from_query, present_from_query, unknown_params

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from ln_viz.config import RunConfig
    from ln_viz.runner import Runner

log = logging.getLogger(__name__)

LANG_NAMES = {"ko": "한국어", "en": "English"}
MAX_CONCURRENT_ENV = "LN_VIZ_MAX_CONCURRENT"
MAX_SECONDS_ENV = "LN_VIZ_MAX_SECONDS"
WARM_WORKERS_ENV = "LN_VIZ_WARM_WORKERS"


def _shutdown(runner: Runner) -> None:
    runner.shutdown()


@st.cache_resource(show_spinner=False, on_release=_shutdown)
def get_runner() -> Runner:
    """The server's one Runner: at most LN_VIZ_MAX_CONCURRENT runs train at once (default: the number
    of cores), each capped at LN_VIZ_MAX_SECONDS seconds (default 600); LN_VIZ_WARM_WORKERS workers are
    kept warm (default 1; the fast tests use 0, as a page that never trains needs none)."""
    from ln_viz.runner import Runner
    from ln_viz.ui.storage import store_hooks

    cap = int(os.environ.get(MAX_CONCURRENT_ENV, "0")) or None
    max_seconds = float(os.environ.get(MAX_SECONDS_ENV, "600"))
    warm = int(os.environ.get(WARM_WORKERS_ENV, "1"))
    return Runner(max_concurrent=cap, warm_workers=warm, max_seconds=max_seconds, **store_hooks())


def _shutdown_pool(pool: Executor) -> None:
    pool.shutdown(cancel_futures=True)


@st.cache_resource(show_spinner=False, on_release=_shutdown_pool)
def init_lab_pool() -> Executor:
    """The Init lab's two worker processes (torch stays out of the server)."""
    from ln_viz.init_lab import make_executor

    return make_executor(2)


@st.cache_data(show_spinner=False, max_entries=32)
def init_lab_measure(cfg: RunConfig, positions: tuple[str, ...], seeds: int, depths: tuple[int, ...], param: str):
    """The Init lab's measurements (ln_viz.init_lab.init_lab) in the pool, cached per scenario; a second
    caller of a scenario being measured waits for the first one's result."""
    from ln_viz.init_lab import init_lab

    return init_lab(cfg, positions, seeds, depths, param, executor=init_lab_pool())


@st.cache_resource(show_spinner=False)
def _bundled_init_lab():
    from ln_viz.init_lab import bundled_default

    return bundled_default()


def init_lab_results(cfg: RunConfig, positions: tuple[str, ...], seeds: int, depths: tuple[int, ...], param: str):
    """(InitLab, shipped): the page's default scenario comes from the measurement shipped with the app
    (ln_viz.init_lab.BUNDLED_DEFAULT, checked against a fresh one by the tests), anything else is
    measured now (`init_lab_measure`)."""
    from ln_viz.init_lab import is_default

    if is_default(cfg, positions, seeds, depths, param):
        lab = _bundled_init_lab()
        if lab is not None:
            return lab, True
    return init_lab_measure(cfg, positions, seeds, depths, param), False


def warm_init_lab_pool() -> None:
    """Start the Init lab's two workers and pay their one-time costs, so a first non-default scenario
    takes ~3 s instead of ~5."""
    from ln_viz.init_lab import warm_up

    pool = init_lab_pool()
    for future in [pool.submit(warm_up) for _ in range(2)]:
        future.result(timeout=120)


_prewarm_lock = threading.Lock()
_prewarmed = False


def prewarm() -> None:
    """Start the server's worker processes in the background, once per server: the Runner's warm
    worker first (a visitor's first Start waits for it), then, once it is ready, the Init lab's pool.
    Called by app.py's lifespan when the server starts; prints one line when all are ready."""
    global _prewarmed
    with _prewarm_lock:
        if _prewarmed:
            return
        _prewarmed = True
    threading.Thread(target=_prewarm, name="ln-viz-prewarm", daemon=True).start()
    threading.Thread(target=_collect_garbage, name="ln-viz-gc", daemon=True).start()


GC_EVERY_S = 10.0


def _collect_garbage() -> None:
    """A full garbage collection every GC_EVERY_S seconds. Streamlit's own, after every script and
    fragment run, is off (`runner.postScriptGC` in .streamlit/config.toml: with ten tabs it was 39 %
    of the server's time); figures hold reference cycles, so without any full collection memory could
    creep up between Python's rare automatic ones. One costs tens of milliseconds."""
    import gc

    while True:
        time.sleep(GC_EVERY_S)
        gc.collect()


def open_browser() -> None:
    """Open the app in the user's browser unless the server is headless, as `streamlit run` does for
    a plain script (its launcher for an st.App does not). Never fails the server's start."""
    try:
        from streamlit import cli_util, config
        from streamlit.web.server import server_util

        if config.get_option("server.headless"):
            return
        address = config.get_option("server.address") if config.is_manually_set("server.address") else None
        cli_util.open_browser(server_util.get_url(server_util.get_display_address(address) if address else "localhost"))
    except Exception:  # noqa: BLE001 -- a convenience: the URL is printed anyway
        log.exception("ln-viz: could not open a browser")


def shutdown_workers() -> None:
    """Stop every run and end every worker process of the server (when the server stops)."""
    get_runner.clear()  # on_release: Runner.shutdown
    init_lab_pool.clear()  # on_release: the pool's shutdown


def _prewarm() -> None:
    t0 = time.monotonic()
    try:
        runner = get_runner()  # spawns the warm training worker: the default page's Start waits for it
        runner.wait_warm(120)
        runner_s = time.monotonic() - t0
        # Then the Init lab's pool (its default scenario ships measured). Not while a run trains (up to
        # a minute), so a first Start keeps both cores.
        deadline = time.monotonic() + 60
        while runner.busy() and time.monotonic() < deadline:
            time.sleep(0.5)
        warm_init_lab_pool()
        print(
            f"ln-viz: workers ready: training {runner_s:.1f} s, Init lab {time.monotonic() - t0:.1f} s after start",
            flush=True,
        )
    except Exception:  # noqa: BLE001 -- a speed-up only: pages start what they need themselves
        log.exception("ln-viz: could not warm the workers")


@dataclass
class SessionRuns:
    """The runs this browser tab started, by role ("live", "compare.a", ...). Released (its runs
    stopped) when the tab closes."""

    runner: Runner
    runs: dict[str, str] = field(default_factory=dict)  # role -> run_id

    def start(self, role: str, cfg: RunConfig) -> str:
        """Start a run in `role`, stopping (and later forgetting) the run it replaces."""
        old = self.runs.get(role)
        self.runs[role] = run_id = self.runner.start(cfg).run_id
        if old:
            self._retire(old)
        return run_id

    def stop(self, role: str) -> None:
        if self.runs.get(role):
            self.runner.stop(self.runs[role])

    def stop_all(self) -> None:
        for run_id in self.runs.values():
            self._retire(run_id)

    def _retire(self, run_id: str) -> None:
        """Stop a run and drop its data from the server's memory once it has ended (the store keeps
        it), so a long class does not pile up every run ever started."""
        self.runner.stop(run_id)
        handle = self.runner.get(run_id)
        if handle is not None:
            threading.Thread(target=_forget_when_done, args=(self.runner, handle), daemon=True).start()


def _forget_when_done(runner: Runner, handle) -> None:
    if handle.wait(30):
        runner.forget(handle.run_id)


def _release(session: SessionRuns) -> None:
    session.stop_all()


@st.cache_resource(scope="session", on_release=_release, show_spinner=False)
def session_runs() -> SessionRuns:
    return SessionRuns(get_runner())


def current_lang() -> str:
    """The language picked in the sidebar, else the URL's `lang`, else English (a `lang` that is not one
    of the languages leaves a notice for `link_notices`). Called first thing on every page."""
    lang = st.session_state.get("lang")
    if lang not in LANGS:
        lang, notice = lang_from_query(st.query_params.get_all("lang") or None)
        _note_link(notice)
        st.session_state["lang"] = lang
    _keep_translated_values(lang)
    return lang


# Widgets whose options are shown in the page's language (`translated(key)`). Streamlit keeps a keyed
# widget's identity when its labels change and reads what the browser sends back by label: after a
# language switch the browser sent the label it last showed, in the old language, which matched no option,
# so the box fell back to its first one (the chosen preset became "Pre-LN, no warm-up", the lecture view's
# takeaway went blank, the corpus became the string "영어 텍스트").
_TRANSLATED = "_translated_widgets"


def translated(key: str) -> str:
    """`key`, noted as the key of a widget whose option labels are translated: on the first run in another
    language its value is set again before it is drawn, so the browser is sent the new labels."""
    st.session_state.setdefault(_TRANSLATED, set()).add(key)
    return key


def _keep_translated_values(lang: str) -> None:
    if st.session_state.get("_widgets_lang", lang) != lang:
        for key in st.session_state.get(_TRANSLATED, ()):
            try:
                st.session_state[key] = st.session_state[key]  # read through the labels of the run that drew it
            except (KeyError, StreamlitAPIException):  # not drawn yet, or already drawn in this run
                continue
    st.session_state["_widgets_lang"] = lang


def _note_link(notice: Notice | None) -> None:
    """Keep a link's notice for the session, once per parameter (the parsers run on every rerun)."""
    if notice is not None:
        st.session_state.setdefault("_link_notices", {})[notice.param] = notice


def link_notices(lang: str) -> list[str]:
    """The sentences for the parts of this session's first link that no page used: a parameter no page
    reads, a `lang` or `present` that is not one of the choices. The form's parameters have their own
    notices (config_form.apply_query)."""
    if "_link_unknown" not in st.session_state:  # the link the session opened with, read once
        st.session_state["_link_unknown"] = unknown_params(
            {k: st.query_params.get_all(k) for k in st.query_params}
        )
    notes = [*st.session_state.get("_link_notices", {}).values(), *st.session_state["_link_unknown"]]
    return [n.message(lang) for n in notes]


def _pick_lang() -> None:
    st.session_state["lang"] = st.session_state["lang_choice"]


def lang_switch() -> str:
    """The language radio at the top of the sidebar; the choice goes into the URL too. The choice is
    kept under `lang`, a plain session key: a widget's own key is dropped when a page switch does not
    draw it in time, and the language must survive every page switch."""
    lang = current_lang()
    st.session_state["lang_choice"] = lang
    st.sidebar.radio(
        t("ui.lang_label", lang),
        list(LANG_NAMES),
        key="lang_choice",
        format_func=LANG_NAMES.__getitem__,
        horizontal=True,
        on_change=_pick_lang,
    )
    st.query_params["lang"] = lang
    return lang


def presenter_mode_on() -> bool:
    """`?present=1` in the URL (kept for the session, since page switches drop query parameters)."""
    if "present" in st.query_params:
        on, notice = present_from_query(st.query_params.get_all("present"))
        st.session_state["_present"] = bool(on)
        _note_link(notice)
    return bool(st.session_state.get("_present"))


def set_present(on: bool) -> None:
    """Switch the lecture view on or off for this session, and in the URL (a bookmark keeps it)."""
    st.session_state["_present"] = on
    if on:
        st.query_params["present"] = "1"
    elif "present" in st.query_params:
        del st.query_params["present"]


def _toggle_present() -> None:
    set_present(bool(st.session_state["present_toggle"]))


def presenter_mode() -> bool:
    """The frame's style on every page (whole Korean words, no modebar on touch screens) and, with
    `?present=1`, larger text for a projector; Live and Compare then draw their lecture view
    (ln_viz.ui.stage). The sidebar's toggle switches that view on (the view has its own way out)."""
    from ln_viz.ui import layout

    present = presenter_mode_on()
    layout.css(layout.FRAME_CSS + layout.BOX_CSS + (layout.PRESENTER_CSS if present else ""))
    st.session_state["present_toggle"] = present
    st.sidebar.toggle(t("stage.toggle", current_lang()), key="present_toggle", on_change=_toggle_present,
                      help=t("stage.toggle_help", current_lang()))  # fmt: skip
    return present


def route_first_visits_through_app() -> None:
    """Make the first visit of a fresh server through a page's own address (a bookmark of /compare)
    run app.py, the router, like every later visit, so the page gets its language switch, translated
    menu and presenter mode. Streamlit 1.67 has no supported way to say so while a pages/ folder
    sits next to the main script: until some session has run st.navigation, it treats that folder
    the old way (multipage v1: `PagesManager.uses_pages_directory`, decided when the first session
    starts, streamlit/runtime/pages_manager.py) and runs the page alone. st.navigation turns that
    mode off for the server; this does the same before any session exists. Called once, by app.py's
    lifespan; tests/test_router.py fails when Streamlit's behaviour changes."""
    from streamlit.runtime.pages_manager import PagesManager

    PagesManager.uses_pages_directory = False
