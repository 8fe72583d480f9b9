"""The evaluate, compare, gate and report flows run from Python with plain requests, compute what the
request asks for and nothing else, print nothing, and give the numbers and bytes the commands write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rankgate.errors import UsageError

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
REPORT = ROOT / "tests" / "data" / "report"


def test_evaluation_gives_the_command_summary(tmp_path, capsys):
    from rankgate.cli.main import main
    from rankgate.flows.evaluate import EvaluateRequest, Statistics, run_evaluation
    from rankgate.render.exports import summary_dict, summary_json

    req = EvaluateRequest(str(EXAMPLES / "gold.jsonl"), str(EXAMPLES / "run.jsonl"), by=("intent",),
                          sweep="recall", ks="1,3,5", statistics=Statistics(seed=3, resamples=200))
    ev = run_evaluation(req)
    assert main(["evaluate", "--gold", str(EXAMPLES / "gold.jsonl"), "--run", str(EXAMPLES / "run.jsonl"), "--by",
                 "intent", "--sweep", "recall", "--ks", "1,3,5", "--seed", "3", "--resamples", "200", "--out",
                 str(tmp_path / "o")]) == 0
    written = (tmp_path / "o" / "summary.json").read_text(encoding="utf-8")
    assert summary_json(summary_dict(ev.result, cis=ev.cis, extra=ev.parts())) == written
    assert set(json.loads(written)) >= {"segments", "sweep", "statistics"}


def test_evaluation_computes_only_what_is_asked(capsys):
    from rankgate.flows.evaluate import EvaluateRequest, Statistics, run_evaluation

    ev = run_evaluation(EvaluateRequest(str(EXAMPLES / "gold.jsonl"), str(EXAMPLES / "run.jsonl"),
                                        statistics=Statistics(resamples=0), latency=False))
    assert ev.cis is None and ev.segments is None and ev.sweep is None and ev.latency is None
    assert ev.freshness is None and ev.bounds is None and dict(ev.components) == {}
    assert set(ev.parts()) == {"statistics"}
    full = run_evaluation(EvaluateRequest(str(EXAMPLES / "gold.jsonl"), str(EXAMPLES / "run.jsonl"),
                                          statistics=Statistics(resamples=50)))
    assert full.cis is not None and set(full.cis) == set(full.result.metric_names)
    assert full.latency is not None  # the example run logs latency
    assert capsys.readouterr() == ("", "")  # a flow never prints


@pytest.mark.parametrize("make, words", [
    (lambda m: m.Statistics(resamples=-1), "^resamples must be"),
    (lambda m: m.Statistics(confidence=1.0), "^confidence must be"),
    (lambda m: m.Statistics(seed=-2), "^seed must be"),
    (lambda m: m.Scoring(k=0), "^k must be an integer between 1 and"),
    (lambda m: m.EvaluateRequest("g", "r", calibration="c.json"), "^calibration needs judged"),
])
def test_requests_are_checked_when_built(make, words):
    import rankgate.flows.evaluate as m

    with pytest.raises(UsageError, match=words):
        make(m)


def test_a_warning_is_said_once_and_kept(tmp_path, capsys):
    from rankgate.flows.evaluate import Scorer, Scoring

    run = tmp_path / "run.jsonl"
    run.write_text(json.dumps({"query_id": "q_0001", "topk": [{"chunk_id": "nowhere#1", "score": 1.0}]}) + "\n")
    heard: list[str] = []
    scorer = Scorer(Scoring(metrics="recall@5"), heard.append)
    for _ in range(3):
        scorer.score(str(EXAMPLES / "gold.jsonl"), str(run))
    assert len(heard) == 1 and heard == scorer.warnings and heard[0].startswith(f"{run}: ")
    assert capsys.readouterr() == ("", "")


def test_comparison_scores_each_run_once_and_names_them(capsys):
    from rankgate.cli.main import main
    from rankgate.flows.compare import CompareRequest, run_comparison
    from rankgate.flows.evaluate import Statistics
    from rankgate.render.compare import comparison_dict

    runs = (str(REPORT / "base.jsonl"), str(REPORT / "run.jsonl"))
    out = run_comparison(CompareRequest(runs, str(REPORT / "gold.jsonl"), statistics=Statistics(resamples=100),
                                        permutations=100, baseline="run.jsonl"))
    # --baseline puts its run first; each is named by the system its file gives
    assert out.two_runs and out.labels == ("hybrid-v3 + rerank-base", "hybrid-v2")
    assert [e.result.inputs["run"]["path"] for e in out.evaluations] == list(reversed(runs))
    assert all(e.cis is None for e in out.evaluations)  # the comparison's intervals are paired ones
    capsys.readouterr()
    assert main(["compare", *runs, "--gold", str(REPORT / "gold.jsonl"), "--resamples", "100", "--permutations", "100",
                 "--baseline", "run.jsonl", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(comparison_dict(out.comparison)))


@pytest.mark.parametrize("kwargs, words", [
    ({"runs": ("a",), "gold": "g"}, "at least two runs"),
    ({"runs": ("a", "b"), "gold": None}, "arguments are required: gold$"),
    ({"runs": ("a", "b", "c"), "gold": "g", "by": ("intent",)}, "^by compares segments of two runs"),
    ({"runs": ("a", "b"), "gold": "g", "rewrite": True, "fuse": "rrf"}, "^rewrite cannot be combined with fuse:"),
    ({"runs": ("a", "b"), "gold": "g", "fused_run": True}, "^fused_run needs fuse"),
    ({"runs": ("a", "b"), "gold": "g", "top": -1}, "^top must be an integer >= 0"),
])
def test_comparison_requests_refuse_what_cannot_run(kwargs, words):
    from rankgate.flows.compare import CompareRequest, run_comparison

    with pytest.raises(UsageError, match=words):
        run_comparison(CompareRequest(**kwargs))


def test_gate_flow_is_the_python_entry():
    import rankgate
    import rankgate.gating.decide
    from rankgate.flows.gate import GateRequest, gate, run_gate

    assert rankgate.gate is gate
    files = [str(REPORT / n) for n in ("ship-criteria.yaml", "gold.jsonl", "run.jsonl", "base.jsonl")]
    by_request = run_gate(GateRequest(*files, evaluate={"ties": "id"}))
    assert by_request.to_json() == gate(*files, ties="id").to_json()
    assert by_request.exit_code == 1  # the fixture's candidate fails recall@5 on a language


def test_report_flow_and_assembly_give_the_report(tmp_path, capsys):
    from rankgate.cli.main import main
    from rankgate.flows.evaluate import Statistics
    from rankgate.flows.report import ReportRequest, run_report
    from rankgate.render.build import assemble
    from rankgate.render.html import render_html

    req = ReportRequest(statistics=Statistics(resamples=100), gold=str(REPORT / "gold.jsonl"),
                        run=str(REPORT / "run.jsonl"), baseline=str(REPORT / "base.jsonl"))
    ev = run_report(req)
    assert ev.baseline.comparison is not None and ev.outcome is None and ev.run_label == "run.jsonl"
    assert ev.freshness is None and ev.rewrite is None and dict(ev.components) == {}
    out = tmp_path / "r.html"
    assert main(["report", "--gold", str(REPORT / "gold.jsonl"), "--run", str(REPORT / "run.jsonl"), "--baseline",
                 str(REPORT / "base.jsonl"), "--resamples", "100", "-o", str(out)]) == 0
    assert render_html(assemble(ev)) == out.read_text(encoding="utf-8")


def test_decide_reuses_the_evaluation_intervals(monkeypatch):
    import rankgate.gating.decide as gates
    from rankgate.scoring.engine import evaluate
    from rankgate.stats.bootstrap import metric_cis

    config = gates.load_config(str(REPORT / "ship-criteria.yaml"))
    cand, base = (evaluate(str(REPORT / "gold.jsonl"), str(REPORT / n), list(config.metrics))
                  for n in ("run.jsonl", "base.jsonl"))
    drawn = metric_cis(cand, seed=config.seed, resamples=config.resamples, confidence=config.confidence)
    expected = gates.decide(config, cand, base).to_json()
    asked: list[list[str]] = []

    def counting(result, **kw):
        asked.append(list(kw["metrics"]))
        return metric_cis(result, **kw)

    monkeypatch.setattr(gates, "metric_cis", counting)
    assert gates.decide(config, cand, base, intervals=drawn).to_json() == expected
    assert asked == []  # every gated metric's interval was given
    first, *rest = config.metrics
    assert gates.decide(config, cand, base, intervals={first: drawn[first]}).to_json() == expected
    assert asked == [rest]  # only the missing ones are drawn


def test_one_string_is_one_item():
    from rankgate.flows.compare import CompareRequest
    from rankgate.flows.evaluate import EvaluateRequest

    assert EvaluateRequest("g", "r", by="intent").by == ("intent",)
    assert CompareRequest(["a", "b"], "g", by="lang").by == ("lang",)
    assert CompareRequest("rewrite.jsonl", "g", rewrite=True).runs == ("rewrite.jsonl",)


def test_gate_takes_an_evaluation_and_its_intervals(monkeypatch):
    import rankgate.gating.decide as gates
    from rankgate.flows.evaluate import EvaluateRequest, Scoring, run_evaluation
    from rankgate.flows.gate import GateRequest, run_gate

    files = {n: str(REPORT / f) for n, f in (("config", "ship-criteria.yaml"), ("gold", "gold.jsonl"),
                                             ("baseline", "base.jsonl"))}
    by_path = run_gate(GateRequest(**files, candidate=str(REPORT / "run.jsonl"), evaluate={"ties": "id"}))
    ev = run_evaluation(EvaluateRequest(files["gold"], str(REPORT / "run.jsonl"),
                                        Scoring(metrics="recall@5,forbidden@5", ties="id")))
    drawn: list[list[str]] = []
    real = gates.metric_cis
    monkeypatch.setattr(gates, "metric_cis", lambda result, **kw: drawn.append(list(kw["metrics"])) or real(result, **kw))
    assert run_gate(GateRequest(**files, candidate=ev, evaluate={"ties": "id"})).to_json() == by_path.to_json()
    assert drawn == []  # the evaluation's intervals (the criteria's statistics) were used
