"""Run records' orchestration fields: ``cpu_ms`` and ``memory_mb`` per query summarised as latency is
(percentiles with intervals, per segment; shown, never gated), and ``adapter`` as a segment of evaluate,
compare and gate; bad values name the file, the line and the field; runs without them read as before."""

from __future__ import annotations

import json

import pytest

from rankgate.cli.main import main

from .demo_runs import write_jsonl

# cpu_ms 10..50 and memory_mb over five queries, by hand (numpy's linear interpolation):
#   cpu_ms: median 30, p90 46 (40 + 0.6 x 10), p95 48, p99 49.6; adapter a (10, 20): median 15; b (30..50): 40
#   memory_mb: median 300, p95 480 (400 + 0.8 x 100); adapter b (200, 400, 500): p95 490 (400 + 0.9 x 100)
SAMPLES = (("a", 10, 100), ("a", 20, 300), ("b", 30, 200), ("b", 40, 400), ("b", 50, 500))


def _gold(tmp_path, n: int = 6):
    return write_jsonl(tmp_path / "gold.jsonl", [{"query_id": f"q{i}", "relevant": [f"d{i}"]} for i in range(n)])


def _run(tmp_path, name: str = "run.jsonl", miss: tuple[int, ...] = (), samples=SAMPLES):
    records = [{"query_id": f"q{i}", "retrieved": ["x" if i in miss else f"d{i}"], "adapter": a, "cpu_ms": c,
                "memory_mb": m} for i, (a, c, m) in enumerate(samples)]
    records.append({"query_id": "q5", "retrieved": ["d5"], "adapter": "b"})  # no samples: not counted
    return write_jsonl(tmp_path / name, records)


def _rows(summary: dict) -> dict:
    return {(r["sample"], r["stat"], r["segment"]): r for r in summary["resources"]["rows"]}


def test_evaluate_summarises_the_samples_as_computed_by_hand(tmp_path, capsys):
    gold, run = _gold(tmp_path), _run(tmp_path)
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "--by", "adapter", "--out", str(tmp_path / "o")]) == 0
    s = json.loads((tmp_path / "o" / "summary.json").read_text(encoding="utf-8"))
    rows = _rows(s)
    cpu = {stat: rows[("cpu_ms", stat, None)]["value"] for stat in ("median", "p90", "p95", "p99")}
    assert cpu == {"median": 30.0, "p90": pytest.approx(46.0), "p95": pytest.approx(48.0), "p99": pytest.approx(49.6)}
    assert rows[("cpu_ms", "median", None)]["n"] == 5 and rows[("cpu_ms", "median", None)]["unit"] == "ms"
    assert rows[("cpu_ms", "median", None)]["ci"] == [10.0, 50.0]  # the exact interval spans the order statistics
    assert rows[("cpu_ms", "median", "adapter=a")]["value"] == 15.0 and rows[("cpu_ms", "median", "adapter=a")]["n"] == 2
    assert rows[("cpu_ms", "median", "adapter=b")]["value"] == 40.0 and rows[("cpu_ms", "median", "adapter=b")]["n"] == 3
    assert rows[("memory_mb", "median", None)]["value"] == 300.0
    assert rows[("memory_mb", "p95", None)]["value"] == pytest.approx(480.0)
    assert rows[("memory_mb", "p95", "adapter=b")]["value"] == pytest.approx(490.0)
    assert s["resources"]["gated"] is False
    terminal = capsys.readouterr().out
    assert "Process resources per query" in terminal and "(10.0–50.0)" in terminal  # the median's interval
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "--markdown"]) == 0
    md = capsys.readouterr().out
    assert "### Process resources per query" in md
    assert "| CPU time (ms) | all queries | 5 | 30.0 (10.0–50.0) | 46.0 (30.0–50.0) | 48.0 (30.0–50.0) |" in md
    assert "| memory, RSS (MB) | all queries | 5 | 300.0 (100.0–500.0) |" in md


def test_the_report_shows_the_samples(tmp_path):
    gold, run = _gold(tmp_path), _run(tmp_path)
    out = tmp_path / "r.html"
    assert main(["report", "--gold", str(gold), "--run", str(run), "--resamples", "0", "-o", str(out)]) == 0
    html = out.read_text(encoding="utf-8")
    section = html[html.index('<section id="resources">'):]
    section = section[:section.index("</section>")]
    assert "CPU time (ms)" in section and "memory, RSS (MB)" in section and "30.0" in section


def test_runs_without_samples_have_no_resources_section(tmp_path, capsys):
    gold = _gold(tmp_path)
    run = write_jsonl(tmp_path / "plain.jsonl", [{"query_id": f"q{i}", "retrieved": [f"d{i}"]} for i in range(6)])
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert "resources" not in data
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "--markdown"]) == 0
    assert "resources" not in capsys.readouterr().out


def test_a_gate_never_reads_the_samples(tmp_path):
    """A run whose memory is huge passes a quality gate: the samples are shown, not gated."""
    gold = _gold(tmp_path)
    run = _run(tmp_path, samples=[(a, c * 1e6, m * 1e6) for a, c, m in SAMPLES])
    ship = tmp_path / "ship.yaml"
    ship.write_text("gates:\n  - metric: recall@5\n    threshold: 0.5\n", encoding="utf-8")
    out = tmp_path / "gate.json"
    assert main(["gate", "--config", str(ship), "--gold", str(gold), "--candidate", str(run), "--json-out", str(out),
                 "--no-step-summary"]) == 0
    assert "memory_mb" not in out.read_text(encoding="utf-8")


# -- adapter as a segment ----------------------------------------------------------------------------
def test_by_adapter_in_evaluate_compare_and_gate(tmp_path, capsys):
    gold = _gold(tmp_path)
    base, cand = _run(tmp_path, "base.jsonl"), _run(tmp_path, "cand.jsonl", miss=(0,))  # adapter a: q0 missed, q1 hit
    assert main(["evaluate", "--gold", str(gold), "--run", str(cand), "--by", "adapter", "--json"]) == 0
    seg = json.loads(capsys.readouterr().out)["segments"]
    assert set(seg) == {"adapter"}
    means = {v: seg["adapter"][v]["recall@5"]["mean"] for v in ("a", "b")}
    assert means == {"a": 0.5, "b": 1.0}  # b: q2..q5 all hit
    assert main(["compare", "--gold", str(gold), str(base), str(cand), "--by", "adapter", "--resamples", "200",
                 "--markdown"]) == 0
    md = capsys.readouterr().out
    assert "↳ adapter = a" in md and "↳ adapter = b" in md
    ship = tmp_path / "ship.yaml"
    ship.write_text("gates:\n  - metric: recall@5\n    threshold: 0.6\n    segments: [adapter]\n    min_queries: 1\n"
                    "defaults: {resamples: 200}\n", encoding="utf-8")
    out = tmp_path / "gate.json"
    assert main(["gate", "--config", str(ship), "--gold", str(gold), "--candidate", str(cand), "--baseline", str(base),
                 "--json-out", str(out), "--no-step-summary"]) == 1
    checks = json.loads(out.read_text(encoding="utf-8"))["gates"][0]["checks"]
    segments = {c.get("segment"): c["status"] for c in checks if c.get("field") == "adapter"}
    assert segments == {"a": "fail", "b": "pass"}


def test_the_gold_sets_own_adapter_field_wins(tmp_path, capsys):
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"query_id": f"q{i}", "relevant": [f"d{i}"], "adapter": "gold"}
                                                 for i in range(6)])
    assert main(["evaluate", "--gold", str(gold), "--run", str(_run(tmp_path)), "--by", "adapter", "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)["segments"]["adapter"]) == {"gold"}


@pytest.mark.parametrize("field, value, says", [
    ("cpu_ms", -3, "must not be negative; got -3"),
    ("memory_mb", "lots", 'must be a number; got "lots"'),
    ("cpu_ms", True, "must be a number; got true"),
    ("memory_mb", float("nan"), "must be a finite number"),
    ("adapter", "", 'must be a non-empty string; got ""'),
    ("adapter", 7, "must be a non-empty string; got 7"),
    # latency_ms, whose stages are samples of the same kind (a negative or a word was taken, or silently dropped)
    ("latency_ms", -3, "must not be negative; got -3"),
    ("latency_ms", "slow", 'must be a number or an object of stages; got "slow"'),
    # an integer beyond the float range (1e400 written out) was an internal error where it was converted
    ("cpu_ms", 10**400, "must be a finite number; got 1000"),
    ("latency_ms", 10**400, "must be a finite number; got 1000"),
])
def test_a_bad_value_names_file_line_and_field(tmp_path, capsys, field, value, says):
    gold = _gold(tmp_path, 2)
    run = tmp_path / "bad.jsonl"
    run.write_text(json.dumps({"query_id": "q0", "retrieved": ["d0"]}) + "\n"
                   + json.dumps({"query_id": "q1", "retrieved": ["d1"], field: value}) + "\n", encoding="utf-8")
    assert main(["evaluate", "--gold", str(gold), "--run", str(run)]) == 2
    err = capsys.readouterr().err
    assert f"bad.jsonl:2: field '{field}' {says}" in err


@pytest.mark.parametrize("stages, says", [
    ({"retrieve": -1.5}, "field 'latency_ms.retrieve' must not be negative; got -1.5"),
    ({"retrieve": 4.0, "rerank": "fast"}, "field 'latency_ms.rerank' must be a number; got \"fast\""),
    ({"rerank": float("inf")}, "field 'latency_ms.rerank' must be a finite number"),
    ([{"retrieve": 3.0}, 20, {"retrieve": -2}], "field 'latency_ms[2].retrieve' must not be negative; got -2"),
    ([5, [6]], "field 'latency_ms[1]' must be a number or an object of stages; got [6]"),
])
def test_a_bad_latency_stage_names_the_stage(tmp_path, capsys, stages, says):
    gold = _gold(tmp_path, 2)
    run = tmp_path / "bad.jsonl"
    run.write_text(json.dumps({"query_id": "q0", "retrieved": ["d0"], "latency_ms": {"retrieve": 3.0, "rerank": None}})
                   + "\n" + json.dumps({"query_id": "q1", "retrieved": ["d1"], "latency_ms": stages}) + "\n",
                   encoding="utf-8")
    assert main(["evaluate", "--gold", str(gold), "--run", str(run)]) == 2
    assert f"bad.jsonl:2: {says}" in capsys.readouterr().err
