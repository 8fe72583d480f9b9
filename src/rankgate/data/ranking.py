"""The ranking rule. Nothing else in rankgate sorts a run.

* A run with scores is ordered, within each query, by score (float64) descending, and equal scores by
  item id descending, compared byte-wise (UTF-8) — trec_eval's rule, so ties cannot depend on the
  order of the input lines. A TREC run's rank column is ignored, as trec_eval ignores it.
* A run without scores keeps its given order: the JSONL ``rank`` when present, else list position.
* ``ties="input"`` (``--ties input``) breaks equal scores by input order instead: the given rank
  when the run has one beside its scores (a JSONL item's ``rank``, a CSV/Parquet ``rank`` column:
  ``order`` beside ``score``), else the order of the records in the
  file (TREC lines, a JSONL ``topk`` list, Parquet/CSV rows), a stable sort. Scores still
  decide; only items with equal scores keep the order the retriever gave them. ``ties="id"`` is the
  default.

Most real runs are already in this order; that is checked in O(n) and only the queries (or the runs of
tied scores) that are out of order are sorted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from .arrow import arrow_of, np_of

MAX_RANK = 2**53
"""Ranks must lie strictly between -2^53 and 2^53: beyond, a double cannot tell two neighbouring
integers apart, so two different ranks would silently tie."""

__all__ = ["MAX_RANK", "TIES", "Reorder", "check_ties", "rank_order", "rank_rows"]

# How equal scores are ordered: "id" (trec_eval: id descending) or "input" (input order, stable).
TIES = ("id", "input")


def check_ties(ties: object) -> str:
    """``ties`` if it names a rule, else a UsageError listing the rules."""
    if ties not in TIES:
        from ..errors import UsageError

        raise UsageError(f"ties must be one of: {', '.join(TIES)}; got {ties!r}")
    return ties


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
    ``ties``: ``"id"`` (the default rule) or ``"input"`` (equal scores keep their input order)."""
    check_ties(ties)
    n = query.size
    if n == 0:
        return Reorder()
    grouped = not bool((query[1:] < query[:-1]).any())
    if score is None:
        key = order if order is not None else np.arange(n, dtype=np.float64)
        if grouped and bool(((key[1:] > key[:-1]) | (query[1:] > query[:-1])).all()):
            return Reorder()
        return Reorder(perm=np.lexsort((np.arange(n), key, query)).astype(np.int64))
    if ties == "input":
        # Equal scores keep the given rank (a JSONL "rank" beside scores), else the record order.
        same_q = query[1:] == query[:-1]
        in_order = not bool((same_q & (score[1:] > score[:-1])).any())
        if order is not None:
            in_order = in_order and not bool((same_q & (score[1:] == score[:-1]) & (order[1:] < order[:-1])).any())
        if grouped and in_order:
            return Reorder()  # already in order: equal scores stay as they came
        keys = (np.arange(n), -score, query) if order is None else (np.arange(n), order, -score, query)
        return Reorder(perm=np.lexsort(keys).astype(np.int64))
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


def _full_sort(query: np.ndarray, doc: pa.Array | pa.ChunkedArray, score: np.ndarray) -> np.ndarray:
    from .._accel import kernels

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
        idx = _full_sort(run_id, doc.take(arrow_of(rows)), np.zeros(rows.size))
    moved = rows[idx] != rows
    return Reorder(rows=rows[moved], src=rows[idx][moved]) if moved.any() else Reorder()
