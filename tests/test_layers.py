"""Imports go one way: data → metrics → engine → statistics → decisions → report → commands.

Every module under src/rankgate is parsed (not imported) and each of its imports of another rankgate
module, at the top or inside a function, is checked against the table below: a module may import
modules of its own layer or of a layer below. Imports under ``if TYPE_CHECKING:`` are annotations
only and are not edges. A new top-level module or package must be placed in the table, so that its
place is decided once, here, and not by whatever it happens to import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "rankgate"

# layer number -> the top-level modules and packages of rankgate in it (``""`` is the package's own __init__)
LAYERS: dict[int, tuple[str, ...]] = {
    0: ("errors", "_accel", "_memory", "_pandas_guard", "_jsonable", "atomic", "plugins"),  # no rankgate imports but these
    1: ("data", "corpus", "judges", "judge"),                                      # readers and the models they fill
    2: ("metrics",),                                                               # metric definitions and facts
    3: ("engine", "results", "retrieval", "fusion"),                               # scoring runs
    4: ("stats", "segments", "compare", "sweep", "baseline", "agreement",          # statistics over results,
        "traces", "goldset", "answers", "pooling"),                               # traces, gold sets, answers, bounds
    5: ("gate_config", "gates", "diagnosis", "testing", "experiments", ""),        # decisions (and the public API)
    6: ("report",),                                                                # renderers
    7: ("commands", "cli", "__main__", "demo"),                                    # the command line
}
NAMES = {"data": 1, "metrics": 2, "engine": 3, "statistics": 4, "decisions": 5, "report": 6, "commands": 7}
LAYER_OF = {name: layer for layer, names in LAYERS.items() for name in names}

# A package may be held to less than its layer allows: the judge talks to model APIs and stays small
# (rankgate.errors, the module:Class loader, and the data layer's readers for its label files).
ONLY: dict[str, frozenset[str]] = {"judges": frozenset({"errors", "plugins", "data"}),
                                   "judge": frozenset({"errors", "plugins", "data"})}

# Edges that break the rules today, each named so that it is seen and no new one slips in beside it.
KNOWN: frozenset[tuple[str, str]] = frozenset()


def _top(module: str) -> str:
    """``rankgate.report.html`` -> ``report``; ``rankgate`` -> ``""``."""
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


def imports_of(path: Path, root: Path = SRC) -> list[tuple[int, str]]:
    """``(line, imported rankgate module)`` for every import of rankgate in the file."""
    module, is_pkg = _module_name(path, root)
    package = module if is_pkg else module.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    skip = _type_checking_lines(tree)
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
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


def _files() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py"))


def test_every_module_has_a_layer() -> None:
    unplaced = sorted({_top(_module_name(p)[0]) for p in _files()} - set(LAYER_OF))
    assert not unplaced, f"place these in LAYERS of tests/test_layers.py: {unplaced}"


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
    upper = {"report", "commands", "cli", "__main__", "demo"}
    wrong = [f"{p.relative_to(SRC.parent)}:{line}: -> {t}" for p in _files() if _top(_module_name(p)[0]) not in upper
             for line, t in imports_of(p) if _top(t) in upper]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("source, allowed", [
    ("from .report.numbers import fmt_value\n", False),
    ("def f():\n    from ..commands import evaluate\n", False),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .report.numbers import fmt_value\n", True),
    ("from .metrics.display import fmt_value\n", True),
])
def test_the_walker_sees_lazy_imports(tmp_path: Path, source: str, allowed: bool) -> None:
    """The checker itself: an import inside a function counts, one under TYPE_CHECKING does not."""
    fake = tmp_path / "rankgate"
    (fake / "sub").mkdir(parents=True)
    path = fake / "sub" / "mod.py" if source.startswith("def") else fake / "segments.py"
    path.write_text(source, encoding="utf-8")
    targets = {_top(t) for _, t in imports_of(path, fake)}
    assert (not targets & {"report", "commands"}) == allowed


def test_known_exceptions_still_exist() -> None:
    """An exception that is gone is taken off the list, so the list never hides a new edge."""
    edges = {(_module_name(p)[0], t) for p in _files() for _, t in imports_of(p)}
    assert not KNOWN - edges, f"remove from KNOWN: {sorted(KNOWN - edges)}"


def test_layer_names_follow_the_documented_order() -> None:
    assert list(NAMES) == ["data", "metrics", "engine", "statistics", "decisions", "report", "commands"]
    assert sorted(NAMES.values()) == list(NAMES.values())
