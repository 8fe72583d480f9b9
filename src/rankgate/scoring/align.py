"""Which queries are scored, and on which ids: the run's queries put onto the gold set's, and chunk ids
mapped to their documents for ``level="doc"``.

The evaluated queries are every gold query, in gold order; in trec mode without ``complete``, only
those the run ranks (trec_eval without ``-c``). A run query the gold set lacks is listed, not scored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from rankgate._util.arrow import arrow_of, np_of, strings_of
from rankgate.errors import InputError
from rankgate.io import Gold, Run

__all__ = ["QueryAlignment", "align_queries", "doc_mapper"]


@dataclass(frozen=True)
class QueryAlignment:
    """Which queries are evaluated, in gold order, and how the run's queries map onto them."""

    run_to_gold: np.ndarray  # gold index of each run query, -1 when the gold set lacks it
    evaluated: np.ndarray  # gold indices evaluated, ascending
    eval_pos: np.ndarray  # per gold query: its place among the evaluated ones, -1 if not evaluated
    in_run: np.ndarray  # per gold query: the run ranks it
    not_in_gold: tuple[str, ...]
    missing: tuple[str, ...]  # evaluated gold queries the run does not rank (they score 0)


def align_queries(g: Gold, r: Run, *, trec: bool, complete: bool, shared: bool = True) -> QueryAlignment:
    """The evaluated queries: all gold queries, or in trec mode (without ``complete``) those the run ranks.
    ``shared``: refuse a run that shares no query id with the gold set (off for one block of a run)."""
    nq = len(r.query_ids)
    if nq == len(g.query_ids) and r.query_ids == g.query_ids:  # the usual case: the same queries in the same order
        run_to_gold = np.arange(nq, dtype=np.int64)
    else:
        from itertools import repeat

        gold_index = {q: i for i, q in enumerate(g.query_ids)}
        run_to_gold = np.fromiter(map(gold_index.get, r.query_ids, repeat(-1)), dtype=np.int64, count=nq)
    not_in_gold = tuple(r.query_ids[i] for i in np.flatnonzero(run_to_gold < 0).tolist())
    in_run = np.zeros(len(g.query_ids), dtype=bool)
    in_run[run_to_gold[run_to_gold >= 0]] = True
    if trec and not complete:
        evaluated = np.flatnonzero(in_run)
    else:
        evaluated = np.arange(len(g.query_ids), dtype=np.int64)
    if shared and not in_run.any():  # every gold query "missing": almost surely ids in two different shapes
        hashed = r.query_ids[0].startswith("q:") and not g.query_ids[0].startswith("q:")
        raise InputError(
            "shares no query id with the gold set", path=r.source,
            hint=f"gold ids look like {g.query_ids[0]!r}, run ids like {r.query_ids[0]!r}"
            + ("; the run's records carry no query id, so each query is known by a hash of its text (LlamaIndex "
               "RetrieverEvaluator results, RAGAS): pass the same file as the gold set too (it holds both), or "
               "add a query_id field to each record" if hashed else ""),
        )
    eval_pos = np.full(len(g.query_ids), -1, dtype=np.int64)
    eval_pos[evaluated] = np.arange(evaluated.size)
    missing = tuple(g.query_ids[i] for i in evaluated[~in_run[evaluated]].tolist())
    return QueryAlignment(run_to_gold, evaluated, eval_pos, in_run, not_in_gold, missing)


def doc_mapper(sep: str, mapping: dict[str, str] | None) -> Callable[[str], str]:
    """Chunk id -> document id: through ``mapping`` when given (ids it lacks are their own document),
    else the part before the first ``sep`` (an empty ``sep``: every chunk is its own document)."""
    if mapping is not None:
        return lambda chunk: mapping.get(chunk, chunk)
    if not sep:
        def same(chunk: str) -> str:
            return chunk

        same.own_document = True  # type: ignore[attr-defined]  # every chunk is its own document
        return same

    def before_sep(chunk: str) -> str:
        return chunk.split(sep, 1)[0]

    before_sep.split_sep = sep  # type: ignore[attr-defined]  # lets column code split whole arrays at once
    return before_sep


_doc_mapper = doc_mapper  # the name earlier releases used


def _map_array(arr: pa.Array | pa.ChunkedArray, doc_of: Callable[[str], str]) -> pa.Array:
    """Each id of ``arr`` through ``doc_of``, called once per distinct id."""
    import pyarrow.compute as pc

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    enc = pc.dictionary_encode(arr)
    mapped = strings_of([doc_of(x) for x in enc.dictionary.to_pylist()])
    return mapped.take(enc.indices)


def _gold_to_docs(g: Gold, doc_of: Callable[[str], str]) -> Gold:
    """Document-level gold: each (query, document) keeps the best grade of its chunks."""
    import pyarrow.compute as pc

    docs = _map_array(g.j_doc, doc_of)
    enc = pc.dictionary_encode(docs)
    codes = np_of(enc.indices, np.int64)
    keys = g.j_query.astype(np.int64) * (len(enc.dictionary) + 1) + codes
    order = np.lexsort((-g.j_grade, keys))
    first = np.ones(order.size, dtype=bool)
    first[1:] = keys[order][1:] != keys[order][:-1]
    keep = np.sort(order[first])
    fields = dict(g.fields)
    if "must_not_retrieve" in fields:
        fields["must_not_retrieve"] = [None if v is None else sorted({doc_of(x) for x in v}) for v in fields["must_not_retrieve"]]
    return Gold(g.query_ids, g.j_query[keep], docs.take(arrow_of(keep)), g.j_grade[keep], fields, None, g.source)
