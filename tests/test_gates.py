"""Gate config loading (errors name file:line:key) and gate decisions on constructed cases."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from rankgate.errors import ConfigError, InputError
from rankgate.flows.gate import gate
from rankgate.gating.decide import BaselineSummary, config_from_dict, decide, load_config, parse_config
from rankgate.model.results import EvaluationResult

DATA = Path(__file__).parent / "data" / "gate"


def result(recall, lang=None, *, forbidden=None, ranks=None, run="cand.jsonl") -> EvaluationResult:
    recall = np.asarray(recall, dtype=float)
    n = recall.size
    values = {"recall@5": recall}
    names = ["recall@5"]
    if forbidden is not None:
        values["forbidden@5"] = np.asarray(forbidden, dtype=float)
        names.append("forbidden@5")
    fields = {"tags.lang": tuple(lang)} if lang is not None else {}
    return EvaluationResult(
        tuple(f"q{i:03d}" for i in range(n)), tuple(names), values, fields,
        np.asarray(ranks if ranks is not None else np.where(recall > 0, 1, 0)), inputs={"run": {"path": run}},
    )


def cfg(text: str):
    return parse_config(text, path="ship.yaml")


RECALL_GATE = """\
gates:
  - name: retrieval_recall_at_5
    metric: recall@5
{extra}
defaults: {{seed: 0, resamples: 500}}
"""


def one_gate(**keys) -> str:
    return RECALL_GATE.format(extra="\n".join(f"    {k}: {v}" for k, v in keys.items()))


# -- decisions ------------------------------------------------------------------------------------
def test_pass():
    out = decide(cfg(one_gate(threshold=0.8)), result([1.0] * 90 + [0.0] * 10))
    assert out.passed and out.exit_code == 0
    (check,) = out.results[0].checks
    assert (check.kind, check.status, check.value, check.limit) == ("threshold", "pass", 0.9, 0.8)


def test_fail_on_threshold():
    out = decide(cfg(one_gate(threshold=0.85)), result([1.0] * 81 + [0.0] * 19))
    assert not out.passed and out.exit_code == 1
    assert out.results[0].status == "fail"
    assert out.results[0].failures[0].value == pytest.approx(0.81)


def test_threshold_is_met_exactly_despite_float_sums():
    out = decide(cfg(one_gate(threshold=0.85)), result([1.0] * 17 + [0.0] * 3))
    assert out.passed


def test_fail_on_regression_against_a_baseline_run():
    base = result([1.0] * 87 + [0.0] * 13, run="base.jsonl")
    cand = result([1.0] * 81 + [0.0] * 19)  # six queries lost their answer: −6 pp
    out = decide(cfg(one_gate(regression_max=0.03)), cand, base)
    (check,) = out.results[0].checks
    assert check.kind == "regression" and check.status == "fail"
    assert check.value == pytest.approx(-0.06) and check.baseline == pytest.approx(0.87)
    assert check.ci_high < 0
    assert out.baseline_kind == "run" and out.baseline_label == "base.jsonl"
    assert [q.query_id for q in out.queries][:2] == ["q081", "q082"]  # the queries that regressed


def test_regression_within_noise_passes_with_a_note():
    # −5 pp on 40 queries: 4 lost, 2 gained; beyond a 3 pp limit, but the paired CI includes 0
    base = result([1.0] * 30 + [0.0] * 10, run="base.jsonl")
    cand_vals = [1.0] * 26 + [0.0] * 4 + [1.0] * 2 + [0.0] * 8
    out = decide(cfg(one_gate(regression_max=0.03)), result(cand_vals), base)
    (check,) = out.results[0].checks
    assert check.value == pytest.approx(-0.05)
    assert check.status == "pass" and out.passed
    assert "within noise" in check.note and check.ci_low < 0 < check.ci_high


def test_warning_only_never_changes_the_exit_code():
    out = decide(cfg(one_gate(threshold=0.95, severity="warning")), result([1.0] * 80 + [0.0] * 20))
    assert out.results[0].status == "warn"
    assert out.passed and out.exit_code == 0


def test_a_segment_fails_while_all_queries_pass():
    # Overall the candidate gains (+2.5 pp), so the all-queries check passes. But German queries,
    # a fifth of the set, lose 12.5 pp: the per-segment check catches what the total hides.
    lang = ["de"] * 40 + ["en"] * 160
    base = [1.0] * 35 + [0.0] * 5 + [1.0] * 120 + [0.0] * 40
    cand = [1.0] * 30 + [0.0] * 10 + [1.0] * 130 + [0.0] * 30
    out = decide(cfg(one_gate(regression_max=0.03, segments="[lang]")), result(cand, lang), result(base, lang, run="b"))
    checks = {(c.field, c.segment): c for c in out.results[0].checks}
    assert checks[(None, None)].status == "pass" and checks[(None, None)].value == pytest.approx(0.025)
    assert checks[("tags.lang", "de")].status == "fail"
    assert checks[("tags.lang", "de")].value == pytest.approx(-0.125)
    assert checks[("tags.lang", "en")].status == "pass"
    assert not out.passed
    assert out.movers[0].segment == "de"  # the segment that moved most is listed first


def test_regression_against_a_summary_uses_means_and_says_so():
    summary = BaselineSummary.from_dict({
        "metrics": {"recall@5": {"mean": 0.87, "n": 100}},
        "segments": {"lang": {"de": {"recall@5": {"mean": 0.9, "n": 20}}}},  # a field named as in --by lang
    })
    lang = ["de"] * 20 + ["en"] * 80
    cand = result([1.0] * 15 + [0.0] * 5 + [1.0] * 70 + [0.0] * 10, lang)  # 0.85 overall, de 0.75
    out = decide(cfg(one_gate(regression_max=0.03, segments="[lang]")), cand, summary)
    checks = {(c.field, c.segment): c for c in out.results[0].checks}
    assert checks[(None, None)].status == "pass"  # −2 pp
    assert checks[("tags.lang", "de")].status == "fail"  # −15 pp
    assert checks[("tags.lang", "en")].status == "skipped"  # the summary has no en
    assert "no recall@5 for lang = en" in checks[("tags.lang", "en")].note
    assert out.baseline_kind == "summary"
    assert any("summary" in n and "without a paired" in n for n in out.notes)


def test_on_ci_lower_gates_on_the_interval_not_the_mean():
    cand = result([1.0] * 18 + [0.0] * 2)  # mean 0.9, but only 20 queries
    assert decide(cfg(one_gate(threshold=0.85)), cand).passed
    out = decide(cfg(one_gate(threshold=0.85, on="ci_lower")), cand)
    (check,) = out.results[0].checks
    assert check.status == "fail" and check.value == check.ci_low < 0.85 < check.mean


def test_a_ceiling_for_a_lower_is_better_rate():
    text = "gates:\n  - metric: forbidden@5\n    max: 0\ndefaults: {resamples: 200}\n"
    ok = result([1.0] * 10, forbidden=[0.0] * 10)
    bad = result([1.0] * 10, forbidden=[0.0] * 9 + [1.0])
    assert decide(cfg(text), ok).passed
    out = decide(cfg(text), bad)
    assert not out.passed and out.results[0].checks[0].kind == "max"
    assert out.results[0].gate.name == "forbidden@5"


def test_small_segments_are_shown_but_not_gated():
    lang = ["de"] * 3 + ["en"] * 97
    cand = result([0.0] * 3 + [1.0] * 97, lang)
    out = decide(cfg(one_gate(threshold=0.8, segments="[lang]", min_queries=10)), cand)
    checks = {(c.field, c.segment): c for c in out.results[0].checks}
    assert checks[("tags.lang", "de")].status == "skipped" and "min_queries 10" in checks[("tags.lang", "de")].note
    assert out.passed


def test_without_a_baseline_regression_limits_are_skipped_visibly():
    out = decide(cfg(one_gate(threshold=0.5, regression_max=0.03)), result([1.0] * 10))
    kinds = {c.kind: c for c in out.results[0].checks}
    assert kinds["regression"].status == "skipped" and kinds["threshold"].status == "pass"
    assert out.notes == ("No baseline given: regression limits were not checked.",)
    assert out.queries_kind == "lowest"


def test_a_metric_that_applies_to_no_query_warns_unless_the_gate_says_it_blocks():
    out = decide(cfg(one_gate(threshold=0.5)), result([math.nan] * 5))
    (check,) = out.results[0].checks
    assert check.status == "warn" and "applies to no query" in check.note
    assert out.results[0].status == "warn" and out.passed and out.exit_code == 0
    strict = decide(cfg(one_gate(threshold=0.5, not_applicable="error")), result([math.nan] * 5))
    assert strict.results[0].checks[0].status == "fail" and not strict.passed and strict.exit_code == 1


def test_an_unknown_segment_field_points_at_the_config_line():
    with pytest.raises(ConfigError) as err:
        decide(cfg(one_gate(threshold=0.5, segments="[tier]")), result([1.0] * 5, ["en"] * 5))
    assert str(err.value).startswith("ship.yaml:5: field 'gates[0].segments' no field or tag 'tier'")


def test_outcome_json_is_byte_identical_and_serves_as_a_baseline():
    lang = ["de"] * 30 + ["en"] * 70
    cand = result(list(np.random.default_rng(1).random(100) < 0.8), lang)
    base = result(list(np.random.default_rng(2).random(100) < 0.85), lang, run="b")
    config = cfg(one_gate(threshold=0.8, regression_max=0.03, segments="[lang]"))
    a = decide(config, cand, base).to_json()
    assert a == decide(config, cand, base).to_json()
    summary = BaselineSummary.from_dict(json.loads(a))
    assert summary.metrics["recall@5"].mean == cand.summary("recall@5").mean
    assert summary.lookup("recall@5", "tags.lang", "de").n == 30


# -- config errors name file:line:key ------------------------------------------------------------
@pytest.mark.parametrize(
    "text, expected",
    [
        ("gates:\n  - metric: recall@5\n    treshold: 0.85\n",
         "ship.yaml:3: field 'gates[0].treshold' is not a known key (did you mean 'threshold'?)"),
        ("gates:\n  - metric: recall@5\n    threshold: high\n",
         "ship.yaml:3: field 'gates[0].threshold' must be a number; got 'high' (write 0.85 or '85%')"),
        ("gates:\n  - name: r5\n    threshold: 0.85\n",
         "ship.yaml:2: field 'gates[0].name' 'r5' does not name a metric, and the gate has no metric: (add metric: "
         "(e.g. metric: recall@5), or name the gate retrieval_<metric>[_at_<k>], e.g. retrieval_recall_at_5, "
         "retrieval_mrr, retrieval_ndcg_at_10)"),
        ("gates:\n  - threshold: 0.85\n",
         "ship.yaml:2: field 'gates[0].metric' is required (e.g. metric: recall@5, or a name of the shape "
         "retrieval_<metric>[_at_<k>] (retrieval_recall_at_5))"),
        ("gates:\n  - metric: recall@5\n    threshold: 0.85\n    severity: fatal\n",
         "ship.yaml:4: field 'gates[0].severity' must be one of error|warning; got 'fatal'"),
        ("gates:\n  - metric: recal@5\n    threshold: 0.85\n",
         "ship.yaml:2: field 'gates[0].metric' unknown metric 'recal' in 'recal@5'; did you mean 'recall@5'?"),
        ("gates:\n  - metric: recall@5\n    threshold: 85\n",
         "ship.yaml:3: field 'gates[0].threshold' must be between 0 and 1 for recall@5; got 85.0 (shares are fractions"),
        ("gates:\n  - metric: forbidden@5\n    threshold: 0\n",
         "ship.yaml:3: field 'gates[0].threshold' is a floor, but lower is better for forbidden@5 (use max:"),
        ("gates:\n  - metric: recall@5\n    threshold: 0.8\n    max: 0.9\n",
         "ship.yaml:4: field 'gates[0].max' cannot be combined with threshold"),
        ("gates:\n  - metric: forbidden@5\n    max: 0\n    on: ci_lower\n",
         "ship.yaml:4: field 'gates[0].on' ci_lower goes with threshold (a floor) (a ceiling (max) is checked"),
        ("gates:\n  - metric: recall@5\n    severity: error\n",
         "ship.yaml:2: field 'gates[0]' checks nothing for recall@5 (give threshold, max or regression_max)"),
        ("gates:\n  - metric: recall@5\n    threshold: 0.8\n    threshold: 0.9\n",
         "ship.yaml:4: key 'threshold' appears twice"),
        ("gate:\n  - metric: recall@5\n", "ship.yaml:1: field 'gate' is not a known key (did you mean 'gates'?)"),
        ("gates: []\n", "ship.yaml:1: field 'gates' must list at least one gate"),
        ("", "ship.yaml:1: field 'gates' is required"),
        ("gates:\n  - metric: recall@5\n    threshold: 0.8\ndefaults:\n  resamples: 10\n",
         "ship.yaml:5: field 'defaults.resamples' must be an integer >= 100; got 10 (int)"),
        ("gates:\n  - metric: recall@5\n    segments: {lang: 1}\n    threshold: 0.8\n",
         "ship.yaml:3: field 'gates[0].segments.lang' must be 'all', a list of values or a mapping of values"),
        ("gates:\n  - metric: recall@5\n     threshold: 0.8\n", "ship.yaml:3: is not valid YAML"),
        ("gates:\n  - metric: recall@5\n    threshold: 0.8\n  - metric: recall@5\n    threshold: 0.7\n",
         "ship.yaml:4: field 'gates[1].name' repeats the name 'recall@5' of gates[0]"),
    ],
)
def test_bad_config_files_name_file_line_and_key(text, expected):
    with pytest.raises(ConfigError) as err:
        cfg(text)
    assert str(err.value).startswith(expected), str(err.value)


def test_config_values_and_shorthands():
    c = cfg("""\
gates:
  - name: r5
    metric: R@5
    threshold: 85%
    regression_max: 3pp
    on: ci_lower
    segments: lang
    label: answers found in the top 5
  - metric: forbidden@5
    max: 0
    severity: warning
defaults: {seed: 7, resamples: 1000, confidence: 0.9}
evaluate: {k: 10, level: doc}
""")
    g = c.gates[0]
    assert (g.metric, g.threshold, g.regression_max, g.on, g.segments) == ("recall@5", 0.85, 0.03, "ci_lower", ("lang",))
    assert g.title == "answers found in the top 5"
    assert c.gates[1].name == "forbidden@5" and c.gates[1].title == "retrieval forbidden@5"
    assert (c.seed, c.resamples, c.confidence) == (7, 1000, 0.9)
    assert c.evaluate == {"k": 10, "level": "doc"}
    assert c.metrics == ("recall@5", "forbidden@5")
    assert config_from_dict({"gates": [{"metric": "mrr", "threshold": 0.5}]}).gates[0].threshold == 0.5


def test_load_config_reports_a_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="ship.yaml: does not exist"):
        load_config(str(tmp_path / "ship.yaml"))


def test_bad_baseline_summaries_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="field 'metrics.recall@5.mean' must be a number"):
        BaselineSummary.from_dict({"metrics": {"recall@5": {"mean": "high", "n": 3}}}, "summary.json")
    with pytest.raises(InputError, match="has no 'metrics' object"):
        BaselineSummary.from_dict({"means": {}}, "summary.json")


# -- the Python entry and the command, end to end -------------------------------------------------
SHIP = """\
gates:
  - name: retrieval_recall_at_5
    metric: recall@5
    threshold: 0.80
    regression_max: 0.03
    segments: [lang]
  - metric: mrr
    threshold: 0.4
    severity: warning
defaults: {seed: 0, resamples: 300}
"""


def test_gate_entry_point_evaluates_runs():
    config = parse_config(SHIP)
    out = gate(config, str(DATA / "gold.jsonl"), str(DATA / "cand.jsonl"), str(DATA / "base.jsonl"))
    assert not out.passed and out.baseline_kind == "run"
    checks = {(c.kind, c.segment): c for c in out.results[0].checks}
    assert checks[("regression", "de")].status == "fail"
    assert checks[("regression", "de")].baseline == pytest.approx(0.8)
    assert out.counts["missing_from_run"] == ["q39"]
    assert gate(config, str(DATA / "gold.jsonl"), str(DATA / "base.jsonl")).passed


def test_gate_command_exit_codes_files_and_step_summary(tmp_path, monkeypatch, capsys):
    from rankgate.cli.main import main

    ship = tmp_path / "ship-criteria.yaml"
    ship.write_text(SHIP, encoding="utf-8")
    step = tmp_path / "step_summary.md"
    step.write_text("earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    common = ["gate", "--config", str(ship), "--gold", str(DATA / "gold.jsonl")]

    # main's run as the baseline summary for later pull requests
    assert main(common + ["--candidate", str(DATA / "base.jsonl"), "--json-out", str(tmp_path / "baseline.json")]) == 0
    assert "PASS" in capsys.readouterr().out

    comment, outcome = tmp_path / "out" / "pr-comment.md", tmp_path / "out" / "outcome.json"
    code = main(common + ["--candidate", str(DATA / "cand.jsonl"), "--baseline", str(tmp_path / "baseline.json"),
                          "--comment", str(comment), "--json-out", str(outcome)])
    assert code == 1
    printed = capsys.readouterr().out
    assert "retrieval recall@5 dropped from 90.0% to 72.5%" in printed and "FAIL" in printed
    md = comment.read_text(encoding="utf-8")
    assert md.startswith("<!-- rankgate:gate -->")
    data = json.loads(outcome.read_text(encoding="utf-8"))
    assert data["exit_code"] == 1 and data["baseline"]["kind"] == "summary"
    text = step.read_text(encoding="utf-8")
    assert text.startswith("earlier step\n") and text.count("<!-- rankgate:gate -->") == 2

    again = tmp_path / "again.json"  # same inputs and seed: byte-identical outcome, intervals included
    main(common + ["--candidate", str(DATA / "cand.jsonl"), "--baseline", str(tmp_path / "baseline.json"),
                   "--json-out", str(again), "--no-step-summary"])
    capsys.readouterr()
    assert again.read_bytes() == outcome.read_bytes()

    bad = tmp_path / "bad.yaml"
    bad.write_text("gates:\n  - metric: recall@5\n    treshold: 0.8\n", encoding="utf-8")
    assert main(["gate", "--config", str(bad), "--gold", str(DATA / "gold.jsonl"), "--candidate", str(DATA / "cand.jsonl")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"rankgate gate: error: {bad}:3: field 'gates[0].treshold' is not a known key "
                   "(did you mean 'threshold'?)")
    assert not (tmp_path / "out" / "never.md").exists()


def test_gate_scores_through_one_scorer_with_mappings_already_read(tmp_path):
    """rankgate.gate's ``columns`` and ``doc_map`` are mappings: the gate's Scorer holds them beside its Scoring
    (made from the ship criteria's evaluate options), and the outcome is the one of scoring each run directly."""
    from dataclasses import replace

    from rankgate.flows.gate import scorer_of
    from rankgate.io import load_gold
    from rankgate.io.source import sha256_file
    from rankgate.scoring.engine import evaluate

    (tmp_path / "g.csv").write_text("qid,doc,rel\nq1,d1#a,1\nq2,d2#b,1\nq3,d3#a,1\n", encoding="utf-8")
    (tmp_path / "r.csv").write_text("qid,doc,s\nq1,d1#a,0.9\nq1,d2#a,0.5\nq2,d9#b,0.9\nq2,d2#c,0.4\nq3,d3#z,0.3\n",
                                    encoding="utf-8")
    (tmp_path / "b.csv").write_text("qid,doc,s\nq1,d2#a,0.9\nq1,d1#a,0.5\nq2,d2#b,0.9\nq3,d3#a,0.3\n", encoding="utf-8")
    ship = cfg("evaluate: {k: 3, ties: id}\ngates:\n  - {name: r, metric: recall, threshold: 0.1, regression_max: 0.5}\n")
    columns = {"query_id": "qid", "chunk_id": "doc", "grade": "rel", "score": "s"}
    doc_map = {"d1#a": "D1", "d2#a": "D2", "d2#b": "D2", "d2#c": "D2", "d3#a": "D3", "d3#z": "D3", "d9#b": "D9"}
    gold, run, base = (str(tmp_path / name) for name in ("g.csv", "r.csv", "b.csv"))
    outcome = gate(ship, gold, run, base, columns=columns, doc_map=doc_map, level="doc")

    scorer = scorer_of(ship, {"columns": columns, "doc_map": doc_map, "level": "doc"})
    s = scorer.scoring
    assert (s.k, s.ties, s.level, s.columns, s.doc_map, scorer.doc_map, scorer.column_map()) == (
        3, "id", "doc", None, None, doc_map, columns)
    loaded = load_gold(gold, columns=columns)

    def scored(path: str) -> EvaluationResult:
        res = evaluate(loaded, path, list(ship.metrics), k=3, ties="id", level="doc", doc_map=doc_map, columns=columns)
        return replace(res, inputs={**res.inputs, "gold": {"path": gold, "sha256": sha256_file(gold)}})

    assert outcome.to_json() == decide(ship, scored(run), scored(base)).to_json()
    assert outcome.summary["metrics"]["recall"]["mean"] == 1.0  # documents, not chunks: d3#z is D3
