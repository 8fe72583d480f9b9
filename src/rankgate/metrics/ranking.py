"""Ranking metrics over graded judgements: hit, recall, precision, mrr, ndcg, map, rprec, wrecall, judged.

Notation: ``D_k`` is the top k of the ranking (the ranking rule of :mod:`rankgate.model.ranking`),
``G`` the relevant set (judged grade >= ``rel``, default 1), ``g(d)`` the judged grade of ``d``.
Unjudged items are not relevant. Where a name matches a trec_eval measure the value equals
trec_eval v10's (tested against its own test suite and pytrec_eval).
"""

from __future__ import annotations

import math
from typing import cast

import numpy as np

from rankgate.metrics.context import EvalContext, QueryView
from rankgate.metrics.registry import MetricDefinition, Param, register
from rankgate.metrics.spec import Metric

REL = Param("rel", int, 1, minimum=1, help="minimum grade that counts as relevant")
GAIN = Param("gain", str, "linear", choices=("linear", "exp"), help="gain of a grade g: g, or 2^g - 1")


def _rel(metric: Metric) -> int:
    return int(metric.param("rel"))


@register
class Hit(MetricDefinition):
    name = "hit"
    aliases = ("success", "hit_rate", "hitrate")
    params = {"rel": REL}
    summary = "1 if any relevant item is in the top k, else 0."
    formula = "hit@k = 1[|D_k ∩ G| > 0]  (trec_eval success_k; some texts call this 'recall@k')"
    trec_name = "success_{k}"

    def compute(self, ctx: EvalContext, metric: Metric, k: np.ndarray) -> np.ndarray:
        ctx = ctx.cut(k)  # nothing past k is read
        found = ctx.seg_sum(ctx.is_rel(_rel(metric)) & ctx.within(k))
        return ctx.finish((found > 0).astype(np.float64), metric)

    def reference(self, q: QueryView, metric: Metric, k: int | None) -> float:
        G = q.relevant(_rel(metric))
        return 1.0 if any(d in G for d in q.top(k)) else 0.0


@register
class Recall(MetricDefinition):
    name = "recall"
    aliases = ("r",)
    params = {"rel": REL}
    summary = "Share of the relevant items found in the top k."
    formula = "recall@k = |D_k ∩ G| / |G|  (trec_eval recall_k)"
    trec_name = "recall_{k}"

    def compute(self, ctx: EvalContext, metric: Metric, k: np.ndarray) -> np.ndarray:
        rel = _rel(metric)

        def relevant_rows() -> tuple[np.ndarray, np.ndarray]:
            rows, query, _ = ctx.hits(ctx.is_rel(rel))
            return query, ctx.rank[rows]

        query, _ = ctx.hits_within(("relevant_rows", rel), relevant_rows, k)  # nothing past k is read
        found = np.bincount(query, minlength=ctx.nq).astype(np.int64)
        n = ctx.num_rel(rel)
        with np.errstate(invalid="ignore", divide="ignore"):
            return ctx.finish(np.where(n > 0, found / np.maximum(n, 1), 0.0), metric)

    def reference(self, q: QueryView, metric: Metric, k: int | None) -> float:
        G = q.relevant(_rel(metric))
        return sum(1 for d in q.top(k) if d in G) / len(G) if G else 0.0


@register
class Precision(MetricDefinition):
    name = "precision"
    aliases = ("p", "prec")
    params = {"rel": REL}
    summary = "Share of the top k that is relevant; the denominator is k even if fewer were returned."
    formula = "precision@k = |D_k ∩ G| / k  (trec_eval P_k)"
    trec_name = "P_{k}"

    def compute(self, ctx: EvalContext, metric: Metric, k: np.ndarray) -> np.ndarray:
        ctx = ctx.cut(k)  # nothing past k is read
        found = ctx.seg_sum(ctx.is_rel(_rel(metric)) & ctx.within(k))
        return ctx.finish(found / k, metric)

    def reference(self, q: QueryView, metric: Metric, k: int | None) -> float:
        assert k is not None
        G = q.relevant(_rel(metric))
        return sum(1 for d in q.top(k) if d in G) / k


@register
class MRR(MetricDefinition):
    unit = "score"
    name = "mrr"
    aliases = ("recip_rank", "rr", "reciprocal_rank")
    params = {"rel": REL}
    cutoff = "optional"
    summary = "Reciprocal rank of the first relevant item (0 if none within k)."
    formula = "mrr@k = 1 / min{i <= k : d_i ∈ G}  (trec_eval recip_rank has no cutoff)"
    trec_name = "recip_rank"

    def compute(self, ctx: EvalContext, metric: Metric, k: np.ndarray) -> np.ndarray:
        ctx = ctx.cut(k)  # nothing past k is read
        big = np.iinfo(np.int64).max
        ranks = np.where(ctx.is_rel(_rel(metric)) & ctx.within(k), ctx.rank, big)
        first = ctx.seg_min(ranks, big)
        return ctx.finish(np.where(first < big, 1.0 / np.minimum(first, big - 1), 0.0), metric)

    def reference(self, q: QueryView, metric: Metric, k: int | None) -> float:
        G = q.relevant(_rel(metric))
        for i, d in enumerate(q.top(k), start=1):
            if d in G:
                return 1.0 / i
        return 0.0


IDEAL_BY_COUNTS_MAX_GRADE = 64
"""nDCG's ideal lists are built from per-grade counts when grades are integers up to this (else sorted)."""


def _gain(grades: np.ndarray, kind: str) -> np.ndarray:
    g = np.where(np.isnan(grades), 0.0, grades) if grades.dtype.kind == "f" else grades.astype(np.float64)
    g = np.maximum(g, 0.0)  # negative grades (judged not relevant) gain nothing, as trec_eval
    return np.exp2(g) - 1.0 if kind == "exp" else g


def _distinct_rows(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(counts, axis=0, return_inverse=True)`` for a 2-D array of non-negative integers:
    the distinct rows in lexicographic order and, per row, the index of its distinct row. Each row is
    read as one number with its columns as digits in base max + 1 (the first column leading, so the
    numbers order as the rows do); distinct numbers are marked in a table when they are few, else
    sorted. The general unique (a sort of rows as opaque records) when the numbers would not fit."""
    n, w = counts.shape
    base = int(counts.max()) + 1 if counts.size else 1
    if n == 0 or w == 0 or int(counts.min()) < 0 or base**w >= 2**62:
        rows, inverse = np.unique(counts, axis=0, return_inverse=True)
        return rows, inverse.reshape(-1)
    key = counts[:, 0].astype(np.int64)
    for j in range(1, w):
        key *= base
        key += counts[:, j]
    top = int(key.max())
    if top <= 4 * n + 65536:  # a table of the possible numbers, no sort
        present = np.zeros(top + 1, dtype=bool)
        present[key] = True
        keys = np.flatnonzero(present)
        inverse = (np.cumsum(present) - 1)[key]
    else:
        keys, inverse = np.unique(key, return_inverse=True)
    rows = np.empty((keys.size, w), dtype=counts.dtype)
    rest = keys.copy()
    for j in range(w - 1, -1, -1):  # the digits back, last column first
        rows[:, j] = rest % base
        rest //= base
    return rows, inverse.reshape(-1).astype(np.int64)


def _ideal_sums(at_least: np.ndarray, depth: np.ndarray, gain_of: np.ndarray) -> np.ndarray:
    """IDCG of each row of per-grade counts (``at_least[:, g - 1]``: judgements of grade >= g), cut at
    ``depth``: place by place, each gain divided by log2(place + 1) and added in place order."""
    out = np.zeros(at_least.shape[0])
    places = int(depth.max()) if depth.size else 0
    logs = _log2(np.arange(places + 2))
    for place in range(1, places + 1):
        active = np.flatnonzero(depth >= place)
        grade = (at_least[active] >= place).sum(axis=1)  # the grade at this place
        out[active] += gain_of[grade] / logs[place + 1]
    return out


def _log2(x: np.ndarray) -> np.ndarray:
    """log2 of positive integers with the C library's log2 (as trec_eval), one call per distinct value."""
    if x.size == 0:
        return np.zeros(0)
    top = int(x.max())
    if top <= 4 * x.size + 1024:  # ranks: a table up to the largest is cheaper than finding distinct ones
        return np.array([math.log2(v) if v > 0 else math.nan for v in range(top + 1)])[x]
    values, inverse = np.unique(x, return_inverse=True)
    return np.array([math.log2(v) for v in values.tolist()])[inverse]


def _gain1(grade: int, kind: str) -> float:
    g = max(grade, 0)
    return float(2**g - 1) if kind == "exp" else float(g)


@register
class NDCG(MetricDefinition):
    unit = "score"
    name = "ndcg"
    aliases = ("ndcg_cut",)
    params = {"gain": GAIN}
    cutoff = "optional"
    summary = "Discounted cumulative gain of the top k over that of the ideal ranking of all judged items."
    formula = (
        "ndcg@k = DCG@k / IDCG@k, DCG@k = Σ_{i<=k} gain(g(d_i)) / log2(i+1); IDCG from all judged grades > 0 "
        "sorted descending, cut at k; gain linear g or exp 2^g-1; negative and unjudged gain 0 "
        "(trec_eval ndcg_cut_k; bare ndcg = trec_eval ndcg)"
    )
    trec_name = "ndcg_cut_{k}"

    def compute(self, ctx: EvalContext, metric: Metric, k: np.ndarray) -> np.ndarray:
        # As trec_eval computes it, operation for operation: each item with a gain adds
        # gain / log2(rank + 1), in rank order; the ideal list likewise. Only items with a gain add
        # anything, so the sums run over those rows alone.
        kind = metric.param("gain")

        def gain_rows() -> tuple[np.ndarray, ...]:
            grade = ctx.grade
            candidates = np.flatnonzero(grade > 0)  # only a positive grade gains (NaN: unjudged)
            gain = _gain(grade[candidates], kind)  # the gains of the few judged rows, not of every row
            mask = np.zeros(grade.size, dtype=bool)
            mask[candidates[gain > 0]] = True
            rows, query, place = ctx.hits(mask)  # (rows ascending, as candidates)
            rank = ctx.rank[rows]
            return query, rank, place, gain[gain > 0] / _log2(rank + 1)

        query, _, place, terms = ctx.hits_within(("gain_rows", kind), gain_rows, k)  # nothing past k is read
        dcg = ctx.sparse_sum(terms, query, place)
        idcg = self._ideal(ctx, kind, k)
        with np.errstate(invalid="ignore", divide="ignore"):
            return ctx.finish(np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1.0), 0.0), metric)

    @staticmethod
    def _ideal(ctx: EvalContext, kind: str, k: np.ndarray) -> np.ndarray:
        """IDCG of each query: its positive gains in descending order, cut at k, each divided by
        log2(place + 1) and added in place order."""
        grades = ctx.judged_grade
        high = int(grades.max()) if grades.size else 0
        if 1 <= high <= IDEAL_BY_COUNTS_MAX_GRADE and grades.dtype.kind in "iu":
            # Few grade levels: the ideal list of a query is its judgements counted per grade, so
            # it is built place by place over all queries at once (no sort), up to the deepest place
            # any query reaches. The same terms are added in the same order as below.
            key = ("ideal_counts", kind)
            if key not in ctx.cache:
                positive = grades > 0
                q = np.repeat(np.arange(ctx.nq, dtype=np.int64), np.diff(ctx.judged_offsets))[positive]
                table = np.bincount(q * (high + 1) + grades[positive], minlength=ctx.nq * (high + 1))
                # at_least[:, g - 1]: how many judgements of the query have grade >= g, g = 1..high
                at_least = np.cumsum(table.reshape(ctx.nq, high + 1)[:, :0:-1], axis=1)[:, ::-1]
                ctx.cache[key] = (np.ascontiguousarray(at_least), _gain(np.arange(high + 1), kind))
            at_least, gain_of = ctx.cache[key]
            depth = np.minimum(at_least[:, 0], k) if ctx.nq else np.zeros(0, dtype=np.int64)
            places = int(depth.max()) if depth.size else 0
            if places * ctx.nq <= 8 * grades.size + 4096:
                if k.size and bool((k == k[0]).all()):
                    # One cutoff for all: a query's ideal sum depends only on its counts per grade, so
                    # it is added up once per distinct row of counts (the same chain of additions)
                    # and handed to every query with that row. A k-sweep asks for it at every k.
                    pkey = ("ideal_profiles", kind)
                    if pkey not in ctx.cache:
                        rows, inverse = _distinct_rows(at_least)
                        ctx.cache[pkey] = (np.ascontiguousarray(rows), inverse.reshape(-1))
                    rows, inverse = ctx.cache[pkey]
                    return _ideal_sums(rows, np.minimum(rows[:, 0], k[0]), gain_of)[inverse]
                return _ideal_sums(at_least, depth, gain_of)
        key = ("ideal_sorted", kind)
        if key not in ctx.cache:
            off = ctx.judged_offsets
            q = np.repeat(np.arange(ctx.nq, dtype=np.int64), np.diff(off))
            grades = ctx.judged_grade
            low, high = (int(grades.min()), int(grades.max())) if grades.size else (0, 0)
            span = high - low + 1
            if grades.size and span * (ctx.nq + 1) < 2**62:
                # Integer grades: sort (query, grade descending) as one integer key, no argsort.
                packed = np.sort(q * span + (high - grades))
                q = packed // span
                gains = _gain(high - (packed - q * span), kind)
            else:
                gains = _gain(grades, kind)
                gains = gains[np.lexsort((-gains, q))]  # by query, gain descending
            pos = np.arange(gains.size, dtype=np.int64) - np.repeat(off[:-1], np.diff(off)) + 1
            ctx.cache[key] = (gains, pos, q)
        gains, pos, q = ctx.cache[key]
        keep = (gains > 0) & (pos <= (k[q] if gains.size else pos))  # positive gains come first
        return ctx.sparse_sum(gains[keep] / _log2(pos[keep] + 1), q[keep], pos[keep])

    def reference(self, q: QueryView, metric: Metric, k: int | None) -> float:
        kind = metric.param("gain")
        top = q.top(k)
        dcg = sum(_gain1(q.judgements.get(d, 0), kind) / math.log2(i + 1) for i, d in enumerate(top, 1))
        ideal = sorted((_gain1(g, kind) for g in q.judgements.values()), reverse=True)
        ideal = ideal if k is None else ideal[:k]
        idcg = sum(g / math.log2(i + 1) for i, g in enumerate(ideal, 1))
        return dcg / idcg if idcg > 0 else 0.0


@register
class MAP(MetricDefinition):
    unit = "score"
    name = "map"
    aliases = ("ap", "map_cut")
    params = {"rel": REL}
    cutoff = "optional"
    summary = "Average precision: precision at each relevant item's rank within k, summed, over |G|."
    formula = "map@k = Σ_{i<=k, d_i ∈ G} P@i / |G|  (trec_eval map_cut_k; bare map = trec_eval map)"
    trec_name = "map_cut_{k}"

    def compute(self, ctx: EvalContext, metric: Metric, k: np.ndarray) -> np.ndarray:
        ctx = ctx.cut(k)  # nothing past k is read
        rel = _rel(metric)
        # Only relevant rows add to the sum: the i-th relevant item of a query, at rank r, adds i / r.
        rows, query, found = ctx.hits(ctx.is_rel(rel) & ctx.within(k))
        total = ctx.sparse_sum(found / ctx.rank[rows], query, found)
        n = ctx.num_rel(rel)
        with np.errstate(invalid="ignore", divide="ignore"):
            return ctx.finish(np.where(n > 0, total / np.maximum(n, 1), 0.0), metric)

    def reference(self, q: QueryView, metric: Metric, k: int | None) -> float:
        G = q.relevant(_rel(metric))
        if not G:
            return 0.0
        found, total = 0, 0.0
        for i, d in enumerate(q.top(k), start=1):
            if d in G:
                found += 1
                total += found / i
        return total / len(G)


@register
class RPrec(MetricDefinition):
    name = "rprec"
    aliases = ("r_prec", "r-precision")
    params = {"rel": REL}
    cutoff = "never"
    summary = "Precision at rank |G| (the number of relevant items)."
    formula = "rprec = |D_|G| ∩ G| / |G|  (trec_eval Rprec)"
    trec_name = "Rprec"

    def compute(self, ctx: EvalContext, metric: Metric, k: np.ndarray) -> np.ndarray:
        ctx = ctx.cut(k)  # nothing past k is read
        rel = _rel(metric)
        n = ctx.num_rel(rel)
        found = ctx.seg_sum(ctx.is_rel(rel) & ctx.within(n))
        with np.errstate(invalid="ignore", divide="ignore"):
            return ctx.finish(np.where(n > 0, found / np.maximum(n, 1), 0.0), metric)

    def reference(self, q: QueryView, metric: Metric, k: int | None) -> float:
        G = q.relevant(_rel(metric))
        return sum(1 for d in q.top(len(G)) if d in G) / len(G) if G else 0.0


@register
class WRecall(MetricDefinition):
    name = "wrecall"
    aliases = ("graded_recall",)
    params = {"rel": REL}
    summary = "Graded recall: the grades of the relevant items found in the top k over all relevant grades."
    formula = "wrecall@k = Σ_{d ∈ D_k ∩ G} g(d) / Σ_{d ∈ G} g(d)"

    def compute(self, ctx: EvalContext, metric: Metric, k: np.ndarray) -> np.ndarray:
        ctx = ctx.cut(k)  # nothing past k is read
        rel = _rel(metric)
        got = ctx.seg_sum(np.where(ctx.is_rel(rel) & ctx.within(k), ctx.grade, 0.0))
        total = ctx.rel_gain_total(rel)
        with np.errstate(invalid="ignore", divide="ignore"):
            return ctx.finish(np.where(total > 0, got / np.maximum(total, 1), 0.0), metric)

    def reference(self, q: QueryView, metric: Metric, k: int | None) -> float:
        rel = _rel(metric)
        total = sum(g for g in q.judgements.values() if g >= rel)
        got = sum(q.judgements[d] for d in q.top(k) if q.judgements.get(d, -(10**9)) >= rel)
        return got / total if total else 0.0


@register
class Judged(MetricDefinition):
    name = "judged"
    applies = "all"
    summary = "Share of the top k that has a judgement (any grade); a short ranking counts its empty slots as unjudged."
    formula = "judged@k = |{d ∈ D_k : d judged}| / k  (as ir_measures Judged@k; trec_eval unj_k counts the rest)"

    def compute(self, ctx: EvalContext, metric: Metric, k: np.ndarray) -> np.ndarray:
        ctx = ctx.cut(k)  # nothing past k is read
        judged = ctx.seg_sum(~np.isnan(ctx.grade) & ctx.within(k))
        return ctx.finish(judged / k, metric)

    def reference(self, q: QueryView, metric: Metric, k: int | None) -> float:
        assert k is not None
        return sum(1 for d in q.top(k) if d in q.judgements) / k


# The registered definitions themselves (``register`` made each class above its instance): a plug-in
# that registers its own ndcg is not taken for this one.
_COMPILED_KINDS: dict[MetricDefinition, int] = {
    cast(MetricDefinition, d): i for i, d in enumerate((Hit, Recall, Precision, MRR, NDCG, MAP))
}
COMPILED_MAX_GRADE = 1 << 16
"""The compiled pass takes gold sets whose grades are integers up to this (its gain table's size)."""


def compiled_values(ctx: EvalContext, metrics: list[Metric]) -> dict[str, np.ndarray]:
    """hit, recall, precision, mrr, ndcg and map, in one compiled pass over the item codes of the ranked
    rows (``ctx.codes``) rather than through the grade of every row: the same values, bit for bit, as
    each metric's ``compute`` (the kernel makes the same IEEE operations in the same order, with the
    same log2 and gain tables; the tests compare the two). Also puts each query's first relevant rank in
    ``ctx.cache["first_relevant"]``. Empty when the kernels are not compiled, the codes are gone, the
    grades are not integers of at most :data:`COMPILED_MAX_GRADE`, or none of the metrics is one of
    these six."""
    from rankgate._native import kernels

    chosen = [m for m in dict.fromkeys(metrics) if m.definition in _COMPILED_KINDS]
    codes = ctx.codes
    grades = ctx.judged_grade
    if kernels is None or codes is None or codes.rows is None or not chosen or grades.dtype != np.int64:
        return {}
    top = max(int(grades.max()) if grades.size else 0, 0)
    if top > COMPILED_MAX_GRADE:
        return {}
    nq = ctx.nq
    i64 = np.ascontiguousarray
    lengths = np.diff(ctx.offsets)
    longest = max(int(lengths.max()) if nq else 0, int(np.diff(ctx.judged_offsets).max()) if nq else 0)
    logs = _log2(np.arange(longest + 2))
    specs = np.array([[_COMPILED_KINDS[m.definition], _rel(m) if "rel" in m.definition.params else 1,
                       1 if "gain" in m.definition.params and m.param("gain") == "exp" else 0] for m in chosen],
                     dtype=np.int64)
    grade_range = np.arange(top + 1)
    # (the exp row only when a metric reads it: a large grade is fine for linear gain alone)
    exp = _gain(grade_range, "exp") if bool(specs[:, 2].any()) else np.zeros(top + 1)
    gain_of = np.concatenate([_gain(grade_range, "linear"), exp])
    ks = np.stack([ctx.k_for(m) for m in chosen]).astype(np.int64)
    out = np.empty((len(chosen), nq))
    first = np.empty(nq, dtype=np.int64)
    kernels.rank_metrics(i64(ctx.offsets, dtype=np.int64), i64(codes.rows, dtype=np.int64),
                         i64(ctx.judged_offsets, dtype=np.int64), i64(codes.judged, dtype=np.int64), i64(grades),
                         logs, gain_of, specs, ks, out, first)
    ctx.cache["first_relevant"] = first
    return {str(m): ctx.finish(out[i], m) for i, m in enumerate(chosen)}
