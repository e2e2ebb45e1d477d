"""The Init lab's worker pool and its measurements, cached per scenario for the server."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import streamlit as st

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from ln_viz.config import RunConfig


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
    """Start the server's Init lab workers and pay their one-time costs (ln_viz.init_lab.warm_pool)."""
    from ln_viz.init_lab import warm_pool

    warm_pool(init_lab_pool())


# --- the real architectures (ln_viz.hf_init_lab) -----------------------------------------------------------
@st.cache_resource(show_spinner=False)
def _bundled_hf():
    from ln_viz.hf_init_lab import bundled_default

    return bundled_default()


@st.cache_resource(show_spinner=False)
def _hf_measured() -> tuple[dict, threading.Lock]:
    """The server's measurements of real architectures made so far, (arch, init) -> Measured, and their lock
    (a second visitor waits for the first one's measurement instead of measuring again)."""
    return {}, threading.Lock()


def hf_results(archs: tuple[str, ...]) -> tuple[dict | None, str | None]:
    """({(arch, init): Measured} of `archs` at every init, the transformers version of a shipped measurement
    (None: measured here)); (None, None) when they are neither shipped nor measurable (no transformers)."""
    from ln_viz.hf_init_lab import INITS, hf_lab, transformers_missing

    bundle = _bundled_hf()
    wanted = [(a, i) for a in archs for i in INITS]
    if bundle is not None and all(k in bundle[0].measured for k in wanted):
        return {k: bundle[0].measured[k] for k in wanted}, bundle[1]
    if transformers_missing():
        return None, None
    done, lock = _hf_measured()
    with lock:
        todo = tuple(dict.fromkeys(a for a, i in wanted if (a, i) not in done))
        if todo:
            done.update(hf_lab(archs=todo, executor=init_lab_pool()).measured)
    return {k: done[k] for k in wanted}, None
