"""The installable package (issue 30): pyproject.toml's ranges admit the pinned versions, the wheel holds ln_viz
and its data only, and installed from it (not the checkout), run from another folder, `ln-viz --help`,
`ln-viz train ... --json` and `ln-viz app` work. The wheel is built from a copy of the files it is made of, so
a stale build/ folder of the checkout cannot leak into it, and installed with `pip --target` beside the shared
environment's site-packages, which supplies the dependencies."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import tomllib
import urllib.request
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from benchmarks.tab import Tab
from ln_viz.i18n import t
from ln_viz.ui.runs_view import LOAD_DEMOS_ENV as LOAD_DEMOS
from tests.e2e.conftest import free_port

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
# what the wheel is built from: pyproject.toml's inputs (the package, the app it maps in, the README it reads)
SOURCES = ["pyproject.toml", "README.md", "app.py", "pages", ".streamlit", "ln_viz"]
SMALL_RUN = ["--depth", "2", "--d-model", "32", "--heads", "2", "--batch-size", "8", "--seq-len", "32"]


def _pins(name: str) -> dict[str, str]:
    """A requirements file's exact pins: package -> version (`-r` lines and comments left out)."""
    pins = {}
    for line in (ROOT / name).read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith("-"):
            req = Requirement(line)
            (spec,) = req.specifier
            assert spec.operator == "==", f"{name}: {line} is no exact pin"
            pins[req.name.lower()] = spec.version
    return pins


def _ranges(*extras: str | None) -> dict[str, Requirement]:
    """pyproject.toml's ranges: [project] dependencies (extra None) or the extras'."""
    project = PYPROJECT["project"]
    lines = [
        line
        for extra in extras
        for line in (project["dependencies"] if extra is None else project["optional-dependencies"][extra])
    ]
    return {req.name.lower(): req for req in map(Requirement, lines) if req.name != "ln-viz"}


@pytest.mark.parametrize(
    "pinned, extras",
    [
        ("requirements.txt", [None]),
        ("requirements-ray.txt", [None, "ray"]),
        ("requirements-test.txt", [None, "test"]),
        ("requirements-hf.txt", [None, "hf", "lightning", "peft"]),  # your own model's integrations (issue 31)
    ],
)
def test_every_pin_has_a_range_that_admits_it(pinned, extras):
    """A researcher installs the ranges; the app is tested at the pins: each range must hold its pin (with
    torch, a range that missed 2.13.0 would download a multi-GB CUDA build over the CPU wheel)."""
    if not (ROOT / pinned).exists():
        pytest.skip(f"no {pinned} in this checkout")
    ranges = _ranges(*extras)
    for name, version in _pins(pinned).items():
        assert name in ranges, f"{pinned} pins {name}, which pyproject.toml's {extras} lack"
        assert ranges[name].specifier.contains(version), f"{ranges[name]} does not admit {pinned}'s {version}"
    assert str(_ranges(None)["torch"].specifier).startswith(">="), "torch must be a range, not the pin"


def test_the_package_list_names_every_package_of_ln_viz():
    """The list is explicit (a package mapped from elsewhere, ln_viz.webapp, cannot be found by
    `packages.find`): a new package folder of ln_viz/ must be added, or the wheel would lack it."""
    tree = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "ln_viz").rglob("__init__.py")}
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    app = {"ln_viz.webapp", "ln_viz.webapp.pages"}
    assert listed - app == tree, f"add {sorted(tree - listed)}, remove {sorted(listed - app - tree)}"
    assert PYPROJECT["tool"]["setuptools"]["package-dir"] == {"ln_viz.webapp": "."}


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, Path]:
    """(the wheel, the folder it is installed into with `pip --target`)."""
    tmp = tmp_path_factory.mktemp("package")
    (tmp / "src").mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, tmp / "src" / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, tmp / "src" / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", tmp / "dist", tmp / "src"],
                   check=True, capture_output=True, timeout=300)  # fmt: skip
    (wheel,) = (tmp / "dist").glob("ln_viz-*.whl")
    subprocess.run([*pip, "install", "--no-deps", "--target", tmp / "target", wheel],
                   check=True, capture_output=True, timeout=300)  # fmt: skip
    return wheel, tmp / "target"


def _env(target: Path, tmp: Path) -> dict[str, str]:
    """The installed package first on the path; the checkout nowhere on it (the command runs in `tmp`)."""
    return os.environ | {"PYTHONPATH": str(target), "LN_VIZ_STORE": str(tmp / "runs.sqlite")}


@pytest.mark.slow  # builds and installs a wheel: seconds
def test_the_wheel_holds_ln_viz_only_with_its_data_and_the_app(installed):
    wheel, _ = installed
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {"ln_viz", "ln_viz-0.1.0.dist-info"}
    source = {p.relative_to(ROOT).as_posix() for p in (ROOT / "ln_viz").rglob("*") if p.is_file()}
    source = {n for n in source if "__pycache__" not in n}
    assert source <= set(names), f"missing from the wheel: {sorted(source - set(names))[:5]}"
    app = {"app.py", ".streamlit/config.toml", *(f"pages/{p.name}" for p in (ROOT / "pages").glob("*.py"))}
    assert {f"ln_viz/webapp/{n}" for n in app} <= set(names)
    assert not [n for n in names if "__pycache__" in n]
    assert any(n.startswith("ln_viz/data/demo_runs/") for n in names)
    entry_points = zipfile.ZipFile(wheel).read("ln_viz-0.1.0.dist-info/entry_points.txt").decode()
    assert "ln-viz = ln_viz.cli:main" in entry_points


@pytest.mark.slow  # imports torch and trains 20 tiny steps in subprocesses: seconds
def test_the_installed_command_runs_from_another_folder(installed, tmp_path):
    _, target = installed
    env, ln_viz = _env(target, tmp_path), [str(target / "bin" / "ln-viz")]
    where = subprocess.run([sys.executable, "-c", "import ln_viz; print(ln_viz.__file__)"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, check=True)  # fmt: skip
    assert Path(where.stdout.strip()).is_relative_to(target)  # the wheel's copy, not the checkout's

    for command, prog in ((ln_viz, "ln-viz"), ([sys.executable, "-m", "ln_viz"], "python -m ln_viz")):
        done = subprocess.run([*command, "--help"], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert done.returncode == 0 and done.stdout.startswith(f"usage: {prog} "), done.stderr
        assert "app" in done.stdout and "train" in done.stdout

    train = [*ln_viz, "train", *SMALL_RUN, "--steps", "20", "--probe-every", "0", "--json"]
    done = subprocess.run(train, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["steps_done"] == 20 and report["status"] in ("completed", "stalled")


def _health(url: str, proc: subprocess.Popen, log: Path, timeout: float = 90) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"ln-viz app exited with {proc.returncode}:\n{log.read_text()}"
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                return r.read().decode()
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"no answer from /_stcore/health in {timeout} s:\n{log.read_text()}")


class ButtonsTab(Tab):
    """A tab that also keeps the buttons it is sent (by key)."""

    def __init__(self, url: str, query: str, page: str = "") -> None:
        super().__init__(url, query, page)
        self.buttons: dict = {}

    def _seen_element(self, element) -> None:
        super()._seen_element(element)
        if element.WhichOneof("type") == "button":
            self.buttons[element.button.id.rsplit("-", 1)[-1]] = element.button


async def _visit(url: str, page: str = "") -> ButtonsTab:
    """A tab that opens one page of the app (the default one: Live) and waits until its script has run once."""
    tab = ButtonsTab(url, "lang=en", page)
    await tab.open()
    await tab.close()
    return tab


@pytest.mark.slow  # starts the app's server and its workers: about 10 s
def test_ln_viz_app_serves_the_packaged_app_with_its_server_settings(installed, tmp_path):
    _, target = installed
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "server.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([target / "bin" / "ln-viz", "app", "--server.port", str(port), "--server.headless",
                                 "true"], cwd=tmp_path, env=_env(target, tmp_path) | {LOAD_DEMOS: "1"}, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    try:
        assert _health(url, proc, log) == "ok"
        with urllib.request.urlopen(url + "/", timeout=10) as r:
            assert r.status == 200 and b"<html" in r.read().lower()
        tab = asyncio.run(asyncio.wait_for(_visit(url), 120))  # the packaged app.py and its Live page run
        assert tab.exceptions == 0 and tab.texts, log.read_text()
        # The Runs page (with the bundled demo runs) finds the Compare page it hands two runs to: installed,
        # that is ln_viz/webapp/pages/compare.py, not a pages/ folder beside ln_viz/ (it said "missing")
        tab = asyncio.run(asyncio.wait_for(_visit(url, "runs"), 120))
        assert tab.exceptions == 0, log.read_text()
        assert tab.buttons["runs_compare"].help == t("runs.compare_pick_two", "en")
    finally:
        proc.send_signal(signal.SIGTERM)  # ln-viz app is the server's process itself (exec)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
    text = log.read_text()
    # .streamlit/config.toml came along: loopback only (Streamlit's default would print a Network URL too)
    assert re.search(rf"URL: http://127\.0\.0\.1:{port}\b", text) and "Network URL" not in text, text
    assert "Traceback" not in text, text
