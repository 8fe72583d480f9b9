"""Layer two: answers scored from judge labels, joined per query with the retrieval verdict.

Three steps, each a function with no I/O:

1. :func:`judge_answers` asks a judge client (:mod:`rankgate.judges`) for the labels every answer
   metric needs — statements, their support by the packed context and by the reference, the answer's
   relevance, each packed chunk's relevance — and folds them into one
   :class:`~rankgate.metrics.answers.AnswerLabels` per query. A failed call stays a failed call
   (``None`` plus its reason); it is never a 0.
2. :func:`evaluate_answers` scores the answers: the answer metrics (from the labels, through the
   metric registry) next to the retrieval verdict (gold ``hit@k`` and ``recall@k`` at the packed k,
   from the engine: the packed contexts are the run), as one
   :class:`~rankgate.model.results.EvaluationResult`, so compare, gates, segments and reports read it as
   they read any other.
3. :func:`diagnosis_grid` puts each query in one cell of the diagnosis grid:

   ===================  ==========================  =========================================
   retrieval (hit@k)    answer                      cell
   ===================  ==========================  =========================================
   hit                  faithful (and correct)      ``ok``
   hit                  not faithful, or a refusal  ``generation problem``
   hit                  faithful but not correct    ``corpus problem`` (the source is wrong or stale)
   miss                 not good                    ``retrieval problem``
   miss                 good                        ``lucky`` (parametric memory, or a gold gap)
   no-answer query      refusal                     ``ok``
   no-answer query      statements                  ``generation problem``
   any                  a judge call failed         ``undetermined``
   ===================  ==========================  =========================================

   "Good" means correct when the query has a reference answer (``answer_correctness >=
   correct_min``), else faithful (``faithfulness >= faithful_min`` and ``contradiction_rate <=
   contradiction_max``). The thresholds are :class:`GridThresholds` (defaults 0.8, 0.0, 0.8).

   A "refusal" is an answer whose record says ``refused: true`` (whatever it also states), else an answer
   with no statement. The same refusals give the abstention metrics (correct and false abstention,
   unsupported answers, the abstention rate), which :func:`evaluate_answers` adds whenever the statements
   are judged: :mod:`rankgate.answers.abstention`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from rankgate.errors import InputError, UsageError
from rankgate.answers.abstention import abstention_part, is_abstention_metric, refusal_of
from rankgate.metrics.abstention import ABSTENTION_METRICS
from rankgate.metrics.answers import ANSWER_METRICS, JUDGE_ERROR, NOT_APPLICABLE, OK, AnswerLabels, status
from rankgate.stats.options import Statistics, taken

if TYPE_CHECKING:  # pragma: no cover
    from rankgate.io import Gold
    from rankgate.io.answers import AnswerRecord, Answers
    from rankgate.model.results import EvaluationResult

__all__ = ["CELLS", "DEFAULT_ANSWER_METRICS", "GridRow", "GridThresholds", "JudgedAnswers", "diagnosis_grid",
           "evaluate_answers", "grid_counts", "judge_answers", "question_of"]

CELLS = ("ok", "generation problem", "retrieval problem", "corpus problem", "lucky", "undetermined")
DEFAULT_ANSWER_METRICS = ("faithfulness", "contradiction_rate", "answer_relevance", "context_relevance",
                          "answer_correctness")
SEP = "\x1f"
# which judge task each metric needs
_TASKS = {"faithfulness": ("statements", "support"), "contradiction_rate": ("statements", "support"),
          "answer_correctness": ("statements", "correctness"), "answer_relevance": ("answer_relevance",),
          "context_relevance": ("context_relevance",),
          # a refusal is an answer with no statement (or refused: true): the abstention metrics need the statements
          **{m: ("statements",) for m in ABSTENTION_METRICS}}


# -- 1. judging -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class JudgedAnswers:
    """Labels per query, plus what the judge did: calls per task, cache hits, label changes across
    repeats (``variance[task] = (items judged more than once, items whose label changed)``)."""

    labels: Mapping[str, AnswerLabels]
    calls: Mapping[str, int]
    cached: Mapping[str, int]
    variance: Mapping[str, tuple[int, int]] = field(default_factory=dict)


def question_of(record: AnswerRecord, gold_questions: Mapping[str, str | None]) -> str:
    """The question of an answer: as logged with it, else the gold set's query text."""
    q = record.question or gold_questions.get(record.query_id)
    return q or ""


def tasks_for(metrics: Sequence[str]) -> tuple[str, ...]:
    names = {str(m).split("(", 1)[0].split("@", 1)[0] for m in metrics}
    return tuple(dict.fromkeys(t for m in (*ANSWER_METRICS, *ABSTENTION_METRICS) if m in names for t in _TASKS[m]))


def judge_items(answers: Answers, gold_questions: Mapping[str, str | None], tasks: Sequence[str],
                statements: Mapping[str, tuple[str, ...] | None] | None = None) -> dict[str, list[Any]]:
    """The judge items of each task (support/correctness need the statements, so a second round)."""
    from rankgate.judges import JudgeItem

    out: dict[str, list[Any]] = {}
    for rec in answers.records:
        q = question_of(rec, gold_questions)
        if "statements" in tasks and statements is None:
            out.setdefault("statements", []).append(JudgeItem(rec.query_id, {"question": q, "answer": rec.answer}))
        if "answer_relevance" in tasks and statements is None:
            out.setdefault("answer_relevance", []).append(JudgeItem(rec.query_id, {"question": q, "answer": rec.answer}))
        if "context_relevance" in tasks and statements is None:
            for i, c in enumerate(rec.contexts):
                out.setdefault("context_relevance", []).append(
                    JudgeItem(f"{rec.query_id}{SEP}{i}{SEP}{c.id}", {"question": q, "passage": c.text}))
        if statements is not None:
            stmts = statements.get(rec.query_id) or ()
            context = "\n\n".join(c.text for c in rec.contexts)
            for j, s in enumerate(stmts):
                if "support" in tasks:
                    out.setdefault("support", []).append(JudgeItem(f"{rec.query_id}{SEP}s{j}", {"statement": s, "context": context}))
                if "correctness" in tasks and rec.reference is not None:
                    out.setdefault("correctness", []).append(
                        JudgeItem(f"{rec.query_id}{SEP}s{j}", {"statement": s, "reference": rec.reference}))
    return out


def _first(judgements: Sequence[Any], repeats: int) -> tuple[dict[str, Any], dict[str, str], int, int, int]:
    """Sample 0's label (or error) per key, cache hits, and (items judged repeatedly, items changed)."""
    labels: dict[str, Any] = {}
    errors: dict[str, str] = {}
    per_key: dict[str, list[Any]] = {}
    cached = 0
    for j in judgements:
        cached += bool(j.cached)
        if j.sample == 0:
            if j.error is not None:
                errors[j.key] = j.error
            else:
                labels[j.key] = j.label
        if repeats > 1 and j.error is None:
            per_key.setdefault(j.key, []).append(j.label)
    repeated = changed = 0
    if repeats > 1:
        for got in per_key.values():
            if len(got) > 1:
                repeated += 1
                changed += len({repr(x) for x in got}) > 1
    return labels, errors, cached, repeated, changed


def judge_answers(client: Any, answers: Answers, gold_questions: Mapping[str, str | None], *,
                  metrics: Sequence[str] = DEFAULT_ANSWER_METRICS, repeats: int = 1) -> JudgedAnswers:
    """Ask ``client`` (from :func:`rankgate.judges.open_judge`) for every label ``metrics`` need."""
    tasks = tasks_for(metrics)
    calls: dict[str, int] = {}
    cached: dict[str, int] = {}
    variance: dict[str, tuple[int, int]] = {}
    got: dict[str, tuple[dict[str, Any], dict[str, str]]] = {}

    def run(task: str, items: list[Any]) -> None:
        res = client.run(task, items, repeats=repeats)
        labels, errors, hits, repeated, changed = _first(res, repeats)
        got[task] = (labels, errors)
        calls[task] = len(res)
        cached[task] = hits
        if repeats > 1:
            variance[task] = (repeated, changed)

    first = judge_items(answers, gold_questions, tasks)
    for task in ("statements", "answer_relevance", "context_relevance"):
        if task in first:
            run(task, first[task])
    stmts: dict[str, tuple[str, ...] | None] = {}
    if "statements" in tasks:
        labels, _ = got.get("statements", ({}, {}))
        for rec in answers.records:
            s = labels.get(rec.query_id)
            stmts[rec.query_id] = None if s is None else tuple(str(x) for x in s)
        second = judge_items(answers, gold_questions, tasks, statements=stmts)
        for task in ("support", "correctness"):
            if task in second:
                run(task, second[task])
    out: dict[str, AnswerLabels] = {}

    def lookup(errors: list[str]) -> Any:
        def look(task: str, key: str) -> Any:
            labels, errs = got.get(task, ({}, {}))
            if key in errs:
                errors.append(f"{task}: {errs[key]}")
                return None
            return labels.get(key)

        return look

    for rec in answers.records:
        q = rec.query_id
        errors: list[str] = []
        look = lookup(errors)

        statements = stmts.get(q) if "statements" in tasks else ()
        if "statements" in tasks and statements is None:
            look("statements", q)
        n = len(statements or ())
        support = tuple(look("support", f"{q}{SEP}s{j}") for j in range(n)) if "support" in tasks else ()
        correctness = None
        if "correctness" in tasks and rec.reference is not None:
            correctness = tuple(look("correctness", f"{q}{SEP}s{j}") for j in range(n))
        relevance = look("answer_relevance", q) if "answer_relevance" in tasks else None
        ctx = tuple(look("context_relevance", f"{q}{SEP}{i}{SEP}{c.id}") for i, c in enumerate(rec.contexts)) \
            if "context_relevance" in tasks else ()
        out[q] = AnswerLabels(statements=statements if "statements" in tasks else (), support=support,
                              correctness=correctness, answer_relevance=relevance, context_relevance=ctx,
                              errors=tuple(errors))
    return JudgedAnswers(out, calls, cached, variance)


def plan_answers(client: Any, answers: Answers, gold_questions: Mapping[str, str | None], *,
                 metrics: Sequence[str] = DEFAULT_ANSWER_METRICS, repeats: int = 1,
                 statements_per_answer: float | None = None) -> dict[str, Any]:
    """What :func:`judge_answers` would call, calling nothing. The support/correctness rounds depend
    on the statements, which are not known before the run: they are estimated as one call per
    sentence of each answer (said so in the output; an answer with more sentences than the client's
    statement cap counts none, as its statements would be an error). Each row's ``at_most`` is an
    upper bound of the calls it can send: the first round's calls less its cache hits; for the second
    round the statement cap (``client.max_statements``) times the answers (with a reference, for
    correctness) times ``repeats``, whatever the cache holds."""
    import re

    from rankgate.judges import DEFAULT_MAX_STATEMENTS

    cap = int(getattr(client, "max_statements", DEFAULT_MAX_STATEMENTS))
    tasks = tasks_for(metrics)
    first = judge_items(answers, gold_questions, tasks)
    rows: dict[str, Any] = {}
    for task, items in first.items():
        p = client.plan(task, items, repeats=repeats)
        rows[task] = {"calls": p.calls, "cache_hits": p.cache_hits, "approx_tokens": p.approx_tokens,
                      "tokens_in": p.approx_tokens_in, "tokens_out": p.approx_tokens_out, "at_most": p.to_send}
    if "statements" in tasks:
        guess = {}
        for r in answers.records:
            sentences = tuple(s for s in re.split(r"(?<=[.!?])\s+", r.answer.strip()) if s)
            guess[r.query_id] = sentences if len(sentences) <= cap else ()
        second = judge_items(answers, gold_questions, tasks, statements=guess)
        bound = {"support": cap * len(answers.records) * repeats,
                 "correctness": cap * sum(1 for r in answers.records if r.reference is not None) * repeats}
        for task in ("support", "correctness"):
            if task not in tasks or not bound[task]:
                continue
            p = client.plan(task, second.get(task, []), repeats=repeats)
            rows[task] = {"calls": p.calls, "cache_hits": p.cache_hits, "approx_tokens": p.approx_tokens,
                          "tokens_in": p.approx_tokens_in, "tokens_out": p.approx_tokens_out,
                          "estimated": "one statement per sentence of the answer", "at_most": bound[task]}
    return rows


# -- 2. scoring -------------------------------------------------------------------------------------
def _answer_run(answers: Answers) -> Any:
    from rankgate.io.jsonl import parse_run_records

    recs = []
    for i, rec in enumerate(answers.records, start=1):
        ids = list(dict.fromkeys(c.id for c in rec.contexts))  # a chunk packed twice counts once
        recs.append((rec.line or i, {"query_id": rec.query_id, "topk": [{"chunk_id": c} for c in ids]}))
    return parse_run_records(recs, answers.source)


def check_answers_join(gold: Gold, answers: Answers) -> None:
    """Every answer's query is in the gold set, and no query is answered twice."""
    known = set(gold.query_ids)
    seen: dict[str, int | None] = {}
    for rec in answers.records:
        if rec.query_id not in known:
            raise InputError(f"answers query {rec.query_id!r}, which is not in the gold set {gold.source}",
                             path=answers.source, line=rec.line, field="query_id",
                             hint=f"gold ids look like {gold.query_ids[0]!r}" if gold.query_ids else None)
        if rec.query_id in seen:
            raise InputError(f"answers query {rec.query_id!r} again (first at line {seen[rec.query_id]})",
                             path=answers.source, line=rec.line, field="query_id", hint="keep one answer per query")
        seen[rec.query_id] = rec.line


def packed_k(answers: Answers) -> int:
    return max((len(dict.fromkeys(c.id for c in r.contexts)) for r in answers.records), default=0) or 1


def evaluate_answers(gold: Gold, answers: Answers, metrics: Sequence[str] = DEFAULT_ANSWER_METRICS, *,
                     judgements: Mapping[str, AnswerLabels], ties: str | None = None) -> EvaluationResult:
    """Answer metrics (from ``judgements``, one :class:`AnswerLabels` per answered query) and the
    retrieval verdict (``hit@k``, ``recall@k`` against the gold set, k = the longest packed context)
    for the gold queries that have an answer, in gold order. ``ties``: the ranking rule (as in
    :func:`rankgate.evaluate`); packed contexts carry no scores, so both rules keep the packed order."""
    from rankgate.scoring.engine import evaluate
    from rankgate.metrics import parse_metrics
    from rankgate.metrics.context import EvalContext
    from rankgate.model.results import EvaluationResult

    check_answers_join(gold, answers)
    parsed = parse_metrics(list(metrics))
    for m in parsed:
        if m.name not in ANSWER_METRICS and m.name not in ABSTENTION_METRICS:
            raise UsageError(f"{m} is not an answer metric; answer metrics: {', '.join(ANSWER_METRICS)}; "
                             f"abstention metrics: {', '.join(ABSTENTION_METRICS)}")
    # The abstention metrics come together, after the others, whenever the statements are judged (a refusal
    # is an answer with no statement, or refused: true): rankgate.answers.abstention.
    abstaining = "statements" in tasks_for([str(m) for m in parsed])
    parsed = [m for m in parsed if m.name not in ABSTENTION_METRICS]
    missing = [r.query_id for r in answers.records if r.query_id not in judgements]
    if missing:
        raise UsageError(f"no judge labels for query {missing[0]!r} ({len(missing)} in all)")
    k = packed_k(answers)
    retrieval = evaluate(gold, _answer_run(answers), [f"hit@{k}", f"recall@{k}"], dedupe="first", ties=ties)
    answered = {r.query_id for r in answers.records}
    retrieval = retrieval.subset(np.array([q in answered for q in retrieval.query_ids], dtype=bool))
    qids = retrieval.query_ids
    labels = [judgements[q] for q in qids]
    nq = len(qids)
    ctx = EvalContext(offsets=np.zeros(nq + 1, dtype=np.int64), rank_source=np.zeros(0, dtype=np.int64),
                      grade_source=np.zeros(0), judged_offsets=np.zeros(nq + 1, dtype=np.int64),
                      judged_grade=np.zeros(0, dtype=np.int64), query_k=np.zeros(nq, dtype=np.int64), default_k=k,
                      answerable=np.ones(nq, dtype=bool), queries={"answer_labels": labels})
    values = dict(retrieval.values)
    definitions = dict(retrieval.definitions)
    statuses: dict[str, list[str]] = {}
    for m in parsed:
        name = str(m)
        values[name] = m.definition.compute(ctx, m, ctx.k_for(m))
        definitions[name] = m.definition.describe(m)
        cut = None if m.k is None else int(m.k)
        rel = m.param("rel") if "rel" in m.definition.params else 1
        statuses[name] = [status(m.name, lab, cut, rel)[0] for lab in labels]
    by_q = {r.query_id: r for r in answers.records}
    refused = [by_q[q].refused for q in qids]
    refusals = [refusal_of(f, None if lab.statements is None or not abstaining else len(lab.statements))
                for f, lab in zip(refused, labels)]
    names = [str(m) for m in parsed]
    if abstaining:
        from rankgate.answers.abstention import facts, statuses as abstention_statuses

        hit_name = retrieval.metric_names[0]
        no_answer = set(retrieval.no_answer)
        f = facts([q in no_answer for q in qids], [_value(retrieval, hit_name, i) >= 1.0 for i in range(nq)], refusals)
        ctx.queries["abstention"] = f  # type: ignore[assignment]  # (the facts of every query, as one value)
        for m in parse_metrics(",".join(ABSTENTION_METRICS)):
            name = str(m)
            values[name] = m.definition.compute(ctx, m, ctx.k_for(m))
            definitions[name] = m.definition.describe(m)
            statuses[name] = abstention_statuses(m.name, f)
            names.append(name)
    info = dict(retrieval.info)
    info["answers"] = {
        "packed_k": k,
        "retrieval_metrics": list(retrieval.metric_names),
        "status": statuses,
        "judge_errors": [list(lab.errors) for lab in labels],
        "statements": [None if lab.statements is None else len(lab.statements) for lab in labels],
        "has_reference": [by_q[q].reference is not None for q in qids],
        "refused": refused,  # the records' own refused: true/false (None: not said)
        "refusal": refusals,  # refused: true, else no statement (None: unknown; rankgate.answers.abstention)
        "unanswered": [q for q in gold.query_ids if q not in answered],
        "format": answers.format,
    }
    return EvaluationResult(
        query_ids=qids, metric_names=tuple(retrieval.metric_names) + tuple(names), values=values,
        fields=retrieval.fields, first_relevant_rank=retrieval.first_relevant_rank,
        missing_from_run=retrieval.missing_from_run, not_in_gold=(), no_answer=retrieval.no_answer,
        definitions=definitions, inputs=dict(retrieval.inputs), info=info)


def coverage(result: EvaluationResult, metric: str) -> dict[str, int]:
    """scored / judge_error / not_applicable counts of an answer metric."""
    got = Counter(result.info["answers"]["status"][metric])
    return {"scored": got.get(OK, 0), "judge_error": got.get(JUDGE_ERROR, 0),
            "not_applicable": got.get(NOT_APPLICABLE, 0), "total": len(result.query_ids)}


# -- 3. the diagnosis grid --------------------------------------------------------------------------
@dataclass(frozen=True)
class GridThresholds:
    """Cut-offs that turn scores into verdicts (``rankgate answers --faithful-min`` …)."""

    faithful_min: float = 0.8  # faithfulness at or above: faithful …
    contradiction_max: float = 0.0  # … and contradiction_rate at or below
    correct_min: float = 0.8  # answer_correctness at or above: correct

    def __post_init__(self) -> None:
        for name in ("faithful_min", "contradiction_max", "correct_min"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0:
                raise UsageError(f"{name} must be a number between 0 and 1; got {v!r}")


@dataclass(frozen=True)
class GridRow:
    query_id: str
    retrieval: str  # "hit" | "miss" | "no_answer"
    answer: str  # "faithful" | "unfaithful" | "refusal" | "correct" | "incorrect" | "answered" | "undetermined"
    cell: str
    why: str
    faithful: bool | None = None  # the judge's faithful verdict (None: a refusal, or undetermined)
    correct: bool | None = None  # the judge's correct verdict (None: no reference, a refusal, or undetermined)


def _value(result: EvaluationResult, name: str, i: int) -> float:
    v = result.values.get(name)
    return math.nan if v is None else float(v[i])


def grid_cell(retrieval: str, refusal: bool, faithful: bool | None, correct: bool | None) -> tuple[str, str, str]:
    """(cell, answer verdict, why) from the verdicts of one query (see module docs). ``retrieval`` is
    ``hit``, ``miss`` or ``no_answer``; ``correct`` is None without a reference answer."""
    if retrieval == "no_answer":
        if refusal:
            return "ok", "refusal", "refused a question the corpus cannot answer"
        return "generation problem", "answered", "answered a question the corpus cannot answer"
    hit = retrieval == "hit"
    if refusal:
        if hit:
            return "generation problem", "refusal", "refused although a gold chunk was in the context"
        return "retrieval problem", "refusal", "refused; no gold chunk in the context"
    good = correct if correct is not None else bool(faithful)
    verdict = ("correct" if correct else "incorrect") if correct is not None else ("faithful" if faithful else "unfaithful")
    if hit:
        if faithful and (correct is None or correct):
            return "ok", verdict, "gold chunk in the context; answer faithful" + (" and correct" if correct else "")
        if faithful:
            return ("corpus problem", verdict,
                    "faithful to its context but wrong against the reference: the source is wrong or stale")
        return "generation problem", "unfaithful", "gold chunk in the context; answer not faithful to it"
    if good:
        return "lucky", verdict, ("correct without a gold chunk in the context (parametric memory)" if correct is not None
                                  else "faithful to a context the gold set does not judge relevant (a gold gap?)")
    return "retrieval problem", verdict, "no gold chunk in the context; answer not good"


def diagnosis_grid(result: EvaluationResult, thresholds: GridThresholds = GridThresholds()) -> list[GridRow]:
    """One :class:`GridRow` per query of an :func:`evaluate_answers` result (see module docs)."""
    t = thresholds
    a = result.info["answers"]
    hit_name = a["retrieval_metrics"][0]
    status_of = a["status"]
    if "faithfulness" not in status_of or "contradiction_rate" not in status_of:
        raise UsageError("the diagnosis grid needs faithfulness and contradiction_rate among the metrics")
    no_answer = set(result.no_answer)
    rows = []
    for i, q in enumerate(result.query_ids):
        n_stmt = a["statements"][i]
        has_ref = a["has_reference"][i] and "answer_correctness" in status_of
        retrieval = "no_answer" if q in no_answer else ("hit" if _value(result, hit_name, i) >= 1.0 else "miss")
        needed = ["faithfulness", "contradiction_rate"] + (["answer_correctness"] if has_ref else [])
        declared = (a.get("refused") or [None] * len(result.query_ids))[i] is True  # refused: true wins
        if not declared and (n_stmt is None or any(status_of[m][i] == JUDGE_ERROR for m in needed)):
            rows.append(GridRow(q, retrieval, "undetermined", "undetermined",
                                "a judge call failed: " + "; ".join(a["judge_errors"][i])[:200]))
            continue
        refusal = declared or n_stmt == 0
        faithful = (not refusal and _value(result, "faithfulness", i) >= t.faithful_min
                    and _value(result, "contradiction_rate", i) <= t.contradiction_max)
        correct = _value(result, "answer_correctness", i) >= t.correct_min if has_ref and not refusal else None
        cell, verdict, why = grid_cell(retrieval, refusal, faithful, correct)
        rows.append(GridRow(q, retrieval, verdict, cell, why, None if refusal else faithful, correct))
    return rows


def grid_counts(rows: Sequence[GridRow], *, examples: int = 3, confidence: float = 0.95,
                texts: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Per cell: count, share of the queries with its Wilson interval, and example query ids; with
    ``texts`` (the questions of queries known by a hash of their question), ``example_questions``
    beside them, the question of each (or its id when it has none)."""
    from rankgate.stats.bootstrap import wilson_interval

    n = len(rows)
    out: dict[str, Any] = {"queries": n, "cells": {}}
    for cell in CELLS:
        members = [r.query_id for r in rows if r.cell == cell]
        lo, hi = wilson_interval(len(members), n, confidence=confidence) if n else (math.nan, math.nan)
        out["cells"][cell] = {"count": len(members), "share": len(members) / n if n else None,
                              "ci": [lo, hi] if n else None, "examples": members[:examples]}
        if texts:
            out["cells"][cell]["example_questions"] = [texts.get(q, q) for q in members[:examples]]
    return out


# -- the summary every renderer reads -------------------------------------------------------------
def _clean(x: Any) -> Any:
    if isinstance(x, float) and math.isnan(x):
        return None
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


def answers_summary(result: EvaluationResult, rows: Sequence[GridRow], *, cis: Mapping[str, tuple[float, float]] | None,
                    thresholds: GridThresholds, judge: Mapping[str, Any] | None = None, examples: int = 3,
                    confidence: float = 0.95) -> dict[str, Any]:
    """Layer two as plain data: per metric mean, interval and coverage; the grid; the judge."""
    a = result.info["answers"]
    metrics: dict[str, Any] = {}
    answer_names = [m for m in result.metric_names if m not in a["retrieval_metrics"]]
    for name in result.metric_names:
        s = result.summary(name)
        low, high = (cis or {}).get(name, (math.nan, math.nan))
        entry: dict[str, Any] = {"mean": _clean(s.mean), "n": s.n, "ci_low": _clean(low), "ci_high": _clean(high),
                                 "layer": ("abstention" if is_abstention_metric(name) else "answer") if name in answer_names
                                 else "retrieval",
                                 "definition": result.definitions.get(name)}
        if name in answer_names:
            cov = coverage(result, name)
            entry["coverage"] = cov
            applicable = cov["scored"] + cov["judge_error"]
            entry["coverage_share"] = cov["scored"] / applicable if applicable else None
            status_of = a["status"][name]
            entry["not_applicable"] = [q for q, st in zip(result.query_ids, status_of) if st == NOT_APPLICABLE]
            entry["judge_error"] = [q for q, st in zip(result.query_ids, status_of) if st == JUDGE_ERROR]
        metrics[name] = entry
    grid = grid_counts(rows, examples=examples, confidence=confidence, texts=result.info.get("query_texts"))
    grid["thresholds"] = {"faithful_min": thresholds.faithful_min, "contradiction_max": thresholds.contradiction_max,
                          "correct_min": thresholds.correct_min}
    grid["retrieval_metric"] = a["retrieval_metrics"][0]
    errors = {q: e for q, e in zip(result.query_ids, a["judge_errors"]) if e}
    from rankgate.scoring.engine import id_mismatch_line

    warnings = []
    mismatch = id_mismatch_line(result)
    if mismatch:  # every retrieval verdict would be "miss": say why instead of a grid of retrieval problems
        warnings.append(mismatch.replace("no retrieved id", "no packed context id")
                        + "; when the answers log context texts only, pass --corpus so texts find their chunk ids")
    out: dict[str, Any] = {
        "warnings": warnings,
        "metrics": metrics,
        "answer_metrics": answer_names,
        "grid": grid,
        "queries": {"answered": len(result.query_ids), "unanswered": list(a["unanswered"]),
                    "no_answer": list(result.no_answer),
                    "refusals": [q for q, n, f in zip(result.query_ids, a["statements"], a.get("refused") or [None] * len(
                        result.query_ids)) if n == 0 or f is True],
                    "with_reference": sum(1 for h in a["has_reference"] if h)},
        "judge_errors": {"queries": len(errors), "by_query": errors},
        "packed_k": a["packed_k"],
        "judge": dict(judge or {}),
    }
    if any(is_abstention_metric(m) for m in answer_names):  # correct/false abstention, unsupported answers
        out["abstention"] = abstention_part(result, cis, examples=examples)
    texts = result.info.get("query_texts")
    if texts:  # queries known by a hash of their question: the question of each id listed above
        listed = dict.fromkeys([*result.query_ids, *a["unanswered"]])
        out["questions"] = {q: texts[q] for q in listed if q in texts}
    return out


# -- the judge against human labels of the same answers ---------------------------------------------
def read_human_verdicts(path: str, known: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Human verdicts per answer, JSONL ``{query_id, faithful, correct, note}``: ``faithful`` true/false, or
    null for an answer that makes no statement (a refusal); ``correct`` true/false, or null without a
    reference. A query that has no answer, a repeat or a value of another type is an input error."""
    import json

    from rankgate.io.jsonl import json_objects

    ids = set(known)
    out: dict[str, dict[str, Any]] = {}
    for line, obj in json_objects(path, "human labels", "{query_id, faithful, correct}"):
        q = obj.get("query_id")
        if not isinstance(q, str) or q not in ids:
            raise InputError(f"labels query {q!r}, which has no answer", path=path, line=line, field="query_id")
        if q in out:
            raise InputError(f"labels query {q!r} again", path=path, line=line, field="query_id")
        for key in ("faithful", "correct"):
            if obj.get(key) is not None and not isinstance(obj.get(key), bool):
                raise InputError(f"must be true, false or null; got {json.dumps(obj.get(key))}", path=path, line=line,
                                 field=key)
        out[q] = {"faithful": obj.get("faithful"), "correct": obj.get("correct"), "note": obj.get("note")}
    if not out:
        raise InputError("holds no labels", path=path, hint="one {query_id, faithful, correct} object per line")
    return out


def agreement_with_human(rows: Sequence[GridRow], human: Mapping[str, Mapping[str, Any]], *,
                         confidence: float = 0.95) -> dict[str, Any]:
    """How often the judge's verdicts and grid cells match human ones on the same answers, each share
    with its Wilson interval, and the disagreements. The human cell uses the same retrieval verdict
    (the gold set's) and the same rules (:func:`grid_cell`)."""
    from rankgate.stats.bootstrap import wilson_interval

    tallies: dict[str, list[int]] = {"cell": [0, 0], "faithful": [0, 0], "correct": [0, 0]}
    disagreements = []
    for r in rows:
        h = human.get(r.query_id)
        if h is None or r.cell == "undetermined":
            continue
        refusal = h["faithful"] is None
        cell, _, _ = grid_cell(r.retrieval, refusal, h["faithful"], None if refusal else h["correct"])
        tallies["cell"][1] += 1
        tallies["cell"][0] += cell == r.cell
        tallies["faithful"][1] += 1  # refusal / faithful / unfaithful, on both sides
        tallies["faithful"][0] += r.faithful == h["faithful"]
        if h["correct"] is not None and r.correct is not None:
            tallies["correct"][1] += 1
            tallies["correct"][0] += r.correct == h["correct"]
        if cell != r.cell:
            disagreements.append({"query_id": r.query_id, "judge": r.cell, "human": cell, "note": h.get("note")})
    out: dict[str, Any] = {"items": tallies["cell"][1], "disagreements": disagreements}
    # The share of faithful answers, prediction-powered: the judge's share over every answer it judged,
    # corrected by its average error on the answers humans labelled (ARES; rankgate.stats.agreement.ppi_mean).
    from rankgate.stats.agreement import ppi_mean

    judged = [float(r.faithful) for r in rows if r.faithful is not None]
    pairs = [(float(r.faithful), float(human[r.query_id]["faithful"])) for r in rows
             if r.faithful is not None and r.query_id in human and human[r.query_id]["faithful"] is not None]
    est = ppi_mean(judged, [a for a, _ in pairs], [b for _, b in pairs], confidence=confidence)
    out["faithful_share"] = {"judge": _clean(math.fsum(judged) / len(judged)) if judged else None,
                             "judged": len(judged), "labelled": len(pairs), "ppi": _clean(est.estimate),
                             # (a share: the normal interval is clipped to [0, 1])
                             "ppi_ci": [None if math.isnan(x) else min(1.0, max(0.0, x)) for x in est.ci]}
    for name, (agree, n) in tallies.items():
        lo, hi = wilson_interval(agree, n, confidence=confidence) if n else (math.nan, math.nan)
        out[name] = {"agree": agree, "n": n, "share": agree / n if n else None, "ci": [_clean(lo), _clean(hi)]}
    return out


def faithfulness_calibration(rows: Sequence[GridRow], human: Mapping[str, Mapping[str, Any]], *,
                             statistics: Statistics | None = None, seed: int = 0,
                             resamples: int = 2000, confidence: float = 0.95) -> Any:
    """The judge's faithful verdicts against human ones, as a calibration (task ``faithfulness``:
    1 = faithful, 0 = not; answers that are refusals on either side are left out), in the format
    ``rankgate judge calibrate`` writes, so a gate on faithfulness or contradiction_rate can cite it."""
    seed, resamples, confidence = taken(statistics, seed, resamples, confidence, caller="faithfulness_calibration",
                                         defaults=(0, 2000, 0.95))
    from rankgate.stats.agreement import calibrate

    keys, h, j = [], [], []
    for r in rows:
        hv = human.get(r.query_id)
        if hv is None or hv["faithful"] is None or r.faithful is None:
            continue
        keys.append((r.query_id, "answer"))
        h.append(int(bool(hv["faithful"])))
        j.append(int(bool(r.faithful)))
    return calibrate(keys, h, j, task="faithfulness", relevant_at=1, weights=None, confidence=confidence,
                     resamples=resamples, seed=seed)
