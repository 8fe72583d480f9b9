"""The corpus manifest: one row per chunk of one corpus version.

Each chunk has:

``chunk_id``        required, unique in the corpus (``_id`` and ``id`` are accepted too)
``doc_id``          the document it was cut from (default: the chunk id up to the first ``#``)
``doc_version``     the document's version (a date, a number, a tag; optional)
``status``          ``active`` (``current`` is a synonym), ``deprecated``, ``superseded`` or
                    ``retired``; default ``active``, or ``superseded`` when ``superseded_by`` is set
``superseded_by``   the chunk or document that replaces it (optional)
``tenant``          who may see it (also read from ``metadata.tenant``; optional)
``content_hash``    sha256 of the text (hex); computed from ``text`` when absent (when first needed)
``text``            optional (without text and hash, content changes cannot be seen)

Sources: rankgate's corpus JSONL (``.jsonl``/``.jsonl.gz``, the shape ``rankgate demo`` ships), a
Parquet file with those columns, or a folder of such files (read in name order; a chunk id may
appear in only one of them). A chunk that was in an older version and is absent from a newer one is
*retired*: :meth:`CorpusManifest.diff` says so.

Document versions are compared in "natural" order: digit runs as numbers, the rest as text, so
``2026-02-10`` < ``2026-10-01`` and ``v9`` < ``v10``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from rankgate.errors import InputError
from rankgate.corpus.model import ChunkRecord, CorpusDiff, CorpusManifest, version_key
from rankgate.corpus.schema import ID_KEYS, STATUS_SYNONYMS, STATUSES, STRING_COLUMNS

# the model and the status words are re-exported: this module was their home
__all__ = ["STATUSES", "ChunkRecord", "CorpusDiff", "CorpusManifest", "load_manifest",
           "manifest_from_records", "version_key"]


# -- reading ------------------------------------------------------------------------------------
def _opt(value: Any, path: str, line: int | None, field: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, (dict, list, bool)):
        raise InputError(f"must be a string; got {json.dumps(value)[:60]}", path=path, line=line, field=field)
    text = str(value)
    return text if text != "" else None


def record_from_mapping(obj: Mapping[str, Any], path: str, line: int | None) -> ChunkRecord:
    """One chunk from a JSON object or Parquet row; bad values raise an InputError naming the field."""
    key = next((k for k in ID_KEYS if k in obj), None)
    if key is None:
        raise InputError("is missing", path=path, line=line, field="chunk_id",
                         hint=f"every chunk needs an id (one of: {', '.join(ID_KEYS)})")
    cid = _opt(obj[key], path, line, key)
    if cid is None:
        raise InputError(f"must be a non-empty string; got {obj[key]!r}", path=path, line=line, field=key)
    doc_id = _opt(obj.get("doc_id"), path, line, "doc_id") or cid.split("#", 1)[0]
    superseded_by = _opt(obj.get("superseded_by"), path, line, "superseded_by")
    raw_status = _opt(obj.get("status"), path, line, "status")
    if raw_status is None:
        status = "superseded" if superseded_by else "active"
    else:
        status = STATUS_SYNONYMS.get(raw_status.strip().lower(), "")
        if not status:
            raise InputError(f"must be one of active|current|deprecated|superseded|retired; got {raw_status!r}",
                             path=path, line=line, field="status")
    meta = obj.get("metadata")
    tenant = obj.get("tenant", meta.get("tenant") if isinstance(meta, Mapping) else None)
    text = obj.get("text", obj.get("content"))
    if text is not None and not isinstance(text, str):
        raise InputError(f"must be a string; got {type(text).__name__}", path=path, line=line, field="text")
    digest = _opt(obj.get("content_hash"), path, line, "content_hash")  # None: hashed from the text when needed
    return ChunkRecord(cid, doc_id, _opt(obj.get("doc_version", obj.get("version")), path, line, "doc_version"),
                       status, superseded_by, _opt(tenant, path, line, "tenant"), digest, text)


def manifest_from_records(records: Iterable[Mapping[str, Any]], *, source: str = "<corpus>") -> CorpusManifest:
    """A manifest from in-memory chunk objects (same rules as the files)."""
    return CorpusManifest((record_from_mapping(r, source, i) for i, r in enumerate(records, start=1)), source)


def _jsonl_rows(path: str) -> Iterator[ChunkRecord]:
    from rankgate.io.jsonl import iter_json_lines
    from rankgate.io.source import text_lines

    lines = (line for _, line in text_lines(path))
    for lineno, obj in iter_json_lines(lines, path):
        if not isinstance(obj, dict):
            raise InputError(f"must be a JSON object; got {type(obj).__name__}", path=path, line=lineno,
                             hint='one chunk per line, e.g. {"chunk_id": "doc#c1", "text": "..."}')
        yield record_from_mapping(obj, path, lineno)


def _parquet_table(path: str) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rankgate.io.source import DAMAGED, DAMAGED_HINT, is_damaged_parquet

    try:
        return pq.read_table(path, page_checksum_verification=True)
    except (OSError, pa.ArrowException) as exc:
        if is_damaged_parquet(exc):
            raise InputError(DAMAGED, path=path, hint=DAMAGED_HINT) from None
        raise InputError(f"cannot be read as Parquet: {exc}", path=path) from None


def _parquet_rows(path: str) -> Iterator[ChunkRecord]:
    """Row by row (the slow path, whose errors name the row as the line)."""
    table = _parquet_table(path)
    names = set(table.column_names)
    if not names & set(ID_KEYS):
        raise InputError("has no chunk id column", path=path, field="chunk_id",
                         hint=f"name the column one of: {', '.join(ID_KEYS)}")
    wanted = [n for n in (*ID_KEYS, *STRING_COLUMNS) if n in names]
    columns = {n: table.column(n).to_pylist() for n in wanted}
    for i in range(table.num_rows):
        yield record_from_mapping({n: columns[n][i] for n in wanted}, path, i + 1)


def _read_file(path: str) -> CorpusManifest:
    from rankgate.corpus.columnar import columns_fast, jsonl_fast

    if path.endswith(".parquet"):
        fast = columns_fast(_parquet_table(path), path)
        return fast if fast is not None else CorpusManifest(_parquet_rows(path), path)
    fast = jsonl_fast(path)
    return fast if fast is not None else CorpusManifest(_jsonl_rows(path), path)


def _files(path: str) -> list[str]:
    if not os.path.isdir(path):
        return [path]
    found = sorted(
        os.path.join(path, n) for n in os.listdir(path)
        if n.endswith((".jsonl", ".jsonl.gz", ".parquet")) and not n.startswith(".")
    )
    if not found:
        raise InputError("holds no .jsonl, .jsonl.gz or .parquet file", path=path,
                         hint="point --corpus at a corpus file or a folder of them")
    return found


def load_manifest(path: str | os.PathLike[str]) -> CorpusManifest:
    """Read a corpus manifest from a JSONL or Parquet file, or a folder of them (see module docs)."""
    from rankgate.io.source import check_file

    path = os.fspath(path)
    check_file(path, "corpus")

    files = _files(path)
    for file in files:
        check_file(file, "corpus")
    parts = [_read_file(file) for file in files]
    if len(parts) == 1:
        parts[0].source = path
        return parts[0]
    import itertools

    merged = (list(itertools.chain.from_iterable(cols)) for cols in zip(*map(_columns_of, parts)))
    return CorpusManifest.from_columns(*merged, source=path)


def _columns_of(m: CorpusManifest) -> tuple[list[Any], ...]:
    return tuple(list(c) for c in (m.chunk_ids, m.doc_ids, m.doc_versions, m.statuses, m.superseded_by, m.tenants,
                                   m._hashes, m._texts))
