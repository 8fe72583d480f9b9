"""The Python API a notebook user reaches for (issue 34, item 4): ``rankgate.evaluate`` with intervals, segments
and tables, ``rankgate.compare``, ``rankgate.report``, and requests that take ``metrics=``.

Every number is checked against the command a user would run on the same files (``--json``), so the Python
API and the command line cannot drift apart.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys

import numpy as np
import pytest

import rankgate
from rankgate.cli.main import main
from rankgate.errors import UsageError
from rankgate.model.results import EvaluationResult

from .demo_runs import GOLD, demo_run

METRICS = ["recall@5", "mrr", "ndcg@10"]
SMALL_GOLD = {"q1": {"a": 1, "b": 1}, "q2": {"c": 2}, "q3": {"d": 1}}
SMALL_BASE = {"q1": ["a", "x", "b"], "q2": ["x", "c"], "q3": ["y", "z"]}
SMALL_CAND = {"q1": ["b", "a"], "q2": ["c"], "q3": ["d"]}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The two demo retrievers' runs on the built-in gold set (144 queries, three languages)."""
    folder = tmp_path_factory.mktemp("runs")
    return demo_run(folder, "bm25-multilingual"), demo_run(folder, "bm25-english")


def _cli_json(capsys, *args) -> dict:
    capsys.readouterr()
    assert main([str(a) for a in args]) == 0
    return json.loads(capsys.readouterr().out)


# ---------------------------------------------------------------------------------------------------------------
# rankgate.evaluate: the command line's numbers


def test_evaluate_gives_the_means_intervals_and_segments_of_the_command_line(runs, capsys):
    base, _ = runs
    summary = _cli_json(capsys, "evaluate", "--gold", GOLD, "--run", base, "--metrics", ",".join(METRICS),
                        "--by", "intent", "--by", "tags.lang", "--confidence", "0.9", "--seed", "3",
                        "--resamples", "500", "--json")
    result = rankgate.evaluate(GOLD, base, METRICS, by=["intent", "tags.lang"], confidence=0.9, seed=3, resamples=500)
    assert list(result.metric_names) == METRICS
    for m in METRICS:
        want = summary["metrics"][m]
        low, high = result.intervals[m]
        assert (result.means[m], result.summary(m).n, low, high) == (want["mean"], want["n"], want["ci_low"],
                                                                     want["ci_high"])
        assert low < result.means[m] < high  # (real intervals, not NaN: the comparison above is not vacuous)
        assert [None if math.isnan(v) else v for v in result[m].tolist()] == summary["per_query"]["values"][m]
    assert result.confidence == 0.9 and result.interval("NDCG@10") == result.intervals["ndcg@10"]
    seen = 0
    for row in result.to_pandas("segments").itertuples():
        want = summary["segments"][row.field][row.segment][row.metric]
        assert (row.mean, row.n, row.ci_low, row.ci_high) == (want["mean"], want["n"], want["ci_low"], want["ci_high"])
        seen += 1
    assert seen == sum(len(labels) for labels in summary["segments"].values()) * len(METRICS) > 20


def test_evaluate_keeps_the_meaning_of_earlier_calls(runs):
    from rankgate.scoring.engine import evaluate as engine_evaluate
    from rankgate.scoring.options import Scoring

    base, _ = runs
    old = engine_evaluate(GOLD, base, METRICS)
    new = rankgate.evaluate(GOLD, base, metrics=METRICS)
    assert isinstance(new, EvaluationResult)
    assert new.means == old.means and new.query_ids == old.query_ids and new.to_dict() == old.to_dict()
    assert all(np.array_equal(new[m], old[m], equal_nan=True) for m in METRICS)
    assert new.segments is None
    whole = rankgate.evaluate(GOLD, base, scoring=Scoring(metrics="mrr", k=3))
    assert list(whole.metric_names) == ["mrr"] and whole.means["mrr"] == old.means["mrr"]
    with pytest.raises(UsageError, match="not both: drop k or set it in the Scoring"):
        rankgate.evaluate(GOLD, base, scoring=Scoring(), k=3)
    with pytest.raises(UsageError, match="as statistics= or as keywords, not both: drop seed"):
        rankgate.evaluate(GOLD, base, statistics=rankgate.flows.evaluate.Statistics(), seed=4)


def test_a_result_in_memory_gives_the_numbers_of_its_file(runs):
    base, _ = runs
    records = [json.loads(line) for line in base.read_text(encoding="utf-8").splitlines()]
    from_file = rankgate.evaluate(GOLD, base, by="intent")
    in_memory = rankgate.evaluate(GOLD, records, by="intent")
    assert from_file.intervals == in_memory.intervals and from_file.means == in_memory.means
    assert from_file.segments is not None and from_file.segments.to_dict() == in_memory.segments.to_dict()


# ---------------------------------------------------------------------------------------------------------------
# Tables


def test_the_tables_have_a_row_per_query_metric_and_segment(runs):
    base, _ = runs
    result = rankgate.evaluate(GOLD, base, METRICS, by=["tags.lang"])
    queries = result.to_pandas()
    assert len(queries) == len(result.query_ids) == 144
    assert list(queries.columns) == ["query_id", *result.fields, "first_relevant_rank", *METRICS]
    assert "tags.lang" in queries.columns and queries["query_id"].tolist() == list(result.query_ids)
    assert queries["mrr"].isna().sum() == len(result.no_answer) == 8  # (no-answer queries: NaN, as in values)
    by_lang = queries.groupby("tags.lang")["recall@5"].mean()
    seg = result.to_pandas("segments")
    de = seg[(seg.segment == "de") & (seg.metric == "recall@5")]
    assert de["mean"].item() == pytest.approx(by_lang["de"], abs=1e-12)
    metrics = result.to_pandas("metrics")
    assert metrics["metric"].tolist() == METRICS and list(metrics.columns) == ["metric", "mean", "n", "ci_low", "ci_high"]
    assert metrics["mean"].tolist() == [result.means[m] for m in METRICS]
    assert len(seg) == 3 * len(METRICS)  # de, en, es
    table = result.to_arrow()
    assert table.num_rows == 144 and table.column_names == list(queries.columns)
    assert str(table.schema.field("mrr").type) == "double" and str(table.schema.field("query_id").type) == "string"
    assert result.to_arrow("metrics").to_pylist()[1]["ci_low"] == result.intervals["mrr"][0]
    with pytest.raises(UsageError, match="'table' parameter of to_arrow must be one of"):
        result.to_arrow("rows")
    with pytest.raises(UsageError, match="no segments: evaluate with by="):
        rankgate.evaluate(GOLD, base, ["mrr"]).to_arrow("segments")


def test_to_pandas_without_pandas_says_how_to_install_it(runs, monkeypatch):
    base, _ = runs
    result = rankgate.evaluate(SMALL_GOLD, SMALL_BASE, ["mrr"], resamples=0)
    comparison = rankgate.compare(SMALL_GOLD, SMALL_BASE, SMALL_CAND, metrics="mrr", resamples=0, permutations=0)
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now fails, as where it is not installed
    with pytest.raises(ImportError, match=r"to_pandas\(\) needs pandas, which is not installed: pip install pandas"):
        result.to_pandas()
    with pytest.raises(ImportError, match=r"ComparedRuns.to_pandas\(\) needs pandas.*ComparedRuns.to_arrow\(\)"):
        comparison.to_pandas()
    assert result.to_arrow().num_rows == 3 and comparison.to_arrow().num_rows == 1  # the same tables, without pandas


def test_the_intervals_are_drawn_when_first_read():
    result = rankgate.evaluate(SMALL_GOLD, SMALL_BASE, ["mrr", "recall@2"])
    assert result._intervals == {}  # evaluate alone draws nothing
    low, high = result.intervals["mrr"]
    assert 0 <= low <= result.means["mrr"] <= high <= 1
    assert set(result._intervals) == {"mrr", "recall@2"}
    off = rankgate.evaluate(SMALL_GOLD, SMALL_BASE, ["mrr"], resamples=0)
    assert all(math.isnan(v) for v in off.intervals["mrr"])
    assert "3 queries; mrr 0.5000" in repr(off)


# ---------------------------------------------------------------------------------------------------------------
# Requests take metrics=


def test_requests_take_metrics_and_refuse_them_beside_a_scoring():
    from rankgate.flows.compare import CompareRequest
    from rankgate.flows.evaluate import EvaluateRequest, Scoring, Statistics, run_evaluation

    req = EvaluateRequest(SMALL_GOLD, SMALL_BASE, metrics=["mrr", "recall@2"], k=3, statistics=Statistics(resamples=0))
    assert req.scoring == Scoring(metrics=["mrr", "recall@2"], k=3) and req.metrics is None
    assert list(run_evaluation(req).result.metric_names) == ["mrr", "recall@2"]
    assert dataclasses.replace(req, by=("intent",)).scoring == req.scoring  # (a copy does not give them twice)
    with pytest.raises(UsageError, match="EvaluateRequest takes the scoring options as scoring= or as keywords, not "
                                         "both: drop metrics, level or set them in the Scoring"):
        EvaluateRequest(SMALL_GOLD, SMALL_BASE, Scoring(k=5), metrics="mrr", level="doc")
    with pytest.raises(UsageError, match="'metrics' parameter of EvaluateRequest"):
        EvaluateRequest(SMALL_GOLD, SMALL_BASE, metrics=5)
    creq = CompareRequest(("a.jsonl", "b.jsonl"), "g.jsonl", metrics="ndcg@10", level="doc")
    assert creq.scoring == Scoring(metrics="ndcg@10", level="doc")
    with pytest.raises(UsageError, match="CompareRequest takes the scoring options as scoring= or as keywords"):
        CompareRequest(("a.jsonl", "b.jsonl"), "g.jsonl", Scoring(k=3), metrics="mrr")
    with pytest.raises(UsageError, match="runs given in memory need labels"):
        CompareRequest((SMALL_BASE, SMALL_CAND), SMALL_GOLD)
    with pytest.raises(UsageError, match="labels names 1 runs but 2 are compared"):
        CompareRequest((SMALL_BASE, SMALL_CAND), SMALL_GOLD, labels=("a",))


# ---------------------------------------------------------------------------------------------------------------
# rankgate.compare and rankgate.report


def test_compare_gives_the_rows_of_the_command_line(runs, capsys):
    base, cand = runs
    want = _cli_json(capsys, "compare", base, cand, "--gold", GOLD, "--metrics", "recall@5,ndcg@10", "--by", "tags.lang",
                     "--resamples", "400", "--permutations", "500", "--json")
    got = rankgate.compare(GOLD, base, cand, metrics=["recall@5", "ndcg@10"], by="tags.lang", resamples=400,
                           permutations=500)
    assert got.to_dict()["rows"] == want["rows"] and len(want["rows"]) == 8
    assert (got.baseline_label, got.candidate_label) == (want["baseline"], want["candidate"])
    frame = got.to_pandas()
    assert len(frame) == 8 and {"metric", "field", "segment", "delta", "ci_low", "ci_high", "p_holm", "verdict"} <= set(frame.columns)
    overall = frame[frame["field"].isna() & (frame["metric"] == "ndcg@10")]
    assert overall["delta"].item() == got.row("ndcg@10").delta
    assert [r.means["ndcg@10"] for r in got.results] == [got.row("ndcg@10").baseline, got.row("ndcg@10").candidate]


def test_compare_takes_runs_in_memory_and_more_than_two():
    two = rankgate.compare(SMALL_GOLD, SMALL_BASE, SMALL_CAND, metrics="mrr,recall@2", resamples=200, permutations=200)
    assert (two.baseline_label, two.candidate_label) == ("baseline", "candidate")
    assert two.row("mrr").delta == pytest.approx(1.0 - (1.0 + 0.5 + 0) / 3)  # (first relevant at 1, 2, never)
    three = rankgate.compare(SMALL_GOLD, SMALL_BASE, SMALL_CAND, {"q1": ["a"]}, metrics="mrr", resamples=0,
                             permutations=0, labels=["main", "pr", "empty"])
    table = three.to_arrow()
    assert type(three).__name__ == "ComparedManyRuns" and table.num_rows == 2
    assert table.column("run").to_pylist() == ["pr", "empty"] and three.baseline == "main"


@pytest.mark.slow  # (the full tier: heavy, and what it guards is covered lighter by default)
def test_report_from_python_writes_the_page_the_command_writes(runs, tmp_path):
    base, cand = runs
    assert main(["report", "--gold", str(GOLD), "--run", str(cand), "--baseline", str(base), "--by", "tags.lang",
                 "--resamples", "300", "-o", str(tmp_path / "cli.html")]) == 0
    rep = rankgate.report(GOLD, cand, baseline=base, by="tags.lang", resamples=300, out=tmp_path / "py.html")
    assert (tmp_path / "py.html").read_bytes() == (tmp_path / "cli.html").read_bytes()
    assert rep.k == 5 and rep.panel
    with pytest.raises(UsageError, match="report takes no option 'kk'"):
        rankgate.report(GOLD, cand, kk=3)
