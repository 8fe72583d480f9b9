"""The PR comment: wording, golden output, escaping, and the size limit."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import numpy as np

from rankgate.gating.decide import decide, parse_config
from rankgate.render.comment import MARKER, MAX_BYTES, comment_markdown, gate_sentences
from rankgate.render.compare import comparison_markdown
from rankgate.model.results import EvaluationResult

GOLDEN = Path(__file__).parent / "golden"


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("RANKGATE_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text, f"{name} differs; rerun with RANKGATE_UPDATE_GOLDEN=1 and review the diff"


def check(**over):
    base = {"kind": "regression", "status": "fail", "metric": "recall@5", "field": None, "segment": None, "n": 200,
            "value": -0.06, "limit": 0.03, "mean": 0.81, "ci_low": -0.081, "ci_high": -0.039, "baseline": 0.87, "note": ""}
    return {**base, **over}


def outcome(gates, kind="run"):
    return {
        "passed": not any(g["status"] == "fail" for g in gates),
        "exit_code": 1 if any(g["status"] == "fail" for g in gates) else 0,
        "baseline": {"kind": kind, "label": "main"},
        "candidate": "feature-branch",
        "statistics": {"seed": 0, "resamples": 2000, "confidence": 0.95},
        "gates": gates,
        "metrics": {"recall@5": {"mean": 0.81, "n": 200, "ci_low": 0.755, "ci_high": 0.865}},
        "segments": {},
        "segments_moved": [],
        "queries": {"kind": "regressed", "items": []},
        "notes": [],
        "counts": {"evaluated": 210, "missing_from_run": [], "no_answer": 10, "not_in_gold": 0},
    }


def gate_dict(checks, status="fail", **over):
    g = {"name": "retrieval_recall_at_5", "metric": "recall@5", "title": "retrieval recall@5", "severity": "error",
         "on": "mean", "threshold": None, "max": None, "regression_max": 0.03, "segments": [], "status": status,
         "checks": checks}
    return {**g, **over}


def test_the_headline_sentence_a_reviewer_reads():
    o = outcome([gate_dict([check()])])
    assert gate_sentences(o) == [
        "❌ retrieval recall@5 dropped from 87.0% to 81.0% (−6.0 pp, 95% CI −8.1 to −3.9 pp; limit −3 pp)."]
    md = comment_markdown(o)
    assert md.startswith(MARKER + "\n## ❌ Retrieval gate failed: 1 of 1 blocking gates\n")
    assert "excludes zero" in md  # the regression rule is stated in the comment


def test_sentences_for_floors_ceilings_warnings_segments_and_noise():
    floor = gate_dict([check(kind="threshold", value=0.81, limit=0.85, ci_low=0.755, ci_high=0.865)],
                      threshold=0.85, regression_max=None)
    ci_floor = gate_dict([check(kind="threshold", value=0.755, limit=0.85, ci_low=0.755, ci_high=0.865)],
                         threshold=0.85, regression_max=None, on="ci_lower", name="ci", title="answers in the top 5")
    ceiling = gate_dict([check(kind="max", metric="forbidden@5", value=0.02, mean=0.02, limit=0.0, ci_low=0.005, ci_high=0.04)],
                        metric="forbidden@5", title="retrieval forbidden@5", max=0.0, regression_max=None,
                        severity="warning", status="warn", name="forbidden")
    segment = gate_dict([check(status="pass", value=0.01, ci_low=-0.01, ci_high=0.03),
                         check(field="tags.lang", segment="de", value=-0.125, mean=0.75, baseline=0.875,
                               ci_low=-0.2, ci_high=-0.05)], name="seg")
    noise = gate_dict([check(status="pass", value=-0.05, mean=0.82, ci_low=-0.1, ci_high=0.01,
                             note="beyond the limit but within noise: the 95% CI of the change includes 0")],
                      status="pass", name="noisy", title="retrieval hit@5", metric="hit@5")
    s = gate_sentences(outcome([floor, ci_floor, ceiling, segment, noise]), markdown=False)
    assert s == [
        "❌ retrieval recall@5 (gate retrieval_recall_at_5) is 81.0% (95% CI 75.5% to 86.5%), below the 85% floor.",
        "❌ answers in the top 5: the lower end of its 95% CI is 75.5%, below the 85% floor (mean 81.0%, 95% CI 75.5% to 86.5%).",
        "❌ retrieval recall@5 (gate seg) for lang = de dropped from 87.5% to 75.0% (−12.5 pp, 95% CI −20.0 to −5.0 pp; limit −3 pp).",
        "⚠️ retrieval forbidden@5 is 2.0% (95% CI 0.5% to 4.0%), above the 0% ceiling. (warning: does not block)",
        ("ℹ️ retrieval hit@5 dropped from 87.0% to 82.0% (−5.0 pp, 95% CI −10.0 to +1.0 pp; limit −3 pp): beyond the "
         "limit, but the 95% CI of the change includes 0, so it is within noise and does not fail."),
    ]


def test_summary_baselines_say_no_paired_interval_was_used():
    c = check(ci_low=None, ci_high=None, note="baseline summary: change in means, no paired test")
    md = comment_markdown(outcome([gate_dict([c])], kind="summary"))
    assert "(−6.0 pp; limit −3 pp; compared with the baseline's mean)" in md
    assert "there is no paired confidence interval" in md


def test_user_text_is_escaped():
    o = outcome([gate_dict([check()], name="a|b <script>", title="recall | <b>top</b>")])
    o["queries"]["items"] = [{"query_id": "q|1 <img src=x>", "metric": "recall@5", "baseline": 1.0, "candidate": 0.0,
                              "delta": -1.0, "baseline_rank": 1, "candidate_rank": 0, "note": ""}]
    md = comment_markdown(o)
    assert "<script>" not in md and "<img" not in md and "<b>" not in md
    assert "a\\|b &lt;script&gt;" in md and "q\\|1 &lt;img src=x&gt;" in md


def test_the_comment_stays_under_the_size_limit_whatever_the_input():
    checks = [check(field="intent", segment=f"segment-{i:05d}-" + "x" * 60) for i in range(3000)]
    gates = [gate_dict(copy.deepcopy(checks[:300]), name=f"gate_{j:04d}" + "y" * 50) for j in range(200)]
    o = outcome(gates)
    o["segments_moved"] = [{"metric": "recall@5", "field": "intent", "segment": f"s{i}", "n": 5, "baseline": 0.9,
                            "current": 0.5, "delta": -0.4, "ci_low": None, "ci_high": None, "verdict": "worse"}
                           for i in range(5000)]
    md = comment_markdown(o)
    assert len(md.encode("utf-8")) <= MAX_BYTES
    assert md.startswith(MARKER)
    assert "more rows not shown" in md and "more (see the table" in md


def make_results():
    rng = np.random.default_rng(42)
    n = 120
    lang = tuple("de" if i % 4 == 0 else "en" for i in range(n))
    base = (rng.random(n) < 0.88).astype(float)
    cand = base.copy()
    cand[[i for i in range(n) if lang[i] == "de"][:8]] = 0.0
    ranks_b = np.where(base > 0, 1 + (np.arange(n) % 3), 0)
    ranks_c = np.where(cand > 0, ranks_b, 0)
    ids = tuple(f"q{i:03d}" for i in range(n))
    b = EvaluationResult(ids, ("recall@5",), {"recall@5": base}, {"tags.lang": lang}, ranks_b,
                         inputs={"run": {"path": "runs/main.jsonl"}})
    c = EvaluationResult(ids, ("recall@5",), {"recall@5": cand}, {"tags.lang": lang}, ranks_c,
                         missing_from_run=("q004",), inputs={"run": {"path": "runs/pr-1234.jsonl"}})
    return b, c


CONFIG = """\
gates:
  - name: retrieval_recall_at_5
    metric: recall@5
    threshold: 0.80
    regression_max: 0.03
    segments: [lang]
  - name: recall_floor_ci
    metric: recall@5
    threshold: 0.70
    on: ci_lower
    severity: warning
defaults: {seed: 0, resamples: 1000}
"""


def test_golden_comment_against_a_baseline_run():
    base, cand = make_results()
    out = decide(parse_config(CONFIG, path="ship-criteria.yaml"), cand, base)
    md = comment_markdown(out)
    check_golden("gate_comment.md", md)
    assert comment_markdown(json.loads(out.to_json())) == md  # re-rendered from the --json file: same text


# -- number formats, tables, hostile text ---------------------------------------------------------
def test_a_value_near_its_limit_shows_enough_digits_to_see_the_verdict():
    score = check(metric="ndcg@10", value=-0.0103, limit=0.01, mean=0.7, baseline=0.7103, ci_low=-0.02, ci_high=-0.001)
    o = outcome([gate_dict([score], metric="ndcg@10", title="retrieval ndcg@10", regression_max=0.01)])
    (sentence,) = gate_sentences(o)
    assert "(−0.0103, 95% CI −0.020 to −0.001; limit −0.01)" in sentence
    assert "| −0.0103\u00a0(−0.020\u00a0to\u00a0−0.001) |" in comment_markdown(o)
    floor = check(kind="threshold", value=0.8496, limit=0.85, mean=0.8496, ci_low=0.8, ci_high=0.9, baseline=None)
    o = outcome([gate_dict([floor], threshold=0.85, regression_max=None)])
    o["metrics"]["recall@5"]["mean"] = 0.8496
    assert "is 84.96% (95% CI 80.0% to 90.0%), below the 85% floor" in gate_sentences(o)[0]
    assert "| 84.96%<br>(" in comment_markdown(o)
    far = check(kind="threshold", value=0.7, limit=0.85, mean=0.7, ci_low=0.6, ci_high=0.8, baseline=None)
    assert "is 70.0% (" in gate_sentences(outcome([gate_dict([far], threshold=0.85, regression_max=None)]))[0]


def test_tables_name_every_column_and_repeat_limits_on_segment_rows():
    base, cand = make_results()
    md = comment_markdown(decide(parse_config(CONFIG, path="ship-criteria.yaml"), cand, base))
    table_heads = [line for line in md.splitlines() if line.startswith("| ") and "---" not in line and "|:" not in line]
    assert not any(line.rstrip().endswith("| |") for line in md.splitlines() if line.startswith(("| Query", "| Segment")))
    de_row = next(line for line in table_heads if "| ↳ lang = de |" in line)
    assert "≥\u00a080%;\u00a0drop\u00a0≤\u00a03\u00a0pp" in de_row


def test_query_tables_show_the_query_text_shortened():
    o = outcome([gate_dict([check()])])
    o["queries"]["items"] = [{"query_id": "q7", "query": "How do I rotate the signing key of a tenant whose " + "x" * 200,
                              "metric": "recall@5", "baseline": 1.0, "candidate": 0.0, "delta": -1.0,
                              "baseline_rank": 1, "candidate_rank": 0, "note": ""}]
    md = comment_markdown(o)
    row = next(line for line in md.splitlines() if line.startswith("| q7"))
    assert row.startswith("| q7: How do I rotate the signing key of a tenant whose xxxxxxxxx… |") and len(row) < 140
    assert "| Query | Baseline | Candidate | First relevant rank (before → after) |\n" in md  # no empty note column


HOSTILE = ["@octocat", "@acme/security-team", "hi @alice and @bob", "x\u202egnp.exe", "a\u2066b\u2069c", "\u200fq"]


def test_mentions_and_bidi_controls_from_user_text_are_neutralised():
    o = outcome([gate_dict([check(), check(field="tags.owner", segment=HOSTILE[0]), check(field="intent", segment=HOSTILE[1])],
                           name=HOSTILE[2], title=HOSTILE[3] + " " + HOSTILE[4])])
    o["candidate"], o["baseline"]["label"] = "@carol", HOSTILE[5]
    o["notes"] = ["owned by @dave"]
    o["queries"]["items"] = [{"query_id": "@erin", "query": "ask @frank \u202eabc", "metric": "recall@5", "baseline": 1.0,
                              "candidate": 0.0, "delta": -1.0, "baseline_rank": 1, "candidate_rank": 0,
                              "note": "see @grace"}]
    o["segments_moved"] = [{"metric": "recall@5", "field": "tags.team", "segment": "@org/heidi", "n": 5, "baseline": 0.9,
                            "current": 0.5, "delta": -0.4, "ci_low": None, "ci_high": None, "verdict": "worse"}]
    o["counts"]["missing_from_run"] = ["@ivan"]
    md = comment_markdown(o)
    import re

    assert not re.search(r"(?<![A-Za-z0-9])@[A-Za-z0-9]", md), re.findall(r".{10}@[A-Za-z0-9].{10}", md)
    assert not re.search("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]", md)
    for name in ("octocat", "acme/security-team", "alice", "carol", "dave", "erin", "frank", "grace", "org/heidi", "ivan"):
        assert f"@\u200d{name}" in md  # still readable, no longer a mention
    assert "recall@5" in md  # an @ inside a word is not a mention and stays as it is
    plain = gate_sentences(o, markdown=False)
    assert not re.search("[\u202a-\u202e\u2066-\u2069]", " ".join(plain))


def test_other_markdown_renderers_neutralise_mentions_too():
    import re

    from rankgate.stats.paired import compare

    ids = ("@alice", "q2", "q3", "q4")
    lang = ("@org/team", "@org/team", "en", "en")
    b = EvaluationResult(ids, ("recall@5",), {"recall@5": np.array([1.0, 1.0, 1.0, 0.0])}, {"tags.lang": lang},
                         np.array([1, 1, 1, 0]), inputs={"run": {"path": "@bob.jsonl"}})
    c = EvaluationResult(ids, ("recall@5",), {"recall@5": np.array([0.0, 1.0, 1.0, 1.0])}, {"tags.lang": lang},
                         np.array([0, 1, 1, 1]), inputs={"run": {"path": "@carol\u202e.jsonl"}})
    md = comparison_markdown(compare(b, c, by="lang", resamples=100, n_permutations=100))
    assert "alice" in md and "org/team" in md and "bob" in md
    assert not re.search(r"(?<![A-Za-z0-9])@[A-Za-z0-9]", md) and "\u202e" not in md


def test_an_interval_bound_near_zero_shows_its_side_of_zero():
    c = check(metric="ndcg@10", value=-0.106, limit=0.05, mean=0.7, baseline=0.806, ci_low=-0.208, ci_high=-0.0003)
    o = outcome([gate_dict([c], metric="ndcg@10", title="retrieval ndcg@10", regression_max=0.05)])
    assert "95% CI −0.208 to −0.0003; limit −0.05" in gate_sentences(o)[0]
    share = check(ci_low=-0.081, ci_high=-0.00004)
    assert "95% CI −8.1 to −0.004 pp" in gate_sentences(outcome([gate_dict([share])]))[0]
    exact = check(ci_low=-0.081, ci_high=0.0)
    assert "95% CI −8.1 to 0.0 pp" in gate_sentences(outcome([gate_dict([exact])]))[0]
