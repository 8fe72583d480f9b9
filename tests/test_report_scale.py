"""The report's fast paths give exactly what the plain ones give: distinct parents from arrow ids,
column blocks of the bootstrap, cuts taken from deeper cuts, lazy gold judgements, reads of a few rows
from a chunked column."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rankgate
from rankgate.stats import bootstrap as stats
from rankgate.io import load_gold, load_run
from rankgate.scoring.engine import doc_mapper
from rankgate.metrics.context import EvalContext
from rankgate.render import details as dt

from .conftest import examples

GOLD = [
    {"query_id": "q1", "relevant_chunks": [{"chunk_id": "a#1", "grade": 2}, {"chunk_id": "b#1", "grade": 0}]},
    {"query_id": "q2", "relevant_chunks": [{"chunk_id": "c#9", "grade": 1}, {"chunk_id": "c#8", "grade": 1}]},
    {"query_id": "q3", "relevant_chunks": [{"chunk_id": "x", "grade": 1}]},
]
RUN = [
    {"query_id": "q1", "retrieved": ["a#1", "a#2", "b#1", "a#3", "c#1"]},
    {"query_id": "q2", "retrieved": ["c#9", "c#8", "d#1", "d#2"]},
    {"query_id": "q3", "retrieved": []},
]


@pytest.mark.parametrize("options, distinct, redundancy", [
    ({}, [2, 2, 0], [1 - 2 / 4, 1 - 2 / 4, None]),                       # parents by '#'
    ({"doc_sep": ""}, [4, 4, 0], [0.0, 0.0, None]),                     # every chunk its own document
    ({"doc_map": {"a#1": "A", "a#2": "A", "b#1": "A", "a#3": "Z"}}, [2, 4, 0], [0.5, 0.0, None]),
    ({"level": "doc"}, [3, 2, 0], [0.0, 0.0, None]),                      # doc level: repeated documents are one item
])
def test_distinct_docs_and_redundancy_by_hand(options, distinct, redundancy):
    r = rankgate.evaluate(GOLD, RUN, ["distinct_docs@4", "redundancy@4"], **options)
    assert r["distinct_docs@4"].tolist() == [float(x) for x in distinct]
    got = r["redundancy@4"]
    for g, want in zip(got.tolist(), redundancy):
        assert (np.isnan(g) if want is None else g == want)


def test_parent_codes_without_arrow_ids_match():
    """A context built by hand (no arrow ids) counts parents through the materialised ids, alike."""
    ids = ["a#1", "a#2", "b#1", "c#1", "c#2"]
    ctx = EvalContext(offsets=np.array([0, 3, 5]), rank_source=np.array([1, 2, 3, 1, 2]), grade_source=np.full(5, np.nan),
                      judged_offsets=np.array([0, 0, 0]), judged_grade=np.zeros(0, np.int64), query_k=np.zeros(2, np.int64),
                      default_k=5, answerable=np.zeros(2, bool), docs=lambda: ids, doc_of=doc_mapper("#", None))
    distinct, rows = ctx.distinct_parents(np.array([3, 3]))
    assert distinct.tolist() == [2, 1] and rows.tolist() == [3, 2]
    arrow = EvalContext(**{**ctx.__dict__, "cache": {}, "docs_at": lambda r: pa.array(ids).take(pa.array(r))})
    assert arrow.distinct_parents(np.array([3, 3]))[0].tolist() == [2, 1]


@pytest.mark.parametrize("sep", ["#", "::", "é"])
def test_parent_codes_split_at_once_match_the_id_by_id_mapping(sep):
    """doc_mapper's cut at the first separator is applied to the whole dictionary at once: the same codes
    as mapping id by id (a doc_of without the marker), in the same order of first appearance."""
    rng = np.random.default_rng(len(sep))
    parts = ["", "a", "b", "ü", "a" + sep, sep, "x" + sep + "y" + sep + "z"]
    ids = ["".join(rng.choice(parts, size=3)) for _ in range(400)]
    fast = doc_mapper(sep, None)
    assert getattr(fast, "split_sep", None) == sep
    slow = lambda chunk: fast(chunk)  # noqa: E731 - the same mapping, without the marker
    rows = np.arange(len(ids))[::-1].copy()
    ctxs = [EvalContext(offsets=np.array([0, len(ids)]), rank_source=np.arange(1, len(ids) + 1), grade_source=np.full(len(ids), np.nan),
                        judged_offsets=np.array([0, 0]), judged_grade=np.zeros(0, np.int64), query_k=np.zeros(1, np.int64),
                        default_k=5, answerable=np.zeros(1, bool), docs=lambda: ids, doc_of=f,
                        docs_at=lambda r: pa.array(ids).take(pa.array(r))) for f in (fast, slow)]
    got, want = (c.parent_codes(rows) for c in ctxs)
    assert got.tolist() == want.tolist()
    assert len(set(got.tolist())) == len({fast(i) for i in ids})


def test_bootstrap_column_blocks_change_no_number(monkeypatch):
    rng = np.random.default_rng(7)
    values = {f"m{j}": np.where(rng.random(300) < 0.1, np.nan, rng.random(300)) for j in range(11)}
    whole = stats.values_cis(values, 3, 400, 0.9)
    monkeypatch.setattr(stats, "_CACHE_BYTES", 8 * 300 * 2)  # blocks of the minimum width
    monkeypatch.setattr(stats, "_MIN_BLOCK_COLUMNS", 1)
    blocked = stats.values_cis(values, 3, 400, 0.9)
    alone = {name: stats.values_cis({name: v}, 3, 400, 0.9)[name] for name, v in values.items()}
    assert whole == blocked == alone


def test_metric_order_and_cuts_change_no_value():
    rng = np.random.default_rng(1)
    gold = [{"query_id": f"q{i}", "relevant_chunks": [{"chunk_id": f"d{j}", "grade": int(rng.integers(0, 4))}
                                                        for j in rng.choice(40, 6, replace=False)]} for i in range(60)]
    run = [{"query_id": f"q{i}", "retrieved": [f"d{j}" for j in rng.permutation(40)[: int(rng.integers(0, 30))]]}
           for i in range(60)]
    specs = [f"{m}@{k}" for m in ("recall", "ndcg", "precision", "mrr") for k in (1, 2, 3, 5, 8, 13, 21)]
    together = rankgate.evaluate(gold, run, specs)
    for spec in specs:
        alone = rankgate.evaluate(gold, run, [spec])
        assert np.array_equal(together[spec], alone[spec], equal_nan=True), spec
    backwards = rankgate.evaluate(gold, run, specs[::-1])
    assert list(backwards.metric_names) == specs[::-1]
    for spec in specs:
        assert np.array_equal(together[spec], backwards[spec], equal_nan=True), spec


def test_lazy_gold_index_counts_match_the_per_query_ones(tmp_path):
    path = tmp_path / "gold.jsonl"
    path.write_text("\n".join([
        '{"query_id": "q1", "relevant_chunks": [{"chunk_id": "a#1", "grade": 2}, {"chunk_id": "a#2", "grade": 0}]}',
        '{"query_id": "q2", "relevant_chunks": [{"chunk_id": "b#1", "grade": 1}, {"chunk_id": "c#1", "grade": 3}]}',
        '{"query_id": "q3", "no_answer": true}',
    ]) + "\n", encoding="utf-8")
    g = load_gold(str(path))
    for level in ("chunk", "doc"):
        gi = dt.GoldIndex(g, level, doc_mapper("#", None))
        assert gi.relevant_counts().tolist() == [gi.relevant_count(q) for q in g.query_ids]
        assert gi.judged_counts().tolist() == [len(gi.judged[i]) for i in range(len(g.query_ids))]
    assert [j.chunk_id for j in dt.GoldIndex(g, "chunk", doc_mapper("#", None)).judged[1]] == ["b#1", "c#1"]


def test_relevant_counts_of_numbered_ids(tmp_path):
    """Ids such as d000123 are counted by their number (no string hashing): the same answers."""
    path = tmp_path / "qrels.txt"
    path.write_text("q1 0 d000001 1\nq1 0 d000002 0\nq2 0 d000003 1\nq2 0 d000010 3\nq3 0 d000002 0\n",
                    encoding="utf-8")
    g = load_gold(str(path))
    gi = dt.GoldIndex(g, "chunk", doc_mapper("#", None))
    assert gi.relevant_counts().tolist() == [gi.relevant_count(q) for q in g.query_ids] == [1, 2, 0]


def test_strings_at_reads_rows_of_a_chunked_column():
    col = pa.chunked_array([["a", "b"], [], ["c"], ["d", "e", "f"]])
    rows = [5, 0, 2, 3, 2]
    assert dt.strings_at(col, rows) == col.take(rows).to_pylist() == ["f", "a", "c", "d", "c"]
    assert dt.strings_at(col, []) == []
    assert dt.strings_at(pa.array(["x", "y"]), [1]) == ["y"]


@pytest.mark.parametrize("values", [[], [5], [3, 3, 3], [2, -1, 2, 7, -1, 0], list(range(50, 0, -3)) * 2])
def test_sorted_unique_is_np_unique(values):
    from rankgate.metrics.context import sorted_unique

    a = np.asarray(values, dtype=np.int64)
    got = sorted_unique(a)
    assert got.dtype == np.int64 and got.tolist() == np.unique(a).tolist()


@settings(max_examples=examples(60), deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["id", "input"]), st.booleans(), st.booleans())
def test_ranked_lists_query_by_query_are_the_whole_rankings(seed, ties, ranks, zeros):
    """A grouped run is ranked query by query as lists are asked for: every query's rows and every
    top score equal those of ranking the whole run (ties, explicit ranks on some queries, zero scores
    of both signs, empty and repeated ids), also past the number of lists ranked one by one."""
    from rankgate.io import Run
    from rankgate._util.arrow import strings_of

    rng = np.random.default_rng(seed)
    nq = int(rng.integers(1, 30))
    counts = rng.integers(0, 9, nq)
    query = np.repeat(np.arange(nq, dtype=np.int64), counts)
    n = query.size
    score = rng.integers(-2, 3, n).astype(np.float64) / 2
    if zeros:
        score[rng.random(n) < 0.3] = -0.0
    docs = strings_of([f"d{int(x)}" for x in rng.integers(0, 12, n)])
    order = None
    if ranks and n:
        order = np.where(rng.random(n) < 0.7, rng.integers(1, 10, n), np.nan).astype(np.float64)
    run = Run(query_ids=[f"q{i}" for i in range(nq)], r_query=query, r_doc=docs, r_score=score, r_order=order,
              source="run", ties=ties)
    whole = dt.RankedLists(run, ties=ties)
    whole.order  # noqa: B018 - ranked whole first
    for limit in (512, 3):
        lazy = dt.RankedLists(run, ties=ties)
        lazy.LAZY_LISTS = limit
        for q in run.query_ids:
            assert lazy.rows(q) == whole.rows(q)
            assert lazy.rows(q, 2) == whole.rows(q, 2)
        got, want = dt.RankedLists(run, ties=ties).top_scores(), whole.top_scores()
        assert got == want and [math.copysign(1, v) for v in got.values()] == [math.copysign(1, v) for v in want.values()]


def test_a_top_score_of_zero_keeps_the_sign_the_ranking_gives() -> None:
    """-0.0 and 0.0 tie; trec_eval's rule then ranks d5 above d1, so rank 1 holds -0.0 here."""
    from rankgate.io import Run
    from rankgate._util.arrow import strings_of

    run = Run(query_ids=["q"], r_query=np.zeros(2, dtype=np.int64), r_doc=strings_of(["d5", "d1"]),
              r_score=np.array([-0.0, 0.0]), source="run", ties="id")
    top = dt.RankedLists(run, ties="id").top_scores()["q"]
    assert top == 0.0 and math.copysign(1, top) == -1


@pytest.mark.parametrize("shape", ["in order", "ties to fix", "shuffled"])
def test_ranked_lists_read_rows_as_the_whole_permutation_gives_them(shape, tmp_path):
    """RankedLists keeps rank_order's small form (no whole permutation unless rows move between
    queries): every position must map to the row the whole permutation names."""
    from rankgate.model.ranking import rank_rows

    rng = np.random.default_rng(3)
    lines = []
    for q in range(40):
        scores = np.sort(rng.integers(0, 4 if shape == "ties to fix" else 10**6, size=12))[::-1]
        lines += [f"q{q:02d} Q0 d{int(d):04d} {r + 1} {float(s)} t"
                  for r, (d, s) in enumerate(zip(rng.choice(5000, 12, replace=False), scores))]
    if shape == "shuffled":
        rng.shuffle(lines)
    path = tmp_path / "run.trec"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    r = load_run(str(path))
    lists = dt.RankedLists(r)
    want = rank_rows(r.r_query, r.r_doc, r.r_score, r.r_order, ties="id")
    assert lists.rows_at(np.arange(want.size)).tolist() == want.tolist()
    assert (lists.order.perm is not None) == (shape == "shuffled")
    if shape == "ties to fix":
        assert lists.order.rows is not None and lists.order.rows.size
