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

from rankgate.errors import F, UsageError
from rankgate.retrieval.base import Chunk, Query, Retriever
from rankgate.retrieval.corpus import load_corpus, load_gold_queries
from rankgate.retrieval.registry import check_retriever, get_retriever

__all__ = ["DEFAULT_DEPTH", "MAX_REPEAT", "median_latency", "retrieve", "write_run"]

#: Most repetitions of each query ``retrieve(repeat=…)`` takes: beyond a few dozen timings the
#: median does not move, and the run only takes longer.
MAX_REPEAT = 100

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
    repeat: int = 1,
    reranker: Any = None,
    rerank_depth: int = 50,
) -> list[dict[str, Any]]:
    """Index ``corpus`` with ``retriever`` and return one run record per query, in query order.

    ``corpus`` is a list of chunks or a corpus JSONL path; ``queries`` a list of queries or a gold
    JSONL path. ``retriever`` is a retriever object or a name for
    :func:`~rankgate.retrieval.registry.get_retriever` (built with ``options``). ``latency=False``
    drops ``latency_ms`` from the records, making the run byte-for-byte reproducible.

    ``repeat=N`` runs every query N times (N passes over all queries, so a slow moment of the machine
    hits one timing of many queries rather than every timing of one) and writes, for each stage of
    ``latency_ms``, the median of the N timings, with ``latency_repeats: N``. The hits must be the
    same every time: a retriever whose results change between passes is an error.

    ``reranker`` (a :class:`~rankgate.retrieval.rerank.Reranker`) reorders the first ``rerank_depth``
    hits of each query, timed as the ``rerank`` stage; the items then carry ``rank``,
    ``retrieve_score`` and (the reordered ones) ``rerank_score``, and no ``score``, since the two
    stages' scores are not on one scale. The first stage's list, as it came before reranking, is kept
    as ``raw_topk`` (ids, ranks and scores), so ``rankgate evaluate --ranking both`` scores the two stages.
    """
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise UsageError(f"k must be an int >= 1; got {k!r}")
    if not isinstance(repeat, int) or isinstance(repeat, bool) or not 1 <= repeat <= MAX_REPEAT:
        raise UsageError(f"repeat must be an integer between 1 and {MAX_REPEAT}; got {repeat!r}")
    chunks = load_corpus(corpus) if isinstance(corpus, (str, os.PathLike)) else list(corpus)
    query_list = load_gold_queries(queries) if isinstance(queries, (str, os.PathLike)) else list(queries)
    if isinstance(retriever, str):
        engine = get_retriever(retriever, **dict(options or {}))
    else:
        if options:
            raise UsageError("options can only be given with a retriever name, not a retriever object")
        engine = check_retriever(retriever, "The retriever argument")
    engine.index(chunks)
    if reranker is not None:
        if not isinstance(rerank_depth, int) or isinstance(rerank_depth, bool) or rerank_depth < 1:
            raise UsageError(f"rerank_depth must be an int >= 1; got {rerank_depth!r}")
        if callable(getattr(reranker, "index", None)):
            reranker.index(chunks)
    by_id = {c.chunk_id: c for c in chunks}

    def one_pass() -> list[dict[str, Any]]:
        out = engine.search(query_list, k)
        _check_records(out, query_list, k, engine)
        if reranker is not None:
            out = [_rerank_record(reranker, q, rec, by_id, rerank_depth) for q, rec in zip(query_list, out)]
        return out

    records = one_pass()
    if latency and repeat > 1:
        passes = [records] + [one_pass() for _ in range(repeat - 1)]
        records = median_latency(passes, type(engine).__name__)
    if not latency:
        records = [{key: value for key, value in record.items() if key not in ("latency_ms", "latency_repeats")}
                   for record in records]
    return records


def _rerank_record(reranker: Any, query: Query, record: dict[str, Any], chunks: Mapping[str, Chunk],
                   depth: int) -> dict[str, Any]:
    """``record`` with its first ``depth`` hits reordered by ``reranker``, the time taken added as ``rerank``."""
    import time

    from rankgate.retrieval.rerank import apply_reranker

    hits = list(record.get("topk") or [])
    head, tail = hits[:depth], hits[depth:]
    items = [chunks.get(h["chunk_id"]) or Chunk(h["chunk_id"], str(h.get("text") or "")) for h in head]
    start = time.perf_counter()
    ranked = apply_reranker(reranker, query, items)
    elapsed = (time.perf_counter() - start) * 1000.0
    by_id = {h["chunk_id"]: h for h in head}
    new_hits = []
    for rank, (chunk, score) in enumerate(ranked, start=1):
        h = {key: v for key, v in by_id[chunk.chunk_id].items() if key not in ("score", "rank")}
        new_hits.append({**h, "rank": rank, "rerank_score": round(score, 6),
                         "retrieve_score": by_id[chunk.chunk_id].get("score")})
    for rank, h in enumerate(tail, start=len(new_hits) + 1):
        new_hits.append({**{key: v for key, v in h.items() if key not in ("score", "rank")}, "rank": rank,
                         "retrieve_score": h.get("score")})
    raw = [{"chunk_id": h["chunk_id"], "rank": rank, "score": h.get("score")} for rank, h in enumerate(hits, start=1)]
    new = {**record, "topk": new_hits, "raw_topk": raw, "reranker": getattr(reranker, "name", type(reranker).__name__)}
    lat = record.get("latency_ms")
    if isinstance(lat, Mapping):
        new["latency_ms"] = {**lat, "rerank": round(elapsed, 3)}
    return new


def median_latency(passes: Sequence[Sequence[Mapping[str, Any]]], who: str = "the retriever") -> list[dict[str, Any]]:
    """The first pass's records with each ``latency_ms`` stage replaced by the median over the passes.

    A query whose hits (ids, in order) differ between passes is an error: the timings would belong to
    different work. A stage missing from some pass is the median of the passes that have it.
    """
    import statistics

    out = []
    first = passes[0]
    for i, record in enumerate(first):
        hits = [h.get("chunk_id") for h in record.get("topk", [])]
        stages: dict[str, list[float]] = {}
        for p, other in enumerate(passes):
            if [h.get("chunk_id") for h in other[i].get("topk", [])] != hits:
                raise UsageError(f"{who}.search() returned other hits for query {record.get('query_id')!r} on repetition "
                                 f"{p + 1} than on the first; timing repetitions needs a deterministic retriever "
                                 f"(use {F(repeat=1)})")
            lat = other[i].get("latency_ms")
            parts = lat if isinstance(lat, Mapping) else ({} if lat is None else {"total": lat})
            for stage, ms in parts.items():
                if isinstance(ms, (int, float)) and not isinstance(ms, bool):
                    stages.setdefault(str(stage), []).append(float(ms))
        new = dict(record)
        if stages:
            new["latency_ms"] = {stage: round(statistics.median(v), 3) for stage, v in stages.items()}
            new["latency_repeats"] = len(passes)
        out.append(new)
    return out


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
    from rankgate._util.atomic import write_text

    target = Path(path)
    lines = [json.dumps(record, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n" for record in records]
    write_text(target, "".join(lines))
    return target
