"""Reranker stress test: hard negatives at the top of the reranker's input."""

from __future__ import annotations

import json
import math

import pytest

from rankgate.cli.main import main
from rankgate.retrieval.base import Chunk, Query
from rankgate.retrieval.rerank import BM25Reranker, apply_reranker, get_reranker

from .demo_runs import CORPUS, GOLD, demo_run, write_jsonl
from .hostile import assert_refused

RERANKERS = '''
class Blind:
    """Ignores content: scores by input position, so the input order stays."""
    def rerank(self, query, items):
        return [float(len(items) - i) for i in range(len(items))]

class Overlap:
    """Reads content: the share of query words in the item."""
    def rerank(self, query, items):
        words = set(query.text.lower().split())
        return [len(words & set(c.text.lower().split())) / len(words) for c in items]

class Short:
    def rerank(self, query, items):
        return [1.0]
'''

N = 12


@pytest.fixture
def case(tmp_path, monkeypatch):
    (tmp_path / "toy_rerankers.py").write_text(RERANKERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    gold = write_jsonl(tmp_path / "gold.jsonl", [
        {"query_id": f"q{i}", "query": f"alpha{i} beta{i}", "relevant_chunks": [f"r{i}"],
         "tags": {"lang": "en" if i % 2 else "de"}} for i in range(N)])
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [
        rec for i in range(N) for rec in (
            {"chunk_id": f"r{i}", "text": f"alpha{i} beta{i} the answer"},
            {"chunk_id": f"x{i}", "text": f"alpha{i} something else"},
            {"chunk_id": f"y{i}", "text": f"beta{i} unrelated words"},
            *({"chunk_id": f"n{i}_{j}", "text": f"nothing to see {j}"} for j in range(3)))])
    run = write_jsonl(tmp_path / "run.jsonl", [
        {"query_id": f"q{i}", "topk": [{"chunk_id": c, "score": s} for c, s in ((f"r{i}", 3), (f"x{i}", 2), (f"y{i}", 1))]}
        for i in range(N)])
    negs = write_jsonl(tmp_path / "negs.jsonl", [
        {"query_id": f"q{i}", "negatives": [f"n{i}_0", f"n{i}_1", f"n{i}_2"]} for i in range(N)])
    return tmp_path, gold, corpus, run, negs


def _stress(tmp, gold, corpus, run, negs, reranker, out="out", *extra):
    return main(["stress", "--gold", str(gold), "--run", str(run), "--corpus", str(corpus), "--reranker", reranker,
                 "--negatives", str(negs), "--ranks", "1,2,3", "--resamples", "300", "--out", str(tmp / out), *extra])


def test_a_reranker_that_ignores_content_fails(case):
    tmp, gold, corpus, run, negs = case
    assert _stress(tmp, gold, corpus, run, negs, "toy_rerankers:Blind") == 1
    data = json.loads((tmp / "out" / "stress.json").read_text())
    assert data["passed"] is False and data["queries"]["stressed"] == N
    rows = {(r["metric"], r["segment"]): r for r in data["metrics"]}
    # By hand: the relevant item goes from rank 1 to rank 4: nDCG@5 1 -> 1/log2(5).
    nd = rows[("ndcg@5", None)]
    assert nd["before"] == 1.0 and nd["after"] == pytest.approx(1 / math.log2(5))
    assert nd["ci"][1] < 0
    # precision@5: 1 relevant in the top 5 both times (rank 1, then rank 4).
    assert rows[("precision@5", None)]["delta"] == 0.0
    assert data["negative_in_top_3"]["queries"] == N and len(data["negative_in_top_3"]["items"]) == 3 * N
    after = [json.loads(line) for line in (tmp / "out" / "after.jsonl").read_text().splitlines()]
    assert [h["chunk_id"] for h in after[0]["topk"]] == ["n0_0", "n0_1", "n0_2", "r0", "x0", "y0"]


def test_a_reranker_that_reads_content_holds_up_and_is_deterministic(case):
    tmp, gold, corpus, run, negs = case
    assert _stress(tmp, gold, corpus, run, negs, "toy_rerankers:Overlap", "a", "--by", "lang") == 0
    data = json.loads((tmp / "a" / "stress.json").read_text())
    assert data["passed"] is True and data["negative_in_top_3"]["queries"] == 0
    assert {r["segment"] for r in data["metrics"]} == {None, "lang=de", "lang=en"}
    assert _stress(tmp, gold, corpus, run, negs, "toy_rerankers:Overlap", "b", "--by", "lang") == 0
    for name in ("stress.json", "stress.md", "before.jsonl", "after.jsonl"):
        assert (tmp / "a" / name).read_bytes() == (tmp / "b" / name).read_bytes()


def test_sampling_n_queries_follows_the_seed(case):
    tmp, gold, corpus, run, negs = case
    picked = []
    for out, seed in (("s1", "1"), ("s2", "1"), ("s3", "2")):
        _stress(tmp, gold, corpus, run, negs, "toy_rerankers:Overlap", out, "--n", "5", "--seed", seed)
        picked.append([r["query_id"] for r in map(json.loads, (tmp / out / "before.jsonl").read_text().splitlines())])
    assert len(picked[0]) == 5 and picked[0] == picked[1] and picked[0] != picked[2]


def test_builtin_bm25_reranker_orders_by_content():
    chunks = [Chunk("a", "cats and dogs"), Chunk("b", "invoice export csv"), Chunk("c", "export of invoices")]
    r = BM25Reranker()
    r.index(chunks)
    ranked = apply_reranker(r, Query("q", "export invoice"), chunks)
    assert ranked[0][0].chunk_id in {"b", "c"} and ranked[-1][0].chunk_id == "a"
    # Without an index, the items of the call are the collection.
    ranked2 = apply_reranker(BM25Reranker(), Query("q", "export invoice"), chunks)
    assert ranked2[-1][0].chunk_id == "a"


def test_cli_on_the_demo_data(tmp_path, capsys):
    run = demo_run(tmp_path, k=30)
    out = tmp_path / "out"
    code = main(["stress", "--gold", str(GOLD), "--run", str(run), "--corpus", str(CORPUS), "--reranker", "bm25",
                 "--negatives", "must-not", "--ranks", "1,2", "--n", "20", "--resamples", "200", "--out", str(out)])
    assert code in (0, 1)
    data = json.loads((out / "stress.json").read_text())
    assert data["queries"]["stressed"] == 20 and data["negatives"] == "must-not"
    assert "### Reranker stress test" in (out / "stress.md").read_text()


def test_bad_values_are_refused(case, capsys):
    tmp, gold, corpus, run, negs = case
    base = ["stress", "--gold", gold, "--run", run, "--corpus", corpus, "--out", tmp / "o"]
    assert_refused([*base, "--ranks", "0,1"], tmp, capsys=capsys, contains=["--ranks"])
    assert_refused([*base, "--ranks", "1,1"], tmp, capsys=capsys, contains=["--ranks"])
    assert_refused([*base, "--max-drop", "2"], tmp, capsys=capsys, contains=["--max-drop"])
    assert_refused([*base, "--n", "-1"], tmp, capsys=capsys, contains=["--n"])
    assert_refused([*base, "--reranker", "bm52"], tmp, capsys=capsys, contains=["bm25"])
    assert_refused([*base, "--reranker", "toy_rerankers:Short", "--negatives", negs], tmp, capsys=capsys,
                   contains=["one score per item"])
    assert_refused([*base, "--negatives", tmp / "missing.jsonl"], tmp, names=["missing.jsonl"], capsys=capsys)
    bad = tmp / "bad_negs.jsonl"
    bad.write_text('{"query_id": "q1", "negatives": "n1_0"}\n')
    assert_refused([*base, "--negatives", bad], tmp, names=[bad], capsys=capsys, contains=["negatives"])
    rel = write_jsonl(tmp / "rel_negs.jsonl", [{"query_id": "q1", "negatives": ["r1"]}])
    assert_refused([*base, "--negatives", rel], tmp, names=[rel], capsys=capsys, contains=["relevant"])
    assert_refused(["stress", "--gold", gold, "--run", run, "--negatives", "lexical", "--out", tmp / "o"], tmp,
                   capsys=capsys, contains=["--corpus"])


def test_get_reranker_rejects_objects_without_rerank():
    from rankgate.errors import UsageError

    with pytest.raises(UsageError, match="no rerank"):
        get_reranker("collections:OrderedDict")


def test_dense_reranker_reads_content():
    pytest.importorskip("sentence_transformers")
    chunks = [Chunk("a", "The cat sat on the mat."), Chunk("b", "Export your invoices as a CSV file.")]
    ranked = apply_reranker(get_reranker("dense"), Query("q", "how do I download invoices to a spreadsheet"), chunks)
    assert ranked[0][0].chunk_id == "b"


def test_the_verdict_never_says_held_up_when_negatives_got_through():
    """nDCG@5 can hold while a negative reaches the top 3: the verdict says both, never "held up"."""
    from types import SimpleNamespace

    from rankgate.render.experiments import _stress_lines

    def res(passed: bool, breaches: int) -> SimpleNamespace:
        return SimpleNamespace(ranks=(1, 3), skipped={}, breaches=[SimpleNamespace(query_id=f"q{i}") for i in range(breaches)],
                               breach_share=breaches / 4, passed=passed, max_drop=0.05, reranker="r", queries=["a", "b", "c", "d"],
                               negatives="lexical")

    every = _stress_lines(res(True, 4))[-1]
    assert "held up" not in every and every.startswith("Verdict: passed on nDCG@5 only") and "4 of 4 queries" in every
    assert _stress_lines(res(True, 0))[-1].startswith("Verdict: held up: no negative reached the top 3")
    assert _stress_lines(res(False, 2))[-1].startswith("Verdict: FAILED")
