"""Item ids become integer codes exactly: equal codes if and only if equal strings."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankgate.model.ids import item_codes, segment_duplicates

from .conftest import examples


def check(run, gold):
    rc, gc = item_codes(pa.array(run, pa.string()), pa.array(gold, pa.string()))
    for i, a in enumerate(run):
        for j, b in enumerate(run):
            assert (rc[i] == rc[j]) == (a == b), (a, b)
        for j, b in enumerate(gold):
            assert (rc[i] == gc[j]) == (a == b), (a, b)
    for j, b in enumerate(gold):
        if b not in run:
            assert gc[j] not in set(rc.tolist()) or gc[j] == -1


def test_numeric_ids_with_leading_zeros_and_signs_are_not_confused():
    check(["d7", "d10", "d123"], ["d007", "d7", "d+7", "d 7", "x7", "d-7", "d10", "7"])
    check(["184", "29", "0"], ["0184", "184", "00", "0", "+29"])
    check(["d7", "d007"], ["d7", "d007"])  # not canonical: falls back to dictionary codes
    check(["a#1", "b#2"], ["a#1", "b#1"])
    check(["d062", "d007", "d100"], ["d62", "d062", "d7", "d0007", "d+07", "d 07", "x007", "d100"])  # fixed width
    check(["0062", "0007"], ["62", "0062", "7", "+007", "0007"])
    many = [f"doc_{i:06d}" for i in range(5000)]
    check(many[:40], many[20:60] + ["doc_00001", "doc_0000001", "doc_+00001", "doc_00001x"] * 1100)


ids = st.text(alphabet="d0179#-+ ", min_size=1, max_size=4)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(ids, min_size=1, max_size=8), st.lists(ids, max_size=8))
def test_codes_are_exact(run, gold):
    check(run, gold)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.lists(st.integers(0, 6), max_size=7), min_size=1, max_size=6))
def test_segment_duplicates(segments):
    codes = np.array([c for s in segments for c in s], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum([len(s) for s in segments])))
    want = []
    pos = 0
    for s in segments:
        seen = set()
        for c in s:
            if c in seen:
                want.append(pos)
            seen.add(c)
            pos += 1
    assert segment_duplicates(codes, offsets).tolist() == want


def test_query_codes_grouped_and_not():
    from rankgate.io.trec import _codes

    assert _codes(pa.array(["q1", "q1", "q2", "q2", "q2"]))[0] == ["q1", "q2"]
    assert _codes(pa.array(["q1", "q1", "q2", "q2", "q2"]))[1].tolist() == [0, 0, 1, 1, 1]
    assert _codes(pa.array(["a", "a", "b", "a"]))[0] == ["a", "b"]
    assert _codes(pa.array(["a", "a", "b", "a"]))[1].tolist() == [0, 0, 1, 0]
    assert _codes(pa.array(["x"]))[1].tolist() == [0]


def test_judgement_check_does_not_overflow_with_narrow_query_codes() -> None:
    """Query codes may be int32 (runs keep them narrow); the (query, item) key must still be int64.

    65,536 distinct items make the key (query * 65,537 + item); query 65,535 gives 2**32 - 1, which
    int32 arithmetic wraps to -1, so (q65535, item 1) would collide with (q0, item 0)."""
    import pyarrow as pa

    from rankgate.model.gold_run import Gold
    from rankgate.io.trec import check_unique_judgements

    items = 65_536
    queries = np.ones(items, dtype=np.int32)
    queries[0], queries[1] = 0, 65_535
    gold = Gold(
        query_ids=[f"q{i}" for i in range(65_536)],
        j_query=queries,
        j_doc=pa.array([f"x{i}" for i in range(items)]),
        j_grade=np.ones(items, dtype=np.int64),
    )
    check_unique_judgements(gold)  # every pair is distinct: no error


@pytest.mark.parametrize(
    "chunks",
    [
        [["d001", "d002"], [], ["d010", "d002"]],  # fixed width in every chunk: parsed chunk by chunk
        [["d001", "d002"], ["e010"]],  # another prefix in a later chunk
        [["d001"], ["d10"]],  # another width in a later chunk
        [["x", "y"], ["y", "zz"]],  # not numbers at all
    ],
)
def test_item_codes_of_a_chunked_column_equal_those_of_the_combined_column(chunks) -> None:
    chunked = pa.chunked_array([pa.array(c, type=pa.string()) for c in chunks], type=pa.string())
    gold = pa.array(["d002", "y", "e010", "nope", "d10"])
    run_codes, gold_codes = item_codes(chunked, gold)
    flat_run, flat_gold = item_codes(chunked.combine_chunks(), gold)
    assert run_codes.tolist() == flat_run.tolist() and gold_codes.tolist() == flat_gold.tolist()
    ids = chunked.to_pylist()
    for i, j in [(a, b) for a in range(len(ids)) for b in range(len(ids))]:
        assert (run_codes[i] == run_codes[j]) == (ids[i] == ids[j])


def test_judgement_check_of_unsorted_qrels_with_huge_numeric_ids() -> None:
    """Ids that are numbers up to 10**18 become codes of that size: no (query, code) arithmetic may
    overflow. With the largest id 10**18 - 1, query 18 times 10**18 wraps in int64 onto
    (q0, id 1) + 446744073709551616, the first id below."""
    from rankgate.model.gold_run import Gold
    from rankgate.io.trec import check_unique_judgements

    gold = Gold(
        query_ids=[f"q{i}" for i in range(19)],
        j_query=np.array([18, 0, 5]),  # not grouped by query
        j_doc=pa.array(["d446744073709551617", "d000000000000000001", "d999999999999999999"]),
        j_grade=np.ones(3, dtype=np.int64),
    )
    check_unique_judgements(gold)  # three different pairs: no error


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 40), st.integers(0, 3)), min_size=1, max_size=120),
       st.sampled_from([("d", 3, 1), ("DOC-", 5, 1), ("", 4, 1), ("x", 18, 10**16)]))
def test_ties_broken_by_fixed_width_numbers_as_by_the_ids(rows, shape) -> None:
    """Parsed fixed-width ids order as the strings do, so either breaks ties the same way."""
    from rankgate.model.ids import item_codes_ordered
    from rankgate.model.ranking import rank_order

    prefix, width, scale = shape  # (a large scale: ids too far apart for one packed sort key)
    rows = sorted(rows, key=lambda r: (r[0], -r[2]))  # grouped by query, scores descending: ties only
    query = np.array([r[0] for r in rows], dtype=np.int64)
    ids = pa.array([f"{prefix}{r[1] * scale:0{width}d}" for r in rows], pa.string())
    score = np.array([float(r[2]) for r in rows])
    codes, _, ordered = item_codes_ordered(ids, pa.array([], pa.string()))
    assert ordered
    by_keys = rank_order(query, ids, score, None, id_keys=codes).full(len(rows))
    by_ids = rank_order(query, ids, score, None).full(len(rows))
    assert by_keys.tolist() == by_ids.tolist()
