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
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rankgate._util.configfile import SEVERITIES, ConfigItem, ConfigReader, show_value
from rankgate.metrics.display import fmt_confidence, fmt_ms, fmt_score, fmt_sig
from rankgate.model.results import EvaluationResult
from rankgate.stats.segments import display_field, members_of, ordered_labels, segment_labels
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
LATENCY_ON = ("ci_lower", "estimate", "ci_upper")


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


def _groups(result: EvaluationResult, by: Sequence[str]) -> list[tuple[str | None, np.ndarray]]:
    groups: list[tuple[str | None, np.ndarray]] = [(None, np.ones(len(result.query_ids), dtype=bool))]
    for name in by:
        key, labels = segment_labels(result, name)
        values = ordered_labels(labels)
        groups += [(f"{display_field(key)}={label}", idx) for label, idx in zip(values, members_of(labels, values))]
    return groups


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
    groups = _groups(result, by)
    for stage, x in columns.items():
        for label, mask in groups:
            xs = x[mask]
            n = int((~np.isnan(xs)).sum())
            cis = _cis(xs, list(STATS.values()), resamples, confidence)
            for (stat, q), ci in zip(STATS.items(), cis):
                rows.append(LatencyRow(stage, stat, label, n, _quantile(xs, q), ci))
    return tuple(rows)


# -- gates ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LatencyGate:
    """One latency criterion: ceilings on percentiles of a stage (ms) and/or a regression limit."""

    name: str
    stage: str
    ceilings: Mapping[str, float]  # stat -> ms, e.g. {"median": 60.0, "p90": 120.0}
    regression_max_ms: float | None = None
    on: str = "ci_lower"  # ci_lower | estimate | ci_upper
    segments: tuple[str, ...] = ()
    min_queries: int = 1
    severity: str = "error"
    label: str | None = None
    lines: Mapping[str, int] = field(default_factory=dict, compare=False, repr=False)
    owner: str | None = None  # who answers for the gate (shown when it fails), as on every other gate kind

    @property
    def stats(self) -> tuple[str, ...]:
        """The percentiles this gate looks at: those with a ceiling, else the median."""
        return tuple(self.ceilings) or ("median",)

    @property
    def title(self) -> str:
        return self.label or f"latency {self.stage}"


def read_latency_gates(r: ConfigReader, item: ConfigItem, taken: set[str]) -> tuple[LatencyGate, ...]:
    """The ``latency:`` list: ceilings on percentiles of a stage and regression limits, in ms."""
    if not isinstance(item.value, list) or not item.value:
        raise r.fail("latency", item.line, f"must be a list of latency gates; got {show_value(item.value)}",
                     "each starts with '- stage: retrieve' and gives median_ms, p90_ms, p95_ms, p99_ms or regression_max_ms")
    out = []
    for i, sub in enumerate(item.value):
        at = f"latency[{i}]"
        g = r.mapping(sub, at, LATENCY_KEYS)
        if "stage" not in g:
            raise r.fail(f"{at}.stage", sub.line, "is required", "the stage of the run's latency_ms to gate, e.g. retrieve, or total")
        stage = r.text(g["stage"], f"{at}.stage")
        ceilings: dict[str, float] = {}
        limits = {}
        for key in ("median_ms", "p90_ms", "p95_ms", "p99_ms", "regression_max_ms"):
            if key in g:
                v = r.number(g[key], f"{at}.{key}", share=False)
                if v < 0:
                    raise r.fail(f"{at}.{key}", g[key].line, f"must be a number of milliseconds >= 0; got {v!r}")
                limits[key] = v
                if key != "regression_max_ms":
                    ceilings[key.removesuffix("_ms")] = v
        if not limits:
            raise r.fail(at, sub.line, f"checks nothing for stage {stage!r}",
                         "give median_ms, p90_ms, p95_ms, p99_ms (ceilings) or regression_max_ms")
        name = r.text(g["name"], f"{at}.name") if "name" in g else f"latency_{stage}"
        if name in taken:
            raise r.fail(f"{at}.name", g["name"].line if "name" in g else sub.line, f"repeats the gate name {name!r}",
                         "give each gate its own name")
        taken.add(name)
        segments: tuple[str, ...] = ()
        if "segments" in g:
            s = g["segments"]
            raw = [s] if isinstance(s.value, str) or s.written is not None else s.value
            if not isinstance(raw, list) or not raw:
                raise r.fail(f"{at}.segments", s.line, f"must be a list of field names; got {show_value(s.value)}")
            segments = tuple(dict.fromkeys(r.text(x if isinstance(x, ConfigItem) else ConfigItem(x, s.line), f"{at}.segments")
                                           for x in raw))
        out.append(LatencyGate(
            name, stage, ceilings, limits.get("regression_max_ms"),
            r.choice(g["on"], f"{at}.on", LATENCY_ON) if "on" in g else "ci_lower", segments,
            r.integer(g["min_queries"], f"{at}.min_queries", 1) if "min_queries" in g else 1,
            r.choice(g["severity"], f"{at}.severity", SEVERITIES) if "severity" in g else "error",
            r.text(g["label"], f"{at}.label") if "label" in g else None,
            {k: v.line for k, v in g.items() if v.line is not None},
            r.text(g["owner"], f"{at}.owner") if "owner" in g else None))
    return tuple(out)


@dataclass(frozen=True)
class LatencyCheck:
    gate: str
    kind: str  # max | regression
    status: str  # pass | fail | warn | skipped
    stage: str
    stat: str
    segment: str | None
    n: int
    value: float  # what was compared with the limit: a percentile, a bound, or the change
    limit: float
    estimate: float = math.nan  # the candidate's percentile
    ci_low: float = math.nan
    ci_high: float = math.nan
    baseline: float = math.nan
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {k: (_num(v) if isinstance(v, float) else v) for k, v in vars(self).items() if k != "gate"}


@dataclass(frozen=True)
class LatencyGateResult:
    gate: LatencyGate
    status: str  # pass | fail (error severity) | warn
    checks: tuple[LatencyCheck, ...]

    def to_dict(self) -> dict[str, Any]:
        g = self.gate
        return {"name": g.name, "title": g.title, "stage": g.stage, "severity": g.severity, "on": g.on,
                "ceilings_ms": dict(g.ceilings), "regression_max_ms": g.regression_max_ms,
                "segments": list(g.segments), "owner": g.owner, "status": self.status,
                "checks": [c.to_dict() for c in self.checks]}


def _ceiling_check(g: LatencyGate, stat: str, limit: float, base: dict[str, Any], small: bool,
                   conf: str) -> LatencyCheck:
    est, lo, hi = base["estimate"], base["ci_low"], base["ci_high"]
    value = {"ci_lower": lo, "estimate": est, "ci_upper": hi}[g.on]
    c = LatencyCheck(kind="max", status="pass", stat=stat, value=value, limit=limit, **base)
    from dataclasses import replace

    if small:
        return replace(c, status="skipped", note=f"only {c.n} timed queries (min_queries {g.min_queries}): not gated")
    if c.n == 0:
        return replace(c, status="warn", note=f"the run logs no {g.stage} latency")
    if math.isnan(value):
        if c.segment is not None:
            return replace(c, status="skipped", note=f"no {conf}: needs at least 2 timed queries")
        return replace(c, status="fail", note=f"no {conf}: needs at least 2 timed queries and resamples > 0")
    if value <= limit + EPS:
        note = ""
        if g.on == "ci_lower" and est > limit + EPS:
            note = (f"{stat} {fmt_ms(est, 1)} is over {fmt_sig(limit)} ms, but within noise "
                    f"({conf} {fmt_score(lo, 1)}–{fmt_ms(hi, 1)})")
        return replace(c, note=note)
    return replace(c, status="fail")


def _regression_check(g: LatencyGate, stat: str, cur: np.ndarray, old: np.ndarray | None, base: dict[str, Any],
                      small: bool, conf: str, seed: int, resamples: int, confidence: float) -> LatencyCheck:
    from dataclasses import replace

    limit = float(g.regression_max_ms)  # type: ignore[arg-type]
    c = LatencyCheck(kind="regression", status="pass", stat=stat, value=math.nan, limit=limit,
                     **{**base, "ci_low": math.nan, "ci_high": math.nan})
    if small:
        return replace(c, status="skipped", note=f"only {c.n} timed queries (min_queries {g.min_queries}): not gated")
    if old is None:
        return replace(c, status="skipped", note=f"the baseline logs no {g.stage} latency per query")
    ok = ~(np.isnan(cur) | np.isnan(old))
    if ok.sum() == 0:
        return replace(c, status="warn" if c.segment is None else "skipped",
                       note=f"no query timed in both runs for {g.stage}")
    q = STATS[stat]
    b, a = _quantile(old[ok], q), _quantile(cur[ok], q)
    lo, hi = paired_quantile_change_ci(old, cur, q, rng=seed, resamples=resamples, confidence=confidence)
    c = replace(c, n=int(ok.sum()), value=a - b, baseline=b, estimate=a, ci_low=lo, ci_high=hi)
    if a - b <= limit + EPS:
        return c
    if math.isnan(lo):
        return replace(c, status="fail", note=f"grew by more than the limit; no {conf} to tell it from noise")
    if lo <= 0.0:
        return replace(c, note=f"grew by {fmt_ms(a - b, 1)}, beyond {fmt_sig(limit)} ms, but within noise ({conf} includes 0)")
    return replace(c, status="fail")


def decide_latency(gates: Sequence[LatencyGate], current: EvaluationResult,
                   baseline: EvaluationResult | None = None, *, seed: int = 0, resamples: int = 2000,
                   confidence: float = 0.95, baseline_summary: bool = False) -> tuple[LatencyGateResult, ...]:
    """Check every latency gate on ``current`` (and against ``baseline`` when it is a run).

    ``baseline_summary``: the baseline given is a summary (no per-query timings): regression limits
    are then shown as skipped, saying why, rather than left out."""
    conf = f"{fmt_confidence(confidence)} CI"
    stages = latency_stages(current)
    old_stages = latency_stages(baseline) if isinstance(baseline, EvaluationResult) else {}
    old_index = baseline.query_index() if isinstance(baseline, EvaluationResult) else {}
    results = []
    for g in gates:
        x = stages.get(g.stage, np.full(len(current.query_ids), math.nan))
        old: np.ndarray | None = None
        if g.stage in old_stages:  # the baseline's timings in the candidate's query order
            src = old_stages[g.stage]
            old = np.asarray([src[old_index[q]] if q in old_index else math.nan for q in current.query_ids])
        checks: list[LatencyCheck] = []
        for label, mask in _groups(current, g.segments):
            xs = x[mask]
            n = int((~np.isnan(xs)).sum())
            small = label is not None and n < g.min_queries
            for stat in g.stats:
                q = STATS[stat]
                lo, hi = _cis(xs, [q], resamples, confidence)[0]
                base: dict[str, Any] = {"gate": g.name, "stage": g.stage, "segment": label, "n": n, "estimate": _quantile(xs, q),
                        "ci_low": lo, "ci_high": hi}
                if stat in g.ceilings:
                    checks.append(_ceiling_check(g, stat, g.ceilings[stat], base, small, conf))
                if g.regression_max_ms is not None and isinstance(baseline, EvaluationResult):
                    checks.append(_regression_check(g, stat, xs, None if old is None else old[mask], base, small,
                                                    conf, seed, resamples, confidence))
                elif g.regression_max_ms is not None and baseline_summary and label is None:
                    checks.append(LatencyCheck(kind="regression", status="skipped", stat=stat, value=math.nan,
                                               limit=float(g.regression_max_ms),
                                               note="the baseline is a summary without per-query timings: latency "
                                                    "regressions need a baseline run", **base))
        failed = any(c.status == "fail" for c in checks)
        status = ("fail" if g.severity == "error" else "warn") if failed else (
            "warn" if any(c.status == "warn" for c in checks) else "pass")
        results.append(LatencyGateResult(g, status, tuple(checks)))
    return tuple(results)
