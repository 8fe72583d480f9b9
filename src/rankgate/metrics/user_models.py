"""Measures of a user reading down the ranking: rbp (rank-biased precision) and err (expected reciprocal rank).

Both discount an item by the chance that the user reaches it, instead of cutting at k; ``@k`` still
stops the reading at k. Unjudged items and negative grades gain nothing.

* **rbp** (Moffat & Zobel 2008): the user reads the next item with probability ``p`` (persistence),
  so ``rbp = (1 − p) Σ_i p^(i−1) · gain(d_i)``. With the default ``rel=0`` the gain is graded as
  trec_eval v10's ``rbp`` computes it: ``g / G_q`` where ``G_q`` is the query's highest judged grade
  when that is above 1, else ``g`` (binary judgements give 0 or 1); ``rel=r >= 1`` makes it binary,
  gain 1 when ``g >= r``. Default ``p = 0.9`` as trec_eval (``-m rbp.p=0.8`` there is
  ``rbp(p=0.8)`` here). Equal to trec_eval v10's per-query values bit for bit. (Its ``m_rbp.c``
  leaves the running min and max of the gains uninitialised before normalising; built as its
  Makefile builds it, it behaves as if they started at 0, which is the rule above: the tests
  compare with that build on every case.)
* **err** (Chapelle, Metzler, Zhang & Grinspan 2009, cascade model): the user stops at item ``i``
  with probability ``R_i = (2^g − 1) / 2^g_max`` (0 for grades <= 0 and unjudged items), so
  ``err = Σ_i (1/i) R_i Π_{j<i} (1 − R_j)``. ``g_max`` is ``max_grade`` when given (grades above it
  count as ``max_grade``), else the highest grade in the whole gold set, the same for every query.
  trec_eval has no err; values are tested against the paper's definition computed by hand, and
  ``err(max_grade=4)@k`` against gdeval's ERR@k (the TREC Web track's tool, which fixes g_max at 4).
"""

from __future__ import annotations

import numpy as np

from rankgate.metrics.context import EvalContext, QueryView
from rankgate.metrics.registry import MetricDefinition, Param, register
from rankgate.metrics.spec import Metric

PERSISTENCE = Param("p", float, 0.9, minimum=0.0, maximum=1.0, exclusive=True,
                    help="persistence: the chance of reading the next item (0 < p < 1)")
RBP_REL = Param("rel", int, 0, minimum=0,
                help="0: graded gain g / highest grade of the query (trec_eval rbp); r >= 1: binary, grade >= r")
MAX_GRADE = Param("max_grade", int, 0, minimum=0,
                  help="grade of a perfect item; 0: the highest grade in the gold set")


def _powers(p: float, top: int) -> np.ndarray:
    """p^0, p^1, … p^top by repeated multiplication, as trec_eval computes them (not pow)."""
    out = np.empty(top + 1)
    out[0] = 1.0
    if top:
        out[1:] = p
        np.multiply.accumulate(out, out=out)
    return out


def _query_max_grade(ctx: EvalContext) -> np.ndarray:
    key = ("max_grade",)
    if key not in ctx.cache:
        g = ctx.judged_grade
        out = np.zeros(ctx.nq, dtype=np.int64)
        starts = ctx.judged_offsets[:-1]
        nonempty = ctx.judged_offsets[1:] > starts
        if g.size:
            out[nonempty] = np.maximum.reduceat(g, starts[nonempty])
        ctx.cache[key] = out
    return ctx.cache[key]


@register
class RBP(MetricDefinition):
    unit = "score"
    name = "rbp"
    aliases = ("rank_biased_precision",)
    params = {"p": PERSISTENCE, "rel": RBP_REL}
    cutoff = "optional"
    summary = "Rank-biased precision: gain a patient user collects reading down with persistence p."
    formula = (
        "rbp = (1−p) Σ_i p^(i−1) gain(d_i); rel=0: gain = g / G_q if G_q > 1 else g (G_q: the query's highest "
        "judged grade), rel=r: gain = 1[g >= r]; negative and unjudged gain 0 (Moffat & Zobel 2008; trec_eval rbp)"
    )
    trec_name = "rbp"

    def compute(self, ctx: EvalContext, metric: Metric, k: np.ndarray) -> np.ndarray:
        ctx = ctx.cut(k)  # nothing past k is read
        p = float(metric.param("p"))
        rel = int(metric.param("rel"))
        grade = ctx.grade
        if rel >= 1:
            gain = ctx.is_rel(rel).astype(np.float64)
        else:
            top = _query_max_grade(ctx)[ctx.qrow].astype(np.float64)
            g = np.where(np.isnan(grade), 0.0, np.maximum(grade, 0.0))
            with np.errstate(invalid="ignore", divide="ignore"):
                gain = np.where(top > 1, g / top, g)
        rows, query, place = ctx.hits((gain > 0) & ctx.within(k))
        rank = ctx.rank[rows]
        powers = _powers(p, int(rank.max()) - 1 if rank.size else 0)
        total = ctx.sparse_sum(gain[rows] * powers[rank - 1], query, place)
        return ctx.finish((1.0 - p) * total, metric)

    def reference(self, q: QueryView, metric: Metric, k: int | None) -> float:
        p = float(metric.param("p"))
        rel = int(metric.param("rel"))
        top = max(q.judgements.values(), default=0)
        total, reach = 0.0, 1.0
        for d in q.top(k):
            g = max(q.judgements.get(d, 0), 0)
            gain = (1.0 if g >= rel else 0.0) if rel >= 1 else (g / top if top > 1 else float(g))
            total += gain * reach
            reach *= p
        return (1.0 - p) * total


@register
class ERR(MetricDefinition):
    unit = "score"
    name = "err"
    aliases = ("expected_reciprocal_rank",)
    params = {"max_grade": MAX_GRADE}
    cutoff = "optional"
    summary = "Expected reciprocal rank: 1 / the rank where a user scanning down stops, satisfied with probability R(grade)."
    formula = (
        "err@k = Σ_{i<=k} (1/i) R_i Π_{j<i} (1 − R_j), R = (2^g − 1) / 2^g_max for g > 0 else 0; g_max = max_grade, "
        "else the gold set's highest grade; grades above g_max count as g_max (Chapelle et al. 2009)"
    )

    def compute(self, ctx: EvalContext, metric: Metric, k: np.ndarray) -> np.ndarray:
        top = self._max_grade(ctx, metric)
        ctx = ctx.cut(k)  # nothing past k is read
        g = np.where(np.isnan(ctx.grade), 0.0, np.clip(ctx.grade, 0.0, float(top)))
        stop = (np.exp2(g) - 1.0) / 2.0 ** top
        rows, query, place = ctx.hits((stop > 0) & ctx.within(k))
        out = np.zeros(ctx.nq)
        if rows.size == 0:
            return ctx.finish(out, metric)
        chance = stop[rows]
        rank = ctx.rank[rows].astype(np.float64)
        reach = np.ones(ctx.nq)  # chance that the user is still reading, per query
        order = np.argsort(place, kind="stable")
        bounds = np.searchsorted(place[order], np.arange(1, int(place.max()) + 2))
        for i in range(bounds.size - 1):  # one vector step per place: each query's terms in rank order
            at = order[bounds[i]:bounds[i + 1]]
            qs = query[at]
            out[qs] += reach[qs] * chance[at] / rank[at]
            reach[qs] *= 1.0 - chance[at]
        return ctx.finish(out, metric)

    @staticmethod
    def _max_grade(ctx: EvalContext, metric: Metric) -> int:
        given = int(metric.param("max_grade"))
        if given > 0:
            return given
        if ctx.gold_max_grade is not None:
            return max(int(ctx.gold_max_grade), 0)
        return max(int(ctx.judged_grade.max()), 0) if ctx.judged_grade.size else 0

    def reference(self, q: QueryView, metric: Metric, k: int | None) -> float:
        top = int(metric.param("max_grade")) or (q.gold_max_grade if q.gold_max_grade is not None else max(q.judgements.values(), default=0))
        top = max(top, 0)
        total, reach = 0.0, 1.0
        for i, d in enumerate(q.top(k), start=1):
            g = min(max(q.judgements.get(d, 0), 0), top)
            chance = (2**g - 1) / 2**top
            total += reach * chance / i
            reach *= 1.0 - chance
        return total

