"""Monitors: the YAML file (errors at file:line:key), the rules on hand-made series, the CLI (analyze,
check: exit 0/1/2, outputs) and the acceptance test on the seeded generator: each injected incident
is flagged in its window and segment by the default monitors, with no flag on the clean days."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from rankgate.cli.main import main
from rankgate.errors import ConfigError
from rankgate.gating.config import parse_monitors
from rankgate.traces.monitors import Monitor, MonitorConfig, check_monitors
from rankgate.traces.signals import SignalValue, TraceSummary

from .hostile import assert_refused
from .conftest import sampled

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

DAY = 86_400_000_000


def _summary(signal: str, points: list[tuple[float, int, int | None]], segment: str = "all") -> TraceSummary:
    values = tuple(SignalValue(i * DAY, segment, signal, x, n, k) for i, (x, n, k) in enumerate(points))
    return TraceSummary(DAY, "1d", tuple(i * DAY for i in range(len(points))), (), values, (), (), (), (), (), ())


def test_robust_z_rule_flags_the_spike_only():
    pts = [(2.0, 1000, 2), (3.0, 1000, 3), (2.0, 1000, 2), (4.0, 1000, 4), (40.0, 1000, 40), (3.0, 1000, 3)]
    cfg = MonitorConfig((Monitor("e", "error_rate_per_1k", mad_floor=1.0),))
    out = check_monitors(_summary("error_rate_per_1k", pts), cfg)
    assert [(f.window // DAY, f.rule) for f in out.flags] == [(4, "robust_z")]
    # median 2.5 of (2, 3, 2, 4), MAD 0.5 -> floor 1: M = 0.6745 * 37.5
    assert out.flags[0].statistic == pytest.approx(0.6745 * 37.5)
    assert out.exit_code == 1
    assert out.unchecked == {"no baseline yet": 3}


def test_direction_min_n_threshold_and_warning_severity():
    pts = [(1.0, 500, None), (1.0, 500, None), (1.0, 500, None), (0.5, 10, None), (0.5, 500, None)]
    cfg = MonitorConfig((Monitor("r", "redaction_efficacy", direction="down", min_n=50, mad_floor=0.02,
                                 severity="warning", min=0.9),))
    out = check_monitors(_summary("redaction_efficacy", pts), cfg)
    assert {(f.window // DAY, f.rule) for f in out.flags} == {(4, "robust_z"), (4, "min")}
    assert out.exit_code == 0  # warnings only
    assert out.unchecked["too few rows"] == 1


def test_proportion_rule_on_small_counts():
    pts = [(0.15, 40, 6), (0.125, 40, 5), (0.175, 40, 7), (0.6, 30, 18)]
    cfg = MonitorConfig((Monitor("f", "negative_feedback_rate", change="proportion", min_n=20),))
    out = check_monitors(_summary("negative_feedback_rate", pts), cfg)
    assert [(f.window // DAY, f.rule) for f in out.flags] == [(3, "proportion")]
    assert out.flags[0].baseline == pytest.approx(18 / 120)


def test_proportion_rule_tests_the_difference_not_overlap_of_intervals():
    """Seed 0's bad source, 11/30 against 18/120: the two Wilson intervals overlap, but Newcombe's
    interval of the difference lies above 0 even at 99% (the default for feedback per source). Seed 1's
    clean day, 8/25 against 36/250: above 0 at 95%, not at 99%."""
    from rankgate.stats.bootstrap import newcombe_interval, wilson_interval

    assert wilson_interval(11, 30, confidence=0.99)[0] < wilson_interval(18, 120, confidence=0.99)[1]
    assert newcombe_interval(11, 30, 18, 120, confidence=0.99)[0] > 0
    assert newcombe_interval(8, 25, 36, 250)[0] > 0 > newcombe_interval(8, 25, 36, 250, confidence=0.99)[0]
    base = [(0.15, 50, 7), (0.125, 50, 6), (0.175, 50, 9), (0.125, 50, 6), (0.125, 50, 8)]  # 36/250
    for conf, flagged in ((0.95, [5]), (0.99, [])):
        cfg = MonitorConfig((Monitor("f", "negative_feedback_rate", change="proportion", min_n=20, confidence=conf),))
        pts = [*base, (8 / 25, 25, 8)]
        assert [f.window // DAY for f in check_monitors(_summary("negative_feedback_rate", pts), cfg).flags] == flagged


@pytest.mark.parametrize("seed", sampled([0, 1], every=2))
def test_default_feedback_monitor_catches_the_bad_source_without_clean_day_alarms(seed, tmp_path):
    """Seed 0's bad source (11 negative of 30 on its day) was missed by the rule of non-overlapping
    intervals; seed 1 has a clean day with 8 of 25 that a 95% test would flag."""
    from trace_gen import Spec, generate

    truth = generate(tmp_path, Spec(days=10, per_day=1000, seed=seed), formats=("parquet",))
    flags_json = tmp_path / "flags.json"
    main(["traces", "check", "--traces", str(tmp_path / truth["files"]["parquet"][0]), "--json-out", str(flags_json)])
    flags = [f for f in json.loads(flags_json.read_text())["flags"] if f["signal"] == "negative_feedback_rate"]
    (inc,) = [i for i in truth["incidents"] if i["signal"] == "negative_feedback"]
    seg = "{}={}".format(*next(iter(inc["segment"].items())))
    assert (inc["start"][:10], seg) in {(f["window"][:10], f["segment"]) for f in flags}
    clean = {truth["days"][d] for d in truth["clean_days"]}
    assert not [f for f in flags if f["window"][:10] in clean]


@pytest.mark.parametrize("text, line, match", [
    ("monitors:\n  - signal: error_rate_per_1k\n    sevrity: error\n", 3, "did you mean 'severity'"),
    ("monitors:\n  - signal: eror_rate_per_1k\n", 2, "error_rate_per_1k"),
    ("monitors:\n  - signal: latency.total.p95\n    change: proportion\n", 3, "proportion applies to rates"),
    ("monitors:\n  - signal: fallback_rate\n    segments: [tenant, colour]\n", 3, "no segment field"),
    ("monitors:\n  - signal: fallback_rate\n    severity: fatal\n", 3, "error|warning"),
    ("monitors: []\n", 1, "non-empty list"),
])
def test_monitor_file_errors_name_line_and_key(text, line, match):
    with pytest.raises(ConfigError, match=match) as exc:
        parse_monitors(text, path="m.yaml")
    assert f"m.yaml:{line}:" in str(exc.value)


def test_default_monitors_parse():
    from rankgate.gating.config import load_monitors

    cfg = load_monitors(None)
    assert "instability.rbo" in {m.signal for m in cfg.monitors}
    assert cfg.segment_fields == ("source", "tenant")


# -- the CLI on generated traces -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    from trace_gen import Spec, generate

    out = tmp_path_factory.mktemp("gen")
    truth = generate(out, Spec(days=10, per_day=1000, seed=3), formats=("parquet",))
    return out, truth


def test_incidents_flagged_in_their_window_and_segment_no_false_alarm_on_clean_days(generated, tmp_path, capsys):
    out, truth = generated
    traces = str(out / truth["files"]["parquet"][0])
    summary_md, flags_json = tmp_path / "check.md", tmp_path / "flags.json"
    code = main(["traces", "check", "--traces", traces, "--corpus", str(out / "corpus.jsonl"),
                 "--summary", str(summary_md), "--json-out", str(flags_json)])
    assert code == 1
    flags = json.loads(flags_json.read_text())["flags"]
    seen = {(f["window"][:10], f["segment"], f["signal"]) for f in flags}
    signal_of = {"latency.rerank": "latency.rerank.p95", "deprecated_share": "deprecated_context_rate",
                 "instability": "instability.rbo", "negative_feedback": "negative_feedback_rate",
                 "error_rate": "error_rate_per_1k", "redaction_efficacy": "redaction_efficacy"}
    for inc in truth["incidents"]:
        seg = "all" if not inc["segment"] else "{}={}".format(*next(iter(inc["segment"].items())))
        assert (inc["start"][:10], seg, signal_of[inc["signal"]]) in seen, inc["name"]
    clean = {truth["days"][d] for d in truth["clean_days"]}
    assert not [f for f in flags if f["window"][:10] in clean]
    # the abort burst (HTTP 499 only) is not an error
    abort_day = next(x for x in truth["non_incidents"] if x["name"] == "abort_burst")["start"][:10]
    assert not [f for f in flags if f["window"][:10] == abort_day and f["signal"] == "error_rate_per_1k"]
    md = summary_md.read_text()
    assert "## Trace monitors: FAILED" in md and "| error |" in md
    assert capsys.readouterr().out == md


ANALYZE = ["--by", "tenant", "--abstention-threshold", "0.3"]


@pytest.fixture(scope="module")
def analyzed(generated, tmp_path_factory):
    out, truth = generated
    traces = str(out / truth["files"]["parquet"][0])
    dest = tmp_path_factory.mktemp("analyzed")
    import contextlib
    import io

    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        assert main(["traces", "analyze", "--traces", traces, *ANALYZE, "--out", str(dest)]) == 0
    return traces, dest, text.getvalue()


def test_analyze_writes_csv_summary_and_panel(analyzed):
    import numpy as np
    import pyarrow.parquet as pq

    traces, dest, text = analyzed
    summary = json.loads((dest / "summary.json").read_text())
    total = pq.read_table(traces, columns=["timings_ms"]).column("timings_ms").combine_chunks().field("total")
    lat = summary["operational"]["latency_ms"]["total"]
    for q in (50, 95, 99):
        assert lat[f"p{q}"] == float(np.percentile(total.to_numpy(), q))
    assert summary["retrieval"]["stale_citation_rate"]["note"] == "not measurable (no corpus manifest)"
    header, *rows = (dest / "signals.csv").read_text().splitlines()
    assert header == "window_start,window_end,segment,signal,value,n,k,note"
    assert any(r.startswith("2026-05-01T00:00:00Z,2026-05-02T00:00:00Z,tenant=acme,low_confidence_rate,") for r in rows)
    panel = text.split("\nwrote ")[0]
    assert "Latency per stage" in panel and max(len(x) for x in panel.splitlines()) <= 80


def test_analyze_is_deterministic(analyzed, tmp_path):
    traces, first, _ = analyzed
    assert main(["traces", "analyze", "--traces", traces, *ANALYZE, "--out", str(tmp_path)]) == 0
    for name in ("signals.csv", "summary.json"):
        assert (tmp_path / name).read_bytes() == (first / name).read_bytes()


@pytest.mark.parametrize("extra, names", [
    (["--window", "5y"], []),
    (["--window", "99999999999w"], ["--window", "at most 36500d"]),
    (["--window", "36501d"], ["at most 36500d"]),
    (["--window", "9" * 5000 + "m"], ["--window"]),
    (["--by", "colour"], []),
    (["--abstention-threshold", "0.3", "--abstention", "a.yaml"], []),
])
def test_bad_options_are_refused(generated, tmp_path, capsys, extra, names):
    out, truth = generated
    traces = str(out / truth["files"]["parquet"][0])
    dest = tmp_path / "out"
    assert_refused(["traces", "analyze", "--traces", traces, "--out", str(dest), *extra], dest, names=names[:1],
                   capsys=capsys, contains=names[1:])


def test_the_widest_window_and_extreme_finite_scores_still_write_summary_json(tmp_path, capsys):
    """Scores of ±1.7e308 are finite, but top-1 minus top-2 is not: the margin is recorded as the largest
    double, so summary.json is written (not an internal error) and says what the scores said."""
    rows = [{"request_id": f"r{i}", "timestamp": f"2026-05-0{1 + i}T00:00:00Z", "query": f"q{i}",
             "retrieved": [{"stage": "reranked", "rank": 1, "id": "c1", "score": top1},
                           {"stage": "reranked", "rank": 2, "id": "c2", "score": -1.7e308}]}
             for i, top1 in enumerate((1.7e308, 1.7e308, 1.7e308, -1.7e308))]
    traces = tmp_path / "t.jsonl"
    traces.write_text("".join(json.dumps(r) + "\n" for r in rows))
    dest = tmp_path / "out"
    assert main(["traces", "analyze", "--traces", str(traces), "--out", str(dest), "--window", "36500d"]) == 0
    summary = json.loads((dest / "summary.json").read_text())
    retrieval = summary["retrieval"]
    assert retrieval["margin.p50"] == {"value": 1.7976931348623157e308, "n": 4}
    assert retrieval["top1_score.p50"]["value"] == 1.7e308
    assert len(summary["windows"]) == 1


def test_bad_monitor_file_is_refused(generated, tmp_path, capsys):
    out, truth = generated
    bad = tmp_path / "m.yaml"
    bad.write_text("monitors:\n  - signal: nope\n")
    assert_refused(["traces", "check", "--traces", str(out / truth["files"]["parquet"][0]), "--monitors", str(bad)],
                   tmp_path / "none", names=[bad], capsys=capsys)


def test_bad_abstention_file_is_refused(generated, tmp_path, capsys):
    out, truth = generated
    bad = tmp_path / "abst.yaml"
    bad.write_text("abstention: {threshold: high}\n")
    dest = tmp_path / "o"
    assert_refused(["traces", "analyze", "--traces", str(out / truth["files"]["parquet"][0]), "--abstention",
                    str(bad), "--out", str(dest)], dest, names=[bad], capsys=capsys)
    good = tmp_path / "ok.yaml"
    good.write_text("abstention: {threshold: 0.42, metric: hit@5, n: 10}\n")
    assert main(["traces", "analyze", "--traces", str(out / truth["files"]["parquet"][0]), "--abstention",
                 str(good), "--out", str(dest)]) == 0
    assert json.loads((dest / "summary.json").read_text())["abstention_threshold"] == 0.42
