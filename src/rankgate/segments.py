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

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import UsageError
from .results import EvaluationResult
from .stats import _cis_for

__all__ = ["NONE_LABEL", "SegmentRow", "SegmentSummary", "segment_labels", "segment_summary"]

NONE_LABEL = "(none)"


def _split_by(by: str | Iterable[str]) -> list[str]:
    items = [by] if isinstance(by, str) else list(by)
    out: list[str] = []
    for item in items:
        for part in str(item).split(","):
            if part.strip() and part.strip() not in out:
                out.append(part.strip())
    return out


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
    """Means and intervals per segment; render with :meth:`table` / :meth:`markdown`."""

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

    def to_dict(self) -> dict[str, Any]:
        """``{field: {label: {metric: {"mean", "n", "ci_low", "ci_high"}}}}`` (NaN as null).

        This is the ``segments`` part of ``summary.json``; a gate reads it back as a baseline.
        """
        out: dict[str, Any] = {}
        for r in self.rows:
            out.setdefault(r.field, {}).setdefault(r.label, {})[r.metric] = {
                "mean": _clean(r.mean),
                "n": r.n,
                "ci_low": _clean(r.ci_low),
                "ci_high": _clean(r.ci_high),
            }
        return out

    def table(self, title: str | None = None):
        """A ``rich`` table: one row per segment and metric."""
        from rich.table import Table

        with_ci = self.n_resamples > 0
        table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
        table.add_column("segment", no_wrap=True)
        table.add_column("metric", no_wrap=True)
        table.add_column("n", justify="right")
        table.add_column("mean", justify="right")
        if with_ci:
            table.add_column(f"{self.confidence:.0%} CI", justify="right", no_wrap=True)
        previous = None
        for r in self.rows:
            name = f"{display_field(r.field)} = {r.label}"
            cells = [name if name != previous else "", r.metric, str(r.n), _fmt(r.metric, r.mean)]
            if with_ci:
                cells.append(_fmt_ci(r.metric, r.ci_low, r.ci_high))
            if previous is not None and name != previous:
                table.add_section()
            previous = name
            table.add_row(*cells)
        return table

    def markdown(self) -> str:
        """The same rows as a GitHub-flavoured markdown table."""
        from .report.numbers import md_escape

        with_ci = self.n_resamples > 0
        head = ["segment", "metric", "n", "mean"] + ([f"{self.confidence:.0%} CI"] if with_ci else [])
        lines = ["| " + " | ".join(head) + " |", "|" + "|".join([":--", ":--", "--:", "--:"] + (["--:"] if with_ci else [])) + "|"]
        for r in self.rows:
            cells = [md_escape(f"{display_field(r.field)} = {r.label}"), md_escape(r.metric), str(r.n), _fmt(r.metric, r.mean)]
            if with_ci:
                cells.append(_fmt_ci(r.metric, r.ci_low, r.ci_high))
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines) + "\n"


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
    fields = _split_by(by)
    if not fields:
        raise UsageError("no segment field given; expected e.g. 'intent' or 'lang'")
    names = list(result.metric_names) if metrics is None else [result._name(m) for m in metrics]
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
            cis = _cis_for(values, seed, n_resamples, confidence)
            for m in names:
                v = values[m]
                ok = v[~np.isnan(v)]
                mean = math.fsum(ok.tolist()) / ok.size if ok.size else math.nan
                rows.append(SegmentRow(key, label, m, int(idx.size), int(ok.size), mean, *cis[m]))
    return SegmentSummary(tuple(keys), tuple(names), tuple(rows), seed, n_resamples, confidence)


def _clean(x: float) -> float | None:
    return None if math.isnan(x) else x


def _fmt(metric: str, x: float) -> str:
    """As the panel shows the metric (85.7% for a share, 0.726 for a score), so both tables agree."""
    from .report.numbers import fmt_value

    return fmt_value(metric, x)


def _fmt_ci(metric: str, low: float, high: float) -> str:
    from .report.numbers import fmt_value_ci

    return fmt_value_ci(metric, low, high)
