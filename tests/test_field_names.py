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
import sys
from pathlib import Path

import pytest

from rankgate.cli.main import main
from rankgate.cli.options import COMMAND_FLAGS, FLAGS, flag, said_with_flags
from rankgate.errors import F, UsageError

from .sources import parsed

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
        GOLD, RUN, top_misses=-1),
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
    """Every field of a dataclass the flows define, or hold (Statistics, Scoring), and the parameters of the demo
    (a command with no request: rankgate.demo.run_demo)."""
    import inspect

    import rankgate.flows
    from rankgate.demo import run_demo
    from rankgate.scoring.options import Scoring
    from rankgate.stats.options import Statistics

    classes: set[type] = {Scoring, Statistics}
    for info in pkgutil.iter_modules(rankgate.flows.__path__):
        module = importlib.import_module(f"rankgate.flows.{info.name}")
        classes |= {v for v in vars(module).values() if isinstance(v, type) and dataclasses.is_dataclass(v)
                    and v.__module__ == module.__name__}
    return {f.name for cls in classes for f in dataclasses.fields(cls)} | set(inspect.signature(run_demo).parameters)


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


def _marked_fields() -> dict[str, list[str]]:
    """Each field a refusal below the command line names, with every place (``path:line``) that names it:
    ``F.name``, ``F("name")``, ``F(name=…)``, ``check(…, field="name")`` and ``check_counts(name=…)``."""
    found: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        if path.relative_to(SRC).parts[0] == "cli":
            continue
        tree = parsed(path)
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
                found.setdefault(name, []).append(f"{where}:{node.lineno}")
    return found


def test_every_field_a_refusal_names_has_an_option() -> None:
    marked = _marked_fields()
    assert {"calibration", "human", "resamples", "negatives='lexical'", "workers"} <= set(marked)
    # the modules below the flows that a request reaches name its fields too (their refusals are checked below)
    assert {"window", "signals", "n", "target_precision", "delta", "engine='spark'", "depth", "max_reply_bytes", "url",
            "model", "key_env", "key_env='OPENAI_API_KEY'", "cache", "use_cache=False", "columns", "out_dir", "corpus",
            "repeat=1"} <= set(marked)
    places = {where.partition(":")[0] for wheres in marked.values() for where in wheres}
    assert {"traces/signals.py", "traces/sample.py", "traces/abstention.py", "traces/engines.py", "stats/pooling.py",
            "judges/__init__.py", "judges/openai.py", "judges/cache.py", "io/formats.py", "demo/pipeline.py",
            "experiments/stress.py", "retrieval/api.py"} <= places
    commands = ["", *COMMAND_FLAGS]  # (a field one command alone has, as the demo's out_dir, is in COMMAND_FLAGS)
    missing = [f"{wheres[0]}: {name}" for name, wheres in sorted(marked.items())
               if all(flag(name, command) == name for command in commands)]
    assert not missing, "fields a refusal names that rankgate.cli.options.FLAGS has no option for:\n" + "\n".join(missing)


# -- below the flows: the modules a request reaches name its fields too -------------------------------------------

@pytest.fixture
def below(tmp_path, monkeypatch) -> dict[str, str]:
    """Inputs that reach each refusal: a trace export, a judge queue, a gold set and a run without texts (the stress
    test has no text for its items), a file where a folder belongs and a folder holding a file. No judge setting comes
    from the environment."""
    from rankgate.flows._common import JUDGE_ENV

    for env in (*JUDGE_ENV.values(), "RANKGATE_TEST_UNSET_KEY"):
        monkeypatch.delenv(env, raising=False)
    files = {"traces": tmp_path / "t.jsonl", "queue": tmp_path / "queue.jsonl", "gold": tmp_path / "g.jsonl",
             "run": tmp_path / "r.jsonl", "afile": tmp_path / "afile", "full": tmp_path / "full"}
    files["traces"].write_text('{"request_id": "r1", "timestamp": "2026-05-01T00:00:00Z", "query": "q", "retrieved": '
                               '[{"stage": "reranked", "rank": 1, "id": "c1", "score": 0.5}]}\n', encoding="utf-8")
    files["queue"].write_text('{"query_id": "q1", "query": "a", "id": "d1", "text": "a b"}\n', encoding="utf-8")
    files["gold"].write_text('{"query_id": "q1", "query": "a b", "relevant_chunks": [{"chunk_id": "d1", "grade": 1}], '
                             '"must_not_retrieve": ["d9"]}\n', encoding="utf-8")
    files["run"].write_text('{"query_id": "q1", "results": [{"id": "d1", "score": 1.0}]}\n', encoding="utf-8")
    files["afile"].write_text("", encoding="utf-8")
    files["full"].mkdir()
    (files["full"] / "mine.txt").write_text("", encoding="utf-8")
    return {name: str(path) for name, path in files.items()} | {"OUT": str(tmp_path / "out")}


def _traces(req):  # type: ignore[no-untyped-def]
    from rankgate.flows.traces import run_analyze

    return run_analyze(req)


def _no_pyspark(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setitem(sys.modules, "pyspark", None)
    monkeypatch.setitem(sys.modules, "pyspark.sql", None)


def _pyspark_without_java(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import shutil
    import types

    sql = types.ModuleType("pyspark.sql")
    sql.SparkSession = object  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pyspark", types.ModuleType("pyspark"))
    monkeypatch.setitem(sys.modules, "pyspark.sql", sql)
    which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if name == "java" else which(name, *a, **k))
    monkeypatch.delenv("JAVA_HOME", raising=False)


def _traces_request(**given):  # type: ignore[no-untyped-def]
    from rankgate.flows.traces import TracesRequest

    return lambda f: TracesRequest((f["traces"],), **given)


def _sample(**given):  # type: ignore[no-untyped-def]
    from rankgate.flows.traces import SampleRequest, run_sample

    return lambda f: run_sample(SampleRequest((f["traces"],), **given))


def _abstention(**given):  # type: ignore[no-untyped-def]
    from rankgate.flows.calibrate_abstention import AbstentionRequest, run_calibrate_abstention

    return lambda f: run_calibrate_abstention(AbstentionRequest(f["gold"], f["run"], **given))


def _judge(**given):  # type: ignore[no-untyped-def]
    from rankgate.flows._common import JudgeSpec

    return lambda f: JudgeSpec(**{k: v(f) if callable(v) else v for k, v in given.items()}).open().close()


def _columns(text: str):  # type: ignore[no-untyped-def]
    from rankgate.scoring.options import Scoring

    return lambda f: Scoring(columns=text).column_map()


def _demo(where: str):  # type: ignore[no-untyped-def]
    from rankgate.demo import run_demo

    return lambda f: run_demo(f[where])


def _stress(f):  # type: ignore[no-untyped-def]
    from rankgate.flows.stress import StressRequest, run_stress

    return run_stress(StressRequest(f["gold"], f["run"]))


ANALYZE = ["traces", "analyze", "--traces", "{traces}", "--out", "{OUT}"]
SAMPLE = ["gold", "sample", "--traces", "{traces}", "-o", "{OUT}/c.jsonl"]
ABSTENTION = ["calibrate-abstention", "--gold", "{gold}", "--run", "{run}", "-o", "{OUT}/a.yaml"]
RELEVANCE = ["judge", "relevance", "{queue}", "-o", "{OUT}/l.jsonl"]
OPENAI = [*RELEVANCE, "--no-cache", "--judge", "openai"]
EVALUATE = ["evaluate", "--gold", "{gold}", "--run", "{run}"]

#: (Python: what a caller does, a part of the message and its fields; the command line: the same, and that part)
BELOW = {
    "window": (_traces_request(window="1y"),
               "window must be a whole number and a unit m, h, d or w (e.g. 1h, 1d); got '1y'", ("window",),
               [*ANALYZE, "--window", "1y"], "--window must be a whole number and a unit m, h, d or w"),
    "window at most": (_traces_request(window="36501d"), "window must be at most 36500d (100 years); got '36501d'",
                       ("window",), [*ANALYZE, "--window", "36501d"], "--window must be at most 36500d (100 years)"),
    "signals": (_traces_request(signals="nope"), "signals 'nope' is not a signal group; valid: headline, all,",
                ("signals",), [*ANALYZE, "--signals", "nope"], "--signals 'nope' is not a signal group; valid:"),
    "signals empty": (_traces_request(signals=","), "signals is empty; give headline, all, or groups: latency",
                      ("signals",), [*ANALYZE, "--signals", ","], "--signals is empty; give headline, all, or groups"),
    "sample by": (_sample(by=("colour",)), "by: cannot stratify by 'colour'; fields: tenant, surface", ("by",),
                  [*SAMPLE, "--by", "colour"], "--by: cannot stratify by 'colour'; fields: tenant"),
    "sample n": (_sample(n=0), "n must be at least 1; got 0", ("n",), [*SAMPLE, "--n", "0"],
                 "--n must be at least 1; got 0"),
    "target precision": (_abstention(target_precision=1.5),
                         "target_precision must be between 0 and 1 (exclusive); got 1.5", ("target_precision",),
                         [*ABSTENTION, "--target-precision", "1.5"], "--target-precision must be between 0 and 1"),
    "delta": (_abstention(delta=1.0), "delta must be between 0 and 1 (exclusive); got 1.0", ("delta",),
              [*ABSTENTION, "--delta", "1"], "--delta must be between 0 and 1 (exclusive); got 1.0"),
    "max reply bytes": (_judge(use_cache=False, max_reply_bytes=5),
                        "max_reply_bytes must be a whole number of bytes from 1024 to", ("max_reply_bytes",),
                        [*RELEVANCE, "--no-cache", "--max-reply-bytes", "5"],
                        "--max-reply-bytes must be a whole number of bytes from 1024 to"),
    "url": (_judge(backend="openai", model="m", use_cache=False), "the openai judge needs a URL: pass url (e.g. http",
            ("url",), [*OPENAI, "--judge-model", "m"], "the openai judge needs a URL: pass --judge-url (e.g. http"),
    "model": (_judge(backend="openai", url="http://127.0.0.1:9/v1", use_cache=False),
              "the openai judge needs a model name: pass model (e.g. gpt-4o-mini", ("model",),
              [*OPENAI, "--judge-url", "http://127.0.0.1:9/v1"],
              "the openai judge needs a model name: pass --judge-model (e.g. gpt-4o-mini"),
    "key env for openai": (_judge(backend="openai", url="https://api.openai.com/v1", model="m", use_cache=False),
                           "name the variable that holds it with key_env (e.g. key_env='OPENAI_API_KEY')",
                           ("key_env", "key_env"),
                           [*OPENAI, "--judge-url", "https://api.openai.com/v1", "--judge-model", "m"],
                           "name the variable that holds it with --judge-key-env (e.g. --judge-key-env OPENAI_API_KEY)"),
    "key env unset": (_judge(backend="openai", url="http://127.0.0.1:9/v1", model="m", key_env="RANKGATE_TEST_UNSET_KEY",
                             use_cache=False),
                      "is not set (or empty); export it, or leave out key_env for a local server", ("key_env",),
                      [*OPENAI, "--judge-url", "http://127.0.0.1:9/v1", "--judge-model", "m", "--judge-key-env",
                       "RANKGATE_TEST_UNSET_KEY"],
                      "is not set (or empty); export it, or leave out --judge-key-env for a local server"),
    "cache": (_judge(cache=lambda f: f["afile"] + "/sub"),
              "(choose a writable folder with cache or RANKGATE_CACHE_DIR, or pass use_cache=False)", ("cache", "use_cache"),
              [*RELEVANCE, "--cache", "{afile}/sub"],
              "(choose a writable folder with --cache or RANKGATE_CACHE_DIR, or pass --no-cache)"),
    "columns": (_columns("x"), "columns: 'x' is not FIELD=COLUMN", ("columns",), [*EVALUATE, "--columns", "x"],
                "--columns: 'x' is not FIELD=COLUMN"),
    "columns list_sep": (_columns("list_sep=" + "x" * 30), "columns: list_sep must be at most 16 characters; got 30",
                         ("columns",), [*EVALUATE, "--columns", "list_sep=" + "x" * 30],
                         "--columns: list_sep must be at most 16 characters; got 30"),
    "columns unknown": (_columns("colour=c"), "columns: unknown field 'colour'; fields: query_id", ("columns",),
                        [*EVALUATE, "--columns", "colour=c"], "--columns: unknown field 'colour'; fields: query_id"),
    "columns twice": (_columns("query_id=a,query_id=b"), "columns: field 'query_id' is mapped twice", ("columns",),
                      [*EVALUATE, "--columns", "query_id=a,query_id=b"], "--columns: field 'query_id' is mapped twice"),
    "columns empty": (_columns(","), "columns is empty; give FIELD=COLUMN pairs", ("columns",),
                      [*EVALUATE, "--columns", ","], "--columns is empty; give FIELD=COLUMN pairs"),
    "demo file": (_demo("afile"), "exists and is not a folder; choose a folder for the demo's output", ("out_dir",),
                  ["demo", "--out", "{afile}"], "--out {afile} exists and is not a folder; choose a folder"),
    "demo folder": (_demo("full"), "is not empty and was not written by rankgate demo; choose a new or empty folder with "
                    "out_dir, so", ("out_dir",), ["demo", "--out", "{full}"],
                    "{full} is not empty and was not written by rankgate demo; choose a new or empty folder with --out, so"),
    "stress corpus": (_stress, "of query 'q1': give corpus with every chunk", ("corpus",),
                      ["stress", "--gold", "{gold}", "--run", "{run}", "-o", "{OUT}"],
                      "of query 'q1': give --corpus with every chunk"),  # (the first of a set: d1 or d9)
    "spark without pyspark": (lambda f: _traces(_traces_request(engine="spark")(f)),
                              "engine='spark' needs pyspark (pip install 'rankgate[spark]') and Java 17", ("engine",),
                              [*ANALYZE, "--engine", "spark"], "--engine spark needs pyspark"),
    "spark without java": (lambda f: _traces(_traces_request(engine="spark")(f)),
                           "engine='spark' needs Java 17 (Debian: apt-get", ("engine",), [*ANALYZE, "--engine", "spark"],
                           "--engine spark needs Java 17 (Debian: apt-get"),
}


@pytest.mark.parametrize("case", list(BELOW))
def test_below_the_flows_python_gets_the_field_and_the_command_line_the_option(case, below, monkeypatch,
                                                                                 capsys) -> None:
    make, python, fields, argv, command_line = BELOW[case]
    if case.startswith("spark"):
        (_no_pyspark if "pyspark" in case else _pyspark_without_java)(monkeypatch)
    error = _refusal(lambda: make(below))
    assert python in str(error) and error.fields == fields and "--" not in str(error)
    argv = [a.format(**below) for a in argv]
    said = _said(argv, capsys)
    assert said.startswith(f"rankgate {argv[0]}: error: ") and command_line.format(**below) in said


def test_refusals_the_command_line_checks_first_say_the_same_from_python(below) -> None:
    """Refusals a request (or the parser) makes before the module's own check: Python gets the field, and the command
    line would say the option (said as rankgate.cli.main says it)."""
    from rankgate.metrics.compat import compat_rows
    from rankgate.retrieval.api import median_latency
    from rankgate.stats.pooling import pool_queue
    from rankgate.traces import read_traces
    from rankgate.traces.signals import summarize_traces

    error = _refusal(lambda: summarize_traces(read_traces([below["traces"]]), by=("colour",)))
    assert str(error).startswith("by 'colour' is not a segment field; fields:") and error.fields == ("by",)
    assert said_with_flags(error, "traces").startswith("--by 'colour' is not a segment field; fields:")
    error = _refusal(lambda: pool_queue(None, [], [], depth=0))
    assert str(error) == "depth must be a positive integer; got 0" and error.fields == ("depth",)
    assert said_with_flags(error, "pool") == "--depth must be a positive integer; got 0"
    passes = [[{"query_id": "q1", "topk": [{"chunk_id": c}]}] for c in ("a", "b")]
    error = _refusal(lambda: median_latency(passes))
    assert str(error).endswith("needs a deterministic retriever (use repeat=1)") and error.fields == ("repeat",)
    assert said_with_flags(error, "retrieve").endswith("needs a deterministic retriever (use --repeat 1)")
    # the command line's --compat has the tools as its choices: this refusal is Python's alone
    error = _refusal(lambda: compat_rows("trec"))
    assert str(error) == "unknown tool 'trec'; expected one of: ragas, llamaindex, trec_eval" and error.fields == ()


def test_a_variable_name_holding_a_nul_is_not_read_as_a_field(below) -> None:
    from rankgate.judges import open_judge

    error = _refusal(lambda: open_judge("openai", url="http://127.0.0.1:9/v1", model="m", key_env="A\x00B",
                                        use_cache=False))
    assert str(error).startswith("the judge key variable A\\x00B is not set") and error.fields == ("key_env",)
