"""RAG-specific metrics: what else came back besides the right chunk.

forbidden, fresh, containment, coverage_entities, distinct_docs, redundancy, novelty and
false_evidence read item fields (chunk text, document version) and per-query gold fields
(``must_not_retrieve``, ``as_of``, ``expected_answer``, ``entities``). A metric whose inputs are
absent for a query is NaN (not applicable) for that query, so ``n`` in the summary says how many
queries it really covers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from rankgate.metrics.context import EvalContext, QueryView
from rankgate.metrics.registry import MetricDefinition, Param, register
from rankgate.metrics.spec import Metric

_WORD = re.compile(r"\w+", re.UNICODE)


def normalise(text: str) -> str:
    """Case-folded, whitespace-collapsed text for containment checks."""
    return " ".join(text.casefold().split())


def tokens(text: str) -> set[str]:
    return set(_WORD.findall(text.casefold()))


def _per_query(ctx: EvalContext, k: np.ndarray, fn: Callable[[int, range], float]) -> np.ndarray:
    """Apply ``fn(query_index, rows_in_top_k)`` to each query (NaN where fn says so)."""
    out = np.empty(ctx.nq)
    off = ctx.offsets
    for i in range(ctx.nq):
        start = int(off[i])
        stop = min(int(off[i + 1]), start + int(k[i]))
        out[i] = fn(i, range(start, stop))
    return out


def _field(ctx: EvalContext, name: str) -> list[Any]:
    return ctx.queries.get(name) or [None] * ctx.nq


@register
class Forbidden(MetricDefinition):
    name = "forbidden"
    aliases = ("must_not_retrieve",)
    applies = "all"
    higher_is_better = False
    summary = "1 if any must_not_retrieve id of the query is in the top k; the mean is the violation rate."
    formula = "forbidden@k = 1[D_k ∩ F ≠ ∅], F = must_not_retrieve (NaN for queries without F; gate it with max: 0)"

    def compute(self, ctx: EvalContext, metric: Metric, k: np.ndarray) -> np.ndarray:
        forbidden = _field(ctx, "must_not_retrieve")
        docs = ctx.doc_ids() if any(forbidden) else []

        def one(i: int, rows: range) -> float:
            f = forbidden[i]
            if not f:
                return math.nan
            fs = set(f)
            return 1.0 if any(docs[r] in fs for r in rows) else 0.0

        return ctx.finish(_per_query(ctx, k, one), metric)

    def reference(self, q: QueryView, metric: Metric, k: int | None) -> float:
        if not q.must_not_retrieve:
            return math.nan
        return 1.0 if set(q.top(k)) & set(q.must_not_retrieve) else 0.0


@register
class Fresh(MetricDefinition):
    name = "fresh"
    aliases = ("freshness",)
    applies = "all"
    needs = frozenset({"doc_version"})
    summary = "Share of the top-k items (those with a doc_version) whose version is not newer than the query's as_of."
    formula = (
        "fresh@k = |{d ∈ D_k : version(d) <= as_of}| / |{d ∈ D_k : version(d) known}|, ISO dates compared as text "
        "(NaN without as_of or versions)"
    )

    def compute(self, ctx: EvalContext, metric: Metric, k: np.ndarray) -> np.ndarray:
        as_of = _field(ctx, "as_of")
        if not ctx.has_item("doc_version") or not any(as_of):
            return np.full(ctx.nq, np.nan)
        versions = ctx.item("doc_version")

        def one(i: int, rows: range) -> float:
            if not as_of[i]:
                return math.nan
            known = [versions[r] for r in rows if versions[r]]
            return sum(1 for v in known if str(v) <= as_of[i]) / len(known) if known else math.nan

        return ctx.finish(_per_query(ctx, k, one), metric)

    def reference(self, q: QueryView, metric: Metric, k: int | None) -> float:
        if not q.as_of or q.doc_versions is None:
            return math.nan
        top = q.doc_versions[: len(q.top(k))]
        known = [v for v in top if v]
        return sum(1 for v in known if str(v) <= q.as_of) / len(known) if known else math.nan


@register
class Containment(MetricDefinition):
    name = "containment"
    aliases = ("answer_containment",)
    applies = "all"
    needs = frozenset({"text"})
    summary = "1 if the query's expected_answer appears in the text of some top-k item (case and spacing ignored)."
    formula = "containment@k = 1[∃ d ∈ D_k : norm(expected_answer) ⊂ norm(text(d))] (NaN without expected_answer or text)"

    def compute(self, ctx: EvalContext, metric: Metric, k: np.ndarray) -> np.ndarray:
        answers = _field(ctx, "expected_answer")
        if not ctx.has_item("text") or not any(answers):
            return np.full(ctx.nq, np.nan)
        texts = ctx.item("text")

        def one(i: int, rows: range) -> float:
            if not answers[i]:
                return math.nan
            needle = normalise(str(answers[i]))
            return 1.0 if any(texts[r] and needle in normalise(texts[r]) for r in rows) else 0.0

        return ctx.finish(_per_query(ctx, k, one), metric)

    def reference(self, q: QueryView, metric: Metric, k: int | None) -> float:
        if not q.expected_answer or q.texts is None:
            return math.nan
        needle = normalise(q.expected_answer)
        return 1.0 if any(t and needle in normalise(t) for t in q.texts[: len(q.top(k))]) else 0.0


@register
class CoverageEntities(MetricDefinition):
    name = "coverage_entities"
    aliases = ("entity_coverage",)
    applies = "all"
    needs = frozenset({"text"})
    summary = "Share of the query's entities found in the top-k texts (case and spacing ignored)."
    formula = "coverage_entities@k = |{e ∈ E : e ⊂ text(D_k)}| / |E| (NaN without entities or text)"

    def compute(self, ctx: EvalContext, metric: Metric, k: np.ndarray) -> np.ndarray:
        entities = _field(ctx, "entities")
        if not ctx.has_item("text") or not any(entities):
            return np.full(ctx.nq, np.nan)
        texts = ctx.item("text")

        def one(i: int, rows: range) -> float:
            return _coverage(entities[i], (texts[r] for r in rows))

        return ctx.finish(_per_query(ctx, k, one), metric)

    def reference(self, q: QueryView, metric: Metric, k: int | None) -> float:
        if q.texts is None:
            return math.nan
        return _coverage(q.entities, q.texts[: len(q.top(k))])


def _coverage(entities: list[str] | None, texts: Iterable[str | None]) -> float:
    if not entities:
        return math.nan
    joined = " \n ".join(normalise(t) for t in texts if t)
    return sum(1 for e in entities if normalise(e) in joined) / len(entities)


@register
class DistinctDocs(MetricDefinition):
    name = "distinct_docs"
    aliases = ("distinct",)
    applies = "all"
    unit = "count"
    summary = "Number of distinct parent documents among the top-k chunks."
    formula = "distinct_docs@k = |{doc(d) : d ∈ D_k}| (doc(d): the chunk's parent via the doc separator or mapping)"

    def compute(self, ctx: EvalContext, metric: Metric, k: np.ndarray) -> np.ndarray:
        distinct, _ = ctx.distinct_parents(k)
        return ctx.finish(distinct.astype(np.float64), metric)

    def reference(self, q: QueryView, metric: Metric, k: int | None) -> float:
        return float(len({q.doc_of(d) for d in q.top(k)}))


@register
class Redundancy(MetricDefinition):
    name = "redundancy"
    applies = "all"
    higher_is_better = False
    summary = "Share of the retrieved top k that repeats a parent document already seen; NaN if nothing was retrieved."
    formula = "redundancy@k = 1 - distinct_docs@k / min(k, |ranking|)"

    def compute(self, ctx: EvalContext, metric: Metric, k: np.ndarray) -> np.ndarray:
        distinct, rows = ctx.distinct_parents(k)
        out = np.full(ctx.nq, np.nan)
        some = rows > 0
        out[some] = 1.0 - distinct[some] / rows[some]
        return ctx.finish(out, metric)

    def reference(self, q: QueryView, metric: Metric, k: int | None) -> float:
        top = q.top(k)
        return 1.0 - len({q.doc_of(d) for d in top}) / len(top) if top else math.nan


@register
class Novelty(MetricDefinition):
    name = "novelty"
    params = {"overlap": Param("overlap", float, 0.5, minimum=0.0, help="token overlap at which a chunk counts as repeated")}
    applies = "all"
    needs = frozenset({"text"})
    summary = "Share of the top-k chunks that mostly say something new: their word overlap with every higher-ranked chunk is under the threshold."
    formula = (
        "novelty@k = |{d_i ∈ D_k : max_{j<i} |T_i ∩ T_j| / |T_i| < overlap}| / |D_k|, T = set of words "
        "(NaN without text or with nothing retrieved)"
    )

    def compute(self, ctx: EvalContext, metric: Metric, k: np.ndarray) -> np.ndarray:
        if not ctx.has_item("text"):
            return np.full(ctx.nq, np.nan)
        texts = ctx.item("text")
        threshold = float(metric.param("overlap"))
        return ctx.finish(_per_query(ctx, k, lambda i, rows: _novelty([texts[r] for r in rows], threshold)), metric)

    def reference(self, q: QueryView, metric: Metric, k: int | None) -> float:
        if q.texts is None:
            return math.nan
        return _novelty(q.texts[: len(q.top(k))], float(metric.param("overlap")))


def _novelty(texts: list[str | None], threshold: float) -> float:
    if not texts:
        return math.nan
    seen: list[set[str]] = []
    novel = 0
    for t in texts:
        words = tokens(t or "")
        worst = max((len(words & s) / len(words) for s in seen), default=0.0) if words else 1.0
        novel += worst < threshold
        seen.append(words)
    return novel / len(texts)


@register
class FalseEvidence(MetricDefinition):
    name = "false_evidence"
    aliases = ("false_evidence_rate",)
    params = {"min_score": Param("min_score", float, float("-inf"), help="confidence line: items scored below it are ignored")}
    applies = "no_answer"
    higher_is_better = False
    summary = "On no-answer queries: 1 if retrieval returned any item in the top k scored at or above the confidence line."
    formula = "false_evidence@k = 1[∃ d ∈ D_k : score(d) >= min_score] on queries with no relevant item (NaN on others)"

    def compute(self, ctx: EvalContext, metric: Metric, k: np.ndarray) -> np.ndarray:
        line = float(metric.param("min_score"))
        score = ctx.score
        if score is None:
            score = np.zeros(ctx.rank.size)
        ok = (score >= line) & ctx.within(k) if math.isfinite(line) else ctx.within(k)
        return ctx.finish((ctx.seg_sum(ok) > 0).astype(np.float64), metric)

    def reference(self, q: QueryView, metric: Metric, k: int | None) -> float:
        line = float(metric.param("min_score"))
        top = q.top(k)
        if not math.isfinite(line):
            return 1.0 if top else 0.0
        scores = q.scores or [0.0] * len(q.ranking)
        return 1.0 if any(s >= line for s in scores[: len(top)]) else 0.0
