"""Metrics that reproduce the RAG tools' retrieval metrics, and which rankgate spec equals which of theirs.

rankgate's own metrics follow trec_eval (``precision@k`` divides by k; ``map`` and ``ndcg`` normalise
by every relevant item). The RAG tools define some metrics otherwise; the three below reproduce
them exactly where the definitions allow, so a number can be checked against the tool's own:

* ``precision_returned@k``: the share of what was returned that is relevant (the denominator is the
  number returned, at most k): RAGAS ``IDBasedContextPrecision``, LlamaIndex ``precision``.
* ``ap_retrieved@k``: average precision over the relevant items that were retrieved (precision at
  each of their ranks, averaged over them, not over every relevant item): RAGAS
  ``NonLLMContextPrecisionWithReference`` with exact matching.
* ``ndcg_full_ideal@k``: DCG of the top k over the ideal DCG of *all* relevant items (the ideal list
  is not cut at k): LlamaIndex ``ndcg``.

:data:`COMPAT` names, for each metric of RAGAS (non-LLM), LlamaIndex's ``RetrieverEvaluator`` and
trec_eval, the rankgate spec that gives the same per-query value (``rankgate metrics --compat``);
tests check it against numbers the tools computed themselves (tests/data/producers).
"""

from __future__ import annotations

import math

import numpy as np

from rankgate.metrics.context import NO_CUTOFF, EvalContext, QueryView
from rankgate.metrics.ranking import GAIN, NDCG, REL, _gain, _gain1, _log2, _rel
from rankgate.metrics.registry import MetricDefinition, register
from rankgate.metrics.spec import Metric

__all__ = ["COMPAT", "COMPAT_TOOLS", "compat_rows"]


@register
class PrecisionReturned(MetricDefinition):
    name = "precision_returned"
    aliases = ("precision_ret",)
    params = {"rel": REL}
    cutoff = "optional"
    summary = ("Share of the returned items (at most k) that is relevant; the denominator is what was returned, "
               "0 when nothing was.")
    formula = "precision_returned@k = |D_k ∩ G| / |D_k|  (RAGAS IDBasedContextPrecision, LlamaIndex precision)"

    def compute(self, ctx: EvalContext, metric: Metric, k: np.ndarray) -> np.ndarray:
        ctx = ctx.cut(k)  # nothing past k is read
        found = ctx.seg_sum(ctx.is_rel(_rel(metric)) & ctx.within(k))
        returned = np.minimum(ctx.n_retrieved, k)
        with np.errstate(invalid="ignore", divide="ignore"):
            return ctx.finish(np.where(returned > 0, found / np.maximum(returned, 1), 0.0), metric)

    def reference(self, q: QueryView, metric: Metric, k: int | None) -> float:
        G = q.relevant(_rel(metric))
        top = q.top(k)
        return sum(1 for d in top if d in G) / len(top) if top else 0.0


@register
class APRetrieved(MetricDefinition):
    unit = "score"
    name = "ap_retrieved"
    params = {"rel": REL}
    cutoff = "optional"
    summary = ("Average precision over the relevant items retrieved in the top k (not over every relevant item); "
               "0 when none was retrieved.")
    formula = ("ap_retrieved@k = Σ_{i<=k, d_i ∈ G} P@i / |D_k ∩ G|  (RAGAS NonLLMContextPrecisionWithReference, "
               "which adds 1e-10 to the denominator)")

    def compute(self, ctx: EvalContext, metric: Metric, k: np.ndarray) -> np.ndarray:
        ctx = ctx.cut(k)  # nothing past k is read
        rows, query, found = ctx.hits(ctx.is_rel(_rel(metric)) & ctx.within(k))
        total = ctx.sparse_sum(found / ctx.rank[rows], query, found)
        n = np.bincount(query, minlength=ctx.nq)
        with np.errstate(invalid="ignore", divide="ignore"):
            return ctx.finish(np.where(n > 0, total / np.maximum(n, 1), 0.0), metric)

    def reference(self, q: QueryView, metric: Metric, k: int | None) -> float:
        G = q.relevant(_rel(metric))
        found, total = 0, 0.0
        for i, d in enumerate(q.top(k), start=1):
            if d in G:
                found += 1
                total += found / i
        return total / found if found else 0.0


@register
class NDCGFullIdeal(MetricDefinition):
    unit = "score"
    name = "ndcg_full_ideal"
    params = {"gain": GAIN}
    cutoff = "optional"
    summary = "nDCG whose ideal is every judged item, not cut at k (a query with more relevant items than k cannot reach 1)."
    formula = ("ndcg_full_ideal@k = DCG@k / IDCG, DCG@k = Σ_{i<=k} gain(g(d_i)) / log2(i+1); IDCG from all judged "
               "grades > 0 sorted descending, not cut; gain linear g or exp 2^g-1  (LlamaIndex ndcg, binary grades)")

    def compute(self, ctx: EvalContext, metric: Metric, k: np.ndarray) -> np.ndarray:
        kind = metric.param("gain")
        ctx = ctx.cut(k)  # nothing past k is read
        gain = _gain(ctx.grade, kind)
        rows, query, place = ctx.hits((gain > 0) & ctx.within(k))
        dcg = ctx.sparse_sum(gain[rows] / _log2(ctx.rank[rows] + 1), query, place)
        # nDCG's ideal sums (the same additions in the same order), with no cutoff
        idcg = _NDCG_IDEAL(ctx, kind, np.full(ctx.nq, NO_CUTOFF, dtype=np.int64))
        with np.errstate(invalid="ignore", divide="ignore"):
            return ctx.finish(np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1.0), 0.0), metric)

    def reference(self, q: QueryView, metric: Metric, k: int | None) -> float:
        kind = metric.param("gain")
        dcg = sum(_gain1(q.judgements.get(d, 0), kind) / math.log2(i + 1) for i, d in enumerate(q.top(k), 1))
        ideal = sorted((_gain1(g, kind) for g in q.judgements.values()), reverse=True)
        idcg = sum(g / math.log2(i + 1) for i, g in enumerate(ideal, 1))
        return dcg / idcg if idcg > 0 else 0.0


_NDCG_IDEAL = type(NDCG)._ideal  # type: ignore[attr-defined]


# (their metric, the rankgate spec with the same per-query value, what must hold for it to be equal).
# K stands for the length of the returned lists (LlamaIndex: similarity_top_k); N for any cutoff at
# least as long as the longest list (a spec without @k that needs one would cut at --k).
COMPAT: dict[str, list[tuple[str, str, str]]] = {
    "ragas": [
        ("IDBasedContextPrecision", "precision_returned",
         "ids on both sides; RAGAS counts a repeated id once, as rankgate (--dedupe first); nothing retrieved: "
         "RAGAS NaN, rankgate 0"),
        ("IDBasedContextRecall", "recall@N", "ids on both sides; N >= the longest retrieved list (e.g. recall@100)"),
        ("NonLLMContextPrecisionWithReference", "ap_retrieved",
         "texts equal after normalising (RAGAS counts similarity >= 0.5 as a match; rankgate lists near-misses); "
         "equal to 1e-9 (RAGAS adds 1e-10 to the denominator)"),
        ("NonLLMContextRecall", "recall@N",
         "texts equal after normalising (RAGAS counts similarity > 0.5 as a match); N >= the longest list"),
    ],
    "llamaindex": [
        ("hit_rate", "hit@K", "K = similarity_top_k (use_granular_hit_rate=False, the default)"),
        ("mrr", "mrr@K", "use_granular_mrr=False, the default"),
        ("precision", "precision_returned@K", "the denominator is what was returned: precision@K when K were returned"),
        ("recall", "recall@K", ""),
        ("ap", "map@K", "over every expected id: rankgate map@K (trec_eval map_cut_K)"),
        ("ndcg", "ndcg_full_ideal@K", "binary relevance, mode='linear' (the default); the ideal is not cut at K"),
    ],
}
COMPAT_TOOLS = ("ragas", "llamaindex", "trec_eval")


def compat_rows(tool: str) -> list[tuple[str, str, str]]:
    """(their metric, rankgate spec, condition) for ``tool``; trec_eval's come from the registry's
    ``trec_name`` of every metric that has one."""
    if tool == "trec_eval":
        from rankgate.metrics.registry import all_metrics

        rows = [("map", "map", "with --trec"), ("ndcg", "ndcg", "with --trec")]  # (their measures without a cutoff)
        for d in all_metrics():
            if d.trec_name:
                spec = d.name + ("@k" if "{k}" in d.trec_name else "")
                rows.append((d.trec_name.replace("{k}", "k"), spec, "with --trec"))
        return sorted(rows, key=lambda r: r[0].lower())
    if tool not in COMPAT:
        from rankgate.errors import UsageError

        raise UsageError(f"unknown tool {tool!r}; expected one of: {', '.join(COMPAT_TOOLS)}")
    return list(COMPAT[tool])
