"""Trace files written by the real producer libraries (tests/data/producers, made by make_otel_traces.py
with the versions in README.md): LangChain and LlamaIndex instrumented with OpenInference, exported as
OTLP/JSON and as binary OTLP. The expected values beside them were computed from the exported spans."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from rankgate.cli import main
from rankgate.data.shapes import text_id
from rankgate.traces import read_traces

from .hostile import assert_refused

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
@pytest.mark.parametrize("binary", ["pb", "bin"])
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


@pytest.mark.parametrize("fmt", [[], ["--format", "otlp"]], ids=["detected", "forced"])
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
