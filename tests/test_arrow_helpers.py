"""The numpy/arrow helpers the readers and the report share (rankgate._util.arrow), and exact means."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rankgate._util.arrow import code_counts, none_contains, take_rows

from .conftest import examples


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(st.lists(st.text(max_size=4), max_size=6), min_size=1, max_size=5), st.data())
def test_take_rows_of_a_chunked_column_is_pyarrows_take(chunks: list[list[str]], data: st.DataObject) -> None:
    """Chunk by chunk, rows in any order and repeated: the values of pyarrow's own take, one array."""
    column = pa.chunked_array([pa.array(c, type=pa.string()) for c in chunks], type=pa.string())
    n = len(column)
    rows = data.draw(st.lists(st.integers(0, max(n - 1, 0)), max_size=12)) if n else []
    got = take_rows(column, np.asarray(rows, dtype=np.int64))
    assert isinstance(got, pa.Array) and got.type == pa.string()
    assert got.to_pylist() == column.take(pa.array(rows, type=pa.int64())).to_pylist()
    assert take_rows(column.combine_chunks(), np.asarray(rows, dtype=np.int64)).to_pylist() == got.to_pylist()


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.integers(0, 40), max_size=300), st.integers(0, 50), st.sampled_from([1, 7, 1 << 22]))
def test_code_counts_are_bincounts_part_by_part(codes: list[int], n: int, part: int) -> None:
    x = np.asarray(codes, dtype=np.int32)
    want = np.bincount(x, minlength=n)
    got = code_counts(x, n, part=part)
    assert got.dtype == np.int64 and got.tolist() == want.tolist()


_FLOATS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(0, 1),
    st.sampled_from([0.0, -0.0, 0.1, 1 / 3, 5e-324, -5e-324, 2.0**-900, 1e300, -1e300, 1.7e308, 0.5]),
    st.integers(-1074, 1000).map(lambda e: 2.0**e),  # powers of two: sums that land on ties
    st.integers(-1074, 1000).map(lambda e: -(2.0**e)),
)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(_FLOATS, min_size=1, max_size=40), st.integers(1, 60), st.integers(0, 2**32 - 1))
# The two bugs this test's pool found (both gave a last bit other than fsum's): a negative value below one
# digit (its remainder was taken below the floor), and a tie broken by a value 1,000+ binary orders down.
@example(pool=[0.0, 2.0**79, -1.0, -6.0446289193256264e23], repeat=1, seed=0)
@example(pool=[2.0**992, 2.0**939, 2.0**-899], repeat=86, seed=0)
def test_exact_mean_of_an_array_is_fsums_mean(pool: list[float], repeat: int, seed: int) -> None:
    """Means of arrays (past the size where the digit sum takes over) are fsum's, bit for bit, or
    fsum's own error: values of every size and sign, subnormals, signed zeros, near overflow."""
    import math

    from rankgate._util.jsonable import _EXACT_SUM_FROM, exact_mean

    rng = np.random.default_rng(seed)
    x = np.asarray(pool * (_EXACT_SUM_FROM // len(pool) + repeat), dtype=np.float64)
    rng.shuffle(x)
    try:
        want: object = math.fsum(x.tolist()) / x.size
    except OverflowError:
        want = OverflowError
    try:
        got: object = exact_mean(x)
    except OverflowError:
        got = OverflowError
    assert got == want or (isinstance(got, float) and isinstance(want, float) and math.isnan(got) and math.isnan(want))
    if isinstance(got, float) and got == 0.0:
        assert math.copysign(1.0, got) == math.copysign(1.0, want)  # type: ignore[arg-type]


def test_exact_mean_sees_a_tiny_value_that_breaks_a_tie() -> None:
    """The big values sum to exactly half a unit of the last place (a tie, which rounds to even); a tiny
    value far below decides the rounding. It must be counted, or left to fsum."""
    import math

    from rankgate._util.jsonable import exact_mean

    for values in ([2.0**1000, 2.0**947, 2.0**-899], [1.0, 2.0**-53, 2.0**-300], [1.0, 2.0**-53, -(2.0**-300)],
                   [2.0**40, 2.0**-13, 2.0**-250]):
        x = np.asarray(values + [0.0] * 600)
        assert exact_mean(x) == math.fsum(x.tolist()) / x.size, values


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.lists(st.text(alphabet="ab#é", max_size=5), max_size=6), min_size=1, max_size=4),
       st.text(alphabet="ab#é", min_size=1, max_size=6), st.integers(0, 2), st.booleans())
@example(chunks=[["é"]], text="éé", cut=0, large=False)  # found by this test: more bytes than the chunk's
def test_none_contains_is_never_wrong_when_it_says_none(chunks: list[list[str]], text: str, cut: int, large: bool) -> None:
    """True only when no string holds the text (in chunks, sliced, of either offset width); when it
    says False, the text is in a string or spans two neighbours in the data buffer."""
    kind = pa.large_string() if large else pa.string()
    column = pa.chunked_array([pa.array(c, type=kind).slice(min(cut, len(c))) for c in chunks], type=kind)
    values = [v for c in column.chunks for v in c.to_pylist()]
    if none_contains(column, text):
        assert not any(text in v for v in values)
    else:
        assert any(text in "".join(c.to_pylist()) for c in column.chunks)
    assert none_contains(column.combine_chunks(), text) == (not any(text in v for v in values)) or \
        text in "".join(values)
    assert not none_contains(pa.array([1, 2]), text)  # (not strings: not known)


@pytest.mark.parametrize(("chunks", "text"), [
    ([["é"]], "éé"),  # 2 bytes searched for 4
    ([["ab"]], "abab"),  # the same in ASCII: the first bytes match, the rest lies past the data
    ([["abab", "ab"]], "abab"),  # a sliced chunk below (its data buffer is longer than its strings)
    ([["a"], [""], ["a", "b"]], "abab"),  # chunks of several lengths below the text, one empty
])
@pytest.mark.parametrize("large", [False, True])
def test_none_contains_a_text_longer_than_a_chunk(chunks: list[list[str]], text: str, large: bool) -> None:
    """A text with more bytes than a chunk's strings is in none of them (the window ends before it starts)."""
    kind = pa.large_string() if large else pa.string()
    parts = [pa.array(c, type=kind) for c in chunks]
    if chunks[0] == ["abab", "ab"]:
        parts[0] = parts[0].slice(1)
    column = pa.chunked_array(parts, type=kind)
    assert none_contains(column, text) is True
    joined = "".join(column.combine_chunks().to_pylist())
    assert none_contains(column.combine_chunks(), text) is (text not in joined)
