"""Does a reranker hold up when hard negatives are put on top of its input? (see
:mod:`rankgate.experiments.stress`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rankgate.flows._inputs import FilePath, paths
from rankgate.stats.options import Statistics

MAX_RANKS = 20


@dataclass(frozen=True, slots=True)
class StressRequest:
    gold: str                           # gold set with query texts
    run: str                            # the first stage's run: the reranker's input
    corpus: str | None = None           # texts of every item and negative (else the run's texts)
    reranker: str = "bm25"              # bm25, dense, or package.module:Class
    reranker_options: Mapping[str, Any] = field(default_factory=dict)
    negatives: str = "must-not"         # must-not, lexical, or a JSONL file of {query_id, negatives}
    ranks: tuple[int, ...] = (1, 2, 3)  # input ranks the negatives are put at
    n: int = 100                        # queries to stress, sampled with seed (0: all)
    depth: int | None = None            # items of the run given to the reranker (None: all)
    max_drop: float = 0.05              # largest nDCG@5 drop the reranker may show
    by: tuple[str, ...] = ()
    ties: str | None = None
    seed: int = 0
    resamples: int = 2000
    confidence: float = 0.95

    def inputs(self) -> tuple[FilePath, ...]:
        """The files the request reads (an output may be none of them): the gold set, the run, the corpus and
        the negatives file (``negatives`` other than must-not and lexical)."""
        return paths(self.gold, self.run, self.corpus,
                     None if self.negatives in ("must-not", "lexical") else self.negatives)

    def __post_init__(self) -> None:
        from collections.abc import Mapping as _Mapping

        from rankgate._util.constraints import BY, FILE, TEXT, Shape, check_fields, plain, typed
        from rankgate.errors import F, UsageError

        ranks = Shape("a list of ranks (integers)", lambda v: None if isinstance(v, (str, bytes, _Mapping)) or not hasattr(
            v, "__iter__") else tuple(plain(r) for r in v))
        # the types here (a UsageError naming the field), the bounds below (naming the field too)
        check_fields(self, "StressRequest", corpus=FILE, reranker=typed(str), reranker_options=typed(_Mapping),
                     negatives=typed(str), ranks=typed(ranks), n=typed(int), depth=typed(int, optional=True),
                     max_drop=typed(float), by=BY, ties=TEXT, seed=typed(int), resamples=typed(int),
                     confidence=typed(float))
        Statistics(seed=self.seed, resamples=self.resamples, confidence=self.confidence)  # their bounds, with the cost
        if not all(isinstance(r, int) and r >= 1 for r in self.ranks) or len(set(self.ranks)) != len(self.ranks):
            raise UsageError(f"{F.ranks} must be distinct ranks >= 1 separated by commas, e.g. 1,2,3; "
                             f"got {','.join(map(str, self.ranks))!r}")
        if len(self.ranks) > MAX_RANKS:
            raise UsageError(f"{F.ranks} takes at most {MAX_RANKS} ranks; got {len(self.ranks)}")
        if self.n < 0:
            raise UsageError(f"{F.n} must be >= 0 (0 stresses every query); got {self.n}")
        if self.depth is not None and self.depth < 1:
            raise UsageError(f"{F.depth} must be >= 1; got {self.depth}")
        if not 0.0 <= self.max_drop <= 1.0:
            raise UsageError(f"{F.max_drop} must be between 0 and 1 (an nDCG@5 difference); got {self.max_drop}")
        if self.negatives == "lexical" and not self.corpus:
            raise UsageError(f"{F(negatives='lexical')} needs {F.corpus}: near-misses are found in the corpus")


def _negatives_file(path: str, gold_ids: set[str]) -> dict[str, list[str]]:
    from rankgate.io.jsonl import json_objects
    from rankgate.errors import InputError

    out: dict[str, list[str]] = {}
    for lineno, obj in json_objects(path, "negatives file", '{"query_id", "negatives"}'):
        if not isinstance(obj.get("query_id"), str):
            raise InputError("must be an object with a string 'query_id'", path=path, line=lineno,
                             hint='e.g. {"query_id": "q1", "negatives": ["doc_7#c2"]}')
        negs = obj.get("negatives")
        if not isinstance(negs, list) or not negs or not all(isinstance(x, str) and x for x in negs):
            raise InputError("field 'negatives' must be a non-empty list of chunk ids", path=path, line=lineno,
                             field="negatives")
        qid = obj["query_id"]
        if qid in out:
            raise InputError(f"lists query {qid!r} a second time", path=path, line=lineno, hint="one line per query")
        if qid not in gold_ids:
            raise InputError(f"names query {qid!r}, which is not in the gold set", path=path, line=lineno, field="query_id")
        out[qid] = list(dict.fromkeys(negs))
    if not out:
        raise InputError("has no negatives", path=path, hint='one JSON object per line: {"query_id": …, "negatives": […]}')
    return out


def run_stress(req: StressRequest) -> Any:
    """The :class:`~rankgate.experiments.stress.StressResult`: the reranker's nDCG@5 before and after."""
    from rankgate.io import load_gold, load_run
    from rankgate.errors import InputError
    from rankgate.experiments.stress import lexical_negatives, negatives_from_gold, ranked_items, stress_test
    from rankgate.retrieval.base import Chunk, Query
    from rankgate.retrieval.rerank import get_reranker

    reranker = get_reranker(req.reranker, **dict(req.reranker_options))
    gold = load_gold(req.gold)
    run_ = load_run(req.run)

    chunks: dict[str, Chunk] = {}
    texts = run_.items.get("text")
    if texts is not None:
        docs = run_.r_doc.to_pylist()
        versions = run_.items.get("doc_version") or [None] * len(docs)
        for cid, text, version in zip(docs, texts, versions):
            if isinstance(text, str) and cid not in chunks:
                chunks[cid] = Chunk(cid, text, doc_version=version)
    corpus: list[Chunk] = []
    if req.corpus:
        from rankgate.retrieval.corpus import load_corpus

        corpus = load_corpus(req.corpus)
        chunks.update({c.chunk_id: c for c in corpus})
        index = getattr(reranker, "index", None)
        if callable(index):
            index(corpus)
    tags = gold.field("tags")
    queries: dict[str, Query] = {}
    for i, (qid, text) in enumerate(zip(gold.query_ids, gold.field("query"))):
        if isinstance(text, str) and text.strip():
            queries[qid] = Query(qid, text, dict(tags[i]) if isinstance(tags[i], dict) else {})
    if not queries:
        raise InputError("has no query texts; the reranker needs each query's text", path=gold.source, field="query",
                         hint="use a gold set with a 'query' field (JSONL) or a BEIR folder with queries.jsonl")
    mode = req.negatives
    if mode == "must-not":
        negatives = negatives_from_gold(gold)
    elif mode == "lexical":
        negatives = lexical_negatives(gold, corpus, queries, ranked_items(run_, req.ties), len(req.ranks))
    else:
        negatives = _negatives_file(mode, set(gold.query_ids))
    negatives = {q: v for q, v in negatives.items() if q in queries}
    return stress_test(gold, run_, reranker, chunks=chunks, queries=queries, negatives=negatives,
                       negatives_name=mode if mode in ("must-not", "lexical") else os.path.basename(mode),
                       ranks=req.ranks, n=req.n or None, depth=req.depth, seed=req.seed, max_drop=req.max_drop,
                       by=list(req.by), resamples=req.resamples, confidence=req.confidence,
                       reranker_name=req.reranker, ties=req.ties)
