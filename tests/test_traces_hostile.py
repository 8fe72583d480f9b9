"""Hostile trace files in every span/observation reader: the same rule everywhere (issue 21, classes 7-9).

* a span/observation that ends before it starts is refused (exit 2, one line naming file:line:field),
  or counted and skipped under ``--on-error skip``;
* documents that are not a list (a JSON string cut short) are refused naming the path, never read as
  no documents;
* a span delivered twice with the same content is read once and counted; the same id with different
  content is refused naming both places.
"""

from __future__ import annotations

import json

import pytest

from rankgate.cli.main import main
from rankgate.traces import read_traces

from .hostile import assert_refused
from .conftest import examples

TID = "5b8efff798038103d269b633813fc60c"
START, END = "2026-05-29T13:46:19.963Z", "2026-05-29T13:46:20.011Z"
NS_START, NS_END = "1780062379963000000", "1780062380011000000"
DOCS = [{"id": "kb/a", "score": 0.9}, {"id": "kb/b", "score": 0.4}]
FORMATS = ("otlp", "otel-sdk", "phoenix", "langfuse", "langsmith")


def kv(k, v):
    return {"key": k, "value": v}


def row(fmt, *, trace="1", span="1", start=True, end=True, query="refund window", docs=None):
    """One JSON line of ``fmt``: a trace with one retrieval span/observation. ``start``/``end``: True for
    the defaults, or a value (ISO text; nanoseconds text for OTLP). ``docs``: the documents payload
    (default: DOCUMENTS as the format writes them)."""
    tid = (trace * 32)[:32]
    sid = (span * 16)[:16]
    iso_s = START if start is True else start
    iso_e = END if end is True else end
    if fmt == "otlp":
        payload = json.dumps(DOCS) if docs is None else docs
        sp = {"traceId": tid, "spanId": sid, "name": "retrieval", "kind": 3,
              "startTimeUnixNano": NS_START if start is True else start,
              "endTimeUnixNano": NS_END if end is True else end, "status": {"code": 0}, "attributes": [
                  kv("gen_ai.operation.name", {"stringValue": "retrieval"}),
                  kv("gen_ai.retrieval.query.text", {"stringValue": query}),
                  kv("gen_ai.retrieval.documents", {"stringValue": payload})]}
        return json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [sp]}]}]})
    if fmt == "otel-sdk":
        return json.dumps({"name": "retrieval", "context": {"trace_id": "0x" + tid, "span_id": "0x" + sid},
                           "parent_id": None, "kind": "SpanKind.CLIENT", "start_time": iso_s, "end_time": iso_e,
                           "status": {"status_code": "UNSET"},
                           "attributes": {"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.query.text": query,
                                          "gen_ai.retrieval.documents": json.dumps(DOCS) if docs is None else docs}})
    if fmt == "phoenix":
        return json.dumps({"context.trace_id": tid, "context.span_id": sid, "parent_id": None, "name": "retrieve",
                           "span_kind": "RETRIEVER", "start_time": iso_s, "end_time": iso_e, "status_code": "OK",
                           "attributes.input.value": query,
                           "attributes.retrieval.documents": [{"document.id": d["id"], "document.score": d["score"]}
                                                              for d in DOCS] if docs is None else docs})
    if fmt == "langfuse":
        return json.dumps({"id": "obs-" + span, "trace_id": "t-" + trace, "type": "RETRIEVER",
                           "parent_observation_id": None, "name": "retrieve", "start_time": iso_s, "end_time": iso_e,
                           "input": json.dumps({"query": query}),
                           "output": json.dumps({"documents": DOCS}) if docs is None else docs})
    assert fmt == "langsmith"
    return json.dumps({"id": "run-" + span, "trace_id": "t-" + trace, "run_type": "retriever", "name": "Retriever",
                       "start_time": iso_s, "end_time": iso_e, "inputs": {"query": query}, "error": None,
                       "outputs": {"documents": [{"page_content": d["id"], "metadata": d} for d in DOCS]}
                       if docs is None else {"documents": docs}})


def early_end(fmt):
    """An end a second before the start, in the format's own notation."""
    return "1780062378963000000" if fmt == "otlp" else "2026-05-29T13:46:18.963Z"


def write(tmp_path, fmt, lines, name=None):
    p = tmp_path / (name or f"{fmt}.jsonl")
    p.write_text("\n".join(lines) + "\n")
    return p


def analyze(tmp_path, p, *extra):
    out = tmp_path / "out"
    for f in ("signals.csv", "summary.json", "trace_report.html"):
        (out / f).unlink(missing_ok=True)
    assert main(["traces", "analyze", "--traces", str(p), "--out", str(out), *extra]) == 0
    return json.loads((out / "summary.json").read_text())


def out_dir(tmp_path):
    d = tmp_path / "o"
    d.mkdir(exist_ok=True)
    return d


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_reader_refuses_an_end_before_the_start(fmt, tmp_path, capsys):
    p = write(tmp_path, fmt, [row(fmt, trace="1", span="1"), row(fmt, trace="2", span="2", end=early_end(fmt))])
    o = out_dir(tmp_path)
    field = "endTimeUnixNano" if fmt == "otlp" else "end_time"
    line = assert_refused(["traces", "analyze", "--traces", p, "--out", o], o, names=[p], capsys=capsys,
                          contains=[":2:", f"field '{field}' is before"])
    assert "by 1000 ms" in line
    summary = analyze(tmp_path, p, "--on-error", "skip")
    assert summary["requests"] == 1 and summary["skipped"]["total"] == 1
    assert list(summary["skipped"]["by_reason"]) == [f"field '{field}' is before {'startTimeUnixNano' if fmt == 'otlp' else 'start_time'}"]
    assert summary["operational"]["latency_ms"]["total"]["p50"] == 48.0  # the good trace only


@pytest.mark.parametrize("fmt, payload, path", [
    ("otlp", "{not json", "gen_ai.retrieval.documents"),
    ("otel-sdk", '[{"id": "kb/a"', "gen_ai.retrieval.documents"),
    ("phoenix", "{not json", "retrieval.documents"),
    ("langfuse", '{"documents": [{"id": "kb/a", "sco', "output"),
    ("langfuse", json.dumps({"documents": "{not json"}), "output.documents"),
    ("langfuse", "42", "output"),
    ("langsmith", "{not json", "outputs.documents"),
    ("langsmith", {"id": "kb/a"}, "outputs.documents"),
])
def test_every_reader_refuses_documents_that_are_not_a_list(fmt, payload, path, tmp_path, capsys):
    good = row(fmt, trace="1", span="1")
    bad = row(fmt, trace="2", span="2", docs=payload)
    p = write(tmp_path, fmt, [good, bad])
    o = out_dir(tmp_path)
    assert_refused(["traces", "analyze", "--traces", p, "--out", o], o, names=[p], capsys=capsys,
                   contains=[":2:", f"field '{path}'"])
    summary = analyze(tmp_path, p, "--on-error", "skip")
    assert summary["requests"] == 1 and summary["items"] == 2 and summary["skipped"]["total"] == 1


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_reader_reads_a_span_delivered_twice_once(fmt, tmp_path, capsys):
    one = write(tmp_path, fmt, [row(fmt, trace="1", span="1"), row(fmt, trace="2", span="2")], "one.jsonl")
    twice = write(tmp_path, fmt, [row(fmt, trace="1", span="1"), row(fmt, trace="2", span="2"),
                                  row(fmt, trace="1", span="1")], "twice.jsonl")
    a, b = read_traces(one), read_traces(twice)
    assert a.items.equals(b.items) and b.items.num_rows == 4
    assert a.reading == {} and b.reading == {"duplicate_spans": 1}
    summary = analyze(tmp_path, twice)
    assert (summary["requests"], summary["items"], summary["duplicate_spans"]) == (2, 4, 1)
    assert "1 duplicate spans/observations dropped" in capsys.readouterr().out


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_reader_refuses_one_id_with_two_contents(fmt, tmp_path, capsys):
    p = write(tmp_path, fmt, [row(fmt, trace="1", span="1"), row(fmt, trace="2", span="2"),
                              row(fmt, trace="1", span="1", query="another query")])
    o = out_dir(tmp_path)
    line = assert_refused(["traces", "analyze", "--traces", p, "--out", o], o, names=[p], capsys=capsys,
                          contains=[":3:", "already at", f"{p.name}:1 with different content"])
    assert "Traceback" not in line
    summary = analyze(tmp_path, p, "--on-error", "skip")
    assert summary["requests"] == 2 and summary["skipped"]["total"] == 1


@pytest.mark.parametrize("fmt", ["otlp", "otel-sdk", "phoenix", "langfuse", "langsmith"])
def test_documents_without_an_id_take_their_texts_id(fmt, tmp_path, capsys):
    from rankgate.io.shapes import text_id

    texts = ["Refunds within 30 days.", "Shipping takes 3 days."]
    docs = [{"content": t, "metadata": {"source": "faq"}} for t in texts]
    payload = {"otlp": json.dumps(docs), "otel-sdk": json.dumps(docs),
               "phoenix": [{"document.content": t} for t in texts],
               "langfuse": json.dumps({"documents": [{"page_content": t} for t in texts]}),
               "langsmith": [{"page_content": t, "metadata": {}} for t in texts]}[fmt]
    p = write(tmp_path, fmt, [row(fmt, docs=payload)])
    tt = read_traces(p)
    assert tt.items["item_id"].to_pylist() == [text_id(t) for t in texts]
    assert tt.reading == {"derived_item_ids": 2}
    summary = analyze(tmp_path, p)
    assert summary["derived_item_ids"] == 2
    assert capsys.readouterr().out.count("2 documents had no id; ids derived from text") == 1


def test_a_document_with_neither_id_nor_text_is_refused(tmp_path, capsys):
    p = write(tmp_path, "otlp", [row("otlp", docs=json.dumps([{"score": 0.3}]))])
    o = out_dir(tmp_path)
    assert_refused(["traces", "analyze", "--traces", p, "--out", o], o, names=[p], capsys=capsys,
                   contains=["gen_ai.retrieval.documents[0].id' is missing"])


def test_the_field_map_reaches_the_span_readers_and_is_refused_where_it_cannot_apply(tmp_path, capsys):
    docs = [{"content": "x", "metadata": {"chunk_id": "kb/7", "rel": 0.7}}]
    span_row = json.loads(row("otlp", docs=json.dumps(docs)))
    span_row["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"].append(kv("app.team", {"stringValue": "acme"}))
    p = write(tmp_path, "otlp", [json.dumps(span_row)])
    fm = tmp_path / "map.yaml"
    fm.write_text("document:\n  id: metadata.chunk_id\n  score: metadata.rel\nrequest:\n  tenant: app.team\n")
    tt = read_traces(p, field_map=fm)
    assert tt.items.select(["item_id", "score"]).to_pylist() == [{"item_id": "kb/7", "score": 0.7}]
    assert tt.requests["tenant"].to_pylist() == ["acme"] and tt.reading == {}
    o = out_dir(tmp_path)
    fm.write_text("stages:\n  reranked: [rerank]\n")
    assert_refused(["traces", "analyze", "--traces", p, "--field-map", fm, "--out", o], o, names=[fm],
                   capsys=capsys, contains=["stages", "does not apply to otlp traces"])
    own = tmp_path / "own.jsonl"
    own.write_text(json.dumps({"request_id": "a", "timestamp": START, "query": "q"}) + "\n")
    fm.write_text("document:\n  id: metadata.chunk_id\n")
    assert_refused(["traces", "analyze", "--traces", own, "--field-map", fm, "--out", o], o, names=[fm],
                   capsys=capsys, contains=["does not apply to jsonl traces"])


def test_a_request_with_no_documents_still_counts(tmp_path):
    lines = [row("otlp", trace="1", span="1"), row("otlp", trace="2", span="2", docs="[]")]
    summary = analyze(tmp_path, write(tmp_path, "otlp", lines))
    assert summary["requests"] == 2 and summary["items"] == 2
    assert summary["operational"]["latency_ms"]["total"]["n"] == 2


def test_a_threshold_above_every_top_score_is_named_in_one_line(tmp_path, capsys):
    p = write(tmp_path, "otlp", [row("otlp", trace="1", span="1"), row("otlp", trace="2", span="2")])
    analyze(tmp_path, p, "--abstention-threshold", "12.5")
    out = capsys.readouterr().out
    assert out.count("every request's top score is under the abstention threshold 12.5") == 1
    analyze(tmp_path, p, "--abstention-threshold", "0.5")
    assert "every request's top score" not in capsys.readouterr().out


@pytest.mark.parametrize("fmt", ["langfuse", "langsmith"])
def test_feedback_delivered_twice_counts_once(fmt, tmp_path, capsys):
    fb = ({"id": "score-1", "trace_id": "t-1", "name": "user-feedback", "value": 0, "data_type": "NUMERIC",
           "comment": "wrong"} if fmt == "langfuse" else
          {"id": "fb-1", "run_id": "run-1", "key": "user_score", "score": 0, "comment": "wrong"})
    p = write(tmp_path, fmt, [row(fmt), json.dumps(fb), json.dumps(fb)])
    tt = read_traces(p)
    assert tt.feedback.num_rows == 1 and tt.reading == {"duplicate_feedback": 1}
    other = dict(fb, comment="changed my mind")
    q = write(tmp_path, fmt, [row(fmt), json.dumps(fb), json.dumps(other)], "conflict.jsonl")
    o = out_dir(tmp_path)
    assert_refused(["traces", "analyze", "--traces", q, "--out", o], o, names=[q], capsys=capsys,
                   contains=["conflict.jsonl:3:", "already at", "conflict.jsonl:2 with different content"])


@pytest.mark.parametrize("fmt", FORMATS)
def test_any_replay_of_lines_reads_as_the_lines_once(fmt, tmp_path_factory):
    """Overlapping exports: whatever lines are delivered again, in whatever order after the first
    delivery, the tables equal those of each line read once, and the replays are counted."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    lines = [row(fmt, trace=str(i), span=str(i), query=f"query {i}") for i in range(1, 5)]
    d = tmp_path_factory.mktemp("replay")
    once = read_traces(write(d, fmt, lines, "once.jsonl"))

    @settings(max_examples=examples(15), deadline=None, derandomize=True)
    @given(st.lists(st.integers(0, len(lines) - 1), max_size=6))
    def check(replays):
        tt = read_traces(write(d, fmt, lines + [lines[i] for i in replays], "replayed.jsonl"))
        assert tt.items.equals(once.items) and tt.feedback.equals(once.feedback)
        assert tt.requests.drop(["source_file"]).equals(once.requests.drop(["source_file"]))
        assert tt.reading == ({"duplicate_spans": len(replays)} if replays else {})

    check()
