"""Imports go one way: _util → _native → model, metrics → io → scoring → stats → capabilities → gating → flows → render → cli.

Every module under src/rankgate is parsed (not imported) and each of its imports of another rankgate
module, at the top or inside a function, is checked against the table below: a module may import
modules of its own layer or of a layer below. Imports under ``if TYPE_CHECKING:`` are annotations
only and are not edges. A new top-level module or package must be placed in the table, so that its
place is decided once, here, and not by whatever it happens to import; an entry that names no module
or package fails, so the table never describes code that is gone. Modules do not import each other
in a circle, inside a package either: a cycle is printed as the modules in order, with the line of
each import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from .sources import parsed

SRC = Path(__file__).resolve().parents[1] / "src" / "rankgate"

# layer number -> the packages of rankgate in it. The top level holds packages only, plus the four modules
# of TOP_MODULES; a new module there fails test_the_top_level_holds_packages_only.
LAYERS: dict[int, tuple[str, ...]] = {
    0: ("_util", "errors", ""),                          # helpers that import only errors; the package's own __init__
    1: ("_native",),                                     # the only importer of compiled code
    2: ("model", "metrics"),                             # nouns (gold sets, runs, results, the ranking rule), metrics
    3: ("io",),                                          # the format table, every reader, detection
    4: ("scoring",),                                     # scoring a run against a gold set
    5: ("stats",),                                       # statistics over results
    6: ("answers", "traces", "goldset", "corpus", "retrieval", "judges", "labels"),  # capabilities
    7: ("gating", "experiments", "testing", "history"),  # decisions: gates, component experiments, the pytest helpers, run history
    8: ("flows",),                                       # use cases: request in, result out
    9: ("render",),                                      # renderers
    10: ("cli", "__main__", "demo"),                     # the command line
}
NAMES = {"util": 0, "native": 1, "model": 2, "io": 3, "scoring": 4, "statistics": 5, "capabilities": 6, "decisions": 7,
         "flows": 8, "render": 9, "cli": 10}
# The modules allowed at the top beside the packages (``""``: the package's own __init__).
TOP_MODULES = frozenset({"", "__main__", "errors", "testing"})
LAYER_OF = {name: layer for layer, names in LAYERS.items() for name in names}

# A package may be held to less than its layer allows: the judge talks to model APIs and stays small
# (rankgate.errors, rankgate._util.redact, the module:Class loader, the declared parameter bounds, and the data
# layer's readers for its label files).
ONLY: dict[str, frozenset[str]] = {"judges": frozenset({"errors", "_util", "io"}), "_util": frozenset({"errors"})}

# Edges that break the rules today, each named so that it is seen and no new one slips in beside it.
KNOWN: frozenset[tuple[str, str]] = frozenset()

# The one lasting exception to "no import cycles": a registry that imports its built-in plug-ins so
# that they register themselves (they import the registry to do so). Imports inside these functions
# are not edges of the cycle check: module -> function.
DISCOVERY: dict[str, str] = {"rankgate.metrics.registry": "_load_builtin"}

# Temporary exceptions, while these modules are being reworked: (module, imported module) -> why.
# Take each off when its loop is gone (test_known_exceptions_still_exist says when).
CYCLE_EXCEPTIONS: dict[tuple[str, str], str] = {}


def _top(module: str) -> str:
    """``rankgate.render.html`` -> ``report``; ``rankgate`` -> ``""``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _module_name(path: Path, root: Path = SRC) -> tuple[str, bool]:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    is_pkg = parts[-1] == "__init__"
    if is_pkg:
        parts = parts[:-1]
    return ".".join(parts), is_pkg


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            t = node.test
            name = t.id if isinstance(t, ast.Name) else t.attr if isinstance(t, ast.Attribute) else None
            if name == "TYPE_CHECKING":
                for child in node.body:
                    for sub in ast.walk(child):
                        if hasattr(sub, "lineno"):
                            lines.add(sub.lineno)
    return lines


def _parse(path: Path) -> ast.Module:
    return parsed(path)


def imports_of(path: Path, root: Path = SRC) -> list[tuple[int, str]]:
    """``(line, imported rankgate module)`` for every import of rankgate in the file."""
    module, is_pkg = _module_name(path, root)
    package = module if is_pkg else module.rsplit(".", 1)[0]
    tree = _parse(path)
    skip = _type_checking_lines(tree)
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            target = _target(node, package)
            if target == "rankgate":
                # ``from rankgate import x`` / ``from .. import x``: x may be a submodule
                for alias in node.names:
                    sub = f"rankgate.{alias.name}"
                    out.append((node.lineno, sub if _top(sub) in LAYER_OF else "rankgate"))
            elif target.startswith("rankgate."):
                out.append((node.lineno, target))
        elif isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "rankgate")
    return out


def _target(node: ast.ImportFrom, package: str) -> str:
    """The absolute module a ``from … import`` reads from, relative levels resolved against ``package``."""
    if not node.level:
        return node.module or ""
    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _files(root: Path = SRC) -> list[Path]:
    return sorted(p for p in root.rglob("*.py"))


def module_imports(path: Path, root: Path = SRC, modules: frozenset[str] = frozenset()) -> list[tuple[int, str]]:
    """``(line, imported rankgate module)`` at module granularity: ``from .a import b`` is an import of
    ``a.b`` when that is a module (one of ``modules``), else of ``a`` (its ``__init__``). Imports in a
    plug-in discovery function (DISCOVERY) are left out."""
    module, is_pkg = _module_name(path, root)
    package = module if is_pkg else module.rsplit(".", 1)[0]
    tree = _parse(path)
    skip = _type_checking_lines(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == DISCOVERY.get(module):
            skip.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            target = _target(node, package)
            if target.split(".")[0] == "rankgate":
                out.extend((node.lineno, f"{target}.{a.name}" if f"{target}.{a.name}" in modules else target)
                           for a in node.names)
        elif isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "rankgate")
    return out


def import_graph(root: Path = SRC) -> dict[str, dict[str, int]]:
    """module -> {imported module: first line}, every rankgate module, lazy imports included."""
    paths = {_module_name(p, root)[0]: p for p in _files(root)}
    modules = frozenset(paths)
    graph: dict[str, dict[str, int]] = {}
    for module, path in paths.items():
        edges: dict[str, int] = {}
        for line, target in sorted(module_imports(path, root, modules)):
            if target != module and target in modules and (module, target) not in CYCLE_EXCEPTIONS:
                edges.setdefault(target, line)
        graph[module] = edges
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """One shortest cycle through each group of modules that import each other, as the modules in
    order (the first one repeated at the end)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    out = []
    for group in sorted(groups, key=min):
        start = min(group)
        came: dict[str, str] = {}
        frontier = [start]
        while start not in came:  # breadth first, back to the start, inside the group
            nxt = []
            for v in frontier:
                for w in sorted(graph[v]):
                    if w in group and w not in came:
                        came[w] = v
                        nxt.append(w)
            frontier = nxt
        path = [start]
        while came[path[-1]] != start:
            path.append(came[path[-1]])
        out.append([start, *reversed(path[1:]), start])
    return out


def show_cycle(cycle: list[str], graph: dict[str, dict[str, int]]) -> str:
    steps = [f"{a.removeprefix('rankgate.')} (line {graph[a][b]})" for a, b in zip(cycle, cycle[1:])]
    return " -> ".join([*steps, cycle[-1].removeprefix("rankgate.")])


def test_the_top_level_holds_packages_only() -> None:
    """Every module at the top of rankgate is a package, or one of TOP_MODULES: a new module goes in the package of
    its layer (docs/architecture.md, "Where a feature lives")."""
    loose = sorted(p.name for p in SRC.glob("*.py") if _module_name(p)[0].removeprefix("rankgate").lstrip(".")
                   not in TOP_MODULES)
    assert not loose, f"modules at the top of src/rankgate (move each into the package of its layer): {loose}"
    named = {name for names in LAYERS.values() for name in names}
    assert all((SRC / name / "__init__.py").exists() for name in named - TOP_MODULES - {"errors"}), \
        "LAYERS names packages only (and the modules of TOP_MODULES)"


def test_every_module_has_a_layer() -> None:
    unplaced = sorted({_top(_module_name(p)[0]) for p in _files()} - set(LAYER_OF))
    assert not unplaced, f"place these in LAYERS of tests/test_layers.py: {unplaced}"


def test_every_table_entry_names_a_module() -> None:
    """A name in LAYERS or ONLY that is no module or package of rankgate is stale: take it off."""
    present = {_top(_module_name(p)[0]) for p in _files()}
    stale = sorted((set(LAYER_OF) | set(ONLY) | {n for names in ONLY.values() for n in names}) - present)
    assert not stale, f"remove from LAYERS/ONLY of tests/test_layers.py (no such module or package): {stale}"


def test_no_import_cycles() -> None:
    """No two modules import each other, directly or around a loop (lazy imports count)."""
    graph = import_graph()
    found = cycles(graph)
    assert not found, "modules that import each other in a circle (move what both need to a module they both import):\n" + \
        "\n".join(show_cycle(c, graph) for c in found)


@pytest.mark.parametrize("files, expected", [
    ({"a.py": "from . import b\n", "b.py": "def f():\n    from .c import x\n", "c.py": "from .a import y\n"},
     [["rankgate.a", "rankgate.b", "rankgate.c", "rankgate.a"]]),
    ({"a.py": "from . import b\n", "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n"},
     []),
    ({"p/__init__.py": "from .q import x\n", "p/q.py": "from rankgate.p import r\n", "p/r.py": "from . import q\n"},
     [["rankgate.p.q", "rankgate.p.r", "rankgate.p.q"]]),
])
def test_the_cycle_finder(tmp_path: Path, files: dict[str, str], expected: list[list[str]]) -> None:
    """The checker itself: a loop through a lazy import is found and printed in order; an import under
    TYPE_CHECKING is not an edge; ``from pkg import mod`` is an import of the module, not of the package."""
    root = tmp_path / "rankgate"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    (root / "__init__.py").touch()
    assert cycles(import_graph(root)) == expected


def test_imports_go_one_way() -> None:
    wrong: list[str] = []
    for path in _files():
        module, _ = _module_name(path)
        src = _top(module)
        for line, target in imports_of(path):
            dst = _top(target)
            if dst == src or (module, target) in KNOWN:
                continue
            rel = f"{path.relative_to(SRC.parent)}:{line}: {module} -> {target}"
            if src in ONLY and dst not in ONLY[src]:
                wrong.append(f"{rel} ({src} may import only {sorted(ONLY[src])})")
            elif LAYER_OF.get(dst, 99) > LAYER_OF.get(src, -1):
                wrong.append(f"{rel} (layer {LAYER_OF.get(src)} imports layer {LAYER_OF.get(dst)})")
    assert not wrong, "imports against the layer order:\n" + "\n".join(wrong)


def test_core_never_imports_renderers_or_commands() -> None:
    """The two edges the layering exists to forbid, said on their own."""
    upper = {"render", "cli", "__main__", "demo"}
    wrong = [f"{p.relative_to(SRC.parent)}:{line}: -> {t}" for p in _files() if _top(_module_name(p)[0]) not in upper
             for line, t in imports_of(p) if _top(t) in upper]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("source, allowed", [
    ("from .render.numbers import fmt_value\n", False),
    ("def f():\n    from ..cli import evaluate\n", False),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .render.numbers import fmt_value\n", True),
    ("from .metrics.display import fmt_value\n", True),
])
def test_the_walker_sees_lazy_imports(tmp_path: Path, source: str, allowed: bool) -> None:
    """The checker itself: an import inside a function counts, one under TYPE_CHECKING does not."""
    fake = tmp_path / "rankgate"
    (fake / "sub").mkdir(parents=True)
    path = fake / "sub" / "mod.py" if source.startswith("def") else fake / "segments.py"
    path.write_text(source, encoding="utf-8")
    targets = {_top(t) for _, t in imports_of(path, fake)}
    assert (not targets & {"render", "cli"}) == allowed


def test_config_readers_follow_the_layers() -> None:
    """gate_config reaches the readers other areas own through its READERS table, not an import: each
    named function exists, and its module sits at or below gate_config's layer."""
    from rankgate.gating.config import READERS

    for what, ref in READERS.items():
        module, name = ref.split(":")
        path = SRC.parent / (module.replace(".", "/") + ".py")
        path = path if path.exists() else path.with_suffix("") / "__init__.py"
        assert f"\ndef {name}(" in path.read_text(encoding="utf-8"), f"READERS[{what!r}]: {ref} is not defined"
        assert LAYER_OF[_top(module)] <= LAYER_OF["gating"], f"READERS[{what!r}]: {ref} is above gating"


@pytest.mark.slow  # (the full tier: heavy, and what it guards is covered lighter by default)
def test_known_exceptions_still_exist() -> None:
    """An exception that is gone (or no longer closes a loop) is taken off the list, so the list never
    hides a new edge."""
    edges = {(_module_name(p)[0], t) for p in _files() for _, t in imports_of(p)}
    assert not KNOWN - edges, f"remove from KNOWN: {sorted(KNOWN - edges)}"
    modules = frozenset(_module_name(p)[0] for p in _files())
    assert all(m in modules and f"def {f}(" in (SRC.parent / (m.replace(".", "/") + ".py")).read_text(encoding="utf-8")
               for m, f in DISCOVERY.items()), f"DISCOVERY names a module or function that is gone: {DISCOVERY}"
    graph = import_graph()

    def closes_a_loop(source: str, target: str) -> bool:  # the target still leads back to the source
        seen, todo = {target}, [target]
        while todo:
            for w in graph.get(todo.pop(), {}):
                if w not in seen:
                    seen.add(w)
                    todo.append(w)
        return source in seen

    imported = {(_module_name(p)[0], t) for p in _files() for _, t in module_imports(p, SRC, modules)}
    gone = sorted(edge for edge in CYCLE_EXCEPTIONS if edge not in imported or not closes_a_loop(*edge))
    assert not gone, f"remove from CYCLE_EXCEPTIONS: {gone}"


def test_layer_names_follow_the_documented_order() -> None:
    assert list(NAMES) == ["util", "native", "model", "io", "scoring", "statistics", "capabilities", "decisions", "flows",
                           "render", "cli"]
    assert sorted(NAMES.values()) == list(NAMES.values())
