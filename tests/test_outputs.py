"""Outputs are declared: each flow's request names the files it reads (``inputs()``), each command names what
it writes (``OUTPUTS``), and one helper, :mod:`rankgate.cli.outputs`, refuses an output that is also an input
(with the message the commands gave before the outputs were declared), two outputs on one file, and writes
a command's files as one unit."""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import pkgutil
from pathlib import Path

import pytest

import rankgate.flows
from rankgate.cli.main import COMMANDS, build_parser, main

from .hostile import assert_refused

DATA = Path(__file__).resolve().parent / "data"
GOLD = DATA / "report" / "gold.jsonl"
RUN = DATA / "report" / "run.jsonl"
CONFIG = DATA / "report" / "ship-criteria.yaml"


# -- every request names the files it reads ---------------------------------------------------------------
def _requests():  # (class name, the request, the paths it was given, in the order inputs() gives them)
    from rankgate.flows.answers import AnswersRequest
    from rankgate.flows.calibrate_abstention import AbstentionRequest
    from rankgate.flows.compare import CompareRequest
    from rankgate.flows.evaluate import EvaluateRequest, Scoring
    from rankgate.flows.gate import GateRequest
    from rankgate.flows.gold import DiffRequest, RemapRequest, StaleRequest, ValidateRequest
    from rankgate.flows.incident import IncidentAddRequest, IncidentNewRequest
    from rankgate.flows.label import AgreementRequest, ExportRequest, ServeRequest
    from rankgate.flows.judge import CalibrationRequest, DriftRequest, RecalibrateRequest, RelevanceRequest
    from rankgate.flows.history import HistoryAddRequest, HistoryCompareRequest, HistoryReportRequest, HistoryShowRequest
    from rankgate.flows.plan import PlanRequest
    from rankgate.flows.pool import PoolRequest
    from rankgate.flows.report import ReportRequest
    from rankgate.flows.retrieve import RetrieveRequest
    from rankgate.flows.stress import StressRequest
    from rankgate.flows.traces import SampleRequest, TracesRequest
    from rankgate.flows._common import JudgeSpec
    from rankgate.flows.traces_judge import TracesJudgeRequest
    from rankgate.flows.validity import ValidityRequest

    return [
        (EvaluateRequest("g.jsonl", "r.jsonl", Scoring(doc_map="m.tsv"), judged="j.jsonl", calibration="c.json"),
         ("g.jsonl", "r.jsonl", "m.tsv", "j.jsonl", "c.json")),
        (CompareRequest(("a.jsonl", "b.jsonl"), "g.jsonl", Scoring(doc_map="m.tsv")), ("g.jsonl", "m.tsv", "a.jsonl", "b.jsonl")),
        (GateRequest("ship.yaml", "g.jsonl", "r.jsonl", "base.json", queries="q.tsv", corpus="c.jsonl"),
         ("ship.yaml", "g.jsonl", "r.jsonl", "q.tsv", "c.jsonl", "base.json")),
        (ReportRequest("g.jsonl", "r.jsonl", baseline="b.jsonl", lexical="l.jsonl",
                       scoring=Scoring(doc_map="m.tsv"), queries="q.tsv", answers="s.json", judged="j.jsonl",
                       calibration="c.json", rewrite="w.jsonl"),
         ("g.jsonl", "r.jsonl", "b.jsonl", "l.jsonl", "m.tsv", "q.tsv", "s.json", "j.jsonl", "c.json", "w.jsonl")),
        (AnswersRequest("a.jsonl", "g.jsonl", corpus="c.jsonl", human="h.jsonl", config="ship.yaml", baseline="s.json"),
         ("g.jsonl", "a.jsonl", "c.jsonl", "h.jsonl", "ship.yaml", "s.json")),
        (AbstentionRequest("g.jsonl", "r.jsonl"), ("g.jsonl", "r.jsonl")),
        (TracesRequest(("t1.json", "t2"), field_map="f.yaml", abstention="a.yaml", corpus="c.jsonl", monitors="m.yaml"),
         ("t1.json", "t2", "m.yaml", "c.jsonl", "a.yaml", "f.yaml")),
        (SampleRequest(("t1.json",), field_map="f.yaml", abstention="a.yaml", corpus="c.jsonl"),
         ("t1.json", "a.yaml", "f.yaml", "c.jsonl")),
        (TracesRequest(("t1.json",), monitors="m.yaml", judge_dir="j"), ("t1.json", "m.yaml", "j")),
        (TracesJudgeRequest(("t1.json", "t2"), 10, judge=JudgeSpec(max_calls=5), human=("h1.jsonl", "h2.jsonl"),
                            corpus="c.jsonl", field_map="f.yaml"),
         ("t1.json", "t2", "h1.jsonl", "h2.jsonl", "c.jsonl", "f.yaml")),
        (PoolRequest("g.jsonl", ("a.jsonl", "b.jsonl"), corpus="c.jsonl"), ("g.jsonl", "a.jsonl", "b.jsonl", "c.jsonl")),
        (ValidityRequest("g.jsonl", "r.jsonl", ("t1.json", "t2"), abstention="a.yaml", field_map="f.yaml"),
         ("g.jsonl", "r.jsonl", "t1.json", "t2", "a.yaml", "f.yaml")),
        (IncidentNewRequest("t.json", gold="g.jsonl"), ("t.json", "g.jsonl")),
        (IncidentAddRequest("pm.md", "g.jsonl", corpus="c.jsonl"), ("pm.md", "g.jsonl", "c.jsonl")),
        (RetrieveRequest(corpus=Path("c.jsonl"), gold="g.jsonl"), (Path("c.jsonl"), "g.jsonl")),
        (RetrieveRequest(beir="beir"), ("beir",)),
        (StressRequest("g.jsonl", "r.jsonl", corpus="c.jsonl", negatives="n.jsonl"), ("g.jsonl", "r.jsonl", "c.jsonl", "n.jsonl")),
        (StressRequest("g.jsonl", "r.jsonl", corpus="c.jsonl", negatives="lexical"), ("g.jsonl", "r.jsonl", "c.jsonl")),
        (RelevanceRequest("queue.jsonl"), ("queue.jsonl",)),
        (CalibrationRequest("h.jsonl", "labels.jsonl"), ("h.jsonl", "labels.jsonl", "labels.judge.json")),
        (RecalibrateRequest(answers="a.jsonl", gold="g.jsonl", corpus="c.jsonl"), ("a.jsonl", "g.jsonl", "c.jsonl")),
        (RecalibrateRequest(traces=("t.jsonl",), corpus="c.jsonl"), ("t.jsonl", "c.jsonl")),
        (DriftRequest("old.json", "new.json"), ("old.json", "new.json")),
        (ServeRequest("l.sqlite", queue="q.jsonl", guide="guide.md"), ("q.jsonl", "guide.md")),
        (ServeRequest("l.sqlite", gold="g.jsonl", runs=("a.jsonl", "b.jsonl"), corpus="c.jsonl"),
         ("g.jsonl", "a.jsonl", "b.jsonl", "c.jsonl")),
        (ExportRequest("l.sqlite", into_gold="g.jsonl"), ("l.sqlite", "g.jsonl")),
        (AgreementRequest("l.sqlite", judge_labels="j.jsonl"), ("l.sqlite", "j.jsonl")),
        (ValidateRequest("g.jsonl", corpus="c.jsonl", config="ship.yaml", baseline="b.jsonl"),
         ("g.jsonl", "c.jsonl", "ship.yaml", "b.jsonl")),
        (StaleRequest("g.jsonl", "c.jsonl", since="old.jsonl", config="ship.yaml"), ("g.jsonl", "c.jsonl", "old.jsonl", "ship.yaml")),
        (DiffRequest("old.jsonl", "new.jsonl"), ("old.jsonl", "new.jsonl")),
        (RemapRequest("g.jsonl", "old.jsonl", "new.jsonl"), ("g.jsonl", "old.jsonl", "new.jsonl")),
        (HistoryAddRequest(("summary.json", "gate.json"), "store"), ("summary.json", "gate.json")),
        (HistoryShowRequest("store"), ()), (HistoryCompareRequest("store", "a1", "b2"), ()), (HistoryReportRequest("store"), ()),
        (PlanRequest("g.jsonl", "ship.yaml", baseline="b.jsonl", traces=("t.jsonl",), field_map="f.yaml"),
         ("g.jsonl", "ship.yaml", "b.jsonl", "t.jsonl", "f.yaml")),
    ]


@pytest.mark.parametrize("request_, given", _requests(), ids=[f"{type(r).__name__}-{i}" for i, (r, _) in enumerate(_requests())])
def test_inputs_are_the_paths_given(request_, given) -> None:
    assert request_.inputs() == given


def test_every_request_of_the_flows_names_its_inputs() -> None:
    """A new request class gets ``inputs()`` and a case above."""
    covered = {type(r).__name__ for r, _ in _requests()}
    found = set()
    for info in pkgutil.iter_modules(rankgate.flows.__path__):
        module = importlib.import_module(f"rankgate.flows.{info.name}")
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if name.endswith("Request") and cls.__module__ == module.__name__:
                found.add(name)
                assert callable(getattr(cls, "inputs", None)), f"{module.__name__}.{name} has no inputs()"
    assert found == covered


def test_data_given_in_memory_is_no_input(tmp_path) -> None:
    from rankgate.flows.evaluate import EvaluateRequest
    from rankgate.flows.gate import GateRequest
    from rankgate.gating.config import load_config
    from rankgate.io import load_gold

    gold = load_gold(str(GOLD))
    assert EvaluateRequest(gold, "r.jsonl").inputs() == ("r.jsonl",)
    assert EvaluateRequest({"q1": {"d1": 1}}, {"q1": ["d1"]}).inputs() == ()
    # loaded ship criteria name the file they were read from; criteria given as data name none
    assert GateRequest(load_config(str(CONFIG)), gold, "r.jsonl").inputs() == (str(CONFIG), "r.jsonl")
    assert GateRequest({"gates": [{"metric": "recall@5", "threshold": 0.5}]}, "g.jsonl", "r.jsonl").inputs() == \
        ("g.jsonl", "r.jsonl")


# -- every command declares what it writes --------------------------------------------------------------
def _dests(parser: argparse.ArgumentParser) -> dict[str, dict[str, argparse.Action]]:
    """Action name ("" for a command without actions) -> the fields its options fill -> the option."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return {"": {a.dest: a for a in parser._actions}}
    return {name: {a.dest: a for a in p._actions} for sub in subs for name, p in sub.choices.items()}


@pytest.mark.parametrize("command", COMMANDS)
def test_declared_outputs_are_options_of_the_command(command: str) -> None:
    module = importlib.import_module(f"rankgate.cli.{command}")
    outputs = getattr(module, "OUTPUTS", None)
    if outputs is None:
        return
    from rankgate.cli.outputs import Output

    top = build_parser(command)
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    dests = _dests(sub.choices[command.replace("_", "-")])
    tables = {"": outputs} if all(isinstance(v, Output) for v in outputs.values()) else dict(outputs)
    if "sample" in dests:  # (traces sample and gold sample: one helper module runs both)
        from rankgate.cli import _traces_sample

        tables["sample"] = _traces_sample.OUTPUTS
    for action, table in tables.items():
        assert action in dests, f"{command}: OUTPUTS names the action {action!r}, which the command does not have"
        for name, out in table.items():
            assert isinstance(out, Output)
            assert name in dests[action], f"{command} {action}: OUTPUTS names {name!r}, which no option fills"
            option = dests[action][name]
            assert out.option in option.option_strings
            assert out.required == option.required, f"{command} {action}: {out.option} is required as the parser says"


def test_no_command_checks_its_outputs_by_hand() -> None:
    """``check_not_input`` is called from one place: rankgate.cli.outputs."""
    src = Path(rankgate.flows.__file__).resolve().parents[1]
    callers = sorted(p.relative_to(src).as_posix() for p in src.rglob("*.py")
                     if "check_not_input(" in p.read_text(encoding="utf-8"))
    # (and the Python API's report(out=...), which writes its one file outside any command)
    assert callers == ["_util/atomic.py", "cli/outputs.py", "render/api.py"]


# -- an output that is an input is refused, as before ---------------------------------------------------
def _copy(tmp_path: Path, *paths: Path) -> list[Path]:
    out = []
    for p in paths:
        target = tmp_path / p.name
        target.write_bytes(p.read_bytes())
        out.append(target)
    return out


def _refused_as_input(capsys, argv, out_dir, command: str, output: Path, input_: Path, option: str) -> None:
    line = assert_refused(argv, out_dir, capsys=capsys)
    assert line == (f"rankgate {command}: error: {output}: is also an input of this command ({input_}) "
                    f"(give {option} another path, so the input is not overwritten)")


def test_evaluate_refuses_an_output_that_is_an_input(tmp_path, capsys) -> None:
    out = tmp_path / "out"
    out.mkdir()
    gold = out / "summary.json"
    gold.write_bytes(GOLD.read_bytes())
    _refused_as_input(capsys, ["evaluate", "--gold", gold, "--run", RUN, "--out", out], tmp_path, "evaluate", gold, gold,
                      "--out")
    run = out / "metrics.csv"
    run.write_bytes(RUN.read_bytes())
    _refused_as_input(capsys, ["evaluate", "--gold", GOLD, "--run", run, "--out", out], tmp_path, "evaluate", run, run,
                      "--out")


def test_report_refuses_an_output_that_is_an_input(tmp_path, capsys) -> None:
    gold, run, config = _copy(tmp_path, GOLD, RUN, CONFIG)
    argv = ["report", "--gold", gold, "--run", run, "--config", config]
    for output in (gold, run, config):
        _refused_as_input(capsys, [*argv, "-o", output], tmp_path, "report", output, output, "--out")
    abstention = tmp_path / "abstention.yaml"  # (read by the command itself, not the flow)
    abstention.write_text("abstention: {}\n")
    _refused_as_input(capsys, [*argv, "--abstention", abstention, "-o", abstention], tmp_path, "report", abstention,
                      abstention, "--out")


def test_gate_refuses_an_output_that_is_an_input_but_may_roll_its_baseline_forward(tmp_path, capsys) -> None:
    gold, run, config = _copy(tmp_path, GOLD, RUN, CONFIG)
    argv = ["gate", "--config", config, "--gold", gold, "--candidate", run, "--no-step-summary"]
    for option in ("--comment", "--json-out"):
        for output in (config, gold, run):
            _refused_as_input(capsys, [*argv, option, output], tmp_path, "gate", output, output, option)
    summary = tmp_path / "gate.json"
    assert main([str(a) for a in [*argv, "--json-out", summary]]) in (0, 1)
    _refused_as_input(capsys, [*argv, "--baseline", summary, "--comment", summary], tmp_path, "gate", summary, summary,
                      "--comment")
    os.utime(summary, (0, 0))
    assert main([str(a) for a in [*argv, "--baseline", summary, "--json-out", summary]]) in (0, 1)  # rolled forward
    assert summary.stat().st_mtime > 0 and json.loads(summary.read_text())["exit_code"] in (0, 1)
    line = assert_refused([*argv, "--comment", tmp_path / "x.md", "--json-out", tmp_path / "x.md"], tmp_path, capsys=capsys)
    assert line == f"rankgate gate: error: --comment and --json-out name the same file {tmp_path / 'x.md'}; give each its own file"


def test_answers_refuses_an_output_that_is_an_input(tmp_path, capsys) -> None:
    gold, config = _copy(tmp_path, GOLD, CONFIG)
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"query_id": "q1", "answer": "x", "contexts": ["y"]}\n')
    human = tmp_path / "human.jsonl"
    human.write_text('{"query_id": "q1", "faithful": true}\n')
    argv = ["answers", "--answers", answers, "--gold", gold]
    out = tmp_path / "out"
    out.mkdir()
    inside = out / "summary.json"
    inside.write_bytes(gold.read_bytes())
    _refused_as_input(capsys, ["answers", "--answers", answers, "--gold", inside, "--out", out], tmp_path, "answers",
                      inside, inside, "--out")
    _refused_as_input(capsys, [*argv, "--human", human, "--calibration-out", answers], tmp_path, "answers", answers,
                      answers, "--calibration-out")
    _refused_as_input(capsys, [*argv, "--config", config, "--comment", gold], tmp_path, "answers", gold, gold, "--comment")


@pytest.mark.parametrize("case", ["compare", "pool", "retrieve", "calibrate-abstention", "traces sample", "gold remap",
                                  "judge calibrate", "incident new"])
def test_the_other_commands_refuse_an_output_that_is_an_input(tmp_path, capsys, case: str) -> None:
    gold, run = _copy(tmp_path, GOLD, RUN)
    other = tmp_path / "other.jsonl"
    other.write_text("{}\n")
    argv, option = {
        "compare": (["compare", run, RUN, "--gold", gold, "--out", run], "--out"),
        "pool": (["pool", "--gold", gold, "--runs", other, run, "--out", run], "--out"),
        "retrieve": (["retrieve", "--corpus", other, "--gold", run, "-o", run], "--out"),
        "calibrate-abstention": (["calibrate-abstention", "--gold", gold, "--run", run, "-o", run], "-o"),
        "traces sample": (["traces", "sample", "--traces", other, run, "-o", run], "-o"),
        "gold remap": (["gold", "remap", "--gold", gold, "--old-corpus", other, "--new-corpus", run, "-o",
                        tmp_path / "new.jsonl", "--review", run], "--review"),
        "judge calibrate": (["judge", "calibrate", "--human", other, "--judge-labels", run, "--out", run], "--out"),
        "incident new": (["incident", "new", "--trace", other, "--gold", run, "-o", run], "-o"),
    }[case]
    _refused_as_input(capsys, argv, tmp_path, case.split()[0], run, run, option)


# -- the helper itself ----------------------------------------------------------------------------------
def test_an_output_may_replace_only_the_fields_it_declares(tmp_path) -> None:
    from rankgate.cli.outputs import Output, check_outputs
    from rankgate.errors import OutputError
    from rankgate.flows.gate import GateRequest

    gold, run, base = _copy(tmp_path, GOLD, RUN, DATA / "report" / "base.jsonl")
    rolled = {"json": Output("--json", replaces=("baseline",))}
    planned = check_outputs(argparse.Namespace(json=str(base)), rolled, GateRequest(str(CONFIG), str(gold), str(run), str(base)))
    assert planned.paths == {"json": str(base)}
    with pytest.raises(OutputError, match=r"base.jsonl: is also an input"):  # not declared: refused
        check_outputs(argparse.Namespace(json=str(base)), {"json": Output("--json")},
                      GateRequest(str(CONFIG), str(gold), str(run), str(base)))
    with pytest.raises(OutputError, match=r"is also an input of this command \(.*gold.jsonl\)"):  # the baseline is the
        check_outputs(argparse.Namespace(json=str(gold)), rolled,                                 # gold set too
                      GateRequest(str(CONFIG), str(gold), str(run), str(gold)))


def test_planned_writes_only_what_was_checked_all_or_none(tmp_path) -> None:
    from rankgate.cli.outputs import Output, check_outputs

    out = tmp_path / "out"
    planned = check_outputs(argparse.Namespace(out=str(out), note=None),
                            {"out": Output("--out", files=("a.txt", "b.txt")), "note": Output("--note")})
    assert planned.paths == {"out": str(out)}
    with pytest.raises(RuntimeError, match="not a declared output"):
        planned.write({os.path.join(out, "a.txt"): "a", str(tmp_path / "c.txt"): "c"})
    assert not out.exists() and not (tmp_path / "c.txt").exists()
    planned.write({os.path.join(out, "a.txt"): "a", os.path.join(out, "b.txt"): "b"})
    assert sorted(p.name for p in out.iterdir()) == ["a.txt", "b.txt"]


def test_a_file_written_beside_an_output_is_checked_too(tmp_path) -> None:
    from rankgate.cli.outputs import Output, check_outputs
    from rankgate.errors import OutputError
    from rankgate.flows.judge import RelevanceRequest

    queue = tmp_path / "labels.judge.json"
    queue.write_text("{}\n")
    with pytest.raises(OutputError, match="labels.judge.json: is also an input"):
        check_outputs(argparse.Namespace(out=str(tmp_path / "labels.jsonl")),
                      {"out": Output("--out", beside=lambda p: p.removesuffix(".jsonl") + ".judge.json")},
                      RelevanceRequest(str(queue)))


def test_an_empty_path_is_refused_where_the_output_is_required(tmp_path, capsys, monkeypatch) -> None:
    """``-o ""``: a required output is checked (the current folder is no file), an optional one is not written."""
    monkeypatch.chdir(tmp_path)
    line = assert_refused(["report", "--gold", GOLD, "--run", RUN, "-o", ""], tmp_path, capsys=capsys)
    assert line == "rankgate report: error: : is a folder; a file is written here (give --out a file name)"
    from rankgate.cli.outputs import Output, check_outputs

    assert check_outputs(argparse.Namespace(out=""), {"out": Output("--out", files=("a.txt",))}).paths == {}
