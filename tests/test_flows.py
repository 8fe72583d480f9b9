"""The flows run from Python with plain requests and give the bytes the commands write."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rankgate.errors import UsageError

DEMO = Path(__file__).resolve().parents[1] / "src" / "rankgate" / "demo" / "data"


def test_answers_flow_gives_the_command_bytes(tmp_path):
    from rankgate.cli.main import main
    from rankgate.flows.answers import JudgeSpec
    from rankgate.flows.answers import AnswersRequest, run_answers
    from rankgate.render.exports import answers_csv, answers_summary, summary_json

    files = dict(answers=str(DEMO / "answers.jsonl"), gold=str(DEMO / "gold.jsonl"), corpus=str(DEMO / "corpus.jsonl"),
                 human=str(DEMO / "answer-labels.jsonl"))
    scored = run_answers(AnswersRequest(**files, resamples=200, by=("lang",), calibration=True,
                                        judge=JudgeSpec(use_cache=False)))
    assert main(["answers", *[f"--{k}={v}" for k, v in files.items()], "--resamples", "200", "--by", "lang",
                 "--no-cache", "--out", str(tmp_path / "o"), "--calibration-out", str(tmp_path / "cal.json"),
                 "--json"]) == 0
    assert summary_json(answers_summary(scored)) == (tmp_path / "o" / "summary.json").read_text(encoding="utf-8")
    assert answers_csv(scored.result, scored.rows) == (tmp_path / "o" / "answers.csv").read_text(encoding="utf-8")
    assert scored.calibration is not None and scored.calibration["n"] == 23
    assert scored.segments is not None and scored.cache_hits[0] == 0 and scored.cache_hits[1] > 0


@pytest.mark.parametrize("kwargs, words", [
    ({"examples": -1}, "examples must be an integer >= 0; got -1"),
    ({"calibration": True}, "calibration needs human"),
    ({"baseline": "s.json"}, "baseline goes with config"),
    ({"confidence": 1.0}, "confidence must be a float in the range (0, 1); got 1.0."),
    ({"repeats": 0}, "repeats must be between 1 and"),
])
def test_answers_request_is_validated_once(kwargs, words):
    from rankgate.flows.answers import AnswersRequest

    with pytest.raises(UsageError, match=re.escape(words)):
        AnswersRequest(answers="a.jsonl", gold="g.jsonl", **kwargs)


def test_judge_spec_refuses_contradictions():
    from rankgate.flows.answers import JudgeSpec

    with pytest.raises(UsageError, match="contradict"):
        JudgeSpec(use_cache=False, refresh=True)
    with pytest.raises(UsageError, match="^workers must be between 1 and"):
        JudgeSpec(workers=0)


def test_judge_requests_are_validated_once():
    from rankgate.flows.judge import CalibrationRequest, RelevanceRequest

    with pytest.raises(UsageError, match="^price_in must be a price >= 0"):
        RelevanceRequest("queue.jsonl", price_in=-1.0)
    with pytest.raises(UsageError, match="^repeats must be between 1 and"):
        RelevanceRequest("queue.jsonl", repeats=0)
    with pytest.raises(UsageError, match=re.escape("confidence must be a float in the range (0, 1); got 1.0.")):
        CalibrationRequest("h.jsonl", "j.jsonl", confidence=1.0)
    with pytest.raises(UsageError, match=re.escape("resamples must be an integer between 1 and")):
        CalibrationRequest("h.jsonl", "j.jsonl", resamples=0)
    with pytest.raises(UsageError, match="^weights must be linear, quadratic or none"):
        CalibrationRequest("h.jsonl", "j.jsonl", weights="cubic")


def test_relevance_flow_labels_a_queue_from_python(tmp_path):
    from rankgate.flows.judge import JudgeSpec
    from rankgate.flows.judge import CalibrationRequest, RelevanceRequest, run_calibration, run_relevance

    from .helpers import write_jsonl

    queue = write_jsonl(tmp_path / "queue.jsonl", [
        {"query_id": "q1", "query": "when was taskfolio founded", "id": "a#1", "text": "Taskfolio was founded in 2019."},
        {"query_id": "q1", "query": "when was taskfolio founded", "id": "b#1", "text": "Pricing starts at $9."}])
    done = run_relevance(RelevanceRequest(str(queue), judge=JudgeSpec(use_cache=False), repeats=2))
    assert [r["id"] for r in done.rows] == ["a#1", "b#1"] and all(len(r["grades"]) == 2 for r in done.rows)
    assert done.meta["items"] == 2 and done.meta["repeats"] == 2 and done.warnings == ()
    labels = write_jsonl(tmp_path / "labels.jsonl", [dict(r) for r in done.rows])
    body = run_calibration(CalibrationRequest(str(labels), str(labels), resamples=50))
    assert body["n"] == 2 and body["not_judged"] == 0


REPORT = Path(__file__).resolve().parent / "data" / "report"


def test_retrieve_pool_and_abstention_flows_from_python(tmp_path):
    from rankgate.flows.calibrate_abstention import AbstentionRequest, run_calibrate_abstention
    from rankgate.flows.pool import PoolRequest, run_pool
    from rankgate.flows.retrieve import RetrieveRequest, run_retrieve

    got = run_retrieve(RetrieveRequest(corpus=str(DEMO / "corpus.jsonl"), gold=str(DEMO / "gold.jsonl"), k=5,
                                       texts=1, latency=False))
    assert got.repeat == 1 and got.system and got.chunks > 0
    assert all(len(r["topk"]) <= 5 and all("text" not in h for h in r["topk"][1:]) for r in got.records)
    run = tmp_path / "run.jsonl"
    from rankgate.retrieval import write_run

    write_run(got.records, run)
    pooled = run_pool(PoolRequest(str(DEMO / "gold.jsonl"), [str(run)], depth=2, corpus=str(DEMO / "corpus.jsonl")))
    assert pooled.queries == len({i.query_id for i in pooled.items}) > 0
    found = run_calibrate_abstention(AbstentionRequest(str(REPORT / "gold.jsonl"), str(REPORT / "run.jsonl"), k=3))
    assert found.data["abstention"]["metric"] == "hit@3" and len(found.data["abstention"]["run"]) == 64
    for bad, words in ((lambda: PoolRequest("g", ("r",), depth=0), "depth must be a positive integer"),
                       (lambda: RetrieveRequest(corpus="c.jsonl"), "corpus needs gold"),
                       (lambda: AbstentionRequest("g", "r", k=0), "k must be between 1 and")):
        with pytest.raises(UsageError, match=re.escape(words)):
            bad()


def test_gold_and_stress_requests_say_what_is_wrong():
    from rankgate.flows.gold import RemapRequest, ValidateRequest
    from rankgate.flows.stress import StressRequest
    from rankgate.flows.traces import SampleRequest, TracesRequest

    for bad, words in ((lambda: ValidateRequest("g.jsonl", baseline="b.jsonl"), "baseline needs config"),
                       (lambda: RemapRequest("g.parquet", "a", "b"), "remap reads a JSONL gold set"),
                       (lambda: StressRequest("g", "r", ranks=(1, 1)), "ranks must be distinct ranks >= 1"),
                       (lambda: StressRequest("g", "r", negatives="lexical"), "negatives='lexical' needs corpus"),
                       (lambda: TracesRequest(("t",), by=("nope",)), "by 'nope' is not a segment field"),
                       (lambda: TracesRequest(("t",), k=0), "k must be between 1 and 100"),
                       (lambda: SampleRequest(("t",), abstention="a.yaml", abstention_threshold=0.2),
                        "give abstention or abstention_threshold, not both")):
        with pytest.raises(UsageError, match=re.escape(words)):
            bad()


def test_gold_flows_read_clean_gold_sets():
    from rankgate.flows.gold import DiffRequest, ValidateRequest, run_diff, run_validate

    gold = str(DEMO / "gold.jsonl")
    assert run_validate(ValidateRequest(gold, corpus=str(DEMO / "corpus.jsonl"))).exit_code in (0, 1)
    d = run_diff(DiffRequest(gold, gold))
    assert not d.added and not d.removed and not d.relabelled and d.old_queries == d.new_queries > 0


def test_traces_request_keeps_the_signal_groups_it_was_given():
    from rankgate.flows.traces import TracesRequest

    assert TracesRequest(("t.jsonl",)).signals is None and TracesRequest(("t.jsonl",), signals="all").signals is None
    headline = TracesRequest(("t.jsonl",), signals="headline").signals
    assert isinstance(headline, frozenset) and "latency" in headline
    with pytest.raises(UsageError, match="^signals 'nope' is not a signal group"):
        TracesRequest(("t.jsonl",), signals="nope")
