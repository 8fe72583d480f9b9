"""The metrics that reproduce the RAG tools' definitions: each kernel equals its readable reference,
and the definitions relate to rankgate's own metrics as written (see rankgate.metrics.compat)."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings

import rankgate

from .test_metrics import queries, reference_value, view
from .conftest import examples

SPECS = ["precision_returned", "precision_returned@3", "precision_returned(rel=2)@2", "ap_retrieved",
         "ap_retrieved@2", "ap_retrieved(rel=2)", "ndcg_full_ideal", "ndcg_full_ideal@2", "ndcg_full_ideal(gain=exp)@3"]


@settings(max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries())
def test_kernel_equals_reference(data):
    gold, run = data
    ties = "id" if len(gold) % 2 else "input"  # both ranking rules, on the same generated data
    result = rankgate.evaluate(gold, run, SPECS, k=3, ties=ties)
    runs = {r["query_id"]: r for r in run}
    has_items = any(r["topk"] for r in run)
    for i, g in enumerate(gold):
        q = view(g, runs.get(g["query_id"]), 3, has_items, ties=ties)
        for spec in SPECS:
            got, want = result[spec][i], reference_value(spec, q)
            if math.isnan(want):
                assert math.isnan(got), (spec, g["query_id"], got)
            else:
                assert got == pytest.approx(want, abs=1e-12), (spec, g["query_id"], got, want)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries())
def test_relations_to_rankgate_metrics(data):
    """precision_returned@k is precision@k when k items came back; ndcg_full_ideal@k is ndcg@k when
    a query has at most k judged gains; ap_retrieved is at least map (fewer in the denominator)."""
    gold, run = data
    r = rankgate.evaluate(gold, run, ["precision_returned@2", "precision@2", "ndcg_full_ideal@3", "ndcg@3",
                                      "ap_retrieved", "map"], k=3)
    runs = {x["query_id"]: len(x["topk"]) for x in run}
    for i, g in enumerate(gold):
        if math.isnan(r["map"][i]):
            continue
        if runs.get(g["query_id"], 0) >= 2:
            assert r["precision_returned@2"][i] == r["precision@2"][i]
        if sum(1 for j in g["relevant_chunks"] if j["grade"] > 0) <= 3:
            assert r["ndcg_full_ideal@3"][i] == pytest.approx(r["ndcg@3"][i], abs=1e-12)
        assert r["ap_retrieved"][i] >= r["map"][i] - 1e-12


def test_worked_example():
    """Relevant {a, b, c}; ranking a, x, b (b at 3, c not retrieved)."""
    r = rankgate.evaluate({"q": {"a": 1, "b": 1, "c": 1}}, {"q": ["a", "x", "b"]},
                          ["precision_returned@5", "precision@5", "ap_retrieved", "map", "ndcg_full_ideal@2", "ndcg@2"])
    assert r["precision_returned@5"][0] == pytest.approx(2 / 3) and r["precision@5"][0] == pytest.approx(2 / 5)
    assert r["ap_retrieved"][0] == pytest.approx((1 + 2 / 3) / 2) and r["map"][0] == pytest.approx((1 + 2 / 3) / 3)
    ideal3 = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert r["ndcg_full_ideal@2"][0] == pytest.approx(1 / ideal3) and r["ndcg@2"][0] == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_nothing_returned_scores_zero():
    r = rankgate.evaluate({"q": {"a": 1}}, {"q": []}, ["precision_returned", "ap_retrieved", "ndcg_full_ideal"])
    assert [r[m][0] for m in r.metric_names] == [0.0, 0.0, 0.0]
