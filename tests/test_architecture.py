"""The import graph of ln_viz/ (issue 18): no import circle, every import to the same or a lower layer of
one declared order, and no streamlit outside ln_viz/ui/.

The graph is read from the source with `ast`, never by importing: every `import` and `from ... import`,
at the top of a module or inside a function (the lazy ones), relative ones resolved, and
`from pkg import submodule` counted as an import of the submodule. Importing `pkg.sub` is an edge to
`pkg.sub` only, not to `pkg` (Python runs `pkg/__init__.py` first, but a package that re-exports its
parts would otherwise make every part import all the others)."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "ln_viz"

# The layers, lowest first, drawn from the flow in the project's style.md (config -> model + probes ->
# trainer -> snapshots -> runner / store -> charts -> pages); each module by its name under ln_viz/
# ("store.db" is ln_viz/store/db.py, "store" its __init__.py, "ln_viz" the package's own __init__.py).
# A module may import its own layer or any below it, never one above. A new module goes in the layer of
# what it is: a new sweep module (the executor chooser, say) in "sweep", a new CLI module in "entry"; a
# module under ln_viz/ui/ is placed by "ui.*". A module that needs a higher layer's fact is the sign that
# the fact belongs lower.
LAYERS: list[tuple[str, str]] = [
    # nothing of ln_viz but each other: plain text, the translations, the Theory page's text, the label
    # and time rules that the run file and the store share
    ("leaves", "ln_viz text i18n theory runmeta stats"),
    ("config", "config schedule"),
    ("vocabulary", "schema corpus"),
    ("model", "model optim"),
    ("probes", "probes init_grads"),
    ("snapshot", "snapshot"),  # what the trainer yields: below it, since it builds them
    ("train", "train"),
    # background execution: training runs in worker processes, and the Init Lab's measurements in a pool
    # of the runner's worker processes
    (
        "runner",
        "runner runner.messages runner.worker runner.process runner.ray_worker runner.handle runner.queue"
        " runner.runner init_lab",
    ),
    # runs as files: the run file (the import gate) and the tidy tables; the store imports and exports them
    ("runfile", "runfile runfile.format runfile.document runfile.validate tables"),
    (
        "store",
        "store store.db store.lock store.migrations store.rows store.reader store.writer store.transfer recorder",
    ),
    (
        "charts",
        "charts charts.style charts.axes charts.sample charts.lr_axis charts.dist charts.entropy charts.grads "
        "charts.init_lab "
        "charts.instability charts.loss charts.profile charts.seeds words export pack video",
    ),
    # the stability map
    (
        "sweep",
        "sweep sweep.spec sweep.presets sweep.results sweep.executors sweep.local sweep.ray_address sweep.ray_exec "
        "sweep.chooser sweep.driver sweep.compare sweep.storage sweep.saver sweep.labels sweep.charts "
        "sweep.curve_charts sweep.cli",
    ),
    # where a configuration enters: the command line's flags and a page's link
    ("entry", "cli cli.parser cli.train cli.runs cli.compare __main__ urlstate watchlink"),
    # what a run view shows (status, verdicts, labels), made from any of the layers below, drawn by ui/
    ("views", "run_frames"),
    ("ui", "ui.*"),  # the only streamlit-aware code: ln_viz/ui/ and everything in it
]
# Everything outside ln_viz/ui/ is the engine: the app's pages and the CLI share it, so it never needs a
# browser session (style.md: "Nothing in it imports streamlit except one small ln_viz/ui/ package").
UI_PREFIX = "ln_viz.ui."


@cache
def modules() -> dict[str, tuple[Path, bool]]:
    """Every module of ln_viz/: dotted name -> (file, is a package's __init__)."""
    found = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _known(name: str) -> str | None:
    """The longest prefix of `name` that is an ln_viz module (`ln_viz.store.rows.iso_time` -> rows)."""
    while name and name not in modules():
        name = name.rpartition(".")[0]
    return name or None


def _from_base(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The module a `from X import ...` reads from, relative levels resolved against `module`."""
    if not node.level:
        return node.module or ""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join([*parts, node.module] if node.module else parts)


def imported_names(module: str) -> set[str]:
    """Every dotted name `module` imports, at any depth of its code (lazy imports included); for
    `from pkg import x`, `pkg.x` when x is a submodule, else `pkg`."""
    path, is_package = modules()[module]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _from_base(module, is_package, node)
            names.update(f"{base}.{a.name}" if f"{base}.{a.name}" in modules() else base for a in node.names)
    return names


@cache
def graph() -> dict[str, frozenset[str]]:
    """module -> the ln_viz modules it imports (itself left out)."""
    edges = {}
    for module in modules():
        targets = {_known(name) for name in imported_names(module) if name.split(".")[0] == PACKAGE}
        edges[module] = frozenset(targets - {module, None})
    return edges


def circles(edges: dict[str, frozenset[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(found)


def _full(name: str) -> str:
    """A LAYERS entry as a dotted module name: "store.db" -> "ln_viz.store.db"."""
    return name if name == PACKAGE else f"{PACKAGE}.{name}"


def _matches(entry: str, module: str) -> bool:
    if entry.endswith(".*"):  # a package and everything in it
        package = _full(entry[:-2])
        return module == package or module.startswith(package + ".")
    return module == _full(entry)


def layer_of(module: str) -> int | None:
    """The index in LAYERS of the layer that names `module` (exactly, or by a `pkg.*` entry), or None."""
    for i, (_, entries) in enumerate(LAYERS):
        if any(_matches(entry, module) for entry in entries.split()):
            return i
    return None


def test_every_module_has_one_layer() -> None:
    unplaced = sorted(m for m in modules() if layer_of(m) is None)
    assert not unplaced, (
        f"{', '.join(unplaced)} {'has' if len(unplaced) == 1 else 'have'} no layer: add each to the layer "
        "of what it is in LAYERS in tests/test_architecture.py"
    )
    listed = [entry for _, entries in LAYERS for entry in entries.split()]
    twice = sorted({entry for entry in listed if listed.count(entry) > 1})
    assert not twice, f"{', '.join(twice)} named more than once in LAYERS: keep one"
    stale = [entry for entry in listed if not any(_matches(entry, m) for m in modules())]
    assert not stale, f"LAYERS names {', '.join(stale)}, which is no module of ln_viz/: remove or rename it"


def test_no_import_circle() -> None:
    found = circles(graph())
    assert not found, f"{len(found)} import circle(s): " + "; ".join(" <-> ".join(c) for c in found)


def upward_imports() -> list[str]:
    """'a (layer) -> b (layer)' for each import of a higher layer's module (unplaced modules left out)."""
    found = []
    for module, targets in sorted(graph().items()):
        low = layer_of(module)
        for target in sorted(targets):
            high = layer_of(target)
            if low is not None and high is not None and high > low:
                found.append(f"{module} ({LAYERS[low][0]}) -> {target} ({LAYERS[high][0]})")
    return found


def test_imports_go_to_the_same_or_a_lower_layer() -> None:
    found = upward_imports()
    assert not found, f"{len(found)} import(s) of a higher layer: " + "; ".join(found)


def test_the_engine_never_imports_streamlit() -> None:
    found = sorted(
        module
        for module in modules()
        if not module.startswith(UI_PREFIX)
        and any(name.split(".")[0] == "streamlit" for name in imported_names(module))
    )
    assert not found, f"{', '.join(found)} import(s) streamlit: only ln_viz/ui/ may"


def test_the_graph_reader_sees_lazy_relative_and_submodule_imports() -> None:
    """The reader on the real tree (a lazy import inside a function, `from pkg import submodule`, a name
    from a package), relative imports on parsed lines (ln_viz has none today), and the circle finder."""
    edges = graph()
    assert "ln_viz.init_grads" in edges["ln_viz.init_lab"]  # lazy, inside _measure
    assert "ln_viz.charts" in edges["ln_viz.export"]  # from ln_viz import charts
    assert "ln_viz.store" in edges["ln_viz.recorder"]  # from ln_viz.store import RunWriter, Store
    assert "ln_viz.store.rows" not in edges["ln_viz.recorder"]
    rel = ast.parse("from . import rows\nfrom ..i18n import t").body
    assert _from_base("ln_viz.store.reader", False, rel[0]) == "ln_viz.store"
    assert _from_base("ln_viz.store.reader", False, rel[1]) == "ln_viz.i18n"
    assert _from_base("ln_viz.store", True, rel[0]) == "ln_viz.store"
    assert circles({"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}), "d": frozenset({"a"})}) == [
        ["a", "b", "c"]
    ]


MAX_FILE_LINES = 400  # a library file a reader can hold in mind (the shape ../shared/style.md asks for)
MAX_FUNCTION_LINES = 60


def _library_files() -> list[Path]:
    return sorted([*(ROOT / PACKAGE).rglob("*.py"), *(ROOT / "pages").glob("*.py"), ROOT / "app.py"])


def test_no_library_file_is_over_400_lines_and_no_function_over_60() -> None:
    long_files, long_functions = [], []
    for path in _library_files():
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(ROOT).as_posix()
        if text.count("\n") > MAX_FILE_LINES:
            long_files.append(f"{rel} ({text.count(chr(10))} lines)")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long_functions.append(f"{rel}:{node.lineno} {node.name} ({n} lines)")
    assert not long_files, f"over {MAX_FILE_LINES} lines: split by concern: {', '.join(long_files)}"
    assert not long_functions, f"over {MAX_FUNCTION_LINES} lines: {', '.join(long_functions)}"
