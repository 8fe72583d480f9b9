"""The diagnosis rules: each one fires on a run built to show its problem, quoting the numbers that show it,
and none fires on a run without problems."""

from __future__ import annotations

import math

import pytest

from rankgate.gating.diagnosis import RULES, Signals, Thresholds, diagnose
from rankgate.render.build import build_report, knee


def gold(qid, rel, **kw):
    return {"query_id": qid, "query": f"question {qid}",
            "relevant_chunks": [{"chunk_id": c, "grade": g} for c, g in rel], **kw}


def run(qid, ids, **kw):
    return {"query_id": qid, "topk": [{"chunk_id": d, "score": 100.0 - i} for i, d in enumerate(ids)], **kw}


def filler(qid, n, start=0):
    return [f"{qid}_other{i}#c1" for i in range(start, start + n)]


def report(g, r, **kw):
    kw.setdefault("resamples", 200)
    kw.setdefault("by", ())
    return build_report(g, r, **kw)


def findings(rep, rule):
    return [f for f in rep.findings if f.rule == rule]


def one(rep, rule):
    got = findings(rep, rule)
    assert len(got) == 1, f"expected one {rule!r} finding; got {[f.rule for f in rep.findings]}"
    f = got[0]
    assert f.evidence and f.advice and f.numbers, "a finding must carry its evidence, advice and numbers"
    return f


def test_every_rule_has_a_test_below():
    names = {name for name, _ in RULES}
    tested = {n.removeprefix("test_rule_").split("__")[0] for n in globals() if n.startswith("test_rule_")}
    assert names <= tested, f"rules without a test: {sorted(names - tested)}"


def test_clean_run_has_no_findings():
    # five relevant chunks per query, all in the top 5, nothing forbidden, no no-answer queries
    qs = [f"q{i}" for i in range(8)]
    g = [gold(q, [(f"{q}_doc{j}#c1", 2) for j in range(5)]) for q in qs]
    r = [run(q, [f"{q}_doc{j}#c1" for j in range(5)] + filler(q, 10)) for q in qs]
    rep = report(g, r)
    assert rep.findings == ()


def test_rule_missing_queries():
    g = [gold(f"q{i}", [(f"d{i}#c1", 1)]) for i in range(6)]
    r = [run(f"q{i}", [f"d{i}#c1"] + filler(f"q{i}", 4)) for i in range(5)]
    f = one(report(g, r), "missing_queries")
    assert "1 of 6 gold queries" in f.evidence


def test_rule_not_retrieved():
    g = [gold(f"q{i}", [(f"d{i}#c1", 1)]) for i in range(10)]
    r = [run(f"q{i}", ([f"d{i}#c1"] if i >= 3 else []) + filler(f"q{i}", 9)) for i in range(10)]
    f = one(report(g, r), "not_retrieved")
    assert f.numbers["never_found"] == pytest.approx(0.3)
    assert "3 of 10" in f.evidence


def test_rule_ranked_low():
    # half the queries have their relevant chunk at rank 8 of a 60-deep list
    g = [gold(f"q{i}", [(f"d{i}#c1", 1)]) for i in range(10)]
    r = [run(f"q{i}", filler(f"q{i}", 7 if i < 5 else 0) + [f"d{i}#c1"] + filler(f"q{i}", 52, 7)) for i in range(10)]
    f = one(report(g, r), "ranked_low")
    assert f.numbers["recall@5"] == pytest.approx(0.5)
    assert f.numbers["recall@50"] == pytest.approx(1.0)
    assert "recall@5 50.0% but recall@50 100.0%" in f.evidence
    assert "reranker" in f.advice


def test_rule_ranked_low__from_the_raw_candidate_list():
    g = [gold(f"q{i}", [(f"d{i}#c1", 1)]) for i in range(6)]
    r = []
    for i in range(6):
        raw = [{"chunk_id": d, "score": 50.0 - j} for j, d in enumerate(filler(f"q{i}", 9) + [f"d{i}#c1"])]
        r.append(run(f"q{i}", filler(f"q{i}", 5), k_raw=10, raw_topk=raw))
    rep = report(g, r)
    f = one(rep, "ranked_low")
    assert "raw candidate recall@10 100.0%" in f.evidence
    assert rep.stages is not None and rep.stages.k_raw == 10


def test_rule_chunk_split():
    # the right documents come back, the labelled chunks do not
    g = [gold(f"q{i}", [(f"doc{i}#c1", 1)]) for i in range(6)]
    r = [run(f"q{i}", [f"doc{i}#c2"] + filler(f"q{i}", 9)) for i in range(6)]
    f = one(report(g, r), "chunk_split")
    assert f.numbers["doc_recall@10"] == 1.0 and f.numbers["chunk_recall@10"] == 0.0


def test_rule_reranker_hurts():
    g = [gold(f"q{i}", [(f"d{i}#c1", 1)]) for i in range(6)]
    r = []
    for i in range(6):
        raw = [{"chunk_id": d, "score": 50.0 - j} for j, d in enumerate([f"d{i}#c1"] + filler(f"q{i}", 9))]
        r.append(run(f"q{i}", filler(f"q{i}", 4) + [f"d{i}#c1"], k_raw=10, raw_topk=raw))
    f = one(report(g, r), "reranker_hurts")
    assert f.numbers["raw ndcg@5"] == 1.0
    assert f.numbers["final ndcg@5"] == pytest.approx(1 / math.log2(6))


def test_rule_weak_segment():
    g = [gold(f"en{i}", [(f"e{i}#c1", 1)], tags={"lang": "en"}) for i in range(20)]
    g += [gold(f"pt{i}", [(f"p{i}#c1", 1)], tags={"lang": "pt"}) for i in range(8)]
    r = [run(f"en{i}", [f"e{i}#c1"] + filler(f"en{i}", 9)) for i in range(20)]
    r += [run(f"pt{i}", filler(f"pt{i}", 5) + [f"p{i}#c1"]) for i in range(6)]
    r += [run(f"pt{i}", [f"p{i}#c1"] + filler(f"pt{i}", 5)) for i in range(6, 8)]
    f = one(report(g, r, by=["lang"]), "weak_segment")
    assert "segment lang=pt recall@5 25.0% vs 78.6% overall" in f.evidence
    assert "language" in f.advice


def test_rule_lexical_rescue():
    g = [gold(f"q{i}", [(f"d{i}#c1", 1)]) for i in range(6)]
    r = [run(f"q{i}", filler(f"q{i}", 12) if i < 3 else [f"d{i}#c1"]) for i in range(6)]
    lex = [run(f"q{i}", [f"d{i}#c1"] + filler(f"q{i}", 3)) for i in range(6)]
    rep = report(g, r, lexical=lex)
    f = one(rep, "lexical_rescue")
    assert f.numbers == {"rescued": 3, "misses": 3}
    assert {m.query_id for m in rep.misses} == {"q0", "q1", "q2"}
    assert all(m.lexical_rank == 1 for m in rep.misses)


def test_rule_router_skew():
    g = [gold(f"q{i}", [(f"d{i}#c1", 1)]) for i in range(6)]
    r = []
    for i in range(6):
        items = [{"chunk_id": f"d{i}#c1", "score": 10.0, "source": "kb"}]
        items += [{"chunk_id": f"q{i}_web{j}#c1", "score": 9.0 - j, "source": "web"} for j in range(6)]
        r.append({"query_id": f"q{i}", "topk": items})
    rep = report(g, r)
    f = one(rep, "router_skew")
    assert "web" in f.title and f.numbers["share_of_found"] == 0.0
    assert {s.source for s in rep.sources} == {"kb", "web"}


def test_rule_forbidden():
    g = [gold(f"q{i}", [(f"d{i}#c1", 1)], must_not_retrieve=[f"old{i}#c1"]) for i in range(4)]
    r = [run(f"q{i}", [f"d{i}#c1", f"old{i}#c1" if i == 0 else "x#c1"]) for i in range(4)]
    rep = report(g, r)
    f = one(rep, "forbidden")
    assert "1 of 4 queries" in f.evidence and "q0" in f.evidence
    assert [o.query_id for o in rep.offences_forbidden] == ["q0"]
    assert [it.chunk_id for it in rep.offences_forbidden[0].items] == ["old0#c1"]


def test_rule_stale():
    g = [gold(f"q{i}", [(f"d{i}#c1", 1)], as_of="2026-05-01") for i in range(4)]
    r = [{"query_id": f"q{i}", "topk": [
        {"chunk_id": f"d{i}#c1", "score": 2.0, "doc_version": "2026-01-01"},
        {"chunk_id": f"new{i}#c1", "score": 1.0, "doc_version": "2026-06-01" if i < 2 else "2026-02-01"}]}
        for i in range(4)]
    rep = report(g, r)
    f = one(rep, "stale")
    assert "2 of 4 queries" in f.evidence
    assert [it.flag for it in rep.offences_stale[0].items] == ["newer than as_of 2026-05-01"]


def test_rule_false_evidence():
    g = [gold(f"q{i}", [(f"d{i}#c1", 1)]) for i in range(4)]
    g += [{"query_id": f"na{i}", "query": "unanswerable", "no_answer": True} for i in range(4)]
    r = [run(f"q{i}", [f"d{i}#c1"] + filler(f"q{i}", 4)) for i in range(4)]  # top score 100
    r += [{"query_id": f"na{i}", "topk": [{"chunk_id": f"x{i}#c1", "score": 40.0 + i}]} for i in range(4)]
    f = one(report(g, r), "false_evidence")
    assert "4 of 4 no-answer queries" in f.evidence and "no confidence line" in f.evidence
    assert "try a line between them" in f.advice
    # with a confidence line above every no-answer score, nothing is flagged
    assert not findings(report(g, r, min_score=50.0), "false_evidence")


def test_rule_distractors():
    # the relevant chunk is at rank 1, the other four slots are chunks of one other document
    g = [gold(f"q{i}", [(f"d{i}#c1", 1)]) for i in range(6)]
    r = [run(f"q{i}", [f"d{i}#c1"] + [f"dup{i}#c{j}" for j in range(4)]) for i in range(6)]
    f = one(report(g, r), "distractors")
    assert f.severity == "warning" and "near-duplicate" in f.advice
    assert f.numbers["distinct_docs@5"] == 2.0


def test_rule_low_judged():
    # a pooled gold set (ten judgements per query) and a system that retrieves unjudged items
    g = [gold(f"q{i}", [(f"d{i}#c1", 1)] + [(f"j{i}_{j}#c1", 0) for j in range(9)]) for i in range(5)]
    r = [run(f"q{i}", [f"d{i}#c1"] + filler(f"q{i}", 9)) for i in range(5)]
    f = one(report(g, r), "low_judged")
    assert f.numbers["judged@10"] == pytest.approx(0.1) and f.numbers["ceiling"] == 1.0


def test_low_judged_is_silent_for_a_sparse_gold_set():
    g = [gold(f"q{i}", [(f"d{i}#c1", 1)]) for i in range(5)]
    r = [run(f"q{i}", [f"d{i}#c1"] + filler(f"q{i}", 9)) for i in range(5)]
    assert not findings(report(g, r), "low_judged")


def test_diagnose_is_pure_and_ordered():
    s = Signals(k=5, means={"recall@5": 0.61, "precision@5": 0.1}, deep_k=50, deep_recall=0.93, answerable=10,
                evaluated=10, missing_from_run=2, judged10=0.1, judged_ceiling=1.0)
    first = diagnose(s)
    assert first == diagnose(s)
    assert [f.severity for f in first] == sorted((f.severity for f in first), key=("problem", "warning", "info").index)
    ranked = next(f for f in first if f.rule == "ranked_low")
    assert ranked.evidence.startswith("recall@5 61.0% but recall@50 93.0%")
    # thresholds are the knobs
    assert not any(f.rule == "ranked_low" for f in diagnose(s, Thresholds(ranked_low_gap=0.5)))


def test_empty_signals_make_no_findings():
    assert diagnose(Signals()) == ()


def test_knee():
    ks = list(range(1, 21))
    assert knee(ks, [min(1.0, k / 5) for k in ks]) == 5
    assert knee(ks, [0.5] * 20) is None
    assert knee([1, 2], [0.1, 0.2]) is None


def test_weak_segment_groups_metrics_and_needs_a_real_gap_for_a_floor():
    from rankgate.gating.diagnosis import SegmentSignal

    segs = (SegmentSignal("lang", "de", "recall@5", 40, 0.70, 0.60, 0.80),
            SegmentSignal("lang", "de", "hit@5", 40, 0.72, 0.62, 0.82),
            SegmentSignal("lang", "en", "recall@5", 80, 0.79, 0.70, 0.88))  # 1 pp below: noise
    s = Signals(k=5, means={"recall@5": 0.80, "hit@5": 0.82}, segments=segs, floors={"recall@5": 0.75, "hit@5": 0.80})
    got = [f for f in diagnose(s) if f.rule == "weak_segment"]
    assert [f.title for f in got] == ["Weak segment: lang=de"]
    assert "recall@5 70.0% vs 80.0% overall" in got[0].evidence and "hit@5 72.0% vs 82.0%" in got[0].evidence


def test_rule_ranked_low__names_the_knee_the_sweep_shows():
    # the report's knee and the advice agree: the advice names the k the chart marks
    g = [gold(f"q{i}", [(f"d{i}#c1", 1)]) for i in range(10)]
    r = [run(f"q{i}", filler(f"q{i}", 7 if i < 5 else 0) + [f"d{i}#c1"] + filler(f"q{i}", 52, 7)) for i in range(10)]
    rep = report(g, r)
    f = one(rep, "ranked_low")
    recall = next(c for c in rep.curves if c.metric == "recall")
    assert recall.knee is not None
    assert f"k = {recall.knee}" in f.advice or f"top {recall.knee} " in f.advice
    if recall.knee > 5:
        assert f.advice.startswith(f"Pass the top {recall.knee} to the generator")


def test_ranked_low_advice_follows_the_knee():
    s = Signals(k=5, means={"recall@5": 0.5}, deep_k=50, deep_recall=0.95, knee=8, knee_recall=0.9)
    (f,) = diagnose(s)
    assert f.advice.startswith("Pass the top 8 to the generator instead of 5") and "recall@8 90.0%" in f.advice
    (f,) = diagnose(Signals(k=5, means={"recall@5": 0.5}, deep_k=50, deep_recall=0.95, knee=3, knee_recall=0.4))
    assert "A larger k buys little here: the k-sweep's knee is at k = 3" in f.advice


def _short_run_report():
    """A RAGAS-style run: the top 5 only, one judged item in each; the gold set judges 8 items per query."""
    g = [gold(f"q{i}", [(f"d{i}_{j}#c1", 1) for j in range(8)]) for i in range(12)]
    r = [run(f"q{i}", [f"d{i}_0#c1"] + filler(f"q{i}", 4)) for i in range(12)]
    return report(g, r)


def test_short_runs__low_judged_never_claims_more_than_the_depth_allows():
    rep = _short_run_report()
    assert rep.depth == 5
    f = one(rep, "low_judged")
    assert f.numbers["judged@5"] == pytest.approx(0.2)
    assert f.numbers["ceiling"] == pytest.approx(1.0)  # 8 judgements, 5 slots: every slot could be judged
    assert "of the top 5 has a judgement (judged@5)" in f.evidence


def test_short_runs__curves_and_histogram_stop_at_the_depth():
    rep = _short_run_report()
    for c in (*rep.curves, *rep.baseline_curves):
        assert max(c.ks) == 5 and (c.knee is None or c.knee <= 5)
    assert [label for label, _ in rep.rank_histogram] == ["1", "2", "3", "4", "5", "not found"]
    from rankgate.render.html import render_html

    html = render_html(rep)
    assert "@10</th>" not in html and "@20</th>" not in html


def test_short_runs__distractors_count_only_the_chunks_passed_on():
    # a top-3 run at k = 5: two empty slots are not distractors
    s = Signals(k=5, depth=3, means={"recall@5": 0.9, "precision@5": 0.18})
    (f,) = diagnose(s)
    assert "about 2 of the 3 chunks passed on are not relevant" in f.evidence
    # 2 relevant of 3 passed on is not "most of the context"
    assert diagnose(Signals(k=5, depth=3, means={"recall@5": 0.9, "precision@5": 0.4})) == ()


def test_short_runs__chunk_and_document_recall_stop_at_the_depth():
    rep = _short_run_report()
    from rankgate.render.html import render_html

    html = render_html(rep)
    assert "recall@10 at chunk level" not in html and "recall@5 at chunk level" in html
    s = Signals(k=5, depth=5, means={"recall@5": 0.5}, chunk_recall10=0.4, doc_recall10=0.9)
    f = next(f for f in diagnose(s) if f.rule == "chunk_split")
    assert "doc-level recall@5 90.0% but chunk-level 40.0%" in f.evidence and "@10" not in f.evidence


def test_short_runs__misses_say_how_many_items_came_back():
    g = [gold("q1", [("d1#c1", 1)]), gold("q2", [("d2#c1", 1)])]
    r = [run("q1", filler("q1", 3)), run("q2", ["d2#c1"] + filler("q2", 2))]
    from rankgate.render.html import render_html

    html = render_html(report(g, r))
    assert "Retrieved instead (all 3)" in html and "Retrieved instead (top 10)" not in html
    assert "1 answerable query has no relevant chunk" in html
