"""Command modules do not import each other: what two commands share lives in a helper.

Every file under src/rankgate/cli is parsed (not imported). A command module is one that
``rankgate`` runs (``evaluate.py``, ``gold.py``, …); files named ``_*.py``, ``options.py`` and
``outputs.py`` are helpers. An import of a command module from any other file of the package (helpers included), at
the top or inside a function, is a second place a command's code is reached from: move what is
shared into ``cli/options.py`` (options and their checks) or a ``_*.py`` helper.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

COMMANDS = Path(__file__).resolve().parents[1] / "src" / "rankgate" / "cli"
HELPERS = ("__init__", "options", "outputs", "main")  # main: the entry point that registers every command

# Edges that break the rule, each named so that no new one slips in beside it: (importing module,
# imported command module).
KNOWN: frozenset[tuple[str, str]] = frozenset()


def is_command(name: str) -> bool:
    return not name.startswith("_") and name not in HELPERS


def command_imports(source: str, package: str = "rankgate.cli") -> list[tuple[int, str]]:
    """``(line, command module)`` for every import of a command module in ``source``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                base = node.module
            elif node.level == 0 and node.module and node.module.startswith(package + "."):
                base = node.module[len(package) + 1:]
            elif node.level == 0 and node.module == package:
                base = None
            else:
                continue
            if base:  # from .evaluate import x / from rankgate.cli.evaluate import x
                found.append((node.lineno, base.split(".")[0]))
            else:  # from . import evaluate
                found.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith(package + "."):
                    found.append((node.lineno, a.name[len(package) + 1:].split(".")[0]))
    return [(line, name) for line, name in found if is_command(name)]


def _edges() -> dict[tuple[str, str], list[int]]:
    edges: dict[tuple[str, str], list[int]] = {}
    for path in sorted(COMMANDS.glob("*.py")):
        for line, target in command_imports(path.read_text(encoding="utf-8")):
            if target != path.stem:
                edges.setdefault((path.stem, target), []).append(line)
    return edges


def test_no_command_module_imports_another() -> None:
    wrong = {edge: lines for edge, lines in _edges().items() if edge not in KNOWN}
    assert not wrong, "a command module is imported by another module of cli/ (move what they share into " \
        "cli/options.py or a _*.py helper):\n" + "\n".join(
            f"src/rankgate/cli/{src}.py:{', '.join(map(str, lines))} imports {dst}" for (src, dst), lines in wrong.items())


def test_known_edges_still_exist() -> None:
    stale = KNOWN - set(_edges())
    assert not stale, f"remove from KNOWN in tests/test_command_modules.py: {sorted(stale)}"


def test_every_command_of_the_cli_is_a_command_module() -> None:
    from rankgate.cli.main import COMMANDS as NAMES

    modules = {name.replace("-", "_") for name in NAMES}
    assert all(is_command(m) and (COMMANDS / f"{m}.py").is_file() for m in modules)
    assert {p.stem for p in COMMANDS.glob("*.py") if is_command(p.stem)} == modules


@pytest.mark.parametrize("source, found", [
    ("from .evaluate import add_input_options\n", [(1, "evaluate")]),
    ("def f():\n    from .judge import check_judge_counts\n", [(2, "judge")]),
    ("from . import gold, options\n", [(1, "gold")]),
    ("from rankgate.cli.gate import run\n", [(1, "gate")]),
    ("import rankgate.cli.report\n", [(1, "report")]),
    ("from rankgate.cli import answers\n", [(1, "answers")]),
    ("from .options import add_gold\nfrom ._whatif import components_for\nfrom ..stats import x\n", []),
])
def test_the_scan_sees_every_spelling(source: str, found: list[tuple[int, str]]) -> None:
    assert command_imports(source) == found
