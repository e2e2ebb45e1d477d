"""The Init lab: its shipped default measurement is what the code measures now; its process pool's
workers yield the CPU to the server, as training workers do."""

import json
import os

import pandas as pd
import pytest

from ln_viz.init_lab import BUNDLED_DEFAULT, DEFAULT_SCENARIO, bundled_default, make_executor, measure_default
from ln_viz.runner import WORKER_NICE


@pytest.mark.slow
def test_pool_workers_run_below_the_server():
    pool = make_executor(1)
    try:
        child = pool.submit(os.getpriority, os.PRIO_PROCESS, 0).result(timeout=90)
    finally:
        pool.shutdown()
    assert child == min(19, os.getpriority(os.PRIO_PROCESS, 0) + WORKER_NICE)


@pytest.mark.slow
def test_the_shipped_default_is_what_measuring_it_gives_now():
    """The page shows ln_viz/data/init_lab_default.json for its default scenario: it must be the same
    numbers this code measures (run scripts/make_init_lab_default.py when this fails)."""
    shipped = bundled_default()
    assert shipped is not None, "the shipped Init lab default is missing or for another scenario"
    pool = make_executor(2)
    try:
        fresh = measure_default(pool)
    finally:
        pool.shutdown()
    for pos in DEFAULT_SCENARIO["positions"]:
        for got, want in ((shipped.grads[pos], fresh.grads[pos]), (shipped.resid[pos], fresh.resid[pos])):
            pd.testing.assert_frame_equal(got, want, check_exact=False, rtol=1e-4)
    pd.testing.assert_frame_equal(shipped.vs_depth, fresh.vs_depth, check_exact=False, rtol=1e-4)


def test_a_shipped_default_for_another_scenario_is_not_used(tmp_path):
    doc = json.loads(BUNDLED_DEFAULT.read_text())
    doc["scenario"]["seeds"] = 5
    other = tmp_path / "other.json"
    other.write_text(json.dumps(doc))
    assert bundled_default(other) is None
    (tmp_path / "broken.json").write_text("{")
    assert bundled_default(tmp_path / "broken.json") is None
    assert bundled_default(tmp_path / "missing.json") is None
