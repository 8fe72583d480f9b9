"""What a traced request cost (issue 37, item 2): the optional ``cost`` object on trace requests, read from every
trace format, summarised per window and segment (mean and p95 per key) in every output of ``traces analyze``,
watched by monitors; and ``turn=first|follow_up`` as a derived trace segment."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rankgate.cli.main import main
from rankgate.errors import InputError
from rankgate.traces.read import read_traces

from .demo_runs import write_jsonl


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text(encoding="utf-8"))


def _requests(rows: list[dict]) -> list[dict]:
    return [{"request_id": f"r{i}", "timestamp": "2026-05-01T10:00:00Z", "query": f"q{i}", **row}
            for i, row in enumerate(rows)]


# usd per request, by tenant and turn; the hand-computed summaries below come from these
ROWS = [({"tenant": "a", "turn": 1}, {"usd": 0.01, "tokens_in": 100}),
        ({"tenant": "a", "turn": 2}, {"usd": 0.02, "tokens_in": 200}),
        ({"tenant": "a", "turn": 1}, {"usd": 0.03, "tokens_in": 300}),
        ({"tenant": "a", "turn": 2}, {"usd": 0.04, "tokens_in": 400, "gpu_ms": 7}),
        ({"tenant": "b", "turn": 1}, {"usd": 0.10, "tokens_in": 500}),
        ({"tenant": "b", "turn": 3}, {"usd": 0.30, "tokens_in": 600}),
        ({"tenant": "b"}, None)]  # no cost, no turn: not counted in the cost, "(none)" in the turn segment


def _cost_traces(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "t.jsonl", _requests([{**f, **({"cost": c} if c else {})} for f, c in ROWS]))


def test_cost_mean_and_p95_per_segment_by_hand(tmp_path, capsys):
    """usd of tenant a: 0.01..0.04, mean 0.025, p95 0.0385 (0.03 + 0.85 x 0.01); tenant b: 0.10, 0.30, mean 0.2,
    p95 0.29; first turns 0.01, 0.03, 0.10 (mean 0.0467, p95 0.093), follow-ups 0.02, 0.04, 0.30 (mean 0.12)."""
    out = tmp_path / "out"
    assert main(["traces", "analyze", "--traces", str(_cost_traces(tmp_path)), "--by", "tenant,turn",
                 "--out", str(out)]) == 0
    s = _summary(out)
    usd = s["operational"]["cost"]["usd"]
    assert (usd["mean"], usd["p95"], usd["n"]) == (pytest.approx(0.5 / 6), pytest.approx(0.25), 6)
    assert s["operational"]["cost"]["tokens_in"] == {"mean": 350.0, "p95": 575.0, "n": 6}
    assert set(s["operational"]["cost"]) == {"usd", "tokens_in"}  # only the keys the traces log
    seg = s["segments"]
    assert seg["tenant=a"]["cost.usd.mean"] == {"value": pytest.approx(0.025), "n": 4}
    assert seg["tenant=a"]["cost.usd.p95"]["value"] == pytest.approx(0.0385)
    assert seg["tenant=b"]["cost.usd.mean"]["value"] == pytest.approx(0.2)
    assert seg["tenant=b"]["cost.usd.p95"]["value"] == pytest.approx(0.29)
    assert seg["turn=first"]["cost.usd.mean"] == {"value": pytest.approx(0.14 / 3), "n": 3}
    assert seg["turn=first"]["cost.usd.p95"]["value"] == pytest.approx(0.093)
    assert seg["turn=follow_up"]["cost.usd.mean"]["value"] == pytest.approx(0.12)
    assert seg["turn=(none)"]["cost.usd.mean"] == {"value": None, "n": 0}
    csv = (out / "signals.csv").read_text(encoding="utf-8")
    assert ",turn=follow_up,cost.usd.mean,0.12" in csv and ",tenant=a,cost.tokens_in.p95," in csv
    html = (out / "trace_report.html").read_text(encoding="utf-8")
    assert '<section id="cost">' in html and "spend (USD)" in html and "$0.025" in html
    term = capsys.readouterr().out
    assert "Cost per request" in term and "$0.0833" in term and "input tokens" in term


def test_traces_without_cost_have_no_cost_output(tmp_path):
    traces = write_jsonl(tmp_path / "t.jsonl", _requests([{"tenant": "a"}, {"tenant": "b"}]))
    out = tmp_path / "out"
    assert main(["traces", "analyze", "--traces", str(traces), "--by", "tenant", "--out", str(out)]) == 0
    s = _summary(out)
    assert "cost" not in s["operational"]
    assert "cost." not in (out / "signals.csv").read_text(encoding="utf-8")
    assert 'id="cost"' not in (out / "trace_report.html").read_text(encoding="utf-8")


def test_a_monitor_watches_the_cost(tmp_path, capsys):
    monitors = tmp_path / "monitors.yaml"
    monitors.write_text("monitors:\n  - {signal: cost.usd.mean, change: none, max: 0.1, segments: [tenant], "
                        "severity: error, owner: finops}\n", encoding="utf-8")
    code = main(["traces", "check", "--traces", str(_cost_traces(tmp_path)), "--monitors", str(monitors),
                 "--summary", str(tmp_path / "s.md")])
    assert code == 1
    md = (tmp_path / "s.md").read_text(encoding="utf-8")
    assert "cost.usd.mean" in md and "tenant=b" in md and "tenant=a" not in md and "$0.200" in md


@pytest.mark.parametrize("value, field, says", [
    ({"usd": -0.01}, "cost.usd", "must be a number >= 0"),
    ({"tokens_in": "12"}, "cost.tokens_in", "must be a number"),
    ({"gpu_ms": True}, "cost.gpu_ms", "must be a number"),
    (0.5, "cost", "must be an object of numbers"),
    ({"tokens_in": 10**400}, "cost.tokens_in", "must be a finite number"),
])
def test_a_bad_cost_names_file_line_and_field(tmp_path, capsys, value, field, says):
    traces = write_jsonl(tmp_path / "t.jsonl", _requests([{"cost": {"usd": 1.0}}, {"cost": value}]))
    assert main(["traces", "analyze", "--traces", str(traces), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "t.jsonl:2" in err and f"'{field}'" in err and says in err


def test_unknown_keys_are_kept_and_the_parquet_struct_reads(tmp_path):
    recs = _requests([{**f, **({"cost": c} if c else {})} for f, c in ROWS])
    pq.write_table(pa.Table.from_pylist(recs), tmp_path / "t.parquet")
    req = read_traces(tmp_path / "t.parquet").requests.to_pylist()
    assert [r["cost_usd"] for r in req] == [0.01, 0.02, 0.03, 0.04, 0.10, 0.30, None]
    assert req[3]["cost_other"] == [("gpu_ms", 7.0)] and req[0]["cost_other"] is None


# -- span formats ------------------------------------------------------------------------------------------
def _attr(k, v):
    if isinstance(v, str):
        return {"key": k, "value": {"stringValue": v}}
    if isinstance(v, int):
        return {"key": k, "value": {"intValue": str(v)}}
    return {"key": k, "value": {"doubleValue": v}}


def _span(tid, sid, parent, name, attrs, start=0):
    return {"traceId": tid * 32, "spanId": sid * 16, "parentSpanId": parent * 16 if parent else "", "name": name,
            "kind": 1, "startTimeUnixNano": str(1780000000000000000 + start * 1000000),
            "endTimeUnixNano": str(1780000000050000000 + start * 1000000),
            "attributes": [_attr(k, v) for k, v in attrs.items()]}


def test_otlp_spans_sum_genai_usage_over_llm_spans(tmp_path):
    """gen_ai.usage.input_tokens / output_tokens summed over the LLM spans (an older instrumentation's
    prompt_tokens and OpenInference's llm.token_count.* count the same); rankgate.cost.<key> for the rest."""
    spans = [_span("a", "1", None, "rag", {"rankgate.cost.usd": 0.004, "rankgate.cost.gpu_ms": 12.0}),
             _span("a", "2", "1", "retrieve", {"gen_ai.operation.name": "retrieval"}, 1),
             _span("a", "3", "1", "chat", {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 1200,
                                           "gen_ai.usage.output_tokens": 80}, 2),
             _span("a", "4", "1", "chat again", {"gen_ai.operation.name": "chat", "gen_ai.usage.prompt_tokens": 300,
                                                 "gen_ai.usage.completion_tokens": 20}, 3),
             _span("a", "5", "1", "llm", {"openinference.span.kind": "LLM", "llm.token_count.prompt": 5,
                                          "llm.token_count.completion": 1}, 4),
             _span("a", "6", "1", "tool", {"gen_ai.usage.input_tokens": 999}, 5),  # not an LLM span: not summed
             _span("b", "1", None, "rag", {})]
    msg = {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": "app"}, "spans": spans}]}]}
    p = tmp_path / "otlp.jsonl"
    p.write_text(json.dumps(msg) + "\n", encoding="utf-8")
    got = {r["trace_id"][0]: r for r in read_traces(str(p)).requests.to_pylist()}
    a = got["a"]
    assert (a["cost_tokens_in"], a["cost_tokens_out"], a["cost_usd"], a["cost_other"]) == (
        1505.0, 101.0, 0.004, [("gpu_ms", 12.0)])
    assert all(got["b"][c] is None for c in ("cost_tokens_in", "cost_usd", "cost_other"))
    spans[2]["attributes"].append(_attr("rankgate.cost.rerank_ms", -2.0))
    p.write_text(json.dumps(msg) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as e:
        read_traces(str(p))
    assert "otlp.jsonl:1" in str(e.value) and "cost.rerank_ms" in str(e.value) and ">= 0" in str(e.value)


def test_a_field_map_names_a_cost_attribute(tmp_path):
    from rankgate.traces.fieldmap import FIELD_NAMES, field_map_of

    assert {"cost.usd", "request.cost.usd", "cost.tokens_in"} <= set(FIELD_NAMES)
    assert field_map_of(["cost.usd=llm.spend"]) == {"request": {"cost.usd": "llm.spend"}}
    assert field_map_of(["request.cost.usd=llm.spend"]) == {"request": {"cost.usd": "llm.spend"}}
    msg = {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": "app"}, "spans": [
        _span("a", "1", None, "rag", {"llm.spend": "0.25", "rankgate.cost.usd": 9.0})]}]}]}
    p = tmp_path / "otlp.jsonl"
    p.write_text(json.dumps(msg) + "\n", encoding="utf-8")
    (r,) = read_traces(str(p), field_map={"request": {"cost.usd": "llm.spend"}}).requests.to_pylist()
    assert r["cost_usd"] == 0.25


# -- Langfuse and LangSmith -------------------------------------------------------------------------------
def test_langfuse_usage_and_cost_summed_over_observations(tmp_path):
    (tmp_path / "observations_v2").mkdir()
    base = {"trace_id": "t1", "start_time": "2026-05-29 13:46:19.963000", "end_time": "2026-05-29 13:46:20.011000",
            "level": "DEFAULT"}
    rows = [{**base, "id": "o1", "type": "SPAN", "name": "rag", "parent_observation_id": None},
            {**base, "id": "o2", "type": "RETRIEVER", "name": "search", "parent_observation_id": "o1",
             "input": "{\"query\":\"refund?\"}", "output": "{\"documents\":[{\"id\":\"d1\"}]}"},
            {**base, "id": "o3", "type": "GENERATION", "name": "answer", "parent_observation_id": "o1",
             "usage_details": {"input": 1000, "output": 50, "total": 1050},
             "cost_details": {"input": 0.001, "output": 0.0005, "total": 0.0015}},
            {**base, "id": "o4", "type": "EMBEDDING", "name": "embed", "parent_observation_id": "o1",
             "usage_details": "{\"input\": 12}", "cost_details": "{\"total\": 0.0001}"}]
    (tmp_path / "observations_v2" / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (r,) = read_traces(tmp_path).requests.to_pylist()
    assert (r["cost_tokens_in"], r["cost_tokens_out"], r["cost_usd"]) == (1012.0, 50.0, pytest.approx(0.0016))
    rows[2]["cost_details"] = {"total": -1}
    (tmp_path / "observations_v2" / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(InputError, match=r"a.jsonl:3: field 'cost.usd' must be a number >= 0"):
        read_traces(tmp_path)


def test_langsmith_tokens_and_cost_from_llm_runs_only(tmp_path):
    """LangSmith adds a run's tokens and cost into its parents: only the llm runs are summed."""
    t = {"start_time": "2026-05-29T13:46:19.963Z", "end_time": "2026-05-29T13:46:20.011Z", "error": None}
    runs = [{**t, "id": "c", "trace_id": "c", "run_type": "chain", "name": "rag", "prompt_tokens": 700,
             "completion_tokens": 30, "total_cost": 0.007},
            {**t, "id": "r", "trace_id": "c", "parent_run_id": "c", "run_type": "retriever", "name": "Retriever",
             "inputs": {"query": "q"}, "outputs": {"documents": []}},
            {**t, "id": "l1", "trace_id": "c", "parent_run_id": "c", "run_type": "llm", "name": "a",
             "prompt_tokens": 400, "completion_tokens": 10, "total_cost": 0.004},
            {**t, "id": "l2", "trace_id": "c", "parent_run_id": "c", "run_type": "llm", "name": "b",
             "prompt_tokens": 300, "completion_tokens": 20, "total_cost": 0.003}]
    p = tmp_path / "runs.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in runs))
    (r,) = read_traces(p).requests.to_pylist()
    assert (r["cost_tokens_in"], r["cost_tokens_out"], r["cost_usd"]) == (700.0, 30.0, pytest.approx(0.007))
    (r,) = read_traces(p, field_map={"request": {"cost.usd": "extra.metadata.spend"}}).requests.to_pylist()
    assert r["cost_usd"] == pytest.approx(0.007)  # (the path leads nowhere: the runs' cost stands)


# -- the turn segment ----------------------------------------------------------------------------------------
def test_by_turn_in_analyze_check_and_monitor_segments(tmp_path):
    traces = _cost_traces(tmp_path)
    out = tmp_path / "out"
    assert main(["traces", "analyze", "--traces", str(traces), "--by", "turn", "--out", str(out)]) == 0
    seg = _summary(out)["segments"]
    assert {k for k in seg} == {"turn=first", "turn=follow_up", "turn=(none)"}
    n = {k: v["latency.total.p50"]["n"] if "latency.total.p50" in v else None for k, v in seg.items()}
    assert seg["turn=first"]["cost.usd.mean"]["n"] == 3 and seg["turn=follow_up"]["cost.usd.mean"]["n"] == 3, n
    monitors = tmp_path / "monitors.yaml"
    monitors.write_text("monitors:\n  - {signal: cost.usd.p95, change: none, max: 0.2, segments: [turn]}\n",
                        encoding="utf-8")
    code = main(["traces", "check", "--traces", str(traces), "--monitors", str(monitors), "--by", "turn",
                 "--summary", str(tmp_path / "s.md")])
    assert code == 1
    md = (tmp_path / "s.md").read_text(encoding="utf-8")
    assert "| turn=follow\\_up | cost.usd.p95 | $0.274 |" in md and "| turn=first |" not in md  # (markdown-escaped)
