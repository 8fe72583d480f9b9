"""Cost per query, measured so that noise does not decide: means and p95 with intervals, and cost gates.

A run logs ``cost`` per query, an object of numbers (``{"tokens_in": 1840, "tokens_out": 212, "usd":
0.0021, "embed_ms": 3.1, "rerank_ms": 41.0}``; any other numeric key is kept), checked by
:func:`rankgate.io.cost.check_costs` when the run is read. :func:`cost_summary` gives, per key, the
mean over the queries that log it, with its percentile-bootstrap interval (drawn as the metrics'
intervals are, from the same seed, in the same pass when ``evaluate`` draws them: :func:`metric_and_cost_cis`),
and the p95 with the exact bootstrap interval of the order statistic
(:func:`rankgate.stats.bootstrap.exact_quantile_ci`), over all queries and per segment.

Conversations: when the result's queries are turns of conversations (a ``conversation_id`` shared by two
turns or more), turns of one conversation are correlated and every interval resamples conversations, as
the metrics' do (:mod:`rankgate.stats.clusters`): the mean's interval is the cluster bootstrap's; the p95's
is Woodruff's interval (:func:`woodruff_p95_ci`: the share of values at or below the p95, with its
cluster-robust standard error, read back through the sorted values), since the exact interval of an order
statistic holds for independent values only; a regression limit's paired interval of the mean resamples
conversations too (the p95's change still resamples queries). A run whose conversations all have one
turn gives the same numbers as one without conversation ids.

Cost gates (the ``cost:`` list of the ship criteria, :class:`CostGate`) are decided on those intervals,
as the latency gates (:mod:`rankgate.experiments.latency`) are:

``mean_max`` / ``p95_max`` (ceilings, in the key's unit: dollars for ``usd``, tokens, ms)
    ``on: ci_lower`` (default): fail only when the *lower* bound of the statistic's interval is above the
    ceiling; a statistic whose interval straddles the ceiling passes with a note. ``on: estimate``
    compares the statistic itself; ``on: ci_upper`` passes only when the whole interval is under it.
``regression_max`` (against a baseline run that logs the key)
    fail only when the statistic grew by more than the limit **and** the paired interval of the change
    (queries, or conversations, of both runs resampled together) excludes zero.

A key the run does not log makes the gate's checks warnings; segments with fewer than ``min_queries``
queries that log the key are shown, not gated. Every gate may name an ``owner``, shown where it fails.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
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
from rankgate.io.cost import COST_KEYS
from rankgate.metrics.display import fmt_cost, fmt_cost_change
from rankgate.model.results import EvaluationResult
from rankgate.stats.bootstrap import (
    exact_quantile_ci,
    grouped_bootstrap_cis,
    grouped_cluster_cis,
    paired_bootstrap_ci,
    paired_quantile_change_ci,
    values_cis,
)
from rankgate.stats.options import Statistics, taken

__all__ = ["COST_STATS", "CostCheck", "CostGate", "CostGateResult", "CostRow", "CostSummary", "cost_columns",
           "cost_summary", "decide_cost", "metric_and_cost_cis", "pass_columns", "read_cost_gates", "woodruff_p95_ci"]

#: The statistics reported and gated, by name (None: the mean).
COST_STATS: dict[str, float | None] = {"mean": None, "p95": 0.95}
EPS = 1e-12
#: The keys of one gate of the ship criteria' ``cost:`` list, and what ``on:`` may say.
COST_GATE_KEYS = ("name", "key", "mean_max", "p95_max", "regression_max", "on", "segments", "min_queries",
                  "severity", "label", "owner")
COST_ON = ON


def cost_columns(result: EvaluationResult) -> dict[str, np.ndarray]:
    """Key -> per-query value (NaN where not logged), aligned with ``result.query_ids``; the named keys
    (:data:`~rankgate.io.cost.COST_KEYS`) first, in that order, then the others as the run logs them."""
    raw: Mapping[str, Sequence[float | None]] = result.info.get("cost") or {}
    order = [k for k in COST_KEYS if k in raw] + [k for k in raw if k not in COST_KEYS]
    # (numpy reads None as NaN; the values are numbers or None, checked when the run was read)
    return {key: np.asarray(raw[key], dtype=np.float64) for key in order}


def _units(result: EvaluationResult) -> np.ndarray | None:
    """The conversation code of each query when the result's queries form conversations of more than one
    turn (:func:`rankgate.stats.clusters.conversation_codes`), else None: queries are the unit (a run of
    one-turn conversations resamples exactly as one without conversation ids)."""
    from rankgate.stats.clusters import conversation_codes

    codes = conversation_codes(result)
    if codes is None or int(np.bincount(codes).max()) == 1:  # (codes >= 0, one per conversation)
        return None
    return codes


def _num(x: float) -> float | None:
    return None if math.isnan(x) else round(float(x), 9)


def _stat(x: np.ndarray, stat: str) -> float:
    """The mean or p95 of the values logged (NaN when none is)."""
    x = x[~np.isnan(x)]
    if not x.size:
        return math.nan
    q = COST_STATS[stat]
    return float(x.mean()) if q is None else float(np.quantile(x, q))


@dataclass(frozen=True)
class CostRow:
    """One statistic of one cost key over one group of queries (``n``: those that log the key)."""

    key: str
    stat: str  # mean | p95
    segment: str | None  # "lang=de", or None for all queries
    n: int
    value: float
    ci: tuple[float, float]

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "stat": self.stat, "segment": self.segment, "n": self.n,
                "value": _num(self.value), "ci": [_num(self.ci[0]), _num(self.ci[1])]}


_METHOD = ("per query, over the queries that log the key; mean: percentile-bootstrap interval (queries resampled, "
           "the metrics' seed); p95: numpy's linear interpolation, with the exact percentile-bootstrap interval of "
           "the nearest order statistic")
_CLUSTER_METHOD = ("per query, over the queries that log the key, conversations as the unit; mean: percentile "
                   "interval of the cluster bootstrap (conversations resampled, the metrics' seed); p95: numpy's "
                   "linear interpolation, with Woodruff's interval (0.95 -/+ z times the cluster-robust standard "
                   "error of the share of values at or below the p95, read back through the sorted values)")


@dataclass(frozen=True)
class CostSummary:
    """Cost per query: every key's mean and p95 with intervals, over all queries and each segment."""

    rows: tuple[CostRow, ...]
    confidence: float
    resamples: int
    seed: int
    conversations: bool = False  # conversations resampled (the cluster bootstrap), not queries

    def get(self, key: str, stat: str, segment: str | None = None) -> CostRow | None:
        return next((r for r in self.rows if (r.key, r.stat, r.segment) == (key, stat, segment)), None)

    def to_dict(self) -> dict[str, Any]:
        return {"rows": [r.to_dict() for r in self.rows],
                "method": _CLUSTER_METHOD if self.conversations else _METHOD,
                "statistics": {"seed": self.seed, "resamples": self.resamples, "confidence": self.confidence}}


# -- intervals -------------------------------------------------------------------------------------
# Means: the bootstrap of the metrics (stats.bootstrap.values_cis), over queries, or over conversations when
# the queries form them. p95 over queries: the exact interval of the order statistic (no draws). p95 over
# conversations: the order statistic's exact interval assumes independent values, which correlated turns are
# not, so the interval is Woodruff's, the survey statistician's interval of a quantile under cluster sampling:
# the share p of the n values at or below the p95 is a mean whose variance, conversations as the unit, is
# v = Σ_c (S_c − p·N_c)² / n² (S_c: conversation c's values at or below the p95, N_c: its values; the
# cluster-robust variance :mod:`rankgate.stats.clusters` defines the effective n with); the share's interval
# is 0.95 ∓ z·√v (z the normal quantile of the confidence), and the p95's is the order statistics of ranks
# ceil(n·(0.95 − z·√v)) and ceil(n·(0.95 + z·√v)), clipped to 1..n. No draws, so no seed.

_MEAN = "\x00mean:"  # (the names of the cost columns drawn beside the metrics)


def woodruff_p95_ci(x: np.ndarray, codes: np.ndarray, confidence: float) -> tuple[float, float]:
    """Woodruff's interval of the p95 of the values ``x`` that apply (not NaN), conversations ``codes`` (a code
    per value) as the unit (see above). NaN below two values or two conversations; the value when all are equal."""
    from rankgate.stats.bootstrap import normal_quantile

    ok = ~np.isnan(x)
    v, c = x[ok], np.asarray(codes, dtype=np.int64)[ok]  # (codes >= 0: conversation_codes's; bins of none add 0)
    n = v.size
    if n < 2 or c.min() == c.max():
        return (math.nan, math.nan)
    if v.min() == v.max():
        return (float(v[0]), float(v[0]))
    target = COST_STATS["p95"]
    assert target is not None
    below = (v <= np.quantile(v, target)).astype(np.float64)
    p = np.count_nonzero(below) / n
    spread = np.bincount(c, weights=below) - p * np.bincount(c).astype(np.float64)
    half = normal_quantile((1.0 + confidence) / 2.0) * math.sqrt(math.fsum((spread ** 2).tolist())) / n
    ranks = [min(n, max(1, math.ceil(n * (target - half) - 1e-9))), min(n, max(1, math.ceil(n * (target + half) - 1e-9)))]
    picked = np.partition(v, [r - 1 for r in ranks])
    return (float(picked[ranks[0] - 1]), float(picked[ranks[1] - 1]))


def _p95_ci(x: np.ndarray, codes: np.ndarray | None, resamples: int, confidence: float) -> tuple[float, float]:
    """The p95's interval of one group's values: exact over queries, Woodruff's over conversations (``codes``:
    the group's conversation code per value). NaN with ``resamples=0``, as every interval."""
    if resamples == 0:
        return (math.nan, math.nan)
    if codes is not None:
        return woodruff_p95_ci(x, codes, confidence)
    return exact_quantile_ci(x, 0.95, confidence=confidence)  # type: ignore[return-value]


def pass_columns(result: EvaluationResult) -> dict[str, np.ndarray]:
    """The columns whose intervals over all queries the cost summary draws (each key's values, for its mean),
    named apart from any metric, to be drawn in one pass with the metrics' (:func:`metric_and_cost_cis`)."""
    return {_MEAN + key: x for key, x in cost_columns(result).items()}


def metric_and_cost_cis(result: EvaluationResult, *, statistics: Statistics) -> tuple[dict[str, tuple[float, float]],
                                                                                      dict[str, tuple[float, float]]]:
    """:func:`rankgate.stats.bootstrap.metric_cis` of ``result``, and the cost summary's intervals over all queries
    (``overall=`` of :func:`cost_summary`), drawn in one pass: columns that apply to the same queries share their
    resampled queries (or conversations), and each interval is the one it gets alone."""
    from rankgate.stats.bootstrap import metric_cis
    from rankgate.stats.clusters import conversation_codes

    extra = pass_columns(result)
    if not extra:
        return metric_cis(result, statistics=statistics), {}
    values = {name: result.values[name] for name in result.metric_names}
    values.update(extra)
    both = values_cis(values, statistics.seed, statistics.resamples, statistics.confidence,
                      clusters=conversation_codes(result))
    return ({name: both[name] for name in result.metric_names}, {name: both[name] for name in extra})


def _mean_cis(parts: list[np.ndarray], seed: int, resamples: int, confidence: float,
              codes: np.ndarray | None = None, idxs: Sequence[np.ndarray] = ()) -> list[tuple[float, float]]:
    """The bootstrap interval of each column's mean (NaN skipped), all in one grouped call, each as it gets it
    alone: over queries, or over the conversations ``codes`` (of all queries) of the queries ``idxs`` (one array
    per column) when given."""
    if resamples == 0 or not parts:
        return [(math.nan, math.nan)] * len(parts)
    oks = [~np.isnan(x) for x in parts]
    offsets = np.concatenate(([0], np.cumsum([int(ok.sum()) for ok in oks]))).astype(np.int64)
    values = np.concatenate([x[ok] for x, ok in zip(parts, oks)])
    if codes is None:
        low, high = grouped_bootstrap_cis(values, offsets, seed=seed, resamples=resamples, confidence=confidence)
    else:
        units = np.concatenate([codes[idx][ok] for idx, ok in zip(idxs, oks)])
        low, high = grouped_cluster_cis(values, offsets, units, seed=seed, resamples=resamples, confidence=confidence)
    return [(float(a), float(b)) for a, b in zip(low.tolist(), high.tolist())]


def _group_intervals(x: np.ndarray, idx: np.ndarray | None, codes: np.ndarray | None, seed: int, resamples: int,
                     confidence: float) -> tuple[tuple[float, float], tuple[float, float]]:
    """The mean's and the p95's interval of one group's values ``x`` (the queries ``idx``; None: all), as the
    summary gives them (``codes``: every query's conversation, or None)."""
    if idx is None and resamples:
        mean = values_cis({"x": x}, seed, resamples, confidence, clusters=codes)["x"]
    else:
        where = np.arange(x.size) if idx is None else idx
        mean = _mean_cis([x], seed, resamples, confidence, codes, [where])[0]
    return mean, _p95_ci(x, None if codes is None else (codes if idx is None else codes[idx]), resamples, confidence)


def cost_summary(result: EvaluationResult, *, by: Sequence[str] = (), statistics: Statistics | None = None,
                 seed: int = 0, resamples: int = 2000, confidence: float = 0.95,
                 overall: Mapping[str, tuple[float, float]] | Callable[[], Mapping[str, tuple[float, float]]] | None = None,
                 ) -> CostSummary:
    """Mean and p95 of every cost key the run logs, with intervals, over all queries and each segment of ``by``.

    When the result's queries form conversations (a ``conversation_id`` shared by more than one turn), every
    interval resamples conversations (the intervals section above). ``overall``: the means' intervals over all
    queries already drawn with the metrics' (:func:`metric_and_cost_cis`), or a function that gives them (asked
    for once everything else is done: they may be being drawn); else they are drawn here."""
    seed, resamples, confidence = taken(statistics, seed, resamples, confidence, caller="cost_summary",
                                         defaults=(0, 2000, 0.95))
    groups = query_groups(result, by)
    columns = cost_columns(result)
    codes = _units(result)
    rows: list[CostRow] = []
    for key, x in columns.items():
        parts = [x[idx] for _, idx in groups]
        means = [(math.nan, math.nan),
                 *_mean_cis(parts[1:], seed, resamples, confidence, codes, [idx for _, idx in groups[1:]])]
        for (label, idx), xs, mean_ci in zip(groups, parts, means):
            n = int((~np.isnan(xs)).sum())
            rows.append(CostRow(key, "mean", label, n, _stat(xs, "mean"), mean_ci))
            rows.append(CostRow(key, "p95", label, n, _stat(xs, "p95"),
                                _p95_ci(xs, None if codes is None else codes[idx], resamples, confidence)))
    if overall is None:
        overall = values_cis(pass_columns(result), seed, resamples, confidence, clusters=codes) if resamples else {}
    drawn = overall() if callable(overall) else overall
    rows = [replace(r, ci=drawn.get(_MEAN + r.key, (math.nan, math.nan))) if r.stat == "mean" and r.segment is None
            else r for r in rows]
    return CostSummary(tuple(rows), confidence, resamples, seed, conversations=codes is not None)


# -- gates ---------------------------------------------------------------------------------------
# (the gate, its checks and deciding them are the ceiling gates' of rankgate.experiments.ceilings; here is what
# makes them cost's: the mean and p95 of a cost key in its unit, with the summary's intervals)
@dataclass(frozen=True, kw_only=True)
class CostGate(CeilingGate):
    """One cost criterion: ceilings on the mean and/or p95 of a cost key per query, and/or a regression limit."""

    SECTION: ClassVar[str] = "cost"
    SUBJECT: ClassVar[str] = "key"
    REGRESSION: ClassVar[str] = "regression_max"
    FIRST: ClassVar[str] = "mean"

    key: str
    regression_max: float | None = None  # (the ceilings: stat -> limit in the key's unit, e.g. {"mean": 0.002})


@dataclass(frozen=True, kw_only=True)
class CostCheck(CeilingCheck):
    SUBJECT: ClassVar[str] = "key"
    DIGITS: ClassVar[int] = 9

    key: str


@dataclass(frozen=True)
class CostGateResult(CeilingGateResult[CostGate, CostCheck]):
    pass


class _Cost(Quantity[CostGate, CostCheck, CostGateResult]):
    gate, check, result = CostGate, CostCheck, CostGateResult
    eps = EPS
    ceiling_keys = {f"{stat}_max": stat for stat in COST_STATS}
    list_hint = "each starts with '- key: usd' and gives mean_max, p95_max or regression_max"
    subject_hint = f"the key of the run's cost object to gate, e.g. {', '.join(COST_KEYS)}"
    nothing = "cost key"
    nothing_hint = "give mean_max, p95_max (ceilings) or regression_max"
    summary_note = "the baseline is a summary without per-query costs: cost regressions need a baseline run"
    counted = "{n} queries log {subject}"
    absent = "cost.{subject}"
    needs = "queries that log {subject}"
    none_in_both = "no query logs {subject} in both runs"
    columns, units = staticmethod(cost_columns), staticmethod(_units)

    def limit_problem(self, value: float, subject: str) -> str | None:
        if value < 0 or not math.isfinite(value):
            return f"must be a number >= 0 in the unit of {subject}; got {value!r}"
        return None

    def fmt_value(self, subject: str, x: float) -> str:
        return fmt_cost(subject, x)

    fmt_limit = fmt_value

    def fmt_range(self, subject: str, low: float, high: float) -> str:
        return f"{fmt_cost(subject, low)}–{fmt_cost(subject, high)}"

    def fmt_change(self, subject: str, x: float) -> str:
        return fmt_cost_change(subject, x)

    def group_stats(self, xs: np.ndarray, idx: np.ndarray | None, units: np.ndarray | None, stats: Sequence[str],
                    seed: int, resamples: int, confidence: float) -> dict[str, tuple[float, float, float]]:
        # (as the summary draws them: over queries or conversations, all queries as the metrics, a segment alone)
        cis = dict(zip(("mean", "p95"), _group_intervals(xs, idx, units, seed, resamples, confidence)))
        return {stat: (_stat(xs, stat), *cis[stat]) for stat in stats}

    def change(self, stat: str, cur: np.ndarray, old: np.ndarray, ok: np.ndarray, units: np.ndarray | None,
               seed: int, resamples: int, confidence: float) -> tuple[float, float, float, float]:
        """The mean's paired interval resamples the conversations ``units`` (a code per query) when given, the
        p95's queries."""
        q = COST_STATS[stat]
        if q is None:
            lo, hi = paired_bootstrap_ci(old[ok], cur[ok], rng=seed, resamples=resamples, confidence=confidence,
                                         clusters=None if units is None else units[ok])
        else:
            lo, hi = paired_quantile_change_ci(old[ok], cur[ok], q, rng=seed, resamples=resamples,
                                               confidence=confidence)
        return _stat(old[ok], stat), _stat(cur[ok], stat), lo, hi


_COST = _Cost()


def read_cost_gates(r: ConfigReader, item: ConfigItem, taken: set[str]) -> tuple[CostGate, ...]:
    """The ``cost:`` list: ceilings on the mean and p95 of a cost key per query, and regression limits."""
    return read_ceiling_gates(_COST, r, item, taken)


def decide_cost(gates: Sequence[CostGate], current: EvaluationResult, baseline: EvaluationResult | None = None, *,
                seed: int = 0, resamples: int = 2000, confidence: float = 0.95,
                baseline_summary: bool = False) -> tuple[CostGateResult, ...]:
    """Check every cost gate on ``current`` (and against ``baseline`` when it is a run).

    ``baseline_summary``: the baseline given is a summary (no per-query costs): regression limits are
    then shown as skipped, saying why, rather than left out."""
    return decide_ceilings(_COST, gates, current, baseline, seed=seed, resamples=resamples, confidence=confidence,
                           baseline_summary=baseline_summary)
