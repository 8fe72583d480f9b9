"""Requests speak Python (issue 33): a flow's refusal names the request's fields, and the command line says the
same refusal with its options, from one flag <-> field table (rankgate.cli.options.FLAGS).

The command line's words must not change: each refusal below is checked through ``rankgate`` against the line it
printed before the flows named fields.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib
import pkgutil
from pathlib import Path

import pytest

from rankgate.cli.main import main
from rankgate.cli.options import COMMAND_FLAGS, FLAGS, flag, said_with_flags
from rankgate.errors import F, UsageError

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "rankgate"
DEMO = SRC / "demo" / "data"
GOLD, RUN = str(DEMO / "gold.jsonl"), str(ROOT / "tests" / "data" / "report" / "run.jsonl")


def _refusal(make) -> UsageError:
    with pytest.raises(UsageError) as info:
        make()
    return info.value


def _said(argv: list[str], capsys) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    return capsys.readouterr().err.strip()


def test_a_flow_names_the_field_and_the_command_line_the_option(tmp_path, capsys) -> None:
    from rankgate.flows.answers import AnswersRequest

    error = _refusal(lambda: AnswersRequest("a.jsonl", "g.jsonl", calibration=True))
    assert str(error) == "calibration needs human (the human verdicts the judge is measured against)"
    assert error.fields == ("calibration", "human")
    assert _said(["answers", "--answers", "a.jsonl", "--gold", GOLD, "--calibration-out", str(tmp_path / "c.json")],
                 capsys) == ("rankgate answers: error: --calibration-out needs --human (the human verdicts the judge is "
                             "measured against)")


def test_a_statistics_bound_is_named_as_the_field_from_python_and_as_the_option_on_the_command_line(capsys) -> None:
    from rankgate.flows.answers import AnswersRequest
    from rankgate.flows.evaluate import EvaluateRequest, Statistics

    # the bounds are Statistics' wherever the three are given: its own fields, or a request's
    assert str(_refusal(lambda: Statistics(resamples=-1))) == (
        "resamples must be an integer between 0 and 1,000,000; got -1.")
    assert str(_refusal(lambda: AnswersRequest("a.jsonl", "g.jsonl", resamples=10**7))) == (
        "resamples must be an integer between 0 and 1,000,000; got 10,000,000 (the intervals would need about 153 MiB "
        "per metric; 2,000 to 10,000 resamples are plenty).")
    assert str(_refusal(lambda: EvaluateRequest("g", "r", statistics=Statistics(confidence=1.0)))) == (
        "confidence must be a float in the range (0, 1); got 1.0.")
    # a value of the wrong type only Python code can give: named as the parameter of the class that refused it
    assert str(_refusal(lambda: Statistics(seed="0"))) == "The 'seed' parameter of Statistics must be an integer >= 0; got '0'."
    assert _said(["evaluate", "--gold", GOLD, "--run", RUN, "--resamples", "-1"], capsys) == (
        "rankgate evaluate: error: --resamples must be an integer between 0 and 1,000,000; got -1.")
    assert _said(["answers", "--answers", "a.jsonl", "--gold", GOLD, "--confidence", "1"], capsys) == (
        "rankgate answers: error: --confidence must be a float in the range (0, 1); got 1.0.")


@pytest.mark.parametrize("make, python, argv, command_line", [
    (lambda: __import__("rankgate.flows._common", fromlist=["JudgeSpec"]).JudgeSpec(use_cache=False, refresh=True),
     "use_cache=False and refresh contradict each other: refresh writes the cache",
     ["judge", "relevance", "q.jsonl", "--no-cache", "--refresh"],
     "--no-cache and --refresh contradict each other: --refresh writes the cache"),
    (lambda: __import__("rankgate.flows._common", fromlist=["JudgeSpec"]).JudgeSpec(workers=0),
     "workers must be between 1 and 64; got 0",
     ["judge", "relevance", "q.jsonl", "--workers", "0"], "--workers must be between 1 and 64; got 0"),
    (lambda: __import__("rankgate.flows.stress", fromlist=["StressRequest"]).StressRequest(GOLD, RUN, negatives="lexical"),
     "negatives='lexical' needs corpus: near-misses are found in the corpus",
     ["stress", "--gold", GOLD, "--run", RUN, "--negatives", "lexical", "-o", "OUT"],
     "--negatives lexical needs --corpus: near-misses are found in the corpus"),
    (lambda: __import__("rankgate.flows.traces", fromlist=["TracesRequest"]).TracesRequest(("t",), spark_master="local"),
     "spark_master needs engine='spark'",
     ["traces", "analyze", "--traces", "t.json", "--spark-master", "local", "--out", "OUT"],
     "--spark-master needs --engine spark"),
    (lambda: __import__("rankgate.flows.compare", fromlist=["CompareRequest"]).CompareRequest(
        ("a", "b"), "g", fused_run=True).check(),
     "fused_run needs fuse METHOD (rrf, combsum or combmnz)",
     ["compare", "--gold", GOLD, RUN, RUN, "--fused-run", "f.jsonl"],
     "--fused-run needs --fuse METHOD (rrf, combsum or combmnz)"),
    (lambda: __import__("rankgate.flows.retrieve", fromlist=["RetrieveRequest"]).RetrieveRequest(corpus="c.jsonl"),
     "corpus needs gold: the gold set whose queries to run",
     ["retrieve", "--corpus", "c.jsonl", "-o", "OUT/run.jsonl"], "--corpus needs --gold: the gold set whose queries to run"),
    (lambda: __import__("rankgate.flows.report", fromlist=["ReportRequest"]).ReportRequest(
        k=5, level="chunk", doc_sep="#", top_misses=-1),
     "top_misses must be an integer >= 0; got -1.",
     ["report", "--gold", GOLD, "--run", RUN, "--top-misses", "-1", "-o", "OUT/r.html"],
     "--top-misses must be an integer >= 0; got -1."),
    (lambda: __import__("rankgate.flows.traces", fromlist=["TracesRequest"]).TracesRequest(("t",), by=("`k`",)),
     "by '`k`' is not a segment field",  # what a user gave is never read as a field
     ["traces", "analyze", "--traces", "t.json", "--by", "`k`", "--out", "OUT"], "--by '`k`' is not a segment field"),
])
def test_each_refusal_speaks_both_languages(make, python, argv, command_line, tmp_path, capsys) -> None:
    assert str(_refusal(make)).startswith(python)
    argv = [a.replace("OUT", str(tmp_path / "out")) for a in argv]
    command = argv[0]
    assert _said(argv, capsys).startswith(f"rankgate {command}: error: {command_line}")


def test_the_judge_url_without_a_judge_that_calls_a_model(tmp_path, capsys) -> None:
    queue = tmp_path / "queue.jsonl"
    queue.write_text('{"query_id": "q1", "query": "a", "id": "d1", "text": "a b"}\n', encoding="utf-8")
    assert _said(["judge", "relevance", str(queue), "-o", str(tmp_path / "l.jsonl"), "--no-cache", "--judge-url",
                  "http://localhost:1"], capsys) == (
        "rankgate judge: error: --judge-url/--judge-model are for --judge openai (or your own judge); the lexical "
        "judge calls no model")


def test_a_marked_field_and_its_option() -> None:
    assert F.human == "\x00human\x00" and F("price_in") == "\x00price_in\x00"
    assert F(negatives="lexical") == "\x00negatives='lexical'\x00" and F(use_cache=False) == "\x00use_cache=False\x00"
    error = UsageError(f"{F(negatives='lexical')} needs {F.corpus}")
    assert str(error) == "negatives='lexical' needs corpus" and error.args == (str(error),)
    assert error.fields == ("negatives", "corpus")
    assert said_with_flags(error, "stress") == "--negatives lexical needs --corpus"
    plain = UsageError("a `k` in backquotes names nothing")
    assert plain.fields == () and said_with_flags(plain, "evaluate") == str(plain)
    assert flag("calibration", "answers") == "--calibration-out" and flag("calibration", "evaluate") == "--calibration"
    assert flag("backend='openai'") == "--judge openai" and flag("fused_run=True") == "--fused-run PATH"
    assert flag("use_cache=False") == "--no-cache" and flag("refresh=True") == "--refresh"
    assert flag("not_a_field") == "not_a_field"


# -- the table ------------------------------------------------------------------------------------------------

def _request_fields() -> set[str]:
    """Every field of a dataclass the flows define, or hold (Statistics, Scoring)."""
    import rankgate.flows
    from rankgate.scoring.options import Scoring
    from rankgate.stats.options import Statistics

    classes: set[type] = {Scoring, Statistics}
    for info in pkgutil.iter_modules(rankgate.flows.__path__):
        module = importlib.import_module(f"rankgate.flows.{info.name}")
        classes |= {v for v in vars(module).values() if isinstance(v, type) and dataclasses.is_dataclass(v)
                    and v.__module__ == module.__name__}
    return {f.name for cls in classes for f in dataclasses.fields(cls)}


def _options() -> dict[str, set[str]]:
    """Each command's option strings (its sub-commands' too)."""
    from rankgate.cli.main import build_parser

    def walk(parser: argparse.ArgumentParser, into: set[str]) -> set[str]:
        for action in parser._actions:
            into |= set(action.option_strings)
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    walk(sub, into)
        return into

    top = build_parser()
    subs = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    return {name: walk(parser, set()) for name, parser in subs.choices.items()}


def test_every_field_the_table_maps_is_a_request_field_and_every_flag_an_option() -> None:
    fields, options = _request_fields(), _options()
    every = set().union(*options.values())
    for key, option in FLAGS.items():
        assert key.partition("=")[0] in fields, f"FLAGS[{key!r}]: no request has that field"
        assert option.split()[0] in every, f"FLAGS[{key!r}] = {option!r}: no command has that option"
    for command, table in COMMAND_FLAGS.items():
        assert command in options, f"COMMAND_FLAGS[{command!r}]: no such command"
        for key, option in table.items():
            assert key.partition("=")[0] in fields, f"COMMAND_FLAGS[{command!r}][{key!r}]: no request has that field"
            assert option.split()[0] in options[command], f"rankgate {command} has no {option}"


def _marked_fields() -> dict[str, str]:
    """Each field a refusal below the command line names, by where: ``F.name``, ``F("name")``, ``F(name=…)``,
    ``check(…, field="name")`` and ``check_counts(name=…)``."""
    found: dict[str, str] = {}
    for path in sorted(SRC.rglob("*.py")):
        if path.relative_to(SRC).parts[0] == "cli":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = f"{path.relative_to(SRC)}"
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "F":
                names.append(node.attr)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                if node.func.id == "F":
                    names += [a.value for a in node.args if isinstance(a, ast.Constant)]
                    names += [f"{k.arg}={ast.literal_eval(k.value)!r}" for k in node.keywords]
                elif node.func.id == "check_counts":
                    names += [k.arg for k in node.keywords if k.arg]
                elif node.func.id == "check":
                    names += [k.value.value for k in node.keywords
                              if k.arg == "field" and isinstance(k.value, ast.Constant)]
            for name in names:
                found.setdefault(name, f"{where}:{node.lineno}")
    return found


def test_every_field_a_refusal_names_has_an_option() -> None:
    marked = _marked_fields()
    assert {"calibration", "human", "resamples", "negatives='lexical'", "workers"} <= set(marked)
    missing = [f"{where}: {name}" for name, where in sorted(marked.items()) if flag(name) == name]
    assert not missing, "fields a refusal names that rankgate.cli.options.FLAGS has no option for:\n" + "\n".join(missing)
