"""Measures for incomplete judgements: bpref and infAP (trec_eval's ``bpref`` and ``infAP``).

Both read only what was judged, so an unjudged item neither helps nor hurts as it does for map.
Classes of a ranked item ``d`` with grade ``g(d)``, as trec_eval v10 reads a qrels file:

* relevant: ``g >= rel``;
* judged non-relevant: ``0 <= g < rel``;
* pooled but unjudged: ``g < 0`` (trec_eval's meaning of a negative grade; used by infAP's sampling);
* not in the pool: no judgement at all.

``R`` is the number of relevant judgements of the query, ``N`` the number of judged non-relevant
ones. Values equal trec_eval v10's bit for bit per query (same operations, same order; tested
against trec_eval built from its source). Written with ``@k``, only the top k is read.
"""

from __future__ import annotations

import numpy as np

from rankgate.metrics.context import EvalContext, QueryView
from rankgate.metrics.ranking import REL, _rel
from rankgate.metrics.registry import MetricDefinition, register
from rankgate.metrics.spec import Metric

INFAP_EPSILON = 0.00001  # trec_eval.h: keeps infAP's ratio defined before any judged item


def _before(ctx: EvalContext, mask: np.ndarray) -> np.ndarray:
    """Per row: how many rows of the same query, ranked above it, satisfy ``mask``."""
    upto = np.cumsum(mask, dtype=np.int64)  # inclusive count over all rows
    start = np.concatenate(([0], upto))[ctx.offsets[:-1]]  # count before each query's first row
    return upto - mask - np.repeat(start, np.diff(ctx.offsets))


@register
class Bpref(MetricDefinition):
    unit = "score"
    name = "bpref"
    params = {"rel": REL}
    cutoff = "optional"
    summary = "Binary preference: how often relevant items come before judged non-relevant ones; unjudged items are skipped."
    formula = (
        "bpref = (1/R) Σ_{d ∈ G retrieved} (1 − min(n_d, R) / min(N, R)), n_d = judged non-relevant items "
        "ranked above d (a term is 1 when n_d = 0); R = relevant judged (grade >= rel), N = judged non-relevant (0 <= grade < rel) "
        "(Buckley & Voorhees 2004; trec_eval bpref)"
    )
    trec_name = "bpref"

    def compute(self, ctx: EvalContext, metric: Metric, k: np.ndarray) -> np.ndarray:
        ctx = ctx.cut(k)  # nothing past k is read
        rel = _rel(metric)
        grade = ctx.grade
        with np.errstate(invalid="ignore"):
            nonrel = (grade >= 0) & (grade < rel)
        seen = _before(ctx, nonrel)
        rows, query, place = ctx.hits(ctx.is_rel(rel) & ctx.within(k))
        R = ctx.num_rel(rel)
        N = ctx.num_rel(0) - R
        n_d = seen[rows]
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.minimum(n_d, R[query]).astype(np.float64) / np.minimum(N, R)[query].astype(np.float64)
        terms = np.where(n_d > 0, 1.0 - share, 1.0)
        total = ctx.sparse_sum(terms, query, place)
        with np.errstate(invalid="ignore", divide="ignore"):
            return ctx.finish(np.where(R > 0, total / np.maximum(R, 1), total), metric)

    def reference(self, q: QueryView, metric: Metric, k: int | None) -> float:
        rel = _rel(metric)
        R = sum(1 for g in q.judgements.values() if g >= rel)
        N = sum(1 for g in q.judgements.values() if 0 <= g < rel)
        total, nonrel = 0.0, 0
        for d in q.top(k):
            g = q.judgements.get(d)
            if g is None or g < 0:
                continue
            if g < rel:
                nonrel += 1
            else:
                total += 1.0 - min(nonrel, R) / min(N, R) if nonrel > 0 else 1.0
        return total / R if R else total


@register
class InfAP(MetricDefinition):
    unit = "score"
    name = "infap"
    aliases = ("infAP", "inf_ap")
    params = {"rel": REL}
    cutoff = "optional"
    summary = "Inferred average precision: AP estimated from a random sample of judgements (grade < 0: pooled, not judged)."
    formula = (
        "infap = (1/R) Σ_{d ∈ G retrieved, rank i} E[P@i], E[P@1] = 1, else E[P@i] = 1/i + ((i−1)/i) · (p/(i−1)) "
        "· (r + ε)/(r + n + 2ε); r, n, p = relevant, judged non-relevant, judged or pooled-unjudged items above d; "
        "ε = 1e-5 (Yilmaz & Aslam 2006; trec_eval infAP)"
    )
    trec_name = "infAP"

    def compute(self, ctx: EvalContext, metric: Metric, k: np.ndarray) -> np.ndarray:
        ctx = ctx.cut(k)  # nothing past k is read
        rel = _rel(metric)
        grade = ctx.grade
        is_rel = ctx.is_rel(rel)
        with np.errstate(invalid="ignore"):
            nonrel = (grade >= 0) & (grade < rel)
            unjudged = grade < 0
        rows, query, place = ctx.hits(is_rel & ctx.within(k))
        r = (place - 1).astype(np.float64)  # relevant above d: the hits before it
        n = _before(ctx, nonrel)[rows]
        u = _before(ctx, unjudged)[rows]
        # As trec_eval writes it: j = rank - 1; the integer sums are exact, then each operation in its order.
        j = (ctx.rank[rows] - 1).astype(np.float64)
        pooled = (place - 1 + n + u).astype(np.float64)
        judged = (place - 1 + n).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            later = 1.0 / (j + 1.0) + (j / (j + 1.0)) * (pooled / j) * ((r + INFAP_EPSILON) / (judged + 2 * INFAP_EPSILON))
        terms = np.where(j == 0, 1.0, later)
        total = ctx.sparse_sum(terms, query, place)
        R = ctx.num_rel(rel)
        with np.errstate(invalid="ignore", divide="ignore"):
            return ctx.finish(np.where(R > 0, total / np.maximum(R, 1), total), metric)

    def reference(self, q: QueryView, metric: Metric, k: int | None) -> float:
        rel = _rel(metric)
        R = sum(1 for g in q.judgements.values() if g >= rel)
        total, r, n, u = 0.0, 0, 0, 0
        for i, d in enumerate(q.top(k), start=1):
            g = q.judgements.get(d)
            if g is None:
                continue
            if g < 0:
                u += 1
            elif g < rel:
                n += 1
            else:
                if i == 1:
                    total += 1.0
                else:
                    above = i - 1
                    total += 1 / i + (above / i) * ((r + n + u) / above) * ((r + INFAP_EPSILON) / (r + n + 2 * INFAP_EPSILON))
                r += 1
        return total / R if R else total
