"""Every metric: the fast kernel equals the readable reference; properties a metric must have."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rankgate
from rankgate.metrics import all_metrics, parse_metric
from rankgate.metrics.context import QueryView

from .conftest import examples, sampled

SPECS = [
    "hit@3", "recall@5", "recall(rel=2)@5", "precision@3", "mrr", "mrr@3", "ndcg", "ndcg@5", "ndcg(gain=exp)@5",
    "map", "map@4", "rprec", "wrecall@5", "judged@4", "forbidden@3", "fresh@3", "containment@3",
    "coverage_entities@5", "distinct_docs@4", "redundancy@4", "novelty@4", "novelty(overlap=0.3)@4",
    "false_evidence@3", "false_evidence(min_score=1.0)@3", "recall", "precision", "hit",
    "bpref", "bpref(rel=2)@4", "infap", "infap(rel=2)@5", "rbp", "rbp(p=0.5)@4", "rbp(rel=2)", "err", "err@3",
    "err(max_grade=2)@5",
]
WORDS = ["export", "free", "plan", "csv", "refund", "invoice", "api", "key", "rate", "limit"]
DOCS = [f"doc{d}#c{c}" for d in range(4) for c in range(3)]


@st.composite
def queries(draw):
    """Gold and run records for a few queries, with text, versions and the RAG fields."""
    gold, run = [], []
    for q in range(draw(st.integers(1, 5))):
        qid = f"q{q}"
        no_answer = draw(st.integers(0, 4)) == 0
        judged = {} if no_answer else draw(st.dictionaries(st.sampled_from(DOCS), st.integers(1, 3), min_size=1, max_size=4))
        extra_neg = draw(st.dictionaries(st.sampled_from(DOCS), st.integers(-1, 0), max_size=2))
        for d, g in extra_neg.items():
            judged.setdefault(d, g)
        rec = {"query_id": qid, "relevant_chunks": [{"chunk_id": d, "grade": g} for d, g in judged.items()]}
        if no_answer:
            rec["no_answer"] = True
        if draw(st.booleans()):
            rec["must_not_retrieve"] = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=2, unique=True))
        if draw(st.booleans()):
            rec["as_of"] = "2026-03-01"
        if draw(st.booleans()):
            rec["expected_answer"] = " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=2)))
        if draw(st.booleans()):
            rec["entities"] = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3, unique=True))
        if draw(st.booleans()):
            rec["k"] = draw(st.integers(1, 6))
        gold.append(rec)
        if draw(st.integers(0, 5)) > 0:
            ids = draw(st.lists(st.sampled_from(DOCS), unique=True, max_size=8))
            items = []
            for d in ids:
                items.append({
                    "chunk_id": d,
                    "score": draw(st.integers(0, 6)) / 2,
                    "doc_version": draw(st.sampled_from(["2025-12-01", "2026-03-01", "2026-06-01"])),
                    "text": " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6))),
                })
            run.append({"query_id": qid, "topk": items})
    if not run:
        run.append({"query_id": gold[0]["query_id"], "topk": []})  # in the run, with nothing retrieved
    return gold, run


def ranked(items, ties="id"):
    # The ranking rules, spelled out: score descending, then id descending ("id") or list position ("input").
    if ties == "input":
        return sorted(items, key=lambda it: -it["score"])  # (a stable sort)
    return sorted(items, key=lambda it: (-it["score"], tuple(-b for b in it["chunk_id"].encode())))


def view(gold_rec, run_rec, default_k, run_has_items=True, gold_max_grade=None, ties="id"):
    items = ranked(run_rec["topk"], ties) if run_rec else []
    judged = {j["chunk_id"]: j["grade"] for j in gold_rec["relevant_chunks"]}
    return QueryView(
        ranking=[it["chunk_id"] for it in items],
        judgements=judged,
        k=gold_rec.get("k", default_k),
        scores=[it["score"] for it in items],
        # A run with no item at all has no text or version column: those metrics are n/a.
        doc_versions=[it["doc_version"] for it in items] if run_has_items else None,
        texts=[it["text"] for it in items] if run_has_items else None,
        must_not_retrieve=gold_rec.get("must_not_retrieve"),
        as_of=gold_rec.get("as_of"),
        expected_answer=gold_rec.get("expected_answer"),
        entities=gold_rec.get("entities"),
        answerable=any(g >= 1 for g in judged.values()),
        doc_of=lambda c: c.split("#")[0],
        gold_max_grade=gold_max_grade,
    )


def reference_value(spec, q: QueryView) -> float:
    metric = parse_metric(spec)
    d = metric.definition
    k = q.cutoff(metric, metric.k)
    value = d.reference(q, metric, k)
    if d.applies == "answerable":
        rel = metric.param("rel") if "rel" in d.params else 1
        if not q.relevant(rel) or not q.answerable:
            return math.nan
    if d.applies == "no_answer" and q.answerable:
        return math.nan
    return value


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries())
def test_kernel_equals_reference(data):
    gold, run = data
    ties = "id" if len(gold) % 2 else "input"  # both rules, on the same generated data
    result = rankgate.evaluate(gold, run, SPECS, k=3, ties=ties)
    runs = {r["query_id"]: r for r in run}
    has_items = any(r["topk"] for r in run)
    top = max((j["grade"] for g in gold for j in g["relevant_chunks"]), default=0)
    for i, g in enumerate(gold):
        q = view(g, runs.get(g["query_id"]), 3, has_items, top, ties)
        for spec in SPECS:
            got = result[spec][i]
            want = reference_value(spec, q)
            if math.isnan(want):
                assert math.isnan(got), (spec, g["query_id"], got)
            else:
                assert got == pytest.approx(want, abs=1e-12), (spec, g["query_id"], got, want)


@pytest.mark.parametrize("sep", sampled(["#", "", "c", "oc1", "1#c"], every=2))
@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=queries(), doc_level=st.booleans())
def test_parent_documents_with_or_without_the_separator_in_the_ids(data, sep, doc_level):
    """distinct_docs and redundancy take each id as its own document without looking at the ids when
    no ranked id holds the separator (or there is none); the same values as mapping every id."""
    gold, run = data
    for rec in gold:  # ids without "#": the default separator is then in no id
        rec["relevant_chunks"] = [dict(j, chunk_id=j["chunk_id"].replace("#", "_")) for j in rec["relevant_chunks"]]
    for rec in run:
        rec["topk"] = [dict(it, chunk_id=it["chunk_id"].replace("#", "_")) for it in rec["topk"]]
    specs = ["distinct_docs@4", "redundancy@4", "distinct_docs@2", "recall@5"]
    doc_level = doc_level and sep != ""  # (the document level needs a separator)
    result = rankgate.evaluate(gold, run, specs, k=3, doc_sep=sep, level="doc" if doc_level else "chunk", ties="id")
    runs = {r["query_id"]: r for r in run}
    for i, g in enumerate(gold):
        rec = runs.get(g["query_id"])
        parents = [it["chunk_id"].split(sep, 1)[0] if sep else it["chunk_id"]
                   for it in (ranked(rec["topk"]) if rec else [])]
        if doc_level:  # ranked by each document's first chunk
            parents = list(dict.fromkeys(parents))
        want = float(len(set(parents[:4])))
        assert result["distinct_docs@4"][i] == want, (sep, parents)
        assert result["distinct_docs@2"][i] == float(len(set(parents[:2])))


@settings(max_examples=examples(100), deadline=None)
@given(queries(), st.randoms(use_true_random=False))
def test_bounded_and_invariant_to_input_order(data, rnd):
    gold, run = data
    specs = [s for s in SPECS if not s.startswith("distinct_docs")]
    # trec_eval's rule does not depend on the order of the lines or of the items in a list
    a = rankgate.evaluate(gold, run, specs, ties="id")
    shuffled_run = [dict(r, topk=rnd.sample(r["topk"], len(r["topk"]))) for r in run]
    rnd.shuffle(shuffled_run)
    b = rankgate.evaluate(gold, shuffled_run, specs, ties="id")
    for spec in specs:
        va, vb = a[spec], b[spec]
        assert np.array_equal(va, vb, equal_nan=True), spec
        ok = ~np.isnan(va)
        assert ((va[ok] >= 0) & (va[ok] <= 1)).all(), spec


@settings(max_examples=examples(100), deadline=None)
@given(queries())
def test_monotone_in_k(data):
    gold, run = data
    for name in ("hit", "recall", "wrecall", "mrr", "map", "bpref", "infap", "rbp", "err"):
        specs = [f"{name}@{k}" for k in range(1, 9)]
        res = rankgate.evaluate(gold, run, specs)
        stack = np.vstack([res[s] for s in specs])
        ok = ~np.isnan(stack[0])
        assert (np.diff(stack[:, ok], axis=0) >= -1e-15).all(), name


def test_seed_worked_example():
    gold = [{"query_id": "q", "relevant": ["doc-3", "doc-9"]}]
    run = [{"query_id": "q", "retrieved": ["doc-7", "doc-3", "doc-1", "doc-9", "doc-2"]}]
    r = rankgate.evaluate(gold, run, ["hit@5", "recall@5", "mrr", "ndcg@5"])
    assert r.means["hit@5"] == 1.0
    assert r.means["recall@5"] == 1.0
    assert r.means["mrr"] == 0.5
    assert r.means["ndcg@5"] == pytest.approx(0.65, abs=0.005)


def test_every_metric_has_definition_and_reference():
    for d in all_metrics():
        assert d.summary and d.formula, d.name
        assert type(d).reference is not rankgate.MetricDefinition.reference, d.name


@pytest.mark.parametrize("text", ["recall@5", "mrr", "ndcg@10", "ndcg(gain=exp)@10", "recall(rel=2)@10",
                                  "novelty(overlap=0.25)@5", "false_evidence(min_score=0.5)@3", "rprec", "map"])
def test_spec_round_trip(text):
    m = parse_metric(text)
    assert str(m) == text
    assert parse_metric(str(m)) == m


@pytest.mark.parametrize("alias,canonical", [("P@10", "precision@10"), ("P_10", "precision@10"), ("ndcg_cut_10", "ndcg@10"),
                                             ("success@5", "hit@5"), ("recip_rank", "mrr"), ("nDCG@3", "ndcg@3"),
                                             ("ndcg(gain=linear)@3", "ndcg@3")])
def test_aliases_print_canonical(alias, canonical):
    assert str(parse_metric(alias)) == canonical


@pytest.mark.parametrize("bad,message", [
    ("ndgc@10", "did you mean 'ndcg@10'"), ("recall@0", "positive integer"), ("rprec@5", "takes no cutoff"),
    ("ndcg(gain=foo)@3", "linear|exp"), ("recall(x=1)@3", "no parameter 'x'"), ("recall(rel=0)@3", ">= 1"),
    ("recall@", "cannot parse"),
])
def test_bad_specs(bad, message):
    with pytest.raises(rankgate.errors.MetricSpecError, match=message.replace("|", r"\|").replace("(", r"\(")):
        parse_metric(bad)


def test_per_query_k_overrides_command_k():
    gold = [{"query_id": "a", "relevant": ["x"], "k": 1}, {"query_id": "b", "relevant": ["x"]}]
    run = [{"query_id": "a", "retrieved": ["y", "x"]}, {"query_id": "b", "retrieved": ["y", "x"]}]
    r = rankgate.evaluate(gold, run, ["recall", "recall@2"], k=2)
    assert r["recall"].tolist() == [0.0, 1.0]  # a uses its own k=1; b uses the command's k=2
    assert r["recall@2"].tolist() == [1.0, 1.0]  # an explicit @k wins over both


def test_user_metric_plugs_in():
    from rankgate.metrics import MetricDefinition, register

    class FirstScore(MetricDefinition):
        name = "top_score_is_two"
        applies = "all"
        cutoff = "never"
        summary = "test metric"
        formula = "1 if the top score is 2"

        def compute(self, ctx, metric, k):
            out = np.zeros(ctx.nq)
            for i in range(ctx.nq):
                if ctx.offsets[i + 1] > ctx.offsets[i]:
                    out[i] = float(ctx.score[ctx.offsets[i]] == 2.0)
            return out

        def reference(self, q, metric, k):
            return float(bool(q.scores) and q.scores[0] == 2.0)

    register(FirstScore)
    r = rankgate.evaluate({"a": {"x": 1}}, {"a": {"x": 2.0, "y": 1.0}}, ["top_score_is_two"])
    assert r.means["top_score_is_two"] == 1.0


def test_doc_level_counts_a_document_once_at_its_best_rank():
    gold = [{"query_id": "a", "relevant_chunks": [{"chunk_id": "d1#c1", "grade": 1}, {"chunk_id": "d1#c2", "grade": 3}]}]
    run = [{"query_id": "a", "retrieved": ["d2#c1", "d1#c5", "d1#c1", "d3#c1"]}]
    chunk = rankgate.evaluate(gold, run, ["recall@3", "mrr", "precision@3"])
    doc = rankgate.evaluate(gold, run, ["recall@3", "mrr", "precision@3", "ndcg@3"], level="doc")
    assert chunk.means["recall@3"] == 0.5 and chunk.means["mrr"] == pytest.approx(1 / 3)
    assert doc.means["recall@3"] == 1.0 and doc.means["mrr"] == 0.5
    assert doc.means["precision@3"] == pytest.approx(1 / 3)  # d2, d1, d3: one relevant document
    assert doc.means["ndcg@3"] == pytest.approx((3 / math.log2(3)) / 3)  # d1 carries its best grade, 3


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.lists(st.floats(0.001, 1e3), min_size=0, max_size=12), min_size=1, max_size=30), st.randoms())
def test_sparse_sums_add_in_place_order_whatever_the_array_order(per_query, rnd) -> None:
    """The grouped fast path (bincount) and the place-by-place path give the same bits: each query's
    values are added one at a time, first place first."""
    from rankgate.metrics.context import EvalContext

    nq = len(per_query)
    ctx = EvalContext(offsets=np.zeros(nq + 1, dtype=np.int64), rank_source=np.zeros(0, dtype=np.int64), grade_source=np.zeros(0),
                      judged_offsets=np.zeros(nq + 1, dtype=np.int64), judged_grade=np.zeros(0, dtype=np.int64),
                      query_k=np.zeros(nq, dtype=np.int64), default_k=5, answerable=np.zeros(nq, dtype=bool))
    triples = [(q, p, v) for q, vals in enumerate(per_query) for p, v in enumerate(vals, 1)]
    want = [0.0] * nq
    for q, _, v in triples:
        want[q] += v
    grouped = ctx.sparse_sum(np.array([t[2] for t in triples]), np.array([t[0] for t in triples], dtype=np.int64),
                             np.array([t[1] for t in triples], dtype=np.int64))
    rnd.shuffle(triples)
    shuffled = ctx.sparse_sum(np.array([t[2] for t in triples]), np.array([t[0] for t in triples], dtype=np.int64),
                              np.array([t[1] for t in triples], dtype=np.int64))
    assert grouped.tolist() == want
    assert shuffled.tolist() == want


@pytest.mark.parametrize("spec", ["ndcg", "ndcg@3", "ndcg@10", "ndcg(gain=exp)@5", "ndcg(gain=exp)"])
def test_ideal_lists_from_counts_equal_sorted_ideal_lists(spec: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both ways of building nDCG's ideal lists add the same terms in the same order: same bits."""
    from rankgate.metrics import ranking

    rng = np.random.default_rng(7)
    gold = {f"q{q}": {f"d{d}": int(rng.integers(-1, 5)) for d in rng.choice(60, int(rng.integers(1, 25)), replace=False)}
            for q in range(300)}
    run = {q: {f"d{d}": float(rng.integers(0, 9)) for d in rng.choice(60, 30, replace=False)} for q in gold}
    fast = rankgate.evaluate(gold, run, metrics=[spec]).values[spec]
    monkeypatch.setattr(ranking, "IDEAL_BY_COUNTS_MAX_GRADE", 0)
    sorted_ = rankgate.evaluate(gold, run, metrics=[spec]).values[spec]
    assert fast.tobytes() == sorted_.tobytes()


@settings(max_examples=examples(200), deadline=None)
@given(st.integers(0, 40), st.integers(1, 6), st.sampled_from([1, 3, 20, 5000, 2**20, 2**40]), st.integers(0, 2**31))
def test_distinct_rows_equal_numpys_unique_rows(n: int, w: int, high: int, seed: int) -> None:
    """nDCG's ideal sums are added once per distinct row of per-grade counts: the rows read as numbers
    give numpy's own unique rows, in its order, with its inverse (also past the table's reach and
    where the numbers would not fit in 62 bits)."""
    from rankgate.metrics.ranking import _distinct_rows

    counts = np.random.default_rng(seed).integers(0, high, (n, w)).astype(np.int64)
    rows, inverse = _distinct_rows(counts)
    want_rows, want_inverse = np.unique(counts, axis=0, return_inverse=True)
    assert rows.tolist() == want_rows.tolist() and rows.dtype == counts.dtype
    assert inverse.tolist() == want_inverse.reshape(-1).tolist()


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(st.integers(1, 40), min_size=1, max_size=12), st.booleans(), st.integers(0, 2**31))
def test_ndcg_sweep_in_one_call_equals_each_cutoff_alone(ks: list[int], per_query_k: bool, seed: int) -> None:
    """Within one evaluation a later nDCG cutoff goes on from the ideal sums of an earlier one: the bits
    must be those of each cutoff computed alone, whatever order the cutoffs come in, with per-query k too."""
    rng = np.random.default_rng(seed)
    gold = []
    for q in range(80):
        rec = {"query_id": f"q{q}",
               "relevant_chunks": [{"chunk_id": f"d{d}", "grade": int(rng.integers(1 if i == 0 else -1, 4))}
                                   for i, d in enumerate(rng.choice(50, int(rng.integers(1, 30)), replace=False))]}
        if per_query_k and q % 3 == 0:
            rec["k"] = int(rng.integers(1, 30))
        gold.append(rec)
    run = [{"query_id": f"q{q}", "topk": [{"chunk_id": f"d{d}", "score": float(rng.integers(0, 9))}
                                          for d in rng.choice(50, 25, replace=False)]} for q in range(80)]
    specs = list(dict.fromkeys([f"ndcg@{k}" for k in ks] + ["ndcg", "ndcg(gain=exp)@7", "ndcg(gain=exp)@3"]))
    together = rankgate.evaluate(gold, run, metrics=specs)
    for spec in specs:
        alone = rankgate.evaluate(gold, run, metrics=[spec])
        assert together.values[spec].tobytes() == alone.values[spec].tobytes(), spec
