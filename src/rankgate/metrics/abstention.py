"""Abstention metrics (layer two): did the system refuse when it should, and only then?

Three facts per answered query decide them, and no judge verdict on the answer's quality does:

* ``no_answer``: the gold set says the corpus cannot answer the query (``no_answer: true``);
* ``hit``: a gold chunk was packed into the answer's context (the diagnosis grid's retrieval
  verdict, ``hit@k`` at the packed k);
* ``refusal``: the answer is a refusal. It is one when the answer record says ``refused: true``
  (whatever it also states), else when the answer makes no statement (the grid's refusal); unknown
  (NaN) when neither says, e.g. the judge call that finds the statements failed.

``rankgate answers`` hands them over as one :class:`AbstentionFacts` (``ctx.queries["abstention"]``);
the kernels below only count. Each metric is a per-query 1/0 with NaN where it does not apply, so the
mean is a share of the queries it applies to, and the bootstrap, segments, gates and paired comparisons
read it as any other metric:

* ``correct_abstention = |{no-answer queries refused}| / |{no-answer queries}|`` (higher is better)
* ``unsupported_answer = |{no-answer queries answered}| / |{no-answer queries}|`` (lower is better; on the
  same queries as correct_abstention, so the two add up to 1: a floor on one is a ceiling on the other)
* ``false_abstention = |{refused}| / |{answerable queries with a gold chunk packed}|`` (lower is better:
  over-refusal, a refusal although the answer was in the context)
* ``abstention_rate = |{refused}| / |{answered queries}|`` (every query; lower reads as better, so a gate
  on it is a ceiling)

A query whose refusal is unknown counts in no denominator (its status is ``judge_error``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from rankgate.errors import UsageError
from rankgate.metrics.registry import MetricDefinition, register

if TYPE_CHECKING:  # pragma: no cover
    from rankgate.metrics.context import EvalContext, QueryView
    from rankgate.metrics.spec import Metric

__all__ = ["ABSTENTION_METRICS", "AbstentionFacts", "abstention_value", "applies_to"]

ABSTENTION_METRICS = ("correct_abstention", "false_abstention", "unsupported_answer", "abstention_rate")


@dataclass(frozen=True)
class AbstentionFacts:
    """Per answered query, in the result's order: ``no_answer`` and ``hit`` (booleans) and ``refusal``
    (1.0 a refusal, 0.0 an answer, NaN unknown)."""

    no_answer: np.ndarray
    hit: np.ndarray
    refusal: np.ndarray


def applies_to(name: str, no_answer: bool, hit: bool) -> bool:
    """Whether abstention metric ``name`` counts a query with these facts in its denominator."""
    if name in ("correct_abstention", "unsupported_answer"):
        return no_answer
    if name == "false_abstention":
        return not no_answer and hit
    if name == "abstention_rate":
        return True
    raise UsageError(f"{name!r} is not an abstention metric; abstention metrics: {', '.join(ABSTENTION_METRICS)}")


def abstention_value(name: str, no_answer: bool, hit: bool, refusal: bool | None) -> float:
    """One query's value of ``name``: 1.0 or 0.0, NaN outside its denominator or when the refusal is unknown."""
    if not applies_to(name, no_answer, hit) or refusal is None:
        return math.nan
    if name == "unsupported_answer":
        return 0.0 if refusal else 1.0
    return 1.0 if refusal else 0.0


class _AbstentionMetric(MetricDefinition):
    applies = "all"
    cutoff = "never"
    needs = frozenset({"abstention"})

    def compute(self, ctx: EvalContext, metric: Metric, k: np.ndarray) -> np.ndarray:
        facts = ctx.queries.get("abstention")
        if not isinstance(facts, AbstentionFacts):
            raise UsageError(f"{self.name} is an abstention metric: it needs generated answers and their refusals, which "
                             "`rankgate answers --answers FILE --gold FILE` provides (with --config, the gates on it)")
        no_answer = np.asarray(facts.no_answer, dtype=bool)
        hit = np.asarray(facts.hit, dtype=bool)
        refusal = np.asarray(facts.refusal, dtype=np.float64)
        applies = np.array([applies_to(self.name, bool(a), bool(h)) for a, h in zip(no_answer, hit)], dtype=bool)
        value = 1.0 - refusal if self.name == "unsupported_answer" else refusal.copy()
        return np.where(applies, value, np.nan)

    def reference(self, q: QueryView, metric: Metric, k: int | None) -> float:
        """From the query as the reference implementations see it: the packed chunks as its ranking, the
        answer's labels (``statements``; ``refused`` when the record says so)."""
        labels: Any = q.answer_labels
        flag = getattr(labels, "refused", None)
        statements = getattr(labels, "statements", None)
        refusal = True if flag is True else (None if statements is None else len(statements) == 0)
        hit = bool(set(q.ranking) & q.relevant(1))
        return abstention_value(self.name, not q.answerable, hit, refusal)


@register
class CorrectAbstention(_AbstentionMetric):
    name = "correct_abstention"
    summary = "Share of the no-answer queries the system refused (answer layer; counted from the refusals, no verdict on quality)."
    formula = ("correct_abstention = |{q ∈ N : refused(q)}| / |N|, N = the answered queries the gold set marks no_answer "
               "(not_applicable on answerable queries)")


@register
class UnsupportedAnswer(_AbstentionMetric):
    name = "unsupported_answer"
    higher_is_better = False
    summary = ("Share of the no-answer queries the system answered anyway (answer layer; 1 − correct_abstention on the "
               "same queries).")
    formula = ("unsupported_answer = |{q ∈ N : not refused(q)}| / |N|, N = the answered queries the gold set marks "
               "no_answer (not_applicable on answerable queries)")


@register
class FalseAbstention(_AbstentionMetric):
    name = "false_abstention"
    higher_is_better = False
    summary = "Share of the answerable queries with a gold chunk in the packed context that the system refused (over-refusal)."
    formula = ("false_abstention = |{q ∈ H : refused(q)}| / |H|, H = the answered queries that are not no_answer and whose "
               "packed context holds a gold chunk (hit@k at the packed k; not_applicable on the others)")


@register
class AbstentionRate(_AbstentionMetric):
    name = "abstention_rate"
    higher_is_better = False
    summary = "Share of the answered queries the system refused (answer layer; descriptive: a gate on it is a ceiling)."
    formula = ("abstention_rate = |{q : refused(q)}| / |Q|, Q = the answered queries; refused(q): the record says "
               "refused: true, or the answer makes no statement")
