"""Run a retriever over a corpus and queries, and write the run as JSONL.

>>> from rankgate.retrieval import retrieve, write_run
>>> run = retrieve("corpus.jsonl", "gold.jsonl", "bm25", k=100)      # doctest: +SKIP
>>> write_run(run, "out/run.jsonl")                                   # doctest: +SKIP

The run file has one record per query, keys sorted, UTF-8 kept as is, so the same records always give
the same bytes. It is written to a temporary file beside the target and moved into place, so a
reader never sees half a run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rankgate.errors import UsageError
from rankgate.retrieval.base import Chunk, Query, Retriever
from rankgate.retrieval.corpus import load_corpus, load_gold_queries
from rankgate.retrieval.registry import check_retriever, get_retriever

__all__ = ["DEFAULT_DEPTH", "retrieve", "write_run"]

#: How many hits per query a run keeps unless told otherwise: deep enough for k-sweeps up to 100.
DEFAULT_DEPTH = 100


def retrieve(
    corpus: Sequence[Chunk] | str | os.PathLike[str],
    queries: Sequence[Query] | str | os.PathLike[str],
    retriever: Retriever | str = "bm25",
    *,
    k: int = DEFAULT_DEPTH,
    options: Mapping[str, Any] | None = None,
    latency: bool = True,
) -> list[dict[str, Any]]:
    """Index ``corpus`` with ``retriever`` and return one run record per query, in query order.

    ``corpus`` is a list of chunks or a corpus JSONL path; ``queries`` a list of queries or a gold
    JSONL path. ``retriever`` is a retriever object or a name for
    :func:`~rankgate.retrieval.registry.get_retriever` (built with ``options``). ``latency=False``
    drops ``latency_ms`` from the records, making the run byte-for-byte reproducible.
    """
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise UsageError(f"k must be an int >= 1; got {k!r}")
    chunks = load_corpus(corpus) if isinstance(corpus, (str, os.PathLike)) else list(corpus)
    query_list = load_gold_queries(queries) if isinstance(queries, (str, os.PathLike)) else list(queries)
    if isinstance(retriever, str):
        engine = get_retriever(retriever, **dict(options or {}))
    else:
        if options:
            raise UsageError("options can only be given with a retriever name, not a retriever object")
        engine = check_retriever(retriever, "The retriever argument")
    engine.index(chunks)
    records = engine.search(query_list, k)
    _check_records(records, query_list, k, engine)
    if not latency:
        records = [{key: value for key, value in record.items() if key != "latency_ms"} for record in records]
    return records


def _check_records(records: Any, queries: Sequence[Query], k: int, engine: Retriever) -> None:
    """Validate a retriever's output at the boundary, naming the retriever when it is wrong."""
    who = type(engine).__name__
    if not isinstance(records, list) or len(records) != len(queries):
        got = f"{len(records)} records" if isinstance(records, list) else type(records).__name__
        raise UsageError(
            f"{who}.search() must return a list with one record per query ({len(queries)}); got {got}"
        )
    for query, record in zip(queries, records):
        if not isinstance(record, dict) or record.get("query_id") != query.query_id:
            found = record.get("query_id") if isinstance(record, dict) else type(record).__name__
            raise UsageError(
                f"{who}.search() returned {found!r} where the record of query {query.query_id!r} was expected "
                "(records must be dicts in query order)"
            )
        hits = record.get("topk")
        if not isinstance(hits, list) or len(hits) > k:
            raise UsageError(
                f"{who}.search() record for query {query.query_id!r} needs 'topk': a list of at most {k} hits"
            )
        for hit in hits:
            if not isinstance(hit, dict) or not isinstance(hit.get("chunk_id"), str):
                raise UsageError(
                    f"{who}.search() record for query {query.query_id!r} has a hit without a string "
                    f"'chunk_id': {hit!r:.80}"
                )


def write_run(records: Iterable[Mapping[str, Any]], path: str | os.PathLike[str]) -> Path:
    """Write ``records`` as JSONL at ``path``, atomically and deterministically; return the path.

    A path that cannot be written raises :class:`~rankgate.errors.OutputError`; the old file (if
    any) stays as it was.
    """
    from ..atomic import write_text

    target = Path(path)
    lines = [json.dumps(record, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n" for record in records]
    write_text(target, "".join(lines))
    return target
