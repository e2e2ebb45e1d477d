#!/usr/bin/env bash
# Install everything the tests need on a fresh machine, then run every test (lint, unit, app, browser,
# slow training). A bare `pytest` is the fast lane (no Chromium, no slow training, see pyproject.toml);
# `-m ""` here lifts that filter. Extra arguments make it one pytest run of your selection, e.g.
# `bash scripts/test.sh -m "not e2e"` or `bash scripts/test.sh tests/e2e/test_layout_e2e.py`.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian's Chromium drives the browser tests and the PNG/SVG export (never `playwright install`);
# fonts-nanum draws Korean in screenshots and exported charts.
if ! command -v chromium >/dev/null 2>&1 || ! fc-list 2>/dev/null | grep -qi nanum; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium fonts-nanum >/dev/null
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
# --no-compile: pip byte-compiles every installed module (~19,000 files: torch, transformers, ray...), most of
# which no test imports; Python compiles the ones imported on first use (transformers and ray: 18.7 CPU-s of
# install, 6.5 with --no-compile)
.venv/bin/pip install -q --disable-pip-version-check --no-compile -r requirements-test.txt -r requirements-ray.txt -r requirements-docs.txt -r requirements-hf.txt
# the checkout itself, editable and without touching the pins above: the `ln-viz` command, and ln_viz importable
# by the scripts and benchmarks from any folder (pyproject.toml; setuptools comes from requirements-test.txt)
.venv/bin/pip install -q --disable-pip-version-check --no-compile --no-deps --no-build-isolation -e .

.venv/bin/ruff check .
if [ "$#" -gt 0 ]; then  # a selection of your own: one run, in file order
  exec .venv/bin/python -m pytest -m "" --durations=25 "$@"
fi
# Every test in two lanes, each with its 25 slowest printed (the suite must stay under 20 min on 2 cores):
# everything but the browser tests on both cores (pytest-xdist, one process per core, each test file kept
# in one process so module fixtures and counters work as in a serial run; the tests share no files, ports
# or processes), then the browser tests one at a time (they time clicks and count worker processes, so
# they get the machine to themselves). Moving browser tests into the first lane was measured twice and
# made the suite slower: with the static ones lane 1 took 365 s (272 without), with the layout test 569 s
# (264 without) while taking only its ~290 s out of lane 2. Running the browser lane itself on two workers
# (-n 2 --dist loadfile, the Stop-timing Ray file alone after) was no faster on CI's clean clone: 964 + 74 s
# against 1,020 s serially, with 2 of 94 tests failing on timing (Play that did not move in 2.5 s, two heatmaps
# read between their runs' refreshes): the lane is CPU-bound (each live page's Chromium redraws every second).
# Both lanes run; the script fails if either failed.
trap 'exit 130' INT  # Ctrl-C ends the script, not only the lane that was running
status=0
.venv/bin/python -m pytest -m "not e2e" -n 2 --dist loadfile --durations=25 || status=$?
.venv/bin/python -m pytest -m e2e --durations=25 || status=$?
exit "$status"
