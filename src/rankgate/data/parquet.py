"""Parquet long tables: one row per (query, item).

Gold: ``query_id``, ``chunk_id`` (or ``doc_id``), ``grade`` (or ``relevance``). Run: ``query_id``,
``chunk_id`` (or ``doc_id``) and ``score`` and/or ``rank``; optional ``doc_version`` and ``text``.
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa

from ..errors import InputError
from .arrow import np_of
from .models import Gold, Run
from .trec import _codes, _combine, _dictionary_codes, check_unique_judgements

QUERY = ("query_id", "qid", "query-id")
ITEM = ("chunk_id", "doc_id", "docid", "corpus_id", "corpus-id", "docno", "id")
GRADE = ("grade", "relevance", "rel", "score", "label")


def _read(path: str) -> pa.Table:
    """The table, its string query-id column dictionary-encoded by the reader (no string per row)."""
    import pyarrow.parquet as pq

    try:
        if os.path.isdir(path):  # a partitioned dataset
            return pq.read_table(path, memory_map=True)
        # One file through ParquetFile: pq.read_table goes through pyarrow.dataset, which imports
        # pandas where it is installed (0.3 s). Memory-mapped: from the page cache, no copy.
        schema = pq.read_schema(path, memory_map=True)
        q = next((n for n in QUERY if n in schema.names), None)
        text = q is not None and (pa.types.is_string(schema.field(q).type) or pa.types.is_large_string(schema.field(q).type))
        return pq.ParquetFile(path, memory_map=True, read_dictionary=[q] if text else None).read()
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"is not a readable Parquet file: {exc}", path=path) from None


def _query_codes(table: pa.Table, name: str, path: str) -> tuple[list[str], np.ndarray]:
    """(query ids in order of first appearance, code of each row)."""
    col = table.column(name)
    if not pa.types.is_dictionary(col.type):
        return _codes(_strings(table, name, path))
    if col.null_count:
        row = int(np.flatnonzero(np.asarray(_combine(col).is_null()))[0])
        raise InputError(f"is empty in row {row + 1}", path=path, field=name)
    qids, codes = _dictionary_codes(col)
    if codes.size and (codes[0] != 0 or int(codes.max()) + 1 != len(qids)
                       or bool((codes[1:] > np.maximum.accumulate(codes)[:-1] + 1).any())):
        # the file's dictionaries are not in order of first appearance (or hold unused values): renumber
        used, first = np.unique(codes, return_index=True)
        order = used[np.argsort(first)]  # the codes in use, by their first row
        renumber = np.empty(len(qids), dtype=np.int32)
        renumber[order] = np.arange(order.size, dtype=np.int32)
        qids = [qids[i] for i in order.tolist()]
        codes = renumber[codes]
    return qids, codes


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
    qids, codes = _query_codes(t, q, path)
    gold = Gold(qids, codes.astype(np.int64), _strings(t, d, path), np_of(grades, np.int64), source=path)
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
    qids, codes = _query_codes(t, q, path)
    docs = t.column(d)
    if docs.type != pa.string() or docs.null_count:  # else kept in the file's row groups, not copied
        docs = _strings(t, d, path)
    run = Run(qids, codes, docs, source=path)
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
