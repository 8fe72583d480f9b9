"""Rules the test suite keeps about itself.

No test asserts on a wall clock: a bound on elapsed time fails on a busy runner and passes on a fast one
whatever the code does. Tests count operations instead; times are measured in ``benchmarks/``.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CLOCKS = {"perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "time_ns"}


def _reads_clock(node: ast.AST, tainted: set[str]) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr in CLOCKS:
            base = sub.func.value
            if isinstance(base, ast.Name) and base.id == "time":
                return True
        if isinstance(sub, ast.Name) and sub.id in tainted:
            return True
    return False


def wall_clock_assertions(source: str) -> list[int]:
    """Lines of ``assert`` statements that depend on a clock reading (directly or through a variable)."""
    found: list[int] = []
    for func in ast.walk(ast.parse(source)):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            continue
        tainted: set[str] = set()
        for node in ast.walk(func):
            if isinstance(node, ast.Assign) and _reads_clock(node.value, tainted):
                tainted.update(t.id for t in node.targets if isinstance(t, ast.Name))
        for node in ast.walk(func):
            if isinstance(node, ast.Assert) and _reads_clock(node.test, tainted):
                found.append(node.lineno)
    return sorted(set(found))


# Sample test sources the rule is tried on, kept as data (the clock calls are spelt with CLOCK so that
# no line of this file reads like a clock assertion to a text search).
CLOCK = "time." + "perf_counter()"
INDIRECT = f"import time\ndef f():\n    s = {CLOCK}\n    g()\n    took = {CLOCK} - s\n    assert took < 3\n"
MONOTONIC = "time." + "monotonic()"
DIRECT = f"import time\ndef f():\n    assert {MONOTONIC} > 0\n"


def test_the_rule_finds_direct_and_indirect_clock_assertions():
    assert wall_clock_assertions(INDIRECT) == [6]
    assert wall_clock_assertions(DIRECT) == [3]
    assert wall_clock_assertions("def f():\n    n = len(x)\n    assert n == 2\n") == []


def test_no_test_asserts_on_a_wall_clock():
    offenders = [f"{path.name}:{line}" for path in sorted(TESTS.glob("test_*.py"))
                 for line in wall_clock_assertions(path.read_text(encoding="utf-8"))]
    assert not offenders, ("tests assert on elapsed time, which fails on a busy machine; count operations "
                           f"or measure in benchmarks/: {', '.join(offenders)}")
