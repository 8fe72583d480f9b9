"""Trace files written by the real producer libraries (tests/data/producers, made by make_otel_traces.py
with the versions in README.md): LangChain and LlamaIndex instrumented with OpenInference, exported as
OTLP/JSON and as binary OTLP. The expected values beside them were computed from the exported spans."""

from __future__ import annotations

import base64
import itertools
import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from rankgate.cli.main import main
from rankgate.io.shapes import text_id
from rankgate.traces import read_traces

from .hostile import assert_refused
from .conftest import sampled

DATA = Path(__file__).resolve().parent / "data" / "producers"


def expected(name):
    return json.loads((DATA / f"{name}.expected.json").read_text())["traces"]


def analyze(tmp_path, path, name="out"):
    out = tmp_path / name
    assert main(["traces", "analyze", "--traces", str(path), "--out", str(out)]) == 0
    return json.loads((out / "summary.json").read_text())


def by_trace(tt):
    items = {}
    for it in tt.items.to_pylist():
        items.setdefault(it["request_id"], []).append(it["item_id"])
    return {r["trace_id"]: (r, items.get(r["request_id"], [])) for r in tt.requests.to_pylist()}


@pytest.mark.parametrize("name", ["langchain", "llamaindex"])
def test_openinference_otlp_json_matches_the_spans(name):
    tt = read_traces(DATA / f"{name}.otlp.json")
    got = by_trace(tt)
    want = expected(name)
    assert sorted(got) == sorted(t["trace_id"] for t in want)
    for t in want:
        r, ids = got[t["trace_id"]]
        assert r["total_ms"] == pytest.approx(t["total_ms"], abs=0.002)  # ns -> µs, start and end truncated
        assert r["status"] == t["status"]
        assert ids == [d["id"] or text_id(d["text"]) for d in t["documents"]]
    derived = sum(1 for t in want for d in t["documents"] if d["id"] is None)
    assert tt.reading == ({"derived_item_ids": derived} if derived else {})


def test_langchain_traces_analyse_end_to_end(tmp_path, capsys):
    want = expected("langchain")
    summary = analyze(tmp_path, DATA / "langchain.otlp.json")
    n_docs = sum(len(t["documents"]) for t in want)
    assert (summary["requests"], summary["items"], summary["derived_item_ids"]) == (len(want), n_docs, n_docs)
    errors = sum(t["status"] == "error" for t in want)
    assert errors == 1 and summary["operational"]["error_rate_per_1k"]["value"] == 1000 * errors / len(want)
    assert summary["operational"]["latency_ms"]["total"]["n"] == len(want)  # requests without documents count
    out = capsys.readouterr().out
    assert out.count(f"{n_docs} documents had no id; ids derived from text") == 1


@pytest.mark.parametrize("name", ["langchain", "llamaindex"])
@pytest.mark.parametrize("binary", sampled(["pb", "bin"], every=2))
def test_binary_otlp_gives_the_summary_of_its_json_twin(name, binary, tmp_path):
    pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
    twin = tmp_path / "twin.json"  # a name that says nothing: the content decides
    shutil.copy(DATA / f"{name}.otlp.{binary}", twin)
    a = read_traces(DATA / f"{name}.otlp.json")
    b = read_traces(twin)
    assert b.formats == ("otlp",)
    for table in ("requests", "items", "citations", "feedback"):
        x, y = getattr(a, table), getattr(b, table)
        if table == "requests":
            x, y = x.drop(["source_file", "source_line"]), y.drop(["source_file", "source_line"])
        assert sorted(map(str, x.to_pylist())) == sorted(map(str, y.to_pylist())), table
    assert analyze(tmp_path, DATA / f"{name}.otlp.json", "a") == analyze(tmp_path, twin, "b")


def test_binary_otlp_without_the_parser_names_the_extra(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "opentelemetry.proto.collector.trace.v1.trace_service_pb2", None)
    o = tmp_path / "o"
    o.mkdir()
    assert_refused(["traces", "analyze", "--traces", DATA / "langchain.otlp.pb", "--out", o], o,
                   names=["langchain.otlp.pb"], capsys=capsys, contains=["pip install 'rankgate[otlp]'"])


def _framed(tmp_path, name, prefix_of_first, cut=0):
    body = (DATA / "langchain.otlp.pb").read_bytes()
    p = tmp_path / name
    p.write_bytes(prefix_of_first(len(body)).to_bytes(4, "big") + body[:len(body) - cut])
    return p


@pytest.mark.parametrize("case, prefix, cut, contains", [
    ("huge", lambda n: 2**31 + 5, 0, "message 1 declares 2,147,483,653 bytes, over the cap of 64 MiB"),
    ("beyond", lambda n: n + 100, 0, "bytes but only"),
    ("cut", lambda n: n, 7, "bytes but only"),
    ("short", lambda n: n - 10, 0, "message 1 runs past its length: the length at byte 0 says 8,233 bytes"),
    ("tiny", lambda n: 5, 0, "message 1 runs past its length: the length at byte 0 says 5 bytes"),
])
def test_a_length_prefix_beyond_the_file_or_the_cap_is_an_error_not_an_allocation(case, prefix, cut, contains,
                                                                                    tmp_path, capsys):
    p = _framed(tmp_path, f"{case}.bin", prefix, cut)
    o = tmp_path / "o"
    o.mkdir()
    assert_refused(["traces", "analyze", "--traces", p, "--out", o], o, names=[p], capsys=capsys,
                   contains=[contains, f"{p.name}:1"])


def test_a_damaged_message_is_refused_and_skipped_by_count(tmp_path, capsys):
    pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
    good = (DATA / "langchain.otlp.bin").read_bytes()
    junk = b"\x0a\x05\x12\x03\xff\xff\xff"  # a resource_spans header, then a scope_spans field cut short
    p = tmp_path / "damaged.bin"
    p.write_bytes(good + len(junk).to_bytes(4, "big") + junk)
    o = tmp_path / "o"
    o.mkdir()
    assert_refused(["traces", "analyze", "--traces", p, "--out", o], o, names=[p], capsys=capsys,
                   contains=["is not a valid OTLP protobuf"])
    out = tmp_path / "skip"
    assert main(["traces", "analyze", "--traces", str(p), "--out", str(out), "--on-error", "skip"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["requests"] == len(expected("langchain")) and summary["skipped"]["total"] == 1


@pytest.mark.parametrize("fmt", [[], ["--traces-format", "otlp"]], ids=["detected", "forced"])
def test_a_single_request_cut_short_says_so_not_that_it_is_not_utf8(fmt, tmp_path, capsys):
    body = (DATA / "langchain.otlp.pb").read_bytes()
    p = tmp_path / "cut.pb"
    p.write_bytes(body[:200])
    o = tmp_path / "o"
    o.mkdir()
    assert_refused(["traces", "analyze", "--traces", p, *fmt, "--out", o], o, names=[p], capsys=capsys,
                   contains=[f"of {len(body):,} bytes, but the file holds 200", "cut short"])


def test_json_that_starts_with_blank_lines_is_not_taken_for_protobuf(tmp_path):
    p = tmp_path / "blank.json"
    p.write_text("\n\n\n" + (DATA / "langchain.otlp.json").read_text())
    assert read_traces(p).requests.num_rows == len(expected("langchain"))


# ------------------------------------------------------------------------------------ ids in base64

def _spans(doc):
    return [sp for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for sp in ss["spans"]]


def _numbering(ids):
    """Each id -> a sequential one of its size (1, 2, 3…, as test harnesses and some exporters number
    spans), by the ids' order, so that the JSON and binary twins are numbered alike."""
    return {raw: (k + 1).to_bytes(len(raw), "big") for k, raw in enumerate(sorted(set(ids)))}


_ENCODINGS = (  # how the renumbered JSON export writes its ids, one after another
    lambda raw: base64.b64encode(raw).decode(),
    lambda raw: base64.b64encode(raw).decode().rstrip("="),
    lambda raw: base64.urlsafe_b64encode(raw).decode().rstrip("="),
    lambda raw: raw.hex().upper(),
)


def _renumbered_json(encodings):
    doc = json.loads((DATA / "langchain.otlp.json").read_text())
    keys = ("traceId", "spanId", "parentSpanId")
    new = _numbering(base64.b64decode(sp[k]) for sp in _spans(doc) for k in keys if sp.get(k))
    forms = itertools.cycle(encodings)
    for sp in _spans(doc):
        for k in keys:
            if sp.get(k):
                sp[k] = next(forms)(new[base64.b64decode(sp[k])])
    return doc


def _renumbered_pb(edit=None):
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    msg = ExportTraceServiceRequest()
    msg.ParseFromString((DATA / "langchain.otlp.pb").read_bytes())
    spans = [sp for rs in msg.resource_spans for ss in rs.scope_spans for sp in ss.spans]
    new = _numbering(raw for sp in spans for raw in (sp.trace_id, sp.span_id, sp.parent_span_id) if raw)
    for sp in spans:
        sp.trace_id, sp.span_id = new[sp.trace_id], new[sp.span_id]
        if sp.parent_span_id:
            sp.parent_span_id = new[sp.parent_span_id]
    if edit is not None:
        edit(spans)
    return msg.SerializeToString()


def test_a_whole_export_with_sequential_base64_ids_reads_as_its_hex_twin(tmp_path):
    """The ids of a real export renumbered 1, 2, 3…: base64 ids such as AAAAAAAAAAE= hold hex digits
    alone, and each id is written in another encoding than the ids that point to it. `traces analyze`
    gives the summary of the same export with hex ids."""
    hexed, mixed = tmp_path / "hex.json", tmp_path / "b64.json"
    hexed.write_text(json.dumps(_renumbered_json([bytes.hex])))
    mixed.write_text(json.dumps(_renumbered_json(_ENCODINGS)))
    written = [sp["spanId"] for sp in _spans(json.loads(mixed.read_text()))]
    assert any(len(t) in (11, 12) and re.fullmatch(r"[0-9a-fA-F]+=?", t) for t in written)  # the ids once refused
    summary = analyze(tmp_path, mixed, "b64")
    assert summary == analyze(tmp_path, hexed, "hex") and summary["requests"] == len(expected("langchain"))
    a, b = read_traces(hexed).requests.drop(["source_file"]), read_traces(mixed).requests.drop(["source_file"])
    assert a.to_pylist() == b.to_pylist()


def test_binary_otlp_with_sequential_ids_reads_as_its_json_twin(tmp_path):
    pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
    pb, hexed = tmp_path / "seq.pb", tmp_path / "seq.json"
    pb.write_bytes(_renumbered_pb())
    hexed.write_text(json.dumps(_renumbered_json([bytes.hex])))
    assert analyze(tmp_path, pb, "pb") == analyze(tmp_path, hexed, "json")


def _first_root(spans):
    return next(sp for sp in spans if not sp.parent_span_id)


@pytest.mark.parametrize("edit, contains", [
    (lambda spans: setattr(spans[0], "span_id", b"\x01" * 7), "field 'spanId' is 7 bytes; a span id is 8 bytes"),
    (lambda spans: setattr(spans[0], "trace_id", b"\x01" * 17), "field 'traceId' is 17 bytes; a trace id is 16 bytes"),
    (lambda spans: setattr(spans[0], "trace_id", bytes(16)), f"field 'traceId' is all zeros ('{'0' * 32}')"),
    (lambda spans: setattr(spans[0], "span_id", bytes(8)), f"field 'spanId' is all zeros ('{'0' * 16}')"),
])
def test_binary_ids_of_the_wrong_size_or_all_zeros_are_named_in_bytes(edit, contains, tmp_path, capsys):
    pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
    p = tmp_path / "bad.pb"
    p.write_bytes(_renumbered_pb(edit))
    o = tmp_path / "o"
    o.mkdir()
    assert_refused(["traces", "analyze", "--traces", p, "--out", o], o, names=[p], capsys=capsys,
                   contains=[f"{p.name}:1: {contains}"])


def test_an_all_zero_binary_parent_is_no_parent(tmp_path):
    pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
    zero, plain = tmp_path / "zero.pb", tmp_path / "plain.pb"
    zero.write_bytes(_renumbered_pb(lambda spans: setattr(_first_root(spans), "parent_span_id", bytes(8))))
    plain.write_bytes(_renumbered_pb())
    assert analyze(tmp_path, zero, "zero") == analyze(tmp_path, plain, "plain")


# ------------------------------------------------------------------------------------ framing, zstd

def _messages(data):
    """The number of length-prefixed messages in ``data``."""
    n = pos = 0
    while pos < len(data):
        pos += 4 + int.from_bytes(data[pos:pos + 4], "big")
        n += 1
    return n


def test_a_later_message_whose_length_is_too_short_is_named_with_its_offset(tmp_path, capsys):
    good = (DATA / "langchain.otlp.bin").read_bytes()
    body = (DATA / "langchain.otlp.pb").read_bytes()
    p = tmp_path / "short.bin"
    p.write_bytes(good + (len(body) - 3).to_bytes(4, "big") + body)
    n = _messages(good) + 1
    o = tmp_path / "o"
    o.mkdir()
    assert_refused(["traces", "analyze", "--traces", p, "--out", o], o, names=[p], capsys=capsys,
                   contains=[f"{p.name}:{n}: message {n} runs past its length: the length at byte {len(good):,} says "
                             f"{len(body) - 3:,} bytes", "the length is too short"])
    out = tmp_path / "skip"  # the framing is lost: one counted skip, and the file ends there
    assert main(["traces", "analyze", "--traces", str(p), "--out", str(out), "--on-error", "skip"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["requests"] == len(expected("langchain")) and summary["skipped"]["total"] == 1


def test_a_length_that_ends_between_two_resource_spans_is_suspected_by_the_next_one(tmp_path, capsys):
    """The first message's length covers only its first resource_spans: the message parses, and the
    next "length" is the next resource_spans field's first bytes."""
    body = (DATA / "langchain.otlp.pb").read_bytes()
    p = tmp_path / "short.bin"
    p.write_bytes(len(body).to_bytes(4, "big") + body + body)  # one message of two requests' resource_spans
    o = tmp_path / "o"
    o.mkdir()
    assert_refused(["traces", "analyze", "--traces", p, "--out", o], o, names=[p], capsys=capsys,
                   contains=["message 2 declares", f"the bytes at {4 + len(body):,} open a resource_spans field",
                             "message 1: its length is likely too short"])


_ZSTD_FRAME = bytes.fromhex("28b52ffd0458b100007b227265736f757263655370616e73223a205b5d7d0a2eb5a7ab")  # zstd of a line


@pytest.mark.parametrize("fmt", [[], ["--traces-format", "otlp"]], ids=["detected", "forced"])
@pytest.mark.parametrize("layout, contains", [
    ("zstd", ["is zstd-compressed; rankgate reads plain and gzip-compressed files", "zstd -d"]),
    ("collector", ["holds zstd-compressed messages, each after a 4-byte length", "compression off"]),
])
def test_zstd_traces_are_named_as_such_not_as_bytes_that_are_not_utf8(layout, contains, fmt, tmp_path, capsys):
    """A file compressed whole (zstd, or the collector's newer compression stream), or the collector file
    exporter's compression: zstd, which compresses each message after its length."""
    p = tmp_path / "traces.otlp"
    framed = len(_ZSTD_FRAME).to_bytes(4, "big") + _ZSTD_FRAME
    p.write_bytes(_ZSTD_FRAME if layout == "zstd" else framed * 2)
    o = tmp_path / "o"
    o.mkdir()
    line = assert_refused(["traces", "analyze", "--traces", p, *fmt, "--out", o], o, names=[p], capsys=capsys,
                          contains=contains)
    assert "UTF-8" not in line
