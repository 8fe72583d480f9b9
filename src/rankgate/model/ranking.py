"""The ranking rule. Nothing else in rankgate sorts a run.

Two rules order a query's items; they differ only in what decides between equal scores:

* ``"id"`` (trec_eval's rule): score (float64) descending, equal scores by item id descending,
  compared byte-wise (UTF-8), so ties cannot depend on the order of the input lines. A TREC run's
  rank column is ignored, as trec_eval ignores it.
* ``"input"`` (the producer's order, "tie-break by original ranking" as the metrics spec says): when
  every item of a query has an explicit rank (a JSONL item's ``rank``, a CSV/Parquet ``rank``
  column), the rank alone orders it and scores are ignored; otherwise score descending, equal
  scores in the order the producer gave them (list position, or row order of a table), a stable sort.

A run without scores keeps its given order under both rules: the ``rank`` where given, else list
position. Which rule applies by default depends on the format (:func:`resolve_ties`): ``"id"`` for
TREC runs, for ``{query_id: {doc_id: score}}`` dicts (pytrec_eval's shape) and under ``trec=True``;
``"input"`` for every format where the producer gave an order. ``ties=`` (``--ties``) forces either.
:func:`tie_effect` counts the queries whose order the choice changes.

Most real runs are already in this order; that is checked in O(n) and only the queries (or the runs of
tied scores) that are out of order are sorted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from rankgate._util.arrow import arrow_of, np_of, take_rows

MAX_RANK = 2**53
"""Ranks must lie strictly between -2^53 and 2^53: beyond, a double cannot tell two neighbouring
integers apart, so two different ranks would silently tie."""

__all__ = ["MAX_RANK", "TIES", "Reorder", "TieEffect", "check_ties", "rank_order", "rank_rows", "resolve_ties",
           "tie_effect"]

# How equal scores are ordered: "id" (trec_eval: id descending) or "input" (the producer's order).
TIES = ("id", "input")


def check_ties(ties: object) -> str:
    """``ties`` if it names a rule, else a UsageError listing the rules."""
    if ties not in TIES:
        from rankgate.errors import UsageError

        raise UsageError(f"ties must be one of: {', '.join(TIES)}; got {ties!r}")
    return ties


def resolve_ties(ties: str | None, run: Any, *, trec: bool = False) -> str:
    """The rule that ranks ``run``: ``ties`` when given, else ``"id"`` under trec_eval semantics
    (``trec=True``), else the rule the run's format asks for (``run.ties``: ``"id"`` for TREC runs,
    ``"input"`` where the producer gave an order)."""
    if ties is not None:
        return check_ties(ties)
    if trec:
        return "id"
    return check_ties(getattr(run, "ties", "input"))


@dataclass(frozen=True)
class Reorder:
    """The ranking permutation, kept small in the usual cases.

    ``perm`` is set when rows move between queries' positions (a full sort); otherwise rows stay in
    place except ``rows``, which take the row at ``src`` (a few runs of tied scores), or nothing
    moves at all (both None).
    """

    perm: np.ndarray | None = None
    rows: np.ndarray | None = None
    src: np.ndarray | None = None

    def full(self, n: int) -> np.ndarray:
        """The whole permutation (row i of the ranked run is input row ``full(n)[i]``)."""
        if self.perm is not None:
            return self.perm
        perm = np.arange(n, dtype=np.int64)
        if self.rows is not None and self.src is not None:
            perm[self.rows] = self.src
        return perm

    def apply(self, values: np.ndarray) -> np.ndarray:
        """``values`` in ranked order; a within-query fix reorders a writable array in place."""
        if self.perm is not None:
            return values[self.perm]
        if self.rows is not None:
            if not values.flags.writeable:
                values = values.copy()
            values[self.rows] = values[self.src]
        return values


def rank_rows(query: np.ndarray, doc: pa.Array | pa.ChunkedArray, score: np.ndarray | None, order: np.ndarray | None,
              *, ties: str = "id") -> np.ndarray:
    """Permutation that groups rows by query code (ascending) and orders each query by the rule."""
    return rank_order(query, doc, score, order, ties=ties).full(query.size)


def rank_order(query: np.ndarray, doc: pa.Array | pa.ChunkedArray, score: np.ndarray | None, order: np.ndarray | None,
               *, id_keys: np.ndarray | None = None, ties: str = "id") -> Reorder:
    """:func:`rank_rows` as a :class:`Reorder`, without a full permutation unless rows really move.

    ``id_keys``: integers per row that order as the ids do byte-wise (fixed-width ids parsed to
    numbers), if known; tied scores are then ordered by them instead of by the id strings.
    ``ties``: ``"id"`` (trec_eval's rule) or ``"input"`` (the producer's order; see the module docs)."""
    check_ties(ties)
    n = query.size
    if n == 0:
        return Reorder()
    grouped = not bool((query[1:] < query[:-1]).any())
    if score is None:
        return _given_order(query, order if order is not None else np.arange(n, dtype=np.float64), grouped)
    if ties == "input":
        return _input_order(query, score, order, grouped)
    if not grouped:
        return Reorder(perm=_full_sort(query, doc, score))
    same_q = query[1:] == query[:-1]
    if (same_q & (score[1:] > score[:-1])).any():
        return Reorder(perm=_full_sort(query, doc, score))
    # Grouped and score-descending: only runs of tied scores may still need the id-descending rule.
    tie = same_q & (score[1:] == score[:-1])
    if not tie.any():
        return Reorder()
    return _fix_ties(doc, tie, id_keys)


def _given_order(query: np.ndarray, key: np.ndarray, grouped: bool) -> Reorder:
    """Rows by query, then ``key`` ascending, then input position."""
    if grouped and bool(((key[1:] > key[:-1]) | (query[1:] > query[:-1])).all()):
        return Reorder()
    return Reorder(perm=np.lexsort((np.arange(query.size), key, query)).astype(np.int64))


def _fully_ranked(query: np.ndarray, given: np.ndarray) -> np.ndarray:
    """Per row: does every row of its query have a given rank?"""
    lacking = np.bincount(query[~given], minlength=int(query.max()) + 1)
    return lacking[query] == 0


def _input_order(query: np.ndarray, score: np.ndarray, order: np.ndarray | None, grouped: bool) -> Reorder:
    """The producer's order: a query whose items all have a rank by rank alone; any other query by
    score descending, equal scores in input position (a stable sort)."""
    score_key: np.ndarray = -score
    order_key: np.ndarray | None = None
    if order is not None:
        given = ~np.isnan(order)
        if given.all():
            return _given_order(query, order, grouped)
        if given.any():
            full = _fully_ranked(query, given)
            score_key = np.where(full, 0.0, score_key)
            order_key = np.where(full, order, 0.0)
    same_q = query[1:] == query[:-1]
    later_first = score_key[1:] < score_key[:-1]
    if order_key is not None:
        later_first |= (score_key[1:] == score_key[:-1]) & (order_key[1:] < order_key[:-1])
    if grouped and not bool((same_q & later_first).any()):
        return Reorder()  # already in order: equal scores stay as they came
    keys = (np.arange(query.size), score_key, query) if order_key is None else \
        (np.arange(query.size), order_key, score_key, query)
    return Reorder(perm=np.lexsort(keys).astype(np.int64))


@dataclass(frozen=True)
class TieEffect:
    """What the choice of rule changes: ``differ`` queries are ordered differently by the two rules
    within ``depth`` (the deepest cutoff asked; None: the whole list); ``rank_vs_score`` queries
    ranked by their explicit ranks (rule ``"input"``) hold a higher score below a lower one."""

    differ: int = 0
    rank_vs_score: int = 0


def tie_effect(query: np.ndarray, doc: pa.Array | pa.ChunkedArray, score: np.ndarray | None,
               order: np.ndarray | None, used: Reorder, ties: str, *, depth: int | None = None,
               id_keys: np.ndarray | None = None, counted: np.ndarray | None = None) -> TieEffect:
    """How many queries the other rule would order differently (``used``: the ranking by ``ties``).

    ``counted``: per query code, whether the query counts (e.g. it is evaluated); all by default.
    Costs one O(n) pass when no two scores of a query are equal and no rank is given; otherwise the
    other rule's ranking is built once (as cheap as ranking itself when rows are already in order)."""
    n = query.size
    if score is None or n == 0:
        return TieEffect()  # both rules keep the given order
    ranked = order is not None and bool((~np.isnan(order)).any())
    if ties == "id" and not ranked and used.perm is None:
        # trec_eval's rule kept every row in its query's place: the rows are grouped and
        # score-descending, which is the producer's order too; only the tied runs it reordered differ.
        q_sorted, same, theirs = query, query[1:] == query[:-1], Reorder()
    else:
        s_sorted = used.apply(score.copy() if used.rows is not None else score)
        q_sorted = used.apply(query.copy() if used.rows is not None else query)
        same = q_sorted[1:] == q_sorted[:-1]
        if not ranked and not bool((same & (s_sorted[1:] == s_sorted[:-1])).any()):
            return TieEffect()
        other = "id" if ties == "input" else "input"
        theirs = rank_order(query, doc, score, order, id_keys=id_keys, ties=other)
    keep = np.ones(int(query.max()) + 1, dtype=bool) if counted is None else counted

    def queries_where(rows: np.ndarray) -> int:
        hit = np.zeros(keep.size, dtype=bool)
        hit[q_sorted[rows]] = True
        return int((hit & keep).sum())

    rank_vs_score = 0
    if ranked and ties == "input":  # (trec_eval's rule ignores ranks: nothing to disagree with)
        assert order is not None
        in_input = used.full(n)
        full = _fully_ranked(query, ~np.isnan(order))[in_input]
        s_in = score[in_input]
        rise = np.flatnonzero(same & full[1:] & (s_in[1:] > s_in[:-1])) + 1
        rank_vs_score = queries_where(rise)
    moved = _moved_positions(used, theirs, n)
    if depth is not None and moved.size:
        starts = np.flatnonzero(np.concatenate(([True], ~same)))
        query_start = starts[np.searchsorted(starts, moved, side="right") - 1]
        moved = moved[moved - query_start < depth]
    return TieEffect(differ=queries_where(moved), rank_vs_score=rank_vs_score)


def _moved_positions(a: Reorder, b: Reorder, n: int) -> np.ndarray:
    """Positions (ascending) where two rankings of the same rows hold different input rows; without a
    whole permutation when neither moves rows between queries' positions (the usual case)."""
    if a.perm is not None or b.perm is not None:
        return np.flatnonzero(a.full(n) != b.full(n))
    for one, other in ((a, b), (b, a)):
        if other.rows is None or not other.rows.size:  # only one side moves rows: those that moved
            if one.rows is None or one.src is None:
                return np.zeros(0, np.int64)
            return np.sort(one.rows[one.rows != one.src])
    candidates = np.concatenate([r.rows for r in (a, b) if r.rows is not None] or [np.zeros(0, np.int64)])
    candidates.sort()
    candidates = candidates[np.concatenate(([True], candidates[1:] != candidates[:-1]))] if candidates.size else candidates
    return candidates[_rows_at(a, candidates) != _rows_at(b, candidates)]


def _rows_at(r: Reorder, positions: np.ndarray) -> np.ndarray:
    """The input row at each position of a within-query reorder (``r.full(n)[positions]``)."""
    out = positions.copy()
    if r.rows is None or r.src is None or not r.rows.size:
        return out
    rows, src = r.rows, r.src
    if not bool((rows[1:] > rows[:-1]).all()):
        by = np.argsort(rows, kind="stable")
        rows, src = rows[by], src[by]
    j = np.minimum(np.searchsorted(rows, positions), rows.size - 1)
    hit = rows[j] == positions
    out[hit] = src[j[hit]]
    return out


def _full_sort(query: np.ndarray, doc: pa.Array | pa.ChunkedArray, score: np.ndarray) -> np.ndarray:
    from rankgate._native import kernels

    if isinstance(doc, pa.ChunkedArray):
        doc = doc.combine_chunks()
    if (kernels is not None and isinstance(doc, pa.Array) and doc.type == pa.string() and not doc.null_count
            and len(doc) and doc.buffers()[2] is not None and query.dtype in (np.int32, np.int64)
            and not np.isnan(score).any()):  # (readers reject NaN scores; the comparator needs an order)
        n = len(doc)
        offsets = np.frombuffer(doc.buffers()[1], dtype=np.int32, count=n + 1, offset=doc.offset * 4)
        data = np.frombuffer(doc.buffers()[2], dtype=np.uint8)
        perm = np.empty(n, dtype=np.int64)
        kernels.rank_permutation(np.ascontiguousarray(query), int(query.max()) + 1,
                                 np.ascontiguousarray(score, dtype=np.float64), offsets, data, perm)
        return perm
    return _full_sort_arrow(query, doc, score)


def _full_sort_arrow(query: np.ndarray, doc: pa.Array, score: np.ndarray) -> np.ndarray:
    import pyarrow.compute as pc

    table = pa.table({"q": arrow_of(query), "s": arrow_of(score), "d": doc})
    idx = pc.sort_indices(table, sort_keys=[("q", "ascending"), ("s", "descending"), ("d", "descending")])
    return np_of(idx, np.int64)


def _fix_ties(doc: pa.Array | pa.ChunkedArray, tie: np.ndarray, id_keys: np.ndarray | None = None) -> Reorder:
    """Order each run of equal scores (within a query) by id descending; the rest stays in place."""
    n = tie.size + 1
    # Rows that belong to a tied run: row i ties with i+1.
    in_run = np.zeros(n, dtype=bool)
    in_run[:-1] |= tie
    in_run[1:] |= tie
    rows = np.flatnonzero(in_run)
    # Run id: a new run starts where a row does not tie with its predecessor.
    starts = np.ones(rows.size, dtype=bool)
    starts[1:] = ~tie[rows[1:] - 1]
    run_id = np.cumsum(starts) - 1
    # The tied rows' ids, sorted within each run by the same rule as a full sort (all scores equal).
    if id_keys is not None:  # by run, then key descending, then input order (stable sorts)
        keys = id_keys[rows]
        low = int(keys.min())
        span = int(keys.max()) - low + 1
        if span * (int(run_id[-1]) + 1) < 2**62:  # one integer key: runs ascend, so the sort is quick
            idx = np.argsort(run_id * span + (span - 1 - (keys - low)), kind="stable")
        else:
            idx = np.lexsort((-keys, run_id))
    else:
        idx = _full_sort(run_id, take_rows(doc, rows), np.zeros(rows.size))
    moved = rows[idx] != rows
    return Reorder(rows=rows[moved], src=rows[idx][moved]) if moved.any() else Reorder()
