"""The source tree parsed once per test run: the rules that read rankgate's code (layers, house rules, numbers,
field names, structure) walk the same ~230 modules, and parsing them is most of their cost. Trees are shared:
never modify one."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "rankgate"


@functools.cache
def parsed(path: Path) -> ast.Module:
    """The module at ``path``, parsed (cached for the whole run)."""
    return ast.parse(path.read_text(encoding="utf-8"), str(path))
