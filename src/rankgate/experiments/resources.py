"""Process resources per query, summarised as latency is: percentiles with exact intervals, per segment.

A run may log per query the process samples the traces log per request (docs/traces.md): ``cpu_ms``, the
CPU time the process spent on the query, and ``memory_mb``, its resident memory (checked when the run is
read, :mod:`rankgate.io.resources`). :func:`resource_summary` gives, for each sample the run logs, the
median, p90, p95 and p99 over the queries that log it, each with the exact percentile-bootstrap interval of
the order statistic, over all queries and per segment: the same rows as
:func:`rankgate.experiments.latency.latency_summary` gives for a latency stage
(:func:`~rankgate.experiments.latency.percentile_rows`), with the sample's name in place of the stage.

The samples are shown, never gated: no ship criterion reads them (a process's memory says more about the
host than about the retriever). Traces can watch them over time (``resources.*`` monitors, docs/traces.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from rankgate.experiments.latency import LatencySummary, percentile_rows
from rankgate.io.resources import RESOURCE_FIELDS
from rankgate.stats.options import Statistics, taken

if TYPE_CHECKING:  # pragma: no cover
    from rankgate.model.results import EvaluationResult

__all__ = ["ResourceSummary", "resource_columns", "resource_summary"]


def resource_columns(result: EvaluationResult) -> dict[str, np.ndarray]:
    """Sample -> per-query value (NaN where not logged), aligned with ``result.query_ids``, for the samples
    the run logs, in the order of :data:`~rankgate.io.resources.RESOURCE_FIELDS`."""
    raw: Mapping[str, Sequence[float | None]] = result.info.get("resources") or {}
    return {name: np.asarray([math.nan if v is None else float(v) for v in raw[name]], dtype=np.float64)
            for name in RESOURCE_FIELDS if name in raw}


@dataclass(frozen=True)
class ResourceSummary(LatencySummary):
    """The percentiles of each process sample over all queries and each segment: a latency summary whose
    rows' ``stage`` names the sample (``cpu_ms``, ``memory_mb``; :meth:`get` takes it), written with the
    sample's name and unit in ``summary.json``."""

    def to_dict(self) -> dict[str, Any]:
        rows = []
        for r in self.rows:
            d = r.to_dict()
            rows.append({"sample": r.stage, "unit": RESOURCE_FIELDS[r.stage], "stat": r.stat, "segment": r.segment,
                         "n": r.n, "value": d["ms"], "ci": d["ci"]})
        return {"rows": rows,
                "method": "over the queries that log the sample: percentiles by numpy's linear interpolation; "
                          "intervals: the exact percentile-bootstrap interval of the nearest order statistic "
                          "(binomial, no resampling), as for latency",
                "gated": False,
                "statistics": {"seed": self.seed, "resamples": self.resamples, "confidence": self.confidence}}


def resource_summary(result: EvaluationResult, *, by: Sequence[str] = (), statistics: Statistics | None = None,
                     seed: int = 0, resamples: int = 2000, confidence: float = 0.95) -> ResourceSummary | None:
    """Median, p90, p95, p99 of ``cpu_ms`` and ``memory_mb`` with intervals, over all queries and each segment
    of ``by``; None when the run logs neither (its outputs then stay as they were)."""
    seed, resamples, confidence = taken(statistics, seed, resamples, confidence, caller="resource_summary",
                                         defaults=(0, 2000, 0.95))
    columns = resource_columns(result)
    if not columns:
        return None
    rows = percentile_rows(columns, result, by, resamples=resamples, confidence=confidence)
    return ResourceSummary(rows, confidence, resamples, seed)
