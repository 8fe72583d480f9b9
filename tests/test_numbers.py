"""Numbers are written for people in one module: rankgate.metrics.display (re-exported by
rankgate.render.numbers).

Two rules, checked on the source (parsed, not imported):

1. No module but metrics/display.py defines a private number formatter: a function named ``_pct``,
   ``_percent``, ``_num``, ``_ms``, ``_share``, ``_signed`` or ``_fmt`` (alone or followed by ``_…`` or
   digits: ``_num_ms``, ``_share_ci``, ``_fmt4``) that returns text (annotated ``-> str``, or not
   annotated). A helper named so that returns a number or a flag (``_share(text) -> float``) is not one.
2. No renderer formats a float itself. ``RENDERERS`` are rankgate/report and the modules outside it
   that write sentences for people (findings, gate check notes, the demo's story, assertion
   messages, latency gate notes, trace monitor flags). An f-string field or a ``format(x, spec)``
   call whose spec has a precision or a float type (``:.1%``, ``:.3f``, ``:g``, ``:+.1f``) is
   written with a function of metrics/display.py instead. Plain ``{n:,}`` (a count with thousands
   separators) and alignment specs are allowed. ``ALLOWED`` names the few functions whose numbers
   are not for reading (SVG coordinates), each with why.
"""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .conftest import examples
from .sources import parsed

SRC = Path(__file__).resolve().parents[1] / "src" / "rankgate"
HOME = "metrics/display.py"

FORMATTER_NAME = re.compile(r"^_(pct|percent|num|ms|share|signed|fmt)(_\w+|\d+)?$")
FLOAT_SPEC = re.compile(r"\.|[eEfFgG%]$")

# modules (or folders, ending in /) under rankgate/ that rule 2 reads
RENDERERS = ("render/", "gating/diagnosis.py", "gating/decide.py", "demo/story.py", "testing.py", "experiments/latency.py",
             "traces/monitors.py")

# (module under rankgate/, enclosing function) -> why its format specs are not numbers for people
ALLOWED: dict[tuple[str, str], str] = {
    ("render/traces_html.py", "series_svg"): "SVG coordinates of the inline chart (geometry, one decimal)",
}


def _rel(path: Path) -> str:
    return path.relative_to(SRC).as_posix()


def private_formatters(tree: ast.AST) -> list[tuple[int, str]]:
    """``(line, name)`` of each function that rule 1 forbids."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and FORMATTER_NAME.match(node.name):
            ret = node.returns
            if ret is None or (isinstance(ret, ast.Name) and ret.id == "str") or (
                    isinstance(ret, ast.Constant) and ret.value == "str"):
                out.append((node.lineno, node.name))
    return out


def _spec_text(spec: ast.expr) -> str:
    """The constant parts of a format spec (``.{digits}f`` -> ``.f``)."""
    if isinstance(spec, ast.Constant) and isinstance(spec.value, str):
        return spec.value
    if isinstance(spec, ast.JoinedStr):
        return "".join(v.value for v in spec.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
    return ""


def float_specs(tree: ast.AST) -> list[tuple[int, str, str]]:
    """``(line, enclosing function, spec)`` of each float format spec (rule 2)."""
    out: list[tuple[int, str, str]] = []

    def visit(node: ast.AST, func: str) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            func = node.name if func == "<module>" else func
        if isinstance(node, ast.FormattedValue) and node.format_spec is not None:
            spec = _spec_text(node.format_spec)
            if FLOAT_SPEC.search(spec):
                out.append((node.lineno, func, spec))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "format"
                and len(node.args) == 2):
            spec = _spec_text(node.args[1]) if isinstance(node.args[1], (ast.Constant, ast.JoinedStr)) else "?"
            if spec == "?" or FLOAT_SPEC.search(spec):
                out.append((node.lineno, func, spec))
        for child in ast.iter_child_nodes(node):
            visit(child, func)

    visit(tree, "<module>")
    return out


def _modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if _rel(p) != HOME)


def _tree(path: Path) -> ast.Module:
    return parsed(path)


def test_no_private_number_formatter_outside_display() -> None:
    found = [f"{_rel(p)}:{line}: def {name} formats numbers; use (or add) a function in rankgate/{HOME}"
             for p in _modules() for line, name in private_formatters(_tree(p))]
    assert not found, "\n".join(found)


def test_renderers_format_no_float_themselves() -> None:
    found, used = [], set()
    for p in _modules():
        rel = _rel(p)
        if not rel.startswith(RENDERERS):
            continue
        for line, func, spec in float_specs(_tree(p)):
            if (rel, func) in ALLOWED:
                used.add((rel, func))
                continue
            found.append(f"{rel}:{line} (in {func}): format spec {spec!r}; write the number with "
                         f"rankgate/{HOME} (fmt_share, fmt_score, fmt_ms, fmt_confidence, fmt_sig, …)")
    assert not found, "\n".join(found)
    assert used == set(ALLOWED), f"no longer needed, take off ALLOWED: {sorted(set(ALLOWED) - used)}"


@pytest.mark.parametrize(("source", "bad"), [
    ("def _pct(x: float) -> str:\n    return f'{x:.1%}'\n", True),
    ("def _num(x):\n    return str(x)\n", True),
    ("def _fmt4(x: float) -> str:\n    return ''\n", True),
    ("def _share_ci(ci) -> 'str':\n    return ''\n", True),
    ("class A:\n    def _ms(self) -> str:\n        return ''\n", True),
    ("def _share(text: str) -> float:\n    return 0.0\n", False),
    ("def _numbers(tokens: list) -> str:\n    return ''\n", False),
    ("def _message(x) -> str:\n    return ''\n", False),
    ("def fmt_share(x) -> str:\n    return ''\n", False),
])
def test_private_formatter_rule(source: str, bad: bool) -> None:
    assert bool(private_formatters(ast.parse(source))) is bad


@pytest.mark.parametrize(("source", "bad"), [
    ("x = f'{a:.1%}'", True),
    ("x = f'{a:.3f}'", True),
    ("x = f'{a:g}'", True),
    ("x = f'{a:+.1f}'", True),
    ("x = f'{a:,.0f}'", True),
    ("x = f'{a:.{d}f}'", True),
    ("x = format(a, '.2f')", True),
    ("x = format(a, spec)", True),
    ("x = f'{n:,}'", False),
    ("x = f'{n}'", False),
    ("x = f'{s:>8}'", False),
    ("x = f'{n:d}'", False),
    ("x = format(n, ',')", False),
])
def test_float_spec_rule(source: str, bad: bool) -> None:
    assert bool(float_specs(ast.parse(source))) is bad


# -- what the functions write ----------------------------------------------------------------------------------------
def test_examples() -> None:
    from rankgate.metrics import display as d

    assert (d.fmt_share(0.871), d.fmt_share(0.871, 0), d.fmt_share(0.871, unit=""), d.fmt_share(None)) == \
        ("87.1%", "87%", "87.1", "—")
    assert d.fmt_share_range(0.82, 0.905) == "82.0–90.5%"
    assert d.fmt_share_range(math.nan, 0.9) == "—"
    assert [d.fmt_small_share(x) for x in (0.0, 0.0004, 0.012)] == ["0.0%", "0.04%", "1.2%"]
    assert (d.fmt_score(0.71234), d.fmt_score(0.71234, 4), d.fmt_score(None, missing="n/a")) == ("0.712", "0.7123", "n/a")
    assert d.fmt_score(1234.56789, 4, grouped=True) == "1,234.5679"
    assert (d.fmt_sig(0.95), d.fmt_sig(3.0), d.fmt_sig(1e-06), d.fmt_sig(0.123456, 4)) == ("0.95", "3", "1e-06", "0.1235")
    assert (d.fmt_exact(0.1), d.fmt_exact(None), d.fmt_exact(math.nan)) == ("0.1", "", "")
    assert (d.fmt_exact(3.0), d.fmt_exact(3.0, whole=True), d.fmt_exact(2.5, whole=True)) == ("3.0", "3", "2.5")
    assert (d.fmt_z(3.64), d.fmt_z(-4.1), d.fmt_z(math.inf)) == ("+3.6", "-4.1", "+inf")
    assert (d.fmt_count(12345), d.fmt_count(12345, grouped=False), d.fmt_count(None)) == ("12,345", "12345", "—")
    assert [d.fmt_ms(x) for x in (4.267, 1250.0, None)] == ["4.27 ms", "1,250.0 ms", "—"]
    assert d.fmt_ms(1250.0, 1) == "1250.0 ms"
    assert [d.fmt_ms_change(x) for x in (12.46, -3.04, 0.04, -0.04)] == ["+12.5 ms", "\u22123.0 ms", "0.0 ms", "0.0 ms"]
    assert [d.fmt_unit(u, 2.44) for u in ("per_1k", "ms", "count", "score")] == ["2.4/1k", "2.4 ms", "2", "2.440"]
    assert (d.fmt_confidence(0.975), d.fmt_confidence_exact(0.975), d.fmt_confidence_exact(0.95)) == ("98%", "97.5%", "95%")
    assert (d.fmt_size("recall@5", 0.064), d.fmt_size("ndcg@10", 0.064), d.fmt_size("ndcg@10", None)) == \
        ("6 pp", "0.06", "—")
    assert (d.fmt_answer_value("answer_relevance", 0.8123), d.fmt_answer_value("faithfulness", 0.8123)) == ("0.81", "81.2%")
    # a change of −0.0103 against a limit of 0.01 reads −0.0103, not −0.010
    assert d.fmt_apart("ndcg@10", -0.0103, 0.01, delta=True) == "\u22120.0103"
    assert d.fmt_apart("ndcg@10", -0.05, 0.01, delta=True) == "\u22120.050"
    assert d.fmt_delta_ci_apart("ndcg@10", -0.0003, 0.02) == "\u22120.0003 to +0.020"


@settings(max_examples=examples(100), deadline=None)
@given(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), st.integers(0, 4))
def test_same_text_as_the_format_specs_they_replace(x: float, digits: int) -> None:
    from rankgate.metrics import display as d

    assert d.fmt_share(x, digits) == f"{x:.{digits}%}" == f"{x * 100:.{digits}f}%"
    assert d.fmt_score(x, digits) == f"{x:.{digits}f}"
    assert d.fmt_sig(x, digits + 1) == f"{x:.{digits + 1}g}"
    assert d.fmt_sig(x) == f"{x:g}"
    assert d.fmt_ms(x) == (f"{x:,.2f}" if abs(x) < 10 else f"{x:,.1f}") + " ms"
    assert d.fmt_exact(x) == repr(x)
    if 0 < x <= 1:
        assert d.fmt_confidence(x) == f"{round(x * 100)}%"
