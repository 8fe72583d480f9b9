"""Run a built-in or your own retriever over a corpus and return the run's records (see
:mod:`rankgate.retrieval`)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rankgate.flows._inputs import FilePath, paths

# The report lists the top 10 of each missed query with its text, and containment@k and
# coverage_entities@k read the text of the top k; 10 covers both at the usual cut-offs.
DEFAULT_TEXTS = 10


@dataclass(frozen=True, slots=True)
class RetrieveRequest:
    corpus: str | Path | None = None    # corpus JSONL (with gold), or
    beir: str | Path | None = None      # a BEIR folder: corpus, queries and qrels
    gold: str | Path | None = None      # gold set whose queries to run (with corpus)
    split: str | None = None            # BEIR qrels split
    retriever: str = "bm25"             # bm25, dense, a preset, or package.module:Class
    options: Mapping[str, Any] = field(default_factory=dict)
    k: int = 100                        # hits kept per query
    texts: int | None = DEFAULT_TEXTS   # hits of each query keeping their text (None: all)
    reranker: str | None = None
    rerank_depth: int = 50
    repeat: int = 3                     # timings per query, the median written
    latency: bool = True                # False: no timings, so the same inputs give the same bytes

    def inputs(self) -> tuple[FilePath, ...]:
        """The files the request reads (an output may be none of them): the corpus, the gold set and the BEIR
        folder."""
        return paths(self.corpus, self.gold, self.beir)

    def __post_init__(self) -> None:
        from collections.abc import Mapping as _Mapping

        from rankgate._util.constraints import FILE, FLAG, TEXT, check_fields, typed
        from rankgate.errors import F, UsageError
        from rankgate.metrics.spec import MAX_K
        from rankgate.retrieval.api import MAX_REPEAT

        # the types here (a UsageError naming the field), the bounds below (naming the field too)
        check_fields(self, "RetrieveRequest", corpus=FILE, beir=FILE, gold=FILE, split=TEXT, retriever=typed(str),
                     options=typed(_Mapping), k=typed(int), texts=typed(int, optional=True), reranker=TEXT,
                     rerank_depth=typed(int), repeat=typed(int), latency=FLAG)
        if not 1 <= self.k <= MAX_K:  # as every other cutoff: a run's depth, not a number to allocate blindly
            raise UsageError(f"{F.k} must be between 1 and {MAX_K:,}; got {self.k}"[:120])
        if not 1 <= self.repeat <= MAX_REPEAT:
            raise UsageError(f"{F.repeat} must be between 1 and {MAX_REPEAT}; got {self.repeat} "
                             "(3 to 5 timings give a steady median)")
        if self.texts is not None and self.texts < 0:
            raise UsageError(f"{F.texts} must be none, all or top-N with N >= 1 (e.g. top-10); got {self.texts!r}")
        if (self.corpus is None) == (self.beir is None):
            raise UsageError(f"give {F.corpus} (with {F.gold}) or {F.beir} (a BEIR folder), one of them")
        if self.beir is not None and self.gold is not None:
            raise UsageError(f"{F.gold} cannot be combined with {F.beir}: a BEIR folder brings its own queries")
        if self.beir is None and self.gold is None:
            raise UsageError(f"{F.corpus} needs {F.gold}: the gold set whose queries to run")
        if self.reranker and self.rerank_depth < 1:
            raise UsageError(f"{F.rerank_depth} must be >= 1; got {self.rerank_depth}")


@dataclass(frozen=True, slots=True)
class RetrieveResult:
    records: tuple[dict[str, Any], ...]  # one run record per query, texts kept as the request says
    chunks: int                          # chunks indexed
    system: str                          # the retriever's name as the records give it
    repeat: int                          # timings per query
    seconds: float                       # indexing and retrieval, wall clock


def keep_texts(records: list[dict[str, Any]], limit: int | None) -> list[dict[str, Any]]:
    """Drop ``text`` from every hit past the first ``limit`` of each query (None: keep all)."""
    if limit is None:
        return records
    out = []
    for record in records:
        hits = record.get("topk")
        if isinstance(hits, list) and any(isinstance(h, dict) and "text" in h for h in hits[limit:]):
            hits = [h if i < limit or not isinstance(h, dict) else {k: v for k, v in h.items() if k != "text"}
                    for i, h in enumerate(hits)]
            record = {**record, "topk": hits}
        out.append(record)
    return out


def run_retrieve(req: RetrieveRequest) -> RetrieveResult:
    from rankgate.retrieval import load_beir, load_corpus, load_gold_queries, retrieve

    if req.beir is not None:
        collection = load_beir(req.beir, split=req.split)
        chunks, queries = collection.chunks, collection.queries
    else:
        assert req.corpus is not None and req.gold is not None  # (the request says so)
        chunks, queries = load_corpus(req.corpus), load_gold_queries(req.gold)
    start = time.perf_counter()
    repeat = req.repeat if req.latency else 1
    reranker = None
    if req.reranker:
        from rankgate.retrieval.rerank import get_reranker

        reranker = get_reranker(req.reranker)
    records = retrieve(chunks, queries, req.retriever, k=req.k, options=dict(req.options), latency=req.latency,
                       repeat=repeat, reranker=reranker, rerank_depth=req.rerank_depth)
    seconds = time.perf_counter() - start
    system = records[0]["system"] if records else req.retriever
    return RetrieveResult(tuple(keep_texts(records, req.texts)), len(chunks), system, repeat, seconds)
