#!/usr/bin/env bash
# Install everything the tests need on a fresh machine, then run every test (lint, unit, app, browser,
# slow training). A bare `pytest` is the fast lane (no Chromium, no slow training, see pyproject.toml);
# `-m ""` here lifts that filter. Extra arguments go to pytest after it, e.g. `bash scripts/test.sh -m "not e2e"`.
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
.venv/bin/pip install -q --disable-pip-version-check -r requirements-test.txt -r requirements-ray.txt

.venv/bin/ruff check .
.venv/bin/python -m pytest -m "" --durations=25 "$@"  # the 25 slowest, to keep the suite under 15 min
