"""The metrics spec's orchestration fields: ``adapter`` (the framework that produced a trace) as a trace
field and segment, per-request process samples (``cpu_ms``, ``memory_mb``) summarised like latency, the
report's "Run artifacts" block, and the stress test's verdict wording in every output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rankgate.cli.main import main

from .demo_runs import DEMO, write_jsonl

TRACES = DEMO / "traces.jsonl"


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text(encoding="utf-8"))


# -- adapter and process samples in traces ----------------------------------------------------------------
def test_traces_analyze_by_adapter_on_the_demo_traces(tmp_path, capsys):
    out = tmp_path / "ta"
    assert main(["traces", "analyze", "--traces", str(TRACES), "--by", "adapter", "--out", str(out)]) == 0
    s = _summary(out)
    records = [json.loads(line) for line in TRACES.read_text(encoding="utf-8").splitlines()]
    by_hand = {a: sum(1 for r in records if r["adapter"] == a) for a in ("langchain", "llamaindex")}
    assert set(s["segments"]) == {"adapter=langchain", "adapter=llamaindex"}
    for a, n in by_hand.items():
        assert s["segments"][f"adapter={a}"]["resources.cpu_ms.p50"]["n"] == n
    assert sum(by_hand.values()) == s["requests"] == len(records)
    res = s["operational"]["resources"]
    assert res["cpu_ms"]["n"] == res["memory_mb"]["n"] == len(records)
    assert 100 < res["cpu_ms"]["p50"] < 200 and 380 < res["memory_mb"]["p50"] < 480
    # the demo's langchain workers use more memory (benchmarks/demo_traces.py): the segments show it
    seg = s["segments"]
    assert seg["adapter=langchain"]["resources.memory_mb.p50"]["value"] > seg["adapter=llamaindex"]["resources.memory_mb.p50"]["value"]
    assert "adapter=langchain" in (out / "signals.csv").read_text(encoding="utf-8")
    html = (out / "trace_report.html").read_text(encoding="utf-8")
    assert '<section id="resources">' in html and "CPU time (ms)" in html
    assert "Process resources per request" in capsys.readouterr().out


def _requests(rows: list[dict]) -> list[dict]:
    return [{"request_id": f"r{i}", "timestamp": f"2026-05-0{1 + i % 2}T10:00:00Z", **row} for i, row in enumerate(rows)]


def test_process_samples_summarised_by_hand(tmp_path):
    """cpu_ms 10..50 over five requests: p50 30, p95 48 (40 + 0.8 x 10), p99 49.6; per adapter too."""
    rows = [{"adapter": a, "cpu_ms": c, "memory_mb": m} for a, c, m in
            (("a", 10, 100), ("a", 20, 300), ("b", 30, 200), ("b", 40, 400), ("b", 50, 500))]
    rows.append({"adapter": "b"})  # a request without samples: not counted
    traces = write_jsonl(tmp_path / "t.jsonl", _requests(rows))
    out = tmp_path / "out"
    assert main(["traces", "analyze", "--traces", str(traces), "--by", "adapter", "--out", str(out)]) == 0
    s = _summary(out)
    cpu, mem = s["operational"]["resources"]["cpu_ms"], s["operational"]["resources"]["memory_mb"]
    assert (cpu["p50"], cpu["p95"], cpu["p99"], cpu["n"]) == (30.0, pytest.approx(48.0), pytest.approx(49.6), 5)
    assert (mem["p50"], mem["n"]) == (300.0, 5)
    seg = s["segments"]
    assert seg["adapter=a"]["resources.cpu_ms.p50"] == {"value": 15.0, "n": 2}
    assert seg["adapter=b"]["resources.cpu_ms.p50"] == {"value": 40.0, "n": 3}
    assert seg["adapter=b"]["resources.memory_mb.p95"]["value"] == pytest.approx(490.0)  # 400 + 0.9 x 100


def test_traces_without_samples_keep_their_summary(tmp_path):
    """No cpu_ms / memory_mb anywhere: no resources block, no "not measurable" lines for them."""
    traces = write_jsonl(tmp_path / "t.jsonl", _requests([{"adapter": "custom"}, {}]))
    out = tmp_path / "out"
    assert main(["traces", "analyze", "--traces", str(traces), "--by", "adapter", "--out", str(out)]) == 0
    s = _summary(out)
    assert "resources" not in s["operational"]
    assert "resources." not in (out / "signals.csv").read_text(encoding="utf-8")
    assert set(s["segments"]) == {"adapter=custom", "adapter=(none)"}


@pytest.mark.parametrize("field, value, says", [
    ("cpu_ms", -3, "must not be negative"),
    ("memory_mb", "lots", "must be a number"),
    ("cpu_ms", True, "must be a number"),
    ("adapter", 7, "must be a string"),
    ("memory_mb", 10**400, "must be a finite number"),  # (an integer beyond the float range: was an internal error)
])
def test_a_bad_sample_names_file_line_and_field(tmp_path, capsys, field, value, says):
    traces = write_jsonl(tmp_path / "t.jsonl", _requests([{"cpu_ms": 1.0}, {field: value}]))
    assert main(["traces", "analyze", "--traces", str(traces), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "t.jsonl:2" in err and field in err and says in err


def test_span_formats_read_the_adapter_and_samples(tmp_path):
    """OTLP: ``rankgate.adapter`` / ``rankgate.cpu_ms`` attributes, else the OpenInference instrumentation
    scope names the framework."""
    from rankgate.traces.read import read_traces

    def span(tid: str, attrs: dict) -> dict:
        return {"traceId": tid * 32, "spanId": "1" * 16, "name": "retrieve", "kind": 2,
                "startTimeUnixNano": "1780000000000000000", "endTimeUnixNano": "1780000000050000000",
                "attributes": [{"key": k, "value": {"stringValue": v} if isinstance(v, str) else {"doubleValue": v}}
                               for k, v in attrs.items()]}

    msg = {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [
        {"scope": {"name": "openinference.instrumentation.llama_index"},
         "spans": [span("a", {"openinference.span.kind": "RETRIEVER", "rankgate.cpu_ms": 12.5,
                              "rankgate.memory_mb": "300"})]},
        {"scope": {"name": "my.app"},
         "spans": [span("b", {"openinference.span.kind": "RETRIEVER", "rankgate.adapter": "custom"})]}]}]}
    p = tmp_path / "otlp.jsonl"
    p.write_text(json.dumps(msg) + "\n", encoding="utf-8")
    req = read_traces(str(p)).requests.to_pylist()
    got = {r["trace_id"][0]: (r["adapter"], r["cpu_ms"], r["memory_mb"]) for r in req}
    assert got == {"a": ("llamaindex", 12.5, 300.0), "b": ("custom", None, None)}
    bad = dict(msg)
    bad["resourceSpans"][0]["scopeSpans"][1]["spans"][0]["attributes"].append(
        {"key": "rankgate.cpu_ms", "value": {"doubleValue": -1.0}})
    p.write_text(json.dumps(bad) + "\n", encoding="utf-8")
    from rankgate.errors import InputError

    with pytest.raises(InputError) as e:
        read_traces(str(p))
    assert "rankgate.cpu_ms" in str(e.value) and "otlp.jsonl:1" in str(e.value)


def test_a_field_map_names_the_adapter(tmp_path):
    from rankgate.traces.fieldmap import FIELD_NAMES

    assert {"adapter", "cpu_ms", "memory_mb"} <= set(FIELD_NAMES)


# -- the report's run artifacts -------------------------------------------------------------------------
REPORT = Path(__file__).parent / "data" / "report"


def test_the_report_shows_each_runs_artifacts_escaped_with_differences_marked(tmp_path):
    hostile = '<script>alert("x")</script>'
    run = [dict(json.loads(line), index_version=hostile, reranker="cross-enc-base")
           for line in (REPORT / "run.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    base = [dict(json.loads(line), reranker="cross-enc-base")
            for line in (REPORT / "base.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    write_jsonl(tmp_path / "run.jsonl", run)
    write_jsonl(tmp_path / "base.jsonl", base)
    out = tmp_path / "r.html"
    main(["report", "--gold", str(REPORT / "gold.jsonl"), "--run", str(tmp_path / "run.jsonl"), "--baseline",
          str(tmp_path / "base.jsonl"), "--resamples", "0", "-o", str(out)])
    html = out.read_text(encoding="utf-8")
    block = html[html.index('<div class="artifacts"'):]
    block = block[:block.index("</div>")]
    assert "<script>alert" not in html and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in block
    rows = dict((r.split("</td>")[0], r) for r in block.split("<tr><td>")[1:])
    assert 'class="differs"' in rows["index version"]  # the candidate's index differs from the baseline's
    assert "differs" not in rows["reranker"] and "cross-enc-base" in rows["reranker"]
    assert "target_tokens" in rows["chunker"]


def test_the_artifacts_block_alone():
    from rankgate.render.artifacts import artifacts_markdown, run_artifacts

    assert run_artifacts({"queries": 3}, {"queries": 3}) is None
    art = run_artifacts({"index_version": ["v1", "v2"], "chunker": {"algo": "s"}}, {"index_version": "v1"},
                        run_label="cand", baseline_label="base|x")
    assert art is not None and art.rows[0] == ("index version", "v1; v2", "v1", True)
    md = artifacts_markdown(art)
    assert "| **v1; v2** | **v1** |" in md and "base\\|x" in md and '{"algo": "s"}' in md


# -- the stress test's wording ---------------------------------------------------------------------------
RERANKER = '''
class Blind:
    """Ignores content: the input order stays, so every negative put on top stays there."""
    def rerank(self, query, items):
        return [float(len(items) - i) for i in range(len(items))]
'''


def test_no_stress_output_says_held_up_when_every_query_got_a_negative(tmp_path, monkeypatch, capsys):
    """nDCG@5 within --max-drop, a negative in the top 3 of every query: passed on nDCG@5 only, in the
    terminal, stress.md and stress.json, never "held up"."""
    (tmp_path / "toy_blind.py").write_text(RERANKER)
    monkeypatch.syspath_prepend(str(tmp_path))
    n = 6
    gold = write_jsonl(tmp_path / "gold.jsonl", [
        {"query_id": f"q{i}", "query": f"alpha{i}", "relevant_chunks": [f"r{i}"]} for i in range(n)])
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [
        rec for i in range(n) for rec in ({"chunk_id": f"r{i}", "text": f"alpha{i} answer"},
                                          {"chunk_id": f"n{i}", "text": "nothing"})])
    run = write_jsonl(tmp_path / "run.jsonl", [
        {"query_id": f"q{i}", "topk": [{"chunk_id": f"r{i}", "score": 1.0}]} for i in range(n)])
    negs = write_jsonl(tmp_path / "negs.jsonl", [{"query_id": f"q{i}", "negatives": [f"n{i}"]} for i in range(n)])
    out = tmp_path / "out"
    code = main(["stress", "--gold", str(gold), "--run", str(run), "--corpus", str(corpus), "--reranker",
                 "toy_blind:Blind", "--negatives", str(negs), "--ranks", "1", "--max-drop", "1", "--resamples", "200",
                 "--out", str(out)])
    assert code == 0
    data = json.loads((out / "stress.json").read_text(encoding="utf-8"))
    assert data["passed"] is True and data["negative_in_top_3"]["share"] == 1.0
    terminal = capsys.readouterr().out
    for text in (terminal, (out / "stress.md").read_text(encoding="utf-8"), json.dumps(data)):
        assert "held up" not in text
    assert "passed on nDCG@5 only" in terminal and f"{n} of {n} queries" in " ".join(terminal.split())
