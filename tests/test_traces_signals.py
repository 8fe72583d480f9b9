"""The trace signals: hand-computed RBO, Jaccard, Wilson and robust z; each signal on small tables
built by hand; the SQL instability against the plain-Python reference; "not measurable", never 0."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from rankgate.corpus import manifest_from_records
from rankgate.stats.bootstrap import wilson_interval
from rankgate.traces.monitors import robust_z
from rankgate.traces.signals import parse_window, summarize_traces
from rankgate.traces.similarity import jaccard, rbo, rbo_weight

from .traces_tables import at, ranked, tables

P = 0.9


# -- hand-computed references ------------------------------------------------------------------------
def test_rbo_hand_computed():
    assert rbo("abc", "abc") == pytest.approx(1.0, abs=1e-15)
    assert rbo("abc", "xyz") == 0.0
    # X = 0, 2, 3, 4: (4/4)·0.9^4 + (0.1/0.9)·(2/2·0.81 + 3/3·0.729 + 4/4·0.6561) = 0.6561 + 0.2439
    assert rbo("abcd", "bacd") == pytest.approx(0.9, abs=1e-12)
    # X = 1, 1, 3: (3/3)·0.9^3 + (1/9)(1/1·0.9 + 1/2·0.81 + 3/3·0.729) = 0.729 + 0.226
    assert rbo("abc", "acb") == pytest.approx(0.955, abs=1e-12)
    # a prefix extrapolates to agreement: s=2, l=3, X = 1, 2, 2
    assert rbo("ab", "abc") == pytest.approx(1.0, abs=1e-12)
    # uneven lengths with a miss: S = [a, x], L = [a, b, c]; X1 = 1, X2 = 1, X3 = 1, X_s = 1
    expected = (1 - P) / P * (1 * P + 1 / 2 * P**2 + 1 / 3 * P**3 + 1 * (3 - 2) / (2 * 3) * P**3) + (0 + 1 / 2) * P**3
    assert rbo("ax", "abc") == pytest.approx(expected, abs=1e-12)
    assert rbo([], []) == 1.0 and rbo(["a"], []) == 0.0


def test_jaccard_hand_computed():
    assert jaccard("abcd", "cdef") == pytest.approx(2 / 6)
    assert jaccard([], []) == 1.0
    assert jaccard("ab", "ba") == 1.0


def test_rbo_weights_sum_to_the_formula():
    r = random.Random(7)
    for _ in range(500):
        a = r.sample("abcdefghijkl", r.randint(1, 8))
        b = r.sample("abcdefghijkl", r.randint(1, 8))
        S, L = (a, b) if len(a) <= len(b) else (b, a)
        total = sum(rbo_weight(max(S.index(x), L.index(x)) + 1, len(S), len(L)) for x in S if x in L)
        assert total == pytest.approx(rbo(a, b), abs=1e-12)


def test_wilson_hand_computed():
    lo, hi = wilson_interval(2, 10)
    assert (lo, hi) == pytest.approx((0.0567, 0.5098), abs=1e-4)


def test_robust_z_hand_computed():
    # median 10, deviations 2,1,0,1,2 -> MAD 1; M = 0.6745 * (14 - 10) / 1
    z, med, scale = robust_z(14, [8, 9, 10, 11, 12])
    assert (z, med, scale) == pytest.approx((2.698, 10, 1))
    # flat baseline: the floor decides
    assert robust_z(0.4, [0, 0, 0], mad_floor=0.01)[0] == pytest.approx(0.6745 * 0.4 / 0.01)
    assert robust_z(130, [32, 33, 32.5], mad_floor_rel=0.1)[2] == pytest.approx(3.25)
    assert robust_z(1, [1, 1, 1]) == (0.0, 1, 0)
    assert robust_z(2, [1, 1, 1])[0] == math.inf


def test_parse_window():
    assert parse_window("1h") == 3_600_000_000
    assert parse_window("15m") == 900_000_000
    from rankgate.errors import UsageError

    for bad in ("0d", "1y", "h", "1.5h"):
        with pytest.raises(UsageError, match="^window must be"):
            parse_window(bad)


# -- signals on hand-built tables ----------------------------------------------------------------------
def _one(summary, signal, window=None, segment="all"):
    v = summary.value(signal, window, segment)
    assert v is not None, signal
    return v


def test_latency_quantiles_are_numpy_linear_and_errors_exclude_aborts():
    rng = np.random.default_rng(3)
    lat = rng.lognormal(3, 0.5, 37).round(3)
    http = [200] * 30 + [500, 503, 404, 499, 499, 499, 200]
    reqs = [{"request_id": f"r{i}", "ts": at(0, i % 24), "rerank_ms": float(lat[i]), "http_status": http[i],
             "client_abort": http[i] == 499, "status": "ok" if http[i] == 200 else "error"} for i in range(37)]
    s = summarize_traces(tables(reqs))
    for q in (50, 95, 99):
        v = _one(s, f"latency.rerank.p{q}")
        assert v.value == pytest.approx(float(np.percentile(lat, q)), rel=0, abs=1e-12)
        assert v.n == 37
    err = _one(s, "error_rate_per_1k")
    assert (err.k, err.n, err.value) == (3, 37, pytest.approx(3000 / 37))
    assert _one(s, "client_abort_rate").k == 3
    # a stage nobody logged is not measurable, never 0
    assert _one(s, "latency.parse.p95").value is None
    assert _one(s, "latency.parse.p95").note == "not measurable (no parse_ms)"
    assert _one(s, "fallback_rate").note == "not measurable (no fallback)"
    assert _one(s, "low_confidence_rate").note == "not measurable (no abstention threshold)"
    assert _one(s, "stale_citation_rate").note == "not measurable (no corpus manifest)"


def test_low_confidence_margin_fallback_no_result():
    reqs, items = [], []
    tops = [(0.9, 0.5), (0.2, 0.19), (0.35, 0.3), (0.1, 0.05)]
    for i, (a, b) in enumerate(tops):
        reqs.append({"request_id": f"r{i}", "ts": at(0, 1), "fallback": a < 0.15, "query_text": f"q{i}"})
        items += ranked(f"r{i}", ["x", "y"], stage="candidate", scores=[a, b])
    reqs.append({"request_id": "r9", "ts": at(0, 2), "fallback": True})  # no result at all
    s = summarize_traces(tables(reqs, items), threshold=0.3)
    low = _one(s, "low_confidence_rate")
    assert (low.k, low.n) == (2, 4)
    assert _one(s, "margin.p50").value == pytest.approx(float(np.percentile([0.4, 0.01, 0.05, 0.05], 50)))
    assert _one(s, "top1_score.p10").value == pytest.approx(float(np.percentile([0.9, 0.2, 0.35, 0.1], 10)))
    assert (_one(s, "fallback_rate").k, _one(s, "fallback_rate").n) == (2, 5)
    assert (_one(s, "no_result_rate").k, _one(s, "no_result_rate").n) == (1, 5)
    assert sorted(q["query_text"] for q in s.low_confidence) == ["q1", "q3"]


def test_deprecated_context_from_item_status_and_from_manifest():
    reqs = [{"request_id": f"r{i}", "ts": at(0, i)} for i in range(4)]
    items = (ranked("r0", ["a#1", "b#1"], stage="packed", status="active")
             + ranked("r1", ["a#1", "old#1"], stage="packed", status="active")
             + ranked("r2", ["c#1"], stage="packed", status="active")
             + ranked("r3", ["c#1"], stage="candidate", status="active"))
    items[3]["status"] = "superseded"
    s = summarize_traces(tables(reqs, items))
    v = _one(s, "deprecated_context_rate")
    assert (v.k, v.n) == (1, 3)  # r3 has no packed context
    assert (_one(s, "deprecated_item_share").k, _one(s, "deprecated_item_share").n) == (1, 5)
    # the manifest's status wins over the logged one: c#1 was retired since
    m = manifest_from_records([{"chunk_id": "a#1"}, {"chunk_id": "b#1"}, {"chunk_id": "old#1", "status": "superseded"},
                               {"chunk_id": "c#1", "status": "retired"}])
    s = summarize_traces(tables(reqs, items), manifest=m)
    assert (_one(s, "deprecated_context_rate").k, _one(s, "deprecated_context_rate").n) == (2, 3)


def test_stale_citations_per_manifest_natural_version_order():
    m = manifest_from_records([{"chunk_id": "d1#0", "doc_version": "v10"}, {"chunk_id": "d2#0", "doc_version": "v2"}])
    reqs = [{"request_id": f"r{i}", "ts": at(0, i)} for i in range(4)]
    cits = [{"request_id": "r0", "item_id": "d1#0", "version": "v9"},     # older than v10: stale
            {"request_id": "r1", "item_id": "d1#0", "version": "v10"},
            {"request_id": "r2", "doc_id": "d2", "version": "v2"},
            {"request_id": "r3", "item_id": "zz#0", "version": "v1"}]      # unknown to the manifest: not counted
    s = summarize_traces(tables(reqs, citations=cits), manifest=m)
    v = _one(s, "stale_citation_rate")
    assert (v.k, v.n) == (1, 3)
    assert s.stale_citations == ({"doc_id": "d1", "version": "v9", "current_version": "v10", "n": 1},)


def test_privacy_signals():
    reqs = [{"request_id": "r0", "ts": at(0), "sensitive_tokens": 4, "leaked_tokens": 1, "secure_fields": 2,
             "bypassed": 1, "privacy_mode": "block", "blocked": True},
            {"request_id": "r1", "ts": at(0), "sensitive_tokens": 6, "leaked_tokens": 0, "secure_fields": 2,
             "bypassed": 0, "privacy_mode": "block", "blocked": False},
            {"request_id": "r2", "ts": at(0), "sensitive_tokens": 0, "privacy_mode": "block", "blocked": False}]
    s = summarize_traces(tables(reqs))
    assert _one(s, "redaction_efficacy").value == pytest.approx(1 - 1 / 10)
    assert (_one(s, "block_efficacy").k, _one(s, "block_efficacy").n) == (1, 2)
    assert _one(s, "secure_field_bypass_rate").value == pytest.approx(1 / 4)
    s = summarize_traces(tables([{"request_id": "r0", "ts": at(0)}]))
    assert _one(s, "redaction_efficacy").note == "not measurable (no sensitive_tokens)"


def test_feedback_by_source_wilson_and_flag():
    reqs, items, cits, fb = [], [], [], []
    for i in range(60):
        src = "wiki" if i < 20 else "faq"
        reqs.append({"request_id": f"r{i}", "ts": at(0, i % 24)})
        items += ranked(f"r{i}", [f"{src}{i}"], stage="packed", source=src)
        cits.append({"request_id": f"r{i}", "item_id": f"{src}{i}"})
        fb.append({"request_id": f"r{i}", "negative": (i < 20 and i % 4 != 0) or (i >= 20 and i % 10 == 0)})
    s = summarize_traces(tables(reqs, items, cits, fb), by=("source",))
    whole = {f.source: f for f in s.feedback_by_source if f.window is None}
    assert (whole["wiki"].negative, whole["wiki"].n) == (15, 20)
    assert (whole["wiki"].low, whole["wiki"].high) == pytest.approx(wilson_interval(15, 20))
    assert whole["wiki"].overall == pytest.approx(19 / 60)
    assert whole["wiki"].flagged and not whole["faq"].flagged
    assert _one(s, "negative_feedback_rate", segment="source=wiki").k == 15


def test_instability_sql_matches_the_reference_and_splits_corpus_change():
    r = random.Random(5)
    pool = [f"d{i}" for i in range(30)]
    reqs, items, expect = [], [], {}
    day0 = {}
    for q in range(12):  # day 0: each query twice with the same list (support 2: a reference)
        lst = r.sample(pool, 10)
        day0[q] = lst
        for j in range(2):
            rid = f"a{q}-{j}"
            reqs.append({"request_id": rid, "ts": at(0, 1 + j), "query_text": f"query {q}", "index_version": "ix1"})
            items += ranked(rid, lst)
    for q in range(12):  # day 1: a perturbed list; queries 9-11 on a new index version
        lst = day0[q][: r.randint(3, 10)] if q % 3 == 0 else r.sample(pool, r.randint(1, 10))
        rid = f"b{q}"
        ver = "ix2" if q >= 9 else "ix1"
        reqs.append({"request_id": rid, "ts": at(1, 5), "query_text": f"query {q}.", "index_version": ver})
        items += ranked(rid, lst)
        expect[rid] = (rbo(lst, day0[q]), jaccard(lst, day0[q]), ver == "ix1", lst != day0[q])
    s = summarize_traces(tables(reqs, items))
    w1 = s.windows[1]
    same = [e for e in expect.values() if e[2]]
    diff = [e for e in expect.values() if not e[2]]
    v = _one(s, "instability.rbo", w1)
    assert v.n == len(same) == 9
    assert v.value == pytest.approx(sum(e[0] for e in same) / 9, abs=1e-12)
    assert _one(s, "instability.jaccard", w1).value == pytest.approx(sum(e[1] for e in same) / 9, abs=1e-12)
    assert _one(s, "instability.changed_rate", w1).k == sum(e[3] for e in same)
    assert _one(s, "corpus_changed.rbo", w1).value == pytest.approx(sum(e[0] for e in diff) / 3, abs=1e-12)
    assert _one(s, "instability.rbo", s.windows[0]).n == 0  # no previous window
    worst = min(same, key=lambda e: e[0])
    assert s.unstable[0]["rbo"] == pytest.approx(worst[0], abs=1e-12)
    assert s.unstable[0]["reference_list"] == day0[int(s.unstable[0]["request_id"][1:])]


def test_a_list_seen_once_is_no_reference():
    reqs = [{"request_id": "a", "ts": at(0), "query_text": "q"}, {"request_id": "b", "ts": at(1), "query_text": "q"}]
    items = ranked("a", ["x", "y"]) + ranked("b", ["z"])
    s = summarize_traces(tables(reqs, items))
    assert _one(s, "instability.rbo", s.windows[1]).n == 0
    s = summarize_traces(tables(reqs, items), min_support=1)
    assert _one(s, "instability.rbo", s.windows[1]).value == 0.0


def test_ids_holding_the_list_separator_do_not_make_lists_alike():
    """Joined by U+001F, ["a\x1fb", "c"] and ["a", "b\x1fc"] read the same; they are different lists
    (nothing in common), and lists equal to their reference are still found equal."""
    reqs = [{"request_id": f"a{j}", "ts": at(0, j), "query_text": "q"} for j in range(2)]
    reqs += [{"request_id": "b", "ts": at(1), "query_text": "q"}, {"request_id": "c", "ts": at(1, 1), "query_text": "q"}]
    items = ranked("a0", ["a\x1fb", "c"]) + ranked("a1", ["a\x1fb", "c"]) + ranked("b", ["a", "b\x1fc"])
    items += ranked("c", ["a\x1fb", "c"])
    s = summarize_traces(tables(reqs, items))
    w1 = s.windows[1]
    assert (_one(s, "instability.changed_rate", w1).k, _one(s, "instability.changed_rate", w1).n) == (1, 2)
    assert _one(s, "instability.rbo", w1).value == pytest.approx((0.0 + 1.0) / 2, abs=1e-12)
    assert _one(s, "instability.jaccard", w1).value == pytest.approx(0.5, abs=1e-12)


def test_windows_and_segments():
    reqs = [{"request_id": f"r{i}", "ts": at(0, i), "tenant": "acme" if i % 2 else None, "total_ms": float(i)}
            for i in range(6)]
    s = summarize_traces(tables(reqs), window="2h", by=("tenant",))
    assert len(s.windows) == 3
    segs = {v.segment for v in s.values if v.signal == "latency.total.p50" and v.window == s.windows[0]}
    assert segs == {"all", "tenant=acme", "tenant=(none)"}
    assert _one(s, "latency.total.p50", s.windows[0], "tenant=acme").value == 1.0
    assert _one(s, "latency.total.p50").value == 2.5  # the whole period
