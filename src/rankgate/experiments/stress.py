"""Reranker stress test: put hard negatives on top of the reranker's input and see if it pushes them down.

For each sampled query, the reranker's input is the run's ranking (the first ``depth`` items, as the
first stage retrieved them). The test reranks it twice: as it is (*before*), and with hard negatives
put at the given ranks of the input (*after*; the run's items move down to make room). A reranker
that reads the content ranks the negatives low and scores about the same both times; one that leans
on the input order (or ignores content altogether) lets them through. Reported, per metric and
segment: the mean before and after and the paired change with its bootstrap interval
(:func:`rankgate.stats.bootstrap.paired_bootstrap_ci`), and the queries where a negative reached the top 3.

Negatives, per query (:func:`negatives_from_gold`, :func:`lexical_negatives`, or a file):

``must-not``  the gold set's ``must_not_retrieve`` items of the query;
``lexical``   near-misses: the corpus chunks that BM25 ranks highest for the query among those the gold
              set does not judge relevant (judged non-relevant first); one already in the input moves;
a file        JSONL, one ``{"query_id": …, "negatives": [chunk_id, …]}`` per line.

An item judged relevant can never be a negative (a file that names one is an error). Queries without
a negative, or without a relevant item, are left out (counted). ``n`` queries are sampled from the
rest with the seed; the negatives of a query, when it has more than ranks, are its first ones (files,
must-not) or its lexically closest ones. The verdict: the reranker **fails** when nDCG@5 dropped by
more than ``max_drop`` *and* the paired interval of the change lies below zero (the gate rule).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rankgate.model.gold_run import Gold, Run
from rankgate.errors import F, UsageError
from rankgate.model.results import EvaluationResult
from rankgate.retrieval.base import Chunk, Query
from rankgate.retrieval.rerank import Reranker, apply_reranker
from rankgate.experiments.paired import PairedRow, paired_rows
from rankgate.stats.options import Statistics, taken

__all__ = ["STRESS_METRICS", "Breach", "StressResult", "lexical_negatives", "negatives_from_gold", "ranked_items",
           "stress_test"]

STRESS_METRICS = ("ndcg@5", "precision@5")
TOP = 3  # a negative that reaches this rank is listed


@dataclass(frozen=True)
class Breach:
    """A query where a negative reached the top 3 after reranking."""

    query_id: str
    chunk_id: str
    inserted_at: int
    rank: int
    clean_rank: int | None  # its rank when the clean input was reranked (None: not in the input)

    def to_dict(self) -> dict[str, Any]:
        return {"query_id": self.query_id, "chunk_id": self.chunk_id, "inserted_at": self.inserted_at,
                "rank": self.rank, "clean_rank": self.clean_rank}


@dataclass(frozen=True)
class StressResult:
    reranker: str
    negatives: str
    ranks: tuple[int, ...]
    depth: int
    seed: int
    max_drop: float
    queries: tuple[str, ...]  # the sampled queries, in gold order
    skipped: Mapping[str, int]  # why queries were left out -> how many
    before: EvaluationResult
    after: EvaluationResult
    rows: tuple[PairedRow, ...]
    breaches: tuple[Breach, ...]
    before_records: tuple[dict[str, Any], ...]
    after_records: tuple[dict[str, Any], ...]

    @property
    def breach_share(self) -> float:
        return len({b.query_id for b in self.breaches}) / len(self.queries) if self.queries else math.nan

    @property
    def passed(self) -> bool:
        row = next((r for r in self.rows if r.metric == "ndcg@5" and r.segment is None), None)
        if row is None or math.isnan(row.delta):
            return True
        return not (-row.delta > self.max_drop + 1e-9 and row.ci[1] < 0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "reranker": self.reranker, "negatives": self.negatives, "ranks": list(self.ranks), "depth": self.depth,
            "seed": self.seed, "max_drop": self.max_drop, "passed": self.passed,
            "queries": {"stressed": len(self.queries), "skipped": dict(self.skipped)},
            "metrics": [r.to_dict() for r in self.rows],
            "negative_in_top_3": {"queries": len({b.query_id for b in self.breaches}),
                                  "share": None if math.isnan(self.breach_share) else self.breach_share,
                                  "items": [b.to_dict() for b in self.breaches]},
            "rule": "fails when nDCG@5 dropped by more than max_drop and the paired interval of the change is below 0",
        }


def ranked_items(run: Run, ties: str | None = None) -> dict[str, list[str]]:
    """Each run query's item ids in rank order (the ranking rule of :mod:`rankgate.model.ranking`;
    ``ties``: ``"id"``, ``"input"`` or None for the rule the run's format asks for)."""
    from rankgate.model.ranking import rank_rows, resolve_ties

    perm = rank_rows(run.r_query, run.r_doc, run.r_score, run.r_order, ties=resolve_ties(ties, run))
    docs = run.r_doc.to_pylist() if hasattr(run.r_doc, "to_pylist") else list(run.r_doc)
    out: dict[str, list[str]] = {q: [] for q in run.query_ids}
    q_of = run.r_query
    for i in perm.tolist():
        out[run.query_ids[int(q_of[i])]].append(docs[i])
    return out


def negatives_from_gold(gold: Gold) -> dict[str, list[str]]:
    """``must-not``: each query's ``must_not_retrieve`` items."""
    return {q: list(v) for q, v in zip(gold.query_ids, gold.field("must_not_retrieve")) if v}


def lexical_negatives(gold: Gold, chunks: Sequence[Chunk], queries: Mapping[str, Query], inputs: Mapping[str, list[str]],
                      per_query: int) -> dict[str, list[str]]:
    """``lexical``: the BM25-closest chunks that are not judged relevant (judged non-relevant ones first).

    Near-misses already in a query's input are taken too (they move up to the given ranks): the
    closest ones usually are, since the first stage found them for the same words."""
    from rankgate.retrieval.bm25 import BM25Retriever

    judged = gold.judgements()
    bm25 = BM25Retriever()
    bm25.index(chunks)
    out: dict[str, list[str]] = {}
    for qid, query in queries.items():
        grades = judged.get(qid, {})
        hits = [c.chunk_id for c, _ in bm25._search_one(query, per_query + len(grades) + 50)]
        pool = [h for h in hits if grades.get(h, 0) <= 0]
        pool.sort(key=lambda h: 0 if h in grades else 1)  # judged non-relevant first (stable: closest first)
        if pool:
            out[qid] = pool[:per_query]
    return out


def _insert(items: list[str], negatives: Sequence[str], ranks: Sequence[int]) -> tuple[list[str], dict[str, int]]:
    """``items`` with ``negatives[j]`` at rank ``ranks[j]`` (1-based); a negative already in the list moves."""
    rest = [x for x in items if x not in set(negatives)]
    placed: dict[str, int] = {}
    for neg, rank in sorted(zip(negatives, ranks), key=lambda p: p[1]):
        pos = min(rank - 1, len(rest))
        rest.insert(pos, neg)
        placed[neg] = pos + 1
    return rest, placed


def stress_test(gold: Gold, run: Run, reranker: Reranker, *, chunks: Mapping[str, Chunk], queries: Mapping[str, Query],
                negatives: Mapping[str, Sequence[str]], negatives_name: str, ranks: Sequence[int], n: int | None = 100,
                depth: int | None = None,
                statistics: Statistics | None = None, seed: int = 0, max_drop: float = 0.05, by: Sequence[str] = (),
                resamples: int = 2000, confidence: float = 0.95, reranker_name: str = "reranker",
                evaluate: Callable[[Gold, Any], EvaluationResult] | None = None,
                ties: str | None = None) -> StressResult:
    """Run the stress test (see the module docs). ``chunks``: id -> chunk with its text, for every item
    of the input and every negative; ``queries``: id -> query text; ``ties``: the rule that ranks
    ``run`` (``"id"``, ``"input"``; default: the one its format asks for)."""
    seed, resamples, confidence = taken(statistics, seed, resamples, confidence, caller="stress_test",
                                         defaults=(0, 2000, 0.95))
    if not ranks or any(r < 1 for r in ranks) or len(set(ranks)) != len(ranks):
        raise UsageError(f"ranks must be distinct positive ranks (e.g. 1,2,3); got {list(ranks)}")
    if evaluate is None:
        from rankgate.scoring.engine import evaluate as _evaluate

        def evaluate(g: Gold, records: Any) -> EvaluationResult:
            return _evaluate(g, records, list(STRESS_METRICS))
    judged = gold.judgements()
    inputs = ranked_items(run, ties)
    skipped = {"no_relevant_item": 0, "no_negative": 0, "not_in_run": 0}
    eligible = []
    for qid in gold.query_ids:
        if not any(g > 0 for g in judged.get(qid, {}).values()):
            skipped["no_relevant_item"] += 1
        elif qid not in inputs:
            skipped["not_in_run"] += 1
        elif not [x for x in negatives.get(qid, ()) if judged[qid].get(x, 0) <= 0]:
            skipped["no_negative"] += 1
        else:
            eligible.append(qid)
    for qid, negs in negatives.items():
        relevant = [x for x in negs if judged.get(qid, {}).get(x, 0) > 0]
        if relevant and negatives_name not in ("must-not", "lexical"):
            raise UsageError(f"{negatives_name}: query {qid!r} lists {relevant[0]!r} as a negative, but the gold set "
                             "judges it relevant; a hard negative must not be relevant")
    if n is not None and n < len(eligible):
        pick = np.sort(np.random.default_rng(seed).choice(len(eligible), size=n, replace=False))
        sampled = [eligible[i] for i in pick.tolist()]
        skipped["not_sampled"] = len(eligible) - n
    else:
        sampled = eligible
    if not sampled:
        why = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in skipped.items() if v)
        raise UsageError(f"no query can be stressed ({why}): a query needs a relevant item, a ranking in the run "
                         "and a negative")
    before_records, after_records, breaches = [], [], []
    for qid in sampled:
        items = inputs[qid][:depth] if depth else inputs[qid]
        negs = [x for x in negatives[qid] if judged[qid].get(x, 0) <= 0][: len(ranks)]
        stressed, placed = _insert(items, negs, list(ranks)[: len(negs)])
        for cid in {*items, *stressed}:
            if cid not in chunks:
                raise UsageError(f"no text for item {cid!r} of query {qid!r}: give {F.corpus} with every chunk, or a run "
                                 "that logs each item's text")
        query = queries[qid]
        clean = apply_reranker(reranker, query, [chunks[c] for c in items])
        hard = apply_reranker(reranker, query, [chunks[c] for c in stressed])
        before_records.append(_record(qid, clean))
        after_records.append(_record(qid, hard))
        clean_rank = {c.chunk_id: r for r, (c, _) in enumerate(clean, start=1)}
        for rank, (chunk, _) in enumerate(hard, start=1):
            if rank <= TOP and chunk.chunk_id in placed:
                breaches.append(Breach(qid, chunk.chunk_id, placed[chunk.chunk_id], rank, clean_rank.get(chunk.chunk_id)))
    keep = set(sampled)
    sub = _gold_subset(gold, keep)
    before, after = evaluate(sub, before_records), evaluate(sub, after_records)
    rows = paired_rows(before, after, by=by, seed=seed, resamples=resamples, confidence=confidence)
    return StressResult(reranker_name, negatives_name, tuple(ranks), depth or 0, seed, max_drop,
                        tuple(q for q in gold.query_ids if q in keep), skipped, before, after, rows, tuple(breaches),
                        tuple(before_records), tuple(after_records))


def _record(qid: str, ranked: list[tuple[Chunk, float]]) -> dict[str, Any]:
    return {"query_id": qid, "topk": [{"chunk_id": c.chunk_id, "rank": r, "score": s}
                                      for r, (c, s) in enumerate(ranked, start=1)]}


def _gold_subset(gold: Gold, keep: set[str]) -> Gold:
    idx = [i for i, q in enumerate(gold.query_ids) if q in keep]
    remap = np.full(len(gold.query_ids), -1, dtype=np.int64)
    remap[idx] = np.arange(len(idx))
    rows = np.flatnonzero(remap[gold.j_query] >= 0)
    import pyarrow as pa

    return Gold([gold.query_ids[i] for i in idx], remap[gold.j_query[rows]], gold.j_doc.take(pa.array(rows)),
                gold.j_grade[rows], {k: [v[i] for i in idx] for k, v in gold.fields.items()},
                None if gold.notes is None else [gold.notes[i] for i in rows.tolist()], gold.source)
