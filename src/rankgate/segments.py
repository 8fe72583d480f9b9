"""Per-segment means and confidence intervals: how each group of queries (intent, language, tier…) does.

A *segment field* is any gold field or tag the result carries (``intent``, ``source_of_query``,
``tags.lang``, or just ``lang`` for a tag). Several fields are broken down one after the other; join
fields with ``+`` (``intent+lang``) to cross them. Queries without a label fall in ``(none)``.

For each field, label and metric: ``n`` (queries of the segment where the metric applies), the mean
over them, and a bootstrap interval computed as in :func:`rankgate.stats.metric_cis` on the
segment's queries alone (same seed for every segment, so any one segment's numbers reproduce on
their own).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._jsonable import exact_mean, nan_to_none
from .errors import UsageError
from .results import EvaluationResult
from .stats import values_cis

__all__ = [
    "NONE_LABEL", "SegmentRow", "SegmentSummary", "display_field", "field_key", "ordered_labels", "segment_labels",
    "segment_summary", "split_fields",
]

NONE_LABEL = "(none)"


def split_fields(by: str | Iterable[str]) -> list[str]:
    """Segment fields from ``"intent,lang"`` or ``["intent", "lang"]``: stripped, empty parts and repeats dropped."""
    items = [by] if isinstance(by, str) else list(by)
    out: list[str] = []
    for item in items:
        for part in str(item).split(","):
            if part.strip() and part.strip() not in out:
                out.append(part.strip())
    return out


_split_by = split_fields  # the name earlier releases used


def field_key(result: EvaluationResult, name: str) -> str:
    """The canonical key of a field in ``result.fields`` (``lang`` -> ``tags.lang``); ``a+b`` crosses."""
    parts = [p.strip() for p in name.split("+")]
    if not all(parts):
        raise UsageError(f"segment field {name!r} has an empty part; write e.g. 'intent' or 'intent+lang'")
    keys = []
    for part in parts:
        result.segment(part)  # raises UsageError listing the available fields
        keys.append(part if part in result.fields else f"tags.{part}")
    return "+".join(keys)


def display_field(key: str) -> str:
    """``tags.lang`` -> ``lang`` for people; crossed keys likewise."""
    return "+".join(k.removeprefix("tags.") for k in key.split("+"))


def segment_labels(result: EvaluationResult, name: str) -> tuple[str, tuple[str, ...]]:
    """``(canonical key, one label per query)``; missing labels are ``(none)``; crossed labels use `` / ``."""
    key = field_key(result, name)
    columns = [result.fields[k] for k in key.split("+")]
    labels = tuple(
        " / ".join(NONE_LABEL if v is None else str(v) for v in values) for values in zip(*columns)
    )
    return key, labels


def ordered_labels(labels: Sequence[str]) -> list[str]:
    """Distinct labels, sorted, with ``(none)`` last."""
    return sorted(set(labels), key=lambda s: (s == NONE_LABEL, s))


@dataclass(frozen=True)
class SegmentRow:
    """One metric on one segment."""

    field: str
    label: str
    metric: str
    queries: int
    n: int
    mean: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class SegmentSummary:
    """Means and intervals per segment; :meth:`to_dict` for JSON, renderers in :mod:`rankgate.report.tables`."""

    by: tuple[str, ...]
    metrics: tuple[str, ...]
    rows: tuple[SegmentRow, ...]
    seed: int
    n_resamples: int
    confidence: float

    def get(self, field: str, label: str, metric: str) -> SegmentRow | None:
        for row in self.rows:
            if row.field == field and row.label == label and row.metric == metric:
                return row
        return None

    def row(self, field: str, label: str, metric: str) -> SegmentRow:
        """:meth:`get` for a row that is there (every drawn segment has every metric); KeyError if not."""
        found = self.get(field, label, metric)
        if found is None:
            raise KeyError((field, label, metric))
        return found

    def to_dict(self) -> dict[str, Any]:
        """``{field: {label: {metric: {"mean", "n", "ci_low", "ci_high"}}}}`` (NaN as null).

        This is the ``segments`` part of ``summary.json``; a gate reads it back as a baseline.
        """
        out: dict[str, Any] = {}
        for r in self.rows:
            out.setdefault(r.field, {}).setdefault(r.label, {})[r.metric] = {
                "mean": nan_to_none(r.mean),
                "n": r.n,
                "ci_low": nan_to_none(r.ci_low),
                "ci_high": nan_to_none(r.ci_high),
            }
        return out


def segment_summary(
    result: EvaluationResult,
    by: str | Iterable[str],
    *,
    metrics: Sequence[str] | None = None,
    seed: int = 0,
    n_resamples: int = 2000,
    confidence: float = 0.95,
) -> SegmentSummary:
    """Per-segment ``n``, mean and interval of each metric, for each field in ``by``.

    ``by`` is a field name, a comma-separated string or a list (``["intent", "lang"]``); ``a+b``
    crosses two fields. ``metrics`` defaults to every metric of ``result``.
    """
    fields = split_fields(by)
    if not fields:
        raise UsageError("no segment field given; expected e.g. 'intent' or 'lang'")
    names = list(result.metric_names) if metrics is None else [result.resolve_metric(m) for m in metrics]
    rows: list[SegmentRow] = []
    keys: list[str] = []
    for name in fields:
        key, labels = segment_labels(result, name)
        if key in keys:
            continue
        keys.append(key)
        groups: dict[str, list[int]] = {}
        for i, label in enumerate(labels):
            groups.setdefault(label, []).append(i)
        for label in ordered_labels(labels):
            idx = np.asarray(groups[label], dtype=np.int64)
            values = {m: result.values[m][idx] for m in names}
            cis = values_cis(values, seed, n_resamples, confidence)
            for m in names:
                v = values[m]
                ok = v[~np.isnan(v)]
                rows.append(SegmentRow(key, label, m, int(idx.size), int(ok.size), exact_mean(ok), *cis[m]))
    return SegmentSummary(tuple(keys), tuple(names), tuple(rows), seed, n_resamples, confidence)
