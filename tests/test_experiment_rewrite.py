"""Query rewriting: original vs rewritten query results, paired, and the queries the rewrite broke."""

from __future__ import annotations

import json

from rankgate.cli.main import main
from rankgate.retrieval import retrieve
from rankgate.retrieval.base import Chunk, Query

from .demo_runs import CORPUS, GOLD, gold_records, write_jsonl
from .hostile import assert_refused

N = 10
CHUNKS = [Chunk(f"d{i}", f"widget{i} manual page") for i in range(N)]
ORIGINAL = [Query(f"q{i}", f"how to configure widget{i}") for i in range(N)]
# The rewrite drops the term the query needs on even queries, and a filler word on odd ones.
REWRITTEN = [Query(f"q{i}", "how to configure" if i % 2 == 0 else f"configure widget{i}") for i in range(N)]


def _log(tmp_path):
    a = retrieve(CHUNKS, ORIGINAL, "bm25", k=5, latency=False)
    b = retrieve(CHUNKS, REWRITTEN, "bm25", k=5, latency=False)
    records = [{"query_id": ra["query_id"],
                "original": {"query": qa.text, "topk": ra["topk"]},
                "rewritten": {"query": qb.text, "topk": rb["topk"]},
                "topk": rb["topk"]} for ra, rb, qa, qb in zip(a, b, ORIGINAL, REWRITTEN)]
    gold = write_jsonl(tmp_path / "gold.jsonl", [
        {"query_id": f"q{i}", "relevant_chunks": [f"d{i}"], "tags": {"team": "even" if i % 2 == 0 else "odd"}}
        for i in range(N)])
    return gold, write_jsonl(tmp_path / "rewrite.jsonl", records), a, b


def test_a_rewrite_that_drops_a_term_loses_recall_on_the_queries_that_need_it(tmp_path, capsys):
    gold, log, _, _ = _log(tmp_path)
    capsys.readouterr()
    assert main(["compare", str(log), "--gold", str(gold), "--rewrite", "--by", "team", "--json",
                 "--resamples", "300", "--permutations", "300"]) == 0
    data = json.loads(capsys.readouterr().out)["rewrite"]
    rows = {(r["metric"], r["segment"]): r for r in data["metrics"]}
    assert rows[("recall@10", None)]["before"] == 1.0 and rows[("recall@10", None)]["after"] == 0.5
    assert rows[("recall@10", "team=even")]["delta"] == -1.0 and rows[("recall@10", "team=odd")]["delta"] == 0.0
    assert rows[("recall@10", None)]["ci"][1] < 0
    assert [b["query_id"] for b in data["broken"]] == ["q0", "q2", "q4", "q6", "q8"]
    assert data["broken"][0]["original"] == "how to configure widget0"
    assert data["broken"][0]["rewritten"] == "how to configure"
    assert data["fixed_count"] == 0


def test_two_run_files_and_markdown(tmp_path, capsys):
    gold, _, a, b = _log(tmp_path)
    ra = write_jsonl(tmp_path / "orig.jsonl", a)
    rb = write_jsonl(tmp_path / "rewr.jsonl", b)
    capsys.readouterr()
    assert main(["compare", str(ra), str(rb), "--gold", str(gold), "--rewrite", "--k", "5", "--markdown",
                 "--resamples", "100", "--permutations", "100"]) == 0
    text = capsys.readouterr().out
    assert "### Query rewriting" in text and "recall@5" in text and "lowered recall@5 on 5 of 10" in text


def test_cli_on_the_demo_data(tmp_path, capsys):
    queries = {r["query_id"]: r for r in gold_records()}
    chunks = CORPUS
    orig = retrieve(chunks, GOLD, "bm25", k=10, latency=False)
    # The rewrite drops each query's last word.
    shorter = [Query(q, " ".join(r["query"].split()[:-1]) or r["query"], r.get("tags") or {}) for q, r in queries.items()]
    new = retrieve(chunks, shorter, "bm25", k=10, latency=False)
    log = write_jsonl(tmp_path / "log.jsonl", [
        {"query_id": x["query_id"], "original": {"query": queries[x["query_id"]]["query"], "topk": x["topk"]},
         "rewritten": {"query": q.text, "topk": y["topk"]}} for x, y, q in zip(orig, new, shorter)])
    capsys.readouterr()
    assert main(["compare", str(log), "--gold", str(GOLD), "--rewrite", "--by", "lang", "--json",
                 "--resamples", "100", "--permutations", "100"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["baseline"], data["candidate"]) == ("original", "rewritten")
    eff = data["rewrite"]
    assert eff["broken_count"] > 0
    top = {r["metric"]: r for r in eff["metrics"] if r["segment"] is None}
    assert top["recall@10"]["delta"] < 0


def test_bad_inputs_are_refused(tmp_path, capsys):
    gold, log, _, _ = _log(tmp_path)
    half = write_jsonl(tmp_path / "half.jsonl", [{"query_id": "q1", "original": ["d1"]}])
    assert_refused(["compare", half, "--gold", gold, "--rewrite"], tmp_path, names=[half], capsys=capsys,
                   contains=["rewritten"])
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"query_id": "q1", "original": ["d1"], "rewritten": 7}])
    assert_refused(["compare", bad, "--gold", gold, "--rewrite"], tmp_path, names=[bad], capsys=capsys,
                   contains=["rewritten"])
    assert_refused(["compare", log, log, log, "--gold", gold, "--rewrite"], tmp_path, capsys=capsys,
                   contains=["--rewrite"])
    assert_refused(["compare", log, "--gold", gold, "--rewrite", "--fuse", "rrf"], tmp_path, capsys=capsys,
                   contains=["--fuse"])
