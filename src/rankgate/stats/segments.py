"""Per-segment means and confidence intervals: how each group of queries (intent, language, tier…) does.

A *segment field* is any gold field or tag the result carries (``intent``, ``source_of_query``,
``tags.lang``, or just ``lang`` for a tag). Several fields are broken down one after the other; join
fields with ``+`` (``intent+lang``) to cross them. Queries without a label fall in ``(none)``.

For each field, label and metric: ``n`` (queries of the segment where the metric applies), the mean
over them, and a bootstrap interval computed as in :func:`rankgate.stats.bootstrap.metric_cis` on the
segment's queries alone (same seed for every segment, so any one segment's numbers reproduce on
their own). Every segment is computed, however many a field has (the segments of one size are
resampled together: :func:`rankgate.stats.bootstrap.grouped_bootstrap_cis`); what a person reads is bounded
by :func:`shown_segments`: at most :data:`MAX_SHOWN_SEGMENTS` of a field, the largest. When the queries
carry a ``conversation_id``, each segment's interval resamples the conversations of its queries
(:func:`rankgate.stats.bootstrap.grouped_cluster_cis`, :mod:`rankgate.stats.clusters`); the ``turn``
field (``first`` / ``follow_up``) splits first turns from follow-ups.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np

from rankgate._util.jsonable import exact_means, nan_to_none
from rankgate.errors import UsageError
from rankgate.model.results import EvaluationResult
from rankgate.stats.bootstrap import grouped_bootstrap_cis, grouped_cluster_cis
from rankgate.stats.clusters import conversation_codes
from rankgate.stats.options import Statistics, taken

__all__ = [
    "ID_LIKE_MIN_VALUES", "MAX_SHOWN_SEGMENTS", "NONE_LABEL", "SegmentColumns", "SegmentRow", "SegmentRows",
    "SegmentSummary", "ShownSegments", "display_field", "field_key", "label_groups", "looks_like_id", "members_of",
    "ordered_labels", "segment_labels", "segment_summary", "shown_segments", "split_fields",
]

NONE_LABEL = "(none)"

MAX_SHOWN_SEGMENTS = 50
"""Segments of one field a table for people shows at most (terminal, markdown, PR comment, HTML report): the
largest; a line counts the rest, which ``summary.json`` and ``--json`` keep whole."""


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


def label_groups(labels: Sequence[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``(distinct labels in :func:`ordered_labels` order, the position of each query's label among them,
    the queries of each label in label order and, within a label, in query order)``: a field's grouping
    in one pass, whatever its number of labels."""
    distinct = ordered_labels(labels)
    code = {label: i for i, label in enumerate(distinct)}
    codes = np.fromiter((code[label] for label in labels), dtype=np.int64, count=len(labels))
    return distinct, codes, np.argsort(codes, kind="stable")


def members_of(labels: Sequence[Any], distinct: Sequence[str]) -> list[np.ndarray]:
    """For each label of ``distinct``, the positions in ``labels`` that carry it, ascending (one pass, not
    one comparison of every query per label: a field of 50,000 labels); positions with any other label
    (or None) are in none."""
    at = {label: i for i, label in enumerate(distinct)}
    found: list[list[int]] = [[] for _ in distinct]
    for j, label in enumerate(labels):
        i = at.get(label) if isinstance(label, str) else None
        if i is not None:
            found[i].append(j)
    return [np.asarray(f, dtype=np.int64) for f in found]


@dataclass(frozen=True)
class ShownSegments:
    """Which segments of one field a table for people shows (:func:`shown_segments`)."""

    labels: tuple[str, ...]  # in the order to show them
    left_out: int  # segments not shown
    left_out_queries: int  # their queries
    values: int  # the field's distinct values (segments)
    queries: int  # queries the field was broken down over

    @property
    def id_like(self) -> bool:
        """More distinct values than half the queries: the field hardly groups them (:func:`looks_like_id`)."""
        return looks_like_id(self.values, self.queries)


ID_LIKE_MIN_VALUES = 20
"""Distinct values a field needs before it is called id-like: a handful of labels over a handful of
queries (a small example gold set) is a table anyone can read, not a mistake."""


def looks_like_id(values: int, queries: int) -> bool:
    """A segment field with more distinct values than half its queries (and more than
    :data:`ID_LIKE_MIN_VALUES`) does not group them: most segments hold one or two queries, so it is more
    likely an id than a segment."""
    return values > queries / 2 and values > ID_LIKE_MIN_VALUES


def shown_segments(sizes: Mapping[str, int] | Sequence[tuple[str, int]], queries: int | None = None, *,
                   limit: int = MAX_SHOWN_SEGMENTS) -> ShownSegments:
    """The segments of one field a table shows: all of them, in the order given, when there are at most
    ``limit``; else the ``limit`` largest by queries, largest first (equal sizes in the order given),
    and how many segments and queries were left out. ``sizes``: label -> its queries, in the field's
    order; ``queries``: the queries the field was broken down over (default: the sum of the sizes)."""
    items = list(sizes.items()) if isinstance(sizes, Mapping) else [(str(k), int(n)) for k, n in sizes]
    total = sum(n for _, n in items) if queries is None else int(queries)
    if len(items) <= limit:
        return ShownSegments(tuple(k for k, _ in items), 0, 0, len(items), total)
    order = sorted(range(len(items)), key=lambda i: -items[i][1])[:limit]  # (a stable sort: ties in field order)
    kept = [items[i] for i in order]
    return ShownSegments(tuple(k for k, _ in kept), len(items) - limit, sum(n for _, n in items) - sum(n for _, n in kept),
                         len(items), total)


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


class SegmentColumns(NamedTuple):
    """One field's numbers (:meth:`SegmentSummary.columns`): ``n``, ``mean``, ``ci_low`` and ``ci_high`` hold an
    entry per (metric, label), metric by metric and, within a metric, label by label (``j * len(labels) + i``)."""

    field: str
    labels: tuple[str, ...]
    metrics: tuple[str, ...]
    n: list[int]
    mean: list[float]
    ci_low: list[float]
    ci_high: list[float]


class _FieldRows:
    """One field's rows as columns (what :func:`segment_summary` computed): a label's rows are made when read."""

    __slots__ = ("field", "labels", "metrics", "queries", "n", "mean", "ci_low", "ci_high", "_at")

    def __init__(self, field: str, labels: list[str], metrics: list[str], queries: list[int], n: list[int],
                 mean: list[float], ci_low: list[float], ci_high: list[float]) -> None:
        # n, mean, ci_low and ci_high: metric by metric, label by label within (entry j * labels + i)
        self.field, self.labels, self.metrics, self.queries = field, labels, metrics, queries
        self.n, self.mean, self.ci_low, self.ci_high = n, mean, ci_low, ci_high
        self._at: dict[str, int] | None = None

    def __len__(self) -> int:
        return len(self.labels) * len(self.metrics)

    def row(self, r: int) -> SegmentRow:
        i, j = divmod(r, len(self.metrics))
        g = j * len(self.labels) + i
        return SegmentRow(self.field, self.labels[i], self.metrics[j], self.queries[i], self.n[g], self.mean[g],
                          self.ci_low[g], self.ci_high[g])

    def index(self, label: str) -> int | None:
        if self._at is None:
            self._at = {label: i for i, label in enumerate(self.labels)}
        return self._at.get(label)


class SegmentRows(Sequence[SegmentRow]):
    """The rows of a :class:`SegmentSummary` from :func:`segment_summary`, held as columns: a field of 50,000
    segments makes no row object until one is read (a table for people reads 50 segments; ``summary.json``
    reads the columns). A sequence of :class:`SegmentRow` like the tuple it stands for, equal to it."""

    def __init__(self, blocks: Sequence[_FieldRows]) -> None:
        self.blocks = tuple(blocks)
        self._ends = list(np.cumsum([len(b) for b in self.blocks]).tolist())

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(len(self))))
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("segment row index out of range")
        b = int(np.searchsorted(self._ends, i, side="right"))
        return self.blocks[b].row(i - (self._ends[b - 1] if b else 0))

    def __iter__(self) -> Any:
        for block in self.blocks:
            for r in range(len(block)):
                yield block.row(r)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (tuple, SegmentRows)):
            return len(self) == len(other) and tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return repr(tuple(self))


@dataclass(frozen=True)
class SegmentSummary:
    """Means and intervals per segment; :meth:`to_dict` for JSON, renderers in :mod:`rankgate.render.tables`.

    ``rows``: every (field, label, metric) row, fields in ``by`` order, labels in :func:`ordered_labels`
    order, metrics in ``metrics`` order (a tuple, or :class:`SegmentRows` from :func:`segment_summary`)."""

    by: tuple[str, ...]
    metrics: tuple[str, ...]
    rows: Sequence[SegmentRow]
    seed: int
    resamples: int
    confidence: float

    def get(self, field: str, label: str, metric: str) -> SegmentRow | None:
        columns = self._columns
        if columns is not None:
            block = columns.get(field)
            i = None if block is None else block.index(label)
            if block is None or i is None or metric not in block.metrics:
                return None
            return block.row(i * len(block.metrics) + block.metrics.index(metric))
        return self._index.get((field, label, metric))

    @cached_property
    def _columns(self) -> dict[str, _FieldRows] | None:
        """field -> its columns, when the rows are held as columns (:class:`SegmentRows`)."""
        return {b.field: b for b in self.rows.blocks} if isinstance(self.rows, SegmentRows) else None

    @cached_property
    def _index(self) -> dict[tuple[str, str, str], SegmentRow]:
        """(field, label, metric) -> row, built on the first look-up of rows given as a tuple."""
        index: dict[tuple[str, str, str], SegmentRow] = {}
        for row in self.rows:
            index.setdefault((row.field, row.label, row.metric), row)
        return index

    def row(self, field: str, label: str, metric: str) -> SegmentRow:
        """:meth:`get` for a row that is there (every drawn segment has every metric); KeyError if not."""
        found = self.get(field, label, metric)
        if found is None:
            raise KeyError((field, label, metric))
        return found

    def sizes(self, field: str) -> dict[str, int]:
        """label -> queries of each segment of ``field``, in the order of the rows."""
        return dict(self._sizes.get(field, {}))

    @cached_property
    def _sizes(self) -> dict[str, dict[str, int]]:
        if self._columns is not None:
            return {f: dict(zip(b.labels, b.queries)) for f, b in self._columns.items()}
        out: dict[str, dict[str, int]] = {}
        for row in self.rows:
            out.setdefault(row.field, {}).setdefault(row.label, row.queries)
        return out

    def shown(self, field: str, limit: int = MAX_SHOWN_SEGMENTS) -> ShownSegments:
        """The segments of ``field`` a table for people shows (:func:`shown_segments`)."""
        return shown_segments(self._sizes.get(field, {}), limit=limit)

    def columns(self) -> list[SegmentColumns] | None:
        """Each field's numbers as columns (:class:`SegmentColumns`), in ``by`` order: what :meth:`to_dict`
        holds, for a writer of 50,000 segments that need not build a dict per segment; None when the rows
        were given as a tuple (read :meth:`to_dict`)."""
        if self._columns is None:
            return None
        return [SegmentColumns(b.field, tuple(b.labels), tuple(b.metrics), b.n, b.mean, b.ci_low, b.ci_high)
                for b in self._columns.values()]

    def to_dict(self) -> dict[str, Any]:
        """``{field: {label: {metric: {"mean", "n", "ci_low", "ci_high"}}}}`` (NaN as null).

        This is the ``segments`` part of ``summary.json``; a gate reads it back as a baseline.
        """
        out: dict[str, Any] = {}
        if self._columns is not None:  # (the same dict, from the columns)
            for f, b in self._columns.items():
                k = len(b.labels)
                labels = out.setdefault(f, {})
                for i, label in enumerate(b.labels):
                    cell = labels.setdefault(label, {})
                    for j, m in enumerate(b.metrics):
                        g = j * k + i
                        cell[m] = {"mean": nan_to_none(b.mean[g]), "n": b.n[g], "ci_low": nan_to_none(b.ci_low[g]),
                                   "ci_high": nan_to_none(b.ci_high[g])}
            return out
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
    statistics: Statistics | None = None,
    seed: int = 0,
    resamples: int = 2000,
    confidence: float = 0.95,
) -> SegmentSummary:
    """Per-segment ``n``, mean and interval of each metric, for each field in ``by``.

    ``by`` is a field name, a comma-separated string or a list (``["intent", "lang"]``); ``a+b``
    crosses two fields. ``metrics`` defaults to every metric of ``result``.
    """
    seed, resamples, confidence = taken(statistics, seed, resamples, confidence, caller="segment_summary",
                                         defaults=(0, 2000, 0.95))
    fields = split_fields(by)
    if not fields:
        raise UsageError("no segment field given; expected e.g. 'intent' or 'lang'")
    names = list(result.metric_names) if metrics is None else [result.resolve_metric(m) for m in metrics]
    blocks: list[_FieldRows] = []
    keys: list[str] = []
    conversations = conversation_codes(result)
    for name in fields:
        key, labels = segment_labels(result, name)
        if key in keys:
            continue
        keys.append(key)
        distinct, codes, order = label_groups(labels)
        k = len(distinct)
        queries = np.bincount(codes, minlength=k).tolist()
        # Every (metric, segment)'s applicable values one after the other, metric by metric: one call
        # draws every interval (each the one values_cis gives that segment alone).
        parts, counts, units = [], [], []
        sorted_codes = codes[order]
        for m in names:
            v = np.asarray(result.values[m], dtype=np.float64)[order]
            ok = ~np.isnan(v)
            parts.append(v[ok])
            counts.append(np.bincount(sorted_codes[ok], minlength=k))
            if conversations is not None:
                units.append(conversations[order][ok])
        values = np.concatenate(parts) if parts else np.zeros(0)
        offsets = np.concatenate(([0], np.cumsum(np.concatenate(counts)))) if counts else np.zeros(1, dtype=np.int64)
        if conversations is not None:
            low, high = grouped_cluster_cis(values, offsets, np.concatenate(units) if units else np.zeros(0, dtype=np.int64),
                                            seed=seed, resamples=resamples, confidence=confidence)
        else:
            low, high = grouped_bootstrap_cis(values, offsets, seed=seed, resamples=resamples, confidence=confidence)
        blocks.append(_FieldRows(key, distinct, names, queries, np.diff(offsets).tolist(), exact_means(values, offsets),
                                 low.tolist(), high.tolist()))
    return SegmentSummary(tuple(keys), tuple(names), SegmentRows(blocks), seed, resamples, confidence)
