"""The trace side of conversations (issue 37): ``conversation_id`` (formerly ``session``) and ``turn`` on trace
requests, the old name still read with a notice, and both carried into what the sampling and judging write."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

import rankgate.traces.model as tm
from rankgate.cli.main import main
from rankgate.errors import ConfigError, InputError, UsageError
from rankgate.io import load_gold
from rankgate.traces import read_traces
from rankgate.traces.fieldmap import field_map_of, load_field_map
from rankgate.traces.monitors import parse_monitors
from rankgate.traces.sample import sample_candidates
from rankgate.traces.signals import summarize_traces

T = "2026-05-01T10:00:0{}Z"


def req(i, *, conversation="A", turn=None, key="conversation_id", fallback=True):
    r = {"request_id": f"r{i}", "timestamp": T.format(i % 10), "query": f"question {i}", "tenant": "acme",
         "fallback": fallback,
         "retrieved": [{"stage": "candidate", "rank": 1, "id": f"c{i}", "score": 0.4, "source": "kb"},
                       {"stage": "packed", "rank": 1, "id": f"c{i}", "source": "kb"}]}
    if conversation is not None:
        r[key] = conversation
    if turn is not None:
        r["turn"] = turn
    return r


def write(path, recs):
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def _fresh_notices(monkeypatch):
    monkeypatch.setattr(tm, "_NOTICED", set())  # (each notice is said once per process: once per test here)


# -- reading -----------------------------------------------------------------------------------------------------

def test_turn_is_read_and_checked(tmp_path):
    tt = read_traces(write(tmp_path / "t.jsonl", [req(0, turn=1), req(1, turn=2), req(2, conversation=None)]))
    assert tt.requests["conversation_id"].to_pylist() == ["A", "A", None]
    assert tt.requests["turn"].to_pylist() == [1, 2, None]
    with pytest.raises(InputError, match="turn") as e:
        read_traces(write(tmp_path / "bad.jsonl", [req(0, turn=1), req(1, turn=0)]))
    assert f"{tmp_path / 'bad.jsonl'}:2:" in str(e.value)


def test_span_readers_map_the_conversation_attributes(tmp_path):
    def span(attrs):
        return {"resourceSpans": [{"scopeSpans": [{"spans": [{
            "traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331", "name": "retrieve",
            "startTimeUnixNano": "1760000000000000000", "endTimeUnixNano": "1760000000020000000",
            "attributes": [{"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}}
                           for k, v in {"gen_ai.operation.name": "retrieval", **attrs}.items()]}]}]}]}

    for attrs, want in (({"gen_ai.conversation.id": "conv-9", "rankgate.turn": 3}, ("conv-9", 3)),
                        ({"rankgate.session": "old-1"}, ("old-1", None))):
        p = tmp_path / "t.otlp.json"
        p.write_text(json.dumps(span(attrs)) + "\n", encoding="utf-8")
        (r,) = read_traces(p, format="otlp").requests.to_pylist()
        assert (r["conversation_id"], r["turn"]) == want


def test_field_maps_take_session_as_the_old_name(tmp_path):
    assert field_map_of(["session=metadata.thread"]) == {"request": {"conversation_id": "metadata.thread"}}
    assert load_field_map({"request": {"session": "metadata.thread"}})["request"] == {
        "conversation_id": "metadata.thread"}
    with pytest.raises(ConfigError, match="both conversation_id and session"):
        load_field_map({"request": {"session": "a", "conversation_id": "b"}})
    with pytest.raises(UsageError, match="given twice"):
        field_map_of(["session=a", "conversation_id=b"])


# -- the old name in segments, with a notice -----------------------------------------------------------------------

def test_by_session_still_segments_and_says_the_new_name(tmp_path, capsys):
    tt = read_traces(write(tmp_path / "t.jsonl", [req(0), req(1, conversation="B")]))
    summary = summarize_traces(tt, by=("session",), signals="fallback")
    assert {v.segment for v in summary.values} >= {"conversation_id=A", "conversation_id=B"}
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'session'" in err and "'conversation_id'" in err
    summarize_traces(tt, by=("session",), signals="fallback")
    assert capsys.readouterr().err == ""  # (once)


def test_the_command_line_by_session_writes_conversation_id(tmp_path, capsys):
    traces = write(tmp_path / "t.jsonl", [req(i, conversation="AB"[i % 2]) for i in range(6)])
    assert main(["traces", "analyze", "--traces", str(traces), "--by", "session", "--signals", "fallback",
                 "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert "the field 'session' (segments) is now called 'conversation_id'" in err
    summary = (tmp_path / "out" / "summary.json").read_text(encoding="utf-8")
    assert "conversation_id=A" in summary and "session" not in summary


def test_monitor_segments_session_reads_as_conversation_id(capsys):
    cfg = parse_monitors("monitors:\n  - signal: fallback_rate\n    max: 0.5\n    segments: [session]\n", path="m.yaml")
    assert cfg.monitors[0].segments == ("conversation_id",)
    assert "'session' (monitor segments) is now called 'conversation_id'" in capsys.readouterr().err


# -- carried into what sampling and judging write ------------------------------------------------------------------

def test_gold_candidates_keep_their_conversations(tmp_path):
    tt = read_traces(write(tmp_path / "t.jsonl", [req(0, turn=1), req(1, turn=2), req(2, conversation=None)]))
    recs = {r["request_id"]: r for r in sample_candidates(tt, n=10)}
    assert (recs["r0"]["conversation_id"], recs["r0"]["turn"]) == ("A", 1)
    assert (recs["r1"]["conversation_id"], recs["r1"]["turn"]) == ("A", 2)
    assert "conversation_id" not in recs["r2"] and "turn" not in recs["r2"]
    for r in recs.values():  # the labeller's work, then the gold set keeps the conversation
        for c in r["relevant_chunks"]:
            c["grade"] = 1
    gold = load_gold(str(write(tmp_path / "gold.jsonl", [recs["r0"], recs["r1"]])))
    assert list(gold.fields["conversation_id"]) == ["A", "A"] and list(gold.fields["turn"]) == [1, 2]


def test_judge_queues_carry_the_conversation(tmp_path):
    from rankgate.render.traces_judge import answers_queue_jsonl, judged_jsonl, relevance_queue_jsonl
    from rankgate.traces.engines import DuckDBBackend
    from rankgate.traces.judge import sample_requests

    tt = read_traces(write(tmp_path / "t.jsonl", [req(0, turn=1), req(1, conversation=None)]))
    backend = DuckDBBackend()
    try:
        assert sample_requests(tt, backend, n=2, stratify=("session",), seed=0).stratify == ("conversation_id",)
        sample = sample_requests(tt, backend, n=2, stratify=("source",), seed=0)
    finally:
        backend.close()
    by_id = {r.request_id: r for r in sample.requests}
    assert (by_id["r0"].conversation_id, by_id["r0"].turn) == ("A", 1) and by_id["r1"].conversation_id is None
    texts = SimpleNamespace(contexts={r: {f"c{r[1]}": "text"} for r in by_id}, answers={"r0": "an answer", "r1": "x"})
    values = [SimpleNamespace(request_id=r, values={}, human={}, notes={}, grades=(), statements=None) for r in by_id]
    result = SimpleNamespace(sample=sample, texts=texts, values=values)
    for render in (relevance_queue_jsonl, answers_queue_jsonl, judged_jsonl):
        lines = {x["request_id"]: x for x in map(json.loads, render(result).splitlines())}
        assert (lines["r0"]["conversation_id"], lines["r0"]["turn"]) == ("A", 1), render.__name__
        assert "conversation_id" not in lines["r1"] and "turn" not in lines["r1"], render.__name__


def test_recalibration_items_carry_the_conversation(tmp_path):
    from rankgate.traces.recalibrate import recent_units

    tt = read_traces(write(tmp_path / "t.jsonl", [req(0, turn=2), req(1, conversation=None)]))
    corpus = SimpleNamespace(positions=lambda ids: __import__("numpy").arange(len(ids)),
                             text_at=lambda pos: f"text {pos}")
    records, _, _ = recent_units(tt, corpus, days=30, depth=1, stratify=("session",))
    by_id = {r["request_id"]: r for r in records}
    assert (by_id["r0"]["conversation_id"], by_id["r0"]["turn"], by_id["r0"]["segment"]) == (
        "A", 2, {"conversation_id": "A"})
    assert "conversation_id" not in by_id["r1"]


# -- the report's method note --------------------------------------------------------------------------------------

@pytest.mark.parametrize("conversations", [True, False])
def test_the_report_method_says_what_the_intervals_resample(tmp_path, conversations):
    gold = [{"query_id": f"q{i}", "relevant": ["d1"], **({"conversation_id": "AB"[i % 2], "turn": 1 + i // 2}
                                                          if conversations else {})} for i in range(4)]
    run = [{"query_id": f"q{i}", "topk": ["d1" if i % 3 else "x"]} for i in range(4)]
    g, r, out = write(tmp_path / "g.jsonl", gold), write(tmp_path / "r.jsonl", run), tmp_path / "r.html"
    assert main(["report", "--gold", str(g), "--run", str(r), "-m", "hit@1", "--resamples", "100", "-o", str(out)]) == 0
    method = out.read_text(encoding="utf-8").split('id="method"', 1)[1].split("</section>", 1)[0]
    unit = "conversations" if conversations else "queries"
    assert f"percentile bootstrap over {unit}, 100 resamples" in method
    assert ("intervals resample 2 conversations (4 turns)" in method) == conversations
