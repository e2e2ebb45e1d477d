"""Shared test set-up: torch on few threads, so tests behave the same on 2 cores."""

import os
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest
import torch

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def start_app(tmp_path, monkeypatch):
    """`start_app(timeout)` runs app.py once in AppTest on this test's own store and returns it; after
    the test every cached resource is released (this session's runs stopped, the runner shut down)."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("LN_VIZ_STORE", str(tmp_path / "runs.sqlite"))

    def start(timeout: float) -> AppTest:
        app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
        app.run()
        return app

    yield start
    st.cache_resource.clear()
