"""The paired table every experiment reports: a metric before and after, per segment, with CIs.

``before`` and ``after`` are two :class:`~rankgate.model.results.EvaluationResult` of the same gold set
(the same queries in the same order): a run as logged and the same run with newer documents removed,
a reranker's input and its output, the original and the rewritten query. Each row holds both means,
the mean paired change ``after − before`` over the queries where the metric applies in both, and its
percentile-bootstrap interval (:func:`rankgate.stats.bootstrap.paired_bootstrap_ci`). Segments (``--by``) add
one row per label; the seed of every interval is the one given, so rows are reproducible.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rankgate.errors import UsageError
from rankgate.model.results import EvaluationResult
from rankgate.stats.segments import display_field, members_of, ordered_labels, segment_labels
from rankgate.stats.bootstrap import paired_bootstrap_ci, paired_values

__all__ = ["PairedRow", "nan_to_none", "paired_rows"]


@dataclass(frozen=True)
class PairedRow:
    """One metric over one group of queries, before and after."""

    metric: str
    segment: str | None  # "lang=de", or None for all queries
    n: int  # queries where the metric applies in both
    before: float
    after: float
    delta: float
    ci: tuple[float, float]

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "segment": self.segment, "n": self.n, "before": nan_to_none(self.before),
                "after": nan_to_none(self.after), "delta": nan_to_none(self.delta),
                "ci": [nan_to_none(self.ci[0]), nan_to_none(self.ci[1])]}


def nan_to_none(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def _mean(x: np.ndarray) -> float:
    return math.fsum(x.tolist()) / x.size if x.size else math.nan


def _row(metric: str, segment: str | None, b: np.ndarray, a: np.ndarray, *, seed: int, resamples: int,
         confidence: float) -> PairedRow:
    pb, pa_ = paired_values(b, a)
    ci = paired_bootstrap_ci(b, a, rng=seed, resamples=resamples, confidence=confidence)
    return PairedRow(metric, segment, int(pb.size), _mean(pb), _mean(pa_), _mean(pa_ - pb), ci)


def paired_rows(before: EvaluationResult, after: EvaluationResult, *, metrics: Sequence[str] | None = None,
                by: Sequence[str] = (), seed: int = 0, resamples: int = 2000,
                confidence: float = 0.95) -> tuple[PairedRow, ...]:
    """Rows for every metric (all queries first, then each ``by`` field's labels in sorted order)."""
    if tuple(before.query_ids) != tuple(after.query_ids):
        raise UsageError("the two results must cover the same queries in the same order")
    names = list(before.metric_names) if metrics is None else [before._name(m) for m in metrics]
    groups: list[tuple[str | None, np.ndarray]] = [(None, np.ones(len(before.query_ids), dtype=bool))]
    for field in by:
        key, labels = segment_labels(before, field)
        values = ordered_labels(labels)
        groups += [(f"{display_field(key)}={value}", idx) for value, idx in zip(values, members_of(labels, values))]
    rows = []
    for name in names:
        b, a = np.asarray(before.values[name], dtype=np.float64), np.asarray(after.values[name], dtype=np.float64)
        for label, mask in groups:
            rows.append(_row(name, label, b[mask], a[mask], seed=seed, resamples=resamples,
                             confidence=confidence))
    return tuple(rows)
