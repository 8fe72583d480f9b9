"""The raw candidates of a run as a scoring input of their own.

A run record may carry ``raw_topk`` beside ``topk``: the candidate list the retriever returned, before
the reranker cut and reordered it (docs/formats.md). :func:`raw_run` gives those lists as a run;
:func:`with_raw` puts the raw lists' per-query values beside the final list's in one result, each raw
row named ``<metric> (raw)`` (:mod:`rankgate.metrics.rankings`), so intervals, paired tests, segments,
gates and every renderer read them as rows like any other.

Which queries a raw row covers: a record without ``raw_topk`` (or with ``null``) has no raw ranking, so
a raw metric does not apply to it (NaN, as a ranking metric on a no-answer query); a record with an
empty ``raw_topk`` list retrieved nothing and scores 0; a gold query the run does not answer at all
scores 0 on both rankings, as it does on the final list.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rankgate.errors import InputError
from rankgate.metrics.rankings import RAW, RAW_FIELD, RAW_SUFFIX, ranked_name, split_ranked

if TYPE_CHECKING:  # pragma: no cover
    from rankgate.model.gold_run import Run
    from rankgate.model.results import EvaluationResult

__all__ = ["RawCoverage", "asks_raw", "coverage", "k_raw", "metric_names", "raw_metrics", "raw_run", "require_raw",
           "with_raw"]


def _lists(run: Run) -> list[Any]:
    col = run.fields.get(RAW_FIELD)
    return list(col) if col else []


def raw_run(run: Run) -> Run | None:
    """The raw candidate lists (``raw_topk`` beside ``topk``) as a run of their own (one record per query
    that has one, an empty list included), or None when no record has one."""
    col = _lists(run)
    if not any(isinstance(v, list) for v in col):
        return None
    from rankgate.io.load import load_run

    records = [{"query_id": q, "topk": v} for q, v in zip(run.query_ids, col) if isinstance(v, list)]
    return load_run(records, label=f"{run.source} ({RAW_FIELD})")


def k_raw(run: Run, raw: Run) -> int:
    """The raw list's cutoff: the most common ``k_raw`` of the records with a raw list, else its depth."""
    from collections import Counter

    from rankgate._util.arrow import code_counts

    col = run.fields.get("k_raw") or []
    raws = _lists(run)
    values = [v for v, r in zip(col, raws) if r and isinstance(v, int) and not isinstance(v, bool) and v > 0]
    if values:
        counts = Counter(values)
        return max(counts, key=lambda v: (counts[v], v))
    return int(code_counts(raw.r_query, len(raw.query_ids)).max()) if len(raw.query_ids) else 0


class RawCoverage:
    """Which of a run's records carry a raw list: ``with_raw`` of ``records`` query ids."""

    def __init__(self, run: Run) -> None:
        col = _lists(run)
        ids = list(run.query_ids)
        self.records = len(ids)
        self.with_raw = frozenset(q for q, v in zip(ids, col) if isinstance(v, list))
        self.without_raw = frozenset(ids) - self.with_raw

    @property
    def partial(self) -> bool:
        return bool(self.with_raw) and bool(self.without_raw)

    def notice(self) -> str:
        """The line said when only some records carry a raw list."""
        n, total = len(self.with_raw), self.records
        return (f"{RAW_FIELD} on {n} of {total} records: the raw-ranking rows are over those {n} queries; the other "
                f"{total - n} have no raw candidate list (add {RAW_FIELD} to them to score them)")


def coverage(run: Run) -> RawCoverage:
    """Which of ``run``'s records carry a raw list (:class:`RawCoverage`)."""
    return RawCoverage(run)


def require_raw(run: Run, what: str = "the raw-ranking rows") -> Run:
    """:func:`raw_run`, or an input error naming the file and the field to add when no record has one."""
    raw = raw_run(run)
    if raw is None:
        raise InputError(
        f"no record has '{RAW_FIELD}', the candidate list before reranking that {what} read",
        path=str(run.source),
        hint=f"add '{RAW_FIELD}': [...] beside 'topk' on each record, in the same item shape (docs/formats.md), "
             "or score the final list only")
    return raw


def asks_raw(metrics: Any) -> bool:
    """Whether ``metrics`` (one comma-separated string, or a list of specs) names a raw-ranking row."""
    if isinstance(metrics, str):
        return RAW_SUFFIX in metrics
    return isinstance(metrics, (list, tuple)) and any(isinstance(m, str) and RAW_SUFFIX in m for m in metrics)


def metric_names(metrics: Any) -> list[str]:
    """The specs of ``metrics`` as texts: a string split at its commas outside parentheses (as
    :func:`rankgate.metrics.spec.parse_metrics` splits it), a list taken as it is."""
    if not isinstance(metrics, str):
        return [str(m).strip() for m in metrics]
    parts, depth, current = [], 0, ""
    for ch in metrics:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return [p.strip() for p in parts if p.strip()]


def raw_metrics(metrics: Sequence[str]) -> tuple[list[str], list[str]]:
    """``(final, raw)``: the metrics of the row names ``metrics`` read on each ranking (raw without the
    suffix), each once, in order."""
    final: list[str] = []
    raw: list[str] = []
    for m in metrics:
        base, ranking = split_ranked(m)
        (raw if ranking == RAW else final).append(base)
    return list(dict.fromkeys(final)), list(dict.fromkeys(raw))


def with_raw(final: EvaluationResult | None, raw: EvaluationResult, cover: RawCoverage, *,
             base: EvaluationResult | None = None) -> EvaluationResult:
    """One result with the raw rows (``<metric> (raw)``) after ``final``'s rows (``final`` None: the raw rows
    alone, on ``base``'s queries, inputs and facts, else the raw result's). Values of the queries whose record
    has no raw list are NaN (the metric does not apply to them)."""
    import numpy as np

    from rankgate.model.results import EvaluationResult

    frame = final if final is not None else (base if base is not None else raw)
    index = raw.query_index()
    pos = np.asarray([index.get(q, -1) for q in frame.query_ids], dtype=np.int64)
    lacking = np.asarray([q in cover.without_raw for q in frame.query_ids], dtype=bool) | (pos < 0)
    values: dict[str, Any] = dict(final.values) if final is not None else {}
    definitions: dict[str, str] = dict(final.definitions) if final is not None else {}
    names = list(final.metric_names) if final is not None else []
    for m in raw.metric_names:
        v = np.asarray(raw.values[m], dtype=np.float64)[np.maximum(pos, 0)].copy()
        v[lacking] = np.nan
        name = ranked_name(m, RAW)
        values[name] = v
        names.append(name)
        d = raw.definitions.get(m)
        definitions[name] = f"{d}; on the raw candidates ({RAW_FIELD})" if d else f"on the raw candidates ({RAW_FIELD})"
    first = frame.first_relevant_rank
    if final is None and raw.first_relevant_rank is not None:  # the raw rows alone: where the raw lists found one
        first = np.asarray(raw.first_relevant_rank)[np.maximum(pos, 0)]
    info = dict(frame.info)
    info["ranking"] = {"field": RAW_FIELD, "queries_with_raw": int((~lacking).sum()), "queries": len(frame.query_ids)}
    return EvaluationResult(
        query_ids=frame.query_ids, metric_names=tuple(names), values=values, fields=frame.fields,
        first_relevant_rank=first, missing_from_run=frame.missing_from_run,
        not_in_gold=frame.not_in_gold, no_answer=frame.no_answer, definitions=definitions,
        inputs=frame.inputs, info=info)
