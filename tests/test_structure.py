"""The command line's request type stays in the command line: below it, requests are frozen dataclasses.

``argparse.Namespace`` is what argparse fills; each command module turns it into a flow's request in one
``request(args)``. A module outside ``cli/`` that names it (a fake Namespace built to
call a command, a function taking ``args``) is a second way to run a use case.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from .sources import parsed

SRC = Path(__file__).resolve().parents[1] / "src" / "rankgate"

# Modules allowed to name the Namespace: the command line itself.
ALLOWED = ("cli/", "__main__.py")
# Modules that still do, each named so that no new one slips in beside it.
KNOWN: frozenset[str] = frozenset()


def namespace_uses(source: str | ast.Module) -> list[int]:
    """Lines that name ``argparse.Namespace`` or ``Namespace`` (imported, called or annotated)."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(source) if isinstance(source, str) else source):
        if isinstance(node, ast.Attribute) and node.attr == "Namespace":
            lines.add(node.lineno)
        elif isinstance(node, ast.Name) and node.id == "Namespace":
            lines.add(node.lineno)
        elif isinstance(node, ast.ImportFrom) and any(a.name == "Namespace" for a in node.names):
            lines.add(node.lineno)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("argparse."):
            lines.add(node.lineno)  # a string annotation (``from __future__ import annotations`` keeps them as text)
    return sorted(lines)


def _outside_the_command_line() -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith(ALLOWED):
            continue
        lines = namespace_uses(parsed(path))
        if lines:
            found[rel] = lines
    return found


def test_no_namespace_outside_the_command_line() -> None:
    found = {rel: lines for rel, lines in _outside_the_command_line().items() if rel not in KNOWN}
    assert not found, "argparse.Namespace outside cli/ (build the flow's request instead):\n" + \
        "\n".join(f"src/rankgate/{rel}:{', '.join(map(str, lines))}" for rel, lines in found.items())


def test_known_exceptions_still_exist() -> None:
    assert not KNOWN - set(_outside_the_command_line()), "remove from KNOWN: " + \
        ", ".join(sorted(KNOWN - set(_outside_the_command_line())))


@pytest.mark.parametrize("source, found", [
    ("import argparse\nx = argparse.Namespace(a=1)\n", True),
    ("from argparse import Namespace\n", True),
    ("def f(args: argparse.Namespace) -> None: ...\n", True),
    ("from __future__ import annotations\ndef f(args: 'argparse.Namespace'): ...\n", True),
    ("from dataclasses import dataclass\n@dataclass(frozen=True)\nclass Request:\n    gold: str\n", False),
    ("# a Namespace in a comment is prose\nx = 'Namespace'\n", False),
])
def test_the_scan_sees_every_spelling(source: str, found: bool) -> None:
    assert bool(namespace_uses(source)) == found


def test_only_the_command_line_imports_commands() -> None:
    """The demo and the flows run use cases through requests, never through a command module (no
    ``commands ↔ demo`` loop: a command renders what a flow returns, and nothing calls a command)."""
    from .test_layers import imports_of

    wrong = [f"src/rankgate/{path.relative_to(SRC).as_posix()}:{line}: -> {target}"
             for path in sorted(SRC.rglob("*.py")) if not path.relative_to(SRC).as_posix().startswith(ALLOWED)
             for line, target in imports_of(path) if target.startswith("rankgate.cli")]
    assert not wrong, "\n".join(wrong)
