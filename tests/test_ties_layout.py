"""``--ties id|input`` (the one ranking rule, two tie-breaks), ``--layout v0``, and spreadsheet-safe
metrics.csv."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rankgate
from rankgate.cli.main import main
from rankgate.model.ranking import rank_rows
from rankgate.errors import UsageError
from rankgate.render.exports import metrics_csv

from .helpers import write_jsonl
from .conftest import examples

# -- ties ------------------------------------------------------------------------------------------

TIED_RUN = [{"query_id": "q1", "topk": [{"chunk_id": "a", "score": 1.0}, {"chunk_id": "c", "score": 1.0},
                                        {"chunk_id": "b", "score": 1.0}, {"chunk_id": "z", "score": 0.5}]}]
GOLD = [{"query_id": "q1", "relevant": ["a"]}]


def test_input_ties_keep_the_retrievers_order_and_id_ties_are_trec_eval():
    by_id = rankgate.evaluate(GOLD, TIED_RUN, "mrr", ties="id")
    by_input = rankgate.evaluate(GOLD, TIED_RUN, "mrr", ties="input")
    assert by_id["mrr"].tolist() == [1 / 3]  # c, b, a: id descending
    assert by_input["mrr"].tolist() == [1.0]  # a, c, b as given
    assert by_id.info["ties"] == "id" and by_input.info["ties"] == "input"
    default = rankgate.evaluate(GOLD, TIED_RUN, "mrr")  # records: the producer gave an order
    assert default["mrr"].tolist() == [1.0] and default.info["ties"] == "input" and default.info["ties_differ"] == 1
    # {query: {doc: score}} (pytrec_eval's shape) and trec=True keep trec_eval's rule
    scores = {"q1": {"a": 1.0, "c": 1.0, "b": 1.0, "z": 0.5}}
    assert rankgate.evaluate(GOLD, scores, "mrr").info["ties"] == "id"
    assert rankgate.evaluate(GOLD, TIED_RUN, "mrr", trec=True).info["ties"] == "id"
    with pytest.raises(UsageError, match="ties must be one of: id, input"):
        rankgate.evaluate(GOLD, TIED_RUN, "mrr", ties="score")


def _reference(query, docs, score, ties):
    """The rule in plain Python: group by query, score descending, then id descending (byte-wise) or
    input position."""
    rows = range(len(docs))
    if ties == "id":
        # sort stably on the secondary key first: id descending, then score descending, then query
        rows = sorted(rows, key=lambda i: docs[i].encode(), reverse=True)
    rows = sorted(rows, key=lambda i: -score[i])
    return sorted(rows, key=lambda i: query[i])


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.text("abc", min_size=1, max_size=3), st.sampled_from([0.0, 0.5, 1.0, 2.0])),
                min_size=1, max_size=40, unique_by=lambda t: (t[0], t[1])),
       st.sampled_from(["id", "input"]))
def test_ranking_rule_matches_its_reference(rows, ties):
    query = np.array([r[0] for r in rows], dtype=np.int64)
    docs = [r[1] for r in rows]
    score = np.array([r[2] for r in rows], dtype=np.float64)
    perm = rank_rows(query, pa.array(docs, pa.string()), score, None, ties=ties)
    assert perm.tolist() == _reference(query.tolist(), docs, score.tolist(), ties)


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.sampled_from([0.0, 1.0, 2.0]), min_size=1, max_size=30))
def test_input_ties_are_a_stable_sort_of_one_query(scores):
    n = len(scores)
    perm = rank_rows(np.zeros(n, dtype=np.int64), pa.array([f"d{i}" for i in range(n)]), np.array(scores), None, ties="input")
    assert perm.tolist() == sorted(range(n), key=lambda i: -scores[i])


def test_cli_ties_recorded_in_summary_and_report(tmp_path, capsys):
    gold, run = write_jsonl(tmp_path / "g.jsonl", GOLD), write_jsonl(tmp_path / "r.jsonl", TIED_RUN)
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "-m", "mrr", "--resamples", "0", "--json",
                 "--ties", "input"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["options"]["ties"] == "input" and summary["metrics"]["mrr"]["mean"] == 1.0
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "-m", "mrr", "--resamples", "0", "--json",
                 "--ties", "id"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["options"]["ties"] == "id" and summary["metrics"]["mrr"]["mean"] == pytest.approx(1 / 3)
    html = tmp_path / "r.html"
    assert main(["report", "--gold", str(gold), "--run", str(run), "--resamples", "0", "-o", str(html)]) == 0
    assert "the file&#x27;s order; 1 query with tied scores or explicit ranks would be ordered differently by --ties id" \
        in html.read_text()
    assert main(["report", "--gold", str(gold), "--run", str(run), "--resamples", "0", "--ties", "id", "-o", str(html)]) == 0
    assert "score, then id descending (trec_eval&#x27;s rule); 1 query" in html.read_text()


def test_gate_config_evaluate_ties(tmp_path):
    from rankgate.gating.config import config_from_dict
    from rankgate.flows.gate import gate

    cfg = {"evaluate": {"ties": "input"}, "gates": [{"name": "mrr", "metric": "mrr", "threshold": 0.9}]}
    assert config_from_dict(cfg).evaluate["ties"] == "input"
    assert gate(cfg, GOLD, TIED_RUN).passed
    assert not gate({**cfg, "evaluate": {"ties": "id"}}, GOLD, TIED_RUN).passed


# -- layout v0 -------------------------------------------------------------------------------------

V0_GOLD = [{"query_id": "q1", "relevant": ["a", "b"], "entities": ["alpha"]}, {"query_id": "q2", "relevant": ["c"]}]
V0_RUN = [
    {"query_id": "q1", "topk": [{"chunk_id": "x", "score": 3.0, "text": "Alpha beta"}, {"chunk_id": "b", "score": 2.0},
                                {"chunk_id": "a", "score": 1.0}],
     "latency_ms": [{"retrieve": 10, "rerank": 5}, 20, {"total": 30, "retrieve": 1}], "errors": 0, "retries": 2,
     "privacy_leak": False},
    {"query_id": "q2", "topk": [{"chunk_id": "c", "score": 1.0}], "latency_ms": 40, "errors": ["timeout"],
     "privacy_leak": True},
]


def test_layout_v0_files(tmp_path, capsys):
    gold, run = write_jsonl(tmp_path / "g.jsonl", V0_GOLD), write_jsonl(tmp_path / "r.jsonl", V0_RUN)
    out = tmp_path / "out"
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "--layout", "v0", "-o", str(out), "--resamples", "0"]) == 0
    rows = list(csv.reader(io.StringIO((out / "metrics.csv").read_text())))
    assert rows[0] == ["id", "p_at_5", "p_at_10", "ndcg_10", "mrr_10", "cov_entities", "p50_ms", "p95_ms", "errors",
                       "retries", "privacy_leak"]
    ndcg = (1 / np.log2(3) + 1 / np.log2(4)) / (1 + 1 / np.log2(3))
    # q1 timings 15, 20, 30 -> p50 20, p95 29 (linear); q2 one timing -> 40 in both
    assert rows[1] == ["q1", "0.4", "0.2", repr(float(ndcg)), "0.5", "1.0", "20.0", "29.0", "0", "2", "0"]
    assert rows[2] == ["q2", "0.2", "0.1", "1.0", "1.0", "", "40.0", "40.0", "1", "", "1"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["version"] == "v0"
    assert summary["quality"] == {"p@5": pytest.approx(0.3), "ndcg@10": pytest.approx((ndcg + 1) / 2), "mrr@10": 0.75}
    assert set(summary["quality_detail"]) == {"p@5", "p@10", "ndcg@10", "mrr@10", "cov_entities"}
    assert summary["quality_detail"]["mrr@10"] == {"mean": 0.75, "n": 2, "metric": "mrr@10"}
    op, detail = summary["operational"], summary["operational_detail"]
    assert op == {"p50_ms": 25.0, "p95_ms": 38.5, "error_rate": 0.5}
    assert (detail["latency_timings"], detail["errors"], detail["retries"], detail["queries_with_errors"]) == (4, 1, 2, 1)
    assert summary["privacy"] == {"leak_rate": 0.5}
    assert summary["privacy_detail"] == {"queries_with_leak": 1, "queries": 2, "sources": ["run privacy_leak"]}
    assert summary["not_in_run"] == {}
    assert summary["metrics"]["mrr@10"]["mean"] == 0.75  # the default blocks too: usable as a gate baseline
    cfg = tmp_path / "c.yaml"
    cfg.write_text("gates:\n  - {name: mrr, metric: mrr@10, threshold: 0.1, regression_max: 0.5}\n")
    assert main(["gate", "--config", str(cfg), "--gold", str(gold), "--candidate", str(run),
                 "--baseline", str(out / "summary.json")]) == 0


def test_layout_v0_lists_what_the_run_lacks(tmp_path):
    gold = write_jsonl(tmp_path / "g.jsonl", [{"query_id": "q1", "relevant": ["a"]}])
    run = write_jsonl(tmp_path / "r.jsonl", [{"query_id": "q1", "topk": ["a"]}])
    out = tmp_path / "out"
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "--layout", "v0", "-o", str(out), "--resamples", "0"]) == 0
    assert (out / "metrics.csv").read_text().splitlines()[1] == "q1,0.2,0.1,1.0,1.0,,,,,,"
    missing = json.loads((out / "summary.json").read_text())["not_in_run"]
    assert set(missing) == {"cov_entities", "p50_ms", "p95_ms", "errors", "retries", "privacy_leak"}
    assert missing["errors"] == "not in the run (no errors field)"


# -- spreadsheet formulas --------------------------------------------------------------------------

def test_metrics_csv_defuses_formulas_in_text_but_never_in_numbers():
    ids = ["=HYPERLINK(\"x\")", "+cmd", "-2+3", "@SUM(A1)", "\tq", "\rq", "-3", "+0.5", "q=1", "-1e5"]
    gold = [{"query_id": q, "relevant": ["a"], "note_field": q} for q in ids]
    run = [{"query_id": q, "topk": [{"chunk_id": "a", "score": -1.5}]} for q in ids]
    result = rankgate.evaluate(gold, run, "mrr")
    rows = list(csv.reader(io.StringIO(metrics_csv(result), newline="")))
    assert rows[0] == ["query_id", "mrr", "note_field"]
    got = [r[0] for r in rows[1:]]
    assert got == ["'=HYPERLINK(\"x\")", "'+cmd", "'-2+3", "'@SUM(A1)", "'\tq", "'\rq", "-3", "+0.5", "q=1", "-1e5"]
    assert [r[2] for r in rows[1:]] == got  # segment fields the same way
    assert all(r[1] == "1.0" for r in rows[1:])  # numbers untouched


def test_input_ties_follow_the_lines_of_a_trec_run(tmp_path):
    """Every TREC reader (compiled, pyarrow, line by line) keeps the file's line order, which --ties
    input then keeps among equal scores."""
    import random

    from rankgate.io import load_run

    rng = random.Random(3)
    lines = [f"q{q} Q0 d{rng.randrange(10**5)}x{r} {r + 1} {rng.choice([1.0, 2.0, 3.0])} tag\n"
             for q in range(300) for r in range(40)]
    path = tmp_path / "ties.trec"
    path.write_text("".join(lines))
    run = load_run(path)
    perm = rank_rows(run.r_query, run.r_doc, run.r_score, run.r_order, ties="input")
    index = {q: i for i, q in enumerate(run.query_ids)}
    parts = [ln.split() for ln in lines]
    want = sorted(range(len(lines)), key=lambda i: (index[parts[i][0]], -float(parts[i][4]), i))
    assert perm.tolist() == want
    assert run.r_doc.take(pa.array(perm)).to_pylist() == [parts[i][2] for i in want]


def test_sweep_takes_the_same_input_options(tmp_path, capsys):
    """Regression: --sweep re-evaluated without --columns/--ties (a NameError at first)."""
    gold = tmp_path / "g.csv"
    gold.write_text("qid,doc,rel\nq1,a,1\n")
    run = tmp_path / "r.csv"
    run.write_text("qid,doc,s\nq1,a,1.0\nq1,b,1.0\n")
    argv = ["evaluate", "--gold", str(gold), "--run", str(run), "--columns", "query_id=qid,chunk_id=doc,score=s,grade=rel",
            "-m", "mrr", "--resamples", "0", "--json", "--sweep", "mrr", "--ks", "1,2"]
    assert main([*argv, "--ties", "id"]) == 0
    sweep = json.loads(capsys.readouterr().out)["sweep"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["sweep"] != sweep  # b first (id descending), or a first (row order)


def test_input_ties_follow_a_jsonl_rank_given_beside_scores(tmp_path):
    # The retriever logged score and rank; its own order of equal scores is the rank, not the list.
    ranked = [{"query_id": "q1", "topk": [{"chunk_id": "c", "score": 1.0, "rank": 2},
                                          {"chunk_id": "a", "score": 1.0, "rank": 1},
                                          {"chunk_id": "b", "score": 1.0, "rank": 3},
                                          {"chunk_id": "z", "score": 2.0, "rank": 4}]}]
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ranked))
    by_input = rankgate.evaluate(GOLD, str(path), "mrr")
    assert by_input["mrr"].tolist() == [1.0]  # a rank on every item: the ranks alone (a, c, b, z)
    assert by_input.info["rank_vs_score"] == 1  # z (score 2.0) is ranked below scores of 1.0
    assert rankgate.evaluate(GOLD, str(path), "mrr", ties="id")["mrr"].tolist() == [0.25]  # z, c, b, a: id rule
    # The columnar reader (large files) keeps the ranks the same way.
    from rankgate.io.jsonl import iter_json_lines, json_lines, parse_run_records, read_text
    from rankgate.io.jsonl_fast import read_run_fast
    slow = parse_run_records(iter_json_lines(json_lines(read_text(str(path))), str(path)), str(path))
    fast = read_run_fast(str(path), min_bytes=0)
    assert fast is not None and fast.r_order.tolist() == slow.r_order.tolist() == [2.0, 1.0, 3.0, 4.0]


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.sampled_from([0.0, 1.0]), st.one_of(st.none(), st.integers(1, 5))),
                min_size=1, max_size=16))
def test_input_rule_ranks_alone_when_every_item_has_one(rows):
    """A query whose items all have a rank: by rank (then record); any other: score, then record."""
    query = np.array([r[0] for r in rows], np.int64)
    score = np.array([r[1] for r in rows])
    order = np.array([np.nan if r[2] is None else r[2] for r in rows], dtype=np.float64)
    perm = rank_rows(query, pa.array([str(i) for i in range(len(rows))]), score, order, ties="input")
    full = {q: all(r[2] is not None for r in rows if r[0] == q) for q in set(query.tolist())}
    want = sorted(range(len(rows)), key=lambda i: (query[i], (order[i], i) if full[query[i]] else (-score[i], i)))
    assert perm.tolist() == want


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_input_ties_follow_a_table_rank_column_beside_scores(tmp_path, kind):
    rows = [("q1", "c", 1.0, 2), ("q1", "a", 1.0, 1), ("q1", "b", 1.0, 3), ("q1", "z", 2.0, 4)]
    path = tmp_path / f"run.{kind}"
    if kind == "csv":
        path.write_text("query_id,chunk_id,score,rank\n" + "".join(f"{q},{d},{s},{r}\n" for q, d, s, r in rows))
    else:
        import pyarrow.parquet as pq

        pq.write_table(pa.table({"query_id": [r[0] for r in rows], "chunk_id": [r[1] for r in rows],
                                 "score": [r[2] for r in rows], "rank": [r[3] for r in rows]}), path)
    assert rankgate.evaluate(GOLD, str(path), "mrr")["mrr"].tolist() == [1.0]  # the ranks alone: a, c, b, z
    assert rankgate.evaluate(GOLD, str(path), "mrr", ties="id")["mrr"].tolist() == [0.25]  # z, c, b, a: id rule
    if kind == "csv":  # pyarrow's reader and the line-by-line one keep the same ranks
        from rankgate.io.csvtable import read_csv_fast, read_table_run
        from rankgate.io.tools.records import read_records

        fast = read_csv_fast(str(path), ["query_id", "chunk_id", "score", "rank"], ",", "run")
        slow = read_table_run(read_records(str(path), "csv"))
        assert fast is not None and fast.r_order.tolist() == slow.r_order.tolist() == [2.0, 1.0, 3.0, 4.0]
