"""The corpus manifest's fast path: a whole JSONL or Parquet file read by pyarrow and cleaned column
by column in arrow, with the same rules as the row reader in :mod:`.manifest`. Anything the rules
would refuse, or that arrow cannot hold in one typed column, returns ``None`` and the row reader
reads the file instead, so results and error messages never depend on which path ran (the tests
compare the two on generated files)."""

from __future__ import annotations

from typing import Any

from rankgate.corpus.model import CorpusManifest
from rankgate.corpus.schema import EITHER_COLUMNS, ID_KEYS, STATUS_SYNONYMS, STRING_COLUMNS

__all__ = ["columns_fast", "jsonl_fast"]


def columns_fast(table: Any, source: str) -> CorpusManifest | None:
    """The manifest of an arrow table, cleaned column by column in arrow, or None when any value would
    need the row-by-row reader (which then gives the same result, or the error naming the line)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    names = set(table.column_names)
    ids = [k for k in ID_KEYS if k in names]
    if len(ids) != 1 or "metadata" in names or any(a in names and b in names for a, b in EITHER_COLUMNS):
        return None
    n = table.num_rows
    nulls = pa.nulls(n, pa.string())
    cols: dict[str, Any] = {}
    for name in (ids[0], *STRING_COLUMNS):
        if name not in names:
            continue
        col = table.column(name).combine_chunks()
        if pa.types.is_null(col.type):
            col = nulls
        elif pa.types.is_large_string(col.type):
            col = col.cast(pa.string())
        elif not pa.types.is_string(col.type):
            return None
        try:
            col.validate(full=True)  # bytes that are not UTF-8: the row reader names the line and byte
        except pa.ArrowInvalid:
            return None
        cols[name] = col

    def opt(name: str) -> Any:  # "" reads as absent, as in the row reader
        col = cols.get(name)
        if col is None:
            return nulls
        if col.null_count == n or not _has_empty(col):
            return col
        return pc.if_else(pc.equal(col, ""), pa.scalar(None, pa.string()), col)

    ids_col = cols[ids[0]]
    if ids_col.null_count or _has_empty(ids_col):
        return None  # a null or empty id: the row reader names its line
    superseded_by = opt("superseded_by")
    raw = opt("status")
    keys = pa.array(sorted(STATUS_SYNONYMS))
    canon = pa.array([STATUS_SYNONYMS[k] for k in sorted(STATUS_SYNONYMS)])
    at = pc.index_in(pc.utf8_lower(pc.utf8_trim_whitespace(raw)), value_set=keys)
    if pc.sum(pc.and_(pc.is_valid(raw), pc.is_null(at))).as_py():
        return None  # an unknown status: the row reader names it
    default = pc.if_else(pc.is_valid(superseded_by), pa.scalar("superseded"), pa.scalar("active"))
    statuses = pc.coalesce(pc.take(canon, at), default)
    doc_ids = opt("doc_id")
    if doc_ids.null_count:
        prefix = pc.list_element(pc.split_pattern(ids_col, "#", max_splits=1), 0)
        doc_ids = pc.coalesce(doc_ids, prefix)
    hashes = cols.get("content_hash")
    texts = cols.get("text", cols.get("content", nulls))
    return CorpusManifest.from_columns(
        ids_col, doc_ids, opt("doc_version" if "doc_version" in cols else "version"), statuses,
        superseded_by, opt("tenant"), [None] * n if hashes is None else opt("content_hash").to_pylist(), texts,
        source=source)


def _has_empty(col: Any) -> bool:
    """Whether a string array (int32 offsets) holds "" anywhere (a null is not ""): read from the
    offsets, without comparing every string."""
    import numpy as np
    import pyarrow.compute as pc

    if not len(col):
        return False
    offsets = np.frombuffer(col.buffers()[1], dtype=np.int32, count=col.offset + len(col) + 1)[col.offset:]
    empty = offsets[1:] == offsets[:-1]
    if col.null_count:
        empty &= pc.is_valid(col).to_numpy(zero_copy_only=False)
    return bool(empty.any())


def jsonl_fast(path: str) -> CorpusManifest | None:
    import pyarrow as pa
    import pyarrow.json as pj

    # metadata typed as null: a row that has one goes to the row reader (tenant may be inside it)
    schema = pa.schema([*((n, pa.string()) for n in (*ID_KEYS, *STRING_COLUMNS)), ("metadata", pa.null())])
    try:
        with pa.input_stream(path, compression="detect") as fh:
            table = pj.read_json(fh, parse_options=pj.ParseOptions(explicit_schema=schema,
                                                                   unexpected_field_behavior="ignore"))
    except (pa.ArrowException, OSError, ValueError):
        return None  # the row reader finds and names the problem
    keep = [n for n in table.column_names if table.column(n).null_count < table.num_rows]
    return columns_fast(table.select(keep), path)
