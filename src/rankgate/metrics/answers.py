"""Answer metrics (layer two): scores of generated answers from judge labels.

These metrics never call a judge. ``rankgate answers`` asks the judge (:mod:`rankgate.judges`)
for labels and hands them over as one :class:`AnswerLabels` per query (``ctx.queries["answer_labels"]``);
the kernels below only count. A query's value is NaN when the metric does not apply to it
(``not_applicable``: a refusal has no statement to be faithful about; no reference, no correctness)
*or* when a judge call it needs failed (``judge_error``); :func:`status` says which, and every
summary reports the coverage (scored / (scored + judge errors)) next to the mean — a failed call is
never a 0 and never dropped silently.

Statement verdicts are ``supported`` / ``contradicted`` / ``not_found``. With ``S`` the answer's
statements, ``sup``/``con`` the statements judged supported/contradicted by the packed context,
``ref`` those supported by the reference answer, ``C_k`` the first k packed chunks and ``g(c)`` the
judge's 2/1/0 grade of chunk ``c`` for the question:

* ``faithfulness      = |sup| / |S|``       (RAGAS semantics: a statement must be supported)
* ``contradiction_rate = |con| / |S|``      (DeepEval's view: only contradictions count against)
* ``answer_relevance  = g(answer)``         (2 addresses the question, 1 partly, 0 not)
* ``context_relevance@k = |{c ∈ C_k : g(c) >= rel}| / |C_k|``
* ``answer_correctness = |ref| / |S|``      (only for queries with a reference answer)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from rankgate.errors import UsageError
from rankgate.metrics.registry import MetricDefinition, Param, register

if TYPE_CHECKING:  # pragma: no cover
    from rankgate.metrics.context import EvalContext, QueryView
    from rankgate.metrics.spec import Metric

__all__ = ["ANSWER_METRICS", "AnswerLabels", "status"]

SUPPORTED, CONTRADICTED, NOT_FOUND = "supported", "contradicted", "not_found"
VERDICTS = (SUPPORTED, CONTRADICTED, NOT_FOUND)
ANSWER_METRICS = ("faithfulness", "contradiction_rate", "answer_relevance", "context_relevance", "answer_correctness")
OK, NOT_APPLICABLE, JUDGE_ERROR = "ok", "not_applicable", "judge_error"


@dataclass(frozen=True)
class AnswerLabels:
    """Judge labels of one query's answer. ``None`` in a place means that judge call failed; the
    reason is in ``errors`` (``"task: reason"``).

    ``statements``: the answer's atomic statements (empty: no statement, e.g. a refusal).
    ``support`` / ``correctness``: one verdict per statement against the packed context / the
    reference (``correctness`` is None when the query has no reference).
    ``answer_relevance``: 2/1/0. ``context_relevance``: one 2/1/0 grade per packed chunk, in order.
    """

    statements: tuple[str, ...] | None
    support: tuple[str | None, ...] = ()
    correctness: tuple[str | None, ...] | None = None
    answer_relevance: int | None = None
    context_relevance: tuple[int | None, ...] = ()
    errors: tuple[str, ...] = ()


def _share(verdicts: tuple[str | None, ...] | None, statements: tuple[str, ...] | None, wanted: str) -> tuple[str, float]:
    if statements is None:
        return JUDGE_ERROR, math.nan
    if not statements:
        return NOT_APPLICABLE, math.nan
    if verdicts is None:
        return NOT_APPLICABLE, math.nan
    if len(verdicts) != len(statements) or any(v is None for v in verdicts):
        return JUDGE_ERROR, math.nan
    return OK, sum(1 for v in verdicts if v == wanted) / len(statements)


def status(name: str, labels: AnswerLabels, k: int | None = None, rel: int = 1) -> tuple[str, float]:
    """(``ok`` | ``not_applicable`` | ``judge_error``, value) of answer metric ``name`` for one query."""
    if name == "faithfulness":
        return _share(labels.support, labels.statements, SUPPORTED)
    if name == "contradiction_rate":
        return _share(labels.support, labels.statements, CONTRADICTED)
    if name == "answer_correctness":
        return _share(labels.correctness, labels.statements, SUPPORTED)
    if name == "answer_relevance":
        if labels.answer_relevance is None:
            return JUDGE_ERROR, math.nan
        return OK, float(labels.answer_relevance)
    if name == "context_relevance":
        grades = labels.context_relevance if k is None else labels.context_relevance[:k]
        if not grades:
            return NOT_APPLICABLE, math.nan
        if any(g is None for g in grades):
            return JUDGE_ERROR, math.nan
        return OK, sum(1 for g in grades if g is not None and g >= rel) / len(grades)
    raise UsageError(f"{name!r} is not an answer metric; answer metrics: {', '.join(ANSWER_METRICS)}")


class _AnswerMetric(MetricDefinition):
    applies = "all"
    cutoff = "never"
    needs = frozenset({"answer_labels"})
    #: The judge task whose labels the metric counts: a gate on it needs a calibration of that task.
    judge_task: str = "support"

    def _labels(self, ctx: EvalContext) -> list[AnswerLabels]:
        labels = ctx.queries.get("answer_labels")
        if labels is None:
            raise UsageError(f"{self.name} is an answer metric: it needs generated answers and judge labels, which "
                             "`rankgate answers --answers FILE --gold FILE` provides")
        return labels

    def compute(self, ctx: EvalContext, metric: Metric, k: np.ndarray) -> np.ndarray:
        labels = self._labels(ctx)
        rel = metric.param("rel") if "rel" in self.params else 1
        cut = None if metric.k is None else int(metric.k)
        return np.array([status(self.name, lab, cut, rel)[1] for lab in labels], dtype=np.float64)

    def reference(self, q: QueryView, metric: Metric, k: int | None) -> float:
        raise NotImplementedError  # each metric spells its formula out below


@register
class Faithfulness(_AnswerMetric):
    name = "faithfulness"
    summary = "Share of the answer's statements that the packed context supports (judge labels; answer layer)."
    formula = ("faithfulness = |{s ∈ S : support(s, context) = supported}| / |S|, S = the answer's atomic statements "
               "(not_applicable when S = ∅, e.g. a refusal; judge_error when a call failed)")

    def reference(self, q: QueryView, metric: Metric, k: int | None) -> float:
        lab = q.answer_labels
        if lab is None or not lab.statements or None in lab.support:
            return math.nan
        return lab.support.count(SUPPORTED) / len(lab.statements)


@register
class ContradictionRate(_AnswerMetric):
    judge_task = "support"
    name = "contradiction_rate"
    higher_is_better = False
    summary = "Share of the answer's statements that the packed context contradicts (judge labels; answer layer)."
    formula = ("contradiction_rate = |{s ∈ S : support(s, context) = contradicted}| / |S| "
               "(not_applicable when S = ∅; judge_error when a call failed)")

    def reference(self, q: QueryView, metric: Metric, k: int | None) -> float:
        lab = q.answer_labels
        if lab is None or not lab.statements or None in lab.support:
            return math.nan
        return lab.support.count(CONTRADICTED) / len(lab.statements)


@register
class AnswerRelevance(_AnswerMetric):
    judge_task = "answer_relevance"
    name = "answer_relevance"
    unit = "grade"
    bounds = (0.0, 2.0)
    summary = "Judge's 2/1/0 grade of whether the answer addresses the question (answer layer)."
    formula = "answer_relevance = g(question, answer) ∈ {0, 1, 2}: 2 addresses it, 1 partly, 0 not (judge_error when a call failed)"

    def reference(self, q: QueryView, metric: Metric, k: int | None) -> float:
        lab = q.answer_labels
        return math.nan if lab is None or lab.answer_relevance is None else float(lab.answer_relevance)


@register
class ContextRelevance(_AnswerMetric):
    judge_task = "context_relevance"
    name = "context_relevance"
    cutoff = "optional"
    params: ClassVar[dict[str, Param]] = {
        "rel": Param("rel", int, 1, minimum=1, maximum=2, help="lowest judge grade counted as relevant")}
    summary = "Share of the packed chunks (the first k) the judge grades relevant to the question (answer layer)."
    formula = ("context_relevance@k = |{c ∈ C_k : g(question, c) >= rel}| / |C_k|, C_k = the first k packed chunks "
               "(not_applicable when none; judge_error when a call failed)")

    def reference(self, q: QueryView, metric: Metric, k: int | None) -> float:
        lab = q.answer_labels
        grades = list(lab.context_relevance if lab is not None else ())
        if k is not None:
            grades = grades[:k]
        if not grades or None in grades:
            return math.nan
        return sum(1 for g in grades if g >= metric.param("rel")) / len(grades)


@register
class AnswerCorrectness(_AnswerMetric):
    judge_task = "correctness"
    name = "answer_correctness"
    summary = "Share of the answer's statements that the reference answer supports (only with a reference; answer layer)."
    formula = ("answer_correctness = |{s ∈ S : support(s, reference) = supported}| / |S| "
               "(not_applicable without a reference or when S = ∅; judge_error when a call failed)")

    def reference(self, q: QueryView, metric: Metric, k: int | None) -> float:
        lab = q.answer_labels
        if lab is None or not lab.statements or lab.correctness is None or None in lab.correctness:
            return math.nan
        return lab.correctness.count(SUPPORTED) / len(lab.statements)
