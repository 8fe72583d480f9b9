"""Per-segment breakdowns and k-sweeps."""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
import pytest

from rankgate.errors import MetricSpecError, UsageError
from rankgate.render.tables import segment_markdown, segment_table, sweep_markdown
from rankgate.model.results import EvaluationResult
from rankgate.stats.segments import segment_summary
from rankgate.stats.bootstrap import bootstrap_ci
from rankgate.stats.sweep import auc, k_sweep, parse_ks, sweep_from_result, sweep_specs

DATA = Path(__file__).parent / "data" / "gate"


def make_result() -> EvaluationResult:
    recall = np.array([1.0, 0.0, 1.0, 1.0, np.nan, 0.5, 1.0, 0.0])
    return EvaluationResult(
        tuple(f"q{i}" for i in range(8)), ("recall@5",), {"recall@5": recall},
        {"intent": ("a", "a", "b", "b", "b", None, "a", "b"), "tags.lang": ("en", "de", "en", "en", "de", "de", "en", None)},
    )


def test_segment_rows_have_n_means_and_intervals_of_their_own_queries():
    res = make_result()
    s = segment_summary(res, ["intent", "lang"], seed=2, resamples=300)
    assert s.by == ("intent", "tags.lang")
    a = s.get("intent", "a", "recall@5")
    assert (a.queries, a.n, a.mean) == (3, 3, pytest.approx(2 / 3))
    assert (a.ci_low, a.ci_high) == bootstrap_ci([1.0, 0.0, 1.0], rng=2, resamples=300)
    b = s.get("intent", "b", "recall@5")
    assert (b.queries, b.n) == (4, 3)  # q4 is a no-answer query: not counted
    labels = [r.label for r in s.rows if r.field == "intent"]
    assert labels == ["a", "b", "(none)"]  # missing labels last
    none = s.get("intent", "(none)", "recall@5")
    assert none.n == 1 and math.isnan(none.ci_low)  # one query: no interval


def test_segment_fields_cross_and_resolve_tags():
    res = make_result()
    s = segment_summary(res, "intent+lang", resamples=0)
    assert s.by == ("intent+tags.lang",)
    assert {r.label for r in s.rows} == {"a / en", "a / de", "b / en", "b / de", "b / (none)", "(none) / de"}
    d = s.to_dict()
    assert set(d) == {"intent+tags.lang"}
    assert d["intent+tags.lang"]["a / en"]["recall@5"] == {"mean": 1.0, "n": 2, "ci_low": None, "ci_high": None}


def test_unknown_segment_field_lists_what_exists():
    with pytest.raises(UsageError, match="available: intent, tags.lang"):
        segment_summary(make_result(), "tier")


def test_segment_renderers():
    from rich.console import Console

    s = segment_summary(make_result(), "intent", resamples=200)
    console = Console(width=100, color_system=None, force_terminal=False, record=True, file=io.StringIO())
    console.print(segment_table(s))
    text = console.export_text()
    assert "intent = a" in text and "95% CI" in text
    md = segment_markdown(s)
    assert md.splitlines()[0] == "| segment | metric | n | mean | 95% CI |"
    # shares as the panel shows them (66.7%, not 0.6667), intervals as "a to b"
    assert "| intent = a | recall@5 | 3 | 66.7% |" in md
    assert "66.7%" in text and "0.6667" not in text and " to " in text


def test_auc_is_the_average_height_over_the_k_range():
    assert auc([1, 3, 5], [0.2, 0.6, 0.8]) == pytest.approx(((0.2 + 0.6) / 2 * 2 + (0.6 + 0.8) / 2 * 2) / 4)
    assert auc([5], [0.7]) == 0.7
    assert auc([1, 2], [1.0, 1.0]) == 1.0
    assert math.isnan(auc([1, 2], [0.5, math.nan]))


def test_sweep_specs_and_ks():
    assert parse_ks("10, 1,5,5") == (1, 5, 10)
    assert sweep_specs("recall,ndcg(gain=exp)", [1, 3]) == ["recall@1", "recall@3", "ndcg(gain=exp)@1", "ndcg(gain=exp)@3"]
    with pytest.raises(UsageError, match="positive integers"):
        parse_ks("1,0")
    with pytest.raises(MetricSpecError, match="without @k"):
        sweep_specs("recall@5", [1])
    with pytest.raises(MetricSpecError, match="cannot be swept"):
        sweep_specs("rprec", [1])


def test_k_sweep_evaluates_once_and_builds_curves():
    sweep = k_sweep(DATA / "gold.jsonl", DATA / "base.jsonl", "recall,hit", "1,2,3,5")
    recall = sweep.curves[0]
    assert recall.metric == "recall" and recall.specs == ("recall@1", "recall@2", "recall@3", "recall@5")
    # base run: relevant item at rank (i % 3) + 1 for 36 of 40 answerable queries
    assert recall.means == pytest.approx((12 / 40, 24 / 40, 36 / 40, 36 / 40))
    assert list(recall.means) == sorted(recall.means)  # recall never falls as k grows
    assert recall.auc == pytest.approx(auc([1, 2, 3, 5], recall.means))
    assert sweep.result is not None and "hit@5" in sweep.result.values
    d = sweep.to_dict()
    assert d["ks"] == [1, 2, 3, 5] and d["curves"]["hit"]["n"] == [40, 40, 40, 40]
    assert "| recall | 0.3000 | 0.6000 | 0.9000 | 0.9000 |" in sweep_markdown(sweep)


def test_sweep_from_result_with_intervals():
    from rankgate import evaluate

    res = evaluate(str(DATA / "gold.jsonl"), str(DATA / "base.jsonl"), sweep_specs("recall", "1,5"))
    sweep = sweep_from_result(res, "recall", "1,5", resamples=200)
    c = sweep.curves[0]
    assert all(lo <= m <= hi for lo, m, hi in zip(c.ci_low, c.means, c.ci_high))


def test_k_sweep_stops_at_the_runs_depth():
    # a top-5 run (as RAGAS users log): @10 and @20 would only repeat @5
    gold = {f"q{i}": {f"d{i}_{j}": 1 for j in range(8)} for i in range(6)}
    run = {f"q{i}": [f"d{i}_{j}" for j in range(0, 10, 2)] for i in range(6)}
    sweep = k_sweep(gold, run, "recall,ndcg", "1,3,5,10,20")
    assert sweep.ks == (1, 3, 5) and sweep.depth == 5
    assert sweep.to_dict()["run_depth"] == 5
    assert k_sweep(gold, run, "recall", "1,4,8").ks == (1, 4, 5)  # the depth ends the curve
