"""Trace readers on small files written in the shapes each tool documents (docs/traces.md)."""

from __future__ import annotations

import base64
import gzip
import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rankgate.errors import ConfigError, InputError
from rankgate.traces import read_traces

from .conftest import examples
from .hostile import assert_refused

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import trace_gen

TID = "5b8efff798038103d269b633813fc60c"


def kv(k, v):
    return {"key": k, "value": v}


def otlp_line(spans, snake=False):
    req = {"resourceSpans": [{"resource": {"attributes": [kv("service.name", {"stringValue": "rag-api"})]},
                              "scopeSpans": [{"scope": {"name": "rag"}, "spans": spans}]}]}
    text = json.dumps(req)
    if snake:
        for a, b in (("resourceSpans", "resource_spans"), ("scopeSpans", "scope_spans"), ("traceId", "trace_id"),
                     ("spanId", "span_id"), ("parentSpanId", "parent_span_id"), ("stringValue", "string_value"),
                     ("intValue", "int_value"), ("doubleValue", "double_value"), ("startTimeUnixNano",
                                                                                   "start_time_unix_nano"),
                     ("endTimeUnixNano", "end_time_unix_nano"), ("arrayValue", "array_value"),
                     ("kvlistValue", "kvlist_value")):
            text = text.replace(f'"{a}"', f'"{b}"')
    return text


RETRIEVAL = {"traceId": TID, "spanId": "eee19b7ec3c1b174", "name": "retrieval kb-main", "kind": 3,
             "startTimeUnixNano": "1760000000000000000", "endTimeUnixNano": "1760000000049802535",
             "status": {"code": 0}, "attributes": [
                 kv("gen_ai.operation.name", {"stringValue": "retrieval"}),
                 kv("gen_ai.data_source.id", {"stringValue": "kb-main"}),
                 kv("gen_ai.retrieval.top_k", {"intValue": "3"}),
                 kv("gen_ai.retrieval.query.text", {"stringValue": "refund window?"}),
                 kv("gen_ai.retrieval.documents", {"stringValue": json.dumps(
                     [{"id": "doc_123", "score": 0.95, "version": "v3"}, {"id": "doc_9", "score": None,
                                                                          "deprecated": True}])})]}


def test_otlp_minimal_genai_span(tmp_path):
    p = tmp_path / "spans.jsonl"
    p.write_text(otlp_line([RETRIEVAL]) + "\n")
    tt = read_traces(p)
    assert tt.formats == ("otlp",)
    (r,) = tt.requests.to_pylist()
    assert (r["request_id"], r["trace_id"], r["data_source"], r["top_k"], r["query_text"]) == (
        TID, TID, "kb-main", 3, "refund window?")
    assert r["retrieval_ms"] == r["total_ms"] == 49.802 and r["status"] == "ok" and r["http_status"] is None
    assert r["ts"].timestamp() == 1760000000.0
    assert [(i["item_id"], i["score"], i["doc_version"], i["status"]) for i in tt.items.to_pylist()] == [
        ("doc_123", 0.95, "v3", None), ("doc_9", None, None, "deprecated")]


def test_otlp_array_of_kvlists_int_numbers_upper_hex_and_http_root(tmp_path):
    span = json.loads(json.dumps(RETRIEVAL))
    span["traceId"] = TID.upper()
    span["parentSpanId"] = "AAAAAAAAAAAAAAAA"
    span["startTimeUnixNano"] = 1760000000010000000  # a number, not a string
    span["attributes"][2] = kv("gen_ai.request.top_k", {"intValue": 3})
    span["attributes"][4] = kv("gen_ai.retrieval.documents", {"arrayValue": {"values": [
        {"kvlistValue": {"values": [kv("id", {"stringValue": "a"}), kv("score", {"doubleValue": 0.5})]}},
        {"kvlistValue": {"values": [kv("id", {"intValue": "42"}), kv("score", {"doubleValue": "0.25"})]}}]}})
    root = {"traceId": TID, "spanId": "aaaaaaaaaaaaaaaa", "name": "POST /ask", "kind": "SPAN_KIND_SERVER",
            "startTimeUnixNano": "1760000000000000000", "endTimeUnixNano": "1760000000500000000",
            "status": {"code": 2, "message": "boom"},
            "attributes": [kv("http.response.status_code", {"intValue": "503"}),
                           kv("error.type", {"stringValue": "upstream"})],
            "events": [{"name": "feedback", "attributes": [kv("value", {"stringValue": "thumbs_down"})]}]}
    p = tmp_path / "x.json"
    p.write_text(otlp_line([span]) + "\n" + otlp_line([root]) + "\n")  # the two spans on two lines
    tt = read_traces(p, format="otlp")
    (r,) = tt.requests.to_pylist()
    assert (r["top_k"], r["http_status"], r["error_type"], r["status"], r["client_abort"]) == (
        3, 503, "upstream", "error", False)
    assert (r["total_ms"], r["retrieval_ms"], r["source_line"]) == (500.0, 39.802, 2)
    assert [(i["item_id"], i["score"]) for i in tt.items.to_pylist()] == [("a", 0.5), ("42", 0.25)]
    assert tt.feedback.to_pylist()[0]["negative"] is True


def test_otlp_snake_case_phoenix_variant(tmp_path):
    span = json.loads(json.dumps(RETRIEVAL))
    span["kind"] = "SPAN_KIND_CLIENT"
    span["status"] = {"code": "STATUS_CODE_ERROR", "message": "client_disconnected"}
    p = tmp_path / "s.jsonl.gz"
    p.write_bytes(gzip.compress((otlp_line([span], snake=True) + "\n").encode()))
    (r,) = read_traces(p).requests.to_pylist()
    assert (r["status"], r["client_abort"], r["top_k"]) == ("error", True, 3)


def test_openinference_retriever_and_reranker_flattened(tmp_path):
    attrs = {"openinference.span.kind": "RETRIEVER", "input.value": "refund window?", "session.id": "s-1",
             "retrieval.documents.0.document.id": "kb/policy#v3", "retrieval.documents.0.document.score": 0.82,
             "retrieval.documents.0.document.metadata": json.dumps({"version": "v3", "deprecated": False,
                                                                     "source": "policies"}),
             "retrieval.documents.1.document.id": "kb/old#1", "retrieval.documents.1.document.score": 0.7,
             "retrieval.documents.1.document.metadata": json.dumps({"status": "superseded"})}
    ret = {"traceId": TID, "spanId": "1111111111111111", "name": "retrieve", "kind": 1,
           "startTimeUnixNano": "1760000000000000000", "endTimeUnixNano": "1760000000020000000",
           "attributes": [kv(k, {"doubleValue": v} if isinstance(v, float) else {"stringValue": v})
                          for k, v in attrs.items()]}
    rr = {"traceId": TID, "spanId": "2222222222222222", "parentSpanId": "1111111111111111", "name": "rerank",
          "startTimeUnixNano": "1760000000020000000", "endTimeUnixNano": "1760000000030000000",
          "attributes": [kv("openinference.span.kind", {"stringValue": "RERANKER"}),
                         kv("reranker.output_documents.0.document.id", {"stringValue": "kb/old#1"}),
                         kv("reranker.output_documents.0.document.score", {"doubleValue": 0.9})]}
    p = tmp_path / "oi.jsonl"
    p.write_text(otlp_line([ret, rr]) + "\n")
    tt = read_traces(p)
    (r,) = tt.requests.to_pylist()
    assert (r["query_text"], r["conversation_id"], r["retrieval_ms"], r["rerank_ms"]) == ("refund window?", "s-1", 20.0,
                                                                                 10.0)
    assert [(i["stage"], i["item_id"], i["status"], i["source"]) for i in tt.items.to_pylist()] == [
        ("candidate", "kb/policy#v3", None, "policies"), ("candidate", "kb/old#1", "superseded", None),
        ("reranked", "kb/old#1", None, None)]


def test_sdk_to_json_console_output(tmp_path):
    span = {"name": "retrieval kb", "context": {"trace_id": "0x" + TID, "span_id": "0xeee19b7ec3c1b174",
                                                "trace_state": "[]"},
            "kind": "SpanKind.CLIENT", "parent_id": None, "start_time": "2025-10-09T08:53:20.000000Z",
            "end_time": "2025-10-09T08:53:20.050000Z", "status": {"status_code": "UNSET"},
            "attributes": {"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.top_k": 2,
                           "gen_ai.retrieval.documents": json.dumps([{"id": "a", "score": 1}])},
            "events": [], "links": [], "resource": {"attributes": {"rankgate.tenant": "acme"}, "schema_url": ""}}
    p = tmp_path / "console.txt"
    p.write_text(json.dumps(span, indent=4) + "\n" + json.dumps(dict(span, context={
        "trace_id": "0x" + "1" * 32, "span_id": "0x" + "2" * 16}), indent=4) + "\n")
    tt = read_traces(p)
    assert tt.formats == ("otel-sdk",)
    assert tt.requests["tenant"].to_pylist() == ["acme", "acme"]
    assert tt.requests["source_line"].to_pylist() == [1, 1 + json.dumps(span, indent=4).count("\n") + 1]
    assert tt.requests["retrieval_ms"].to_pylist() == [50.0, 50.0]


def test_phoenix_rest_json_and_dataframe_json(tmp_path):
    spans = [{"id": "x", "name": "retrieve", "context": {"trace_id": TID, "span_id": "1111111111111111"},
              "span_kind": "RETRIEVER", "parent_id": None, "start_time": "2026-05-29T13:46:19.963+00:00",
              "end_time": "2026-05-29T13:46:20.011+00:00", "status_code": "OK", "status_message": "",
              "attributes": {"input": {"value": "refund window?"}, "retrieval": {"documents": [
                  {"document": {"id": "kb/policy", "score": 0.82, "metadata": {"version": "v3"}}}]}},
              "events": []}]
    p = tmp_path / "spans.json"
    p.write_text(json.dumps({"data": spans, "next_cursor": None}))
    tt = read_traces(p)
    assert tt.formats == ("phoenix",)
    assert tt.items.to_pylist()[0]["doc_version"] == "v3" and tt.requests["retrieval_ms"].to_pylist() == [48.0]


def test_langfuse_export_latency_ignored_and_scores(tmp_path):
    (tmp_path / "observations_v2").mkdir()
    (tmp_path / "scores").mkdir()
    obs = {"id": "obs1", "trace_id": "t1", "type": "RETRIEVER", "name": "vector-search",
           "parent_observation_id": None, "start_time": "2026-05-29 13:46:19.963000",
           "end_time": "2026-05-29 13:46:20.011000", "input": "{\"query\":\"refund window?\"}",
           "output": "{\"documents\":[{\"id\":\"kb/policy#v3\",\"score\":0.82}]}", "level": "DEFAULT",
           "session_id": "s-1", "user_id": "u-9", "latency": 48}  # ms (an old integration): not used
    (tmp_path / "observations_v2" / "a.jsonl").write_text(json.dumps(obs) + "\n")
    pq.write_table(pa.Table.from_pylist([
        {"id": "s1", "trace_id": "t1", "observation_id": None, "name": "user-feedback", "value": 0.0,
         "string_value": None, "data_type": "NUMERIC", "comment": "wrong policy"},
        {"id": "s2", "trace_id": "t1", "observation_id": None, "name": "faithfulness", "value": 0.9,
         "string_value": None, "data_type": "NUMERIC", "comment": None}]), tmp_path / "scores" / "b.parquet")
    tt = read_traces(tmp_path)
    (r,) = tt.requests.to_pylist()
    assert (r["request_id"], r["conversation_id"], r["query_text"], r["retrieval_ms"]) == ("t1", "s-1", "refund window?",
                                                                                  48.0)
    assert tt.feedback.to_pylist() == [{"request_id": "t1", "value": 0.0, "negative": True, "reason": "wrong policy"}]


def test_langsmith_retriever_run_and_field_map(tmp_path):
    run = {"id": "r-1", "trace_id": "t-1", "run_type": "retriever", "name": "Retriever",
           "start_time": "2026-05-29T13:46:19.963Z", "end_time": "2026-05-29T13:46:20.011Z",
           "inputs": {"query": "refund window?"}, "error": None,
           "outputs": {"documents": [{"page_content": "…", "type": "Document",
                                      "metadata": {"chunk": "kb/policy", "version": "v3", "relevance": 0.82}}]},
           "extra": {"metadata": {"session_id": "s-1", "team": "acme"}}}
    p = tmp_path / "runs.jsonl"
    p.write_text(json.dumps(run) + "\n")
    from rankgate.io.shapes import text_id

    tt = read_traces(p)  # no id: the id of the document's text, counted
    assert tt.items["item_id"].to_pylist() == [text_id("…")] and tt.reading == {"derived_item_ids": 1}
    textless = json.loads(json.dumps(run))
    del textless["outputs"]["documents"][0]["page_content"]
    q = tmp_path / "textless.jsonl"
    q.write_text(json.dumps(textless) + "\n")
    with pytest.raises(InputError, match=r"textless.jsonl:1: field 'Retriever.documents\[0\].metadata.id' is missing"):
        read_traces(q)
    fm = tmp_path / "map.yaml"
    fm.write_text("document:\n  id: metadata.chunk\n  score: metadata.relevance\nrequest:\n  tenant: extra.metadata.team\n")
    tt = read_traces(p, field_map=fm)
    (r,) = tt.requests.to_pylist()
    assert (r["tenant"], r["conversation_id"]) == ("acme", "s-1")
    assert [(i["item_id"], i["score"], i["doc_version"]) for i in tt.items.to_pylist()] == [("kb/policy", 0.82, "v3")]
    fm.write_text("documnet:\n  id: x\n")
    with pytest.raises(ConfigError, match="documnet"):
        read_traces(p, field_map=fm)


def test_broken_lines_error_and_skip_modes(tmp_path):
    good = otlp_line([RETRIEVAL])
    bad_id = otlp_line([dict(RETRIEVAL, traceId="xyz", spanId="1" * 16)])
    bad_int = otlp_line([dict(RETRIEVAL, traceId="2" * 32, startTimeUnixNano="soon")])
    p = tmp_path / "t.otlp.jsonl"
    p.write_text("\n".join([good, "{oops", bad_id, bad_int]) + "\n")
    with pytest.raises(InputError, match=r"t.otlp.jsonl:2: is not valid JSON"):
        read_traces(p)
    tt = read_traces(p, on_error="skip")
    assert tt.requests.num_rows == 1
    reasons = tt.skipped.counts
    assert tt.skipped.total == 3 and reasons["field 'traceId' must be 32 hex digits or the base64 of 16 bytes"] == 1
    assert [n for _, n, _ in tt.skipped.first] == [2, 3, 4]


def test_otlp_ids_in_base64_read_as_their_hex(tmp_path):
    """protobuf's JSON mapping writes bytes as base64: the same span read with base64 ids (padded,
    unpadded, URL-safe) is the same request; a cut hex id or other text is refused, naming the field."""
    import base64

    def b64(hexid, *, pad=True, url=False):
        text = (base64.urlsafe_b64encode if url else base64.b64encode)(bytes.fromhex(hexid)).decode()
        return text if pad else text.rstrip("=")

    def requests(path):
        return [{k: v for k, v in r.items() if k != "source_file"} for r in read_traces(path).requests.to_pylist()]

    want = requests(_write(tmp_path / "hex.jsonl", otlp_line([RETRIEVAL])))
    for pad, url in ((True, False), (False, False), (False, True)):
        span = dict(RETRIEVAL, traceId=b64(TID, pad=pad, url=url), spanId=b64(RETRIEVAL["spanId"], pad=pad, url=url))
        assert requests(_write(tmp_path / f"b64-{pad}-{url}.jsonl", otlp_line([span]))) == want
    # TID[:22] has a base64 id's length, but its last character leaves bits past the 16th byte set
    for bad in (TID[:22], TID[:30], "not base64 at all!!!!!", b64(TID)[:-4] + "===="):
        p = _write(tmp_path / "bad.jsonl", otlp_line([dict(RETRIEVAL, traceId=bad)]))
        with pytest.raises(InputError, match=r"bad.jsonl:1: field 'traceId' must be 32 hex digits or the base64 of 16 "
                                             r"bytes \(24 characters, 22 without padding\); got '"):
            read_traces(p)


_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_HEX_DIGITS = "0123456789abcdefABCDEF"


def _hex_looking(n_bytes):
    """Ids whose base64 holds hex digits alone: 6.5 in a million random span ids, every small sequential
    one ending in E, 0, 4, 8 or c. The length of a base64 id is what tells it from hex."""
    unpadded = (4 * n_bytes + 2) // 3
    spare = 6 * unpadded - 8 * n_bytes  # bits of the last character past the last byte: zero
    last = [c for c in _HEX_DIGITS if _B64.index(c) % (1 << spare) == 0]
    return st.tuples(st.text(_HEX_DIGITS, min_size=unpadded - 1, max_size=unpadded - 1), st.sampled_from(last)).map(
        lambda t: base64.b64decode(t[0] + t[1] + "=" * (-unpadded % 4)))


_ID_FORMS = {
    "hex": lambda raw: raw.hex(),
    "HEX": lambda raw: raw.hex().upper(),
    "0x": lambda raw: "0x" + raw.hex(),
    "base64": lambda raw: base64.b64encode(raw).decode(),
    "base64-unpadded": lambda raw: base64.b64encode(raw).decode().rstrip("="),
    "url": lambda raw: base64.urlsafe_b64encode(raw).decode(),
    "url-unpadded": lambda raw: base64.urlsafe_b64encode(raw).decode().rstrip("="),
}


@settings(max_examples=examples(600), deadline=None)
@given(raw=st.one_of(st.binary(min_size=8, max_size=8), st.binary(min_size=16, max_size=16),
                     _hex_looking(8), _hex_looking(16), st.integers(0, 300).map(lambda k: k.to_bytes(8, "big")),
                     st.integers(0, 300).map(lambda k: k.to_bytes(16, "big"))),
       form=st.sampled_from(sorted(_ID_FORMS)))
# the audit's: a random span id whose base64 is hex digits alone, and a sequential one
@example(raw=bytes.fromhex("ec3eb7e40e8405ad"), form="base64")  # 7D635A6EBa0=
@example(raw=(1).to_bytes(8, "big"), form="base64")  # AAAAAAAAAAE=
@example(raw=(1).to_bytes(8, "big"), form="base64-unpadded")
@example(raw=bytes(8), form="base64")  # AAAAAAAAAAA=: all zeros
@example(raw=bytes(16), form="url-unpadded")
def test_every_id_in_every_encoding_reads_as_its_hex(raw, form):
    """A trace id (16 bytes) or span id (8) in hex (any case, 0x) or base64 (padded or not, standard or
    URL-safe) reads as its hex; an all-zero one is no parent where the id is optional, and an error
    saying so where it is required; the same text cut or lengthened by a character is refused."""
    from rankgate.traces.build import Check
    from rankgate.traces.formats.otlp import _hex_id

    text = _ID_FORMS[form](raw)
    length, field = 2 * len(raw), "spanId" if len(raw) == 8 else "traceId"
    chk = Check("t.otlp.jsonl", 3)
    if any(raw):
        assert _hex_id(chk, text, field, length, required=True) == raw.hex()
        assert _hex_id(chk, text, "parentSpanId", length, required=False) == raw.hex()
    else:
        assert _hex_id(chk, text, "parentSpanId", length, required=False) is None
        with pytest.raises(InputError, match=rf"t.otlp.jsonl:3: field '{field}' is all zeros \('{text}'\): "
                                             "OpenTelemetry's invalid "):
            _hex_id(chk, text, field, length, required=True)
    for other in (text[:-1], text + "A"):
        if len(other) in {length, length + 2, len(base64.b64encode(raw)), len(base64.b64encode(raw).rstrip(b"="))}:
            continue  # a base64 id without its "=", or lengthened to the padded length: the cases above
        with pytest.raises(InputError, match=rf"field '{field}' must be {length} hex digits or the base64 of "
                                             rf"{len(raw)} bytes \(.*; got '.*' \({len(other)} characters\)"):
            _hex_id(chk, other, field, length, required=True)


@pytest.mark.parametrize("text, field, want", [
    ("0" * 32, "traceId", "is all zeros ('00000000000000000000000000000000')"),
    ("A" * 22 + "==", "traceId", "is all zeros ('AAAAAAAAAAAAAAAAAAAAAA==')"),
    ("A" * 11, "spanId", "is all zeros ('AAAAAAAAAAA')"),
    ("ec3eb7e40e8405a", "spanId", "(15 characters)"),
    ("z" * 16, "spanId", "(16 characters, not all hex digits)"),
    ("AAAAAAAAAAB=", "spanId", "(12 characters, not the base64 of 8 bytes)"),  # bits past the 8th byte
])
def test_a_refused_id_says_what_is_wrong_with_it(text, field, want, tmp_path, capsys):
    o = tmp_path / "o"
    o.mkdir()
    p = _write(tmp_path / "t.otlp.jsonl", otlp_line([dict(RETRIEVAL, **{field: text})]))
    assert_refused(["traces", "analyze", "--traces", p, "--out", o], o, names=[p], capsys=capsys,
                   contains=[f"t.otlp.jsonl:1: field '{field}' ", want])


def test_an_all_zero_parent_is_no_parent_in_either_encoding(tmp_path):
    want = read_traces(_write(tmp_path / "none.jsonl", otlp_line([RETRIEVAL]))).requests.num_rows
    for parent in ("0" * 16, "AAAAAAAAAAA=", "AAAAAAAAAAA"):
        got = read_traces(_write(tmp_path / "zero.jsonl", otlp_line([dict(RETRIEVAL, parentSpanId=parent)])))
        assert got.requests.num_rows == want == 1


def _write(path, line):
    path.write_text(line + "\n")
    return path


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("gen")
    truth = trace_gen.generate(out, trace_gen.Spec(days=7, per_day=12, seed=5, documents="array"))
    return out, truth


@pytest.mark.parametrize("fmt", ["parquet", "otlp", "phoenix", "langfuse", "langsmith"])
def test_every_format_reads_the_same_requests(generated, fmt):
    out, truth = generated
    base = read_traces([out / f for f in truth["files"]["jsonl"]])
    other = read_traces([out / f for f in truth["files"][fmt]])
    for name in ("requests", "items", "citations", "feedback"):
        a, b = getattr(base, name), getattr(other, name)
        if name == "requests":
            a, b = a.drop(["source_file", "source_line"]), b.drop(["source_file", "source_line"])
        assert a.equals(b), (fmt, name)


def test_generator_is_seeded_and_lists_incidents(tmp_path, generated):
    out, truth = generated
    again = trace_gen.generate(tmp_path, trace_gen.Spec(days=7, per_day=12, seed=5, documents="array"))
    for f in truth["files"]["jsonl"] + truth["files"]["otlp"]:
        assert (out / f).read_bytes() == (tmp_path / f).read_bytes()
    assert {i["name"] for i in again["incidents"]} == {"error_burst", "redaction_failure", "latency_spike",
                                                      "deprecated_leak", "index_instability", "bad_feedback_source"}
    assert again["clean_days"] == [0]
    with pytest.raises(ValueError, match="days >= 7"):
        trace_gen.logical(trace_gen.Spec(days=3))


def test_field_map_abort_and_feedback_rules_reach_the_span_readers(tmp_path):
    span = json.loads(json.dumps(RETRIEVAL))
    span["status"] = {"code": 2, "message": "UserWentAway"}
    span["events"] = [{"name": "feedback", "attributes": [kv("value", {"doubleValue": 0.6}),
                                                           kv("reason", {"stringValue": "meh"})]}]
    p = tmp_path / "t.otlp.jsonl"
    p.write_text(otlp_line([span]) + "\n")
    tt = read_traces(p)
    assert tt.requests["client_abort"].to_pylist() == [False] and tt.feedback["negative"].to_pylist() == [False]
    fm = tmp_path / "fm.yaml"
    fm.write_text("abort_error_types: [UserWentAway]\nnegative_below: 0.7\n")
    tt = read_traces(p, field_map=fm)
    assert tt.requests["client_abort"].to_pylist() == [True] and tt.feedback["negative"].to_pylist() == [True]
