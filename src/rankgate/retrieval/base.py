"""The retriever extension point: what a retriever is given and what it must give back.

A retriever is anything with two methods (see :class:`Retriever`):

* ``index(chunks)`` is called once with every :class:`Chunk` of the corpus;
* ``search(queries, k)`` returns one *run record* per :class:`Query`, in the run shape rankgate
  reads back (``{"query_id", "system", "topk": [{"rank", "chunk_id", "score", "doc_version", "text"}],
  "latency_ms": {"retrieve": …}, "index_version", "k_raw"}``).

:func:`run_record` builds such a record, so a retriever only has to produce ``(chunk, score)`` pairs.
:func:`top_k` orders scored hits by trec_eval's rule (score descending, ties broken by chunk id
descending, byte-wise) and :func:`run_record` writes a ``rank`` on every item, so both ranking rules
(``--ties id``, and the default, under which a rank on every item decides) read the run back in the
order it was written.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["SCORE_DECIMALS", "Chunk", "Query", "Retriever", "content_version", "run_record", "top_k"]

#: Scores are rounded to this many decimals before ordering and writing, so a run does not
#: depend on the last bits of float arithmetic and ties are decided by the ranking rule.
SCORE_DECIMALS = 4


@dataclass(frozen=True)
class Chunk:
    """One retrievable passage.

    ``metadata`` carries whatever else the corpus knows (``doc_id``, ``lang``, ``tenant``, ``status``…);
    retrievers may use it (the BM25 retriever reads ``lang`` to pick a stemmer).
    """

    chunk_id: str
    text: str
    title: str = ""
    doc_version: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Query:
    """One query. ``metadata`` holds the query's tags (e.g. ``lang``, the reader's locale)."""

    query_id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class Retriever(Protocol):
    """What rankgate needs from a retriever. Implement both methods; no base class is needed."""

    def index(self, chunks: Sequence[Chunk]) -> None:
        """Build the index over ``chunks``; called once before any search."""

    def search(self, queries: Sequence[Query], k: int) -> list[dict[str, Any]]:
        """Return one run record per query, in the order given, each with at most ``k`` hits."""


def top_k(hits: Sequence[tuple[Chunk, float]], k: int) -> list[tuple[Chunk, float]]:
    """Order ``(chunk, score)`` pairs by rankgate's ranking rule and keep the first ``k``.

    Scores are rounded to :data:`SCORE_DECIMALS` first; equal scores are ordered by chunk id
    descending (byte-wise, as trec_eval does), so the result never depends on input order.
    """
    rounded = [(chunk, round(float(score), SCORE_DECIMALS)) for chunk, score in hits]
    # Two stable sorts: secondary key first (id descending), then the primary (score descending).
    rounded.sort(key=lambda pair: pair[0].chunk_id.encode("utf-8"), reverse=True)
    rounded.sort(key=lambda pair: pair[1], reverse=True)
    return rounded[:k]


def run_record(
    query_id: str,
    system: str,
    hits: Sequence[tuple[Chunk, float]],
    *,
    index_version: str,
    k_raw: int,
    latency_ms: float | None = None,
) -> dict[str, Any]:
    """Build one run record from hits already ordered by :func:`top_k`.

    ``latency_ms`` is the retrieval time for this query; ``None`` leaves the field out, which keeps
    the record byte-identical across runs.
    """
    record: dict[str, Any] = {
        "query_id": query_id,
        "system": system,
        "k_raw": k_raw,
        "topk": [
            {
                "rank": rank,
                "chunk_id": chunk.chunk_id,
                "score": score,
                "doc_version": chunk.doc_version,
                "text": chunk.text,
            }
            for rank, (chunk, score) in enumerate(hits, start=1)
        ],
        "index_version": index_version,
    }
    if latency_ms is not None:
        record["latency_ms"] = {"retrieve": round(latency_ms, 3)}
    return record


def content_version(prefix: str, config: Mapping[str, Any], chunks: Sequence[Chunk]) -> str:
    """A short, stable id for an index: the same config over the same chunks gives the same id."""
    digest = hashlib.sha256()
    digest.update(json.dumps(dict(config), sort_keys=True, ensure_ascii=False).encode("utf-8"))
    for chunk in chunks:
        for part in (chunk.chunk_id, chunk.title, chunk.text, chunk.doc_version or ""):
            digest.update(part.encode("utf-8"))
            digest.update(b"\x00")
    return f"{prefix}-{digest.hexdigest()[:12]}"


def search_records(
    retriever_name: str,
    index_version: str,
    queries: Sequence[Query],
    k: int,
    search_one: Callable[[Query, int], list[tuple[Chunk, float]]],
    *,
    latency: bool = True,
) -> list[dict[str, Any]]:
    """Run ``search_one`` for each query, timing it, and build one run record per query.

    Shared by the built-in retrievers; ``latency=False`` leaves ``latency_ms`` out so records are
    byte-identical across runs.
    """
    from rankgate.errors import UsageError

    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise UsageError(f"k must be an int >= 1; got {k!r}")
    records = []
    for query in queries:
        start = time.perf_counter()
        hits = search_one(query, k)
        elapsed = (time.perf_counter() - start) * 1000.0
        records.append(
            run_record(query.query_id, retriever_name, hits, index_version=index_version, k_raw=k,
                       latency_ms=elapsed if latency else None)
        )
    return records
