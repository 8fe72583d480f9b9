"""The compiled kernels against their numpy fallbacks: same draws, same grades, same sums."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rankgate._native as accel
from rankgate.stats import bootstrap as stats
from rankgate.scoring.engine import _join_grades_numpy

from .conftest import examples

kernels = accel.kernels
needs_kernels = pytest.mark.skipif(kernels is None, reason="rankgate._native._kernels is not built in this installation")


def test_ci_builds_the_kernels() -> None:
    """CI installs with a compiler: a silent fallback there would hide a build break (and be slower)."""
    if os.environ.get("CI") and accel.mode != "off":
        assert kernels is not None, "rankgate._native._kernels did not build; see the pip install log"


def _state(seed: int) -> np.ndarray:
    return np.asarray(np.random.SFC64(seed).state["state"]["state"], dtype=np.uint64)


@needs_kernels
@pytest.mark.parametrize("n", [1, 2, 3, 7, 1000, 65_537, 3_000_000_000, 2**32 - 1])
def test_draws_are_numpy_sfc64_with_lemire_rejection(n: int) -> None:
    out = np.empty(5001, dtype=np.uint32)
    kernels.draw_indices(_state(n), n, out)
    assert np.array_equal(out.astype(np.int64), stats._Stream(_state(n), n).take(out.size))


def test_stream_is_uniform_and_continues_across_takes() -> None:
    s = stats._Stream(_state(1), 23)
    first = s.take(11)
    rest = s.take(229_989)
    assert np.array_equal(np.concatenate([first, rest])[:500], stats._Stream(_state(1), 23).take(500))
    counts = np.bincount(np.concatenate([first, rest]), minlength=23)
    assert counts.min() > 9_500 and counts.max() < 10_500  # 10,000 expected each; sd ~ 98


@needs_kernels
def test_bootstrap_counts_match_the_fallback_and_sums_run_in_query_order() -> None:
    n, rows = 9, 7  # odd n: resamples start mid-word
    values = np.eye(n)  # column j sums to the draw count of query j
    got = np.empty((rows, n))
    kernels.bootstrap_sums(_state(3), values, n, rows, got)
    want = np.empty((rows, n))
    stats._numpy_sums(_state(3), values, rows, want)
    assert np.array_equal(got, want)

    x = np.random.default_rng(0).random((2000, 3))
    sums = np.empty((5, 3))
    kernels.bootstrap_sums(_state(4), x, 3, 5, sums)
    idx = stats._Stream(_state(4), 2000).take(5 * 2000).reshape(5, 2000)
    for r in range(5):
        counts = np.bincount(idx[r], minlength=2000).astype(np.float64)
        for j in range(3):
            assert sums[r, j] == np.cumsum(counts * x[:, j])[-1]  # left to right, one rounding per step


@needs_kernels
@pytest.mark.parametrize(("n", "rows", "group", "widths"), [
    (9, 7, 2, [1, 4, 3]),  # odd n and odd resamples: a half word and a last resample without a partner
    (1000, 13, 4, [5, 5, 2]),  # groups that do not divide the resamples
    (3, 250, 250, [1]),
    (2001, 6, 64, [7, 9]),  # a group larger than the resamples
    (9000, 11, 6, [8, 4, 5, 3]),  # row tiles (4,096 rows) of the vector path; 4 + 2 resamples per group
    # eight lanes: in place (8, 16), from a copy (5-7), then four (12 = 8 + 4, 11 = 8 + 3, 13 = 8 + 5)
    (9000, 9, 4, [6, 13, 12, 11, 16, 7]),
    (4097, 5, 2, [8, 1]),  # one row past a tile
])
def test_blocks_sharing_one_draw_give_the_sums_of_one_call_per_block(n: int, rows: int, group: int,
                                                                        widths: list[int]) -> None:
    """bootstrap_sums_blocks draws each resample once for all blocks: the same floats as re-drawing per block."""
    rng = np.random.default_rng(n)
    stacks = [np.ascontiguousarray(rng.random((n, w)) * 10.0 ** rng.integers(-3, 4, size=w)) for w in widths]
    parts = [np.empty((rows, w)) for w in widths]
    kernels.bootstrap_sums_blocks(_state(n), stacks, rows, parts, group)
    for stack, part in zip(stacks, parts):
        want = np.empty((rows, stack.shape[1]))
        kernels.bootstrap_sums(_state(n), stack, stack.shape[1], rows, want)
        assert np.array_equal(part.view(np.uint64), want.view(np.uint64))


@needs_kernels
@pytest.mark.parametrize("limit", [0, 1, 2])
def test_counts_past_a_byte_are_drawn_again_in_full(limit: int) -> None:
    """The blocks kernel counts draws in bytes; a count past the limit (255; lowered here so that it
    happens) makes it draw the group again from the same point of the stream in 32-bit counts: the
    sums are bit for bit those of one call per block, and the stream goes on where it should."""
    rng = np.random.default_rng(limit)
    n, rows = 700, 9
    stacks = [rng.random((n, 6)), rng.random((n, 3))]
    want = [np.empty((rows, s.shape[1])) for s in stacks]
    kernels.bootstrap_sums_blocks(_state(n), stacks, rows, want, 4)
    before = kernels.narrow_limit(limit)
    try:
        got = [np.empty((rows, s.shape[1])) for s in stacks]
        kernels.bootstrap_sums_blocks(_state(n), stacks, rows, got, 4)
    finally:
        assert kernels.narrow_limit(before) == limit
    for a, b in zip(got, want):
        assert np.array_equal(a.view(np.uint64), b.view(np.uint64))
    with pytest.raises(ValueError):
        kernels.narrow_limit(256)


@needs_kernels
def test_blocks_kernel_refuses_inconsistent_shapes() -> None:
    with pytest.raises(ValueError):
        kernels.bootstrap_sums_blocks(_state(1), [np.ones((5, 2)), np.ones((4, 2))], 3, [np.empty((3, 2))] * 2, 2)
    with pytest.raises(ValueError):
        kernels.bootstrap_sums_blocks(_state(1), [np.ones((5, 2))], 3, [np.empty((3, 2))], 3)  # odd group


@needs_kernels
def test_bootstrap_means_are_the_fallbacks_bit_for_bit(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(8)
    cols = [rng.random(30_001) * 10.0 ** e for e in (-3, 0, 5)]
    fast = stats._resampled_means(cols, np.random.default_rng(8), 600)  # several chunks, two threads
    monkeypatch.setattr(accel, "kernels", None)
    slow = stats._resampled_means(cols, np.random.default_rng(8), 600)
    for a, b in zip(fast, slow):
        assert np.array_equal(a.view(np.uint64), b.view(np.uint64))


def _chain(counts: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The kernel's sums written out in Python floats: ``((0.0 + c0·x0) + c1·x1) + …`` per resample and column."""
    out = np.empty((counts.shape[0], values.shape[1]))
    for r in range(counts.shape[0]):
        for j in range(values.shape[1]):
            acc = 0.0
            for i in range(values.shape[0]):
                acc += float(counts[r, i]) * float(values[i, j])
            out[r, j] = acc
    return out


@settings(max_examples=examples(60), deadline=None)
@given(n=st.integers(1, 300), width=st.integers(1, 9), rows=st.lists(st.integers(1, 7), min_size=1, max_size=3),
       scale=st.integers(-300, 300), seed=st.integers(0, 2**32 - 1),
       limits=st.tuples(st.integers(1, 2000), st.integers(1, 8), st.integers(1, 40), st.integers(1, 200),
                        st.integers(1, 900)))
def test_fallback_sums_are_the_kernels_chain_of_rounded_steps(n, width, rows, scale, seed, limits) -> None:
    """The fallback's sums, whatever resamples it sums together (group, tile and draw sizes are shrunk here),
    are the chain of one rounded product and one rounded add per query in query order, and so the kernel's
    sums bit for bit: streams drawn one after another (one per chunk of resamples), values of mixed signs and
    magnitudes whose sums round at every step."""
    rng = np.random.default_rng(seed)
    values = rng.standard_normal((n, width)) * 2.0 ** rng.integers(-40, 40, size=(n, width)) * 2.0 ** scale
    states = [_state(seed + i) for i in range(len(rows))]
    got = np.empty((sum(rows), width))
    with pytest.MonkeyPatch.context() as mp:
        for name, limit in zip(("_FALLBACK_COUNTS_BYTES", "_FALLBACK_MIN_GROUP", "_FALLBACK_SUMS", "_FALLBACK_TILE",
                                "_FALLBACK_DRAWS"), limits):
            mp.setattr(stats, name, limit)
        stats._chained_sums(values, [(stats._Stream(s, n), k) for s, k in zip(states, rows)], got)
    counts = np.concatenate([np.stack([np.bincount(stats._Stream(s, n).take(k * n)[r * n:(r + 1) * n], minlength=n)
                                       for r in range(k)]) for s, k in zip(states, rows)])
    assert np.array_equal(got.view(np.uint64), _chain(counts, values).view(np.uint64))
    if kernels is not None:
        for s, k, at in zip(states, rows, np.cumsum([0, *rows])):
            part = np.empty((k, width))
            kernels.bootstrap_sums_blocks(s, [np.ascontiguousarray(values)], k, [part], 2)
            assert np.array_equal(part.view(np.uint64), got[at:at + k].view(np.uint64))


class _Piled:
    """A stream whose every draw is query 0: counts far past a byte."""

    def take(self, count: int) -> np.ndarray:
        return np.zeros(count, dtype=np.int64)


def test_fallback_counts_past_a_byte_are_kept_whole() -> None:
    values = np.random.default_rng(3).random((600, 2))
    got = np.empty((3, 2))
    stats._chained_sums(values, [(stats._Stream(_state(5), 600), 1), (_Piled(), 1), (stats._Stream(_state(6), 600), 1)],
                        got)  # (a byte's counts, then 600 on one query, then bytes again: the group widens)
    assert got[1].tolist() == [600.0 * values[0, 0], 600.0 * values[0, 1]]
    again = np.empty((1, 2))
    stats._chained_sums(values, [(stats._Stream(_state(6), 600), 1)], again)
    assert np.array_equal(got[2], again[0])


def test_a_column_does_not_depend_on_its_neighbours() -> None:
    x = np.random.default_rng(2).random(5000)
    alone = stats._resampled_means([x], np.random.default_rng(1), 300)[0]
    together = stats._resampled_means([x * 0.5, x, x * 2.0, x + 1.0, x], np.random.default_rng(1), 300)
    assert np.array_equal(alone, together[1]) and np.array_equal(alone, together[4])


# -- the grade join -------------------------------------------------------------------------------
@st.composite
def joins(draw):
    nq = draw(st.integers(0, 6))
    universe = draw(st.integers(1, 40))
    roff, rcodes, joff, jcodes, jgrades = [0], [], [0], [], []
    for _ in range(nq):
        ranked = draw(st.lists(st.integers(0, universe), max_size=25, unique=True))
        judged = draw(st.lists(st.integers(-1, universe), max_size=20, unique=True))
        rcodes += ranked
        jcodes += judged
        jgrades += [draw(st.integers(-2, 3)) for _ in judged]
        roff.append(len(rcodes))
        joff.append(len(jcodes))
    a = lambda v: np.asarray(v, dtype=np.int64)
    return a(roff), a(rcodes), a(joff), a(jcodes), a(jgrades)


@needs_kernels
@settings(max_examples=examples(300), deadline=None)
@given(joins())
def test_join_grades_matches_the_numpy_join(case) -> None:
    roff, rcodes, joff, jcodes, jgrades = case
    got = np.empty(rcodes.size)
    matched = kernels.join_grades(roff, rcodes, joff, jcodes, jgrades, got)
    want = _join_grades_numpy(roff, rcodes, joff, jcodes, jgrades)
    assert np.array_equal(got, want, equal_nan=True)
    assert matched == int((~np.isnan(want)).sum())


@needs_kernels
def test_join_grades_rejects_inconsistent_offsets() -> None:
    z = np.zeros(0, dtype=np.int64)
    with pytest.raises(ValueError):
        kernels.join_grades(np.array([0, 5]), z, np.array([0, 0]), z, z, np.empty(0))


@needs_kernels
def test_join_grades_keeps_grades_a_32_bit_word_cannot_hold() -> None:
    """The id table keeps a grade in a 32-bit word of its slot, and reads one it cannot hold (or INT32_MIN)
    from the judgements: every int64 grade comes back as the numpy join gives it."""
    a = lambda v: np.asarray(v, dtype=np.int64)
    grades = a([2**40, -(2**31), 2**31 - 1, -(2**31) + 1, -3, 2**31, 5, -(2**62)])
    roff, rcodes = a([0, 9]), a([1, 2, 3, 4, 5, 6, 7, 8, 9])
    joff, jcodes = a([0, 8]), a([1, 2, 3, 4, 5, 6, 7, 8])
    got = np.empty(rcodes.size)
    assert kernels.join_grades(roff, rcodes, joff, jcodes, grades, got) == 8
    assert np.array_equal(got, _join_grades_numpy(roff, rcodes, joff, jcodes, grades), equal_nan=True)


# -- the compiled pass of the common ranking metrics ----------------------------------------------
_COMPILED = ("hit", "recall", "precision", "mrr", "ndcg", "map")


@st.composite
def compiled_cases(draw):
    roff, rcodes, joff, jcodes, jgrades = draw(joins().filter(lambda c: c[0].size > 1))  # (the engine scores no empty set)
    nq = roff.size - 1
    if draw(st.booleans()):  # grades past the usual four levels, and a gold set of zeros and negatives
        jgrades = np.asarray([draw(st.integers(-3, 70)) for _ in jgrades.tolist()], dtype=np.int64)
    specs = []
    for _ in range(draw(st.integers(1, 8))):
        name = draw(st.sampled_from(_COMPILED))
        params = []
        if name == "ndcg" and draw(st.booleans()):
            params.append("gain=exp")
        elif name != "ndcg" and draw(st.booleans()):
            params.append(f"rel={draw(st.integers(1, 3))}")
        spec = name + (f"({','.join(params)})" if params else "")
        if name in ("precision", "hit", "recall") or draw(st.booleans()):
            spec += f"@{draw(st.integers(1, 30))}"
        specs.append(spec)
    query_k = np.asarray([draw(st.integers(0, 12)) for _ in range(nq)], dtype=np.int64)
    return roff, rcodes, joff, jcodes, jgrades, specs, query_k, draw(st.integers(1, 9)), draw(st.booleans())


def _context(roff, rcodes, joff, jcodes, jgrades, query_k, k, trec, *, compiled):
    from rankgate.metrics.context import EvalContext, JoinCodes

    lengths = np.diff(roff)
    rank = np.concatenate([np.arange(1, n + 1) for n in lengths.tolist()] or [np.zeros(0)]).astype(np.int64)
    num_rel1 = np.add.reduceat(np.append(jgrades >= 1, False).astype(np.int64), joff[:-1]) if joff.size > 1 else \
        np.zeros(0, dtype=np.int64)
    num_rel1 = np.where(np.diff(joff) > 0, num_rel1, 0)
    return EvalContext(
        offsets=roff, rank_source=rank,
        grade_source=lambda: _join_grades_numpy(roff, rcodes, joff, jcodes, jgrades),
        judged_offsets=joff, judged_grade=jgrades, query_k=query_k, default_k=k, answerable=num_rel1 > 0,
        trec=trec, codes=JoinCodes(rcodes.copy(), jcodes) if compiled else None,
    )


@needs_kernels
@settings(max_examples=examples(400), deadline=None)
@given(compiled_cases())
def test_compiled_pass_gives_each_metrics_own_values_bit_for_bit(case) -> None:
    """The one-pass kernel against each metric's numpy compute on the joined grades: every value's bits
    (NaN and 0.0 included), and the first relevant ranks, for any cutoff (per-query k too), rel, gain,
    grade range, trec or not, ids judged but never ranked (-1) and queries with no rows or judgements."""
    from rankgate.scoring.engine import _first_relevant
    from rankgate.metrics import parse_metrics
    from rankgate.metrics.ranking import compiled_values

    roff, rcodes, joff, jcodes, jgrades, specs, query_k, k, trec = case
    metrics = parse_metrics(specs)
    fast = _context(roff, rcodes, joff, jcodes, jgrades, query_k, k, trec, compiled=True)
    slow = _context(roff, rcodes, joff, jcodes, jgrades, query_k, k, trec, compiled=False)
    got = compiled_values(fast, metrics)
    assert set(got) == {str(m) for m in metrics}
    assert callable(fast.grade_source), "the compiled pass made the grade of every row"
    for m in metrics:
        want = m.definition.compute(slow, m, slow.k_for(m))
        assert got[str(m)].tobytes() == want.tobytes(), (str(m), got[str(m)], want)

    class Rows:
        rank = slow.rank

    first = _first_relevant(slow, Rows, slow.nq)  # type: ignore[arg-type]
    assert np.array_equal(fast.cache["first_relevant"], first)


@needs_kernels
def test_compiled_pass_steps_aside_where_it_cannot_match() -> None:
    """No codes, codes already spent on the grades, non-integer grades, grades past the table, or a
    metric it does not compute: the caller's numpy path is used."""
    from rankgate.metrics import parse_metrics
    from rankgate.metrics.ranking import COMPILED_MAX_GRADE, compiled_values

    roff, rcodes = np.array([0, 2]), np.array([3, 4])
    joff, jcodes, jgrades = np.array([0, 1]), np.array([4]), np.array([2])
    ndcg = parse_metrics("ndcg@10,judged@5")
    ctx = _context(roff, rcodes, joff, jcodes, jgrades, np.zeros(1, np.int64), 5, False, compiled=True)
    assert list(compiled_values(ctx, ndcg)) == ["ndcg@10"]  # (judged@5 is left to its own compute)
    assert ctx.cache["first_relevant"].tolist() == [2]
    assert compiled_values(ctx, parse_metrics("judged@5")) == {}
    assert compiled_values(_context(roff, rcodes, joff, jcodes, jgrades, np.zeros(1, np.int64), 5, False,
                                    compiled=False), ndcg) == {}
    spent = _context(roff, rcodes, joff, jcodes, jgrades, np.zeros(1, np.int64), 5, False, compiled=True)
    assert spent.codes is not None
    spent.codes.rows = None
    assert compiled_values(spent, ndcg) == {}
    for grades in (np.array([2.0]), np.array([COMPILED_MAX_GRADE + 1])):
        assert compiled_values(_context(roff, rcodes, joff, jcodes, grades, np.zeros(1, np.int64), 5, False,
                                        compiled=True), ndcg) == {}


@needs_kernels
def test_compiled_kernel_refuses_inconsistent_inputs() -> None:
    z, f = np.zeros(0, dtype=np.int64), np.zeros(0)
    one = np.array([0, 1])
    logs, gains, spec = np.array([np.nan, 0.0, 1.0]), np.zeros(4), np.array([[0, 1, 0]])
    ok = (one, np.array([7]), one, np.array([7]), np.array([1]), logs, gains, spec, np.array([[1]]), np.empty((1, 1)),
          np.empty(1, dtype=np.int64))
    kernels.rank_metrics(*ok)
    bad = {
        1: np.array([7, 8]),  # rows past the offsets are fine, offsets past the rows are not: see 0
        0: np.array([0, 3]),
        4: np.array([2]),  # a grade past the gain table (top 1)
        5: np.array([np.nan, 0.0]),  # logs too short for rank 1 + 1
        7: np.array([[6, 1, 0]]),  # an unknown kind
        8: np.array([[-1]]),  # a negative cutoff
        9: np.empty((2, 1)),  # out of another size
    }
    for at, value in bad.items():
        if at == 1:
            continue
        args = list(ok)
        args[at] = value
        with pytest.raises(ValueError):
            kernels.rank_metrics(*args)
    assert z.size == f.size == 0


# -- fixed-width ids ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "ids, numbers",
    [
        (["d000123", "d999999", "d000000"], [123, 999999, 0]),
        (["0042", "1000"], [42, 1000]),
        (["doc_01", "doc_0x"], None),  # not all digits
        (["a001", "b001"], None),  # another prefix
        (["d12", "d1"], None),  # another width
    ],
)
def test_fixed_width_ids_parse_the_same_with_and_without_kernels(ids, numbers, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyarrow as pa

    from rankgate.model.ids import _fixed_width

    arr = pa.array(ids, type=pa.string()).slice(0)
    got = _fixed_width(arr)
    monkeypatch.setattr(accel, "kernels", None)
    plain = _fixed_width(arr)
    if numbers is None:
        assert got is None and plain is None
    else:
        assert got is not None and plain is not None
        assert got[0] == plain[0] and got[2].tolist() == plain[2].tolist() == numbers


@needs_kernels
@settings(max_examples=examples(200), deadline=None)
@given(st.integers(0, 9), st.integers(1, 18), st.integers(1, 60), st.integers(0, 2**32),
       st.sampled_from([None, "digit", "prefix", "tail"]))
def test_fixed_width_kernel_reads_every_width_and_spots_every_odd_id(cut: int, digits: int, n: int, seed: int,
                                                                        odd: str | None) -> None:
    """The word-at-a-time middle and the byte-wise edges of the kernel: numbers of prefix + digits ids
    of every width, and False for one id with another prefix byte or a non-digit anywhere."""
    rng = np.random.default_rng(seed)
    prefix = "".join(rng.choice(list("abcdXYZ_-"), size=cut))
    numbers = rng.integers(0, 10**digits, size=n, dtype=np.int64)
    ids = [prefix + str(v).zfill(digits) for v in numbers.tolist()]
    if odd is not None:
        i = int(rng.integers(0, n))
        chars = list(ids[i])
        if odd == "prefix" and cut:
            chars[int(rng.integers(0, cut))] = "~"
        elif odd == "digit":
            chars[cut + int(rng.integers(0, digits))] = chr(int(rng.choice([47, 58, 32, 97, 0xE9])))
        else:
            chars[-1] = "/"
        ids[i] = "".join(chars)
    data = "".join(ids).encode("latin-1")
    width = cut + digits
    if len(data) != n * width:
        return  # (a two-byte replacement: not this test's shape)
    offsets = np.arange(n + 1, dtype=np.int32) * width
    out = np.empty(n, dtype=np.int64)
    ok = kernels.fixed_width_numbers(np.frombuffer(data, dtype=np.uint8), offsets, width, cut, out)
    want = all(t[:cut] == ids[0][:cut] and t[cut:].isdigit() and t[cut:].isascii() for t in ids)
    assert ok == want
    if want:
        assert out.tolist() == [int(t[cut:]) for t in ids]


# -- the ranking rule for unsorted runs -------------------------------------------------------------
@st.composite
def unsorted_runs(draw):
    n = draw(st.integers(1, 60))
    nq = draw(st.integers(1, 5))
    ids = st.sampled_from(["", "a", "b", "ab", "b0", "d10", "d9", "é", "éa", "z", "zz"])
    query = draw(st.lists(st.integers(0, nq - 1), min_size=n, max_size=n))
    score = draw(st.lists(st.sampled_from([0.0, 1.0, 1.5, 2.0, 1e-300, -3.25]), min_size=n, max_size=n))
    doc = draw(st.lists(ids, min_size=n, max_size=n))
    wide = draw(st.booleans())
    return np.asarray(query, dtype=np.int64 if wide else np.int32), np.asarray(score), doc


@needs_kernels
@settings(max_examples=examples(300), deadline=None)
@given(unsorted_runs())
def test_rank_permutation_matches_arrows_sort(case) -> None:
    import pyarrow as pa

    from rankgate.model.ranking import _full_sort, _full_sort_arrow

    query, score, doc = case
    arr = pa.array(doc, type=pa.string())
    want = _full_sort_arrow(query, arr, score)
    direct = np.empty(len(doc), dtype=np.int64)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32, count=len(doc) + 1)
    data = np.frombuffer(arr.buffers()[2], dtype=np.uint8) if arr.buffers()[2] is not None else np.zeros(0, np.uint8)
    kernels.rank_permutation(query, int(query.max()) + 1, score, offsets, data, direct)
    assert np.array_equal(direct, want)
    got = _full_sort(query, arr, score)
    assert np.array_equal(got, want)
    sliced = pa.array(["pad", *doc], type=pa.string()).slice(1)  # an array with an offset
    assert np.array_equal(_full_sort(query, sliced, score), got)


_SPECIAL = [0.0, -0.0, 1.0, 0.1, 1e-5, 1e16, 1e-300, 5e-324, 2.0**53, float("inf"), -float("inf"), float("nan"),
            123456789012345678.0, 0.30000000000000004]


@needs_kernels
@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(_SPECIAL)), max_size=40),
       st.lists(st.text(max_size=6), min_size=1, max_size=5))
def test_csv_rows_writes_the_lines_python_writes(values: list[float], table: list[str]) -> None:
    """csv_rows: float cells as repr() writes them (NaN empty), text and coded cells as given."""
    n = len(values)
    x = np.array(values, dtype=np.float64)
    texts = [table[i % len(table)] + str(i) for i in range(n)]
    codes = np.arange(n, dtype=np.int64) % len(table)
    got = kernels.csv_rows([texts, x, (table, codes)], n)
    want = "".join(f"{t},{'' if v != v else repr(v)},{table[c]}\n" for t, v, c in zip(texts, values, codes))
    assert got == want


@needs_kernels
def test_csv_rows_keeps_reprs_right_when_values_share_a_slot() -> None:
    """Recent reprs are reused by a hash of the value's bits: many distinct values, repeated and
    interleaved (so that slots are taken over back and forth), still give repr() of each."""
    rng = np.random.default_rng(3)
    pool = np.concatenate((rng.random(20000), rng.integers(0, 11, 50) / 10, [0.0, -0.0, 1e-310, 5e-324, -1.5e300]))
    x = pool[rng.integers(0, pool.size, 60000)]
    got = kernels.csv_rows([x, x[::-1].copy()], x.size)
    assert got == "".join(f"{a!r},{b!r}\n" for a, b in zip(x.tolist(), x[::-1].tolist()))


@needs_kernels
def test_csv_rows_refuses_columns_it_cannot_write() -> None:
    with pytest.raises(ValueError):
        kernels.csv_rows([["a", "b"], np.zeros(3)], 2)
    with pytest.raises(ValueError):
        kernels.csv_rows([(["x"], np.array([0, 1], dtype=np.int64))], 2)  # a position outside the table
    with pytest.raises(TypeError):
        kernels.csv_rows([["a", 1]], 2)


@needs_kernels
def test_metrics_csv_is_the_same_with_and_without_the_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """Large enough for every column form: mostly distinct (nDCG), few values (hit@k), segment
    fields that need quoting or defusing, and NaN cells (a metric not applicable)."""
    from rankgate.render import exports
    from rankgate.model.results import EvaluationResult

    rng = np.random.default_rng(5)
    n = 3000
    ndcg = rng.random(n)
    ndcg[::7] = np.nan
    values = {"ndcg@10": ndcg, "hit@10": (rng.random(n) < 0.6).astype(np.float64),
              "precision@10": rng.integers(0, 11, n) / 10.0, "tiny": rng.random(n) * 1e-7}
    fields = {"tier": tuple(("a,b", '"q"', "=1+1", "é", None)[i % 5] for i in range(n))}
    # logged latencies: none for some queries, ints and floats; one column holds a logged NaN
    latency = {"retrieve": [None if i % 9 == 0 else float(i % 97) + (0.125 if i % 2 else 0) for i in range(n)],
               "rerank": [float("nan") if i == 5 else None if i % 4 == 0 else i / 7 for i in range(n)]}
    result = EvaluationResult(query_ids=tuple(f"q{i}" if i % 11 else f"-q,{i}" for i in range(n)),
                              metric_names=tuple(values), values=values, fields=fields, info={"latency_ms": latency})
    fast = exports.metrics_csv(result)
    assert fast.split("\n")[6].endswith(",nan") and fast.split("\n")[1].endswith(",,")
    monkeypatch.setattr(accel, "kernels", None)
    assert exports.metrics_csv(result) == fast


# -- whether any segment repeats a code -------------------------------------------------------------
@needs_kernels
@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.lists(st.integers(0, 40), max_size=30), max_size=8), st.sampled_from([0, 1 << 26, -(1 << 40), 1 << 62]))
def test_segments_distinct_says_what_the_sort_finds(segments, shift) -> None:
    """The kernel (a bit table for codes below 2^26, else a hash) against the numpy search for repeats,
    which it short-cuts: True exactly when no segment holds a code twice."""
    from rankgate.model.ids import segment_duplicates

    codes = np.asarray([c + shift for seg in segments for c in seg], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum([len(seg) for seg in segments]))).astype(np.int64)
    want = all(len(set(seg)) == len(seg) for seg in segments)
    assert kernels.segments_distinct(codes, offsets) is want
    found = segment_duplicates(codes, offsets)
    assert (found.size == 0) is want
    with pytest.MonkeyPatch.context() as mp:  # the numpy search alone finds the same rows
        mp.setattr(accel, "kernels", None)
        assert np.array_equal(segment_duplicates(codes, offsets), found)


@needs_kernels
def test_segments_distinct_refuses_offsets_past_the_codes() -> None:
    with pytest.raises(ValueError):
        kernels.segments_distinct(np.zeros(2, dtype=np.int64), np.array([0, 3]))


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.sampled_from(_SPECIAL), max_size=60))
def test_the_distinct_count_that_picks_the_csv_way_is_uniques(values: list[float]) -> None:
    """metrics.csv's choice of writing a column's distinct values once counts a sample's distinct
    values from a sort (-0.0 equal to 0.0, NaN counted once), as ``np.unique`` counts them."""
    from rankgate.render.exports import _distinct

    x = np.array(values, dtype=np.float64)
    assert _distinct(x) == np.unique(x).size
