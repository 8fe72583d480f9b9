"""rankgate 0.1's module paths keep working for one release (CHANGELOG 0.2.0), and nothing of ours uses them.

Issue 33 moved every loose module into the package of its layer. ``rankgate._util.moved`` keeps each old path
importable, with a DeprecationWarning naming the new one; the three old modules that are now packages
(``stats``, ``answers``, ``cli``) give their names from the package.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rankgate._util.moved import CALLABLE, MOVED

ROOT = Path(__file__).resolve().parents[1]
OLD_PATH = re.compile(r"(?<![\w.])(" + "|".join(re.escape(n) for n in sorted(MOVED, key=len, reverse=True)) + r")(?![\w])")


def _old_use(line: str, m: re.Match[str]) -> bool:
    """Whether the match names the old module: ``rankgate.compare`` and ``rankgate.report`` are also functions of
    the public API (``CALLABLE``), so they are the old path only when imported or followed by a submodule."""
    if m.group(1) not in CALLABLE:
        return True
    return line[m.end():].startswith(".") or re.search(r"\b(?:import|from)\s+$", line[:m.start()]) is not None


@pytest.mark.parametrize("line, old", [("rankgate.report(gold, run, out='r.html')", False),
                                       ("`rankgate.compare` returns", False), ("import rankgate.compare", True),
                                       ("from rankgate.report import build", True), ("rankgate.report.build", True),
                                       ("rankgate.engine.evaluate", True)])
def test_the_api_names_that_were_modules_are_not_old_paths(line: str, old: bool) -> None:
    assert any(_old_use(line, m) for m in OLD_PATH.finditer(line)) is old


@pytest.mark.slow  # (the full tier: heavy, and what it guards is covered lighter by default)
def test_an_old_module_imported_leaves_the_api_function_callable(tmp_path: Path) -> None:
    """``import rankgate.report.html`` (0.1's path) puts the old module on the package as ``rankgate.report``: it
    still writes the report when called, and ``rankgate.compare`` still compares."""
    code = ("import warnings, sys\nwarnings.simplefilter('ignore')\nimport rankgate.report.html, rankgate.compare\n"
            "import rankgate\ngold = {'q1': {'a': 1}, 'q2': {'b': 1}}\n"
            "rep = rankgate.report(gold, {'q1': ['a'], 'q2': ['c', 'b']}, out=sys.argv[1], resamples=0)\n"
            "cmp = rankgate.compare(gold, {'q1': ['a'], 'q2': ['b']}, {'q1': ['a'], 'q2': ['c', 'b']}, metrics='mrr',"
            " resamples=0, permutations=0)\n"
            "print(rankgate.report.html.render_html is not None, cmp.row('mrr').delta, rep.k)\n")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "r.html")], capture_output=True, text=True,
                         check=True, cwd=tmp_path).stdout.split()
    assert out == ["True", "-0.25", "5"]
    assert (tmp_path / "r.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_nothing_of_ours_uses_an_old_path() -> None:
    """Source, tests, benchmarks and docs name the new paths; only the table of moves and the changelog name old ones."""
    skip = {ROOT / "src" / "rankgate" / "_util" / "moved.py", Path(__file__).resolve()}
    files = [p for d in ("src", "tests", "benchmarks", "docs", "examples") for p in (ROOT / d).rglob("*")
             if p.suffix in (".py", ".md", ".c", ".pyi", ".toml", ".yaml", ".yml") and p not in skip
             and "egg-info" not in str(p) and "__pycache__" not in p.parts]
    files += [ROOT / "README.md", ROOT / "pyproject.toml", ROOT / "setup.py", ROOT / ".ci" / "run"]
    found = [f"{p.relative_to(ROOT)}:{n}: {m.group(1)} -> {MOVED[m.group(1)]}"
             for p in files if p.exists()
             for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
             for m in OLD_PATH.finditer(line) if _old_use(line, m)]
    assert not found, "old module paths (use the new one):\n" + "\n".join(found[:40])


@pytest.mark.parametrize("old", ["rankgate.engine", "rankgate.gates", "rankgate.report.html", "rankgate.report.comment",
                                 "rankgate.report.exports", "rankgate.report.build", "rankgate.data.formats",
                                 "rankgate.results", "rankgate.compare", "rankgate.redact"])
def test_a_documented_old_path_imports_with_a_warning(old: str) -> None:
    """In a fresh interpreter (the finder is installed by ``import rankgate``): the old module has the new one's
    names, and importing it says where it went."""
    code = (f"import warnings\nwith warnings.catch_warnings(record=True) as seen:\n    warnings.simplefilter('always')\n"
            f"    import {old}\nprint(str(seen[-1].message))\n"
            f"import importlib\n"
            f"old = importlib.import_module('{old}'); new = importlib.import_module('{MOVED[old]}')\n"
            f"print(sorted(n for n in vars(new) if not n.startswith('__')) == sorted(n for n in vars(old) if not n.startswith('__')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out == [f"{old} moved to {MOVED[old]}; the old path works until rankgate 0.3", "True"]


def test_every_move_names_a_module_that_exists() -> None:
    for old, new in MOVED.items():
        assert importlib.util.find_spec(new) is not None, f"{old} -> {new}: no such module"


@pytest.mark.parametrize("package, name, home", [("rankgate.stats", "bootstrap_ci", "rankgate.stats.bootstrap"),
                                                 ("rankgate.cli", "entry", "rankgate.cli.main")])
def test_an_old_module_that_became_a_package_keeps_its_names(package: str, name: str, home: str) -> None:
    module = importlib.import_module(package)
    with pytest.warns(DeprecationWarning, match=f"moved to {re.escape(home)}"):
        value = getattr(module, name)
    assert value is getattr(importlib.import_module(home), name)
