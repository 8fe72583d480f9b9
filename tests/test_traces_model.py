"""The trace model: schemas, query_key, check_tables, and rankgate's trace JSONL reader."""

from __future__ import annotations

import gzip
import hashlib
import json
import unicodedata
from datetime import datetime, timezone

import pyarrow as pa
import pytest

from rankgate.errors import InputError, UsageError
from rankgate.traces import SCHEMAS, TraceTables, check_tables, normalise_query, query_key, read_traces

FULL = {
    "request_id": "r1", "timestamp": "2026-05-29T13:46:19.963Z", "query": "Refund window?", "tenant": "acme",
    "surface": "chat", "conversation_id": "c-1", "data_source": "kb-main", "top_k": 5, "trace_id": "5b8e",
    "rewritten_query": "refund period", "corpus_version": "c-42", "index_version": "ix-7", "status": "ok",
    "http_status": 200, "error_type": None, "fallback": False,
    "timings_ms": {"parse": 3.1, "retrieval": 41, "rerank": 12.5, "synthesis": 820.0, "total": 880.2},
    "soft_deadline_ms": 1500, "retry": {"attempts": 1, "reason": "timeout"},
    "privacy": {"mode": "redact", "sensitive_tokens": 4, "leaked_tokens": 1, "blocked": False, "secure_fields": 2,
                "bypassed": 0},
    "retrieved": [
        {"stage": "candidate", "rank": 1, "id": "kb/policy#3", "doc_id": "kb/policy", "doc_version": "v3",
         "score": 0.82, "status": "active", "source": "policies", "tenant": "acme"},
        {"stage": "candidate", "rank": 2, "id": "kb/old#1", "score": 0.5, "status": "deprecated"},
        {"stage": "packed", "id": "kb/policy#3"},
    ],
    "citations": [{"id": "kb/policy#3", "version": "v3"}],
    "feedback": [{"value": 0, "reason": "wrong"}, {"value": "thumbs_up"}, {"value": 1, "negative": True}],
}


def write(tmp_path, lines, name="t.jsonl"):
    p = tmp_path / name
    p.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), encoding="utf-8")
    return p


# -- query_key -------------------------------------------------------------------------------------
def test_query_key_hand_computed():
    norm = "refund window"
    want = hashlib.sha256("\x1f".join([norm, "kb", "5", "acme"]).encode()).hexdigest()
    assert query_key("  Refund\t WINDOW ?! ", "kb", 5, "acme") == want
    assert query_key(None) == hashlib.sha256(b"\x1f\x1f\x1f").hexdigest() == query_key("")
    assert query_key("a", top_k=5) != query_key("a", top_k=6) != query_key("a")


def test_normalise_query_nfkc_after_lower_and_punctuation():
    assert normalise_query("Ｒｅｆｕｎｄ　Window…") == "refund window"  # full-width letters and space, ellipsis
    assert normalise_query("what is C++?") == "what is c++"  # '+' is a symbol, not punctuation
    assert normalise_query("¿qué?") == "¿qué"  # leading punctuation stays
    assert normalise_query("ﬁle") == unicodedata.normalize("NFKC", "ﬁle") == "file"


# -- check_tables ----------------------------------------------------------------------------------
def test_check_tables_refuses_wrong_schema_and_nulls():
    empty = {n: s.empty_table() for n, s in SCHEMAS.items()}
    check_tables(TraceTables(**empty))
    bad = dict(empty, items=pa.table({"request_id": pa.array([], pa.string())}))
    with pytest.raises(ValueError, match="items: schema"):
        check_tables(TraceTables(**bad))


def test_check_tables_refuses_orphan_items(tmp_path):
    tt = read_traces(write(tmp_path, [FULL]))
    orphan = tt.items.set_column(0, tt.items.schema.field(0), pa.array(["zz"] * tt.items.num_rows, pa.string()))
    with pytest.raises(ValueError, match="not in requests"):
        check_tables(TraceTables(tt.requests, orphan, tt.citations, tt.feedback))


# -- the JSONL reader ------------------------------------------------------------------------------
def test_full_request(tmp_path):
    tt = read_traces(write(tmp_path, [FULL]))
    (r,) = tt.requests.to_pylist()
    assert r["ts"] == datetime(2026, 5, 29, 13, 46, 19, 963000, tzinfo=timezone.utc)
    assert r["query_key"] == query_key("Refund window?", "kb-main", 5, "acme")
    assert (r["parse_ms"], r["retrieval_ms"], r["total_ms"], r["soft_deadline_ms"]) == (3.1, 41.0, 880.2, 1500.0)
    assert (r["retry_attempts"], r["retry_reason"], r["privacy_mode"], r["leaked_tokens"]) == (1, "timeout", "redact", 1)
    assert r["client_abort"] is False and r["fallback"] is False and r["source_line"] == 1
    assert r["conversation_id"] == "c-1" and "session" not in r
    items = tt.items.to_pylist()
    assert [(i["stage"], i["rank"], i["item_id"], i["status"]) for i in items] == [
        ("candidate", 1, "kb/policy#3", "active"), ("candidate", 2, "kb/old#1", "deprecated"),
        ("packed", 1, "kb/policy#3", None)]
    assert tt.citations.to_pylist() == [{"request_id": "r1", "item_id": "kb/policy#3", "doc_id": None, "version": "v3"}]
    assert [(f["value"], f["negative"]) for f in tt.feedback.to_pylist()] == [(0.0, True), (1.0, False), (1.0, True)]
    check_tables(tt)


@pytest.mark.parametrize("fast", [False, True])
def test_session_is_read_as_conversation_id(tmp_path, monkeypatch, fast):
    """conversation_id's old name still reads, on the row reader and the columnar path (JSONL and Parquet)."""
    import pyarrow.parquet as pq

    import rankgate.traces.formats.jsonl as tj

    monkeypatch.setattr(tj, "MIN_BYTES", 0)
    old = {k: v for k, v in FULL.items() if k not in ("conversation_id", "feedback")}
    lines = [dict(old, session="s-7", conversation_id=None), dict(old, request_id="r2", session="", conversation_id="c-1"),
             dict(old, request_id="r3", session=None, conversation_id=None)]  # (a null or empty one is not given)
    p = write(tmp_path, lines)
    pq.write_table(pa.Table.from_pylist(lines), tmp_path / "t.parquet")
    for path in (p, tmp_path / "t.parquet"):
        got = read_traces(path, fast=fast).requests["conversation_id"].to_pylist()
        assert got == ["s-7", "c-1", None]


@pytest.mark.parametrize("fast", [False, True])
def test_conversation_id_and_session_together_are_refused(tmp_path, monkeypatch, fast):
    import rankgate.traces.formats.jsonl as tj

    monkeypatch.setattr(tj, "MIN_BYTES", 0)
    p = write(tmp_path, [FULL, dict(FULL, request_id="r2", session="s-1")])
    with pytest.raises(InputError) as e:
        read_traces(p, fast=fast)
    assert str(e.value).startswith(f"{p}:2:") and "session" in str(e.value) and "conversation_id" in str(e.value)


def test_minimal_request_and_optional_fields_null(tmp_path):
    tt = read_traces(write(tmp_path, [{"request_id": 7, "timestamp": "2026-05-29 13:46:19"}]))
    (r,) = tt.requests.to_pylist()
    assert r["request_id"] == "7" and r["query_text"] is None and r["client_abort"] is None
    assert r["query_key"] == query_key(None)
    assert tt.items.num_rows == tt.citations.num_rows == tt.feedback.num_rows == 0


def test_offsets_and_nanoseconds(tmp_path):
    tt = read_traces(write(tmp_path, [{"request_id": "a", "timestamp": "2026-01-01T01:00:00.123456789+01:30"}]))
    assert tt.requests["ts"][0].as_py() == datetime(2025, 12, 31, 23, 30, 0, 123456, tzinfo=timezone.utc)


def test_abort_derived_from_499_and_error_type(tmp_path):
    lines = [{"request_id": "a", "timestamp": "2026-01-01T00:00:00Z", "http_status": 499},
             {"request_id": "b", "timestamp": "2026-01-01T00:00:00Z", "http_status": 500, "error_type": "Timeout"},
             {"request_id": "c", "timestamp": "2026-01-01T00:00:00Z", "error_type": "client_disconnected"}]
    assert read_traces(write(tmp_path, lines)).requests["client_abort"].to_pylist() == [True, False, True]


def test_gzip_bom_and_blank_lines(tmp_path):
    body = "\ufeff" + json.dumps(FULL) + "\n\n" + json.dumps(dict(FULL, request_id="r2")) + "\n"
    p = tmp_path / "t.jsonl.gz"
    p.write_bytes(gzip.compress(body.encode()))
    tt = read_traces(str(p))
    assert tt.requests["source_line"].to_pylist() == [1, 3]
    assert tt.formats == ("jsonl",)


@pytest.mark.parametrize("line, where", [
    ({"timestamp": "2026-01-01T00:00:00Z"}, "field 'request_id' is missing"),
    ({"request_id": "a"}, "field 'timestamp' is missing"),
    ({"request_id": "a", "timestamp": "yesterday"}, "field 'timestamp' is not an ISO 8601"),
    ({"request_id": "a", "timestamp": "2026-02-30T00:00:00Z"}, "is not a valid date-time"),
    ({"request_id": "a", "timestamp": "2026-01-01T00:00:00Z", "top_k": "5"}, "field 'top_k' must be an integer"),
    ({"request_id": "a", "timestamp": "2026-01-01T00:00:00Z", "retrieved": [{"id": "x"}]},
     "field 'retrieved[0].stage' is missing"),
    ({"request_id": "a", "timestamp": "2026-01-01T00:00:00Z", "retrieved": [{"stage": "packed", "id": "x",
                                                                              "score": "high"}]},
     "field 'retrieved[0].score' must be a number"),
    ({"request_id": "a", "timestamp": "2026-01-01T00:00:00Z", "retrieved": [{"stage": "packed", "id": "x",
                                                                              "status": "old"}]},
     "field 'retrieved[0].status' must be one of"),
    ({"request_id": "a", "timestamp": "2026-01-01T00:00:00Z", "feedback": [{"value": "meh"}]},
     "field 'feedback[0].value' is not a known feedback label"),
    ({"request_id": "a", "timestamp": "2026-01-01T00:00:00Z", "timings_ms": {"total": -1}},
     "field 'timings_ms.total' must not be negative"),
    ('{"request_id": "a", "timestamp": "2026-01-01T00:00:00Z", "query": "\\ud800"}', "unpaired surrogate"),
    ('{"request_id": "a", "timestamp": "2026-01-01T00:00:00Z", "timings_ms": {"total": NaN}}', "finite"),
    ("{not json", "is not valid JSON"),
    ("[1, 2]", "must be a JSON object"),
])
def test_bad_line_names_file_line_and_field(tmp_path, line, where):
    p = write(tmp_path, [dict(FULL), line])
    with pytest.raises(InputError) as e:
        read_traces(p)
    assert str(e.value).startswith(f"{p}:2: ") and where in str(e.value)


def test_skip_mode_counts_and_lists(tmp_path):
    good = [dict(FULL, request_id=f"r{i}") for i in range(3)]
    bad = ["{not json", {"request_id": "x"}, {"request_id": "y"}] + [{"timestamp": "2026-01-01T00:00:00Z"}] * 25
    p = write(tmp_path, good + bad + [dict(FULL, request_id="r0")])  # last: a duplicate id
    tt = read_traces(p, on_error="skip")
    assert tt.requests["request_id"].to_pylist() == ["r0", "r1", "r2"]
    assert tt.skipped.total == 29
    assert tt.skipped.counts == {"is not valid JSON: Expecting property name enclosed in double quotes": 1,
                                 "field 'timestamp' is missing": 2, "field 'request_id' is missing": 25,
                                 "field 'request_id' request_id 'r0' is already used at " + f"{p}:1": 1}
    assert len(tt.skipped.first) == 20 and tt.skipped.first[0][:2] == (str(p), 4)
    assert tt.skipped.as_dict()["total"] == 29
    with pytest.raises(InputError, match=r":4: is not valid JSON"):
        read_traces(p)


def test_duplicate_across_files_names_both(tmp_path):
    a = write(tmp_path, [FULL], "a.jsonl")
    b = write(tmp_path, [{"request_id": "x", "timestamp": "2026-01-01T00:00:00Z"}, FULL], "b.jsonl")
    with pytest.raises(InputError) as e:
        read_traces([a, b])
    assert str(e.value).startswith(f"{b}:2: ") and f"already used at {a}:1" in str(e.value)


def test_folder_and_unknown_format(tmp_path):
    (tmp_path / "d").mkdir()
    write(tmp_path / "d", [FULL], "x.jsonl")
    assert read_traces(tmp_path / "d").requests.num_rows == 1
    with pytest.raises(UsageError, match="unknown trace format"):
        read_traces(tmp_path / "d", format="csv")
    p = write(tmp_path, [{"hello": 1}], "odd.jsonl")
    with pytest.raises(InputError, match="not a trace export rankgate recognises"):
        read_traces(p)
    with pytest.raises(UsageError, match="on_error"):
        read_traces(p, format="jsonl", on_error="ignore")


def test_incident_trace_is_checked_by_the_trace_reader(tmp_path):
    """incident new --trace reads one trace line through the JSONL reader: fields only the trace model
    knows (timings, HTTP status, privacy) are checked too; a trace without a timestamp is still fine."""
    from rankgate.goldset.incident import read_trace

    one = dict(FULL)
    one.pop("timestamp")
    p = tmp_path / "trace.json"
    p.write_text(json.dumps(one, indent=2))
    assert read_trace(str(p)).request_id == "r1"
    p.write_text(json.dumps(dict(FULL, http_status=700)))
    with pytest.raises(InputError, match=r"trace.json: field 'http_status' must be between 100 and 599"):
        read_trace(str(p))


def test_status_synonyms_and_date_only_timestamps(tmp_path):
    line = dict(FULL, timestamp="2026-05-29", retrieved=[{"stage": "packed", "id": "a", "status": "Current"}])
    tt = read_traces(write(tmp_path, [line]))
    assert tt.items["status"].to_pylist() == ["active"]
    assert tt.requests["ts"][0].as_py() == datetime(2026, 5, 29, tzinfo=timezone.utc)


def test_feedback_numbers_written_as_text(tmp_path):
    line = dict(FULL, feedback=[{"value": "0"}, {"value": "4.5"}, {"value": "-1"}])
    tt = read_traces(write(tmp_path, [line]))
    assert [(f["value"], f["negative"]) for f in tt.feedback.to_pylist()] == [(0.0, True), (4.5, False), (-1.0, True)]
