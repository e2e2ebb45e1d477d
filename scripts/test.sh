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
# which no test imports; Python compiles the ones imported on first use and keeps them (measured on transformers and
# ray: 18.7 CPU-s of install, 6.5 with --no-compile)
.venv/bin/pip install -q --disable-pip-version-check --no-compile -r requirements-test.txt -r requirements-ray.txt -r requirements-docs.txt -r requirements-hf.txt
# the checkout itself, editable and without touching the pins above: the `ln-viz` command, and ln_viz importable
# by the scripts and benchmarks from any folder (pyproject.toml; setuptools comes from requirements-test.txt)
.venv/bin/pip install -q --disable-pip-version-check --no-compile --no-deps --no-build-isolation -e .

.venv/bin/ruff check .
if [ "$#" -gt 0 ]; then  # a selection of your own: one run, in file order
  exec .venv/bin/python -m pytest -m "" --durations=25 "$@"
fi
# Every test in two lanes, each with its 25 slowest printed (the suite must stay under 20 min on 2 cores, install
# included): everything but the browser tests, then the browser tests; each lane on both cores (pytest-xdist, one
# process per core, each test file kept in one process so module fixtures and counters work as in a serial run;
# the files share no files, ports or processes: each counts the workers of its own server). Browser tests ran one
# at a time until the suite went over 25 min; a browser test uses about one core (with the layout test in lane 1
# beside the unit tests, those took no longer than on one core alone: 569 s against 264 on two), so two of them
# share the two cores. Moving browser tests into lane 1 made the suite slower (lane 1: 365 s with the static
# ones, 272 without; 569 s with the layout test, 264 without, while taking only its ~290 s out of lane 2).
# Both lanes run; the script fails if either failed.
trap 'exit 130' INT  # Ctrl-C ends the script, not only the lane that was running
status=0
.venv/bin/python -m pytest -m "not e2e" -n 2 --dist loadfile --durations=25 || status=$?
.venv/bin/python -m pytest -m e2e -n 2 --dist loadfile --no-loadscope-reorder --durations=25 || status=$?
exit "$status"
