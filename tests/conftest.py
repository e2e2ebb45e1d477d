"""Shared test set-up: torch on few threads, so tests behave the same on 2 cores."""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest
import torch

torch.set_num_threads(1)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "e2e: drives the real app in headless Chromium")
    config.addinivalue_line("markers", "slow: trains real models for tens of seconds")
