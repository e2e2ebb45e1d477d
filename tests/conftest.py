"""Shared test set-up: torch on few threads, so tests behave the same on 2 cores; the lanes.

A bare `pytest` is the fast lane: `addopts` in pyproject.toml deselects `e2e` (needs Chromium) and `slow`
(real training or real workers for seconds); `bash scripts/test.sh` passes `-m ""` and runs everything."""

import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest
import torch

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parents[1]

# Modules whose every test needs Debian's Chromium without being browser tests: kaleido draws the PNG and
# SVG exports with it. They join the `e2e` lane, so the fast lane runs on a machine without Chromium.
NEEDS_CHROMIUM = {"test_export.py"}

E2E_DIR = ROOT / "tests" / "e2e"


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects: the marks must be on the items by then
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark `e2e` every test under tests/e2e (a `pytestmark` in a conftest marks nothing, so a browser
    module without its own would run in the fast lane) and the tests of NEEDS_CHROMIUM."""
    for item in items:
        if item.path.name in NEEDS_CHROMIUM or item.path.is_relative_to(E2E_DIR):
            item.add_marker(pytest.mark.e2e)
    if os.environ.get("PYTEST_XDIST_WORKER"):  # the order xdist hands out the files in (below)
        first = {name: i for i, name in enumerate(LONGEST_FIRST)}
        items.sort(key=lambda item: first.get(item.path.name, len(first)))  # stable: each file's own order kept


# CI's lane 1 (`-n 2 --dist loadfile`) gives each file to one worker, in collection order (pyproject.toml turns
# off xdist's own reordering, which handed out the files with the most tests first and so the long ones with few
# tests last: the one-test head-loss file ended the lane while the other core sat idle). The files whose tests
# take longest, longest first, go out before the rest (the largest-first rule: the short files fill in behind);
# by their tests' --durations on CI's last clean-clone run (each 50-130 s; most other files take a few seconds).
LONGEST_FIRST = (
    "test_sweep_ray.py",
    "test_scenarios.py",
    "test_compare_cli.py",
    "test_scenarios_deep.py",
    "test_sweep_ray_head_loss.py",
    "test_sweep.py",
    "test_store_faults.py",
    "test_muon.py",
    "test_app.py",
    "test_sweep_page.py",
    "test_import_gate.py",
    "test_init_lab.py",
    "test_pages.py",
    "test_paper_claims.py",
)


_SCANNER = "streamlit.components.v2.manifest_scanner"


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Each AppTest scans every installed package's metadata for Streamlit components (its first run: 0.3-0.6 s
    here, ~120 packages, none a component), a third of an AppTest test's time. The packages do not change
    while the tests run: once Streamlit's scanner is imported, its answer is kept for the session (the real
    scan's, a copy each time)."""
    scanner = sys.modules.get(_SCANNER)
    if scanner is None or getattr(scanner.scan_component_manifests, "kept", False):
        return
    scan, kept = scanner.scan_component_manifests, []

    def scan_once(max_workers: int | None = None) -> list:
        if not kept:
            kept.append(scan(max_workers))
        return list(kept[0])

    scan_once.kept = True  # type: ignore[attr-defined]
    scanner.scan_component_manifests = scan_once


@pytest.fixture(autouse=True)
def no_warm_worker_outside_the_slow_lanes(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The app's Runner keeps one worker warm (a process importing torch: seconds of CPU) from the first
    visit on. A fast test never trains through the app, so its Runner keeps none; `slow` and `e2e` tests
    keep the server's default, the path a visitor takes."""
    if request.node.get_closest_marker("slow") is None and request.node.get_closest_marker("e2e") is None:
        monkeypatch.setenv("LN_VIZ_WARM_WORKERS", "0")


@pytest.fixture(scope="module")
def tiny_run():
    """A real run of tests.runs.TINY (Pre-LN, 30 steps, 7 probe steps), trained once per session; each
    module gets its own copy."""
    from tests.runs import train_tiny

    return train_tiny()


@pytest.fixture(scope="module")
def tiny_snapshots():
    """The same run as `tiny_run` as (RunInfo, list of Snapshot), each module its own copy."""
    from tests.runs import tiny_snapshots

    return tiny_snapshots()


@pytest.fixture(scope="module")
def post_run():
    """The shipped Post-LN run with warm-up: depth 6, 300 steps, 31 probe steps, held-out loss every 50."""
    from tests.runs import demo

    return demo("post-ln-warmup")


@pytest.fixture(scope="module")
def pre_run():
    """The shipped Pre-LN run without warm-up, with the same probe steps as `post_run`."""
    from tests.runs import demo

    return demo("pre-ln-no-warmup")


@pytest.fixture
def replay_runner(monkeypatch: pytest.MonkeyPatch):
    """The app's Runner replaced by a tests.replay.ReplayRunner (recorded demo runs, no worker), with the
    store hooks the app gives its own. Set `hold_at` on it before a Start to keep the run in progress."""
    from ln_viz.ui import training
    from tests.replay import ReplayRunner

    runner = ReplayRunner()

    def get_runner() -> ReplayRunner:
        if not runner.connected:  # in the page's script run: the app's store, as the real one gets it
            from ln_viz.ui.storage import store_hooks

            runner.connect(**store_hooks())
        return runner

    monkeypatch.setattr(training, "get_runner", get_runner)
    yield runner
    runner.shutdown()
    assert not runner.errors, runner.errors


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


@pytest.fixture(scope="session")
def ray_head():
    """One Ray head node on 127.0.0.1 (tests/ray_cluster.py: `ray start --head --block` in its own process group,
    2 CPUs) for every Ray test of this test process that leaves the head alive (its runs and sweeps, a killed
    worker); started on first use and ended after the last test, by its group and the ids of what it started.
    A head start and stop took 8-15 s per module on CI. A test that kills its head or needs another kind of head
    (token authentication) starts its own."""
    pytest.importorskip("ray")
    from ln_viz.sweep.ray_exec import disconnect
    from tests.ray_cluster import HeadNode

    head = HeadNode(cpus=2).start()
    try:
        yield head
    finally:
        disconnect()
        head.stop()
        assert not head.left, f"Ray processes left: {head.left}"


@pytest.fixture(scope="session")
def run_once(tmp_path_factory: pytest.TempPathFactory):
    """run_once(cfg): `ln_viz.train.run(cfg)`, trained once per session on both of CI's cores: under xdist the
    first worker to ask trains it (the others wait on its lock) and leaves it pickled in the session's shared
    temp folder, keyed by the whole config; each caller gets its own copy. tests/test_muon.py trains the Adam
    baseline at lr 3e-2 on seeds 0-2 that tests/test_scenarios.py trains too (3 runs of 300 steps, ~27 s on CI).
    The runs are the same bit for bit wherever they are trained: one torch thread in every worker."""
    import fcntl
    import hashlib
    import pickle

    from ln_viz.train import run

    # xdist's workers each have a basetemp <session folder>/popen-gwN: the session folder is theirs alone
    shared = tmp_path_factory.getbasetemp().parent if os.environ.get("PYTEST_XDIST_WORKER") else None
    kept: dict[str, bytes] = {}

    def train(cfg):
        key = hashlib.sha256(repr(cfg).encode()).hexdigest()[:24]
        if key not in kept:
            if shared is None:
                kept[key] = pickle.dumps(run(cfg))
            else:
                path = shared / f"run-{key}.pickle"
                with open(shared / f"run-{key}.lock", "w") as lock:
                    fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or its process ends
                    if not path.exists():
                        part = path.with_suffix(".part")
                        part.write_bytes(pickle.dumps(run(cfg)))
                        part.replace(path)
                kept[key] = path.read_bytes()
        return pickle.loads(kept[key])

    return train


@pytest.fixture(scope="module")
def trained(run_once):
    """train(preset, **changes): the shipped preset's run with those changes, trained once per session (`run_once`;
    the scenario tests share their baselines: tests/test_scenarios.py, tests/test_scenarios_deep.py), the same
    object for every test of a module."""
    from ln_viz.config import PRESETS

    cache: dict[tuple, object] = {}

    def train(name: str, **changes):
        key = (name, tuple(sorted(changes.items())))
        if key not in cache:
            cache[key] = run_once(PRESETS[name].config.replace(**changes).validate())
        return cache[key]

    return train
