"""Abstention quality: correct and false abstention, unsupported answers — a case counted by hand, the
``refused`` field and its errors, the kernels against the reference, gates that fail on a clear rise and
pass on noise, and the command on the demo data."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from rankgate.answers.score import answers_summary, diagnosis_grid, evaluate_answers, GridThresholds
from rankgate.errors import InputError
from rankgate.io import load_gold
from rankgate.io.answers import read_answers
from rankgate.metrics import parse_metric
from rankgate.metrics.answers import AnswerLabels
from rankgate.metrics.context import QueryView

from .helpers import write_jsonl

S = "supported"
DEMO = Path(__file__).resolve().parents[1] / "src" / "rankgate" / "demo" / "data"


# -- a case counted by hand -------------------------------------------------------------------------
# a* answerable (gold chunk g*), n* no-answer. "packed": the gold chunk is in the context.
HAND = [
    # query, no_answer, packed, answer, refused field, statements the judge finds
    ("a1", False, True, "x", None, ("a",)),        # answered                      false_abstention 0
    ("a2", False, True, "x", None, ("a",)),        # answered                      false_abstention 0
    ("a3", False, True, "", None, ()),             # no statement: a refusal       false_abstention 1
    ("a4", False, True, "x", True, ("a",)),        # refused: true wins            false_abstention 1
    ("a5", False, True, "x", False, ("a",)),       # says it answered              false_abstention 0
    ("a6", False, False, "", None, ()),            # refusal, gold chunk not packed: only abstention_rate
    ("a7", False, False, "x", None, ("a",)),       # answered, not packed: only abstention_rate
    ("n1", True, False, "", None, ()),             # refusal                       correct 1, unsupported 0
    ("n2", True, False, "x", True, ("a",)),        # refused: true with a remark   correct 1, unsupported 0
    ("n3", True, False, "x", None, ("a",)),        # answered                      correct 0, unsupported 1
    ("n4", True, False, "", False, ()),            # refused: false, no statement: still a refusal
    ("n5", True, False, "x", None, None),          # statements call failed: unknown, in no denominator
    ("n6", True, False, "x", True, None),          # ... unless the record says refused: true
]


def _hand(tmp_path):
    gold = [{"query_id": q, "query": f"{q}?", "relevant_chunks": [] if na else [f"g{q}"], "no_answer": na}
            for q, na, *_ in HAND]
    rows, labels = [], {}
    for q, _na, packed, answer, refused, stmts in HAND:
        row = {"query_id": q, "answer": answer, "contexts": [{"id": f"g{q}" if packed else "o", "text": "t"}]}
        if refused is not None:
            row["refused"] = refused
        rows.append(row)
        labels[q] = (AnswerLabels(stmts, (S,) * len(stmts)) if stmts is not None
                     else AnswerLabels(None, errors=("statements: HTTP 500 after 4 attempts",)))
    g = load_gold(str(write_jsonl(tmp_path / "g.jsonl", gold)))
    a = read_answers(str(write_jsonl(tmp_path / "a.jsonl", rows)))
    return evaluate_answers(g, a, ["faithfulness", "contradiction_rate"], judgements=labels)


def test_hand_counted_values_and_denominators(tmp_path):
    result = _hand(tmp_path)
    assert result.metric_names[-4:] == ("correct_abstention", "false_abstention", "unsupported_answer", "abstention_rate")
    nan = np.nan
    #                                                   a1   a2   a3   a4   a5   a6   a7   n1   n2   n3   n4   n5   n6
    np.testing.assert_array_equal(result["false_abstention"], [0, 0, 1, 1, 0, nan, nan, nan, nan, nan, nan, nan, nan])
    np.testing.assert_array_equal(result["correct_abstention"], [nan] * 7 + [1, 1, 0, 1, nan, 1])
    np.testing.assert_array_equal(result["unsupported_answer"], [nan] * 7 + [0, 0, 1, 0, nan, 0])
    np.testing.assert_array_equal(result["abstention_rate"], [0, 0, 1, 1, 0, 1, 0, 1, 1, 0, 1, nan, 1])
    assert result.summary("false_abstention").mean == pytest.approx(2 / 5)
    assert result.summary("correct_abstention").mean == pytest.approx(4 / 5)
    assert result.summary("unsupported_answer").mean == pytest.approx(1 / 5)
    assert result.summary("abstention_rate").mean == pytest.approx(7 / 12)
    st = result.info["answers"]["status"]
    assert st["correct_abstention"][11] == "judge_error" and st["correct_abstention"][0] == "not_applicable"
    # the grid reads the same refusals: refused: true decides even when the statements call failed
    cells = {r.query_id: (r.cell, r.answer) for r in diagnosis_grid(result)}
    assert cells["a4"] == ("generation problem", "refusal") and cells["n2"] == ("ok", "refusal")
    assert cells["n5"][0] == "undetermined" and cells["n6"] == ("ok", "refusal")
    part = answers_summary(result, diagnosis_grid(result), cis=None, thresholds=GridThresholds())["abstention"]
    assert part["metrics"]["false_abstention"] == {
        "count": 2, "of": 5, "over": "answerable queries with a gold chunk packed", "mean": 0.4, "ci_low": None,
        "ci_high": None, "unknown": 0}
    assert (part["metrics"]["correct_abstention"]["count"], part["metrics"]["correct_abstention"]["of"]) == (4, 5)
    assert part["metrics"]["correct_abstention"]["unknown"] == 1 and part["unknown"] == ["n5"]
    assert part["examples"] == {"correct": ["n1", "n2", "n4"], "false": ["a3", "a4"], "unsupported": ["n3"]}
    assert (part["declared_refusals"], part["declared_answers"]) == (3, 2)


def test_only_statement_metrics_bring_abstention(tmp_path):
    """Without the statements, "no statement" means nothing: no abstention metrics (unless asked, which judges them)."""
    from rankgate.answers.score import tasks_for

    g = load_gold(str(write_jsonl(tmp_path / "g.jsonl", [{"query_id": "q", "query": "q?", "relevant_chunks": ["c"]}])))
    a = read_answers(str(write_jsonl(tmp_path / "a.jsonl", [{"query_id": "q", "answer": "x", "contexts": [
        {"id": "c", "text": "t"}]}])))
    result = evaluate_answers(g, a, ["answer_relevance"], judgements={"q": AnswerLabels((), answer_relevance=2)})
    assert not any("abstention" in m for m in result.metric_names)
    assert tasks_for(["false_abstention"]) == ("statements",)


@pytest.mark.parametrize("name", ["correct_abstention", "false_abstention", "unsupported_answer", "abstention_rate"])
def test_kernel_matches_reference(name):
    from rankgate.answers.abstention import facts, refusal_of
    from rankgate.metrics.context import EvalContext

    rng = np.random.default_rng(3)
    views, no_answer, hit, refusals = [], [], [], []
    for _ in range(300):
        na = bool(rng.random() < 0.3)
        packed = bool(rng.random() < 0.6) and not na
        stm = None if rng.random() < 0.1 else (() if rng.random() < 0.3 else ("s",))
        flag = [None, True, False][int(rng.integers(0, 3))]
        lab = AnswerLabels(stm)
        object.__setattr__(lab, "refused", flag)  # what the reference reads beside the statements
        views.append(QueryView(["g" if packed else "o"], {} if na else {"g": 1}, 5, answerable=not na,
                               answer_labels=lab))
        no_answer.append(na)
        hit.append(packed)
        refusals.append(refusal_of(flag, None if stm is None else len(stm)))
    m = parse_metric(name)
    nq = len(views)
    ctx = EvalContext(offsets=np.zeros(nq + 1, dtype=np.int64), rank_source=np.zeros(0, dtype=np.int64),
                      grade_source=np.zeros(0), judged_offsets=np.zeros(nq + 1, dtype=np.int64),
                      judged_grade=np.zeros(0, dtype=np.int64), query_k=np.zeros(nq, dtype=np.int64), default_k=5,
                      answerable=np.ones(nq, dtype=bool), queries={"abstention": facts(no_answer, hit, refusals)})
    fast = m.definition.compute(ctx, m, ctx.k_for(m))
    slow = [m.definition.reference(v, m, None) for v in views]
    np.testing.assert_array_equal(fast, np.array(slow))
    assert 0 < np.count_nonzero(~np.isnan(fast)) < nq  # some apply, some do not: not vacuous


# -- the refused field --------------------------------------------------------------------------------
@pytest.mark.parametrize("value, message", [
    ("yes", r'a.jsonl:1: field \'refused\' must be true or false; got "yes"'),
    (1, r"a.jsonl:1: field 'refused' must be true or false; got 1"),
    ([True], r"a.jsonl:1: field 'refused' must be true or false; got \[true\]"),
])
def test_refused_must_be_a_boolean(tmp_path, value, message):
    path = write_jsonl(tmp_path / "a.jsonl", [{"query_id": "q", "answer": "x", "contexts": ["t"], "refused": value}])
    with pytest.raises(InputError, match=message) as err:
        read_answers(str(path))
    assert "refused: true marks the answer as the system's refusal" in str(err.value)


def test_refused_read_from_json_csv_and_mapped_fields(tmp_path):
    rows = [{"query_id": "q1", "answer": "x", "contexts": ["t"], "refused": True},
            {"query_id": "q2", "answer": "x", "contexts": ["t"], "refused": None},
            {"query_id": "q3", "answer": "x", "contexts": ["t"]}]
    got = read_answers(str(write_jsonl(tmp_path / "a.jsonl", rows)))
    assert [r.refused for r in got.records] == [True, None, None]
    csv = tmp_path / "a.csv"
    csv.write_text('query_id,answer,contexts,refused\nq1,x,"[""t""]",TRUE\nq2,x,"[""t""]",false\nq3,x,"[""t""]",\n',
                   encoding="utf-8")
    assert [r.refused for r in read_answers(str(csv)).records] == [True, False, None]
    csv.write_text('query_id,answer,contexts,refused\nq1,x,"[""t""]",maybe\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"a.csv:2: field 'refused' must be true or false; got \"maybe\""):
        read_answers(str(csv))
    nested = write_jsonl(tmp_path / "n.jsonl", [{"query_id": "q1", "answer": "x", "contexts": ["t"],
                                                  "meta": {"abstained": True}}])
    assert read_answers(str(nested), columns={"refused": "meta.abstained"}).records[0].refused is True


# -- gates --------------------------------------------------------------------------------------------
class RefusalJudge:
    """A user judge (module:Class): an answer starting with "Sorry" states nothing; every statement is supported."""

    def judge(self, task, fields, *, seed):
        if task == "statements":
            return () if fields["answer"].startswith("Sorry") else (fields["answer"],)
        if task in ("support", "correctness"):
            return "supported"
        return 2


N_ANSWERABLE, N_NO_ANSWER = 40, 10


def _gate_files(tmp_path: Path) -> tuple[Path, Path]:
    gold = [{"query_id": f"a{i:02d}", "query": f"question {i}?", "relevant_chunks": [f"c{i}"]} for i in range(N_ANSWERABLE)]
    gold += [{"query_id": f"n{i:02d}", "query": f"no answer {i}?", "relevant_chunks": [], "no_answer": True}
             for i in range(N_NO_ANSWER)]
    config = tmp_path / "sc.yaml"
    config.write_text("gates:\n"
                      "  - metric: false_abstention\n    regression_max: 0.02\n    owner: assistant-team\n"
                      "  - metric: unsupported_answer\n    max: 0.2\n"
                      "  - metric: correct_abstention\n    threshold: 0.8\n", encoding="utf-8")
    return write_jsonl(tmp_path / "gold.jsonl", gold), config


def _answers_file(path: Path, refuse_answerable: int) -> Path:
    rows = [{"query_id": f"a{i:02d}", "answer": "Sorry, I cannot tell." if i < refuse_answerable else f"Fact {i}.",
             "contexts": [{"id": f"c{i}", "text": f"Fact {i}."}]} for i in range(N_ANSWERABLE)]
    rows += [{"query_id": f"n{i:02d}", "answer": "Sorry, nothing on that." if i else "Yes, it does.",
              "contexts": [{"id": "other", "text": "Something else."}]} for i in range(N_NO_ANSWER)]
    return write_jsonl(path, rows)


def _answers(*args: str) -> list[str]:
    return ["answers", "--no-cache", "--judge", "tests.test_abstention_quality:RefusalJudge", "--resamples", "500", *args]


@pytest.mark.parametrize("refused, code, status", [(12, 1, "fail"), (1, 0, "pass")])
def test_gate_fails_on_a_clear_rise_and_passes_on_noise(tmp_path, capsys, refused, code, status):
    from rankgate.cli.main import main

    gold, config = _gate_files(tmp_path)
    base = _answers_file(tmp_path / "base.jsonl", 0)
    assert main(_answers("--answers", str(base), "--gold", str(gold), "--out", str(tmp_path / "b"))) == 0
    cand = _answers_file(tmp_path / "cand.jsonl", refused)
    comment = tmp_path / "comment.md"
    assert main(_answers("--answers", str(cand), "--gold", str(gold), "--config", str(config), "--baseline",
                         str(tmp_path / "b" / "summary.json"), "--comment", str(comment), "--json")) == code
    capsys.readouterr()
    text = comment.read_text(encoding="utf-8")
    baseline = json.loads((tmp_path / "b" / "summary.json").read_text(encoding="utf-8"))
    assert "false_abstention" in json.dumps(baseline["per_query"])  # what pairs the candidate's queries with it
    assert "answers false\\_abstention" in text and "| abstention | share |" in text
    assert f"{refused} of {N_ANSWERABLE}" in text  # the abstention table: count of denominator
    if status == "fail":
        assert "❌ answers false\\_abstention" in text and "Owner: assistant-team" in text
    else:
        assert "❌" not in text and "within noise" in text


def test_gate_config_takes_abstention_metrics_without_calibration(tmp_path):
    from rankgate.errors import ConfigError
    from rankgate.gating.config import parse_config

    cfg = parse_config("gates:\n  - metric: false_abstention\n    max: 0.05\n  - metric: unsupported_answer\n    max: 2%\n"
                       "  - metric: correct_abstention\n    threshold: 0.8\n")
    assert [(g.metric, g.title, g.calibration) for g in cfg.gates] == [
        ("false_abstention", "answers false_abstention", None), ("unsupported_answer", "answers unsupported_answer", None),
        ("correct_abstention", "answers correct_abstention", None)]
    assert cfg.gates[1].max == 0.02
    with pytest.raises(ConfigError, match=r"gates\[0\].threshold' is a floor, but lower is better for false_abstention"):
        parse_config("gates:\n  - metric: false_abstention\n    threshold: 0.05\n")
    with pytest.raises(ConfigError, match=r"gates\[0\].calibration' applies to judge metrics only"):
        parse_config("gates:\n  - metric: correct_abstention\n    threshold: 0.8\n    calibration: c.json\n")


def test_gate_on_a_run_says_it_needs_answers(tmp_path, capsys):
    from rankgate.cli.main import main

    gold, config = _gate_files(tmp_path)
    run = write_jsonl(tmp_path / "run.jsonl", [{"query_id": "a00", "retrieved": ["c0"]}])
    assert main(["gate", "--config", str(config), "--gold", str(gold), "--candidate", str(run)]) == 2
    assert "false_abstention is an abstention metric: it needs generated answers" in capsys.readouterr().err


# -- the command on the demo data ----------------------------------------------------------------------
def _demo(*args: str) -> list[str]:
    return ["answers", "--answers", str(DEMO / "answers.jsonl"), "--gold", str(DEMO / "gold.jsonl"), "--corpus",
            str(DEMO / "corpus.jsonl"), "--no-cache", *args]


def test_demo_abstentions_of_each_kind(tmp_path, capsys):
    from rankgate.cli.main import main

    assert main(_demo("--json", "--out", str(tmp_path / "o"))) == 0
    layer = json.loads(capsys.readouterr().out)["answers"]
    ab = layer["abstention"]
    counts = {m: (e["count"], e["of"]) for m, e in ab["metrics"].items()}
    assert counts == {"correct_abstention": (3, 5), "unsupported_answer": (2, 5), "false_abstention": (2, 19),
                      "abstention_rate": (6, 29)}
    assert ab["examples"] == {"correct": ["q_0136", "q_0141", "q_0142"], "false": ["q_0023", "q_0029"],
                              "unsupported": ["q_0137", "q_0138"]}  # (in gold order)
    assert ab["declared_refusals"] == 2
    m = layer["metrics"]["false_abstention"]
    assert m["layer"] == "abstention" and m["ci_low"] == 0.0 and 2 / 19 < m["ci_high"] < 0.5
    header = (tmp_path / "o" / "answers.csv").read_text(encoding="utf-8").splitlines()[0]
    assert "false_abstention,false_abstention.status" in header
    assert main(_demo()) == 0
    text = capsys.readouterr().out
    assert "Abstention (a refusal: the record says refused: true" in text
    assert "│ false_abstention   │ 10.5% │" in text and "2 of 19" in text


def test_demo_gates_on_abstention(tmp_path, capsys):
    from rankgate.cli.main import main

    config = tmp_path / "sc.yaml"
    config.write_text("gates:\n  - metric: false_abstention\n    max: 0.2\n  - metric: unsupported_answer\n    max: 0.02\n"
                      "    severity: warning\n", encoding="utf-8")
    assert main(_demo("--config", str(config), "--comment", str(tmp_path / "c.md"))) == 0  # a warning does not block
    out = capsys.readouterr().out
    assert "answers unsupported_answer is 40.0%" in out
    config.write_text("gates:\n  - metric: correct_abstention\n    threshold: 0.8\n", encoding="utf-8")
    assert main(_demo("--config", str(config), "--comment", str(tmp_path / "c.md"))) == 1
    comment = (tmp_path / "c.md").read_text(encoding="utf-8")
    assert "❌ answers correct\\_abstention is 60.0%" in comment and "below the 80% floor" in comment
    assert "| `correct_abstention` | 60.0% |" in comment


def test_report_shows_abstention(tmp_path, capsys):
    from rankgate.render.answers import answers_section

    from rankgate.cli.main import main

    assert main(_demo("--json")) == 0
    layer = json.loads(capsys.readouterr().out)["answers"]
    html = answers_section(layer)
    assert "<caption>Abstention" in html and "<td>unsupported_answer</td><td>40.0%</td>" in html
    assert "refused although a gold chunk was in the context (over-refusal)" in html
    assert not math.isnan(layer["metrics"]["correct_abstention"]["mean"])
