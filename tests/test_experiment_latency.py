"""Latency measured properly: --repeat medians, percentiles with intervals, latency gates on CI bounds."""

from __future__ import annotations

import json
import math
import textwrap

import numpy as np
import pytest

from rankgate.cli.main import main
from rankgate.scoring.engine import evaluate
from rankgate.experiments.latency import decide_latency, latency_summary
from rankgate.gating.config import parse_config
from rankgate.retrieval.api import median_latency
from rankgate.stats.bootstrap import bootstrap_quantile_ci, paired_quantile_change_ci

from .demo_runs import CORPUS, GOLD, write_jsonl
from .conftest import sampled
from .hostile import assert_refused

N = 80


def _gold():
    return [{"query_id": f"q{i:02d}", "relevant_chunks": [f"d{i}"], "tags": {"lang": "de" if i % 4 == 0 else "en"}}
            for i in range(N)]


def _run(ms, rerank=None):
    out = []
    for i, t in enumerate(ms):
        lat = {"retrieve": float(t)} if rerank is None else {"retrieve": float(t), "rerank": float(rerank[i])}
        out.append({"query_id": f"q{i:02d}", "topk": [{"chunk_id": f"d{i}", "score": 1.0}], "latency_ms": lat})
    return out


def _timings(seed, centre, spread=8.0):
    rng = np.random.default_rng(seed)
    return np.round(centre + rng.gamma(2.0, spread / 2.0, N), 3)


BASE = _timings(1, 40.0)
NOISE = _timings(2, 40.0)  # the same system timed again: other draws of the same distribution
SLOWER = BASE + 25.0  # a clear regression: every query 25 ms slower


def _config(text):
    return parse_config(textwrap.dedent(text), path="ship.yaml")


def _result(ms, **kw):
    return evaluate(_gold(), _run(ms, **kw), "recall@1")


def test_quantile_interval_brackets_the_percentile_and_is_seeded():
    x = _timings(3, 50.0)
    lo, hi = bootstrap_quantile_ci(x, 0.9, rng=7, resamples=500)
    assert lo <= np.quantile(x, 0.9) <= hi
    assert (lo, hi) == bootstrap_quantile_ci(x, 0.9, rng=7, resamples=500)
    assert bootstrap_quantile_ci([5.0] * 10, 0.5, rng=0) == (5.0, 5.0)
    lo, hi = paired_quantile_change_ci(BASE, SLOWER, 0.5, rng=0, resamples=500)
    assert lo == pytest.approx(25.0) and hi == pytest.approx(25.0)  # every query moved by the same amount


def test_summary_gives_median_p90_p95_p99_per_stage_and_segment():
    res = _result(BASE, rerank=BASE / 2)
    s = latency_summary(res, by=["lang"], resamples=300)
    stages = {r.stage for r in s.rows}
    assert stages == {"retrieve", "rerank", "total"}
    row = s.get("retrieve", "p90")
    assert row.value == pytest.approx(float(np.quantile(BASE, 0.9))) and row.n == N
    assert row.ci[0] <= row.value <= row.ci[1]
    de = s.get("total", "median", "lang=de")
    assert de.n == N // 4 and de.value == pytest.approx(float(np.median((BASE * 1.5)[::4])))


def test_regression_gate_fails_a_clear_slowdown_and_passes_noise():
    cfg = _config("""
        gates: [{metric: recall@1, threshold: 0}]
        latency:
          - stage: retrieve
            median_ms: 60
            p90_ms: 80
            regression_max_ms: 5
        defaults: {resamples: 500}
    """)
    (lat,) = cfg.latency
    assert lat.ceilings == {"median": 60.0, "p90": 80.0} and lat.on == "ci_lower"
    base = _result(BASE)
    noise = decide_latency(cfg.latency, _result(NOISE), base, resamples=500)[0]
    assert noise.status == "pass", [c for c in noise.checks if c.status != "pass"]
    slow = decide_latency(cfg.latency, _result(SLOWER), base, resamples=500)[0]
    failed = {(c.kind, c.stat) for c in slow.checks if c.status == "fail"}
    assert ("regression", "median") in failed and ("regression", "p90") in failed
    assert ("max", "median") in failed  # 65 ms median, its whole interval over 60


def test_a_ceiling_within_noise_passes_on_ci_lower_and_fails_on_estimate():
    rng = np.random.default_rng(1)
    ms = np.round(rng.normal(61.0, 15.0, N), 3)  # median just above 60, wide spread
    res = _result(ms)
    est = float(np.median(ms))
    assert est > 60
    loose = _config("gates: [{metric: recall@1, threshold: 0}]\nlatency: [{stage: retrieve, median_ms: 60}]")
    strict = _config("gates: [{metric: recall@1, threshold: 0}]\nlatency: [{stage: retrieve, median_ms: 60, on: estimate}]")
    (c,) = decide_latency(loose.latency, res, resamples=500)[0].checks
    assert c.status == "pass" and "within noise" in c.note
    assert decide_latency(strict.latency, res, resamples=500)[0].status == "fail"


def test_gate_cli_fails_on_latency_and_the_comment_shows_it(tmp_path, capsys):
    gold = write_jsonl(tmp_path / "gold.jsonl", _gold())
    base = write_jsonl(tmp_path / "base.jsonl", _run(BASE))
    noise = write_jsonl(tmp_path / "noise.jsonl", _run(NOISE))
    slow = write_jsonl(tmp_path / "slow.jsonl", _run(SLOWER))
    cfg = tmp_path / "ship.yaml"
    cfg.write_text("gates: [{metric: recall@1, threshold: 0.5}]\n"
                   "latency: [{stage: retrieve, regression_max_ms: 5, segments: [lang], min_queries: 10,\n"
                   "            owner: search-infra}]\n"
                   "defaults: {resamples: 300}\n")
    argv = ["gate", "--config", str(cfg), "--gold", str(gold), "--baseline", str(base), "--no-step-summary"]
    assert main([*argv, "--candidate", str(noise)]) == 0
    out = tmp_path / "slow.json"
    comment = tmp_path / "comment.md"
    capsys.readouterr()
    assert main([*argv, "--candidate", str(slow), "--json-out", str(out), "--comment", str(comment)]) == 1
    printed = capsys.readouterr().out
    assert "latency retrieve (median)" in printed and "FAIL" in printed
    outcome = json.loads(out.read_text())
    assert outcome["passed"] is False and outcome["latency"][0]["status"] == "fail"
    segs = {c["segment"] for c in outcome["latency"][0]["checks"] if c["status"] == "fail"}
    assert segs == {None, "lang=de", "lang=en"}
    text = comment.read_text()
    assert "### Latency gates" in text and "Retrieval gate failed: 1 of 2 blocking gates" in text
    # a latency gate takes an owner like every gate kind, and names it where it fails
    assert outcome["latency"][0]["owner"] == "search-infra" and "(owner: search-infra)" in text


def test_median_latency_takes_the_median_of_each_stage():
    passes = [[{"query_id": "q", "topk": [{"chunk_id": "a"}], "latency_ms": {"retrieve": t, "rerank": 2 * t}}]
              for t in (10.0, 30.0, 20.0)]
    (rec,) = median_latency(passes)
    assert rec["latency_ms"] == {"retrieve": 20.0, "rerank": 40.0} and rec["latency_repeats"] == 3


SLOW_RETRIEVER = '''
from rankgate.retrieval.base import run_record

class Ticking:
    """Timings 10, 30, 20 ms on the three passes over the queries."""
    def __init__(self):
        self.passes = 0
    def index(self, chunks):
        self.chunks = list(chunks)
    def search(self, queries, k):
        t = (10.0, 30.0, 20.0)[self.passes % 3]
        self.passes += 1
        return [run_record(q.query_id, "ticking", [(self.chunks[0], 1.0)], index_version="v", k_raw=k, latency_ms=t)
                for q in queries]
'''


def test_retrieve_repeat_3_writes_medians(tmp_path, monkeypatch):
    (tmp_path / "ticking_retriever.py").write_text(SLOW_RETRIEVER)
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "run.jsonl"
    assert main(["retrieve", "--corpus", str(CORPUS), "--gold", str(GOLD), "--retriever", "ticking_retriever:Ticking",
                 "-o", str(out), "--depth", "3"]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["latency_ms"]["retrieve"] for r in records} == {20.0}
    assert {r["latency_repeats"] for r in records} == {3}
    assert main(["retrieve", "--corpus", str(CORPUS), "--gold", str(GOLD), "--retriever", "ticking_retriever:Ticking",
                 "-o", str(out), "--depth", "3", "--repeat", "1"]) == 0
    assert {json.loads(line)["latency_ms"]["retrieve"] for line in out.read_text().splitlines()} == {10.0}


def test_evaluate_on_demo_data_reports_percentiles(tmp_path, capsys):
    from rankgate.retrieval import retrieve, write_run

    run = write_run(retrieve(CORPUS, GOLD, "bm25", k=10, repeat=2), tmp_path / "timed.jsonl")
    capsys.readouterr()
    assert main(["evaluate", "--gold", str(GOLD), "--run", str(run), "--by", "lang", "--json", "--resamples", "200"]) == 0
    lat = json.loads(capsys.readouterr().out)["latency"]
    stats = {(r["stage"], r["stat"], r["segment"]) for r in lat["rows"]}
    assert ("retrieve", "p99", None) in stats and ("retrieve", "median", "lang=de") in stats


def test_bad_values_are_refused(tmp_path, capsys):
    run = write_jsonl(tmp_path / "run.jsonl", _run(BASE))
    assert_refused(["retrieve", "--corpus", CORPUS, "--gold", GOLD, "-o", tmp_path / "x.jsonl", "--repeat", "0"],
                   tmp_path, capsys=capsys, contains=["--repeat"])
    gold = write_jsonl(tmp_path / "gold.jsonl", _gold())
    for body, words in (("latency: [{stage: retrieve, median_ms: -1}]", ["latency[0].median_ms"]),
                        ("latency: [{stage: retrieve, p50_ms: 3}]", ["latency[0].p50_ms"]),
                        ("latency: [{median_ms: 3}]", ["latency[0].stage"]),
                        ("latency: [{stage: retrieve}]", ["checks nothing"]),
                        ("latency: [{stage: retrieve, median_ms: 5, on: mean}]", ["latency[0].on"]),
                        ("latency: [{stage: retrieve, median_ms: 5, segments: [planet]}]", ["planet"])):
        cfg = tmp_path / "ship.yaml"
        cfg.write_text("gates: [{metric: recall@1, threshold: 0}]\n" + body + "\n")
        assert_refused(["gate", "--config", cfg, "--gold", gold, "--candidate", run, "--no-step-summary"], tmp_path,
                       names=[cfg], capsys=capsys, contains=words)


def test_retrieve_with_a_reranker_times_the_rerank_stage(tmp_path):
    out = tmp_path / "run.jsonl"
    assert main(["retrieve", "--corpus", str(CORPUS), "--gold", str(GOLD), "-o", str(out), "--depth", "20",
                 "--reranker", "bm25", "--rerank-depth", "10", "--repeat", "2"]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(set(r["latency_ms"]) == {"retrieve", "rerank"} and r["latency_repeats"] == 2 for r in records)
    hits = next(r for r in records if len(r["topk"]) > 10)["topk"]
    assert [h["rank"] for h in hits] == list(range(1, len(hits) + 1))
    assert all("rerank_score" in h for h in hits[:10]) and not any("rerank_score" in h for h in hits[10:])
    assert not any("score" in h for h in hits)
    scores = [h["rerank_score"] for h in hits[:10]]
    assert scores == sorted(scores, reverse=True)
    res = evaluate(GOLD, out, "ndcg@10")
    assert set(latency_summary(res, resamples=0).to_dict()["rows"][0]) >= {"stage", "ms"}


def test_the_documented_latency_example_parses():
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "experiments.md").read_text(encoding="utf-8")
    (block,) = [b for b in re.findall(r"```yaml\n(.*?)```", doc, flags=re.DOTALL) if b.startswith("latency:")]
    (lat,) = _config("gates: [{metric: recall@5, threshold: 0}]\n" + block).latency
    assert lat.ceilings == {"median": 60.0, "p90": 120.0} and lat.regression_max_ms == 10.0
    assert lat.segments == ("lang",) and lat.min_queries == 20


@pytest.mark.parametrize("n", sampled([50, 400, 3000]))
@pytest.mark.parametrize("q", [0.5, 0.9, 0.99])
def test_exact_quantile_interval_matches_many_resamples(n, q):
    from rankgate.stats.bootstrap import exact_quantile_ci

    x = np.random.default_rng(n).gamma(2.0, 10.0, n)
    lo, hi = exact_quantile_ci(x, q)
    mlo, mhi = bootstrap_quantile_ci(x, q, rng=1, resamples=4000)
    spread = float(np.quantile(x, 0.99) - np.quantile(x, 0.01))
    # The same bootstrap distribution, one exact and one sampled (and interpolated): close, not equal.
    assert abs(lo - mlo) <= 0.05 * spread and abs(hi - mhi) <= 0.05 * spread
    assert lo <= np.quantile(x, q) <= hi


def test_exact_quantile_interval_edge_cases():
    from rankgate.stats.bootstrap import exact_quantile_ci

    assert exact_quantile_ci([3.0, 3.0, 3.0], 0.9) == (3.0, 3.0)
    assert all(math.isnan(v) for v in exact_quantile_ci([3.0], 0.5))
    assert exact_quantile_ci([1.0, 2.0, float("nan"), 3.0], [0.5, 0.9])[0][0] >= 1.0
    with pytest.raises(Exception, match="quantile"):
        exact_quantile_ci([1.0, 2.0], 1.5)
    assert bootstrap_quantile_ci([1.0, 5.0, 9.0], [0.5, 0.9], rng=0, resamples=50)[1][1] <= 9.0


def test_retrieve_refuses_bad_reranker_options(tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    assert_refused(["retrieve", "--corpus", CORPUS, "--gold", GOLD, "-o", out, "--reranker", "bm25", "--rerank-depth", "0"],
                   tmp_path, capsys=capsys, contains=["--rerank-depth"])
    assert_refused(["retrieve", "--corpus", CORPUS, "--gold", GOLD, "-o", out, "--reranker", "nope"],
                   tmp_path, capsys=capsys, contains=["reranker"])


def test_per_query_latency_allocates_one_column_per_stage(monkeypatch):
    """Regression: each query's timing allocated a list of every query (quadratic: ~40 s at 100k queries).

    Counted, not timed: the columns are built through one helper, which must run once per stage whatever
    the number of queries (the time itself is measured in benchmarks/latency_scaling.py)."""
    import rankgate.scoring.facts as facts
    from rankgate.io import load_run

    built: list[int] = []
    original = facts._stage_column

    def counting(n: int) -> list[float | None]:
        built.append(n)
        return original(n)

    monkeypatch.setattr(facts, "_stage_column", counting)  # (where the latency columns are built)
    n = 2_000
    gold = {f"q{i}": {f"d{i}": 1} for i in range(n)}
    run = load_run([{"query_id": f"q{i}", "topk": [f"d{i}"], "latency_ms": {"retrieve": 1.0, "rerank": 2.0}}
                    for i in range(n)])
    res = evaluate(gold, run, "hit@1")
    assert built == [n, n]  # one column per stage, not one per query
    assert res.info["latency_ms"]["rerank"][-1] == 2.0 and res.info["latency_ms"]["retrieve"][0] == 1.0


def test_a_summary_baseline_says_latency_regressions_were_not_checked(tmp_path):
    gold = write_jsonl(tmp_path / "gold.jsonl", _gold())
    base = write_jsonl(tmp_path / "base.jsonl", _run(BASE))
    slow = write_jsonl(tmp_path / "slow.jsonl", _run(SLOWER))
    cfg = tmp_path / "ship.yaml"
    cfg.write_text("gates: [{metric: recall@1, threshold: 0.5}]\nlatency: [{stage: retrieve, regression_max_ms: 5}]\n"
                   "defaults: {resamples: 200}\n")
    summary = tmp_path / "base.json"
    assert main(["gate", "--config", str(cfg), "--gold", str(gold), "--candidate", str(base), "--json-out", str(summary),
                 "--no-step-summary"]) == 0
    out = tmp_path / "out.json"
    assert main(["gate", "--config", str(cfg), "--gold", str(gold), "--candidate", str(slow), "--baseline",
                 str(summary), "--json-out", str(out), "--no-step-summary"]) == 0
    (check,) = json.loads(out.read_text())["latency"][0]["checks"]
    assert check["status"] == "skipped" and "baseline run" in check["note"]
