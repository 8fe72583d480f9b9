"""Parquet long tables: one row per (query, item).

Gold: ``query_id``, ``chunk_id`` (or ``doc_id``), ``grade`` (or ``relevance``). Run: ``query_id``,
``chunk_id`` (or ``doc_id``) and ``score`` and/or ``rank``; optional ``doc_version`` and ``text``.

Id columns hold text (string or binary, UTF-8) or integers, one id per row; any other type (lists,
structs, floats, dates, ...) and bytes that are not UTF-8 are input errors naming the column, the
row and its row group. Every problem is an :class:`~rankgate.errors.InputError`, never an assert.
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa

from rankgate.errors import InputError
from rankgate.model.ranking import MAX_RANK
from rankgate._util.arrow import np_of
from rankgate.io.jsonl import NON_FINITE_HINT
from rankgate.model.gold_run import Gold, Run
from rankgate.io.trec import _codes, _combine, _dictionary_codes, check_unique_judgements

QUERY = ("query_id", "qid", "query-id")
ITEM = ("chunk_id", "doc_id", "docid", "corpus_id", "corpus-id", "docno", "id")
GRADE = ("grade", "relevance", "rel", "score", "label")


def _read(path: str) -> pa.Table:
    """The table, its string query-id column dictionary-encoded by the reader (no string per row)."""
    import pyarrow.parquet as pq

    try:
        if os.path.isdir(path):  # a partitioned dataset
            return pq.read_table(path, memory_map=False, page_checksum_verification=True)
        # One file through ParquetFile: pq.read_table goes through pyarrow.dataset, which imports
        # pandas where it is installed (0.3 s). Read, not memory-mapped: a map of a file that another
        # program cuts short meanwhile ends the process (the loader checks the file did not change).
        schema = pq.read_schema(path, memory_map=False)
        q = next((n for n in QUERY if n in schema.names), None)
        text = q is not None and (pa.types.is_string(schema.field(q).type) or pa.types.is_large_string(schema.field(q).type))
        return pq.ParquetFile(path, memory_map=False, read_dictionary=[q] if text else None,
                              page_checksum_verification=True).read()
    except (pa.ArrowException, OSError) as exc:
        from rankgate.io.source import DAMAGED, DAMAGED_HINT, is_damaged_parquet, is_gzip

        if is_gzip(path):
            raise InputError(
                "is gzip-compressed Parquet", path=path,
                hint="Parquet compresses its own columns: decompress the file (gunzip) and pass the .parquet",
            ) from None
        if is_damaged_parquet(exc):
            raise InputError(DAMAGED, path=path, hint=DAMAGED_HINT) from None
        raise InputError(
            f"is not a readable Parquet file: {exc}", path=path,
            hint="write it again with a Parquet writer; is it truncated, or another format named .parquet?",
        ) from None


def _query_codes(table: pa.Table, name: str, path: str) -> tuple[list[str], np.ndarray]:
    """(query ids in order of first appearance, code of each row)."""
    col = table.column(name)
    if not pa.types.is_dictionary(col.type):
        return _codes(_strings(table, name, path))
    _check_id_type(col.type.value_type, name, path)
    if col.null_count:
        row = int(np.flatnonzero(np.asarray(_combine(col).is_null()))[0])
        raise InputError(f"is empty in {_where(path, row)}", path=path, field=name)
    col = pa.chunked_array([_text_dictionary(c, col, name, path) for c in col.chunks],
                           type=pa.dictionary(col.type.index_type, pa.string()))
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


def _text_dictionary(chunk: pa.DictionaryArray, column: pa.ChunkedArray, name: str, path: str) -> pa.DictionaryArray:
    """One chunk of a dictionary-encoded id column with UTF-8 string values (the file's own
    dictionaries are not checked by the reader)."""
    values = chunk.dictionary
    try:
        if _is_bytes(values.type):
            values = values.cast(pa.binary()).cast(pa.string())
        elif _is_text(values.type):
            values = values.cast(pa.string())
            values.validate(full=True)
        else:
            values = values.cast(pa.string())
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # name the first row holding a bad value
        raise _bad_utf8(_combine(column).cast(column.type.value_type), name, path) from None
    return pa.DictionaryArray.from_arrays(chunk.indices, values)


def _check_names(table: pa.Table, path: str) -> None:
    """Refuse a column name that a reader uses and the file holds twice (pyarrow could not pick one)."""
    names = table.column_names
    for name in (*QUERY, *ITEM, *GRADE, "rank", "doc_version", "text"):
        if names.count(name) > 1:
            raise InputError(f"has {names.count(name)} columns named {name!r}", path=path, field=name,
                             hint="keep one column of each name")


def _required(table: pa.Table, names: tuple[str, ...], path: str, what: str) -> str:
    found = _optional(table, names)
    if found is None:
        raise InputError(
            f"has no {what} column; columns: {', '.join(table.column_names) or '(none)'}",
            path=path,
            field=names[0],
            hint=f"name it one of: {', '.join(names)}",
        )
    return found


def _optional(table: pa.Table, names: tuple[str, ...]) -> str | None:
    return next((n for n in names if n in table.column_names), None)


def _is_text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or getattr(pa.types, "is_string_view", bool)(t)


def _is_bytes(t: pa.DataType) -> bool:
    return (pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)
            or getattr(pa.types, "is_binary_view", bool)(t))


def _check_id_type(t: pa.DataType, name: str, path: str) -> None:
    if _is_text(t) or _is_bytes(t) or pa.types.is_integer(t):
        return
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        hint = "one id per row: explode the lists into rows"
    elif pa.types.is_struct(t) or pa.types.is_map(t):
        hint = "put the id itself in its own column"
    elif pa.types.is_floating(t):
        hint = "store ids as text or integers (1.0 would never match the id '1')"
    else:
        hint = "store ids as text or integers"
    raise InputError(f"must hold text or integer ids; has type {t}", path=path, field=name, hint=hint)


def _row_group(path: str, row: int) -> int | None:
    """The 0-based row group holding ``row`` of a single Parquet file (None for a folder)."""
    if os.path.isdir(path):
        return None
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(path, memory_map=False).metadata
    except (pa.ArrowException, OSError):
        return None
    start = 0
    for i in range(meta.num_row_groups):
        start += meta.row_group(i).num_rows
        if row < start:
            return i
    return None


def _where(path: str, row: int) -> str:
    group = _row_group(path, row)
    return f"row {row + 1}" + (f" (row group {group}, counted from 0)" if group is not None else "")


def _bad_utf8(col: pa.Array, name: str, path: str) -> InputError:
    """The error for the first value of a text or binary column that is not UTF-8."""
    offset = 0
    for chunk in col.chunks if isinstance(col, pa.ChunkedArray) else [col]:
        raw = chunk.cast(pa.binary()) if _is_text(chunk.type) else chunk
        for i, value in enumerate(raw.cast(pa.large_binary()).to_pylist()):
            if value is None:
                continue
            try:
                value.decode("utf-8")
            except UnicodeDecodeError as exc:
                return InputError(
                    f"is not UTF-8 text in {_where(path, offset + i)}: byte {value[exc.start]:#04x} "
                    f"at byte {exc.start + 1} of {value[:40]!r}", path=path, field=name,
                    hint="ids must be UTF-8 text; write them as strings",
                )
        offset += len(chunk)
    return InputError("is not UTF-8 text", path=path, field=name, hint="ids must be UTF-8 text; write them as strings")


def _strings(table: pa.Table, name: str, path: str) -> pa.Array:
    col = _combine(table.column(name))
    _check_id_type(col.type, name, path)
    if col.null_count:
        row = int(np.flatnonzero(np.asarray(col.is_null()))[0])
        raise InputError(f"is empty in {_where(path, row)}", path=path, field=name)
    if _is_bytes(col.type):
        col = col.cast(pa.binary()) if not pa.types.is_binary(col.type) else col
        try:
            return col.cast(pa.string())  # checks UTF-8
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            raise _bad_utf8(col, name, path) from None
    out = col.cast(pa.string())
    if _is_text(col.type):
        _check_utf8(out, name, path)
    return out


def _check_utf8(col: pa.Array | pa.ChunkedArray, name: str, path: str) -> None:
    """Parquet readers do not check that string columns hold UTF-8; ids must (about 6 ms per 1M ids)."""
    try:
        col.validate(full=True)
    except pa.ArrowInvalid:
        raise _bad_utf8(col, name, path) from None


def read_parquet_gold(path: str) -> Gold:
    t = _read(path)
    _check_names(t, path)
    q, d, g = _required(t, QUERY, path, "query id"), _required(t, ITEM, path, "item id"), _required(t, GRADE, path, "grade")
    if t.num_rows == 0:
        raise InputError("has no rows", path=path)
    grades = _combine(t.column(g))
    if not pa.types.is_integer(grades.type) or grades.null_count:
        raise InputError(f"must hold integer grades; has type {grades.type}", path=path, field=g)
    if pa.types.is_uint64(grades.type) and int(np_of(grades).max()) >= 1 << 63:
        row = int(np.flatnonzero(np_of(grades) >= 1 << 63)[0])
        raise InputError(f"holds a grade beyond 64-bit range in {_where(path, row)}", path=path, field=g)
    qids, codes = _query_codes(t, q, path)
    gold = Gold(qids, codes.astype(np.int64), _strings(t, d, path), np_of(grades, np.int64), source=path)
    check_unique_judgements(gold)
    return gold


def read_parquet_run(path: str) -> Run:
    t = _read(path)
    _check_names(t, path)
    q, d = _required(t, QUERY, path, "query id"), _required(t, ITEM, path, "item id")
    s, r = _optional(t, ("score",)), _optional(t, ("rank",))
    if s is None and r is None:
        raise InputError("has neither a score nor a rank column", path=path, field="score", hint="add one of them")
    if t.num_rows == 0:
        raise InputError("has no rows", path=path)
    qids, codes = _query_codes(t, q, path)
    docs = t.column(d)
    if docs.type != pa.string() or docs.null_count:  # else kept in the file's row groups, not copied
        docs = _strings(t, d, path)
    else:
        _check_utf8(docs, d, path)
    run = Run(qids, codes, docs, source=path)
    numbers: dict[str, np.ndarray] = {}
    for key in (k for k in (s, r) if k is not None):
        col = _combine(t.column(key))
        if col.null_count or not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
            raise InputError(f"must hold numbers with no gaps; has type {col.type}", path=path, field=key)
        values = np_of(col, np.float64)
        if not np.isfinite(values).all():  # one rule in every format: NaN and infinite values cannot be ranked
            row = int(np.flatnonzero(~np.isfinite(values))[0])
            raise InputError(f"must hold finite numbers; holds {values[row]} in {_where(path, row)}", path=path,
                             field=key, hint=NON_FINITE_HINT)
        numbers[key] = values
    if r is not None:  # ranks a double cannot keep apart would tie silently
        bad = np.flatnonzero(~(np.abs(numbers[r]) < MAX_RANK))
        if bad.size:
            row = int(bad[0])
            raise InputError(f"must hold ranks below 2^53; holds {numbers[r][row]} in {_where(path, row)}", path=path,
                             field=r, hint="beyond 2^53 neighbouring ranks cannot be told apart; number the items 1, 2, 3, …")
    if s is not None:
        run.r_score = numbers[s]
        run.r_order = numbers.get(r) if r is not None else None  # orders equal scores under ties="input"
    elif r is not None:  # (one of the two, checked above)
        run.r_order = numbers[r]
    for name in ("doc_version", "text"):
        if name in t.column_names:
            column = t.column(name)
            if _is_text(column.type) or _is_bytes(column.type):
                if _is_bytes(column.type):
                    try:
                        column = _combine(column).cast(pa.binary()).cast(pa.string())
                    except (pa.ArrowInvalid, pa.ArrowTypeError):
                        raise _bad_utf8(_combine(column), name, path) from None
                _check_utf8(column, name, path)
            run.items[name] = column.to_pylist()
    return run
