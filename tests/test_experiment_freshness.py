"""Freshness what-if (--enforce-as-of): items newer than the label's as_of are dropped and the run rescored."""

from __future__ import annotations

import json

import pytest

from rankgate.cli.main import main
from rankgate.io import load_gold, load_run
from rankgate.scoring.engine import evaluate
from rankgate.experiments.freshness import as_date, enforce_as_of, freshness_what_if

from .demo_runs import demo_run, gold_records, write_jsonl
from .hostile import assert_refused

GOLD = [
    {"query_id": "q1", "relevant_chunks": ["new#1"], "as_of": "2026-01-01", "tags": {"lang": "en"}},
    {"query_id": "q2", "relevant_chunks": ["old#1"], "as_of": "2026-01-01", "tags": {"lang": "de"}},
    {"query_id": "q3", "relevant_chunks": ["old#2"], "tags": {"lang": "de"}},  # no as_of: nothing dropped
]
RUN = [
    # q1 relies on a document published after its label: rank 1 is newer than as_of.
    {"query_id": "q1", "topk": [{"chunk_id": "new#1", "score": 3, "doc_version": "2026-02-01"},
                                {"chunk_id": "x#1", "score": 2, "doc_version": "2025-06-01"}]},
    # q2: a newer non-relevant item sits above the relevant one; dropping it moves the relevant item up.
    {"query_id": "q2", "topk": [{"chunk_id": "y#1", "score": 3, "doc_version": "2026-01-02T08:00:00Z"},
                                {"chunk_id": "old#1", "score": 2, "doc_version": "2025-12-31"},
                                {"chunk_id": "z#1", "score": 1, "doc_version": "v7"}]},
    {"query_id": "q3", "topk": [{"chunk_id": "old#2", "score": 1, "doc_version": "2027-01-01"}]},
]


def _score(g, r):
    return evaluate(g, r, "recall@1,mrr")


def test_a_run_using_newer_documents_loses_score():
    g, r = load_gold(GOLD), load_run(RUN)
    w = freshness_what_if(g, r, _score, by=["lang"], resamples=200)
    assert w.filter.dropped == 2 and w.filter.unversioned == 1 and w.filter.queries_with_as_of == 2
    assert dict(w.filter.dropped_by_query) == {"q1": 1, "q2": 1}
    # By hand: recall@1 logged (1, 0, 1) -> enforced (0, 1, 1); mrr logged (1, 1/2, 1) -> (0, 1, 1).
    assert list(w.as_logged["recall@1"]) == [1.0, 0.0, 1.0]
    assert list(w.enforced["recall@1"]) == [0.0, 1.0, 1.0]
    rows = {(row.metric, row.segment): row for row in w.rows}
    assert rows[("mrr", None)].before == pytest.approx(2.5 / 3) and rows[("mrr", None)].after == pytest.approx(2 / 3)
    assert rows[("mrr", None)].delta == pytest.approx(-0.5 / 3)
    assert rows[("recall@1", "lang=en")].delta == -1.0
    assert rows[("recall@1", "lang=de")].delta == 0.5


def test_kept_items_keep_their_order_and_the_filter_is_exact():
    g, r = load_gold(GOLD), load_run(RUN)
    kept, _ = enforce_as_of(g, r)
    assert kept.r_doc.to_pylist() == ["x#1", "old#1", "z#1", "old#2"]
    assert kept.items["doc_version"] == ["2025-06-01", "2025-12-31", "v7", "2027-01-01"]


@pytest.mark.parametrize("value, date", [("2026-05-01", "2026-05-01"), ("2026-05-01T23:59:59+02:00", "2026-05-01"),
                                         ("v3", None), ("2026-13-01", None), (None, None), ("20260501", None)])
def test_dates(value, date):
    got = as_date(value)
    assert (None if got is None else got.isoformat()) == date


def test_cli_on_the_demo_data(tmp_path, capsys):
    run = demo_run(tmp_path)
    early = [{**rec, "as_of": "2026-01-01"} for rec in gold_records()]  # label older than most documents
    gold = write_jsonl(tmp_path / "gold_early.jsonl", early)
    out = tmp_path / "out"
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "--enforce-as-of", "--by", "lang",
                 "--resamples", "200", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    fresh = summary["freshness"]
    assert fresh["filter"]["dropped"] > 0 and fresh["filter"]["queries_with_as_of"] == len(early)
    top = {r["metric"]: r for r in fresh["metrics"] if r["segment"] is None}
    assert top["ndcg@10"]["after"] < top["ndcg@10"]["before"] and top["ndcg@10"]["ci"][1] < 0
    # The headline metrics are the enforced ones.
    assert summary["metrics"]["ndcg@10"]["mean"] == pytest.approx(top["ndcg@10"]["after"])
    # With the demo's own labels (as_of 2026-05-01), every document is older: nothing changes.
    capsys.readouterr()
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "--enforce-as-of", "--markdown",
                 "--resamples", "0"]) == 0
    assert "### Freshness what-if" in capsys.readouterr().out
    from .demo_runs import GOLD as DEMO_GOLD

    assert main(["evaluate", "--gold", str(DEMO_GOLD), "--run", str(run), "--enforce-as-of", "--json",
                 "--resamples", "0"]) == 0
    fresh = json.loads(capsys.readouterr().out)["freshness"]
    assert fresh["filter"]["dropped"] == 0 and all(r["delta"] == 0 for r in fresh["metrics"])


def test_compare_shows_each_runs_what_if(tmp_path, capsys):
    a, b = demo_run(tmp_path), demo_run(tmp_path, "bm25-english")
    gold = write_jsonl(tmp_path / "gold_early.jsonl", [{**rec, "as_of": "2026-01-01"} for rec in gold_records()])
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--gold", str(gold), "--enforce-as-of", "--json", "--resamples", "100",
                 "--permutations", "100"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data["freshness"]) == {a.name, b.name}
    assert data["freshness"][a.name]["filter"]["dropped"] > 0


def test_bad_inputs_are_refused(tmp_path, capsys):
    gold = write_jsonl(tmp_path / "gold.jsonl", [{**GOLD[0], "as_of": "last spring"}])
    run = write_jsonl(tmp_path / "run.jsonl", RUN[:1])
    assert_refused(["evaluate", "--gold", gold, "--run", run, "--enforce-as-of"], tmp_path, names=[gold],
                   capsys=capsys, contains=["as_of", "ISO date"])
    plain = write_jsonl(tmp_path / "plain.jsonl", [{"query_id": "q1", "topk": [{"chunk_id": "a", "score": 1}]}])
    good = write_jsonl(tmp_path / "good.jsonl", GOLD)
    assert_refused(["evaluate", "--gold", good, "--run", plain, "--enforce-as-of"], tmp_path, names=[plain],
                   capsys=capsys, contains=["doc_version"])
    assert_refused(["compare", run, plain, run, "--gold", good, "--enforce-as-of"], tmp_path, capsys=capsys,
                   contains=["--enforce-as-of"])
