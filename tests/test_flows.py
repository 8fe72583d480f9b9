"""The flows run from Python with plain requests and give the bytes the commands write."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rankgate.errors import UsageError

DEMO = Path(__file__).resolve().parents[1] / "src" / "rankgate" / "demo" / "data"


def test_answers_flow_gives_the_command_bytes(tmp_path):
    from rankgate.cli import main
    from rankgate.flows._common import JudgeSpec
    from rankgate.flows.answers import AnswersRequest, run_answers
    from rankgate.report.exports import answers_csv, answers_summary, summary_json

    files = dict(answers=str(DEMO / "answers.jsonl"), gold=str(DEMO / "gold.jsonl"), corpus=str(DEMO / "corpus.jsonl"),
                 human=str(DEMO / "answer-labels.jsonl"))
    scored = run_answers(AnswersRequest(**files, resamples=200, by=("lang",), calibration=True,
                                        judge=JudgeSpec(use_cache=False)))
    assert main(["answers", *[f"--{k}={v}" for k, v in files.items()], "--resamples", "200", "--by", "lang",
                 "--no-cache", "--out", str(tmp_path / "o"), "--calibration-out", str(tmp_path / "cal.json"),
                 "--json"]) == 0
    assert summary_json(answers_summary(scored)) == (tmp_path / "o" / "summary.json").read_text(encoding="utf-8")
    assert answers_csv(scored.result, scored.rows) == (tmp_path / "o" / "answers.csv").read_text(encoding="utf-8")
    assert scored.calibration is not None and scored.calibration["n"] == 22
    assert scored.segments is not None and scored.cache_hits[0] == 0 and scored.cache_hits[1] > 0


@pytest.mark.parametrize("kwargs, words", [
    ({"examples": -1}, "--examples must be >= 0; got -1"),
    ({"calibration": True}, "--calibration-out needs --human"),
    ({"baseline": "s.json"}, "--baseline and --comment go with --config"),
    ({"confidence": 1.0}, "--confidence must be a float in the range (0, 1); got 1.0."),
    ({"repeats": 0}, "--repeats must be between 1 and"),
])
def test_answers_request_is_validated_once(kwargs, words):
    from rankgate.flows.answers import AnswersRequest

    with pytest.raises(UsageError, match=re.escape(words)):
        AnswersRequest(answers="a.jsonl", gold="g.jsonl", **kwargs)


def test_judge_spec_refuses_contradictions():
    from rankgate.flows._common import JudgeSpec

    with pytest.raises(UsageError, match="contradict"):
        JudgeSpec(use_cache=False, refresh=True)
    with pytest.raises(UsageError, match="--workers must be between 1 and"):
        JudgeSpec(workers=0)


def test_judge_requests_are_validated_once():
    from rankgate.flows.judge import CalibrationRequest, RelevanceRequest

    with pytest.raises(UsageError, match="--price-in must be a price >= 0"):
        RelevanceRequest("queue.jsonl", price_in=-1.0)
    with pytest.raises(UsageError, match="--repeats must be between 1 and"):
        RelevanceRequest("queue.jsonl", repeats=0)
    with pytest.raises(UsageError, match="--confidence must be between 0 and 1"):
        CalibrationRequest("h.jsonl", "j.jsonl", confidence=1.0)
    with pytest.raises(UsageError, match="--weights must be linear, quadratic or none"):
        CalibrationRequest("h.jsonl", "j.jsonl", weights="cubic")


def test_relevance_flow_labels_a_queue_from_python(tmp_path):
    from rankgate.flows._common import JudgeSpec
    from rankgate.flows.judge import CalibrationRequest, RelevanceRequest, run_calibration, run_relevance

    from .demo_runs import write_jsonl

    queue = write_jsonl(tmp_path / "queue.jsonl", [
        {"query_id": "q1", "query": "when was taskfolio founded", "id": "a#1", "text": "Taskfolio was founded in 2019."},
        {"query_id": "q1", "query": "when was taskfolio founded", "id": "b#1", "text": "Pricing starts at $9."}])
    done = run_relevance(RelevanceRequest(str(queue), judge=JudgeSpec(use_cache=False), repeats=2))
    assert [r["id"] for r in done.rows] == ["a#1", "b#1"] and all(len(r["grades"]) == 2 for r in done.rows)
    assert done.meta["items"] == 2 and done.meta["repeats"] == 2 and done.warnings == ()
    labels = write_jsonl(tmp_path / "labels.jsonl", [dict(r) for r in done.rows])
    body = run_calibration(CalibrationRequest(str(labels), str(labels), resamples=50))
    assert body["n"] == 2 and body["not_judged"] == 0
