"""Stages: the raw candidates (``raw_topk``) as a ranking of their own in evaluate, compare, the gate and the
report's stage table, on constructed runs whose numbers are known by hand."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from rankgate.cli.main import main
from rankgate.errors import InputError
from rankgate.flows.compare import CompareRequest, run_comparison
from rankgate.flows.evaluate import EvaluateRequest, run_evaluation
from rankgate.flows.gate import gate
from rankgate.gating.decide import parse_config
from rankgate.metrics.rankings import ranked_metrics, ranked_name, split_ranked

from .helpers import write_jsonl


def items(*ids: str) -> list[dict]:
    return [{"chunk_id": c, "score": float(10 - i)} for i, c in enumerate(ids)]


def gold_records(n: int) -> list[dict]:
    return [{"query_id": f"q{i}", "query": f"question {i}", "relevant_chunks": [{"chunk_id": f"q{i}#r", "grade": 1}]}
            for i in range(1, n + 1)]


# Four queries, one relevant chunk each ("q<i>#r"), known by hand:
#            final topk        recall@2  rr     raw_topk            recall@2  rr
#   q1       r x y             1         1      x r                 1         1/2
#   q2       x r               1         1/2    r                   1         1
#   q3       x y               0         0      x y r               0         1/3
#   q4       r                 1         1      r                   1         1
#   means                      0.75      0.625                      0.75      17/24
HAND = [
    ({"topk": items("q1#r", "x", "y"), "raw_topk": items("x", "q1#r")}),
    ({"topk": items("x", "q2#r"), "raw_topk": items("q2#r")}),
    ({"topk": items("x", "y"), "raw_topk": items("x", "y", "q3#r")}),
    ({"topk": items("q4#r"), "raw_topk": items("q4#r")}),
]


@pytest.fixture()
def hand(tmp_path):
    gold = write_jsonl(tmp_path / "gold.jsonl", gold_records(4))
    run = write_jsonl(tmp_path / "run.jsonl", [{"query_id": f"q{i}", **r} for i, r in enumerate(HAND, 1)])
    return gold, run


def test_row_names_are_one_rule():
    assert ranked_name("recall@50", "raw") == "recall@50 (raw)" and ranked_name("ndcg@10") == "ndcg@10"
    assert split_ranked("recall@50 (raw)") == ("recall@50", "raw") and split_ranked("mrr") == ("mrr", "final")
    assert ranked_metrics(["recall@50", "ndcg@10"], "both") == ["recall@50", "ndcg@10", "recall@50 (raw)", "ndcg@10 (raw)"]
    assert ranked_metrics(["recall@50"], "raw") == ["recall@50 (raw)"]


def test_evaluate_both_gives_the_numbers_known_by_hand(hand):
    gold, run = hand
    ev = run_evaluation(EvaluateRequest(gold, run, metrics="recall@2,mrr", ranking="both",
                                        statistics=_stats(200)))
    r = ev.result
    assert r.metric_names == ("recall@2", "mrr", "recall@2 (raw)", "mrr (raw)")
    assert r.means["recall@2"] == pytest.approx(0.75) and r.means["mrr"] == pytest.approx(0.625)
    assert r.means["recall@2 (raw)"] == pytest.approx(0.75) and r.means["mrr (raw)"] == pytest.approx(17 / 24)
    assert np.allclose(r["mrr (raw)"], [0.5, 1.0, 1 / 3, 1.0])
    assert set(ev.cis) == set(r.metric_names)  # an interval for the raw rows too
    assert "raw_topk" in r.definitions["mrr (raw)"]


def test_evaluate_raw_alone_names_every_row_raw(hand):
    gold, run = hand
    r = run_evaluation(EvaluateRequest(gold, run, metrics="recall@2,mrr", ranking="raw", statistics=_stats(0))).result
    assert r.metric_names == ("recall@2 (raw)", "mrr (raw)")
    assert r.means["mrr (raw)"] == pytest.approx(17 / 24)
    assert r.inputs["run"]["path"] == str(run) and r.inputs["run"].get("sha256")  # the run file, hashed as usual


def test_cli_evaluate_both_names_the_raw_rows_in_every_output(hand, tmp_path, capsys):
    gold, run = hand
    out = tmp_path / "out"
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "--metrics", "recall@2,mrr", "--ranking", "both",
                 "--resamples", "100", "--out", str(out)]) == 0
    term = capsys.readouterr().out
    assert "recall@2 (raw)" in term and "mrr (raw)" in term
    with open(out / "metrics.csv", newline="") as fh:
        header = next(csv.reader(fh))
    assert header[:5] == ["query_id", "recall@2", "mrr", "recall@2 (raw)", "mrr (raw)"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["metrics"]["mrr (raw)"]["mean"] == pytest.approx(17 / 24)
    assert summary["metrics"]["mrr (raw)"]["ci_low"] is not None
    assert summary["options"]["ranking"] == {"field": "raw_topk", "queries_with_raw": 4, "queries": 4}
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "--metrics", "recall@2,mrr", "--ranking", "both",
                 "--resamples", "0", "--markdown"]) == 0
    assert "mrr (raw)" in capsys.readouterr().out


def test_no_raw_lists_is_an_input_error_naming_the_file_and_field(tmp_path, capsys):
    gold = write_jsonl(tmp_path / "gold.jsonl", gold_records(2))
    run = write_jsonl(tmp_path / "final-only.jsonl", [{"query_id": "q1", "topk": items("q1#r")},
                                                      {"query_id": "q2", "topk": items("x")}])
    with pytest.raises(InputError, match="raw_topk") as err:
        run_evaluation(EvaluateRequest(gold, run, metrics="recall@2", ranking="raw", statistics=_stats(0)))
    assert "final-only.jsonl" in str(err.value)
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "--ranking", "both"]) == 2
    said = capsys.readouterr().err
    assert "final-only.jsonl" in said and "add 'raw_topk'" in said
    # the final ranking alone never asks for raw lists
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "--resamples", "0"]) == 0


def test_some_records_without_a_raw_list_are_counted_and_left_out(tmp_path):
    gold = write_jsonl(tmp_path / "gold.jsonl", gold_records(4))
    recs = [{"query_id": f"q{i}", **r} for i, r in enumerate(HAND, 1)]
    del recs[3]["raw_topk"]  # q4 logs no raw list
    run = write_jsonl(tmp_path / "run.jsonl", recs)
    said: list[str] = []
    r = run_evaluation(EvaluateRequest(gold, run, metrics="mrr", ranking="both", statistics=_stats(0)),
                       on_warning=said.append).result
    assert any("raw_topk on 3 of 4 records" in line for line in said)
    assert r.summary("mrr (raw)").n == 3 and math_isnan(r["mrr (raw)"][3])
    assert r.means["mrr (raw)"] == pytest.approx((0.5 + 1.0 + 1 / 3) / 3)
    assert r.summary("mrr").n == 4  # the final rows keep every query


def math_isnan(x: float) -> bool:
    return bool(np.isnan(x))


def _stats(resamples: int):
    from rankgate.stats.options import Statistics

    return Statistics(seed=0, resamples=resamples)


def test_compare_both_pairs_the_raw_rows_in_the_headline_family(hand, tmp_path):
    gold, run = hand
    # the candidate's raw candidates lose q2's relevant chunk; its final lists are the same
    recs = [{"query_id": f"q{i}", **r} for i, r in enumerate(HAND, 1)]
    recs[1] = {**recs[1], "raw_topk": items("x", "y", "z")}
    cand = write_jsonl(tmp_path / "cand.jsonl", recs)
    out = run_comparison(CompareRequest((run, cand), gold, metrics="recall@2,mrr", ranking="both",
                                        statistics=_stats(200), permutations=200))
    cmp = out.comparison
    row = cmp.row("mrr (raw)")
    assert row is not None and row.delta == pytest.approx(-1.0 / 4) and row.n == 4
    assert cmp.row("mrr").delta == 0.0
    assert row.family == 4  # Holm across the four headline rows, raw ones among them
    assert dict(cmp.holm_families) == {None: 4}


def test_cli_compare_both(hand, tmp_path, capsys):
    gold, run = hand
    again = tmp_path / "again.jsonl"
    again.write_bytes(run.read_bytes())
    assert main(["compare", "--gold", str(gold), str(run), str(again), "--metrics", "recall@2,mrr", "--ranking", "both",
                 "--resamples", "100", "--permutations", "100", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert "mrr (raw)" in json.dumps(data)
    assert main(["compare", "--gold", str(gold), str(run), str(run), "--ranking", "raw", "--fuse", "rrf"]) == 2


# -- gates --------------------------------------------------------------------------------------------------
def stage_runs(tmp_path, n: int, *, raw_hit, final_hit, name: str):
    """``n`` queries; each query's final list has its relevant chunk at rank 1 when ``final_hit(i)``, its raw list
    (40 candidates) anywhere in the top 40 when ``raw_hit(i)``."""
    def ranked(ids: list[str]) -> list[dict]:
        return [{"chunk_id": c, "score": 100.0 - j} for j, c in enumerate(ids)]

    recs = []
    for i in range(1, n + 1):
        filler = [f"f{i}-{j}" for j in range(40)]
        final = [f"q{i}#r", *filler[:9]] if final_hit(i) else filler[:10]
        raw = filler[:25] + [f"q{i}#r"] + filler[25:39] if raw_hit(i) else filler
        recs.append({"query_id": f"q{i}", "topk": ranked(final), "raw_topk": ranked(raw)})
    return write_jsonl(tmp_path / f"{name}.jsonl", recs)


BOTH = """\
gates:
  - metric: recall@40
    ranking: raw
    threshold: 0.7
    regression_max: 0.05
  - metric: ndcg@10
    threshold: 0.5
    regression_max: 0.05
defaults: {seed: 0, resamples: 500}
"""


@pytest.fixture()
def stage_gold(tmp_path):
    return write_jsonl(tmp_path / "gold.jsonl", gold_records(200))


def test_raw_gate_fails_on_a_clear_regression_of_the_raw_candidates(tmp_path, stage_gold):
    base = stage_runs(tmp_path, 200, raw_hit=lambda i: i % 10 != 0, final_hit=lambda i: i % 5 != 0, name="base")
    # the candidate's retriever loses a quarter of the relevant chunks before reranking; the final lists stay
    cand = stage_runs(tmp_path, 200, raw_hit=lambda i: i % 4 != 0 and i % 10 != 0, final_hit=lambda i: i % 5 != 0,
                      name="cand")
    out = gate(parse_config(BOTH, path="ship.yaml"), stage_gold, cand, base)
    by_name = {r.gate.name: r for r in out.results}
    raw = by_name["recall@40 (raw)"]
    assert raw.gate.ranking == "raw" and raw.status == "fail" and not out.passed and out.exit_code == 1
    assert by_name["ndcg@10"].status == "pass"
    data = out.to_dict()
    (raw_json,) = [g for g in data["gates"] if g["name"] == "recall@40 (raw)"]
    assert raw_json["ranking"] == "raw" and raw_json["metric"] == "recall@40 (raw)"
    assert all("ranking" not in g for g in data["gates"] if g["name"] == "ndcg@10")


def test_raw_gate_passes_on_noise(tmp_path, stage_gold):
    base = stage_runs(tmp_path, 200, raw_hit=lambda i: i % 10 != 0, final_hit=lambda i: i % 5 != 0, name="base")
    # queries trade places: one raw hit fewer in 200 (−0.5 pp, within the 5 pp limit: noise, not a regression)
    cand = stage_runs(tmp_path, 200, raw_hit=lambda i: (i % 10 != 0 or i == 10) and i not in (11, 12),
                      final_hit=lambda i: i % 5 != 0, name="cand")
    out = gate(parse_config(BOTH, path="ship.yaml"), stage_gold, cand, base)
    assert out.passed and {r.gate.name: r.status for r in out.results} == {"recall@40 (raw)": "pass", "ndcg@10": "pass"}


def test_raw_and_final_gates_together_each_read_their_ranking(tmp_path, stage_gold):
    # good raw candidates, a reranker that buries them: the raw gate passes, the final nDCG gate fails
    run = stage_runs(tmp_path, 200, raw_hit=lambda i: True, final_hit=lambda i: i % 3 == 0, name="run")
    out = gate(parse_config(BOTH, path="ship.yaml"), stage_gold, run)
    status = {r.gate.name: r.status for r in out.results}
    assert status == {"recall@40 (raw)": "pass", "ndcg@10": "fail"}
    (raw_check,) = [c for r in out.results if r.gate.ranking == "raw" for c in r.checks if c.kind == "threshold"]
    assert raw_check.value == pytest.approx(1.0) and raw_check.metric == "recall@40 (raw)"


def test_raw_gate_against_a_summary_without_raw_values_says_what_to_do(tmp_path, stage_gold):
    base = stage_runs(tmp_path, 200, raw_hit=lambda i: True, final_hit=lambda i: True, name="base")
    out_dir = tmp_path / "base-summary"
    assert main(["evaluate", "--gold", str(stage_gold), "--run", str(base), "--metrics", "recall@40,ndcg@10",
                 "--resamples", "0", "--out", str(out_dir)]) == 0
    out = gate(parse_config(BOTH, path="ship.yaml"), stage_gold, base, str(out_dir / "summary.json"))
    assert any("--ranking both" in n and "recall@40 (raw)" in n for n in out.notes)
    raw = next(r for r in out.results if r.gate.ranking == "raw")
    assert any(c.status == "skipped" for c in raw.checks)
    # a summary written with --ranking both is a baseline for the raw gate
    both_dir = tmp_path / "both-summary"
    assert main(["evaluate", "--gold", str(stage_gold), "--run", str(base), "--metrics", "recall@40,ndcg@10",
                 "--ranking", "both", "--resamples", "0", "--out", str(both_dir)]) == 0
    out = gate(parse_config(BOTH, path="ship.yaml"), stage_gold, base, str(both_dir / "summary.json"))
    raw = next(r for r in out.results if r.gate.ranking == "raw")
    assert [c.status for c in raw.checks] == ["pass", "pass"] and out.passed


def test_raw_gate_on_a_run_without_raw_lists_names_the_file(tmp_path, stage_gold):
    run = write_jsonl(tmp_path / "plain.jsonl", [{"query_id": "q1", "topk": items("q1#r")}])
    with pytest.raises(InputError, match="plain.jsonl.*raw_topk"):
        gate(parse_config(BOTH, path="ship.yaml"), stage_gold, run)


def test_ranking_key_is_checked_with_file_line_and_choices():
    from rankgate.errors import ConfigError

    with pytest.raises(ConfigError, match=r"ship.yaml:3: .*ranking.*final\|raw"):
        parse_config("gates:\n  - metric: recall@5\n    ranking: rerank\n    threshold: 0.5\n", path="ship.yaml")
    cfg = parse_config("gates:\n  - metric: recall@5\n    ranking: raw\n    threshold: 0.5\n"
                       "  - metric: recall@5\n    threshold: 0.5\n", path="ship.yaml")
    assert [g.name for g in cfg.gates] == ["recall@5 (raw)", "recall@5"]  # two gates, each its own default name
    assert cfg.gates[0].title == "retrieval recall@5 (raw)"


# -- the report's stage table -------------------------------------------------------------------------------
def test_report_stage_table_has_paired_intervals_and_verdicts(tmp_path, stage_gold):
    from rankgate.flows.report import ReportRequest, run_report
    from rankgate.render.build import assemble
    from rankgate.render.html import render_html

    # raw candidates hold every relevant chunk; the final list keeps it at rank 1 in 90% of queries
    run = stage_runs(tmp_path, 200, raw_hit=lambda i: True, final_hit=lambda i: i % 10 != 0, name="run")
    ev = run_report(ReportRequest(stage_gold, run, statistics=_stats(300)))
    st = assemble(ev).stages
    assert st is not None and st.queries == 200
    changes = {m: (low, high, word) for m, low, high, word in st.changes}
    assert set(changes) == {m for m, _, _ in st.rows}
    low, high, word = changes["recall@40"]
    assert high < 0 and word == "worse"  # final − raw: the final list (10 deep) misses what the raw list had
    low, high, word = changes["mrr@40"]
    assert low <= high and word  # every row has its interval and verdict
    html = render_html(assemble(ev))
    stages = html[html.index('id="stages"'):html.index("</section>", html.index('id="stages"'))]
    assert "change 95% CI" in stages and "worse" in stages


def test_the_python_api_takes_the_ranking(hand):
    """rankgate.evaluate / rankgate.compare take ranking= as the command line takes --ranking: the same rows,
    means and intervals."""
    import rankgate

    gold, run = hand
    got = rankgate.evaluate(str(gold), str(run), metrics=["recall@2", "mrr"], ranking="both", resamples=200)
    flow = run_evaluation(EvaluateRequest(gold, run, metrics="recall@2,mrr", ranking="both", statistics=_stats(200)))
    assert got.metric_names == flow.result.metric_names == ("recall@2", "mrr", "recall@2 (raw)", "mrr (raw)")
    assert got.means["mrr (raw)"] == pytest.approx(17 / 24)
    assert got.intervals == flow.cis
    raw = rankgate.evaluate(str(gold), str(run), metrics="mrr", ranking="raw")
    assert raw.metric_names == ("mrr (raw)",)
    cmp = rankgate.compare(str(gold), str(run), str(run), metrics="mrr", ranking="both", resamples=200,
                           permutations=200)
    assert {r.metric for r in cmp.rows} == {"mrr", "mrr (raw)"}


def test_a_reranked_retrieve_on_the_demo_data_is_scored_stage_by_stage(tmp_path, capsys):
    """rankgate retrieve with a reranker keeps the first stage's list as raw_topk: on the demo corpus and gold
    set, evaluate --ranking both scores both stages (the raw rows are those of the first stage's list read as a
    run of its own), and a gate holds the raw recall@50 and the final nDCG@10 together."""
    from pathlib import Path

    data = Path(__file__).resolve().parents[1] / "src" / "rankgate" / "demo" / "data"
    gold, run = data / "gold.jsonl", tmp_path / "reranked.jsonl"
    assert main(["retrieve", "--corpus", str(data / "corpus.jsonl"), "--gold", str(gold), "-o", str(run),
                 "--retriever", "bm25-english", "--depth", "50", "--reranker", "bm25", "--rerank-depth", "50",
                 "--no-latency"]) == 0
    records = [json.loads(line) for line in run.read_text(encoding="utf-8").splitlines()]
    first = next(r for r in records if len(r["topk"]) > 5)
    raw_ids = [h["chunk_id"] for h in first["raw_topk"]]
    assert sorted(raw_ids) == sorted(h["chunk_id"] for h in first["topk"])  # (all 50 reranked: the same set)
    assert [h["rank"] for h in first["raw_topk"]] == list(range(1, len(raw_ids) + 1))
    # the raw rows are the first stage's list scored as a run of its own
    first_stage = tmp_path / "first_stage.jsonl"
    write_jsonl(first_stage, [{"query_id": r["query_id"], "topk": r["raw_topk"]} for r in records])
    capsys.readouterr()
    assert main(["evaluate", "--gold", str(gold), "--run", str(run), "--ranking", "both", "--metrics",
                 "recall@50,ndcg@10", "--resamples", "0", "--json"]) == 0
    both = {m["metric"] if "metric" in m else name: m for name, m in json.loads(capsys.readouterr().out)["metrics"].items()}
    assert main(["evaluate", "--gold", str(gold), "--run", str(first_stage), "--metrics", "recall@50,ndcg@10",
                 "--resamples", "0", "--json"]) == 0
    alone = json.loads(capsys.readouterr().out)["metrics"]
    assert both["recall@50 (raw)"]["mean"] == alone["recall@50"]["mean"] == both["recall@50"]["mean"]
    assert both["ndcg@10 (raw)"]["mean"] == alone["ndcg@10"]["mean"] != both["ndcg@10"]["mean"]
    config = tmp_path / "ship.yaml"
    config.write_text("gates:\n  - {metric: recall@50, ranking: raw, threshold: 0.85}\n"
                      "  - {metric: ndcg@10, threshold: 0.95}\n", encoding="utf-8")
    assert main(["gate", "--config", str(config), "--gold", str(gold), "--candidate", str(run), "--no-step-summary",
                 "--json"]) == 1
    outcome = json.loads(capsys.readouterr().out)
    status = {g["metric"]: g["status"] for g in outcome["gates"]}
    assert status == {"recall@50 (raw)": "pass", "ndcg@10": "fail"}
