"""Parquet long tables: one row per (query, item).

Gold: ``query_id``, ``chunk_id`` (or ``doc_id``), ``grade`` (or ``relevance``). Run: ``query_id``,
``chunk_id`` (or ``doc_id``) and ``score`` and/or ``rank``; optional ``doc_version`` and ``text``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..errors import InputError
from .arrow import np_of
from .models import Gold, Run
from .trec import _codes, _combine, check_unique_judgements

QUERY = ("query_id", "qid", "query-id")
ITEM = ("chunk_id", "doc_id", "docid", "corpus_id", "corpus-id", "docno", "id")
GRADE = ("grade", "relevance", "rel", "score", "label")


def _read(path: str) -> pa.Table:
    import pyarrow.parquet as pq

    try:
        return pq.read_table(path, memory_map=True)  # from the page cache, no copy into fresh buffers
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"is not a readable Parquet file: {exc}", path=path) from None


def _col(table: pa.Table, names: tuple[str, ...], path: str, what: str, required: bool = True) -> str | None:
    for n in names:
        if n in table.column_names:
            return n
    if required:
        raise InputError(
            f"has no {what} column; columns: {', '.join(table.column_names)}",
            path=path,
            field=names[0],
            hint=f"name it one of: {', '.join(names)}",
        )
    return None


def _strings(table: pa.Table, name: str, path: str) -> pa.Array:
    col = _combine(table.column(name))
    if col.null_count:
        row = int(np.flatnonzero(np.asarray(col.is_null()))[0])
        raise InputError(f"is empty in row {row + 1}", path=path, field=name)
    return col.cast(pa.string())


def read_parquet_gold(path: str) -> Gold:
    t = _read(path)
    q, d, g = (_col(t, QUERY, path, "query id"), _col(t, ITEM, path, "item id"), _col(t, GRADE, path, "grade"))
    assert q and d and g
    if t.num_rows == 0:
        raise InputError("has no rows", path=path)
    grades = _combine(t.column(g))
    if not pa.types.is_integer(grades.type) or grades.null_count:
        raise InputError(f"must hold integer grades; has type {grades.type}", path=path, field=g)
    qids, codes = _codes(_strings(t, q, path))
    gold = Gold(qids, codes, _strings(t, d, path), np_of(grades, np.int64), source=path)
    check_unique_judgements(gold)
    return gold


def read_parquet_run(path: str) -> Run:
    t = _read(path)
    q, d = _col(t, QUERY, path, "query id"), _col(t, ITEM, path, "item id")
    assert q and d
    s = _col(t, ("score",), path, "score", required=False)
    r = _col(t, ("rank",), path, "rank", required=False)
    if s is None and r is None:
        raise InputError("has neither a score nor a rank column", path=path, field="score", hint="add one of them")
    if t.num_rows == 0:
        raise InputError("has no rows", path=path)
    qids, codes = _codes(_strings(t, q, path))
    run = Run(qids, codes, _strings(t, d, path), source=path)
    key = s or r
    assert key
    col = _combine(t.column(key))
    if col.null_count or not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
        raise InputError(f"must hold numbers with no gaps; has type {col.type}", path=path, field=key)
    values = np_of(col, np.float64)
    if np.isnan(values).any():
        raise InputError("holds NaN", path=path, field=key)
    if s is not None:
        run.r_score = values
    else:
        run.r_order = values
    for name in ("doc_version", "text"):
        if name in t.column_names:
            run.items[name] = t.column(name).to_pylist()
    return run
