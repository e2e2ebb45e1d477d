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
    ("leaves", "ln_viz text i18n theory runmeta stats leftovers"),
    ("config", "config schedule lessons"),
    ("vocabulary", "schema corpus"),
    ("model", "model optim"),
    ("probes", "summaries update_probes probes init_grads"),
    ("snapshot", "snapshot"),  # what the trainer yields: below it, since it builds them
    ("train", "train"),
    # background execution: training runs in worker processes, and the Init Lab's measurements in a pool
    # of the runner's worker processes
    (
        "runner",
        "runner runner.messages runner.worker runner.fork_server runner.process runner.ray_actor runner.ray_host"
        " runner.ray_worker runner.handle runner.queue runner.runner init_lab",
    ),
    # runs as files: the run file (the import gate) and the tidy tables; the store imports and exports them
    ("runfile", "runfile runfile.format runfile.document runfile.validate tables"),
    (
        "store",
        "store store.db store.lock store.migrations store.rows store.reader store.writer store.transfer recorder",
    ),
    # a model ln-viz did not build: its card (by data flow), the probes attached to it, the framework adapters
    (
        "byom",
        "byom byom.layout byom.measure byom.roles byom.card byom.attention byom.summaries byom.forward byom.probe "
        "integrations integrations.hf integrations.lightning "
        "hf_init_lab byom.figure3",  # the Init lab on real architectures: its summaries, its measurement
    ),
    (
        "charts",
        "charts charts.style charts.axes charts.reference charts.sample charts.lr_axis charts.dist charts.entropy "
        "charts.grads charts.init_lab charts.init_hf charts.updates "
        "charts.instability charts.loss charts.profile charts.seeds words export video_charts pack video_frames video",
    ),
    # the stability map
    (
        "sweep",
        "sweep sweep.spec sweep.presets sweep.results sweep.executors sweep.local sweep.ray_address sweep.ray_exec "
        "sweep.chooser sweep.driver sweep.compare sweep.storage sweep.saver sweep.labels sweep.map_cells sweep.charts "
        "sweep.curve_charts sweep.cli",
    ),
    # where a configuration enters: the command line's flags and a page's link
    ("entry", "cli cli.parser cli.train cli.runs cli.compare __main__ urlstate watchlink"),
    # what the app's server keeps for every visitor, without Streamlit: the Runner and its Ray backend, a
    # tab's runs, the sweep slot and its caps, the store and the runs the charts share, the early workers
    ("server", "server server.runs server.sweeps server.store server.lifespan"),
    # what the pages show, as data and text, without Streamlit (the Runs page's table)
    ("views", "views views.attached views.runs_list views.run_frames"),
    ("ui", "ui.*"),  # the only streamlit-aware code: ln_viz/ui/ and everything in it
]
# Everything outside ln_viz/ui/ is the engine: the app's pages and the CLI share it, so it never needs a
# browser session (style.md: "Nothing in it imports streamlit except one small ln_viz/ui/ package").
UI_PREFIX = "ln_viz.ui."


def _modules_in(paths: list[Path]) -> dict[str, tuple[Path, bool]]:
    """Each file's dotted name from the checkout's root -> (file, is a package's __init__)."""
    found = {}
    for path in sorted(paths):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


@cache
def modules() -> dict[str, tuple[Path, bool]]:
    """Every module of ln_viz/: dotted name -> (file, is a package's __init__)."""
    return _modules_in(list((ROOT / PACKAGE).rglob("*.py")))


def _known(name: str, table: dict[str, tuple[Path, bool]] | None = None) -> str | None:
    """The longest prefix of `name` that is an ln_viz module (`ln_viz.store.rows.iso_time` -> rows), or one
    of `table`'s."""
    table = modules() if table is None else table
    while name and name not in table:
        name = name.rpartition(".")[0]
    return name or None


def _from_base(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The module a `from X import ...` reads from, relative levels resolved against `module`."""
    if not node.level:
        return node.module or ""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join([*parts, node.module] if node.module else parts)


@cache
def nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of a file's syntax tree (ast.walk's order), parsed and walked once for the module's checks:
    walking the tree's files was most of their time."""
    return tuple(ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))))


def imported_names(module: str, table: dict[str, tuple[Path, bool]] | None = None) -> set[str]:
    """Every dotted name `module` (of ln_viz/, or of `table`) imports, at any depth of its code (lazy imports
    included); for `from pkg import x`, `pkg.x` when x is a submodule, else `pkg`."""
    table = modules() if table is None else table
    path, is_package = table[module]
    names: set[str] = set()
    for node in nodes(path):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _from_base(module, is_package, node)
            names.update(f"{base}.{a.name}" if f"{base}.{a.name}" in table else base for a in node.names)
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


TREE = ("ln_viz", "pages", "scripts", "benchmarks", "tests", "examples")  # and app.py


def test_no_import_circle_in_the_whole_tree() -> None:
    """The same for every Python file of the checkout (the app, its pages, the scripts, the benchmarks, the
    tests, the examples), each named from the root as the others import it (`from benchmarks import
    watch_load` is benchmarks.watch_load); load_test.py and watch_load.py once imported each other."""
    table = _modules_in([ROOT / "app.py", *(p for top in TREE for p in (ROOT / top).rglob("*.py"))])
    assert {"app", "pages.live", "benchmarks.watch_load", "tests.e2e.conftest"} <= set(table)
    edges = {m: frozenset({_known(n, table) for n in imported_names(m, table)} - {m, None}) for m in table}
    assert "benchmarks.watch_load" in edges["benchmarks.load_test"]  # `from benchmarks import watch_load`
    assert "tests.ray_cluster" in edges["tests.test_sweep_ray"]  # `from .ray_cluster import ...` resolved
    found = circles(edges)
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
        for node in nodes(path):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long_functions.append(f"{rel}:{node.lineno} {node.name} ({n} lines)")
    assert not long_files, f"over {MAX_FILE_LINES} lines: split by concern: {', '.join(long_files)}"
    assert not long_functions, f"over {MAX_FUNCTION_LINES} lines: {', '.join(long_functions)}"


# --- no private name used across packages (issue 30) ---------------------------------------------------
# A leading underscore says "this module's own": another package that imports or reads it (`from x import
# _y`, `x._y` for a module x) is tied to a detail its owner may change without warning. Within one package
# (ln_viz/charts/ among its modules, say) the package's parts may share their helpers.
TREE = ("ln_viz", "pages", "app.py", "scripts", "benchmarks", "tests")
# (file, name): each exception, with why it stays
PRIVATE_ALLOWED: dict[tuple[str, str], str] = {
    ("tests/test_chart_accessibility.py", "ln_viz.charts.loss._prepare_loss"): "the loss chart's traces and their "
    "dashes read from its data preparation, as test_chart_data.py reads them",
    **{
        ("tests/test_chart_data.py", f"ln_viz.charts.{name}"): "the charts' data preparation apart from the "
        "drawing (optuna's `_get_*_info`): private to its chart module, tested directly"
        for name in (
            "dist._prepare_act grads._prepare_heatmap init_lab._prepare_depth loss._prepare_loss "
            "profile._prepare_profile instability._prepare_attn_logits instability._prepare_log_z "
            "instability._prepare_dyt instability._prepare_massive instability._prepare_compared_log_z "
            "instability._prepare_compared_logits instability._largest_logit"
        ).split()
    },
}


@cache
def tree_modules() -> dict[str, tuple[Path, bool]]:
    """Every module of the tree (the library, the pages, the app, scripts, benchmarks, tests): dotted
    name -> (file, is a package's __init__)."""
    paths = []
    for top in TREE:
        path = ROOT / top
        paths += [path] if path.suffix == ".py" else sorted(path.rglob("*.py"))
    found = {}
    for path in paths:
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _package(module: str) -> str:
    """The package a module belongs to: itself for a package's __init__, else its parent."""
    return module if tree_modules()[module][1] else module.rpartition(".")[0]


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_uses(module: str, source: str | None = None) -> list[tuple[int, str]]:
    """(line, 'pkg.mod._name') for each private name of another package's module that `module` imports
    (`from x import _y`) or reads from a module it imported (`x._y`, `pkg.x._y`)."""
    path, is_package = tree_modules()[module]
    walked = tuple(ast.walk(ast.parse(source, str(path)))) if source is not None else nodes(path)
    found, bound = [], {}  # bound: a local name -> the tree module it stands for
    for node in walked:
        if isinstance(node, ast.ImportFrom):
            base = _from_base(module, is_package, node)
            for alias in node.names:
                if f"{base}.{alias.name}" in tree_modules():
                    bound[alias.asname or alias.name] = f"{base}.{alias.name}"
                elif base in tree_modules() and _private(alias.name) and _package(base) != _package(module):
                    found.append((node.lineno, f"{base}.{alias.name}"))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                name = alias.name if alias.asname else alias.name.split(".")[0]
                bound[alias.asname or name] = name
    for node in walked:
        if isinstance(node, ast.Attribute) and _private(node.attr):
            chain, value = [], node.value
            while isinstance(value, ast.Attribute):
                chain.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in bound:
                target = ".".join([bound[value.id], *reversed(chain)])
                if target in tree_modules() and _package(target) != _package(module):
                    found.append((node.lineno, f"{target}.{node.attr}"))
    return sorted(set(found))


def test_no_module_uses_a_private_name_of_another_package() -> None:
    found, used = [], set()
    for module, (path, _) in tree_modules().items():
        rel = path.relative_to(ROOT).as_posix()
        for line, name in private_uses(module):
            if (rel, name) in PRIVATE_ALLOWED:
                used.add((rel, name))
            else:
                found.append(f"{rel}:{line} {name}")
    assert not found, f"{len(found)} private name(s) of another package: give each a public name: " + "; ".join(found)
    stale = sorted(f"{rel} {name}" for rel, name in set(PRIVATE_ALLOWED) - used)
    assert not stale, f"PRIVATE_ALLOWED lists what no module uses any more: remove {', '.join(stale)}"


def test_the_private_name_check_sees_imports_and_attributes() -> None:
    """On parsed lines: each way a private name is reached, and what is allowed (the same package, a
    dunder, a public name)."""
    uses = {
        "from ln_viz.sweep.ray_exec import _Driver": [(1, "ln_viz.sweep.ray_exec._Driver")],
        "from ln_viz.sweep import ray_exec\nray_exec._Driver.get()": [(2, "ln_viz.sweep.ray_exec._Driver")],
        "import ln_viz.i18n\nln_viz.i18n._x": [(2, "ln_viz.i18n._x")],
        "import ln_viz.i18n as i\ni._x": [(2, "ln_viz.i18n._x")],
        "from ln_viz.sweep.ray_exec import connect_here, __doc__": [],
        "from ln_viz.ui import storage\nstorage.get_store()._entries": [],  # an object's, not a module's
    }
    for source, expected in uses.items():
        assert private_uses("ln_viz.ui.training", source) == expected, source
    assert private_uses("ln_viz.charts.loss", "from ln_viz.charts.style import _f32") == []  # one package
    assert private_uses("ln_viz.sweep.charts", "from ln_viz.charts.style import _f32") == [
        (1, "ln_viz.charts.style._f32")
    ]


# --- one registry of session-state keys (issue 30) ------------------------------------------------------
# Every key of st.session_state is named once, in ln_viz/ui/keys.py. Elsewhere in the app's code a key is
# that name: a literal string (or a string constant of the module) as a key of st.session_state, as the key
# given to language.translated (whose widgets are read back through the session state), or as a widget's
# key= that the registry names, fails here.
APP_CODE = ("ln_viz/ui/*.py", "pages/*.py", "app.py")
KEY_REGISTRY = "ln_viz/ui/keys.py"
# The run view's files (Live, Compare, watch) are being made one component in the same wave: they adopt
# the registry then, and this list empties.
KEYS_NOT_YET_FROM_REGISTRY: set[str] = set()  # files that may still write a key of their own (none now)
_STATE_METHODS = {"get", "setdefault", "pop"}


def _is_session_state(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "session_state"


def _literal_strings(node: ast.AST, constants: dict[str, str]) -> list[str]:
    """The string literals a key expression is made of: "a", f"a{x}", "a" + x, or a module constant."""
    if isinstance(node, ast.Name) and node.id in constants:
        return [constants[node.id]]
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _key_expressions(node: ast.AST) -> list[ast.AST]:
    """The session-state keys `node` reads or writes: st.session_state[k], its get/setdefault/pop(k),
    `k in st.session_state`, and language.translated(k)."""
    if isinstance(node, ast.Subscript) and _is_session_state(node.value):
        return [node.slice]
    if isinstance(node, ast.Compare) and any(_is_session_state(c) for c in node.comparators):
        return [node.left]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
        state_call = node.func.attr in _STATE_METHODS and _is_session_state(node.func.value)
        if state_call or node.func.attr == "translated":
            return [node.args[0]]
    return []


def literal_keys(source: str, registry: set[str]) -> list[tuple[int, str]]:
    """(line, key) for each session-state key of `source` written as a literal instead of a registry name,
    and each widget key= that is a literal the registry names."""
    tree = ast.parse(source)
    constants = {
        t.id: n.value.value
        for n in tree.body
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    found = []
    for node in ast.walk(tree):
        found += [(node.lineno, text) for key in _key_expressions(node) for text in _literal_strings(key, constants)]
        if isinstance(node, ast.Call):
            widget_keys = [k.value.value for k in node.keywords if k.arg == "key" and isinstance(k.value, ast.Constant)]
            found += [(node.lineno, key) for key in widget_keys if key in registry]
    return sorted(set(found))


def _registry() -> set[str]:
    import ln_viz.ui.keys as registry

    return {v for k, v in vars(registry).items() if k.isupper() and isinstance(v, str)}


def test_every_session_state_key_is_named_once_in_the_registry() -> None:
    registry = _registry()
    import ln_viz.ui.keys as module

    names = [v for k, v in vars(module).items() if k.isupper() and isinstance(v, str)]
    assert len(names) == len(set(names)), (
        f"{KEY_REGISTRY} names a key twice: {sorted(n for n in names if names.count(n) > 1)}"
    )
    found, clean = [], []
    for pattern in APP_CODE:
        for path in sorted(ROOT.glob(pattern)):
            rel = path.relative_to(ROOT).as_posix()
            if rel == KEY_REGISTRY:
                continue
            hits = literal_keys(path.read_text(encoding="utf-8"), registry)
            if rel in KEYS_NOT_YET_FROM_REGISTRY:
                clean += [] if hits else [rel]
            else:
                found += [f"{rel}:{line} {key!r}" for line, key in hits]
    assert not found, f"session-state keys written here, not named from {KEY_REGISTRY}: " + "; ".join(found)
    assert not clean, f"{', '.join(clean)} take every key from the registry now: remove from KEYS_NOT_YET_FROM_REGISTRY"


def test_the_key_check_sees_each_way_a_key_is_written() -> None:
    registry = {"lang", "sm_cell"}
    cases = {
        'st.session_state["x"] = 1': [(1, "x")],
        'st.session_state.get("x")': [(1, "x")],
        'st.session_state.setdefault("_x" + key, 1)': [(1, "_x")],
        'if f"x{n}" in st.session_state: pass': [(1, "x")],
        'K = "cseeds"\nst.session_state[K]': [(2, "cseeds")],
        'language.translated("runs_f_norm")': [(1, "runs_f_norm")],
        'st.radio("Language", key="lang")': [(1, "lang")],  # a registry key as a widget's key=
        'st.button("Go", key="go")': [],  # a widget whose value is only returned
        "st.session_state[keys.LANG]": [],
        'st.session_state[keys.SCROLLED + key] = 1\nst.query_params["lang"]': [],
    }
    for source, expected in cases.items():
        assert literal_keys(source, registry) == expected, source
