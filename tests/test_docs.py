"""The docs site and the front page stay true: `mkdocs build --strict` passes (a link to a missing page or
heading fails it), the pages written from the code (the CLI reference, every error sentence) are what their
scripts write now, and README.md / README.ko.md are front pages whose every relative link resolves."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
READMES = ("README.md", "README.ko.md")
# The README's first fenced block: the two commands CI and newcomers run, kept exactly.
TWO_COMMANDS = """\
python3 -m venv .venv && .venv/bin/pip install -r requirements.txt && .venv/bin/streamlit run app.py
bash scripts/test.sh
"""


def _script(name: str) -> ModuleType:
    """A script of scripts/ as a module (scripts/ is not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_docs_build_in_strict_mode(tmp_path) -> None:
    if importlib.util.find_spec("mkdocs") is None:
        pytest.fail("MkDocs is not installed: .venv/bin/pip install -r requirements-docs.txt (scripts/test.sh does)")
    env = os.environ | {"NO_MKDOCS_2_WARNING": "1"}  # Material's banner about its successor, not a warning
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
         "--site-dir", str(tmp_path / "site")],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stderr[-4000:]}"
    assert (tmp_path / "site" / "cli" / "index.html").exists()


@pytest.mark.parametrize(("script", "page"), [("make_docs_cli", "docs/cli.md"), ("make_docs_errors", "docs/errors.md")])
def test_a_generated_page_is_what_its_script_writes_now(script: str, page: str) -> None:
    module = _script(script)
    assert (ROOT / page).read_text(encoding="utf-8") == module.render(), f"{page} is out of date; run: {module.COMMAND}"


def test_the_cli_reference_holds_every_subcommand_s_help() -> None:
    from ln_viz.cli import build_parser

    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    gen = _script("make_docs_cli")
    progs = [p.prog for _, p in gen._walk(build_parser())]
    assert len(progs) >= 10 and any(p.endswith(" runs export") for p in progs), progs  # the walk reaches the leaves
    for prog in progs:
        assert f"`{prog}`" in text, f"docs/cli.md has no section for {prog}; run: {gen.COMMAND}"


def test_every_error_sentence_of_the_catalogs_is_on_the_error_page() -> None:
    from ln_viz.i18n import EN

    text = (DOCS / "errors.md").read_text(encoding="utf-8")
    keys = [k for k in EN if "err" in k.split(".")]
    assert len(keys) > 100
    missing = [k for k in keys if f"`{k}`" not in text]
    assert not missing, f"docs/errors.md lacks {missing}; run: {_script('make_docs_errors').COMMAND}"


def test_the_run_file_page_names_every_measurement() -> None:
    from ln_viz.schema import PROBES, SCALARS

    text = (DOCS / "run-file.md").read_text(encoding="utf-8")
    missing = [name for name in [*SCALARS, *PROBES] if f"| `{name}` |" not in text]
    assert not missing, f"docs/run-file.md's measurement table lacks {missing} (ln_viz/schema.py has them)"


def test_the_architecture_table_of_your_own_model_is_what_the_tests_check() -> None:
    """docs/your-model.md's table (placement, QK-norm, model types) is tests/byom_models.py's expectations, which
    tests/test_byom.py checks against describe: no architecture claimed that no test reads."""
    from tests.byom_models import MORE, SPECS, WIDE

    want: dict[tuple[str, str], set[str]] = {}
    for name, (_, _, placement, qk) in {**SPECS, **MORE, **WIDE}.items():
        want.setdefault((placement, "yes" if qk else "no"), set()).add(name)
    text = (DOCS / "your-model.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (pre|post|peri|reordered|parallel) \| (yes|no) \| ([^|]+) \|$", text, re.M)
    shown = {(p, q): {n.strip() for n in names.split(",")} for p, q, names in rows}
    assert shown == want
    assert f"the {sum(map(len, want.values()))} architectures checked" in (DOCS / "index.md").read_text("utf-8")


def _links(markdown: str) -> list[str]:
    """The targets of the Markdown links and images of a page, and of its HTML src/href attributes."""
    return re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", markdown) + re.findall(r'(?:src|href)="([^"]+)"', markdown)


@pytest.mark.parametrize("readme", READMES)
def test_every_relative_link_of_the_front_page_resolves(readme: str) -> None:
    text = (ROOT / readme).read_text(encoding="utf-8")
    links = [link for link in _links(text) if not re.match(r"[a-z]+:", link) and not link.startswith("#")]
    assert links, f"{readme} links nowhere"
    broken = [link for link in links if not (ROOT / link.split("#", 1)[0]).exists()]
    assert not broken, f"{readme} links to what does not exist: {broken}"


@pytest.mark.parametrize("readme", READMES)
def test_the_front_page_opens_with_the_two_commands_and_a_picture(readme: str) -> None:
    text = (ROOT / readme).read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= 150, f"{readme} has {len(lines)} lines; a front page keeps to ~150 (the rest is in docs/)"
    first_block = text.split("```", 2)[1].split("\n", 1)[1]
    assert first_block == TWO_COMMANDS, f"{readme}'s first fenced block must be the two commands, unchanged"
    first_screen = "\n".join(lines[:40])
    assert re.search(r"!\[[^\]]*\]\(docs/img/[\w.-]+\.(gif|png)\)", first_screen), f"{readme}: no picture up top"
    other = READMES[1 - READMES.index(readme)]
    assert f"]({other})" in text, f"{readme} does not link to {other}"
