"""Loaders for what a retriever needs: chunks to index and queries to run.

* :func:`load_corpus` reads rankgate's corpus JSONL, one chunk per line::

      {"chunk_id": "doc_export#c2", "text": "...", "title": "...", "doc_version": "2026-03-01",
       "doc_id": "doc_export", "lang": "en", "tenant": "shared", "status": "current", ...}

  ``chunk_id`` (or BEIR's ``_id``) and ``text`` are required; every field other than ``chunk_id``,
  ``text``, ``title`` and ``doc_version`` is kept in :attr:`Chunk.metadata`.
* :func:`load_gold_queries` reads the queries of a gold JSONL file (``query_id``, ``query``); the
  query's ``tags`` become :attr:`Query.metadata` (so ``tags.lang`` is the reader's locale).
* :func:`load_beir` reads a BEIR folder: ``corpus.jsonl`` (``_id``, ``title``, ``text``),
  ``queries.jsonl`` (``_id``, ``text``) and qrels, chosen and read exactly as ``rankgate evaluate
  --gold FOLDER`` does (:func:`rankgate.io.trec.beir_qrels_file`: ``qrels/<split>.tsv``, split
  ``test`` by default, else ``qrels.tsv`` when there is no ``qrels/``; tab-separated
  ``query-id  corpus-id  score``, header optional). When qrels are present only the queries they
  judge are returned, as BEIR's own evaluation does.

Every problem raises :class:`~rankgate.errors.InputError` naming the file, line and field.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rankgate.errors import InputError
from rankgate.retrieval.base import Chunk, Query

__all__ = ["BeirCollection", "load_beir", "load_beir_qrels", "load_corpus", "load_gold_queries"]

_CHUNK_CORE = ("chunk_id", "_id", "text", "title", "doc_version")


@dataclass(frozen=True)
class BeirCollection:
    """A BEIR folder: chunks, the queries to run, and qrels (query id -> chunk id -> grade)."""

    chunks: list[Chunk]
    queries: list[Query]
    qrels: dict[str, dict[str, int]]


def _read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line (``.gz`` too); bad JSON is an InputError."""
    from rankgate.io.jsonl import iter_json_lines
    from rankgate.io.source import text_lines

    if not path.exists() or path.is_dir():  # a pipe is fine: text_lines reads it once, in order
        raise InputError(
            "file not found" if not path.exists() else "is not a file",
            path=str(path),
            hint="check the path",
        )
    lines = (line for _, line in text_lines(str(path)))  # bytes that are not UTF-8: an error naming the line
    for number, value in iter_json_lines(lines, str(path)):
        if not isinstance(value, dict):
            raise InputError(
                f"must be a JSON object; got {type(value).__name__}", path=str(path), line=number
            )
        yield number, value


def _text_field(
    record: dict[str, Any],
    name: str,
    path: Path,
    line: int,
    *,
    required: bool,
    hint: str | None = None,
    allow_empty: bool = False,
) -> str:
    value = record.get(name)
    if value is None:
        if required:
            raise InputError("is missing", path=str(path), line=line, field=name, hint=hint)
        return ""
    if (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and name in ("_id", "chunk_id", "query_id")
    ):
        return str(value)  # BEIR files often carry numeric ids
    if not isinstance(value, str):
        raise InputError(
            f"must be a string; got {json.dumps(value, ensure_ascii=False)[:60]}",
            path=str(path),
            line=line,
            field=name,
        )
    if required and not allow_empty and not value.strip():
        raise InputError("must not be empty", path=str(path), line=line, field=name, hint=hint)
    return value


def load_corpus(path: str | os.PathLike[str]) -> list[Chunk]:
    """Read rankgate's corpus JSONL (or a BEIR ``corpus.jsonl``) into chunks, in file order."""
    path = Path(path)
    chunks: list[Chunk] = []
    seen: dict[str, int] = {}
    for line, record in _read_jsonl(path):
        id_field = "chunk_id" if "chunk_id" in record or "_id" not in record else "_id"
        chunk_id = _text_field(
            record, id_field, path, line, required=True, hint='each chunk needs an id, e.g. "doc_export#c2"'
        )
        if chunk_id in seen:
            raise InputError(
                f"duplicate chunk id {chunk_id!r} (first on line {seen[chunk_id]})",
                path=str(path),
                line=line,
                field=id_field,
            )
        seen[chunk_id] = line
        # Empty text is allowed: real collections (Cranfield, some BEIR sets) have empty documents.
        text = _text_field(record, "text", path, line, required=True, allow_empty=True)
        title = _text_field(record, "title", path, line, required=False)
        version = record.get("doc_version")
        if version is not None and not isinstance(version, str):
            raise InputError(
                f'must be a string such as "2026-03-01"; got {version!r}',
                path=str(path),
                line=line,
                field="doc_version",
            )
        metadata = {key: value for key, value in record.items() if key not in _CHUNK_CORE}
        chunks.append(Chunk(chunk_id, text, title, version, metadata))
    if not chunks:
        raise InputError("contains no chunks", path=str(path), hint="a corpus needs at least one line")
    return chunks


def load_gold_queries(path: str | os.PathLike[str]) -> list[Query]:
    """Read the queries of a gold JSONL file (``query_id`` + ``query``), in file order.

    Only the fields a retriever needs are checked here; the gold set's own loader validates the rest.
    """
    path = Path(path)
    queries: list[Query] = []
    seen: dict[str, int] = {}
    for line, record in _read_jsonl(path):
        query_id = _text_field(record, "query_id", path, line, required=True)
        if query_id in seen:
            raise InputError(
                f"duplicate query id {query_id!r} (first on line {seen[query_id]})",
                path=str(path),
                line=line,
                field="query_id",
            )
        seen[query_id] = line
        text = _text_field(record, "query", path, line, required=True, hint="the text a user typed")
        tags = record.get("tags") or {}
        if not isinstance(tags, dict):
            raise InputError(f"must be an object; got {tags!r}", path=str(path), line=line, field="tags")
        queries.append(Query(query_id, text, dict(tags)))
    if not queries:
        raise InputError("contains no queries", path=str(path))
    return queries


def _load_beir_queries(path: Path) -> list[Query]:
    queries: list[Query] = []
    seen: set[str] = set()
    for line, record in _read_jsonl(path):
        query_id = _text_field(record, "_id", path, line, required=True)
        if query_id in seen:
            raise InputError(f"duplicate query id {query_id!r}", path=str(path), line=line, field="_id")
        seen.add(query_id)
        text = _text_field(record, "text", path, line, required=True)
        metadata = record.get("metadata")
        queries.append(Query(query_id, text, dict(metadata) if isinstance(metadata, dict) else {}))
    return queries


def load_beir_qrels(path: str | os.PathLike[str]) -> dict[str, dict[str, int]]:
    """Read a BEIR qrels TSV (``query-id  corpus-id  score``, header optional) as
    ``{query id: {chunk id: grade}}``. The same reader as ``rankgate evaluate --gold``
    (:func:`rankgate.io.trec.read_beir_qrels`): a pair judged twice or a byte that is not UTF-8
    is an InputError naming the line."""
    from rankgate.io.source import check_file
    from rankgate.io.trec import read_beir_qrels

    path = os.fspath(path)
    if not os.path.exists(path):
        raise InputError("file not found", path=path, hint="BEIR qrels live in qrels/<split>.tsv")
    check_file(path, "qrels")
    return read_beir_qrels(path).judgements()


def load_beir(folder: str | os.PathLike[str], *, split: str | None = None) -> BeirCollection:
    """Read a BEIR folder (see the module docstring); ``split`` picks ``qrels/<split>.tsv``
    (default: ``test``, or ``qrels.tsv`` in a folder without ``qrels/``)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(
            "is not a folder", path=str(folder), hint="pass the folder holding corpus.jsonl and queries.jsonl"
        )
    for name in ("corpus.jsonl", "queries.jsonl"):
        if not (folder / name).is_file():
            raise InputError(
                f"has no {name}",
                path=str(folder),
                hint="a BEIR folder holds corpus.jsonl, queries.jsonl and qrels/<split>.tsv",
            )
    from rankgate.io.trec import beir_qrels_file, has_beir_qrels

    qrels: dict[str, dict[str, int]] = {}
    if has_beir_qrels(str(folder)) or split is not None:  # a missing split is said before the corpus is read
        qrels = load_beir_qrels(beir_qrels_file(str(folder), split))
    chunks = load_corpus(folder / "corpus.jsonl")
    queries = _load_beir_queries(folder / "queries.jsonl")
    if qrels:
        queries = [query for query in queries if query.query_id in qrels]
    if not queries:
        raise InputError(
            "has no queries to run" + (" that the qrels judge" if qrels else ""),
            path=str(folder / "queries.jsonl"),
        )
    return BeirCollection(chunks, queries, qrels)
