"""Rules of the source tree that keep the run options values and the requests Python (issue 33).

Every module under src/rankgate is parsed, not imported:

* one name for the resample count: no parameter is named ``n_resamples`` (it is ``resamples``, as the option,
  ``Statistics.resamples`` and summary.json say);
* the scoring options travel as one value: outside ``scoring/`` no signature takes both ``doc_sep`` and ``dedupe``
  (it takes a ``Scoring``);
* requests speak Python: no string literal under ``flows/`` starts with ``--`` (a flow names the request's field;
  the command line's one flag ↔ field table, ``rankgate.cli.options.FLAGS``, turns it into the flag);
* results are typed: no field of a flow's request or result dataclass is annotated ``Any`` (or ``Any | None``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from .sources import parsed

SRC = Path(__file__).resolve().parents[1] / "src" / "rankgate"


def _trees(under: Path = SRC) -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(under.rglob("*.py")):
        yield path, parsed(path)


def _functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    a = fn.args
    return {p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]}


def _where(path: Path, node: ast.AST) -> str:
    rel = path.relative_to(SRC).as_posix() if path.is_relative_to(SRC) else path.name
    return f"src/rankgate/{rel}:{getattr(node, 'lineno', 0)}"


def parameters_named(name: str, under: Path = SRC) -> list[str]:
    return [f"{_where(p, fn)} {fn.name}({name}=…)" for p, tree in _trees(under) for fn in _functions(tree)
            if name in _params(fn)]


def scoring_spelled_out(under: Path = SRC) -> list[str]:
    return [f"{_where(p, fn)} {fn.name}(doc_sep=…, dedupe=…)" for p, tree in _trees(under)
            if p.relative_to(under).parts[0] != "scoring" for fn in _functions(tree)
            if {"doc_sep", "dedupe"} <= _params(fn)]


def flag_literals(under: Path = SRC / "flows") -> list[str]:
    found: dict[str, str] = {}  # one per line (an f-string's first part is also a constant of its own)
    for p, tree in _trees(under):
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("--"):
                found.setdefault(_where(p, node), f"{_where(p, node)} {node.value[:50]!r}")
            elif isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant) \
                    and str(node.values[0].value).startswith("--"):
                found[_where(p, node)] = f"{_where(p, node)} f{str(node.values[0].value)[:50]!r}…"
    return list(found.values())


def _is_dataclass(cls: ast.ClassDef) -> bool:
    for d in cls.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if (isinstance(target, ast.Name) and target.id == "dataclass") or \
                (isinstance(target, ast.Attribute) and target.attr == "dataclass"):
            return True
    return False


def _names_any(annotation: ast.expr) -> bool:
    """The annotation is ``Any``, or a union with ``Any`` in it (``Any | None``): a value whose type is not said.
    ``Any`` inside a container of JSON-shaped data (``Mapping[str, Any]``) is the shape of that data, not a hidden
    type, and passes."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return False
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _names_any(annotation.left) or _names_any(annotation.right)
    if isinstance(annotation, ast.Subscript) and isinstance(annotation.value, ast.Name) and \
            annotation.value.id in ("Optional", "Union"):
        inner = annotation.slice
        return any(_names_any(e) for e in (inner.elts if isinstance(inner, ast.Tuple) else [inner]))
    return (isinstance(annotation, ast.Name) and annotation.id == "Any") or \
        (isinstance(annotation, ast.Attribute) and annotation.attr == "Any")


def any_fields(under: Path = SRC / "flows") -> list[str]:
    """Fields annotated ``Any`` (alone or in a union) of the dataclasses whose name ends in Request or
    Result (or is a flow's Evaluation), in the flows' modules."""
    found = []
    for p, tree in _trees(under):
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and _is_dataclass(n)):
            if not cls.name.endswith(("Request", "Result", "Evaluation")):
                continue
            for stmt in cls.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and _names_any(stmt.annotation):
                    found.append(f"{_where(p, stmt)} {cls.name}.{stmt.target.id}: {ast.unparse(stmt.annotation)}")
    return found


def test_one_name_for_the_resample_count() -> None:
    found = parameters_named("n_resamples")
    assert not found, "a parameter named n_resamples (name it resamples):\n" + "\n".join(found)


def test_scoring_options_travel_as_one_value() -> None:
    found = scoring_spelled_out()
    assert not found, "doc_sep and dedupe spelled out outside scoring/ (take a Scoring):\n" + "\n".join(found)


def test_flows_name_fields_not_flags() -> None:
    found = flag_literals()
    assert not found, ('"--" literals under flows/ (raise naming the request field; rankgate.cli.options.FLAGS '
                       "gives the flag):\n" + "\n".join(found))


def test_flow_requests_and_results_are_typed() -> None:
    found = any_fields()
    assert not found, "Any on a flow's request or result field (import the type under TYPE_CHECKING):\n" + "\n".join(found)


@pytest.mark.parametrize("files, check, expected", [
    ({"a.py": "def f(x, n_resamples=2000):\n    pass\n"}, lambda r: parameters_named("n_resamples", r), 1),
    ({"a.py": "def f(x, *, resamples=2000):\n    pass\n"}, lambda r: parameters_named("n_resamples", r), 0),
    ({"flows/a.py": "def f(doc_sep, dedupe):\n    pass\n"}, scoring_spelled_out, 1),
    ({"scoring/a.py": "def f(doc_sep, dedupe):\n    pass\n"}, scoring_spelled_out, 0),
    ({"flows/a.py": "def f(doc_sep):\n    pass\n"}, scoring_spelled_out, 0),
    ({"flows/a.py": "raise ValueError('--out needs a file')\n"}, lambda r: flag_literals(r / "flows"), 1),
    ({"flows/a.py": "x = 3\nraise ValueError(f'--seed {x}')\n"}, lambda r: flag_literals(r / "flows"), 1),
    ({"flows/a.py": "raise ValueError('out: needs a file -- really')\n"}, lambda r: flag_literals(r / "flows"), 0),
    ({"flows/a.py": "from dataclasses import dataclass\n@dataclass\nclass XRequest:\n    a: 'Any | None'\n"},
     lambda r: any_fields(r / "flows"), 1),
    ({"flows/a.py": "from dataclasses import dataclass\n@dataclass(frozen=True)\nclass XResult:\n    a: Optional[Any]\n"},
     lambda r: any_fields(r / "flows"), 1),
    ({"flows/a.py": "from dataclasses import dataclass\n@dataclass(frozen=True)\nclass XResult:\n    a: Mapping[str, Any]\n"},
     lambda r: any_fields(r / "flows"), 0),
    ({"flows/a.py": "from dataclasses import dataclass\n@dataclass\nclass XResult:\n    a: 'Gold | None'\n"},
     lambda r: any_fields(r / "flows"), 0),
])
def test_the_checkers(tmp_path: Path, files: dict[str, str], check, expected: int) -> None:  # type: ignore[no-untyped-def]
    """Each checker finds its case and passes the near miss."""
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert len(check(tmp_path)) == expected


def test_the_ship_criteria_evaluate_block_is_applied_in_one_function() -> None:
    """``gating.config.evaluate_options`` merges a config's ``evaluate:`` block with the options given; nothing else
    reads the block (``cfg.evaluate`` / ``config.evaluate``)."""
    import re

    found = [f"src/rankgate/{p.relative_to(SRC).as_posix()}:{n}" for p in sorted(SRC.rglob("*.py"))
             if p.relative_to(SRC).as_posix() != "gating/config.py"
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"\b(cfg|config)\.evaluate\b(?!\()", line)]
    assert not found, "the evaluate: block read outside gating.config.evaluate_options:\n" + "\n".join(found)


def test_evaluate_options_given_values_win_and_none_is_not_given() -> None:
    from rankgate.gating.config import GateConfig, evaluate_options

    cfg = GateConfig(gates=(), evaluate={"k": 10, "level": "doc", "ties": "id"})
    assert evaluate_options(cfg, {"k": 3, "level": None, "doc_sep": "|"}) == {"k": 3, "level": "doc", "ties": "id",
                                                                             "doc_sep": "|"}
    assert evaluate_options(None, {"k": None}) == {}
    assert evaluate_options(cfg) == {"k": 10, "level": "doc", "ties": "id"}


# -- below the flows, too: an error a Python caller can get names the field, not the flag ---------------------

#: Errors outside cli/ whose message may start with a flag, each with why (none: every one names a field).
FLAG_MESSAGES_KEPT: dict[str, str] = {}


def _error_classes(under: Path) -> set[str]:
    """RankgateError and every class that derives from it (by the names of its bases), anywhere under ``under``."""
    bases = {cls.name: {b.id if isinstance(b, ast.Name) else b.attr for b in cls.bases
                        if isinstance(b, (ast.Name, ast.Attribute))}
             for _, tree in _trees(under) for cls in ast.walk(tree) if isinstance(cls, ast.ClassDef)}
    found = {"RankgateError"}
    while grown := {name for name, of in bases.items() if of & found} - found:
        found |= grown
    return found


def _starts_with_flag(message: ast.expr) -> bool:
    """The message literal starts with ``--``: a string, an f-string, or the left end of ``"…" + …``."""
    while isinstance(message, ast.BinOp) and isinstance(message.op, ast.Add):
        message = message.left
    if isinstance(message, ast.JoinedStr) and message.values:
        message = message.values[0]
    return isinstance(message, ast.Constant) and isinstance(message.value, str) and message.value.startswith("--")


def error_flag_messages(under: Path = SRC) -> list[str]:
    """Where a module outside cli/ builds a rankgate error (UsageError, InputError, …) whose message starts
    with a flag. The command line says a field as its flag (rankgate.cli.options.FLAGS, via errors.F)."""
    classes = _error_classes(under)
    found = []
    for p, tree in _trees(under):
        if p.relative_to(under).parts[0] == "cli":
            continue
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and node.args):
                continue
            name = node.func.id if isinstance(node.func, ast.Name) else \
                node.func.attr if isinstance(node.func, ast.Attribute) else ""
            if name in classes and _starts_with_flag(node.args[0]):
                where = _where(p, node)
                if where.partition(":")[0] not in FLAG_MESSAGES_KEPT:
                    found.append(f"{where} {name}({ast.unparse(node.args[0])[:60]}…)")
    return found


def test_errors_below_the_command_line_name_fields_not_flags() -> None:
    found = error_flag_messages()
    assert not found, ("errors outside cli/ whose message starts with a flag (mark the field with "
                       "rankgate.errors.F; rankgate.cli.options.FLAGS gives the flag):\n" + "\n".join(found))


@pytest.mark.parametrize("text, expected", [
    ("class RankgateError(Exception): ...\nclass UsageError(RankgateError): ...\nclass MyError(UsageError): ...\n"
     "raise MyError(f'--n must be at least 1; got {n}')\n", 1),
    ("from rankgate.errors import InputError\nraise errors.InputError('--gold' + ' is empty', path='g')\n", 1),
    ("raise UsageError(f'{F.n} must be at least 1; got {n}')\n", 0),
    ("raise UsageError('n must be at least 1', hint='--n 5')\n", 0),  # (a hint is not the message)
    ("raise ValueError('--n must be at least 1')\n", 0),  # (not a rankgate error)
])
def test_the_error_flag_checker(tmp_path: Path, text: str, expected: int) -> None:
    (tmp_path / "a.py").write_text("class RankgateError(Exception): ...\nclass UsageError(RankgateError): ...\n"
                                   "class InputError(RankgateError): ...\n" + text, encoding="utf-8")
    (tmp_path / "cli").mkdir()
    (tmp_path / "cli" / "b.py").write_text(text, encoding="utf-8")  # (the command line's own words are its own)
    assert len(error_flag_messages(tmp_path)) == expected
