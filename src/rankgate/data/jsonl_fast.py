"""Large JSONL runs and gold sets through DuckDB's JSON reader: one parallel pass, columnar result.

Used for files of at least :data:`MIN_BYTES` whose first lines have one regular shape (a query id,
one list of item objects or of ids; for gold sets, only a query id and a list of graded items). The shape and types are taken from the first
:data:`SAMPLE_LINES` lines; anything irregular — a missing id, a mixed score column, a repeated
query, a parse error — returns ``None`` and the caller re-reads the file with the validating
line-by-line parser, which then names the offending line. So the fast path never changes a result
or an error message; it only makes clean files fast.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import pyarrow as pa

from .arrow import np_of, strings_of
from .jsonl import GRADE_KEYS, ITEM_ID_KEYS, QUERY_ID_KEYS, RELEVANT_KEYS, RUN_LIST_KEYS
from .models import Gold, Run
from .source import open_text

MIN_BYTES = 8 << 20
SAMPLE_LINES = 200
_ITEM_FIELDS = {"score": "DOUBLE", "rank": "DOUBLE", "doc_version": "VARCHAR", "version": "VARCHAR",
                "text": "VARCHAR", "content": "VARCHAR", "source": "VARCHAR"}


def _large_file_sample(path: str) -> list[Any] | None:
    """The first lines of a file big enough for the fast path, parsed; None otherwise."""
    try:
        if os.path.getsize(path) < MIN_BYTES:
            return None
    except OSError:
        return None
    return _sample(path)


def _sample(path: str) -> list[Any] | None:
    out = []
    with open_text(path) as fh:
        for line in fh:
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                return None
            if len(out) >= SAMPLE_LINES:
                break
    return out if out and all(isinstance(o, dict) for o in out) else None


def _common(keys: tuple[str, ...], objs: list[dict[str, Any]]) -> str | None:
    for key in keys:
        if all(key in o for o in objs):
            return key
        if any(key in o for o in objs):
            return None  # used by some lines only: irregular
    return None


def _is_id(v: Any) -> bool:
    return isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool))


def read_run_fast(path: str) -> Run | None:
    """The run, or None when the file is small or not regular enough for the fast path."""
    sample = _large_file_sample(path)
    if sample is None:
        return None
    qkey, lkey = _common(QUERY_ID_KEYS, sample), _common(RUN_LIST_KEYS, sample)
    if qkey is None or lkey is None or not all(_is_id(o[qkey]) for o in sample):
        return None
    items = [it for o in sample for it in (o[lkey] or [])]
    if not all(isinstance(o[lkey], list) for o in sample) or not items:
        return None
    columns: dict[str, str] = {qkey: "VARCHAR"}
    if all(_is_id(it) for it in items):
        columns[lkey] = "VARCHAR[]"
        fields: dict[str, str] = {}
        ikey = None
    elif all(isinstance(it, dict) for it in items):
        ikey = _common(ITEM_ID_KEYS, items)
        if ikey is None or not all(_is_id(it[ikey]) for it in items):
            return None
        fields = {ikey: "VARCHAR"}
        for name, kind in _ITEM_FIELDS.items():
            if any(name in it for it in items):
                fields[name] = kind
        struct = ", ".join(f'"{k}" {v}' for k, v in fields.items())
        columns[lkey] = f"STRUCT({struct})[]"
    else:
        return None
    for o in sample:
        for name in o:
            if name not in columns and name not in QUERY_ID_KEYS and name not in RUN_LIST_KEYS:
                columns[name] = "JSON"
    try:
        table = _read(path, columns)
    except Exception:  # any reader error: the validating parser will explain it
        return None
    return _to_run(table, path, qkey, lkey, ikey, [c for c in columns if c not in (qkey, lkey)])


def _read(path: str, columns: dict[str, str]) -> pa.Table:
    import duckdb

    spec = "{" + ", ".join(f"'{k}': '{v}'" for k, v in columns.items()) + "}"
    con = duckdb.connect()
    try:
        rel = con.sql(
            f"SELECT * FROM read_json($path, format='newline_delimited', columns={spec})",
            params={"path": path},
        )
        return rel.to_arrow_table()
    finally:
        con.close()


def _to_run(table: pa.Table, path: str, qkey: str, lkey: str, ikey: str | None, extra: list[str]) -> Run | None:
    import pyarrow.compute as pc

    qcol = table.column(qkey).combine_chunks()
    lists = table.column(lkey).combine_chunks()
    if qcol.null_count or lists.null_count:
        return None
    enc = pc.dictionary_encode(qcol)
    if len(enc.dictionary) != len(qcol):
        return None  # a query on two lines
    lengths = np_of(pc.list_value_length(lists), np.int64)
    flat = lists.flatten()
    r_query = np.repeat(np.arange(len(qcol), dtype=np.int64), lengths)
    run = Run(query_ids=qcol.to_pylist(), r_query=r_query, r_doc=flat if ikey is None else flat.field(ikey), source=path)
    if run.r_doc.null_count:
        return None
    if ikey is not None:
        names = [flat.type.field(i).name for i in range(flat.type.num_fields)]
        score = flat.field("score") if "score" in names else None
        if score is not None and 0 < score.null_count < len(score):
            return None  # some items scored, others not
        if score is not None and score.null_count == 0:
            run.r_score = np_of(score, np.float64)
            if np.isnan(run.r_score).any():
                return None
        else:
            rank = flat.field("rank") if "rank" in names else None
            pos = np.arange(len(flat), dtype=np.float64) - np.repeat(np.concatenate(([0], np.cumsum(lengths)))[:-1], lengths) + 1
            if rank is not None and rank.null_count not in (0, len(rank)):
                return None
            run.r_order = np_of(rank, np.float64) if rank is not None and rank.null_count == 0 else pos
        for name, alias in (("doc_version", "version"), ("text", "content"), ("source", None)):
            col = name if name in names else alias if alias in names else None
            if col is not None:
                run.items[name] = flat.field(col).to_pylist()
    else:
        starts = np.concatenate(([0], np.cumsum(lengths)))[:-1]
        run.r_order = np.arange(len(flat), dtype=np.float64) - np.repeat(starts, lengths) + 1
    for name in extra:
        values = table.column(name).to_pylist()
        run.fields[name] = [None if v is None else json.loads(v) for v in values]
    return run


def read_gold_fast(path: str) -> Gold | None:
    """A plain graded gold set (query id + list of {id, grade}), or None for anything richer."""
    sample = _large_file_sample(path)
    if sample is None:
        return None
    qkey, lkey = _common(QUERY_ID_KEYS, sample), _common(RELEVANT_KEYS, sample)
    if qkey is None or lkey is None or any(set(o) - {qkey, lkey} for o in sample):
        return None  # other fields (no_answer, tags, k …) take the validating parser
    items = [it for o in sample for it in (o[lkey] if isinstance(o[lkey], list) else [None])]
    if not items or not all(isinstance(it, dict) for it in items):
        return None
    ikey, gkey = _common(ITEM_ID_KEYS, items), _common(GRADE_KEYS, items)
    if ikey is None or gkey is None or any(set(it) - {ikey, gkey} for it in items):
        return None
    columns = {qkey: "VARCHAR", lkey: f'STRUCT("{ikey}" VARCHAR, "{gkey}" DOUBLE)[]'}
    try:
        table = _read(path, columns)
    except Exception:  # the validating parser explains whatever went wrong
        return None
    import pyarrow.compute as pc

    from .ids import item_codes, segment_duplicates

    qcol = table.column(qkey).combine_chunks()
    lists = table.column(lkey).combine_chunks()
    if qcol.null_count or lists.null_count or len(pc.unique(qcol)) != len(qcol):
        return None
    lengths = np_of(pc.list_value_length(lists), np.int64)
    flat = lists.flatten()
    docs, grades = flat.field(ikey), flat.field(gkey)
    if docs.null_count or grades.null_count:
        return None
    g = np_of(grades, np.float64)
    if not np.array_equal(g, np.round(g)):
        return None  # a non-integer grade: reported with its line by the validating parser
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    if (lengths == 0).any():
        return None  # a query with no relevant item must say "no_answer": true
    if (np.add.reduceat((g >= 1).astype(np.int64), offsets[:-1]) == 0).any():
        return None
    codes, _ = item_codes(docs, strings_of([]))
    if segment_duplicates(codes, offsets).size:
        return None
    return Gold(
        query_ids=qcol.to_pylist(),
        j_query=np.repeat(np.arange(len(qcol), dtype=np.int64), lengths),
        j_doc=docs,
        j_grade=g.astype(np.int64),
        source=path,
    )
