"""The two maps of the code stay true: the README's "The code" section names every module of ln_viz/ (a
top-level module by its path, a package's modules by name on the package's entry), and ln_viz/__init__.py's
docstring names every top-level module and package. A module added, renamed or removed without its map
fails here, with the names to add or drop."""

from __future__ import annotations

import re
from pathlib import Path

import ln_viz

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "ln_viz"


def _readme_block() -> str:
    """The first fenced block after the README's '## The code' heading."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## The code\n", 1)[1]
    return section.split("```", 2)[1]


def _entries(block: str) -> dict[str, str]:
    """Each entry of the map: its first word (a path) -> its whole text (the line and the indented lines
    after it)."""
    entries: dict[str, str] = {}
    key = None
    for line in block.splitlines():
        if line and not line[0].isspace():
            key = line.split()[0]
            entries[key] = line
        elif key is not None:
            entries[key] += "\n" + line
    return entries


def _modules() -> list[Path]:
    return sorted(p.relative_to(PKG) for p in PKG.rglob("*.py") if "__pycache__" not in p.parts)


def test_the_readme_code_map_names_every_module() -> None:
    block = _readme_block()
    entries = _entries(block)
    missing = []
    for rel in _modules():
        if rel.name in ("__init__.py", "__main__.py"):
            continue
        if len(rel.parts) == 1:
            if f"ln_viz/{rel.as_posix()}" not in block:
                missing.append(f"ln_viz/{rel.as_posix()}")
            continue
        package = f"ln_viz/{'/'.join(rel.parts[:-1])}/"
        text = entries.get(package, "")
        if not re.search(rf"\b{re.escape(rel.stem)}\b", text.split(None, 1)[-1] if text else ""):
            missing.append(f"{rel.stem} (on the entry {package})")
    assert not missing, f"README.md's 'The code' map does not name: {', '.join(missing)}"


def test_the_readme_code_map_names_no_module_that_is_gone() -> None:
    block = _readme_block()
    named = set(re.findall(r"ln_viz/[\w/]+\.py", block)) | set(re.findall(r"ln_viz/[\w/]+/", block))
    gone = sorted(n for n in named if not (ROOT / n).exists())
    assert not gone, f"README.md's 'The code' map names what no longer exists: {', '.join(gone)}"


def test_the_package_docstring_maps_every_top_level_module_and_package() -> None:
    doc = ln_viz.__doc__ or ""
    tops = sorted(
        p.stem if p.is_file() else p.name
        for p in PKG.iterdir()
        if (p.suffix == ".py" and p.stem not in ("__init__", "__main__"))
        or (p.is_dir() and (p / "__init__.py").exists())
    )
    missing = [name for name in tops if not re.search(rf"\b{re.escape(name)}\b", doc)]
    assert not missing, f"ln_viz/__init__.py's docstring does not name: {', '.join(missing)}"
