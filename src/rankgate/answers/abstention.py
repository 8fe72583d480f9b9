"""Abstention quality: whether the answers refused when they should have, and only then.

The diagnosis grid (:func:`rankgate.answers.score.grid_cell`) already tells refusals apart; this module
turns them into metrics with intervals that summaries, segments, gates and paired comparisons read as
they read any other (the definitions are :mod:`rankgate.metrics.abstention`'s):

=======================  ==================================================  ===============================
metric                   counts (numerator)                                  over (denominator)
=======================  ==================================================  ===============================
``correct_abstention``   no-answer queries refused                           no-answer queries
``unsupported_answer``   no-answer queries answered anyway                   no-answer queries
``false_abstention``     refusals although a gold chunk was packed           answerable queries with a gold
                         (over-refusal)                                      chunk in the packed context
``abstention_rate``      refusals                                            answered queries
=======================  ==================================================  ===============================

A **refusal** is an answer whose record says ``refused: true`` (whatever it also states), else an answer
that makes no statement (the judge's statements, as the grid has always read them). ``refused: false``
does not turn an answer with no statement into one: there is nothing in it to be right or wrong about.
A query whose refusal is unknown (no ``refused: true`` and the statements call failed) is in no
denominator; the summary counts it. "No-answer" is the gold set's ``no_answer: true``; "a gold chunk was
packed" is the grid's retrieval verdict (``hit@k`` at the packed k). Queries the gold set has but the
answers file does not are not scored (they are listed as unanswered), so every denominator is of
answered queries.

No judge verdict on the answers' quality enters these counts, so a gate on them needs no calibration.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from rankgate.metrics.abstention import ABSTENTION_METRICS, AbstentionFacts, applies_to
from rankgate.metrics.answers import JUDGE_ERROR, NOT_APPLICABLE, OK

if TYPE_CHECKING:  # pragma: no cover
    from rankgate.model.results import EvaluationResult

__all__ = ["ABSTENTION_METRICS", "DENOMINATORS", "KINDS", "abstention_part", "facts", "is_abstention_metric",
           "refusal_of"]

#: What each metric's denominator is, in words (summary.json, the terminal, the report, the comment).
DENOMINATORS = {
    "correct_abstention": "no-answer queries",
    "unsupported_answer": "no-answer queries",
    "false_abstention": "answerable queries with a gold chunk packed",
    "abstention_rate": "answered queries",
}
#: The kinds of abstention outcome listed per query, each with the metric that counts it.
KINDS = {"correct": "correct_abstention", "false": "false_abstention", "unsupported": "unsupported_answer"}


def is_abstention_metric(spec: str) -> bool:
    """Whether a metric spec names an abstention metric (``false_abstention``)."""
    return str(spec).split("(", 1)[0].split("@", 1)[0].strip().lower() in ABSTENTION_METRICS


def refusal_of(refused: bool | None, statements: int | None) -> bool | None:
    """Whether one answer is a refusal: ``refused: true`` wins; else no statement; None when unknown."""
    if refused is True:
        return True
    if statements is None:
        return None
    return statements == 0


def facts(no_answer: Sequence[bool], hit: Sequence[bool], refusals: Sequence[bool | None]) -> AbstentionFacts:
    """The per-query facts the abstention metrics count (NaN: the refusal is unknown)."""
    return AbstentionFacts(np.array(no_answer, dtype=bool), np.array(hit, dtype=bool),
                           np.array([math.nan if r is None else float(r) for r in refusals], dtype=np.float64))


def statuses(name: str, f: AbstentionFacts) -> list[str]:
    """``ok`` / ``not_applicable`` (outside the denominator) / ``judge_error`` (the refusal is unknown) per query."""
    out = []
    for a, h, r in zip(f.no_answer.tolist(), f.hit.tolist(), f.refusal.tolist()):
        out.append(NOT_APPLICABLE if not applies_to(name, a, h) else (JUDGE_ERROR if math.isnan(r) else OK))
    return out


def abstention_part(result: EvaluationResult, cis: Mapping[str, tuple[float, float]] | None, *,
                    examples: int = 3) -> dict[str, Any]:
    """summary.json's ``answers.abstention``: per metric its count, denominator (in numbers and words), mean
    and interval; example queries of each kind (correct, false, unsupported); how many records said
    ``refused: true`` and ``refused: false`` themselves; the queries whose refusal is unknown."""
    a = result.info["answers"]
    names = [m for m in result.metric_names if is_abstention_metric(m)]
    metrics: dict[str, Any] = {}
    for name in names:
        v = result.values[name]
        scored = v[~np.isnan(v)]
        low, high = (cis or {}).get(name, (math.nan, math.nan))
        count = int(scored.sum())
        metrics[name] = {"count": count, "of": int(scored.size), "over": DENOMINATORS[name],
                         "mean": float(count / scored.size) if scored.size else None,
                         "ci_low": None if math.isnan(low) else low, "ci_high": None if math.isnan(high) else high,
                         "unknown": sum(1 for s in a["status"][name] if s == JUDGE_ERROR)}
    shown: dict[str, list[str]] = {}
    for kind, name in KINDS.items():
        if name in result.values:
            shown[kind] = [q for q, x in zip(result.query_ids, result.values[name].tolist()) if x == 1.0][:examples]
    refusals = a.get("refusal") or []
    return {"metrics": metrics, "examples": shown,
            "declared_refusals": sum(1 for r in a.get("refused") or [] if r is True),
            "declared_answers": sum(1 for r in a.get("refused") or [] if r is False),
            "unknown": [q for q, r in zip(result.query_ids, refusals) if r is None]}
