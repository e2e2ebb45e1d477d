"""Shared test set-up: torch on few threads, so tests behave the same on 2 cores."""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch

torch.set_num_threads(1)

