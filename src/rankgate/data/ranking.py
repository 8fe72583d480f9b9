"""The ranking rule. Nothing else in rankgate sorts a run.

* A run with scores is ordered, within each query, by score (float64) descending, and equal scores by
  item id descending, compared byte-wise (UTF-8) — trec_eval's rule, so ties cannot depend on the
  order of the input lines. A TREC run's rank column is ignored, as trec_eval ignores it.
* A run without scores keeps its given order: the JSONL ``rank`` when present, else list position.

Most real runs are already in this order; that is checked in O(n) and only the queries (or the runs of
tied scores) that are out of order are sorted.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .arrow import arrow_of, np_of

__all__ = ["rank_rows"]


def rank_rows(query: np.ndarray, doc: pa.Array, score: np.ndarray | None, order: np.ndarray | None) -> np.ndarray:
    """Permutation that groups rows by query code (ascending) and orders each query by the rule."""
    n = query.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if score is None:
        key = order if order is not None else np.arange(n, dtype=np.float64)
        grouped = bool((np.diff(query) >= 0).all())
        if grouped and bool(((np.diff(key) > 0) | (np.diff(query) > 0)).all()):
            return np.arange(n, dtype=np.int64)
        return np.lexsort((np.arange(n), key, query)).astype(np.int64)

    dq = np.diff(query)
    if (dq < 0).any():
        return _full_sort(query, doc, score)
    same_q = dq == 0
    ds = np.diff(score)
    if (same_q & (ds > 0)).any():
        return _full_sort(query, doc, score)
    # Grouped and score-descending: only runs of tied scores may still need the id-descending rule.
    tie = same_q & (ds == 0)
    if not tie.any():
        return np.arange(n, dtype=np.int64)
    return _fix_ties(doc, tie)


def _full_sort(query: np.ndarray, doc: pa.Array, score: np.ndarray) -> np.ndarray:
    import pyarrow.compute as pc

    table = pa.table({"q": arrow_of(query), "s": arrow_of(score), "d": doc})
    idx = pc.sort_indices(table, sort_keys=[("q", "ascending"), ("s", "descending"), ("d", "descending")])
    return np_of(idx, np.int64)


def _fix_ties(doc: pa.Array, tie: np.ndarray) -> np.ndarray:
    """Order each run of equal scores (within a query) by id descending; the rest stays in place."""
    import pyarrow.compute as pc

    n = tie.size + 1
    # Rows that belong to a tied run: row i ties with i+1.
    in_run = np.zeros(n, dtype=bool)
    in_run[:-1] |= tie
    in_run[1:] |= tie
    rows = np.flatnonzero(in_run)
    # Run id: a new run starts where a row does not tie with its predecessor.
    starts = np.ones(rows.size, dtype=bool)
    starts[1:] = ~tie[rows[1:] - 1]
    run_id = np.cumsum(starts)
    sub = pa.table({"r": arrow_of(run_id), "d": doc.take(arrow_of(rows))})
    idx = np_of(pc.sort_indices(sub, sort_keys=[("r", "ascending"), ("d", "descending")]), np.int64)
    perm = np.arange(n, dtype=np.int64)
    perm[rows] = rows[idx]
    return perm
