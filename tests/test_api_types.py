"""The Python API checks its arguments at the door: a value of the wrong type is a UsageError naming the
parameter, what it takes and what it got (never a TypeError or AttributeError from deep inside); numpy
scalars give what the Python values give; a long table in memory (a pandas DataFrame, a list of dicts) is a
gold set or a run, read by the long tables' rules."""

from __future__ import annotations

import dataclasses
import inspect
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rankgate
from rankgate.errors import InputError, UsageError

from .conftest import examples

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
GOLD = {"q1": {"d1": 2, "d2": 1}, "q2": {"d3": 1}}
RUN = {"q1": {"d1": 1.3, "d2": 0.9}, "q2": {"d3": 0.5, "d4": 0.7}}
METRICS = ["ndcg@10", "recall@5", "mrr"]


def _refusal(fn) -> str:
    with pytest.raises(UsageError) as info:
        fn()
    return str(info.value)


def _m():
    import rankgate.flows.evaluate as m

    return m


# ---------------------------------------------------------------------------------------------------
# Wrong types: the audit's cases, and more of the same class


def _evaluate(**kw):
    return lambda: rankgate.evaluate(GOLD, RUN, **kw)


def _request(**kw):
    return lambda: _m().run_evaluation(_m().EvaluateRequest(GOLD, RUN, **kw))


CASES = {
    # the audit's reproductions
    "metrics=None": (_evaluate(metrics=None), "The 'metrics' parameter of evaluate"),
    "columns=list": (_evaluate(columns=["qid"]), "The 'columns' parameter of evaluate"),
    "doc_map=list": (_evaluate(level="doc", doc_map=["a"]), "The 'doc_map' parameter of evaluate"),
    "by=None": (_request(by=None), "The 'by' parameter of EvaluateRequest"),
    "Scoring(k='5')": (lambda: _m().Scoring(k="5"), "The 'k' parameter of Scoring"),
    "statistics=None": (_request(statistics=None), "The 'statistics' parameter of EvaluateRequest"),
    "scoring=dict": (_request(scoring={"k": 5}), "The 'scoring' parameter of EvaluateRequest"),
    # new instances: evaluate
    "metrics=5": (_evaluate(metrics=5), "'metrics' parameter of evaluate"),
    "metrics with a number": (_evaluate(metrics=["mrr", 5]), "'metrics' parameter of evaluate"),
    "doc_map values": (_evaluate(level="doc", doc_map={"d1": 7}), "'doc_map' parameter of evaluate"),
    "trec='no'": (_evaluate(trec="no"), "'trec' parameter of evaluate must be true or false"),
    "complete=1": (_evaluate(complete=1), "'complete' parameter of evaluate"),
    "level=None": (_evaluate(level=None), "'level' parameter of evaluate must be one of 'chunk', 'doc'"),
    "dedupe=True": (_evaluate(dedupe=True), "'dedupe' parameter of evaluate"),
    "doc_sep=1": (_evaluate(doc_sep=1), "'doc_sep' parameter of evaluate"),
    "k=5.0": (_evaluate(k=5.0), "'k' parameter of evaluate"),
    # the requests
    "by=5": (_request(by=5), "'by' parameter of EvaluateRequest"),
    "by=dict": (_request(by={"intent": 1}), "'by' parameter of EvaluateRequest"),
    "sweep=5": (_request(sweep=5), "'sweep' parameter of EvaluateRequest"),
    "ks=5": (_request(sweep="recall", ks=5), "'ks' parameter of EvaluateRequest"),
    "routing='yes'": (_request(routing="yes"), "'routing' parameter of EvaluateRequest"),
    "judged=5": (_request(judged=5), "'judged' parameter of EvaluateRequest"),
    "Scoring(metrics=None)": (lambda: _m().Scoring(metrics=None), "'metrics' parameter of Scoring"),
    "Scoring(columns=dict)": (lambda: _m().Scoring(columns={"query_id": "qid"}), "'columns' parameter of Scoring"),
    "Scoring(doc_map=dict)": (lambda: _m().Scoring(doc_map={"a": "b"}), "'doc_map' parameter of Scoring"),
    "Scoring(level=1)": (lambda: _m().Scoring(level=1), "'level' parameter of Scoring"),
    "Statistics(seed='1')": (lambda: _m().Statistics(seed="1"), "'seed' parameter of Statistics"),
    "Statistics(resamples=None)": (lambda: _m().Statistics(resamples=None), "'resamples' parameter of Statistics"),
    "Statistics(confidence='0.9')": (lambda: _m().Statistics(confidence="0.9"), "'confidence' parameter of Statistics"),
    "CompareRequest(runs=None)": (lambda: _compare(runs=None), "'runs' parameter of CompareRequest"),
    "CompareRequest(top='1')": (lambda: _compare(top="1"), "'top' parameter of CompareRequest"),
    "CompareRequest(permutations=None)": (lambda: _compare(permutations=None), "'permutations' parameter of CompareRequest"),
    "CompareRequest(statistics=None)": (lambda: _compare(statistics=None), "'statistics' parameter of CompareRequest"),
    "GateRequest(evaluate={kk})": (lambda: _gate_request(evaluate={"kk": 1}), "'evaluate' parameter of GateRequest names the option 'kk'"),
    "GateRequest(evaluate=list)": (lambda: _gate_request(evaluate=[("k", 5)]), "'evaluate' parameter of GateRequest"),
    "GateRequest(queries=5)": (lambda: _gate_request(queries=5), "'queries' parameter of GateRequest"),
    "gate(kk=1)": (lambda: rankgate.gate(str(ROOT / "tests/data/report/ship-criteria.yaml"), GOLD, RUN, kk=1),
                   "gate was given the option 'kk'"),
    "ReportRequest(scoring=dict)": (lambda: _report(scoring={"k": 5}), "'scoring' parameter of ReportRequest"),
    "ReportRequest(statistics=5)": (lambda: _report(statistics=5), "'statistics' parameter of ReportRequest"),
    "ReportRequest(top_misses='1')": (lambda: _report(top_misses="1"), "'top_misses' parameter of ReportRequest"),
    "ReportRequest(metrics=5)": (lambda: _report(metrics=5), "'metrics' parameter of ReportRequest"),
    "build_report(kk=1)": (lambda: _build_report(kk=1), "build_report was given the option 'kk'"),
    "load_gold(columns=list)": (lambda: rankgate.load_gold(GOLD, columns=["qid"]), "'columns' parameter of load_gold"),
    "load_run(label=5)": (lambda: rankgate.load_run(RUN, label=5), "'label' parameter of load_run"),
    "load_run(format=5)": (lambda: rankgate.load_run(RUN, format=5), "'format' parameter of load_run"),
    "assert_retrieval(worst='1')": (lambda: _assert(worst="1"), "'worst' parameter of assert_retrieval"),
    "assert_retrieval(seed=None)": (lambda: _assert(seed=None), "'seed' parameter of assert_retrieval"),
    "assert_retrieval(resamples='9')": (lambda: _assert(resamples="9"), "'resamples' parameter of assert_retrieval"),
    "assert_retrieval(kk=1)": (lambda: _assert(kk=1), "assert_retrieval was given the option 'kk'"),
    "AnswersRequest(by=None)": (lambda: _answers(by=None), "'by' parameter of AnswersRequest"),
    "AnswersRequest(judge=dict)": (lambda: _answers(judge={}), "'judge' parameter of AnswersRequest"),
    "parse_metric(None)": (lambda: rankgate.parse_metric(None), "a metric spec is a string"),
}


def _compare(**kw):
    from rankgate.flows.compare import CompareRequest

    return CompareRequest(**{"runs": ("a.jsonl", "b.jsonl"), "gold": "g.jsonl", **kw})


def _gate_request(**kw):
    from rankgate.flows.gate import GateRequest

    return GateRequest("ship.yaml", GOLD, RUN, **kw)


def _report(**kw):
    from rankgate.flows.report import ReportRequest

    return ReportRequest(**{"gold": GOLD, "run": RUN, **kw})


def _build_report(**kw):
    from rankgate.render.build import build_report

    return build_report(GOLD, RUN, **kw)


def _assert(**kw):
    from rankgate.testing import assert_retrieval

    return assert_retrieval(GOLD, RUN, "mrr >= 0", **kw)


def _answers(**kw):
    from rankgate.flows.answers import AnswersRequest

    return AnswersRequest("answers.jsonl", "gold.jsonl", **kw)


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_wrong_type_is_a_usage_error_naming_the_parameter(case):
    call, words = CASES[case]
    message = _refusal(call)
    assert words in message, message
    assert "\n" not in message and len(message) < 400


def test_the_refusal_says_what_was_expected_and_what_was_given():
    assert _refusal(_request(by=None)) == (
        "The 'by' parameter of EvaluateRequest must be a string or a list of strings; got None.")
    assert _refusal(_evaluate(columns=["qid"])) == (
        "The 'columns' parameter of evaluate must be a mapping of strings to strings, or None; got list ['qid'].")
    assert _refusal(lambda: _m().Scoring(k="5")) == (
        "The 'k' parameter of Scoring must be an integer between 1 and 1,000,000,000; got '5'.")
    # a bound is named as the field (the command line says the option: --k must be …)
    assert _refusal(lambda: _m().Scoring(k=0)).startswith("k must be an integer between 1 and")


class _Nothing:
    """A value of no type any parameter takes."""

    def __repr__(self) -> str:
        return "<nothing>"


# Fields that take any input (a path or data in memory, a loaded object): read, and refused if need be,
# where the input is read.
ANY_INPUT = {"gold", "run", "candidate", "baseline", "config", "corpus", "lexical", "answers", "bounds", "queue", "human",
             "judge_labels", "trace", "old_corpus", "new_corpus"}


def _requests():
    from rankgate.flows.answers import AnswersRequest
    from rankgate.flows.calibrate_abstention import AbstentionRequest
    from rankgate.flows.compare import CompareRequest
    from rankgate.flows.gate import GateRequest
    from rankgate.flows.gold import RemapRequest, ValidateRequest
    from rankgate.flows.incident import IncidentNewRequest
    from rankgate.flows.judge import CalibrationRequest, RelevanceRequest
    from rankgate.flows.pool import PoolRequest
    from rankgate.flows.report import ReportRequest
    from rankgate.flows.retrieve import RetrieveRequest
    from rankgate.flows.stress import StressRequest
    from rankgate.flows.traces import SampleRequest, TracesRequest

    m = _m()
    return {
        m.Scoring: {}, m.Statistics: {}, m.EvaluateRequest: {"gold": GOLD, "run": RUN},
        CompareRequest: {"runs": ("a", "b"), "gold": "g"}, GateRequest: {"config": "c", "gold": "g", "candidate": "r"},
        ReportRequest: {"gold": "g", "run": "r"}, AnswersRequest: {"answers": "a", "gold": "g"},
        # the other commands' requests
        PoolRequest: {"gold": "g", "runs": ("r",)}, RelevanceRequest: {"queue": "q"},
        CalibrationRequest: {"human": "h", "judge_labels": "j"}, AbstentionRequest: {"gold": "g", "run": "r"},
        IncidentNewRequest: {"trace": "t"}, StressRequest: {"gold": "g", "run": "r"}, RetrieveRequest: {"beir": "b"},
        TracesRequest: {"traces": ("t",)}, SampleRequest: {"traces": ("t",)}, ValidateRequest: {"gold": "g"},
        RemapRequest: {"gold": "g", "old_corpus": "o", "new_corpus": "n"},
    }


@pytest.mark.parametrize("cls", sorted(_requests(), key=lambda c: c.__name__), ids=lambda c: c.__name__)
def test_every_field_of_every_request_is_checked_when_built(cls):
    """The class of bug, not its instances: a request field of no accepted type is refused when the request
    is built, naming the field (a field added later without a check fails here)."""
    required = _requests()[cls]
    for f in dataclasses.fields(cls):
        if f.name in ANY_INPUT:
            continue
        message = _refusal(lambda name=f.name: cls(**{**required, name: _Nothing()}))
        assert f"'{f.name}'" in message and "<nothing>" in message, (f.name, message)


def test_evaluate_options_are_the_ones_evaluate_takes():
    from rankgate._util.constraints import EVALUATE_OPTIONS
    from rankgate.scoring.engine import evaluate

    params = inspect.signature(evaluate).parameters  # (scoring= holds them all as one value)
    assert list(EVALUATE_OPTIONS) == [n for n, p in params.items() if p.kind is p.KEYWORD_ONLY and n != "scoring"]


def test_in_memory_inputs_with_a_sweep_are_not_taken_for_pipes():
    # a flow that reads its inputs twice asked whether a dict is a pipe (TypeError from os.stat)
    ev = _m().run_evaluation(_m().EvaluateRequest(GOLD, RUN, sweep="recall", ks=[1, np.int64(2)],
                                                  statistics=_m().Statistics(resamples=0)))
    assert ev.sweep is not None and ev.sweep.ks == (1, 2)


def test_a_string_is_one_name_not_its_letters():
    from rankgate.flows.answers import AnswersRequest
    from rankgate.flows.pool import PoolRequest
    from rankgate.flows.traces import TracesRequest

    assert AnswersRequest("a", "g", by="lang").by == ("lang",)
    assert TracesRequest("traces.jsonl").traces == ("traces.jsonl",)
    assert PoolRequest("g", Path("run.jsonl")).runs == (Path("run.jsonl"),)
    assert _m().EvaluateRequest(GOLD, RUN, by=np.array(["intent", "lang"])).by == ("intent", "lang")


# ---------------------------------------------------------------------------------------------------
# numpy scalars


def _same(a, b) -> None:
    assert a.query_ids == b.query_ids and all(type(q) is str for q in a.query_ids)
    assert a.metric_names == b.metric_names
    for name in a.metric_names:
        np.testing.assert_array_equal(a.values[name], b.values[name])


def test_numpy_scalars_give_the_results_of_python_values():
    py = rankgate.evaluate(GOLD, RUN, ["ndcg", "recall", "mrr"], k=5)
    gold = {np.str_("q1"): {np.str_("d1"): np.int32(2), "d2": np.int64(1)}, "q2": {"d3": np.uint8(1)}}
    run = {np.str_("q1"): {"d1": np.float32(1.3), "d2": np.float32(0.9)}, "q2": {"d3": np.float16(0.5), "d4": np.float64(0.7)}}
    _same(py, rankgate.evaluate(gold, run, [np.str_("ndcg"), "recall", "mrr"], k=np.int64(5)))
    records = [{"query_id": np.str_("q1"), "k": np.int64(5), "intent": np.str_("faq"),
                "relevant_chunks": [{"chunk_id": np.str_("d1"), "grade": np.int64(2)}, {"chunk_id": "d2", "grade": np.int8(1)}]},
               {"query_id": "q2", "relevant": [np.str_("d3")], "no_answer": np.bool_(False)}]
    runs = [{"query_id": "q1", "topk": [{"chunk_id": "d1", "rank": np.int64(1)}, {"chunk_id": "d2", "rank": np.int32(2)}]},
            {"query_id": np.str_("q2"), "retrieved": [np.str_("d4"), "d3"]}]
    plain_records = json.loads(json.dumps(records, default=lambda v: v.item()))
    plain_runs = json.loads(json.dumps(runs, default=lambda v: v.item()))
    _same(rankgate.evaluate(plain_records, plain_runs, METRICS), rankgate.evaluate(records, runs, METRICS))
    g = rankgate.load_gold(records)
    assert g.fields["k"] == [5, None] and g.fields["intent"] == ["faq", None]
    assert type(g.fields["k"][0]) is int


def test_numpy_integers_are_ids_as_python_integers_are():
    _same(rankgate.evaluate([{"query_id": 1, "relevant": [7, 8]}], [{"query_id": 1, "retrieved": [8, 7]}], METRICS),
          rankgate.evaluate([{"query_id": np.int64(1), "relevant": [np.int64(7), np.int32(8)]}],
                            [{"query_id": np.int16(1), "retrieved": [np.int64(8), np.int64(7)]}], METRICS))
    _same(rankgate.evaluate([{"query_id": "q", "relevant": {7: 1}}], {"q": ["7"]}, METRICS),
          rankgate.evaluate([{"query_id": "q", "relevant": {np.int64(7): np.int64(1)}}], {"q": ["7"]}, METRICS))


def test_whole_float_grades_in_a_dict_count_as_relevant():
    # {qid: {doc: 2.0}} was read as a no-answer query, then refused for listing a relevant item
    _same(rankgate.evaluate({"q": {"d": 2}}, {"q": ["d"]}, METRICS), rankgate.evaluate({"q": {"d": 2.0}}, {"q": ["d"]}, METRICS))
    with pytest.raises(InputError, match="must be an integer grade; got 2.5"):
        rankgate.evaluate({"q": {"d": 2.5}}, {"q": ["d"]}, METRICS)


def test_numpy_options_of_the_requests_are_their_python_values():
    m = _m()
    st = m.Statistics(seed=np.int64(3), resamples=np.int32(50), confidence=np.float32(0.9))
    assert st == m.Statistics(seed=3, resamples=50, confidence=0.9)
    assert [type(v) for v in st.to_dict().values()] == [int, int, float]
    assert m.Scoring(k=np.int64(5), trec=np.bool_(True)) == m.Scoring(k=5, trec=True)
    args = (str(EXAMPLES / "gold.jsonl"), str(EXAMPLES / "run.jsonl"))
    py = m.run_evaluation(m.EvaluateRequest(*args, by="intent", statistics=m.Statistics(seed=3, resamples=50, confidence=0.9)))
    npy = m.run_evaluation(m.EvaluateRequest(*args, by=np.str_("intent"), statistics=st))
    assert json.dumps(npy.parts()) == json.dumps(py.parts())  # (summary.json's parts: a numpy value would not serialise)
    assert npy.cis == py.cis


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["q1", "q2", "q3"]), st.sampled_from(["a", "b", "c", "d"]),
                          st.integers(0, 3), st.floats(-5, 5, allow_nan=False, width=32)),
                min_size=1, max_size=20, unique_by=lambda t: t[:2]),
       st.sampled_from([np.int8, np.int32, np.int64, np.uint16]), st.sampled_from([np.float16, np.float32, np.float64]),
       st.integers(1, 5))
def test_any_numpy_typed_data_scores_as_its_python_values(rows, int_type, float_type, k):
    gold: dict = {}
    run: dict = {}
    for q, d, grade, score in rows:
        gold.setdefault(q, {})[d] = grade
        run.setdefault(q, {})[d] = float(str(float_type(score)))  # the value the numpy scalar stands for
    np_gold = {np.str_(q): {np.str_(d): int_type(g) for d, g in items.items()} for q, items in gold.items()}
    np_run = {np.str_(q): {d: float_type(s) for d, s in items.items()} for q, items in run.items()}
    _same(rankgate.evaluate(gold, run, ["ndcg", "recall", "precision", "mrr"], k=k),
          rankgate.evaluate(np_gold, np_run, ["ndcg", "recall", "precision", "mrr"], k=np.int64(k)))


# ---------------------------------------------------------------------------------------------------
# Long tables in memory


class _Frame:
    """What rankgate reads of a pandas DataFrame (``columns`` and ``to_dict(orient="records")``), so the
    rules are tested where pandas is not installed."""

    def __init__(self, columns: dict[str, list]) -> None:
        self.columns = list(columns)
        self._rows = [dict(zip(columns, values)) for values in zip(*columns.values())]

    def to_dict(self, orient: str) -> list[dict]:
        assert orient == "records"
        return [dict(r) for r in self._rows]


LONG = {"query_id": ["q1", "q1", "q1", "q2", "q3", "q4"],
        "chunk_id": ["d1", "d2", "d5", "d3", "d9", "d7"],
        "grade": [2, 1, 0, 1, 3, 0],
        "intent": ["faq", "faq", "faq", "howto", "faq", "faq"],
        "k": [3, 3, 3, 5, 5, 5],
        "no_answer": [False, False, False, False, False, True],
        "note": [None, "partial", None, None, None, None],
        "text": ["one", "two", "three", "four", "five", "six"]}  # a chunk's text: about rows, not read
LONG_JSONL = [
    {"query_id": "q1", "intent": "faq", "k": 3, "relevant_chunks": [
        {"chunk_id": "d1", "grade": 2}, {"chunk_id": "d2", "grade": 1, "note": "partial"}, {"chunk_id": "d5", "grade": 0}]},
    {"query_id": "q2", "intent": "howto", "k": 5, "relevant_chunks": [{"chunk_id": "d3", "grade": 1}]},
    {"query_id": "q3", "intent": "faq", "k": 5, "relevant_chunks": [{"chunk_id": "d9", "grade": 3}]},
    {"query_id": "q4", "intent": "faq", "k": 5, "relevant_chunks": [{"chunk_id": "d7", "grade": 0}], "no_answer": True},
]
LONG_RUN = {"query_id": ["q1", "q1", "q1", "q2", "q2", "q3", "q4"],
            "doc_id": ["d2", "d1", "d8", "d4", "d3", "d9", "d7"],
            "score": [0.9, 0.8, 0.7, 0.9, 0.1, 0.5, 0.2]}
LONG_METRICS = ["ndcg@10", "recall", "precision", "mrr", "hit@1", "false_evidence@3"]


def _write_jsonl(path: Path, records: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


def _maker(kind: str):
    if kind == "list of dicts":
        return lambda cols: [dict(zip(cols, v)) for v in zip(*cols.values())]
    if kind == "frame":
        return _Frame
    return pytest.importorskip("pandas").DataFrame  # (imported by the test that uses it, not at collection)


@pytest.mark.parametrize("kind", ["list of dicts", "frame", "pandas"])
def test_a_long_table_in_memory_evaluates_as_the_jsonl_gold_set(kind, tmp_path):
    make = _maker(kind)
    gold_file = _write_jsonl(tmp_path / "gold.jsonl", LONG_JSONL)
    runs = [{"query_id": q, "topk": []} for q in dict.fromkeys(LONG_RUN["query_id"])]
    for q, d, s in zip(*LONG_RUN.values()):
        next(r for r in runs if r["query_id"] == q)["topk"].append({"chunk_id": d, "score": s})
    run_file = _write_jsonl(tmp_path / "run.jsonl", runs)
    want = rankgate.evaluate(gold_file, run_file, LONG_METRICS)
    got = rankgate.evaluate(make(LONG), make(LONG_RUN), LONG_METRICS)
    _same(want, got)
    assert got.means == want.means and got.no_answer == want.no_answer
    g = rankgate.load_gold(make(LONG))
    assert g.fields["intent"] == ["faq", "howto", "faq", "faq"] and g.fields["k"] == [3, 5, 5, 5]
    assert "text" not in g.fields and g.notes == [None, "partial", None, None, None, None]
    m = _m()
    by_file = m.run_evaluation(m.EvaluateRequest(gold_file, run_file, by="intent", statistics=m.Statistics(resamples=0)))
    by_frame = m.run_evaluation(m.EvaluateRequest(make(LONG), make(LONG_RUN), by="intent",
                                                  statistics=m.Statistics(resamples=0)))
    assert by_frame.segments.to_dict() == by_file.segments.to_dict()


def test_a_long_table_with_other_column_names_and_doc_ids():
    cols = {"qid": ["q1", "q1", "q2"], "doc_id": ["d1", "d2", "d3"], "rel": [1, 0, 2]}
    got = rankgate.load_gold(_Frame(cols), columns={"query_id": "qid", "grade": "rel"})
    assert got.query_ids == ["q1", "q2"] and got.j_grade.tolist() == [1, 0, 2] and got.j_doc.to_pylist() == ["d1", "d2", "d3"]
    _same(rankgate.evaluate(_Frame(cols), {"q1": ["d2", "d1"], "q2": ["d3"]}, METRICS, columns={"grade": "rel"}),
          rankgate.evaluate({"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 2}}, {"q1": ["d2", "d1"], "q2": ["d3"]}, METRICS))


def _bad(**change) -> dict:
    return {**{k: list(v) for k, v in LONG.items()}, **change}


BAD_TABLES = {
    "missing grade": ({k: v for k, v in LONG.items() if k != "grade"},
                      "has no grade column for a gold set; columns: query_id, chunk_id, intent"),
    "a grade of 2.5": (_bad(grade=[2, 2.5, 0, 1, 3, 0]), "field 'grade' (row 2) must be an integer grade; got 2.5"),
    "a grade True": (_bad(grade=[True, 1, 0, 1, 3, 0]), "field 'grade' (row 1) must be an integer grade; got True"),
    "a repeated pair": (_bad(chunk_id=["d1", "d2", "d1", "d3", "d9", "d7"]),
                        "field 'chunk_id' (row 3) judges 'd1' for query 'q1' again (first on row 1)"),
    "a NaN query id": (_bad(query_id=["q1", math.nan, "q1", "q2", "q3", "q4"]),
                       "field 'query_id' (row 2) must be a non-empty id; got nan"),
    "a None item id": (_bad(chunk_id=["d1", "d2", "d5", None, "d9", "d7"]), "field 'chunk_id' (row 4) must be a non-empty id"),
    "two intents in a query": (_bad(intent=["faq", "faq", "billing", "howto", "faq", "faq"]),
                               "field 'intent' (row 3) is 'billing' for query 'q1', but row 1 gives 'faq'"),
    "a bad k": (_bad(k=[0, 0, 0, 5, 5, 5]), "field 'k' (row 1) must be a positive integer"),
    "no_answer with a relevant row": (_bad(no_answer=[True, True, True, False, False, True]),
                                      "field 'no_answer' (row 1) is true but the query has a row with grade >= 1"),
}


@pytest.mark.parametrize("case", sorted(BAD_TABLES))
def test_a_bad_long_table_is_refused_naming_the_row_and_column(case):
    cols, words = BAD_TABLES[case]
    with pytest.raises(InputError) as info:
        rankgate.load_gold(_Frame(cols))
    assert words in str(info.value), str(info.value)
    assert str(info.value).startswith("<gold>: ")


def test_a_pandas_frame_with_gaps_is_read_as_its_rows_say():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"query_id": ["q1", "q1", "q2"], "chunk_id": ["a", "b", "c"], "grade": [1, 0, 2],
                          "k": [3, 3, None], "as_of": [None, None, "2024-05-01"]})  # k: a float column with a gap
    g = rankgate.load_gold(frame)
    assert g.fields["k"] == [3, None] and g.fields["as_of"] == [None, "2024-05-01"]
    with pytest.raises(InputError, match=r"\(row 2\) must be a non-empty id; got nan"):
        rankgate.load_gold(frame.assign(chunk_id=["a", None, "c"]))
    with pytest.raises(InputError, match=r"has no query_id column .* reset_index\(\) first"):
        rankgate.load_gold(frame.set_index("query_id"))  # (the index is not a column)


def test_a_float_grade_column_of_a_mapped_parquet_table_is_never_cut(tmp_path, capsys):
    # the table reader turned 2.5 into 2 with int(); the new rule takes whole floats and refuses the rest
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rankgate.cli.main import main

    gold = tmp_path / "gold.parquet"
    pq.write_table(pa.table({"qid": ["q1", "q1"], "chunk_id": ["a", "b"], "rel": [2.0, 2.5]}), gold)
    run = tmp_path / "run.jsonl"
    run.write_text('{"query_id": "q1", "retrieved": ["a", "b"]}\n', encoding="utf-8")
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "--columns", "query_id=qid,grade=rel",
                 "--resamples", "0"]) == 2
    assert "(row 2) must be an integer grade; got 2.5" in capsys.readouterr().err


def test_evaluate_takes_a_scoring_whole(tmp_path):
    """``evaluate(gold, run, scoring=Scoring(...))`` scores as the same options given one by one, and refuses the
    options given both ways (naming them)."""
    import rankgate
    from rankgate.errors import UsageError
    from rankgate.scoring.options import Scoring

    gold = {"q1": {"d1#1": 1, "d2#1": 1}, "q2": {"d3#2": 2}}
    run = {"q1": ["d2#4", "d1#1", "d9"], "q2": ["d3#1", "d3#2"]}
    (tmp_path / "map.tsv").write_text("d2#4\td2\n")
    whole = rankgate.evaluate(gold, run, scoring=Scoring(metrics="ndcg@3,recall@2", level="doc", k=3, ties="input",
                                                         doc_map=str(tmp_path / "map.tsv")))
    loose = rankgate.evaluate(gold, run, ["ndcg@3", "recall@2"], level="doc", k=3, ties="input",
                              doc_map={"d2#4": "d2"})
    assert list(whole.metric_names) == list(loose.metric_names) == ["ndcg@3", "recall@2"]
    for m in loose.metric_names:
        assert whole[m].tolist() == loose[m].tolist()
    assert list(rankgate.evaluate(gold, run, ["mrr"], scoring=Scoring(metrics="ndcg@3")).metric_names) == ["mrr"]
    with pytest.raises(UsageError, match="not both: drop k, level or set them in the Scoring"):
        rankgate.evaluate(gold, run, scoring=Scoring(), k=3, level="doc")
    with pytest.raises(UsageError, match="'scoring' parameter of evaluate must be a rankgate Scoring"):
        rankgate.evaluate(gold, run, scoring={"k": 3})
