"""Retrieval checks for your own test suite (pytest or any runner that reports ``AssertionError``).

::

    from rankgate.testing import assert_retrieval

    def test_retriever_finds_the_answers():
        run = my_retriever.run(queries)              # a path, a Run, or {query_id: [chunk ids]}
        assert_retrieval("eval/gold.jsonl", run, "recall@5 >= 0.85", "mrr >= 0.6")

An expectation is ``<metric> <op> <number>``: op is ``>=``, ``>``, ``<=`` or ``<``; the number may be
a percentage (``85%``). ``on="ci_lower"`` checks the lower end of the bootstrap interval instead of
the mean for ``>=``/``>`` (``ci_upper`` for ``<=``/``<`` likewise): the check then passes only when
the data make the claim convincingly, not by luck of the gold set.

On failure the message names each failing metric, its value, interval and query count, the limit,
and the worst queries with the rank of their first relevant item.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rankgate._util.constraints import CONFIDENCE, COUNT, EVALUATE_OPTIONS, RESAMPLES, SEED, Param, check, check_options
from rankgate.errors import UsageError
from rankgate.metrics.display import fmt_confidence, fmt_score
from rankgate.model.results import EvaluationResult

__all__ = ["Expectation", "assert_retrieval", "parse_expectation"]

_EXPR = re.compile(r"^\s*(?P<metric>.+?)\s*(?P<op>>=|<=|>|<)\s*(?P<num>[-+]?(?:\d+\.?\d*|\.\d+))\s*(?P<pct>%)?\s*$")
#: A metric and a number with some other operator between them (``=>``, ``==``, ``=``, ``!=``, ``≥``).
_BAD_OP = re.compile(r"^\s*(?P<metric>.*?[^<>=!≥≤\s])\s*(?P<op>[<>=!≥≤]+)\s*[-+]?(?:\d+\.?\d*|\.\d+)\s*%?\s*$")
_OPS: dict[str, Callable[[float, float], bool]] = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}
_SLACK = 1e-9
_ON = Param("on", str, "mean", choices=("mean", "ci_lower", "ci_upper"), help="the value each expectation checks")


@dataclass(frozen=True)
class Expectation:
    text: str
    metric: str
    op: str
    limit: float


def parse_expectation(text: str) -> Expectation:
    """``"recall@5 >= 0.85"`` -> Expectation (the metric spec is checked and made canonical)."""
    from rankgate.metrics import parse_metric

    bad = _BAD_OP.match(text) if isinstance(text, str) else None
    if bad is not None and bad.group("op") not in _OPS:  # a metric, a number, and an operator none of the four
        op = bad.group("op")
        meant = {"=>": ">=", "=<": "<=", "≥": ">=", "≤": "<="}.get(op)
        hint = (f"; did you mean {text[:bad.start('op')] + meant + text[bad.end('op'):]!r}?" if meant
                else " (an expectation is a floor or a ceiling)")
        raise UsageError(f"the expectation {text!r} has the operator {op!r}; the operators are >=, >, <= and <{hint}")
    m = _EXPR.match(text) if isinstance(text, str) else None
    if m is None:
        raise UsageError(f"cannot read the expectation {text!r}; write e.g. 'recall@5 >= 0.85' or 'mrr > 60%'")
    limit = float(m.group("num")) / (100.0 if m.group("pct") else 1.0)
    return Expectation(text.strip(), str(parse_metric(m.group("metric"))), m.group("op"), limit)


def assert_retrieval(
    gold: Any,
    run: Any,
    *expectations: str,
    on: str = "mean",
    seed: int = 0,
    resamples: int = 2000,
    confidence: float = 0.95,
    worst: int = 5,
    **evaluate_kwargs: Any,
) -> EvaluationResult:
    """Evaluate ``run`` against ``gold`` and raise ``AssertionError`` unless every expectation holds.

    Args:
        gold, run: as for :func:`rankgate.evaluate` (paths or loaded data); ``run`` may also be an
            :class:`EvaluationResult` you already have (``gold`` is then ignored).
        expectations: e.g. ``"recall@5 >= 0.85"``, ``"forbidden@5 <= 0"``, ``"hit@10 > 90%"``.
        on: ``"mean"``, or ``"ci_lower"`` / ``"ci_upper"`` to check the interval's conservative end
            (lower end for ``>=``/``>``, upper end for ``<=``/``<``; either name selects that rule).
        worst: how many worst queries to name per failing metric.
        evaluate_kwargs: passed on to :func:`rankgate.evaluate` (``k``, ``level``, ``doc_sep``…).

    Returns the :class:`EvaluationResult`, for further checks.
    """
    __tracebackhide__ = True  # pytest: show the test's line and the message, not this function's source
    if not expectations:
        raise UsageError("assert_retrieval needs at least one expectation, e.g. 'recall@5 >= 0.85'")
    on = check(_ON, on, caller="assert_retrieval")
    seed = check(SEED, seed, caller="assert_retrieval")
    resamples = check(RESAMPLES, resamples, caller="assert_retrieval", name="resamples")
    confidence = check(CONFIDENCE, confidence, caller="assert_retrieval")
    worst = check(COUNT, worst, caller="assert_retrieval", name="worst")
    check_options(evaluate_kwargs, EVALUATE_OPTIONS, caller="assert_retrieval", target="rankgate.evaluate")
    parsed = [parse_expectation(e) for e in expectations]
    metrics = list(dict.fromkeys(e.metric for e in parsed))
    if isinstance(run, EvaluationResult):
        result = run
    else:
        from rankgate.scoring.engine import evaluate

        result = evaluate(gold, run, metrics, **evaluate_kwargs)
    from rankgate.stats.bootstrap import metric_cis

    cis = metric_cis(result, seed=seed, resamples=resamples, confidence=confidence, metrics=metrics)
    lines, failed = [], 0
    conf = f"{fmt_confidence(confidence)} CI"
    for e in parsed:
        s = result.summary(e.metric)
        low, high = cis[e.metric]
        floor = e.op in (">=", ">")
        value = s.mean if on == "mean" else (low if floor else high)
        what = "mean" if on == "mean" else (f"{conf} lower end" if floor else f"{conf} upper end")
        slack = _SLACK if e.op in (">=", "<=") else -_SLACK
        ok = not math.isnan(value) and _OPS[e.op](value + (slack if floor else -slack), e.limit)
        ci = "no interval" if math.isnan(low) else f"{conf} {fmt_score(low, 4)} to {fmt_score(high, 4)}"
        detail = f"{what} {fmt_score(value, 4)}" + ("" if on == "mean" else f" (mean {fmt_score(s.mean, 4)})")
        line = f"  {'ok  ' if ok else 'FAIL'} {e.text}: {detail}; {ci}; n={s.n}"
        if math.isnan(value):
            line += " (not computable: " + ("the metric applies to no query)" if s.n == 0 else "needs at least 2 queries)")
        lines.append(line)
        if not ok:
            failed += 1
            lines.extend(_worst_lines(result, e.metric, worst))
    if failed:
        header = (f"rankgate: {failed} of {len(parsed)} retrieval expectations failed "
                  f"({len(result.query_ids)} gold queries evaluated"
                  + (f", {len(result.missing_from_run)} missing from the run and scored 0" if result.missing_from_run else "")
                  + ")")
        raise AssertionError("\n".join([header, *lines]))
    return result


def _worst_lines(result: EvaluationResult, metric: str, worst: int) -> list[str]:
    from rankgate.gating.decide import worst_queries

    out = []
    for q in worst_queries(result, metric, worst):
        rank = "?" if q.candidate_rank is None else ("none retrieved" if q.candidate_rank == 0 else str(q.candidate_rank))
        note = f", {q.note}" if q.note else ""
        out.append(f"       {q.query_id}: {metric} = {fmt_score(q.candidate, 4)}, first relevant rank: {rank}{note}")
    if out:
        out.insert(0, f"       worst queries on {metric}:")
    return out
