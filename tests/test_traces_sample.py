"""traces/gold sample: production queries worth labelling, as gold-set candidates."""

from __future__ import annotations

import json

import pytest

from rankgate.cli.main import main
from rankgate.io import load_gold
from rankgate.traces import read_traces
from rankgate.traces.sample import sample_candidates

T = "2026-05-01T10:00:0{}Z"


def req(i, *, query="q", score=0.9, fallback=False, feedback=None, status="ok", tenant="a", source="s1", items=True):
    r = {"request_id": f"r{i}", "timestamp": T.format(i % 10), "query": f"{query} {i}", "tenant": tenant,
         "status": status, "fallback": fallback}
    if items:
        r["retrieved"] = [{"stage": "candidate", "rank": 1, "id": f"c{i}", "score": score, "source": source,
                           "doc_version": "v2"},
                          {"stage": "candidate", "rank": 2, "id": f"d{i}", "score": score / 2, "source": source},
                          {"stage": "packed", "rank": 1, "id": f"c{i}", "source": source}]
    if feedback is not None:
        r["feedback"] = [{"value": feedback}]
    return r


def write(tmp_path, recs):
    p = tmp_path / "t.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return p


def test_reasons_and_exclusions(tmp_path):
    recs = [req(0, feedback=0), req(1, fallback=True), req(2, score=0.2), req(3, score=0.9),
            req(4, score=0.1, status="error"), req(5, items=False), dict(req(6, score=0.1), query=None)]
    recs.append(dict(req(7, score=0.1), query="q 2"))  # the same query as r2: proposed once
    tt = read_traces(write(tmp_path, recs))
    got = {r["request_id"]: r["sample_reason"] for r in sample_candidates(tt, threshold=0.5, n=50)}
    assert got == {"r0": "negative_feedback", "r1": "fallback", "r2": "low_confidence", "r5": "fallback"}
    assert {r["request_id"] for r in sample_candidates(tt, n=50)} == {"r0", "r1", "r5"}  # no threshold


def test_candidate_record_shape_and_gold_loader(tmp_path):
    tt = read_traces(write(tmp_path, [req(0, score=0.2)]))
    (rec,) = sample_candidates(tt, threshold=0.5)
    assert rec["source_of_query"] == "production_log" and rec["query_id"] == "prod-r0" and rec["query"] == "q 0"
    assert rec["relevant_chunks"][0] == {"chunk_id": "c0", "grade": None, "rank": 1, "score": 0.2,
                                         "doc_version": "v2", "source": "s1", "packed": True}
    for c in rec["relevant_chunks"]:
        c["grade"] = 1  # the labeller's work
    g = tmp_path / "gold.jsonl"
    g.write_text(json.dumps(rec) + "\n")
    gold = load_gold(str(g))
    assert gold.query_ids == ["prod-r0"]


def test_stratified_and_deterministic(tmp_path):
    recs = [req(i, feedback=0, tenant="big", source="s1") for i in range(40)]
    recs += [req(100 + i, feedback=0, tenant="small", source="s2") for i in range(3)]
    recs += [req(200 + i, fallback=True) for i in range(5)]
    tt = read_traces(write(tmp_path, recs))
    a = sample_candidates(tt, n=8, seed=1)
    assert a == sample_candidates(tt, n=8, seed=1)
    assert [r["request_id"] for r in a] != [r["request_id"] for r in sample_candidates(tt, n=8, seed=2)]
    reasons = [r["sample_reason"] for r in a]
    assert reasons.count("fallback") == 4 and reasons.count("negative_feedback") == 4
    tenants = [r["tags"]["tenant"] for r in a if r["sample_reason"] == "negative_feedback"]
    assert tenants.count("small") == 2  # the small tenant's stratum takes its turn


def test_cli_traces_and_gold_sample(tmp_path, capsys):
    from .hostile import assert_refused

    p = write(tmp_path, [req(0, score=0.2), req(1, fallback=True)])
    ab = tmp_path / "abstention.yaml"
    ab.write_text("abstention:\n  threshold: 0.5\n  metric: hit@5\n")
    out = tmp_path / "cands.jsonl"
    assert main(["gold", "sample", "--traces", str(p), "--abstention", str(ab), "-o", str(out), "--seed", "3"]) == 0
    first = out.read_bytes()
    assert len(first.splitlines()) == 2 and b'"production_log"' in first
    assert main(["gold", "sample", "--traces", str(p), "--abstention", str(ab), "-o", str(out), "--seed", "3"]) == 0
    assert out.read_bytes() == first
    out_dir = tmp_path / "o"
    out_dir.mkdir()
    ab.write_text("abstention:\n  threshold: null\n")
    assert_refused(["gold", "sample", "--traces", str(p), "--abstention", str(ab), "-o", str(out_dir / "c.jsonl")],
                   out_dir, names=["abstention.yaml"], capsys=capsys)
    assert_refused(["gold", "sample", "--traces", str(p), "--by", "colour", "-o", str(out_dir / "c.jsonl")],
                   out_dir, contains=["colour"], capsys=capsys)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"request_id": "x"}\n')
    assert_refused(["gold", "sample", "--traces", str(bad), "-o", str(out_dir / "c.jsonl")], out_dir,
                   names=["bad.jsonl"], contains=["timestamp"], capsys=capsys)


@pytest.mark.parametrize("n", [0, -1])
def test_n_must_be_positive(tmp_path, n):
    from rankgate.errors import UsageError

    tt = read_traces(write(tmp_path, [req(0)]))
    with pytest.raises(UsageError):
        sample_candidates(tt, n=n)


@pytest.mark.parametrize("name, content, contains", [
    ("empty.jsonl", b"", ["is empty"]),
    ("fake.jsonl.gz", b'{"request_id": "a"}\n', ["not gzip"]),
    ("latin1.jsonl", '{"request_id": "a", "timestamp": "2026-01-01T00:00:00Z", "query": "caf\xe9"}\n'.encode("latin-1"),
     ["not UTF-8", ":1"]),
    ("utf16.jsonl", '{"request_id": "a"}\n'.encode("utf-16"), ["UTF-16"]),
    ("broken.parquet", b"PAR1" + b"\x00" * 64, ["Parquet"]),
    ("otlp.jsonl", json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "zz", "spanId": "1" * 16, "startTimeUnixNano": "1"}]}]}]}).encode() + b"\n", ["traceId", ":1"]),
    ("odd.json", b'{"hello": "world"}\n', ["--traces-format"]),
    ("deep.jsonl", b'{"request_id": "a", "timestamp": "2026-01-01T00:00:00Z", "x": ' + b"[" * 5000 + b"]" * 5000
     + b"}\n", ["nested too deeply"]),
])
def test_hostile_trace_files_are_refused(tmp_path, capsys, name, content, contains):
    from .hostile import assert_refused

    p = tmp_path / name
    p.write_bytes(content)
    out_dir = tmp_path / "o"
    out_dir.mkdir()
    assert_refused(["gold", "sample", "--traces", str(p), "-o", str(out_dir / "c.jsonl")], out_dir, names=[name],
                   contains=contains, capsys=capsys)


def test_corpus_gives_candidates_their_text_and_status_and_lists_the_missing(tmp_path, capsys):
    """--corpus: a labeller reads each candidate chunk's text; a retired chunk says so; a chunk the
    corpus lacks is marked and listed, never dropped."""
    traces = write(tmp_path, [req(0, score=0.2), req(1, feedback=0)])
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(c) + "\n" for c in [
        {"chunk_id": "c0", "doc_id": "c", "text": "Refunds are possible within 30 days."},
        {"chunk_id": "d0", "doc_id": "d", "text": "Old refund rules.", "status": "retired"},
        {"chunk_id": "c1", "doc_id": "c", "text": "Invoices list every line item."}]))
    out = tmp_path / "cands.jsonl"
    assert main(["traces", "sample", "--traces", str(traces), "--corpus", str(corpus), "-o", str(out),
                 "--abstention", str(_abstention(tmp_path, 0.5))]) == 0
    text = capsys.readouterr().out
    assert "1 candidate chunks are not in the corpus" in text and "d1" in text
    by_id = {c["chunk_id"]: c for r in map(json.loads, out.read_text().splitlines()) for c in r["relevant_chunks"]}
    assert by_id["c0"]["text"] == "Refunds are possible within 30 days." and by_id["c0"]["corpus_status"] == "active"
    assert by_id["d0"]["corpus_status"] == "retired" and by_id["d0"]["text"] == "Old refund rules."
    assert by_id["d1"]["in_corpus"] is False and "text" not in by_id["d1"]


def _abstention(tmp_path, threshold):
    p = tmp_path / "abstention.yaml"
    p.write_text(f"abstention:\n  threshold: {threshold}\n")
    return p
