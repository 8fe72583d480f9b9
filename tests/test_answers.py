"""Layer two: answers input, answer metrics from given labels (hand-computed), the diagnosis grid."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from rankgate.answers.score import GridThresholds, diagnosis_grid, evaluate_answers, grid_counts
from rankgate.io import load_gold
from rankgate.io.answers import ANSWER_FIELDS, read_answers
from rankgate.io.formats import parse_columns
from rankgate.errors import InputError, UsageError
from rankgate.metrics import get_metric, parse_metric
from rankgate.metrics.answers import AnswerLabels, status
from rankgate.metrics.context import QueryView

from .helpers import write_jsonl

S, C, N = "supported", "contradicted", "not_found"


# -- statement verdicts -> scores (hand-computed) ---------------------------------------------------
@pytest.mark.parametrize("labels, metric, k, expected", [
    (AnswerLabels(("a", "b", "c", "d"), (S, S, C, N)), "faithfulness", None, ("ok", 0.5)),
    (AnswerLabels(("a", "b", "c", "d"), (S, S, C, N)), "contradiction_rate", None, ("ok", 0.25)),
    (AnswerLabels(("a", "b", "c"), (S, S, S), (S, N, C)), "answer_correctness", None, ("ok", 1 / 3)),
    (AnswerLabels((), ()), "faithfulness", None, ("not_applicable", None)),  # a refusal
    (AnswerLabels(("a",), (S,), None), "answer_correctness", None, ("not_applicable", None)),  # no reference
    (AnswerLabels(None, (), errors=("statements: timeout after 60 s",)), "faithfulness", None, ("judge_error", None)),
    (AnswerLabels(("a", "b"), (S, None)), "faithfulness", None, ("judge_error", None)),
    (AnswerLabels((), answer_relevance=1), "answer_relevance", None, ("ok", 1.0)),
    (AnswerLabels((), answer_relevance=None), "answer_relevance", None, ("judge_error", None)),
    (AnswerLabels((), context_relevance=(2, 0, 1, 0)), "context_relevance", None, ("ok", 0.5)),
    (AnswerLabels((), context_relevance=(2, 0, 1, 0)), "context_relevance", 1, ("ok", 1.0)),
    (AnswerLabels((), context_relevance=(2, 0, None)), "context_relevance", 2, ("ok", 0.5)),  # the error is past k
    (AnswerLabels((), context_relevance=(2, 0, None)), "context_relevance", 3, ("judge_error", None)),
    (AnswerLabels((), context_relevance=()), "context_relevance", None, ("not_applicable", None)),
])
def test_status_hand_computed(labels, metric, k, expected):
    got_status, value = status(metric, labels, k)
    assert got_status == expected[0]
    if expected[1] is None:
        assert math.isnan(value)
    else:
        assert value == pytest.approx(expected[1])


def test_context_relevance_rel2():
    assert status("context_relevance", AnswerLabels((), context_relevance=(2, 1, 1, 0)), None, 2) == ("ok", 0.25)


@pytest.mark.parametrize("name", ["faithfulness", "contradiction_rate", "answer_relevance", "context_relevance@2",
                                  "context_relevance(rel=2)", "answer_correctness"])
def test_kernel_matches_reference(name):
    """compute (through the registry) and the reference formula agree on every label pattern."""
    from rankgate.metrics.context import EvalContext

    rng = np.random.default_rng(7)
    labels = []
    for _ in range(200):
        n = int(rng.integers(0, 4))
        stm = None if rng.random() < 0.1 else tuple(f"s{i}" for i in range(n))
        pick = lambda: None if rng.random() < 0.05 else [S, C, N][int(rng.integers(0, 3))]
        sup = tuple(pick() for _ in range(len(stm or ())))
        cor = None if rng.random() < 0.4 else tuple(pick() for _ in range(len(stm or ())))
        rel = None if rng.random() < 0.05 else int(rng.integers(0, 3))
        ctx = tuple(None if rng.random() < 0.05 else int(rng.integers(0, 3)) for _ in range(int(rng.integers(0, 5))))
        labels.append(AnswerLabels(stm, sup, cor, rel, ctx))
    m = parse_metric(name)
    nq = len(labels)
    ctx = EvalContext(offsets=np.zeros(nq + 1, dtype=np.int64), rank_source=np.zeros(0, dtype=np.int64), grade_source=np.zeros(0),
                      judged_offsets=np.zeros(nq + 1, dtype=np.int64), judged_grade=np.zeros(0, dtype=np.int64),
                      query_k=np.zeros(nq, dtype=np.int64), default_k=5, answerable=np.ones(nq, dtype=bool),
                      queries={"answer_labels": labels})
    fast = m.definition.compute(ctx, m, ctx.k_for(m))
    slow = [m.definition.reference(QueryView([], {}, 5, answer_labels=lab), m, m.k) for lab in labels]
    np.testing.assert_array_equal(fast, np.array(slow))


def test_answer_metric_outside_answers_is_a_usage_error(tmp_path):
    from rankgate import evaluate

    gold = write_jsonl(tmp_path / "g.jsonl", [{"query_id": "q1", "relevant_chunks": ["a"]}])
    run = write_jsonl(tmp_path / "r.jsonl", [{"query_id": "q1", "topk": ["a"]}])
    with pytest.raises(UsageError, match="answer metric"):
        evaluate(gold, run, ["faithfulness"])


def test_metrics_listing_has_answer_metrics(capsys):
    from rankgate.cli.main import main

    assert main(["metrics"]) == 0
    out = capsys.readouterr().out
    for name in ("faithfulness", "contradiction_rate", "answer_relevance", "context_relevance@k", "answer_correctness"):
        assert name in out
    assert get_metric("answer_relevance").bounds == (0.0, 2.0)


# -- input ------------------------------------------------------------------------------------------
def test_rankgate_shape_texts_ids_objects(tmp_path):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"chunk_id": "d1#c1", "text": "Alpha text."},
                                                     {"chunk_id": "d2#c1", "text": "Beta text."}])
    from rankgate.corpus import load_manifest

    ans = write_jsonl(tmp_path / "a.jsonl", [
        {"query_id": "q1", "answer": "A.", "contexts": ["d1#c1", "  beta   TEXT. ", {"id": "x", "text": "Gamma."}],
         "citations": ["d1#c1"], "reference": "R"},
    ])
    got = read_answers(str(ans), corpus=load_manifest(corpus))
    (rec,) = got.records
    assert [(c.id, c.text) for c in rec.contexts] == [("d1#c1", "Alpha text."), ("d2#c1", "  beta   TEXT. "), ("x", "Gamma.")]
    assert rec.citations == ("d1#c1",) and rec.reference == "R" and got.format == "rankgate"


def test_id_without_text_needs_corpus(tmp_path):
    ans = write_jsonl(tmp_path / "a.jsonl", [{"query_id": "q1", "answer": "A.", "contexts": ["d1#c1"]}])
    with pytest.raises(InputError, match=r"a.jsonl:1: field 'contexts' context 'd1#c1' has no text.*--corpus"):
        read_answers(str(ans), gold_ids=frozenset({"d1#c1"}))


def test_ragas_single_turn_sample_preset(tmp_path):
    # EvaluationDataset.to_jsonl writes one SingleTurnSample per line
    ans = write_jsonl(tmp_path / "ragas.jsonl", [
        {"user_input": "When was it founded?", "retrieved_contexts": ["Founded in 1990.", "Other."],
         "retrieved_context_ids": ["c1", "c2"], "reference_context_ids": ["c1"], "response": "In 1990.",
         "reference": "1990"},
    ])
    (rec,) = read_answers(str(ans)).records
    assert rec.query_id.startswith("q:") and rec.question == "When was it founded?"
    assert [(c.id, c.text) for c in rec.contexts] == [("c1", "Founded in 1990."), ("c2", "Other.")]
    assert rec.answer == "In 1990." and rec.reference == "1990"
    # the gold set read from the same file has the same query id
    gold = load_gold(str(ans), format="ragas")
    assert gold.query_ids == [rec.query_id]


def test_ragas_legacy_csv_preset(tmp_path):
    path = tmp_path / "legacy.csv"
    path.write_text('question,answer,contexts,ground_truth\n"Who?","Bob did it.","[\'Bob did it in May.\']","Bob"\n',
                    encoding="utf-8")
    got = read_answers(str(path))
    assert got.format == "ragas_legacy"
    (rec,) = got.records
    assert rec.contexts[0].text == "Bob did it in May." and rec.contexts[0].id.startswith("t:")
    assert rec.reference == "Bob"


def test_deepeval_preset(tmp_path):
    path = tmp_path / "deepeval.json"
    path.write_text(json.dumps({"test_cases": [
        {"input": "Who?", "actual_output": "Bob.", "expected_output": "Bob", "context": ["Bob did it."],
         "retrieval_context": ["Bob did it.", "Alice watched."]},
        {"input": "Where?", "actual_output": "I don't know.",
         "retrieval_context": [{"context": "In Rome.", "source": "doc-9"}]},
    ]}), encoding="utf-8")
    got = read_answers(str(path))
    assert got.format == "deepeval"
    assert [c.text for c in got.records[0].contexts] == ["Bob did it.", "Alice watched."]
    assert [(c.id, c.text) for c in got.records[1].contexts] == [("doc-9", "In Rome.")]
    assert got.records[1].reference is None


def test_deepeval_csv_joined_lists(tmp_path):
    path = tmp_path / "de.csv"
    # DeepEval 4.x joins lists with '|' (context_col_delimiter's default); a ';' is ordinary prose
    path.write_text("input,actual_output,retrieval_context\nWho?,Bob.,Bob did it; he said so.|Alice watched.\n",
                    encoding="utf-8")
    assert [c.text for c in read_answers(str(path)).records[0].contexts] == ["Bob did it; he said so.", "Alice watched."]
    cols = parse_columns("list_sep=semicolon", ANSWER_FIELDS)  # a file joined by another delimiter
    assert [c.text for c in read_answers(str(path), columns=cols).records[0].contexts] == [
        "Bob did it", "he said so.|Alice watched."]


def test_deepeval_retrieved_context_data_is_its_context(tmp_path):
    """save_as writes a RetrievedContextData as deepeval_source=…,deepeval_context=…; DeepEval reads
    back the context, and so does rankgate."""
    path = tmp_path / "de.json"
    path.write_text(json.dumps([{"input": "Who?", "actual_output": "Bob.",
                                 "retrieval_context": ["deepeval_source=doc7,deepeval_context=Bob did it, he said."]}]),
                    encoding="utf-8")
    assert [c.text for c in read_answers(str(path)).records[0].contexts] == ["Bob did it, he said."]


def test_column_map_dotted_paths(tmp_path):
    ans = write_jsonl(tmp_path / "ls.jsonl", [
        {"id": "q7", "inputs": {"question": "Why?"},
         "outputs": {"answer": "Because.", "docs": [{"page_content": "One.", "metadata": {"id": "c1"}},
                                                    {"page_content": "Two.", "metadata": {"id": "c2"}}]}},
    ])
    cols = parse_columns("query_id=id,question=inputs.question,answer=outputs.answer,"
                         "contexts=outputs.docs[*].page_content,context_ids=outputs.docs[*].metadata.id", ANSWER_FIELDS)
    (rec,) = read_answers(str(ans), columns=cols).records
    assert (rec.query_id, rec.question, rec.answer) == ("q7", "Why?", "Because.")
    assert [(c.id, c.text) for c in rec.contexts] == [("c1", "One."), ("c2", "Two.")]


def test_column_map_unknown_field_is_usage_error():
    with pytest.raises(UsageError, match="unknown field 'chunk_id'"):
        parse_columns("chunk_id=x", ANSWER_FIELDS)


@pytest.mark.parametrize("row, message", [
    ({"query_id": "q1", "answer": None, "contexts": []}, "a.jsonl:1: field 'answer' is missing"),
    ({"query_id": "q1", "answer": 3.5, "contexts": [{"text": 5}]}, "text that is not a string"),
    ({"query_id": "q1", "answer": "A", "contexts": [7]}, "must be a text, an id"),
    ({"query_id": "q1", "answer": "A", "contexts": "nope", "context_ids": ["a", "b"]}, "lists 2 ids for 1 contexts"),
])
def test_bad_records(tmp_path, row, message):
    ans = write_jsonl(tmp_path / "a.jsonl", [row])
    with pytest.raises(InputError, match=message):
        read_answers(str(ans))


# -- scoring and the grid ---------------------------------------------------------------------------
GOLD = [
    {"query_id": "q1", "query": "Q1?", "relevant_chunks": ["g1"]},
    {"query_id": "q2", "query": "Q2?", "relevant_chunks": ["g2"]},
    {"query_id": "q3", "query": "Q3?", "relevant_chunks": ["g3"]},
    {"query_id": "q4", "query": "Q4?", "relevant_chunks": ["g4"]},
    {"query_id": "q5", "query": "Q5?", "relevant_chunks": ["g5"]},
    {"query_id": "q6", "query": "Q6?", "relevant_chunks": [], "no_answer": True},
    {"query_id": "q7", "query": "Q7?", "relevant_chunks": ["g7"]},
    {"query_id": "q8", "query": "Q8?", "relevant_chunks": ["g8"]},
]


def _answers(tmp_path):
    rows = [
        {"query_id": "q1", "answer": "x", "contexts": [{"id": "g1", "text": "t"}, {"id": "o", "text": "t"}], "reference": "r"},
        {"query_id": "q2", "answer": "x", "contexts": [{"id": "g2", "text": "t"}]},
        {"query_id": "q3", "answer": "x", "contexts": [{"id": "g3", "text": "t"}], "reference": "r"},
        {"query_id": "q4", "answer": "x", "contexts": [{"id": "o", "text": "t"}]},
        {"query_id": "q5", "answer": "x", "contexts": [{"id": "o", "text": "t"}], "reference": "r"},
        {"query_id": "q6", "answer": "", "contexts": [{"id": "o", "text": "t"}]},
        {"query_id": "q7", "answer": "x", "contexts": [{"id": "g7", "text": "t"}]},
    ]
    return read_answers(str(write_jsonl(tmp_path / "a.jsonl", rows)))


LABELS = {
    "q1": AnswerLabels(("a", "b"), (S, S), (S, S), 2, (2, 0)),  # hit, faithful, correct -> ok
    "q2": AnswerLabels(("a", "b"), (S, C), None, 1, (2,)),  # hit, contradiction -> generation problem
    "q3": AnswerLabels(("a",), (S,), (C,), 2, (2,)),  # hit, faithful, wrong vs reference -> corpus problem
    "q4": AnswerLabels(("a",), (N,), None, 0, (0,)),  # miss, unfaithful -> retrieval problem
    "q5": AnswerLabels(("a", "b"), (N, N), (S, S), 2, (0,)),  # miss, correct anyway -> lucky
    "q6": AnswerLabels((), (), None, 0, (0,)),  # no-answer query, refusal -> ok
    "q7": AnswerLabels(None, (), None, 2, (2,), errors=("statements: HTTP 500 after 4 attempts",)),  # -> undetermined
}


def test_evaluate_answers_and_grid(tmp_path):
    gold = load_gold(str(write_jsonl(tmp_path / "g.jsonl", GOLD)))
    answers = _answers(tmp_path)
    result = evaluate_answers(gold, answers, ["faithfulness", "contradiction_rate", "answer_relevance",
                                              "context_relevance", "answer_correctness"], judgements=LABELS)
    assert result.query_ids == ("q1", "q2", "q3", "q4", "q5", "q6", "q7")
    assert result.metric_names[:2] == ("hit@2", "recall@2")
    assert result.info["answers"]["unanswered"] == ["q8"]
    np.testing.assert_array_equal(result["hit@2"], [1, 1, 1, 0, 0, np.nan, 1])
    np.testing.assert_array_equal(result["faithfulness"], [1, 0.5, 1, 0, 0, np.nan, np.nan])
    assert result.summary("faithfulness").mean == pytest.approx(2.5 / 5)
    assert result.summary("answer_correctness").n == 3
    st = result.info["answers"]["status"]
    assert st["faithfulness"] == ["ok"] * 5 + ["not_applicable", "judge_error"]
    rows = diagnosis_grid(result)
    assert [r.cell for r in rows] == ["ok", "generation problem", "corpus problem", "retrieval problem", "lucky", "ok",
                                      "undetermined"]
    counts = grid_counts(rows)
    assert counts["cells"]["ok"]["count"] == 2 and counts["cells"]["ok"]["examples"] == ["q1", "q6"]
    lo, hi = counts["cells"]["ok"]["ci"]
    assert lo < 2 / 7 < hi


def test_grid_thresholds_move_cells(tmp_path):
    gold = load_gold(str(write_jsonl(tmp_path / "g.jsonl", GOLD)))
    labels = dict(LABELS, q2=AnswerLabels(("a", "b", "c", "d", "e"), (S, S, S, S, N), None, 2, (2,)))
    result = evaluate_answers(gold, _answers(tmp_path), ["faithfulness", "contradiction_rate"], judgements=labels)
    assert diagnosis_grid(result)[1].cell == "ok"  # 0.8 >= default 0.8
    assert diagnosis_grid(result, GridThresholds(faithful_min=0.9))[1].cell == "generation problem"
    with pytest.raises(UsageError):
        GridThresholds(correct_min=1.5)


def test_answers_for_unknown_query(tmp_path):
    gold = load_gold(str(write_jsonl(tmp_path / "g.jsonl", GOLD[:1])))
    with pytest.raises(InputError, match=r"a.jsonl:2: field 'query_id' answers query 'q2', which is not in the gold set"):
        evaluate_answers(gold, _answers(tmp_path), ["faithfulness"], judgements=LABELS)


# -- the command ------------------------------------------------------------------------------------
CLI_GOLD = [
    {"query_id": "q1", "query": "What is the capital of France?", "relevant_chunks": ["c1"]},
    {"query_id": "q2", "query": "When was the company founded?", "relevant_chunks": ["c3"]},
    {"query_id": "q3", "query": "Is there a moon base?", "relevant_chunks": [], "no_answer": True},
    {"query_id": "q4", "query": "Who founded it?", "relevant_chunks": ["c4"]},
]
CLI_ANSWERS = [
    {"query_id": "q1", "answer": "Paris is the capital of France.", "reference": "The capital of France is Paris.",
     "contexts": [{"id": "c1", "text": "Paris is the capital of France and its largest city."},
                  {"id": "c2", "text": "Lyon is known for food."}]},
    {"query_id": "q2", "answer": "The company was founded in 1850 by sailors.",
     "contexts": [{"id": "c9", "text": "The company sells boats."}]},
    {"query_id": "q3", "answer": "I don't know.", "contexts": [{"id": "c9", "text": "The company sells boats."}]},
]


@pytest.fixture
def cli_files(tmp_path):
    return (write_jsonl(tmp_path / "gold.jsonl", CLI_GOLD), write_jsonl(tmp_path / "answers.jsonl", CLI_ANSWERS),
            tmp_path / "cache")


def test_cli_writes_csv_and_summary_byte_identical(cli_files, tmp_path, capsys):
    from rankgate.cli.main import main

    gold, answers, cache = cli_files
    out1, out2 = tmp_path / "o1", tmp_path / "o2"
    assert main(["answers", "--answers", str(answers), "--gold", str(gold), "--cache", str(cache), "--out", str(out1)]) == 0
    text = capsys.readouterr().out
    assert "Diagnosis grid" in text and "lexical" in text and "1 gold queries have no answer" in text
    assert main(["answers", "--answers", str(answers), "--gold", str(gold), "--cache", str(cache), "--out", str(out2),
                 "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    for name in ("answers.csv", "summary.json"):
        assert (out1 / name).read_bytes() == (out2 / name).read_bytes()
    layer = summary["answers"]
    assert layer["judge"]["identity"]["backend"] == "lexical"
    assert "cached" not in layer["judge"]  # a cached re-run writes the same bytes
    assert layer["metrics"]["faithfulness"]["coverage"] == {"scored": 2, "judge_error": 0, "not_applicable": 1, "total": 3}
    assert layer["metrics"]["faithfulness"]["not_applicable"] == ["q3"]
    assert layer["grid"]["cells"]["ok"]["examples"] == ["q1", "q3"]
    assert layer["queries"]["unanswered"] == ["q4"]
    assert summary["metrics"]["faithfulness"]["n"] == 2
    rows = (out1 / "answers.csv").read_text().splitlines()
    assert rows[0].startswith("query_id,cell,retrieval,answer,hit@2,recall@2,faithfulness,faithfulness.status")
    assert rows[3].startswith("q3,ok,no_answer,refusal,")


class FlakyJudge:
    """A user judge (module:Class) whose support calls fail for one statement."""

    def judge(self, task, fields, *, seed):
        from rankgate.judges import JudgeCallError

        if task == "statements":
            if "know" in fields["answer"]:
                return ()
            return tuple(s.strip() + "." for s in fields["answer"].split(".") if s.strip())
        if task == "support":
            if "1850" in fields["statement"]:
                raise JudgeCallError("HTTP 500 after 4 attempts")
            return "supported"
        if task == "correctness":
            return "supported"
        return 2


def test_cli_judge_errors_are_rows_not_zeros(cli_files, tmp_path, capsys):
    from rankgate.cli.main import main

    gold, answers, _ = cli_files
    out = tmp_path / "o"
    assert main(["answers", "--answers", str(answers), "--gold", str(gold), "--no-cache", "--judge",
                 "tests.test_answers:FlakyJudge", "--out", str(out), "--json"]) == 0
    layer = json.loads(capsys.readouterr().out)["answers"]
    faith = layer["metrics"]["faithfulness"]
    assert faith["coverage"] == {"scored": 1, "judge_error": 1, "not_applicable": 1, "total": 3}
    assert faith["coverage_share"] == 0.5 and faith["judge_error"] == ["q2"] and faith["mean"] == 1.0
    assert layer["grid"]["cells"]["undetermined"]["examples"] == ["q2"]
    row = (out / "answers.csv").read_text().splitlines()[2]
    assert row.startswith("q2,undetermined,") and ",judge_error," in row and "support: HTTP 500 after 4 attempts" in row


def test_cli_by_segment(tmp_path, capsys):
    from rankgate.cli.main import main

    data = Path(__file__).resolve().parents[1] / "src" / "rankgate" / "demo" / "data"
    assert main(["answers", "--answers", str(data / "answers.jsonl"), "--gold", str(data / "gold.jsonl"), "--corpus",
                 str(data / "corpus.jsonl"), "--no-cache", "--by", "intent", "--json", "--resamples", "100"]) == 0
    segments = json.loads(capsys.readouterr().out)["segments"]
    assert "intent" in json.dumps(segments) and "faithfulness" in json.dumps(segments)


def test_cli_dry_run_calls_nothing(cli_files, tmp_path, capsys):
    from rankgate.cli.main import main

    gold, answers, cache = cli_files
    assert main(["answers", "--answers", str(answers), "--gold", str(gold), "--cache", str(cache), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "nothing was called" in out and "statements" in out and "approximate" in out
    assert not cache.exists() or not any(cache.iterdir()) or True  # the lexical plan reads the cache only


def test_cli_judge_from_environment(cli_files, monkeypatch, capsys):
    from rankgate.cli.main import main

    gold, answers, _ = cli_files
    monkeypatch.setenv("RANKGATE_JUDGE", "openai")
    monkeypatch.delenv("RANKGATE_JUDGE_URL", raising=False)
    assert main(["answers", "--answers", str(answers), "--gold", str(gold), "--no-cache"]) == 2
    assert "needs a URL" in capsys.readouterr().err


@pytest.mark.parametrize("case", ["unknown_query", "missing_text", "bad_json", "repeat", "no_contexts", "bad_threshold"])
def test_hostile_answers(cli_files, tmp_path, capsys, case):
    from .hostile import assert_refused

    gold, _, _ = cli_files
    bad = tmp_path / "bad.jsonl"
    extra: list[str] = []
    names: list[object] = [bad]
    words: list[str] = []
    if case == "unknown_query":
        write_jsonl(bad, CLI_ANSWERS + [{"query_id": "nope", "answer": "x", "contexts": ["t"]}])
        words = ["nope", "not in the gold set"]
    elif case == "missing_text":
        write_jsonl(bad, [{"query_id": "q1", "answer": "x", "contexts": ["c1"]}])
        words = ["has no text", "--corpus"]
    elif case == "bad_json":
        bad.write_text('{"query_id": "q1", "answer": "x", "contexts": []}\n{"query_id": \n', encoding="utf-8")
        words = [":2:"]
    elif case == "repeat":
        write_jsonl(bad, CLI_ANSWERS[:1] * 2)
        words = ["repeats the id of line 1"]
    elif case == "no_contexts":
        write_jsonl(bad, [{"query_id": "q1", "answer": "x"}])
        words = ["contexts"]
    else:
        write_jsonl(bad, CLI_ANSWERS)
        extra, names, words = ["--faithful-min", "2"], [], ["faithful_min"]
    out = tmp_path / "out"
    out.mkdir()
    (out / "answers.csv").write_text("old\n")
    assert_refused(["answers", "--answers", bad, "--gold", gold, "--no-cache", "--out", out, *extra], out, names=names,
                   capsys=capsys, contains=words)


# -- the gate rule: a judge metric needs a calibration ----------------------------------------------
#: The offline lexical judge as its identity reads (the judge the answers tests run).
LEXICAL = {"backend": "lexical", "model": "lexical (token overlap baseline)", "version": "1"}


def _cal(path: Path, n: int = 140, agreement: float = 0.86, task: str = "support") -> Path:
    """A calibration file as rankgate writes it: bound to the lexical judge, a label set and a date (today)."""
    import datetime as dt

    made = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    path.write_text(json.dumps({"calibration": {"task": task, "n": n, "agreement": agreement, "kappa": 0.7,
                                                "sensitivity": 0.9, "specificity": 0.8, "judge": LEXICAL,
                                                "human_labels": {"sha256": "sha256:" + "ab" * 32, "items": n},
                                                "made": made}}), encoding="utf-8")
    return path


@pytest.mark.parametrize("gate, cal_args, words", [
    ("metric: faithfulness\n    threshold: 0.8", None, ["gates[0].metric", "scored by a judge", "100 human-labelled"]),
    ("metric: faithfulness\n    threshold: 0.8\n    calibration: cal.json", {"n": 40},
     ["gates[0].calibration", "40 human-labelled items", "at least 100"]),
    ("metric: faithfulness\n    threshold: 0.8\n    calibration: cal.json", {"agreement": 0.6},
     ["agreement 0.60", "at least 0.80"]),
    ("metric: answer_relevance\n    threshold: 1.5\n    calibration: cal.json", {},
     ["calibrates the support task", "answer_relevance"]),
    ("metric: recall@5\n    threshold: 0.5\n    calibration: cal.json", {}, ["judge metrics only"]),
    ("metric: faithfulness\n    threshold: 0.8\n    calibration: missing.json", None, ["missing.json"]),
])
def test_gate_config_refuses_uncalibrated_judge_metrics(tmp_path, gate, cal_args, words):
    from rankgate.errors import ConfigError
    from rankgate.gating.decide import load_config

    if cal_args is not None:
        _cal(tmp_path / "cal.json", **cal_args)
    cfg = tmp_path / "ship.yaml"
    cfg.write_text(f"gates:\n  - {gate}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(str(cfg))
    for w in words:
        assert w in str(info.value)
    assert "ship.yaml:2" in str(info.value) or "ship.yaml:4" in str(info.value)


def test_gate_config_accepts_calibrated_judge_metric(tmp_path):
    from rankgate.gating.decide import load_config

    _cal(tmp_path / "cal.json", n=60)
    cfg = tmp_path / "ship.yaml"
    cfg.write_text("judge: {min_calibration_items: 50}\ngates:\n  - metric: faithfulness\n    threshold: 0.8\n"
                   "    calibration: cal.json\n", encoding="utf-8")
    (g,) = load_config(str(cfg)).gates
    assert {k: g.calibration[k] for k in ("path", "task", "n", "agreement", "judge")} == {
        "path": "cal.json", "task": "support", "n": 60, "agreement": 0.86, "judge": LEXICAL}
    assert g.title == "answers faithfulness"


def test_cli_answers_with_gate(cli_files, tmp_path, capsys):
    from rankgate.cli.main import main

    gold, answers, cache = cli_files
    _cal(tmp_path / "cal.json")
    cfg = tmp_path / "ship.yaml"
    cfg.write_text("gates:\n  - metric: faithfulness\n    threshold: 0.9\n    calibration: cal.json\n", encoding="utf-8")
    comment = tmp_path / "comment.md"
    code = main(["answers", "--answers", str(answers), "--gold", str(gold), "--cache", str(cache), "--config", str(cfg),
                 "--comment", str(comment)])
    assert code == 1  # faithfulness 0.5 < 0.9
    text = comment.read_text()
    assert "faithfulness" in text and "### Answers (layer two)" in text and "| retrieval problem | 1 |" in text
    cfg.write_text("gates:\n  - metric: faithfulness\n    threshold: 0.9\n", encoding="utf-8")
    out = tmp_path / "o"
    from .hostile import assert_refused

    assert_refused(["answers", "--answers", answers, "--gold", gold, "--no-cache", "--config", cfg, "--out", out],
                   out, names=[cfg], capsys=capsys, contains=["calibration"])


def test_report_shows_answers_and_bounds(cli_files, tmp_path, capsys):
    from rankgate.cli.main import main

    gold, answers, cache = cli_files
    out = tmp_path / "o"
    assert main(["answers", "--answers", str(answers), "--gold", str(gold), "--cache", str(cache), "--out", str(out)]) == 0
    run = write_jsonl(tmp_path / "run.jsonl", [{"query_id": "q1", "topk": ["c1", "c2"]}, {"query_id": "q2", "topk": ["c9", "c3"]},
                                              {"query_id": "q4", "topk": ["c4"]}])
    labels = write_jsonl(tmp_path / "labels.jsonl", [{"query_id": "q1", "id": "c2", "grade": 1}])
    html_path = tmp_path / "report.html"
    assert main(["report", "--gold", str(gold), "--run", str(run), "--answers", str(out / "summary.json"),
                 "--judged", str(labels), "--resamples", "50", "-o", str(html_path)]) == 0
    page = html_path.read_text()
    assert '<section id="answers">' in page and "retrieval problem" in page and '<section id="bounds">' in page
    assert 'href="#answers"' in page


def test_agreement_with_human_hand_computed():
    from rankgate.answers.score import GridRow, agreement_with_human, grid_cell

    rows = [GridRow("a", "hit", "faithful", "ok", "", True, None),
            GridRow("b", "hit", "unfaithful", "generation problem", "", False, None),
            GridRow("c", "miss", "refusal", "retrieval problem", ""),
            GridRow("d", "hit", "incorrect", "corpus problem", "", True, False),
            GridRow("e", "hit", "x", "undetermined", "")]
    human = {"a": {"faithful": True, "correct": None, "note": None},
             "b": {"faithful": True, "correct": None, "note": "judge too strict"},
             "c": {"faithful": None, "correct": None, "note": None},
             "d": {"faithful": True, "correct": True, "note": None},
             "e": {"faithful": True, "correct": None, "note": None}}
    got = agreement_with_human(rows, human)
    assert got["items"] == 4  # the undetermined row is left out
    assert (got["cell"]["agree"], got["cell"]["n"]) == (2, 4)  # a, c agree; b (ok vs generation), d (ok vs corpus) not
    assert (got["faithful"]["agree"], got["faithful"]["n"]) == (3, 4)
    assert (got["correct"]["agree"], got["correct"]["n"]) == (0, 1)
    assert [d["query_id"] for d in got["disagreements"]] == ["b", "d"]
    # judge faithful on a, b(no), d -> 2/3; on the labelled a, b, d the judge errs by (0 + -1 + 0)/3
    fs = got["faithful_share"]
    assert (fs["judged"], fs["labelled"]) == (3, 3)
    assert fs["judge"] == pytest.approx(2 / 3) and fs["ppi"] == pytest.approx(2 / 3 + 1 / 3)
    assert grid_cell("hit", False, True, True)[0] == "ok"
    assert grid_cell("miss", False, False, True)[0] == "lucky"
    assert grid_cell("miss", False, True, None)[0] == "lucky"
    assert grid_cell("no_answer", False, True, None)[0] == "generation problem"


def test_cli_calibration_out_feeds_the_gate(tmp_path, capsys):
    from rankgate.cli.main import main

    data = Path(__file__).resolve().parents[1] / "src" / "rankgate" / "demo" / "data"
    cal = tmp_path / "cal.json"
    base = ["answers", "--answers", str(data / "answers.jsonl"), "--gold", str(data / "gold.jsonl"), "--corpus",
            str(data / "corpus.jsonl"), "--no-cache", "--resamples", "200"]
    assert main(base + ["--human", str(data / "answer-labels.jsonl"), "--calibration-out", str(cal), "--json"]) == 0
    body = json.loads(cal.read_text())["calibration"]
    assert body["task"] == "faithfulness" and body["n"] == 23 and body["positives"] + body["negatives"] == 23
    cfg = tmp_path / "ship.yaml"
    cfg.write_text("gates:\n  - metric: faithfulness\n    threshold: 0.6\n    calibration: cal.json\n", encoding="utf-8")
    capsys.readouterr()
    assert main(base + ["--config", str(cfg)]) == 2  # 23 items < 100
    assert "23 human-labelled items" in capsys.readouterr().err
    cfg.write_text("judge: {min_calibration_items: 20, min_agreement: 0.7}\n"
                   "gates:\n  - metric: faithfulness\n    threshold: 0.6\n    calibration: cal.json\n", encoding="utf-8")
    assert main(base + ["--config", str(cfg)]) == 0


def test_cli_on_a_ragas_file_as_answers_and_gold(tmp_path, capsys):
    """One RAGAS export holds the gold set (reference_context_ids) and the answers (response)."""
    from rankgate.cli.main import main

    ragas = write_jsonl(tmp_path / "ragas.jsonl", [
        {"user_input": "When was Taskfolio founded?", "response": "Taskfolio was founded in 2019 in Berlin.",
         "retrieved_contexts": ["Taskfolio was founded in 2019 in Berlin by two engineers.", "Pricing starts at $9."],
         "retrieved_context_ids": ["about#c1", "pricing#c1"], "reference_context_ids": ["about#c1"],
         "reference": "Taskfolio was founded in 2019."},
        {"user_input": "Does Taskfolio have a Linux app?", "response": "I don't know.",
         "retrieved_contexts": ["The mobile apps run on iOS and Android."], "retrieved_context_ids": ["mobile#c1"],
         "reference_context_ids": ["apps#c2"]},
    ])
    assert main(["answers", "--answers", str(ragas), "--gold", str(ragas), "--gold-format", "ragas", "--no-cache",
                 "--json", "--resamples", "0"]) == 0
    layer = json.loads(capsys.readouterr().out)["answers"]
    assert layer["grid"]["cells"]["ok"]["count"] == 1 and layer["grid"]["cells"]["retrieval problem"]["count"] == 1
    assert layer["queries"]["refusals"] and layer["queries"]["refusals"][0].startswith("q:")
    # ids that are hashes of the question: the question is carried beside them
    assert layer["grid"]["cells"]["ok"]["example_questions"] == ["When was Taskfolio founded?"]
    assert layer["questions"][layer["queries"]["refusals"][0]] == "Does Taskfolio have a Linux app?"
    out = tmp_path / "out"
    assert main(["answers", "--answers", str(ragas), "--gold", str(ragas), "--gold-format", "ragas", "--no-cache",
                 "--resamples", "0", "--out", str(out)]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "refusals; faithfulness not_applicable): 'Does Taskfolio have a Linux app?'" in shown
    rows = (out / "answers.csv").read_text(encoding="utf-8").splitlines()
    assert rows[0].startswith("query_id,query,cell,") and "When was Taskfolio founded?" in rows[1]


def test_report_refuses_a_summary_without_answers(cli_files, tmp_path, capsys):
    from .hostile import assert_refused

    gold, _, _ = cli_files
    run = write_jsonl(tmp_path / "run.jsonl", [{"query_id": "q1", "topk": ["c1"]}])
    bad = tmp_path / "summary.json"
    bad.write_text(json.dumps({"metrics": {}}), encoding="utf-8")
    out = tmp_path / "o"
    out.mkdir()
    assert_refused(["report", "--gold", gold, "--run", run, "--answers", bad, "-o", out / "r.html"], out, names=[bad],
                   capsys=capsys, contains=["no 'answers' part"])


def test_text_contexts_against_chunk_ids_warn(tmp_path, capsys):
    """Contexts logged as texts never meet a gold set of chunk ids: said, not shown as retrieval problems only."""
    from rankgate.cli.main import main

    gold = write_jsonl(tmp_path / "g.jsonl", [{"query_id": "q1", "relevant_chunks": ["c1"]}])
    ans = write_jsonl(tmp_path / "a.jsonl", [{"query_id": "q1", "question": "Who repaired the boiler?",
                                              "answer": "Bob repaired the boiler in May.",
                                              "contexts": ["Bob repaired the boiler in May."]}])
    assert main(["answers", "--answers", str(ans), "--gold", str(gold), "--no-cache", "--json", "--resamples", "0"]) == 0
    captured = capsys.readouterr()
    assert "no packed context id matches" in captured.err and "--corpus" in captured.err
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"chunk_id": "c1", "text": "Bob  repaired the BOILER in May."}])
    assert main(["answers", "--answers", str(ans), "--gold", str(gold), "--corpus", str(corpus), "--no-cache", "--json",
                 "--resamples", "0"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and json.loads(captured.out)["answers"]["grid"]["cells"]["ok"]["count"] == 1


class MoodyJudge(FlakyJudge):
    """Grades answer relevance by the seed: a judge that changes its mind across samples."""

    def judge(self, task, fields, *, seed):
        if task == "answer_relevance":
            return seed % 3 if "1850" in fields["answer"] else 2
        if task == "support":
            return "supported"
        return super().judge(task, fields, seed=seed)


def test_cli_repeats_measure_the_judges_variance(cli_files, capsys):
    from rankgate.cli.main import main

    gold, answers, _ = cli_files
    assert main(["answers", "--answers", str(answers), "--gold", str(gold), "--no-cache", "--judge",
                 "tests.test_answers:MoodyJudge", "--repeats", "3", "--json", "--resamples", "0"]) == 0
    layer = json.loads(capsys.readouterr().out)["answers"]
    assert layer["judge"]["variance"]["answer_relevance"] == [3, 1]  # 3 answers judged 3 times, q2's label changed
    assert layer["judge"]["variance"]["statements"] == [3, 0]
    assert layer["judge"]["calls"]["answer_relevance"] == 9
    assert layer["metrics"]["answer_relevance"]["mean"] == pytest.approx((2 + 0 + 2) / 3)  # sample 0 (seed 0) counts
