"""The two maps of the code stay true: the docs' code map (docs/code.md, "The code", its first fenced block)
names every module of ln_viz/ (a top-level module by its path, a package's modules by name on the package's
entry), and ln_viz/__init__.py's docstring names every top-level module and package. A module added, renamed
or removed without its map fails here, saying what to add to or drop from which entry."""

from __future__ import annotations

import re
from pathlib import Path

import ln_viz

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "ln_viz"


CODE_MAP = ROOT / "docs" / "code.md"


def _map_block() -> str:
    """The first fenced block of docs/code.md: the map."""
    return CODE_MAP.read_text(encoding="utf-8").split("```", 2)[1]


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


def test_the_code_map_names_every_module() -> None:
    block = _map_block()
    entries = _entries(block)
    todo = []
    for rel in _modules():
        if rel.name in ("__init__.py", "__main__.py"):
            continue
        if len(rel.parts) == 1:
            if f"ln_viz/{rel.as_posix()}" not in block:
                todo.append(f"add a line `ln_viz/{rel.as_posix()}  <what it holds>`")
            continue
        package = f"ln_viz/{'/'.join(rel.parts[:-1])}/"
        text = entries.get(package)
        if text is None:
            todo.append(f"add a line `{package}  <what it holds>: {rel.stem}, ...` (a new package)")
        elif not re.search(rf"\b{re.escape(rel.stem)}\b", text.split(None, 1)[-1]):
            todo.append(f"add the word `{rel.stem}` to the entry `{package}`")
    assert not todo, "docs/code.md's map (its first fenced block) is behind the code:\n" + "\n".join(todo)


def test_the_code_map_names_no_module_that_is_gone() -> None:
    block = _map_block()
    named = set(re.findall(r"ln_viz/[\w/]+\.py", block)) | set(re.findall(r"ln_viz/[\w/]+/", block))
    gone = sorted(n for n in named if not (ROOT / n).exists())
    todo = [f"remove `{n}` (it no longer exists; name where its code went)" for n in gone]
    assert not todo, "docs/code.md's map names what no longer exists:\n" + "\n".join(todo)


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
