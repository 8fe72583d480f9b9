"""Bootstrap confidence intervals, paired tests and multiple-comparison correction.

Everything here works on per-query values (``float64``, NaN = the metric does not apply to that
query) and uses only the queries where the metric applies; paired functions use the queries where
it applies in *both* runs.

Methods
-------
Confidence interval of a mean (:func:`bootstrap_ci`)
    Percentile bootstrap over queries: draw ``n`` queries with replacement from the ``n`` that apply,
    take the mean, repeat ``resamples`` times; the interval is the ``(1 - c)/2`` and
    ``(1 + c)/2`` quantiles of those means (numpy's default linear interpolation).
Confidence interval of a paired change (:func:`paired_bootstrap_ci`)
    The same, on the per-query differences ``candidate − baseline``: the resampled unit is the query,
    so both runs move together and query difficulty cancels out.
p-value of a paired change (:func:`randomization_test`)
    Two-sided sign-flip test: under "no difference" each query's difference is as likely to have the
    opposite sign. Flip signs at random ``resamples`` times and count the ``b`` flips whose
    ``|mean|`` is at least the observed one; ``p = (b + 1) / (resamples + 1)``, never 0.
Conversations: the cluster bootstrap (``clusters=``; :func:`grouped_cluster_cis`)
    When queries are turns of conversations (a ``conversation_id``), turns of one conversation are
    correlated and the unit resampled is the conversation. For the values that apply, conversation
    ``c`` (of ``K``) has the sum ``S_c`` and the count ``N_c`` of its values. A resample draws ``K``
    conversations with replacement (the same streams, draws and sums as queries: the two columns ``S``
    and ``N`` over the ``K`` conversations, conversations in ascending code order, a conversation's
    values summed in query order) and its mean is ``ΣS* / ΣN*``; the interval is the same two quantiles
    of those means, kept within the values' range. With one turn per conversation this is the query
    bootstrap above, bit for bit. NaN below two conversations; the value itself when all values are
    equal. A paired change is the same on the per-query differences. The paired sign-flip test flips
    the sign of each conversation's summed difference ``D_c`` (conversations whose ``D_c`` is 0 drop
    out, as unchanged queries do), ``p = (b + 1)/(resamples + 1)`` as above. Queries without a
    conversation id are conversations of their own. :mod:`rankgate.stats.clusters` says which queries
    form each conversation and defines the effective number of units.
Several comparisons at once (:func:`holm`)
    Holm's step-down correction, which controls the chance of any false "changed" in the table.
Interval of a proportion ``k / n`` (:func:`wilson_interval`, :func:`clopper_pearson`)
    Wilson's score interval, ``(k + z²/2)/(n + z²) ± z/(n + z²)·√(k(n − k)/n + z²/4)`` with
    ``z = Φ⁻¹((1 + c)/2)`` (two-sided; good coverage on small counts, never outside [0, 1]); and the
    exact Clopper–Pearson bounds from the beta distribution: lower ``B⁻¹(α; k, n − k + 1)``, upper
    ``B⁻¹(1 − α; k + 1, n − k)``, with ``α = 1 − c`` for a one-sided bound and ``(1 − c)/2`` for each
    side of a two-sided interval; the lower bound is 0 when ``k = 0`` and the upper 1 when ``k = n``.
    ``Φ⁻¹`` is :func:`normal_quantile` (the standard library's ``NormalDist().inv_cdf``).

Degenerate inputs: with no applicable query the mean, the interval and the p-value are NaN; with one
query the interval is NaN too (one query says nothing about spread); when every value is equal the
interval is that value (the data show no spread); when every paired difference is 0, ``p = 1``.

Reproducibility: randomness comes only from the ``rng`` given (a :class:`numpy.random.Generator`,
or an integer seed for a fresh ``default_rng(seed)``). The bootstrap takes four words from it to seed
a :class:`numpy.random.SeedSequence`, which spawns one SFC64 stream per chunk of 250 resamples (so
chunks can run on both cores without changing a number). Each stream's 64-bit words give two 32-bit
values, low half first; a value ``x`` picks query ``(x · n) >> 32``, and is skipped when
``(x · n) mod 2³² < 2³² mod n`` (Lemire's rejection), so every query is exactly equally likely.
The compiled kernels (``rankgate._native._kernels``) and the numpy fallback draw the same queries and
sum each metric the same way, count times value added in query order with every step rounded (no
fused multiply-add), so the same values and seed give the same floats on every machine, with or
without the compiled code (``RANKGATE_NATIVE``).
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from rankgate._util.constraints import CONFIDENCE, MAX_RESAMPLES, RESAMPLES, check
from rankgate.errors import UsageError
from rankgate.stats.options import Statistics, taken

__all__ = [
    "CI_METHOD",
    "MAX_RESAMPLES",
    "bootstrap_ci",
    "bootstrap_quantile_ci",
    "clopper_pearson",
    "exact_quantile_ci",
    "grouped_bootstrap_cis",
    "grouped_randomization_tests",
    "holm",
    "metric_cis",
    "values_cis",
    "normal_quantile",
    "paired_bootstrap_ci",
    "paired_quantile_change_ci",
    "paired_values",
    "randomization_test",
    "wilson_interval",
]

RandomSource = np.random.Generator | int

CI_METHOD = "percentile bootstrap of the mean over queries (resampling queries with replacement)"

_BLOCK_ELEMENTS = 1 << 22  # draws per block in the numpy paths: ~32 MB of indices
_STREAM_RESAMPLES = 250  # resamples per random stream (a chunk); fixed, so threads change no number
_PARALLEL_DRAWS = 1 << 21  # below this many draws, one thread does all chunks
_CACHE_BYTES = 4 << 20  # values of one column block of the bootstrap: small enough to stay in the cache
_COUNTS_BYTES = 16 << 20  # per-query counts (a byte each) of the resamples drawn at once, shared by every column block
_MAX_COUNT_GROUP = 32  # resamples drawn at once at most: their counts of a row tile stay in the cache
_MIN_BLOCK_COLUMNS = 8  # the compiled kernel sums up to eight columns of a block per pass
_FALLBACK_COUNTS_BYTES = 64 << 20  # the numpy fallback's counts (a byte each) of the resamples it sums together
_FALLBACK_MIN_GROUP = 256  # resamples the numpy fallback sums together at least (more counts past 250,000 queries)
_FALLBACK_SUMS = 1 << 15  # sums the numpy fallback adds to at once (256 KB): they stay in the cache
_FALLBACK_TILE = 1 << 15  # counts the numpy fallback turns into floats at once
_FALLBACK_DRAWS = 1 << 18  # draws the numpy fallback takes from a stream at once: its arrays stay in the cache


def _generator(rng: RandomSource) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool) and rng >= 0:
        return np.random.default_rng(int(rng))
    raise UsageError(f"rng must be a numpy.random.Generator or an integer seed (>= 0); got {rng!r}")


def _check(caller: str, resamples: int, confidence: float | None = None) -> None:
    check(RESAMPLES, resamples, caller=caller, name="resamples")
    if confidence is not None:
        check(CONFIDENCE, confidence, caller=caller)


def _applicable(values: Sequence[float] | np.ndarray) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64).ravel()
    return x[~np.isnan(x)]


def paired_values(base: Sequence[float] | np.ndarray, cand: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pairs where both values apply (neither is NaN), as two aligned arrays."""
    b = np.asarray(base, dtype=np.float64).ravel()
    c = np.asarray(cand, dtype=np.float64).ravel()
    if b.shape != c.shape:
        raise UsageError(f"paired values must have the same length; got {b.size} and {c.size}")
    ok = ~(np.isnan(b) | np.isnan(c))
    return b[ok], c[ok]


def _block_rows(n: int) -> int:
    return max(1, _BLOCK_ELEMENTS // max(n, 1))


def _count_group(n: int) -> int:
    """Resamples whose per-query counts are drawn at once and shared by every column block (even)."""
    return max(2, min(_STREAM_RESAMPLES, _MAX_COUNT_GROUP, _COUNTS_BYTES // max(n, 1)) // 2 * 2)


def _streams(gen: np.random.Generator, resamples: int) -> tuple[list[int], list[np.ndarray]]:
    """The first resample of each chunk and the SFC64 state of its stream (see the module docs): four
    words from ``gen``, so every bootstrap that starts from the same seed draws from the same streams."""
    entropy = [int(w) for w in gen.integers(0, 2**63, size=4, dtype=np.int64)]
    starts = list(range(0, resamples, _STREAM_RESAMPLES))
    seeds = np.random.SeedSequence(entropy).spawn(len(starts))
    return starts, [np.asarray(np.random.SFC64(s).state["state"]["state"], dtype=np.uint64) for s in seeds]


def _resampled_means(columns: Sequence[np.ndarray], gen: np.random.Generator, resamples: int) -> list[np.ndarray]:
    """Bootstrap means of each column, all columns resampled with the same query indices.

    Each resample's indices become per-query draw counts; each column's resampled sum is the
    count-weighted sum of its values (see the module docs for the streams). A column's sums do not
    depend on which other columns are resampled with it.
    """
    n = columns[0].size
    m = len(columns)
    starts, states = _streams(gen, resamples)
    # Columns go through in blocks whose values stay in the cache while every resample reads them: a
    # block's sums are those of the whole (a column's sums do not depend on the others), and re-drawing
    # the same streams per block costs less than reading a large table from memory once per resample.
    width = max(_MIN_BLOCK_COLUMNS, _CACHE_BYTES // (8 * max(n, 1)) // 8 * 8)  # (the kernel sums eight at a time)
    blocks = [(lo, min(lo + width, m)) for lo in range(0, m, width)]
    stacks = [np.ascontiguousarray(np.column_stack(columns[lo:hi]), dtype=np.float64) for lo, hi in blocks]
    out = _resampled_sums(stacks, blocks, starts, states, resamples, n * resamples)
    out /= n
    return [out[:, j].copy() for j in range(m)]


def _resampled_sums(stacks: Sequence[np.ndarray], blocks: Sequence[tuple[int, int]], starts: Sequence[int],
                    states: Sequence[np.ndarray], resamples: int, draws: int) -> np.ndarray:
    """``(resamples, columns)`` resampled sums of the column blocks ``stacks`` (``n`` rows each; block
    ``b`` holds columns ``blocks[b]``), drawn from the streams ``states``; ``draws`` (the work) decides
    whether the chunks go to both cores."""
    n = stacks[0].shape[0]
    out = np.empty((resamples, blocks[-1][1]))

    from rankgate._native import kernels

    if kernels is None or n >= 2**32:
        values = stacks[0] if len(stacks) == 1 else np.hstack(stacks)
        segments = [(_Stream(state, n), min(start + _STREAM_RESAMPLES, resamples) - start)
                    for start, state in zip(starts, states)]
        _chained_sums(values, segments, out)
        return out

    def chunk(i: int) -> None:
        start = starts[i]
        stop = min(start + _STREAM_RESAMPLES, resamples)
        # One draw of each resample's queries serves every column block (the same sums as one
        # bootstrap_sums call per block, each of which re-draws the stream).
        parts = [np.empty((stop - start, hi - lo)) for lo, hi in blocks]
        kernels.bootstrap_sums_blocks(states[i], stacks, stop - start, parts, _count_group(n))
        for (lo, hi), part in zip(blocks, parts):
            out[start:stop, lo:hi] = part

    if len(starts) > 1 and draws >= _PARALLEL_DRAWS:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(len(starts), os.cpu_count() or 1, 4)) as pool:
            list(pool.map(chunk, range(len(starts))))
    else:
        for i in range(len(starts)):
            chunk(i)
    return out


class _Stream:
    """One stream's query indices, drawn as the compiled kernel draws them (numpy's own SFC64)."""

    def __init__(self, state: np.ndarray, n: int):
        self.bits = np.random.SFC64()
        self.bits.state = {"bit_generator": "SFC64", "state": {"state": state.copy()}, "has_uint32": 0, "uinteger": 0}
        self.n = n
        self.threshold = np.uint64((2**32 - n) % n)
        self.left = np.zeros(0, dtype=np.int64)  # accepted indices not handed out yet

    def take(self, count: int) -> np.ndarray:
        """The next ``count`` indices (``int64``, a fresh array the caller may write to)."""
        parts, have = [self.left], self.left.size
        lo32 = np.uint64(0xFFFFFFFF)
        while have < count:
            words = self.bits.random_raw(max(1, (count - have + 1) // 2))
            if sys.byteorder == "little":
                halves = words.view(np.uint32).astype(np.uint64)  # each word's low half, then its high half
            else:
                halves = np.empty(words.size * 2, dtype=np.uint64)
                halves[0::2] = words & lo32  # low half first, on any byte order
                halves[1::2] = words >> np.uint64(32)
            halves *= np.uint64(self.n)
            if self.threshold:
                keep = (halves & lo32) >= self.threshold
                if not keep.all():
                    halves = halves[keep]
            halves >>= np.uint64(32)
            parts.append(halves.view(np.int64))  # (below 2**32)
            have += halves.size
        drawn = parts[1] if len(parts) == 2 and parts[0].size == 0 else np.concatenate(parts)
        self.left = drawn[count:].copy()
        return drawn[:count]


def _numpy_sums(state: np.ndarray, stack: np.ndarray, rows: int, out: np.ndarray) -> None:
    """Fallback of the compiled ``bootstrap_sums``: the same draws and the same sums, bit for bit
    (:func:`_chained_sums`)."""
    _chained_sums(stack, [(_Stream(state, stack.shape[0]), rows)], out)


def _draw_counts(segments: Sequence[tuple[_Stream, int]], n: int) -> Iterator[np.ndarray]:
    """Each resample's per-query draw counts (``int64``, a row of ``n`` per resample), in resample order, a
    block of rows at a time: ``segments`` gives the streams in order and how many resamples each draws."""
    block = max(1, _FALLBACK_DRAWS // max(n, 1))
    for stream, rows in segments:
        for lo in range(0, rows, block):
            k = min(block, rows - lo)
            cells = stream.take(k * n).reshape(k, n)
            cells += (np.arange(k, dtype=np.int64) * n)[:, None]  # resample r's counts at r·n
            yield np.bincount(cells.ravel(), minlength=k * n).reshape(k, n)


def _chained_sums(values: np.ndarray, segments: Sequence[tuple[_Stream, int]], out: np.ndarray) -> None:
    """Fallback of the compiled ``bootstrap_sums_blocks``: ``out[r, j]``, the sum over queries of resample
    ``r``'s draw count of the query times its value in column ``j`` of ``values`` (``n`` rows), with the
    resamples drawn from ``segments`` (see :func:`_draw_counts`).

    Each sum is the compiled kernel's chain of IEEE operations, so the floats are the same bit for bit:
    ``((0.0 + c0·x0) + c1·x1) + …`` in query order, every product and every sum rounded on its own (the
    kernel is built without fused multiply-add), every query included, drawn or not, as the kernel adds
    them. numpy's element-wise multiply and add are those same operations; the chain goes one query at
    a time, each step one multiply and one add over the sums of many resamples and every column at once
    (as many as stay in the cache). The counts of the resamples summed together are kept a byte each
    while they fit."""
    n, width = values.shape
    at_once = max(1, min(out.shape[0], max(_FALLBACK_COUNTS_BYTES // max(n, 1), _FALLBACK_MIN_GROUP)))
    per = max(1, min(at_once, _FALLBACK_SUMS // width))  # resamples whose sums are kept at once
    wide = n > 255  # (a count never exceeds n)

    def flush(counts: np.ndarray, r0: int) -> None:  # counts: a row per resample
        for a in range(0, counts.shape[0], per):
            b = min(a + per, counts.shape[0])
            acc, term = np.zeros((width, b - a)), np.empty((width, b - a))
            tile = max(1, min(n, _FALLBACK_TILE // (b - a)))
            weights = np.empty((tile, b - a))  # a tile of queries' counts, as floats (exact)
            for lo in range(0, n, tile):
                k = min(tile, n - lo)
                weights[:k] = counts[a:b, lo:lo + k].T
                column = values[lo:lo + k, :, None]
                for i in range(k):  # query by query: one rounded product and one rounded add per sum
                    np.multiply(column[i], weights[i], out=term)
                    np.add(acc, term, out=acc)
            out[r0 + a:r0 + b] = acc.T

    group = np.empty((at_once, n), dtype=np.uint8)
    filled = r0 = 0
    for counts in _draw_counts(segments, n):
        if wide and group.dtype == np.uint8 and int(counts.max()) > 255:
            group = group.astype(np.uint32)
        taken = 0
        while taken < counts.shape[0]:
            k = min(at_once - filled, counts.shape[0] - taken)
            group[filled:filled + k] = counts[taken:taken + k]
            filled, taken = filled + k, taken + k
            if filled == at_once:
                flush(group, r0)
                r0, filled = r0 + at_once, 0
    if filled:
        flush(group[:filled], r0)


def _interval(x: np.ndarray, means: np.ndarray | None, confidence: float) -> tuple[float, float]:
    if x.size < 2 or means is None:
        return (math.nan, math.nan)
    first = float(x[0])
    if bool((x == first).all()):
        return (first, first)
    alpha = 1.0 - confidence
    low, high = np.quantile(means, [alpha / 2.0, 1.0 - alpha / 2.0])
    # Sums of resampled values can stray an ulp outside the data's range; clamp to it.
    lo, hi = float(x.min()), float(x.max())
    return (min(max(float(low), lo), hi), min(max(float(high), lo), hi))


def bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    *,
    rng: RandomSource,
    resamples: int = 2000,
    confidence: float = 0.95,
    clusters: Sequence[Any] | np.ndarray | None = None,
) -> tuple[float, float]:
    """Percentile-bootstrap interval ``(low, high)`` of the mean of ``values`` (NaN entries skipped).

    ``resamples=0`` turns the interval off (NaN, NaN). ``clusters``: a conversation per value (integer
    codes or labels); then conversations are resampled, not values (the cluster bootstrap). See the
    module docs for the method.
    """
    _check("bootstrap_ci", resamples, confidence)
    if clusters is not None:
        v = np.asarray(values, dtype=np.float64).ravel()
        ok = ~np.isnan(v)
        low, high = _cluster_intervals(v[ok], np.array([int(ok.sum())]), _cluster_codes(clusters, v.size)[ok],
                                       _streams(_generator(rng), resamples) if resamples else None, resamples, confidence)
        return (float(low[0]), float(high[0]))
    x = _applicable(values)
    if x.size < 2 or resamples == 0:
        return (math.nan, math.nan)
    (means,) = _resampled_means([x], _generator(rng), resamples)
    return _interval(x, means, confidence)


def paired_bootstrap_ci(
    base: Sequence[float] | np.ndarray,
    cand: Sequence[float] | np.ndarray,
    *,
    rng: RandomSource,
    resamples: int = 2000,
    confidence: float = 0.95,
    clusters: Sequence[Any] | np.ndarray | None = None,
) -> tuple[float, float]:
    """Percentile-bootstrap interval of the mean change ``cand − base`` over paired queries.

    Only queries where both values apply count. Queries are resampled as pairs; with ``clusters`` (a
    conversation per query), conversations are.
    """
    if clusters is not None:
        bb, cc = _paired_arrays(base, cand)
        ok = ~(np.isnan(bb) | np.isnan(cc))
        return bootstrap_ci((cc - bb)[ok], rng=rng, resamples=resamples, confidence=confidence,
                            clusters=_cluster_codes(clusters, bb.size)[ok])
    b, c = paired_values(base, cand)
    return bootstrap_ci(c - b, rng=rng, resamples=resamples, confidence=confidence)


def _paired_arrays(base: Sequence[float] | np.ndarray, cand: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    b = np.asarray(base, dtype=np.float64).ravel()
    c = np.asarray(cand, dtype=np.float64).ravel()
    if b.shape != c.shape:
        raise UsageError(f"paired values must have the same length; got {b.size} and {c.size}")
    return b, c


def randomization_test(
    base: Sequence[float] | np.ndarray,
    cand: Sequence[float] | np.ndarray,
    *,
    rng: RandomSource,
    resamples: int = 10000,
    clusters: Sequence[Any] | np.ndarray | None = None,
) -> float:
    """Two-sided paired sign-flip randomisation test of "no change in the mean"; returns p.

    ``p = (b + 1) / (resamples + 1)`` where ``b`` counts sign flips whose ``|mean difference|``
    reaches the observed one. NaN when no query applies in both runs (or ``resamples=0``);
    1.0 when no query changed. With ``clusters`` (a conversation per query) each conversation's summed
    difference is flipped as one.
    """
    _check("randomization_test", resamples)
    if clusters is not None:
        bb, cc = _paired_arrays(base, cand)
        ok = ~(np.isnan(bb) | np.isnan(cc))
        if not ok.any() or resamples == 0:
            return math.nan
        sums, _, _k = _cluster_columns((cc - bb)[ok], np.array([int(ok.sum())]), _cluster_codes(clusters, bb.size)[ok])
        sums = sums[sums != 0.0]
        return 1.0 if sums.size == 0 else _sign_flip_p(sums, _generator(rng), resamples)
    b, c = paired_values(base, cand)
    if b.size == 0 or resamples == 0:
        return math.nan
    d = c - b
    d = d[d != 0.0]  # unchanged queries add nothing to either side of the comparison
    if d.size == 0:
        return 1.0
    return _sign_flip_p(d, _generator(rng), resamples)


def _sign_flip_p(d: np.ndarray, gen: np.random.Generator, resamples: int) -> float:
    """:func:`randomization_test`'s p of the nonzero differences ``d`` (at least one)."""
    n = d.size
    total = float(d.sum())
    observed = abs(total)
    # Sums equal in exact arithmetic can differ in the last bits; count those as reaching it.
    tol = 1e-9 * float(np.abs(d).sum())
    reached = 0
    if n > _BATCH_FLIPS:  # many differences: each byte of signs picks one of 256 partial sums of its 8 values
        table = _byte_sums(d)
        at = np.arange(table.shape[0], dtype=np.intp) * 256
        for raw in _flip_blocks(gen, n, resamples):
            flipped = 2.0 * table.take(raw.astype(np.intp) + at).sum(axis=1) - total
            reached += int((np.abs(flipped) >= observed - tol).sum())
        return (reached + 1) / (resamples + 1)
    for raw in _flip_blocks(gen, n, resamples):
        keep = np.unpackbits(raw, axis=1, count=n).astype(np.float64)
        # With signs s = 2·keep − 1: Σ s·d = 2·Σ keep·d − Σ d.
        flipped = 2.0 * (keep * d).sum(axis=1) - total
        reached += int((np.abs(flipped) >= observed - tol).sum())
    return (reached + 1) / (resamples + 1)


def _byte_sums(d: np.ndarray) -> np.ndarray:
    """For each run of 8 differences (the last padded with zeros) and each byte of signs (most significant bit
    first, as :func:`numpy.unpackbits` reads it), the sum of the differences the byte keeps: ``(n/8) × 256``.
    A flip's Σ keep·d is then one lookup per byte instead of one product per difference; the sums equal
    :func:`_sign_flip_p`'s products in exact arithmetic and differ in the last bits at most, which its
    tolerance already absorbs."""
    nbytes = (d.size + 7) // 8
    padded = np.zeros(nbytes * 8)
    padded[:d.size] = d
    bits = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.float64)  # 256 × 8
    table = np.zeros((nbytes, 256))
    lanes = padded.reshape(nbytes, 8)
    for j in range(8):  # in bit order, one lane at a time: the same sum for every byte that keeps the same bits
        table += lanes[:, j:j + 1] * bits[None, :, j]
    return table


def _flip_blocks(gen: np.random.Generator, n: int, resamples: int) -> Iterator[np.ndarray]:
    """The random signs of :func:`randomization_test` for ``n`` differences, a bit each, in blocks of rows."""
    nbytes = (n + 7) // 8
    rows = _block_rows(n)
    for start in range(0, resamples, rows):
        stop = min(start + rows, resamples)
        yield gen.integers(0, 256, size=(stop - start, nbytes), dtype=np.uint8)


def holm(pvalues: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm step-down adjusted p-values, in the input order. NaN entries stay NaN and do not count.

    With ``m`` p-values sorted ascending ``p(1) ≤ … ≤ p(m)``:
    ``adj(i) = max_{j ≤ i} min(1, (m − j + 1) · p(j))``.
    """
    p = np.asarray(pvalues, dtype=np.float64).ravel()
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    m = ok.size
    if m == 0:
        return out
    if ((p[ok] < 0) | (p[ok] > 1)).any():
        raise UsageError("p-values must be between 0 and 1")
    order = ok[np.argsort(p[ok], kind="stable")]
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    out[order] = np.maximum.accumulate(scaled)
    return out


def metric_cis(
    result,  # EvaluationResult (not imported: keeps this module free of the result type's imports)
    *,
    statistics: Statistics | None = None,
    seed: int = 0,
    resamples: int = 2000,
    confidence: float = 0.95,
    metrics: Sequence[str] | None = None,
    clusters: np.ndarray | None | bool = True,
) -> dict[str, tuple[float, float]]:
    """Bootstrap interval of every metric's mean in ``result``: canonical name -> ``(low, high)``.

    Each metric is resampled over the queries where it applies, from a generator seeded with
    ``seed``; so a metric's interval does not depend on which other metrics were evaluated, and
    metrics that apply to the same queries (e.g. all ranking metrics) share the same resampled query
    sets. ``resamples=0`` gives NaN intervals. When the result's queries carry a ``conversation_id``,
    conversations are resampled (the cluster bootstrap, module docs); ``clusters=False`` resamples
    queries regardless, and an array of codes (one per query) names the conversations.
    """
    seed, resamples, confidence = taken(statistics, seed, resamples, confidence, caller="metric_cis",
                                         defaults=(0, 2000, 0.95))
    _check("metric_cis", resamples, confidence)
    names = list(result.metric_names) if metrics is None else [result.resolve_metric(m) for m in metrics]
    if clusters is True:
        from rankgate.stats.clusters import conversation_codes

        codes = conversation_codes(result)
    else:
        codes = None if clusters is False or clusters is None else np.asarray(clusters)
    return values_cis({name: result.values[name] for name in names}, seed, resamples, confidence, clusters=codes)


def values_cis(
    values: Mapping[str, np.ndarray], seed: int, resamples: int, confidence: float,
    clusters: np.ndarray | None = None,
) -> dict[str, tuple[float, float]]:
    """:func:`metric_cis` on per-query value arrays (name -> values, NaN = not applicable): the
    intervals of any subset of queries (a segment) with the same resampling rule. Inputs are trusted.
    ``clusters``: a conversation code per query (the cluster bootstrap), or None (queries)."""
    if clusters is not None:
        return _values_cluster_cis(values, seed, resamples, confidence, clusters)
    out: dict[str, tuple[float, float]] = {}
    groups: dict[bytes, list[str]] = {}
    for name, v in values.items():
        mask = ~np.isnan(np.asarray(v, dtype=np.float64))
        groups.setdefault(np.packbits(mask).tobytes() + mask.size.to_bytes(8, "little"), []).append(name)
    for names in groups.values():
        cols = [_applicable(values[name]) for name in names]
        if cols[0].size < 2 or resamples == 0:
            for name in names:
                out[name] = (math.nan, math.nan)
            continue
        means = _resampled_means(cols, np.random.default_rng(seed), resamples)
        for name, x, m in zip(names, cols, means):
            out[name] = _interval(x, m, confidence)
    return {name: out[name] for name in values}


_cis_for = values_cis  # the name earlier releases used


def _values_cluster_cis(values: Mapping[str, np.ndarray], seed: int, resamples: int, confidence: float,
                        clusters: np.ndarray) -> dict[str, tuple[float, float]]:
    """:func:`values_cis` with conversations resampled: each metric over the queries where it applies, every
    metric from the streams of ``seed`` (metrics over the same conversations share their draws)."""
    names = list(values)
    if not names:
        return {}
    arrays = [np.asarray(values[name], dtype=np.float64).ravel() for name in names]
    codes = _cluster_codes(clusters, arrays[0].size)
    oks = [~np.isnan(v) for v in arrays]
    x = np.concatenate([v[ok] for v, ok in zip(arrays, oks)])
    c = np.concatenate([codes[ok] for ok in oks])
    offsets = np.concatenate(([0], np.cumsum([int(ok.sum()) for ok in oks])))
    low, high = grouped_cluster_cis(x, offsets, c, seed=seed, resamples=resamples, confidence=confidence)
    return {name: (float(lo), float(hi)) for name, lo, hi in zip(names, low.tolist(), high.tolist())}


# --- many groups of queries at once (segments) ---------------------------------------------------------
# A field of 50,000 segments asks for 50,000 intervals and p-values of a few queries each. One call per
# segment would cost its fixed part (streams, arrays, quantiles) 50,000 times over; here every group of
# one size goes through as the columns of one table, so the work follows the number of values, not of
# groups. Each number is the one the single-group function gives, bit for bit (tests/test_segments_bound.py).

_GROUP_CELLS = 1 << 22  # values held at once by the grouped paths (a table of sums or of flips): ~32 MB
_TABLE_FLIPS = 8  # up to this many differences, a flip's sum is looked up by its byte of signs (256 sums)
_BATCH_FLIPS = 128  # up to this many, groups of one size share their signs' table; more: one group at a time
_QUANTILE_COLUMNS = 64  # columns np.quantile partitions at once (down a column: a narrow table stays in the cache)
_COMPOSED_MAX = 6  # groups of up to this many values: from the distinct compositions of their resamples (462 for 6)


def _group_sizes(offsets: Any, n_values: int) -> np.ndarray:
    off = np.asarray(offsets, dtype=np.int64).ravel()
    if off.size < 1 or off[0] != 0 or off[-1] != n_values or bool((np.diff(off) < 0).any()):
        raise UsageError(f"offsets must rise from 0 to the number of values ({n_values:,})")
    return np.diff(off)


def grouped_bootstrap_cis(
    values: np.ndarray, offsets: Sequence[int] | np.ndarray, *, seed: int, resamples: int = 2000,
    confidence: float = 0.95,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`bootstrap_ci` of each group ``values[offsets[j]:offsets[j + 1]]`` with ``rng=seed``, bit for
    bit, for all groups at once: ``(low, high)``, an entry per group (NaN below two values).

    ``values`` holds only values that apply (no NaN), group after group. Every group's bootstrap draws
    from the streams of ``seed``, and a column's resampled sums depend only on its own values, so the
    groups of one size are summed as the columns of one table. A group whose values are all equal has
    that value as its interval, as :func:`bootstrap_ci` gives it, without resampling."""
    _check("grouped_bootstrap_cis", resamples, confidence)
    x = np.ascontiguousarray(values, dtype=np.float64).ravel()
    sizes = _group_sizes(offsets, x.size)
    starts = np.asarray(offsets, dtype=np.int64).ravel()[:-1]
    low, high = np.full(sizes.size, math.nan), np.full(sizes.size, math.nan)
    two = np.flatnonzero(sizes >= 2)
    if resamples == 0 or two.size == 0:
        return low, high
    nonempty = np.flatnonzero(sizes > 0)  # (they tile the values: reduceat's ranges are the groups)
    mins, maxs = np.full(sizes.size, math.nan), np.full(sizes.size, math.nan)
    mins[nonempty] = np.minimum.reduceat(x, starts[nonempty])
    maxs[nonempty] = np.maximum.reduceat(x, starts[nonempty])
    same = two[mins[two] == maxs[two]]
    low[same] = high[same] = x[starts[same]]
    todo = two[mins[two] != maxs[two]]
    streams = _streams(np.random.default_rng(seed), resamples)
    alpha = 1.0 - confidence
    finite = np.zeros(sizes.size, dtype=bool)
    finite[nonempty] = np.logical_and.reduceat(np.isfinite(x), starts[nonempty])
    for n, group in _by_size(todo, sizes):
        small = _compositions(streams, n, resamples) if n <= _COMPOSED_MAX else None
        if small is not None:
            where = _order_positions(resamples, confidence)
            ok = finite[group]
            if where is not None and ok.any():
                _composed_intervals(x, starts, group[ok], n, *small, where, mins, maxs, low, high)
                group = group[~ok]
        per = max(1, min(_GROUP_CELLS // resamples, _GROUP_CELLS // n))
        width = max(_MIN_BLOCK_COLUMNS, _CACHE_BYTES // (8 * n) // 8 * 8)  # as _resampled_means blocks
        for lo in range(0, group.size, per):
            cols = group[lo:lo + per]
            table = x[starts[cols][None, :] + np.arange(n)[:, None]]  # n rows, a column per group
            blocks = [(b, min(b + width, cols.size)) for b in range(0, cols.size, width)]
            stacks = [np.ascontiguousarray(table[:, b:e]) for b, e in blocks]
            means = _resampled_sums(stacks, blocks, *streams, resamples, n * resamples * cols.size)
            means /= n
            q = np.concatenate([np.quantile(means[:, c:c + _QUANTILE_COLUMNS], [alpha / 2.0, 1.0 - alpha / 2.0], axis=0)
                                for c in range(0, cols.size, _QUANTILE_COLUMNS)], axis=1)
            low[cols], high[cols] = _clamp(q[0], mins[cols], maxs[cols]), _clamp(q[1], mins[cols], maxs[cols])
    return low, high


def grouped_randomization_tests(
    differences: np.ndarray, offsets: Sequence[int] | np.ndarray, *, seed: int, resamples: int = 10000,
) -> np.ndarray:
    """:func:`randomization_test` of each group of paired differences ``differences[offsets[j]:offsets[j + 1]]``
    (candidate − baseline over the queries where both apply) with ``rng=seed``, bit for bit, for all
    groups at once: p per group (NaN for an empty group, 1.0 when no difference is nonzero).

    Groups with the same number of nonzero differences draw the same signs; up to 8 of them a flip's sum
    is one of 256 (its byte of signs), so each group sums 256 flips and counts how often each byte was
    drawn; up to 128, the groups of one size are flipped together; larger groups one at a time."""
    _check("grouped_randomization_tests", resamples)
    d = np.ascontiguousarray(differences, dtype=np.float64).ravel()
    sizes = _group_sizes(offsets, d.size)
    p = np.full(sizes.size, math.nan)
    if resamples == 0:
        return p
    nonzero = d != 0.0
    group_of = np.repeat(np.arange(sizes.size), sizes)
    counts = np.bincount(group_of[nonzero], minlength=sizes.size)
    dz = d[nonzero]
    zstart = np.concatenate(([0], np.cumsum(counts)))[:-1]
    p[(sizes > 0) & (counts == 0)] = 1.0
    for n, group in _by_size(np.flatnonzero(counts > 0), counts):
        if n > _BATCH_FLIPS or (n > _TABLE_FLIPS and _block_rows(n) < resamples):
            for j in group.tolist():
                p[j] = _sign_flip_p(dz[zstart[j]:zstart[j] + n], np.random.default_rng(seed), resamples)
            continue
        gen = np.random.default_rng(seed)
        raw = np.concatenate(list(_flip_blocks(gen, n, resamples)))
        if n <= _TABLE_FLIPS:
            keep = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, count=n).astype(np.float64)
            drawn = np.bincount(raw[:, 0], minlength=256)  # how often each byte of signs was drawn
        else:
            keep = np.unpackbits(raw, axis=1, count=n).astype(np.float64)
        per = max(1, _GROUP_CELLS // (keep.shape[0] * n))
        for lo in range(0, group.size, per):
            rows = group[lo:lo + per]
            table = dz[zstart[rows][:, None] + np.arange(n)[None, :]]  # a row of differences per group
            total = table.sum(axis=1)
            reach = np.abs(total) - 1e-9 * np.abs(table).sum(axis=1)
            flipped = 2.0 * (keep[None, :, :] * table[:, None, :]).sum(axis=2) - total[:, None]
            hits = np.abs(flipped) >= reach[:, None]
            reached = hits.astype(np.int64) @ drawn if n <= _TABLE_FLIPS else hits.sum(axis=1)
            p[rows] = (reached + 1) / (resamples + 1)
    return p


# --- conversations: the cluster bootstrap -----------------------------------------------------------
# When queries carry a conversation id, the unit resampled is the conversation (see the module docs):
# a group's values become per-conversation sums S_c and counts N_c, the conversations are drawn by the
# same streams and kernels as queries are (two columns, S and N, over K conversations), and each
# resample's mean is ΣS*/ΣN*. The sign-flip test flips each conversation's summed difference.

def _cluster_columns(values: np.ndarray, sizes: np.ndarray, clusters: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per (group, conversation) sums ``S`` and counts ``N`` of ``values`` (groups of ``sizes`` one after the
    other; ``clusters`` a conversation code per value), group by group and, within a group, by ascending code;
    and the number of conversations of each group. A conversation's sum adds its values in query order."""
    group_of = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
    c = np.asarray(clusters, dtype=np.int64).ravel()
    if c.size != values.size:
        raise UsageError(f"clusters must give one conversation per value; got {c.size} for {values.size} values")
    if values.size == 0:
        return np.zeros(0), np.zeros(0), np.zeros(sizes.size, dtype=np.int64)
    order = np.lexsort((c, group_of))  # (stable: a conversation's values stay in query order)
    g, k = group_of[order], c[order]
    new = np.ones(order.size, dtype=bool)
    new[1:] = (g[1:] != g[:-1]) | (k[1:] != k[:-1])
    starts = np.flatnonzero(new)
    sums = np.add.reduceat(values[order], starts)
    counts = np.diff(np.append(starts, order.size)).astype(np.float64)
    return sums, counts, np.bincount(g[starts], minlength=sizes.size)


def grouped_cluster_cis(
    values: np.ndarray, offsets: Sequence[int] | np.ndarray, clusters: np.ndarray, *, seed: int,
    resamples: int = 2000, confidence: float = 0.95,
) -> tuple[np.ndarray, np.ndarray]:
    """The cluster bootstrap's interval of the mean of each group ``values[offsets[j]:offsets[j + 1]]``, whose
    values belong to the conversations ``clusters`` (a code per value): ``(low, high)``, an entry per group.

    Conversations are drawn with replacement (as many as the group has), each bringing all its values; a
    resample's mean is ``ΣS*/ΣN*`` (module docs). NaN below two conversations or with ``resamples=0``; a
    group whose values are all equal has that value. Every group draws from the streams of ``seed``, so a
    group's interval is the one it gets alone (:func:`bootstrap_ci` with ``clusters=``), and the groups of
    one number of conversations are summed together as the columns of one table."""
    _check("grouped_cluster_cis", resamples, confidence)
    x = np.ascontiguousarray(values, dtype=np.float64).ravel()
    sizes = _group_sizes(offsets, x.size)
    return _cluster_intervals(x, sizes, clusters, _streams(np.random.default_rng(seed), resamples) if resamples else None,
                              resamples, confidence)


def _cluster_intervals(x: np.ndarray, sizes: np.ndarray, clusters: np.ndarray,
                       streams: tuple[list[int], list[np.ndarray]] | None, resamples: int,
                       confidence: float) -> tuple[np.ndarray, np.ndarray]:
    low, high = np.full(sizes.size, math.nan), np.full(sizes.size, math.nan)
    if streams is None or x.size == 0:
        return low, high
    sums, counts, k = _cluster_columns(x, sizes, clusters)
    cstarts = np.concatenate(([0], np.cumsum(k)))[:-1]
    starts = np.concatenate(([0], np.cumsum(sizes)))[:-1]
    nonempty = np.flatnonzero(sizes > 0)
    mins, maxs = np.full(sizes.size, math.nan), np.full(sizes.size, math.nan)
    mins[nonempty] = np.minimum.reduceat(x, starts[nonempty])
    maxs[nonempty] = np.maximum.reduceat(x, starts[nonempty])
    two = np.flatnonzero(k >= 2)
    same = two[mins[two] == maxs[two]]
    low[same] = high[same] = x[starts[same]]
    todo = two[mins[two] != maxs[two]]
    alpha = 1.0 - confidence
    for n, group in _by_size(todo, k):
        per = max(1, min(_GROUP_CELLS // (2 * resamples), _GROUP_CELLS // (2 * n)))
        width = max(_MIN_BLOCK_COLUMNS, _CACHE_BYTES // (8 * n) // 8 * 8)
        for lo in range(0, group.size, per):
            cols = group[lo:lo + per]
            rows = cstarts[cols][None, :] + np.arange(n)[:, None]
            ns = counts[rows]
            shared = cols.size > 1 and bool((ns == ns[:, :1]).all())  # (groups over the same turns: one N column)
            table = np.hstack([sums[rows], ns[:, :1] if shared else ns])  # n rows: S of every group, then N
            blocks = [(b, min(b + width, table.shape[1])) for b in range(0, table.shape[1], width)]
            stacks = [np.ascontiguousarray(table[:, b:e]) for b, e in blocks]
            drawn = _resampled_sums(stacks, blocks, *streams, resamples, n * resamples * table.shape[1])
            means = drawn[:, :cols.size] / drawn[:, cols.size:]  # (a column's sums are its own: the same either way)
            q = np.quantile(means, [alpha / 2.0, 1.0 - alpha / 2.0], axis=0)
            low[cols], high[cols] = _clamp(q[0], mins[cols], maxs[cols]), _clamp(q[1], mins[cols], maxs[cols])
    return low, high


def grouped_cluster_randomization_tests(
    differences: np.ndarray, offsets: Sequence[int] | np.ndarray, clusters: np.ndarray, *, seed: int,
    resamples: int = 10000,
) -> np.ndarray:
    """The sign-flip test of each group of paired differences with conversations as the unit: each
    conversation's differences are summed and the sums' signs flipped (:func:`grouped_randomization_tests`
    over the per-conversation sums); p per group, NaN for an empty group, 1.0 when no sum is nonzero."""
    _check("grouped_cluster_randomization_tests", resamples)
    d = np.ascontiguousarray(differences, dtype=np.float64).ravel()
    sizes = _group_sizes(offsets, d.size)
    sums, _, k = _cluster_columns(d, sizes, clusters)
    return grouped_randomization_tests(sums, np.concatenate(([0], np.cumsum(k))), seed=seed, resamples=resamples)


def _cluster_codes(clusters: Any, n: int) -> np.ndarray:
    c = np.asarray(clusters).ravel()
    if c.size != n:
        raise UsageError(f"clusters must give one conversation per value; got {c.size} for {n} values")
    if c.dtype.kind not in "iu":
        _, c = np.unique(c.astype(str), return_inverse=True)
    return c.astype(np.int64)


def _compositions(streams: tuple[list[int], list[np.ndarray]], n: int, resamples: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The distinct per-query draw counts of the resamples of a group of ``n`` values, as the compiled kernel
    draws them from ``streams``, and how many resamples drew each; None when there are too many of them to
    be worth it (more than a quarter of the resamples).

    Every group of ``n`` values is resampled with these counts, so its resampled means are the means of
    these few compositions, each repeated as often as it was drawn (3 of them for two values, 35 for four)."""
    from rankgate._native import kernels

    starts, states = streams
    drawn = []
    for i, start in enumerate(starts):
        rows = min(start + _STREAM_RESAMPLES, resamples) - start
        if kernels is None:
            drawn.append(_Stream(states[i], n).take(rows * n))  # (the same draws)
            continue
        idx = np.empty(rows * n, dtype=np.uint32)
        kernels.draw_indices(states[i], n, idx)  # (the state is read, not advanced)
        drawn.append(idx)
    cells = np.concatenate(drawn).astype(np.int64).reshape(resamples, n) + (np.arange(resamples) * n)[:, None]
    counts = np.bincount(cells.ravel(), minlength=resamples * n).reshape(resamples, n)
    distinct, times = np.unique(counts, axis=0, return_counts=True)
    return (distinct.astype(np.float64), times) if 4 * distinct.shape[0] <= resamples else None


_POSITIONS: dict[tuple[int, float], Any] = {}


def _order_positions(resamples: int, confidence: float) -> tuple[list[int], list[int], list[float]] | None:
    """Where np.quantile's linear interpolation reads the sorted resampled means for each end of the
    interval (the lower and upper of two neighbours) and its weight between them; None when a probe finds
    that np.quantile computes them otherwise (a numpy release may), and the caller then asks np.quantile."""
    key = (resamples, confidence)
    if key not in _POSITIONS:
        alpha = 1.0 - confidence
        qs = np.asarray([alpha / 2.0, 1.0 - alpha / 2.0])
        virtual = (resamples - 1) * qs
        below = np.floor(virtual)
        gamma = virtual - below
        lower = np.minimum(below.astype(np.int64), resamples - 1)
        upper = np.minimum(lower + 1, resamples - 1)
        found = (lower.tolist(), upper.tolist(), gamma.tolist())
        probe = np.random.default_rng(20261201).random((resamples, 4))
        ordered = np.sort(probe, axis=0)
        same = np.quantile(probe, qs, axis=0).tobytes() == np.stack(
            [_between(ordered[a], ordered[b], g) for a, b, g in zip(*found)]).tobytes()
        _POSITIONS[key] = found if same else None
    return _POSITIONS[key]


def _between(a: np.ndarray, b: np.ndarray, gamma: float) -> np.ndarray:
    """np.quantile's linear interpolation from ``a`` to ``b`` (a <= b) at ``gamma``, computed by np.quantile
    itself: the quantile ``gamma`` of the two values has them as its neighbours and ``gamma`` as its weight."""
    return np.quantile(np.stack([a, b]), gamma, axis=0)


def _composed_intervals(x: np.ndarray, starts: np.ndarray, cols: np.ndarray, n: int, compositions: np.ndarray,
                        times: np.ndarray, where: tuple[list[int], list[int], list[float]], mins: np.ndarray,
                        maxs: np.ndarray, low: np.ndarray, high: np.ndarray) -> None:
    """The intervals of the groups ``cols`` of ``n`` finite values from their resampled means, each the mean
    of a composition (:func:`_compositions`): the same chain of products and sums in query order as the
    compiled kernel takes (so the same floats), then the order statistics np.quantile reads, weighted by
    how often each composition was drawn, and its interpolation between them."""
    m = compositions.shape[0]
    per = max(1, _GROUP_CELLS // m)
    for lo in range(0, cols.size, per):
        part = cols[lo:lo + per]
        table = x[starts[part][:, None] + np.arange(n)[None, :]]  # a row of values per group
        means = np.zeros((part.size, m))
        for i in range(n):  # ((0.0 + x0 * c0) + x1 * c1) + ..., as the kernel sums a column
            means = means + table[:, i:i + 1] * compositions[None, :, i]
        means /= n
        order = np.argsort(means, axis=1, kind="stable")
        ordered = np.take_along_axis(means, order, axis=1)
        reached = np.cumsum(times[order], axis=1)  # resamples at or below each ordered mean
        rows = np.arange(part.size)
        # the resampled mean of rank a (and b) among all resamples, then np.quantile's step between them
        ends = [_between(ordered[rows, (reached <= a).sum(axis=1)], ordered[rows, (reached <= b).sum(axis=1)], g)
                for a, b, g in zip(*where)]
        low[part], high[part] = _clamp(ends[0], mins[part], maxs[part]), _clamp(ends[1], mins[part], maxs[part])


def _clamp(q: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``min(max(q, lo), hi)`` element by element as Python's min and max give it (:func:`_interval`: sums of
    resampled values can stray an ulp outside the data's range): a bound replaces q only when strictly
    beyond it, so an equal zero keeps q's sign (numpy's maximum may return either)."""
    above = np.where(lo > q, lo, q)
    return np.where(hi < above, hi, above)


def _by_size(groups: np.ndarray, sizes: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """``(size, the groups of that size)`` for the groups given, smallest size first."""
    order = groups[np.argsort(sizes[groups], kind="stable")]
    for part in np.split(order, np.flatnonzero(np.diff(sizes[order])) + 1):
        if part.size:
            yield int(sizes[part[0]]), part


# --- intervals of a proportion ------------------------------------------------------------------------

def normal_quantile(p: float) -> float:
    """``Φ⁻¹(p)``, the standard normal quantile, for ``0 < p < 1``."""
    if not 0.0 < p < 1.0:
        raise UsageError(f"a normal quantile needs 0 < p < 1; got {p!r}")
    from statistics import NormalDist

    return NormalDist().inv_cdf(p)


def _check_proportion(caller: str, k: int, n: int, confidence: float) -> None:
    if isinstance(k, bool) or isinstance(n, bool) or int(k) != k or int(n) != n or not 0 <= k <= n:
        raise UsageError(f"a proportion needs whole numbers 0 <= k <= n; got k={k!r}, n={n!r}")
    check(CONFIDENCE, confidence, caller=caller)


def wilson_interval(k: int, n: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """Two-sided Wilson score interval of ``k / n``; ``(nan, nan)`` when ``n == 0``."""
    _check_proportion("wilson_interval", k, n, confidence)
    if n == 0:
        return (math.nan, math.nan)
    z = normal_quantile((1.0 + confidence) / 2.0)
    z2 = z * z
    centre = (k + z2 / 2.0) / (n + z2)
    half = z / (n + z2) * math.sqrt(k * (n - k) / n + z2 / 4.0)
    return (max(0.0, centre - half), min(1.0, centre + half))


def newcombe_interval(k1: int, n1: int, k2: int, n2: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """Two-sided interval of ``k1/n1 − k2/n2`` from the two Wilson intervals (Newcombe 1998, method 10,
    the "hybrid score" interval): with ``(l1, u1)``, ``(l2, u2)`` the Wilson intervals and ``d`` the
    difference, ``(d − √((p1 − l1)² + (u2 − p2)²), d + √((u1 − p1)² + (p2 − l2)²))``. ``(nan, nan)``
    when either ``n`` is 0. Two Wilson intervals that do not overlap imply this one excludes 0, not
    the reverse: this is the sharper test."""
    _check_proportion("newcombe_interval", k1, n1, confidence)
    _check_proportion("newcombe_interval", k2, n2, confidence)
    if n1 == 0 or n2 == 0:
        return (math.nan, math.nan)
    l1, u1 = wilson_interval(k1, n1, confidence=confidence)
    l2, u2 = wilson_interval(k2, n2, confidence=confidence)
    p1, p2 = k1 / n1, k2 / n2
    d = p1 - p2
    return (d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2), d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2))


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularised incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 100_000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-16:
            break
    return h


def _beta_cdf(x: float, a: float, b: float) -> float:
    """Regularised incomplete beta ``I_x(a, b)``."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _betacf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _betacf(b, a, 1.0 - x) / b


def _beta_ppf(q: float, a: float, b: float) -> float:
    """Inverse of :func:`_beta_cdf` in ``x`` by bisection (the cdf is monotone), to the last bit."""
    lo, hi = 0.0, 1.0
    while True:
        mid = (lo + hi) / 2.0
        if mid <= lo or mid >= hi:
            return mid
        if _beta_cdf(mid, a, b) < q:
            lo = mid
        else:
            hi = mid


def clopper_pearson(k: int, n: int, *, confidence: float = 0.95, side: str = "two") -> tuple[float, float]:
    """Exact (Clopper–Pearson) bounds of ``k / n``.

    ``side="lower"`` gives ``(lower, 1.0)`` with ``P(p < lower) <= 1 - confidence``; ``"upper"`` gives
    ``(0.0, upper)``; ``"two"`` gives the central interval. ``(nan, nan)`` when ``n == 0``.
    """
    _check_proportion("clopper_pearson", k, n, confidence)
    if side not in ("lower", "upper", "two"):
        raise UsageError(f"side must be 'lower', 'upper' or 'two'; got {side!r}")
    if n == 0:
        return (math.nan, math.nan)
    alpha = (1.0 - confidence) / (2.0 if side == "two" else 1.0)
    lower = 0.0 if k == 0 or side == "upper" else _beta_ppf(alpha, k, n - k + 1)
    upper = 1.0 if k == n or side == "lower" else _beta_ppf(1.0 - alpha, k + 1, n - k)
    return (lower, upper)


def _resampled_quantiles(columns: Sequence[np.ndarray], qs: Sequence[float], gen: np.random.Generator,
                         resamples: int) -> list[np.ndarray]:
    """Bootstrap quantiles (numpy's linear interpolation) of each column: one ``(resamples, len(qs))``
    array per column; every column is resampled with the same query indices, drawn a block of
    resamples at a time from ``gen``, and all ``qs`` come from the same resamples."""
    n = columns[0].size
    out = [np.empty((resamples, len(qs))) for _ in columns]
    rows = _block_rows(n)
    for start in range(0, resamples, rows):
        stop = min(start + rows, resamples)
        idx = gen.integers(0, n, size=(stop - start, n))
        for j, col in enumerate(columns):
            out[j][start:stop] = np.quantile(col[idx], list(qs), axis=1).T
    return out


def _quantile_interval(estimates: np.ndarray, confidence: float) -> tuple[float, float]:
    alpha = 1.0 - confidence
    low, high = np.quantile(estimates, [alpha / 2.0, 1.0 - alpha / 2.0])
    return (float(low), float(high))


def _check_q(q: float) -> None:
    if isinstance(q, bool) or not isinstance(q, (int, float)) or not 0.0 <= q <= 1.0:
        raise UsageError(f"q must be a quantile between 0 and 1 (0.5 = median, 0.9 = p90); got {q!r}")


def bootstrap_quantile_ci(
    values: Sequence[float] | np.ndarray,
    q: float | Sequence[float],
    *,
    rng: RandomSource,
    resamples: int = 2000,
    confidence: float = 0.95,
) -> tuple[float, float] | list[tuple[float, float]]:
    """Percentile-bootstrap interval of the ``q``-quantile of ``values`` (NaN entries skipped).

    For latency percentiles (median, p90, p99): queries are resampled with replacement and the
    quantile (numpy's linear interpolation, as ``np.percentile``) is taken of each resample. The same
    degenerate answers as :func:`bootstrap_ci`: NaN with fewer than 2 values or ``resamples=0``,
    the value itself when every value is equal. Tail quantiles of few queries are only as wide as
    the data allow: the p99 of 20 queries moves with its largest values, so read its interval as such.

    ``q`` may be a list (``[0.5, 0.9, 0.99]``): then a list of intervals, all from the same resamples
    (one pass over the data instead of one per quantile).
    """
    _check("bootstrap_quantile_ci", resamples, confidence)
    qs = [q] if isinstance(q, (int, float)) else list(q)
    for one in qs:
        _check_q(one)
    x = _applicable(values)
    if x.size < 2 or resamples == 0:
        cis = [(math.nan, math.nan)] * len(qs)
    elif bool((x == x[0]).all()):
        cis = [(float(x[0]), float(x[0]))] * len(qs)
    else:
        (est,) = _resampled_quantiles([x], [float(v) for v in qs], _generator(rng), resamples)
        cis = [_quantile_interval(est[:, i], confidence) for i in range(len(qs))]
    return cis[0] if isinstance(q, (int, float)) else cis


def paired_quantile_change_ci(
    base: Sequence[float] | np.ndarray,
    cand: Sequence[float] | np.ndarray,
    q: float,
    *,
    rng: RandomSource,
    resamples: int = 2000,
    confidence: float = 0.95,
) -> tuple[float, float]:
    """Interval of ``quantile_q(cand) − quantile_q(base)`` over paired queries (both not NaN).

    Each resample draws queries with replacement and takes the quantile of both runs over the same
    drawn queries, so query difficulty cancels as in :func:`paired_bootstrap_ci`.
    """
    _check("paired_quantile_change_ci", resamples, confidence)
    _check_q(q)
    b, c = paired_values(base, cand)
    if b.size < 2 or resamples == 0:
        return (math.nan, math.nan)
    qb, qc = _resampled_quantiles([b, c], [float(q)], _generator(rng), resamples)
    d = (qc - qb)[:, 0]
    if bool((d == d[0]).all()):
        return (float(d[0]), float(d[0]))
    return _quantile_interval(d, confidence)


def exact_quantile_ci(values: Sequence[float] | np.ndarray, q: float | Sequence[float], *,
                      confidence: float = 0.95) -> tuple[float, float] | list[tuple[float, float]]:
    """The percentile-bootstrap interval of the ``q``-quantile, computed exactly instead of by resampling.

    In a bootstrap resample of ``n`` values the ``r``-th smallest is at most ``x_(j)`` (the ``j``-th
    smallest value) exactly when at least ``r`` of the ``n`` draws are at most ``x_(j)``, a count that is
    Binomial(n, j/n). So the bootstrap distribution of the order statistic is known in closed form
    (a regularised incomplete beta), and its ``(1 ∓ c)/2`` quantiles are found by bisection over ``j``:
    no random numbers, no seed, and O(log n) work however many values there are. ``r`` is the order
    statistic nearest numpy's linear-interpolation position ``q·(n − 1)``. This is the interval an
    infinite number of resamples of :func:`bootstrap_quantile_ci` approaches (up to the interpolation
    between two neighbouring order statistics). NaN with fewer than 2 values; the value itself when
    all are equal. ``q`` may be a list (then a list of intervals).
    """
    check(CONFIDENCE, confidence, caller="exact_quantile_ci")
    qs = [q] if isinstance(q, (int, float)) else list(q)
    for one in qs:
        _check_q(one)
    x = np.sort(_applicable(values))
    n = x.size
    out: list[tuple[float, float]] = []
    for one in qs:
        if n < 2:
            out.append((math.nan, math.nan))
            continue
        if x[0] == x[-1]:
            out.append((float(x[0]), float(x[0])))
            continue
        r = math.floor(float(one) * (n - 1) + 0.5) + 1  # 1-based rank of the order statistic

        def cdf(j: int, r: int = r) -> float:  # P(r-th smallest of a resample <= x_(j)), j = 1..n
            return 1.0 if j >= n else _beta_cdf(j / n, r, n - r + 1)

        def first(level: float, cdf: Any = cdf) -> int:  # smallest j with cdf(j) >= level
            lo, hi = 1, n
            while lo < hi:
                mid = (lo + hi) // 2
                if cdf(mid) >= level:
                    hi = mid
                else:
                    lo = mid + 1
            return lo

        alpha = 1.0 - confidence
        out.append((float(x[first(alpha / 2.0) - 1]), float(x[first(1.0 - alpha / 2.0) - 1])))
    return out[0] if isinstance(q, (int, float)) else out
