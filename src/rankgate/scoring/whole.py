"""A loaded run scored whole: align the queries, rank the rows, join the grades, run every metric's
kernel, then the result and its facts (:mod:`rankgate.scoring.facts`).

:func:`score_all` and :func:`_check_exp_gain` are also what each block of a run scored in blocks goes
through (:mod:`rankgate.scoring.blocks`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rankgate.errors import InputError
from rankgate.io import Gold, Run
from rankgate.io.cost import check_costs
from rankgate.io.resources import check_run_resources
from rankgate.metrics import Metric
from rankgate.metrics.context import EvalContext
from rankgate.metrics.ranking import compiled_values
from rankgate.model.ranking import resolve_ties
from rankgate.model.results import EvaluationResult
from rankgate.scoring.align import align_queries
from rankgate.scoring.facts import _id_mismatch, result_info, scored_result
from rankgate.scoring.rows import _first_relevant, judged_context, ranked_rows

__all__ = ["MAX_EXP_GRADE", "score_all"]

MAX_EXP_GRADE = 64
"""The highest grade ``gain=exp`` takes: 2^64 - 1 summed over any real list stays a finite double, while
2^1024 is beyond any double and would turn the metric into "no value"."""


def _check_exp_gain(g: Gold, metric_list: Sequence[Metric]) -> None:
    """Refuse grades whose exponential gain cannot be a number, before a value goes missing silently."""
    if g.j_grade.size == 0 or int(g.j_grade.max()) <= MAX_EXP_GRADE:
        return
    exp = [m for m in metric_list if m.name == "ndcg" and m.param("gain") == "exp"]
    if not exp:
        return
    row = int(np.argmax(g.j_grade > MAX_EXP_GRADE))
    raise InputError(
        f"holds grade {int(g.j_grade[row])} for {g.j_doc[row].as_py()!r} in query "
        f"{g.query_ids[int(g.j_query[row])]!r}; {exp[0]} takes grades up to {MAX_EXP_GRADE} (gain 2^g - 1)",
        path=g.source, field="grade",
        hint="use linear gain (the default), or map the grades onto a small scale such as 0-3",
    )


def score_all(ctx: EvalContext, metric_list: list[Metric]) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Every metric's per-query values and its definition, in the order asked."""
    values = compiled_values(ctx, metric_list)  # the common ranking metrics, in one compiled pass
    for metric in _deepest_first([m for m in metric_list if str(m) not in values]):  # a shallower cut is then made from a deeper one
        if metric.k is not None:
            ctx.drop_cuts_deeper_than(metric.k)
        values[str(metric)] = metric.definition.compute(ctx, metric, ctx.k_for(metric))
    values = {str(m): values[str(m)] for m in metric_list}
    return values, {str(m): m.definition.describe(m) for m in metric_list}


def _deepest_first(metrics: list[Metric]) -> list[Metric]:
    """The metrics with an ``@k`` by descending k (stable), then the rest: each metric's values do not
    depend on the order, and the rows of a cut at k are taken from the cut just deeper."""
    return sorted(metrics, key=lambda m: -m.k if m.k is not None else 0)


def _evaluate_loaded(
    g: Gold, r: Run, metric_list: list[Metric], *, k: int, trec: bool, complete: bool, level: str,
    doc_of: Callable[[str], str], dedupe: str, inputs: dict[str, Any], full_depth_rows: int,
    ties: str | None = None,
) -> EvaluationResult:
    """The run scored whole (``g`` already at its level); runs of at most ``full_depth_rows`` rows are
    not cut at the deepest cutoff."""
    _check_exp_gain(g, metric_list)
    check_costs(r.fields, r.source, r.query_lines)
    check_run_resources(r.fields, r.source, r.query_lines)
    ties = resolve_ties(ties, r, trec=trec)
    aligned = align_queries(g, r, trec=trec, complete=complete)
    rows = ranked_rows(g, r, aligned, metric_list, k=k, level=level, doc_of=doc_of, dedupe=dedupe, ties=ties,
                       full_depth_rows=full_depth_rows)
    ctx = judged_context(g, r, aligned, rows, k=k, trec=trec, doc_of=doc_of)
    values, definitions = score_all(ctx, metric_list)
    evaluated = aligned.evaluated
    first_rel = _first_relevant(ctx, rows, evaluated.size)
    answerable = ctx.answerable
    unmatched = None
    if len(rows.run_docs) and len(g.j_doc) and answerable.any() and not first_rel.any():
        unmatched = _id_mismatch(rows.run_docs, g.j_doc)  # nothing relevant anywhere: did any id match at all?
    info = result_info(g, r.fields, level=level, trec=trec, complete=complete, k=k, depth=rows.depth, ties=ties,
                       effect=rows.ties, dropped=rows.dropped_dupes, queries=len(r.query_ids), rows=len(r),
                       run_to_gold=aligned.run_to_gold, eval_pos=aligned.eval_pos, evaluated=evaluated.size,
                       id_mismatch=unmatched)
    return scored_result(g, evaluated, tuple(str(m) for m in metric_list), values, first_rel, answerable,
                         missing=aligned.missing, not_in_gold=aligned.not_in_gold, definitions=definitions,
                         inputs=inputs, info=info)
