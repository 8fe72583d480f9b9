"""Freshness what-if: score a run as if it could not see documents newer than each query's label.

A gold query's ``as_of`` is the date its judgements describe; a retrieved item's ``doc_version`` is
the version (a date) of its document. An item whose version is *newer* than the query's ``as_of``
could not have been known when the label was made: if the run scores well thanks to such items, the
number overstates what the label can vouch for. :func:`enforce_as_of` drops those items from the run
(the remaining items keep their scores, so they move up) and :func:`freshness_what_if` evaluates the
run as logged and as enforced and reports the paired difference per metric and segment.

Dates: ``as_of`` and ``doc_version`` are ISO dates (``2026-05-01``) or ISO timestamps, compared by
their calendar date. An item without a ``doc_version``, or whose version is not a date (``v3``),
cannot be placed in time: it is kept and counted (``unversioned``). A query without ``as_of`` keeps
every item. An ``as_of`` that is not a date is an input error naming the query.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa

from rankgate.model.gold_run import Gold, Run
from rankgate.errors import InputError
from rankgate.model.results import EvaluationResult
from rankgate.experiments.paired import PairedRow, paired_rows
from rankgate.stats.options import Statistics, taken

__all__ = ["AsOfFilter", "FreshnessWhatIf", "as_date", "enforce_as_of", "freshness_what_if"]

_DATE = re.compile(r"^\s*(\d{4})-(\d{2})-(\d{2})(?:$|[T ]\S*\s*$)")


def as_date(value: Any) -> dt.date | None:
    """The calendar date of an ISO date or timestamp; None for anything else (``v3``, None, 20260501)."""
    if not isinstance(value, str):
        return None
    m = _DATE.match(value)
    if not m:
        return None
    try:
        return dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


@dataclass(frozen=True)
class AsOfFilter:
    """What :func:`enforce_as_of` removed."""

    rows: int  # run rows seen (queries in the gold set)
    dropped: int  # rows whose version is newer than their query's as_of
    unversioned: int  # rows without a doc_version that is a date (kept)
    queries_with_as_of: int  # gold queries that have an as_of
    queries_affected: tuple[str, ...]  # queries that lost at least one item, in run order
    dropped_by_query: tuple[tuple[str, int], ...]  # (query_id, items dropped), run order

    def to_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "dropped": self.dropped, "unversioned": self.unversioned,
                "queries_with_as_of": self.queries_with_as_of, "queries_affected": len(self.queries_affected),
                "dropped_by_query": dict(self.dropped_by_query)}


def _as_of_dates(gold: Gold) -> dict[str, dt.date]:
    out: dict[str, dt.date] = {}
    for qid, value in zip(gold.query_ids, gold.field("as_of")):
        if value is None or (isinstance(value, str) and not value.strip()):
            continue
        date = as_date(value if isinstance(value, str) else str(value))
        if date is None:
            raise InputError(f"query {qid!r} has as_of {value!r}; expected an ISO date such as 2026-05-01"[:200],
                             path=gold.source, field="as_of",
                             hint="--enforce-as-of compares as_of with each item's doc_version as dates")
        out[qid] = date
    return out


def enforce_as_of(gold: Gold, run: Run) -> tuple[Run, AsOfFilter]:
    """``run`` without the items whose ``doc_version`` is newer than their query's ``as_of``.

    Raises :class:`InputError` when the run has no ``doc_version`` at all (nothing could be checked:
    the what-if would silently change nothing) or a gold ``as_of`` is not a date.
    """
    as_of = _as_of_dates(gold)
    versions = run.items.get("doc_version")
    if versions is None or all(v is None for v in versions):
        raise InputError("has no doc_version on any retrieved item, so --enforce-as-of cannot tell which items are "
                         "newer than the label", path=run.source, field="doc_version",
                         hint="log each item's document version (an ISO date) as 'doc_version' in the run")
    n = len(run)
    q_of_row = run.r_query
    limit = [as_of.get(q) for q in run.query_ids]
    drop = np.zeros(n, dtype=bool)
    unversioned = 0
    cache: dict[Any, dt.date | None] = {}
    for i, (qi, v) in enumerate(zip(q_of_row.tolist(), versions)):
        if v not in cache:
            cache[v] = as_date(v if isinstance(v, str) else (None if v is None else str(v)))
        date = cache[v]
        if date is None:
            unversioned += 1
            continue
        lim = limit[qi]
        if lim is not None and date > lim:
            drop[i] = True
    counts = np.bincount(q_of_row[drop], minlength=len(run.query_ids))
    by_query = tuple((run.query_ids[i], int(c)) for i, c in enumerate(counts.tolist()) if c)
    keep = ~drop
    idx = np.flatnonzero(keep)
    doc = run.r_doc.combine_chunks() if isinstance(run.r_doc, pa.ChunkedArray) else run.r_doc
    filtered = replace(
        run,
        r_query=run.r_query[keep],
        r_doc=doc.filter(pa.array(keep)),
        r_score=None if run.r_score is None else run.r_score[keep],
        r_order=None if run.r_order is None else run.r_order[keep],
        items={k: [col[i] for i in idx.tolist()] for k, col in run.items.items()},
    )
    gold_ids = set(gold.query_ids)
    rows = int(sum(1 for qi in q_of_row.tolist() if run.query_ids[qi] in gold_ids)) if n else 0
    info = AsOfFilter(rows, int(drop.sum()), unversioned, len(as_of), tuple(q for q, _ in by_query), by_query)
    return filtered, info


@dataclass(frozen=True)
class FreshnessWhatIf:
    """A run as logged and as it would score without documents newer than each query's as_of."""

    filter: AsOfFilter
    as_logged: EvaluationResult
    enforced: EvaluationResult
    rows: tuple[PairedRow, ...]  # before = as logged, after = enforced

    def to_dict(self) -> dict[str, Any]:
        return {"filter": self.filter.to_dict(), "metrics": [r.to_dict() for r in self.rows],
                "definition": "items whose doc_version is newer than the query's as_of are removed and the "
                              "rest move up; delta = enforced - as logged, paired over queries"}


def freshness_what_if(gold: Gold, run: Run, evaluate: Any, *, by: Sequence[str] = (),
                      statistics: Statistics | None = None, seed: int = 0,
                      resamples: int = 2000, confidence: float = 0.95) -> FreshnessWhatIf:
    """Evaluate ``run`` as logged and with :func:`enforce_as_of`; ``evaluate(gold, run)`` scores one run."""
    seed, resamples, confidence = taken(statistics, seed, resamples, confidence, caller="freshness_what_if",
                                         defaults=(0, 2000, 0.95))
    enforced_run, info = enforce_as_of(gold, run)
    logged = evaluate(gold, run)
    enforced = evaluate(gold, enforced_run)
    rows = paired_rows(logged, enforced, by=by, seed=seed, resamples=resamples, confidence=confidence)
    return FreshnessWhatIf(info, logged, enforced, rows)
