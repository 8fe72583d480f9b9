"""The flows run from Python with plain requests and give the bytes the commands write."""

from __future__ import annotations

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
    ({"confidence": 1.0}, "--confidence must be a float in the range"),
    ({"repeats": 0}, "--repeats must be between 1 and"),
])
def test_answers_request_is_validated_once(kwargs, words):
    from rankgate.flows.answers import AnswersRequest

    with pytest.raises(UsageError, match=words.replace("-", r"\-")):
        AnswersRequest(answers="a.jsonl", gold="g.jsonl", **kwargs)


def test_judge_spec_refuses_contradictions():
    from rankgate.flows._common import JudgeSpec

    with pytest.raises(UsageError, match="contradict"):
        JudgeSpec(use_cache=False, refresh=True)
    with pytest.raises(UsageError, match="--workers must be between 1 and"):
        JudgeSpec(workers=0)
