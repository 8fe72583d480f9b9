"""Latency, measured so that noise does not decide: percentiles with intervals, and latency gates.

A run logs ``latency_ms`` per query: a number (the total) or an object of stages (``{"retrieve":
12.1, "rerank": 30.4}``); ``rankgate retrieve --repeat N`` writes the median of N timings of each
stage. :func:`latency_summary` gives, per stage (and ``total``, the sum of the stages, when a run
logs more than one), the median, p90, p95 and p99 over queries with a percentile-bootstrap interval,
computed exactly from the bootstrap distribution of the order statistic
(:func:`rankgate.stats.bootstrap.exact_quantile_ci`: no resampling, so 100,000 queries cost milliseconds),
over all queries and per segment.

Latency gates (the ``latency:`` list of the ship criteria, :class:`LatencyGate`) are decided on those
intervals, as the quality gates are:

``median_ms`` / ``p90_ms`` / ``p95_ms`` / ``p99_ms`` (ceilings)
    ``on: ci_lower`` (default): fail only when the *lower* bound of the percentile's interval is above
    the ceiling — the run is over budget beyond what the spread of its timings explains; a percentile
    whose interval straddles the ceiling passes with a note. ``on: estimate`` compares the percentile
    itself; ``on: ci_upper`` passes only when the whole interval is under the ceiling (strict).
``regression_max_ms`` (against a baseline run with timings)
    fail only when the percentile grew by more than the limit **and** the paired interval of the
    change (:func:`rankgate.stats.bootstrap.paired_quantile_change_ci`) excludes zero.

A stage the run does not log makes the gate's checks warnings (they cannot be checked); segments with
fewer than ``min_queries`` timed queries are shown, not gated.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from rankgate._util.configfile import ConfigItem, ConfigReader
from rankgate.experiments.ceilings import (
    ON,
    CeilingCheck,
    CeilingGate,
    CeilingGateResult,
    Quantity,
    decide_ceilings,
    query_groups,
    read_ceiling_gates,
)
from rankgate.metrics.display import fmt_ms, fmt_score, fmt_sig
from rankgate.model.results import EvaluationResult
from rankgate.stats.bootstrap import exact_quantile_ci, paired_quantile_change_ci
from rankgate.stats.options import Statistics, taken

__all__ = ["STATS", "LatencyCheck", "LatencyGate", "LatencyGateResult", "LatencyRow", "LatencySummary",
           "decide_latency", "latency_stages", "latency_summary", "percentile_rows", "read_latency_gates"]

#: The percentiles reported and gated, by name.
STATS: dict[str, float] = {"median": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99}
EPS = 1e-9
#: The keys of one gate of the ship criteria' ``latency:`` list, and what ``on:`` may say.
LATENCY_KEYS = ("name", "stage", "median_ms", "p90_ms", "p95_ms", "p99_ms", "regression_max_ms", "on", "segments",
                "min_queries", "severity", "label", "owner")
LATENCY_ON = ON


def latency_stages(result: EvaluationResult) -> dict[str, np.ndarray]:
    """Stage -> per-query milliseconds (NaN where not logged), aligned with ``result.query_ids``;
    ``total`` is added as the sum of the stages when there are several and none is called total."""
    raw: Mapping[str, Sequence[float | None]] = result.info.get("latency_ms") or {}
    out = {stage: np.asarray([math.nan if v is None else float(v) for v in vals], dtype=np.float64)
           for stage, vals in raw.items()}
    if len(out) > 1 and "total" not in out:
        out["total"] = np.sum(np.vstack(list(out.values())), axis=0)  # NaN where any stage is missing
    return out


def _cis(x: np.ndarray, qs: list[float], resamples: int, confidence: float) -> list[tuple[float, float]]:
    """Intervals of the percentiles: the exact bootstrap (no resampling; ``resamples=0`` turns them off)."""
    if resamples == 0:
        return [(math.nan, math.nan)] * len(qs)
    return exact_quantile_ci(x, qs, confidence=confidence)  # type: ignore[return-value]


def _quantile(x: np.ndarray, q: float) -> float:
    x = x[~np.isnan(x)]
    return float(np.quantile(x, q)) if x.size else math.nan


@dataclass(frozen=True)
class LatencyRow:
    """One percentile of one stage over one group of queries."""

    stage: str
    stat: str  # median | p90 | p95 | p99
    segment: str | None  # "lang=de", or None for all queries
    n: int
    value: float
    ci: tuple[float, float]

    def to_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "stat": self.stat, "segment": self.segment, "n": self.n,
                "ms": _num(self.value), "ci": [_num(self.ci[0]), _num(self.ci[1])]}


def _num(x: float) -> float | None:
    return None if math.isnan(x) else round(float(x), 6)


@dataclass(frozen=True)
class LatencySummary:
    rows: tuple[LatencyRow, ...]
    confidence: float
    resamples: int
    seed: int

    def get(self, stage: str, stat: str, segment: str | None = None) -> LatencyRow | None:
        return next((r for r in self.rows if (r.stage, r.stat, r.segment) == (stage, stat, segment)), None)

    def to_dict(self) -> dict[str, Any]:
        return {"rows": [r.to_dict() for r in self.rows],
                "method": "percentiles by numpy's linear interpolation; intervals: the exact percentile-bootstrap "
                          "interval of the nearest order statistic (binomial, no resampling)",
                "statistics": {"seed": self.seed, "resamples": self.resamples, "confidence": self.confidence}}


def latency_summary(result: EvaluationResult, *, by: Sequence[str] = (),
                    statistics: Statistics | None = None, seed: int = 0, resamples: int = 2000,
                    confidence: float = 0.95) -> LatencySummary:
    """Median, p90, p95, p99 of every stage, with intervals, over all queries and each segment of ``by``."""
    seed, resamples, confidence = taken(statistics, seed, resamples, confidence, caller="latency_summary",
                                         defaults=(0, 2000, 0.95))
    rows = percentile_rows(latency_stages(result), result, by, resamples=resamples, confidence=confidence)
    return LatencySummary(rows, confidence, resamples, seed)


def percentile_rows(columns: Mapping[str, np.ndarray], result: EvaluationResult, by: Sequence[str] = (), *,
                    resamples: int = 2000, confidence: float = 0.95) -> tuple[LatencyRow, ...]:
    """The percentiles of :data:`STATS` of each column (name -> a value per query of ``result``, NaN where
    not logged) with their exact intervals, over all queries and each segment of ``by``: the rows of
    :func:`latency_summary`, and of any other per-query measurement summarised as latency is (the process
    samples of :mod:`rankgate.experiments.resources`). A row's ``stage`` is the column's name."""
    rows = []
    groups = query_groups(result, by)
    for stage, x in columns.items():
        for label, mask in groups:
            xs = x[mask]
            n = int((~np.isnan(xs)).sum())
            cis = _cis(xs, list(STATS.values()), resamples, confidence)
            for (stat, q), ci in zip(STATS.items(), cis):
                rows.append(LatencyRow(stage, stat, label, n, _quantile(xs, q), ci))
    return tuple(rows)


# -- gates ---------------------------------------------------------------------------------------
# (the gate, its checks and deciding them are the ceiling gates' of rankgate.experiments.ceilings; here is what
# makes them latency's: percentiles of a stage in milliseconds, with their exact intervals)
@dataclass(frozen=True, kw_only=True)
class LatencyGate(CeilingGate):
    """One latency criterion: ceilings on percentiles of a stage (ms) and/or a regression limit."""

    SECTION: ClassVar[str] = "latency"
    SUBJECT: ClassVar[str] = "stage"
    REGRESSION: ClassVar[str] = "regression_max_ms"
    CEILINGS: ClassVar[str] = "ceilings_ms"
    FIRST: ClassVar[str] = "median"

    stage: str
    regression_max_ms: float | None = None


@dataclass(frozen=True, kw_only=True)
class LatencyCheck(CeilingCheck):
    SUBJECT: ClassVar[str] = "stage"

    stage: str


@dataclass(frozen=True)
class LatencyGateResult(CeilingGateResult[LatencyGate, LatencyCheck]):
    pass


class _Latency(Quantity[LatencyGate, LatencyCheck, LatencyGateResult]):
    gate, check, result = LatencyGate, LatencyCheck, LatencyGateResult
    eps = EPS
    ceiling_keys = {f"{stat}_ms": stat for stat in STATS}
    list_hint = "each starts with '- stage: retrieve' and gives median_ms, p90_ms, p95_ms, p99_ms or regression_max_ms"
    subject_hint = "the stage of the run's latency_ms to gate, e.g. retrieve, or total"
    nothing = "stage"
    nothing_hint = "give median_ms, p90_ms, p95_ms, p99_ms (ceilings) or regression_max_ms"
    summary_note = "the baseline is a summary without per-query timings: latency regressions need a baseline run"
    counted = "{n} timed queries"
    absent = "{subject} latency"
    needs = "timed queries"
    none_in_both = "no query timed in both runs for {subject}"
    columns = staticmethod(latency_stages)

    def limit_problem(self, value: float, subject: str) -> str | None:
        return f"must be a number of milliseconds >= 0; got {value!r}" if value < 0 else None

    def fmt_value(self, subject: str, x: float) -> str:
        return fmt_ms(x, 1)

    def fmt_limit(self, subject: str, x: float) -> str:
        return f"{fmt_sig(x)} ms"

    def fmt_range(self, subject: str, low: float, high: float) -> str:
        return f"{fmt_score(low, 1)}–{fmt_ms(high, 1)}"

    def fmt_change(self, subject: str, x: float) -> str:
        return fmt_ms(x, 1)

    def group_stats(self, xs: np.ndarray, idx: np.ndarray | None, units: np.ndarray | None, stats: Sequence[str],
                    seed: int, resamples: int, confidence: float) -> dict[str, tuple[float, float, float]]:
        out = {}
        for stat in stats:
            lo, hi = _cis(xs, [STATS[stat]], resamples, confidence)[0]
            out[stat] = (_quantile(xs, STATS[stat]), lo, hi)
        return out

    def change(self, stat: str, cur: np.ndarray, old: np.ndarray, ok: np.ndarray, units: np.ndarray | None,
               seed: int, resamples: int, confidence: float) -> tuple[float, float, float, float]:
        q = STATS[stat]
        lo, hi = paired_quantile_change_ci(old, cur, q, rng=seed, resamples=resamples, confidence=confidence)
        return _quantile(old[ok], q), _quantile(cur[ok], q), lo, hi


_LATENCY = _Latency()


def read_latency_gates(r: ConfigReader, item: ConfigItem, taken: set[str]) -> tuple[LatencyGate, ...]:
    """The ``latency:`` list: ceilings on percentiles of a stage and regression limits, in ms."""
    return read_ceiling_gates(_LATENCY, r, item, taken)


def decide_latency(gates: Sequence[LatencyGate], current: EvaluationResult,
                   baseline: EvaluationResult | None = None, *, seed: int = 0, resamples: int = 2000,
                   confidence: float = 0.95, baseline_summary: bool = False) -> tuple[LatencyGateResult, ...]:
    """Check every latency gate on ``current`` (and against ``baseline`` when it is a run).

    ``baseline_summary``: the baseline given is a summary (no per-query timings): regression limits
    are then shown as skipped, saying why, rather than left out."""
    return decide_ceilings(_LATENCY, gates, current, baseline, seed=seed, resamples=resamples, confidence=confidence,
                           baseline_summary=baseline_summary)
