"""The facts of a result beside its values: the ``info`` dict that reports show (how the run was scored,
the run's and the gold set's facts, its logged latencies and per-query values), built once by
:func:`result_info` for a run scored whole or in blocks, the result itself (:func:`scored_result`), and
the lines that say what the tie rule changed or that the run's ids never meet the gold set's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from rankgate.io import Gold, Run
from rankgate.io.resources import ADAPTER_FIELD, RESOURCE_FIELDS
from rankgate.metrics.context import NO_CUTOFF
from rankgate.model.ranking import TieEffect
from rankgate.model.results import EvaluationResult

__all__ = ["RULE_NAMES", "id_mismatch_line", "input_notices", "query_texts", "result_info", "scored_result",
           "ties_lines"]

# Per-query run fields kept as they were logged, for layouts that report them (--layout v0).
RUN_VALUE_FIELDS = ("latency_ms", "errors", "retries", "privacy_leak")
SEGMENT_FIELDS = ("intent", "segment", "source_of_query", "corpus_version", "as_of", "created")
RULE_NAMES = {"input": "the file's order", "id": "score, then id descending (trec_eval's rule)"}


def result_info(g: Gold, fields: dict[str, list[Any]], *, level: str, trec: bool, complete: bool, k: int,
                depth: int, ties: str, effect: TieEffect, dropped: int, queries: int, rows: int,
                run_to_gold: np.ndarray, eval_pos: np.ndarray, evaluated: int,
                id_mismatch: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """A result's ``info``: how it was scored (``depth``: the rows' cut; ``ties``: the rule used and
    ``effect`` what the other rule would change; ``dropped``: repeated ids dropped), the run's facts
    (``queries``, ``rows`` and its per-query ``fields``, placed among the ``evaluated`` queries through
    ``run_to_gold`` and ``eval_pos``), the gold set's, and the ids of a run that meets none of the gold
    set's. A run scored in blocks gives the sums over its blocks: the same dict as when scored whole."""
    info: dict[str, Any] = {
        "level": level,
        "trec": trec,
        "complete": complete or not trec,
        "default_k": k,
        "evaluated_depth": None if depth >= NO_CUTOFF else depth,
        "duplicates_dropped": dropped,
        "ties": ties,
        "ties_differ": effect.differ,
        "run": _run_facts_of(queries, rows, fields),
        "gold": _gold_facts(g),
    }
    if effect.rank_vs_score:
        info["rank_vs_score"] = effect.rank_vs_score
    if id_mismatch:
        info["id_mismatch"] = id_mismatch
    _put_run_values(info, fields, run_to_gold, eval_pos, evaluated)
    _put_conversations(info, g, fields, run_to_gold, eval_pos, evaluated)
    return info


def _put_conversations(info: dict[str, Any], g: Gold, fields: dict[str, list[Any]], run_to_gold: np.ndarray,
                       eval_pos: np.ndarray, n: int) -> None:
    """The conversations of the evaluated queries, when the gold set (or else the run) gives them: the run's
    ``conversation_id`` and ``turn`` per evaluated query when the gold set has none (``run_conversations``),
    and how many follow-ups depend on earlier turns (``conversations``)."""
    if "conversation_id" not in g.fields and "conversation_id" in fields:
        at = _evaluated_at(run_to_gold, eval_pos)
        info["run_conversations"] = {name: _per_query(fields[name], at, n) for name in ("conversation_id", "turn")
                                     if name in fields}
    depends = g.fields.get("depends_on_turns")
    if depends is not None:
        info["conversations"] = {"depend_on_earlier_turns": sum(1 for d in depends if d)}


def scored_result(g: Gold, evaluated: np.ndarray, names: tuple[str, ...], values: dict[str, np.ndarray],
                  first_rel: np.ndarray, answerable: np.ndarray, *, missing: tuple[str, ...],
                  not_in_gold: tuple[str, ...], definitions: dict[str, str], inputs: dict[str, Any],
                  info: dict[str, Any]) -> EvaluationResult:
    """The result of the ``evaluated`` gold queries (ascending gold indices; the values, first relevant
    ranks and ``answerable`` flags in that order), with the gold set's segment fields."""
    sel = evaluated.tolist()
    qids = tuple(g.query_ids[i] for i in sel)
    return EvaluationResult(
        query_ids=qids,
        metric_names=names,
        values=values,
        fields=_with_run_segments(_with_run_conversations(_segments(g, sel), info), info),
        first_relevant_rank=first_rel,
        missing_from_run=missing,
        not_in_gold=not_in_gold,
        no_answer=tuple(q for q, a in zip(qids, answerable.tolist()) if not a),
        definitions=definitions,
        inputs=inputs,
        info=info,
    )


def query_texts(g: Gold) -> dict[str, str] | None:
    """Question text by query id, for the queries whose id is only a hash of their question (a RAG
    tool's samples without ids: ``q:…``), so that outputs can show the question; None when there are none.
    A mapping, not a list: it stays right for a subset of the queries."""
    if "query" not in g.fields or not any(q.startswith("q:") for q in g.query_ids):
        return None
    texts = {q: t for q, t in zip(g.query_ids, g.field("query")) if q.startswith("q:") and isinstance(t, str)}
    return texts or None


def input_notices(g: Gold, r: Run) -> list[str]:
    """What the readers of the two inputs want said, each sentence once, the gold set's first."""
    return list(dict.fromkeys([*getattr(g, "notices", ()), *getattr(r, "notices", ())]))


def _with_run_conversations(fields: dict[str, tuple[str | None, ...]],
                            info: dict[str, Any]) -> dict[str, tuple[str | None, ...]]:
    """The segment fields, with the run's conversation ids and turns when the gold set gives none."""
    found = info.get("run_conversations")
    if not found:
        return fields
    from rankgate.model.conversations import turn_label

    out = dict(fields)
    out["conversation_id"] = tuple(None if v is None else str(v) for v in found.get("conversation_id", ()))
    if "turn" in found:
        out["turn"] = tuple(turn_label(v) for v in found["turn"])
    return out


def _with_run_segments(fields: dict[str, tuple[str | None, ...]],
                       info: dict[str, Any]) -> dict[str, tuple[str | None, ...]]:
    """The segment fields, with the run's ``adapter`` per query when the gold set gives no field of that name
    (``--by adapter`` compares the frameworks that produced the records)."""
    found = info.get("run_adapter")
    if not found or ADAPTER_FIELD in fields:
        return fields
    return {**fields, ADAPTER_FIELD: tuple(found)}


def _segments(g: Gold, sel: list[int]) -> dict[str, tuple[str | None, ...]]:
    out: dict[str, tuple[str | None, ...]] = {}
    for name in SEGMENT_FIELDS:
        if name in g.fields:
            out[name] = tuple(g.fields[name][i] for i in sel)
    tags = g.fields.get("tags")
    if tags:
        names = sorted({t for d in tags if d for t in d})
        for t in names:
            out[f"tags.{t}"] = tuple((tags[i] or {}).get(t) for i in sel)
    not_segments = {"tags", "query", "k", "expected_answer", "entities", "must_not_retrieve", "no_answer",
                    "depends_on_turns"}
    if "turn" in g.fields:  # the turn segment: first turns and follow-ups (model/conversations.py)
        from rankgate.model.conversations import turn_label

        out["turn"] = tuple(turn_label(g.fields["turn"][i]) for i in sel)
    for name, col in g.fields.items():  # other scalar fields the gold set carries (difficulty, owner …)
        if name not in out and name not in not_segments:
            out[name] = tuple(None if col[i] is None else str(col[i]) for i in sel)
    return out


def _distinct(values: list[Any]) -> list[Any]:
    """The distinct values (None aside), each once, in the order of their JSON text."""
    import json

    if set(map(type, values)) <= {str, type(None)}:  # (usual: a version or a name per query) one text per string
        return [v for _, v in sorted((json.dumps(v), v) for v in set(values) if v is not None)]
    seen: dict[str, Any] = {}
    for v in values:
        if v is not None:
            seen.setdefault(json.dumps(v, sort_keys=True), v)
    return [seen[k] for k in sorted(seen)]


def _id_mismatch(run_docs: pa.Array | pa.ChunkedArray, gold_docs: pa.Array) -> dict[str, list[str]] | None:
    """Examples of the ids on each side when no retrieved id is any judged id, else None.

    Checked only when nothing relevant was retrieved for any query: then the usual cause is two
    files that name items differently (chunk ids against text-derived ``t:`` ids, ``doc1`` against
    ``doc1#p0``), which would otherwise show only as zero scores."""
    import pyarrow.compute as pc

    try:
        run_unique = pc.unique(pc.cast(run_docs, pa.string()))
        if isinstance(run_unique, pa.ChunkedArray):
            run_unique = run_unique.combine_chunks()
        gold_docs = pc.cast(gold_docs, pa.string())
        if pc.any(pc.is_in(gold_docs, value_set=run_unique)).as_py():
            return None
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):  # a warning never stops a run
        return None
    gold_unique = pc.unique(gold_docs)
    return {"run": [_example_id(x) for x in run_unique.slice(0, 3).to_pylist()],
            "gold": [_example_id(x) for x in gold_unique.slice(0, 3).to_pylist()]}


def _example_id(value: Any, limit: int = 80) -> str:
    """An id shown as an example, cut to ``limit`` characters (a 30 MB id once took a minute to wrap)."""
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def id_mismatch_line(result: EvaluationResult) -> str | None:
    """The warning for a run whose ids never meet the gold set's (every score is then 0), or None."""
    seen = result.info.get("id_mismatch")
    if not seen:
        return None
    run = ", ".join(seen["run"])
    gold = ", ".join(seen["gold"])
    return (f"warning: no retrieved id matches any id in the gold set, so every score is 0: the run has ids "
            f"like {run}; the gold set has {gold}. Name items the same way in both files (contexts matched by "
            f"text get t: ids, so give ids on both sides or texts on both; see docs/formats.md)")


def ties_lines(result: EvaluationResult) -> list[str]:
    """What the tie rule changed, in one line each: a note when the other rule would order some
    queries differently up to the deepest cutoff, a warning when explicit ranks (which order those
    queries alone) put a higher score below a lower one. Empty when neither happened."""
    rule = result.info.get("ties")
    out = []
    differ = result.info.get("ties_differ") or 0
    if differ and rule in RULE_NAMES:
        other = "--ties id ranks them by score, then id, as trec_eval" if rule == "input" else \
            "--ties input keeps the file's order"
        out.append(f"note: {differ} {'query has' if differ == 1 else 'queries have'} tied scores or explicit ranks that "
                   f"the two tie rules order differently; ranked by {RULE_NAMES[rule]} ({other})")
    clash = result.info.get("rank_vs_score") or 0
    if clash:
        out.append(f"warning: in {clash} {'query' if clash == 1 else 'queries'} with a rank on every item, the ranks put a "
                   "higher score below a lower one; ranked by the ranks alone (--ties id ranks by score instead)")
    return out


def _run_facts_of(queries: int, rows: int, fields: dict[str, list[Any]]) -> dict[str, Any]:
    facts: dict[str, Any] = {"queries": queries, "rows": rows}
    for name in ("system", "index_version", "chunker", "embedding_model", "reranker", "corpus_version", "retriever"):
        if name in fields:
            facts[name] = _distinct(fields[name])
    return facts


def _put_run_values(info: dict[str, Any], fields: dict[str, list[Any]], run_to_gold: np.ndarray,
                    eval_pos: np.ndarray, n: int) -> None:
    """The run's logged latencies and other per-query values, for each evaluated query, into ``info``."""
    if not fields:
        return
    at = _evaluated_at(run_to_gold, eval_pos)
    lat = _latency(fields, at, n)
    if lat:
        info["latency_ms"] = lat
    cost = _cost(fields, at, n)
    if cost:
        info["cost"] = cost  # (key -> a value per evaluated query, as latency_ms: rankgate.experiments.cost)
    resources = {name: _per_query(fields[name], at, n) for name in RESOURCE_FIELDS if fields.get(name)}
    if resources:  # (process samples per evaluated query, checked by rankgate.io.resources: experiments.resources)
        info["resources"] = resources
    if fields.get(ADAPTER_FIELD):  # (a segment, unless the gold set gives one: _with_run_segments)
        info["run_adapter"] = _per_query(fields[ADAPTER_FIELD], at, n)
    run_values = {name: _per_query(fields[name], at, n) for name in RUN_VALUE_FIELDS if name in fields}
    if run_values:
        info["run_values"] = run_values


def _gold_facts(g: Gold) -> dict[str, Any]:
    facts: dict[str, Any] = {"queries": len(g.query_ids), "judgements": len(g.j_doc)}
    if "corpus_version" in g.fields:
        facts["corpus_version"] = _distinct(g.fields["corpus_version"])
    return facts


def _per_query(col: list[Any], places: list[int], n: int) -> list[Any]:
    """A run field's value for each evaluated query (None where the run has no value); ``places``:
    each run query's place among the evaluated ones (:func:`_evaluated_at`)."""
    out: list[Any] = [None] * n
    for at, value in zip(places, col):
        if at >= 0:
            out[at] = value
    return out


def _stage_column(n: int) -> list[float | None]:
    """One stage's latency column, one slot per evaluated query (built once per stage)."""
    return [None] * n


def _latency(fields: dict[str, list[Any]], places: list[int], n: int) -> dict[str, list[float | None]]:
    col = fields.get("latency_ms")
    if not col:
        return {}
    out: dict[str, list[float | None]] = {}
    for at, value in zip(places, col):
        if at < 0 or value is None:
            continue
        parts = value if isinstance(value, dict) else {"total": value}
        for stage, ms in parts.items():
            if isinstance(ms, (int, float)) and not isinstance(ms, bool):
                key = str(stage)
                if key not in out:  # not setdefault: its default would be built for every query
                    out[key] = _stage_column(n)
                out[key][at] = float(ms)
    return out


def _cost(fields: dict[str, list[Any]], places: list[int], n: int) -> dict[str, list[float | None]]:
    """The run's ``cost`` objects as a column per key (checked by :func:`rankgate.io.cost.check_costs`), one
    slot per evaluated query, None where a query logs no such key; keys in order of first appearance."""
    col = fields.get("cost")
    if not col:
        return {}
    from rankgate.model.costs import CostColumn

    if isinstance(col, CostColumn):  # (the scanner's columns: a float array per key, NaN where not logged)
        where = np.asarray(places, dtype=np.int64)
        kept = where >= 0
        columns: dict[str, Any] = {}
        for key in col.columns:
            x = np.full(n, np.nan)
            x[where[kept]] = col.as_floats(key)[kept]
            if not np.isnan(x).all():  # (a key only queries not evaluated log: none, as below)
                columns[key] = x
        return columns
    out: dict[str, list[float | None]] = {}
    for at, value in zip(places, col):
        if at < 0 or not value:
            continue
        for key, x in value.items():
            if x is None:
                continue
            if key not in out:
                out[key] = _stage_column(n)
            out[key][at] = float(x)
    return out


def _evaluated_at(run_to_gold: np.ndarray, eval_pos: np.ndarray) -> list[int]:
    """Each run query's place among the evaluated queries; -1 where it is not evaluated."""
    at = np.full(run_to_gold.size, -1, dtype=np.int64)
    known = run_to_gold >= 0
    at[known] = eval_pos[run_to_gold[known]]
    return at.tolist()
