"""Shared test set-up: torch on few threads, so tests behave the same on 2 cores; the lanes.

A bare `pytest` is the fast lane: `addopts` in pyproject.toml deselects `e2e` (needs Chromium) and `slow`
(real training or real workers for seconds); `bash scripts/test.sh` passes `-m ""` and runs everything."""

import os
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest
import torch

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parents[1]

# Modules whose every test needs Debian's Chromium without being browser tests: kaleido draws the PNG and
# SVG exports with it. They join the `e2e` lane, so the fast lane runs on a machine without Chromium.
NEEDS_CHROMIUM = {"test_export.py"}

# Tests of modules whose owners keep them free of lane marks, each spawning workers or training for 5-30 s
# on the 2-core machine (pytest --durations): `slow`, by module and name.
SLOW = {
    "test_runner.py": {
        "test_stream_from_a_warm_worker_matches_a_direct_trainer_run",
        "test_the_live_copy_keeps_a_bounded_number_of_probe_steps_and_the_hooks_get_all",
        "test_a_worker_yields_the_cpu_to_the_server",
        "test_stop_ends_the_run_within_a_second_and_keeps_the_steps",
        "test_queue_with_cap_one",
        "test_sigkilled_worker_is_marked_failed_and_the_runner_carries_on",
        "test_worker_exception_is_reported_as_failed",
        "test_shutdown_stops_everything_and_leaves_no_process",
    },
    "test_initlab.py": {
        "test_pool_workers_run_below_the_server",
        "test_the_shipped_default_is_what_measuring_it_gives_now",
    },
    "test_store.py": {"test_sigkill_of_a_training_process_leaves_a_good_store"},
}


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects: the marks must be on the items by then
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests of NEEDS_CHROMIUM `e2e` and those named in SLOW `slow`."""
    for item in items:
        if item.path.name in NEEDS_CHROMIUM:
            item.add_marker(pytest.mark.e2e)
        if item.originalname in SLOW.get(item.path.name, ()):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def no_warm_worker_outside_the_slow_lanes(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The app's Runner keeps one worker warm (a process importing torch: seconds of CPU) from the first
    visit on. A fast test never trains through the app, so its Runner keeps none; `slow` and `e2e` tests
    keep the server's default, the path a visitor takes."""
    if request.node.get_closest_marker("slow") is None and request.node.get_closest_marker("e2e") is None:
        monkeypatch.setenv("LN_VIZ_WARM_WORKERS", "0")


@pytest.fixture
def start_app(tmp_path, monkeypatch):
    """`start_app(timeout)` runs app.py once in AppTest on this test's own store and returns it;
    `start_app(timeout, "pages/runs.py")` opens that page first, through the router, as a link to it
    would (the live page, and the Runner it creates, never run). After the test every cached resource
    is released (this session's runs stopped, the runner shut down)."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("LN_VIZ_STORE", str(tmp_path / "runs.sqlite"))

    def start(timeout: float, page: str | None = None) -> AppTest:
        app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
        if page is not None:
            app.switch_page(page)
        app.run()
        return app

    yield start
    st.cache_resource.clear()
