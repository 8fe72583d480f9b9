"""Gates of ceilings and a regression limit on a per-query quantity, decided on interval bounds.

Latency gates (:mod:`rankgate.experiments.latency`: percentiles of a stage's milliseconds) and cost gates
(:mod:`rankgate.experiments.cost`: the mean and p95 of a cost key) are the same gate on different numbers:

ceilings (``median_ms``, ``p95_max``, ...)
    ``on: ci_lower`` (default): fail only when the *lower* bound of the statistic's interval is above the
    ceiling; a statistic whose interval straddles it passes with a note. ``on: estimate`` compares the
    statistic itself; ``on: ci_upper`` passes only when the whole interval is under it.
a regression limit (``regression_max_ms``, ``regression_max``, against a baseline run)
    fail only when the statistic grew by more than the limit **and** the paired interval of the change
    excludes zero.

A quantity the run does not log makes the gate's checks warnings; segments with fewer than ``min_queries``
queries that log it are shown, not gated. Here are what they share: reading a gate list of the ship
criteria (:func:`read_ceiling_gates`), the gate, check and result values, and deciding them
(:func:`decide_ceilings`). What differs (the keys, units and words, the columns, how a statistic and its
interval are computed) each kind gives as a :class:`Quantity`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np

from rankgate._util.configfile import SEVERITIES, ConfigItem, ConfigReader, show_value
from rankgate.metrics.display import fmt_confidence
from rankgate.model.results import EvaluationResult
from rankgate.stats.segments import display_field, members_of, ordered_labels, segment_labels

__all__ = ["ON", "CeilingCheck", "CeilingGate", "CeilingGateResult", "Quantity", "decide_ceilings", "query_groups",
           "read_ceiling_gates"]

#: What a gate's ``on:`` may say: the bound of the interval (or the estimate) compared with a ceiling.
ON = ("ci_lower", "estimate", "ci_upper")


@dataclass(frozen=True, kw_only=True)
class CeilingGate:
    """One gate: ceilings on statistics of one per-query quantity and/or a regression limit.

    A kind adds the field naming the quantity (:attr:`SUBJECT`, e.g. ``stage``) and the regression limit's
    (:attr:`REGRESSION`, e.g. ``regression_max_ms``): the names of the ship criteria's keys, of the
    attributes and of the outcome's JSON alike."""

    SECTION: ClassVar[str] = ""  # the ship criteria's list ("latency"), the default name's and title's prefix
    SUBJECT: ClassVar[str] = ""  # the field naming the quantity ("stage")
    REGRESSION: ClassVar[str] = ""  # the regression limit's field ("regression_max_ms")
    CEILINGS: ClassVar[str] = "ceilings"  # the ceilings' key in the outcome's JSON
    FIRST: ClassVar[str] = ""  # the statistic a gate without ceilings looks at

    name: str
    ceilings: Mapping[str, float]  # stat -> limit, e.g. {"median": 60.0, "p90": 120.0}
    on: str = "ci_lower"  # ci_lower | estimate | ci_upper
    segments: tuple[str, ...] = ()
    min_queries: int = 1
    severity: str = "error"
    label: str | None = None
    lines: Mapping[str, int] = field(default_factory=dict, compare=False, repr=False)
    owner: str | None = None  # who answers for the gate (shown when it fails), as on every other gate kind

    @property
    def subject(self) -> str:
        """What is gated: the stage, the cost key."""
        return str(getattr(self, self.SUBJECT))

    @property
    def regression(self) -> float | None:
        """The regression limit, or None."""
        value: float | None = getattr(self, self.REGRESSION)
        return value

    @property
    def stats(self) -> tuple[str, ...]:
        """The statistics this gate looks at: those with a ceiling, else :attr:`FIRST`."""
        return tuple(self.ceilings) or (self.FIRST,)

    @property
    def title(self) -> str:
        return self.label or f"{self.SECTION} {self.subject}"


@dataclass(frozen=True, kw_only=True)
class CeilingCheck:
    """One check of a gate: a ceiling (``kind`` max) or the regression limit of one statistic over one group."""

    SUBJECT: ClassVar[str] = ""  # the field naming the quantity, as the gate's
    DIGITS: ClassVar[int] = 6  # the decimals the JSON keeps

    gate: str
    kind: str  # max | regression
    status: str  # pass | fail | warn | skipped
    stat: str
    segment: str | None
    n: int
    value: float  # what was compared with the limit: a statistic, a bound, or the change
    limit: float
    estimate: float = math.nan  # the candidate's statistic
    ci_low: float = math.nan
    ci_high: float = math.nan
    baseline: float = math.nan
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        names = ("kind", "status", self.SUBJECT, "stat", "segment", "n", "value", "limit", "estimate", "ci_low",
                 "ci_high", "baseline", "note")
        return {k: (self._json(v) if isinstance(v, float) else v) for k in names for v in (getattr(self, k),)}

    def _json(self, x: float) -> float | None:
        return None if math.isnan(x) else round(float(x), self.DIGITS)


G = TypeVar("G", bound=CeilingGate)
C = TypeVar("C", bound=CeilingCheck)


@dataclass(frozen=True)
class CeilingGateResult(Generic[G, C]):
    gate: G
    status: str  # pass | fail (error severity) | warn
    checks: tuple[C, ...]

    def to_dict(self) -> dict[str, Any]:
        g = self.gate
        return {"name": g.name, "title": g.title, g.SUBJECT: g.subject, "severity": g.severity, "on": g.on,
                g.CEILINGS: dict(g.ceilings), g.REGRESSION: g.regression, "segments": list(g.segments),
                "owner": g.owner, "status": self.status, "checks": [c.to_dict() for c in self.checks]}


R = TypeVar("R", bound=CeilingGateResult[Any, Any])


class Quantity(Generic[G, C, R]):
    """What one kind of gate is about: its gate, check and result types, its keys and words in the ship
    criteria and in notes, its columns and how a group's statistics, their intervals and a change are computed."""

    gate: type[G]
    check: type[C]
    result: type[R]
    eps: float = 1e-9  # the slack of a comparison with a limit
    ceiling_keys: Mapping[str, str] = {}  # the ship criteria's key of a ceiling -> its statistic
    list_hint: str = ""  # how a gate list starts (the list is not one)
    subject_hint: str = ""  # what the SUBJECT key names (it is missing)
    nothing: str = ""  # "checks nothing for {nothing} 'x'"
    nothing_hint: str = ""
    summary_note: str = ""  # why a regression limit is not checked against a baseline summary
    # the words of the notes, templates of {n} (a count of queries) and {subject} (the stage, the cost key):
    counted: str = ""  # n queries that log the quantity: "{n} timed queries"
    absent: str = ""  # what a run that does not log the quantity lacks: "{subject} latency"
    needs: str = ""  # the queries an interval needs two of: "timed queries"
    none_in_both: str = ""  # no query logs the quantity in both runs: "no query timed in both runs for {subject}"

    # -- reading
    def limit_problem(self, value: float, subject: str) -> str | None:
        """What is wrong with a limit read for ``subject`` (None: nothing)."""
        raise NotImplementedError

    # -- numbers in the notes
    def fmt_value(self, subject: str, x: float) -> str:
        """A value of ``subject`` in a note ("41.2 ms", "$0.0021")."""
        raise NotImplementedError

    def fmt_limit(self, subject: str, x: float) -> str:
        """A limit in a note, with its unit."""
        raise NotImplementedError

    def fmt_range(self, subject: str, low: float, high: float) -> str:
        """An interval in a note ("40.1–44.0 ms")."""
        raise NotImplementedError

    def fmt_change(self, subject: str, x: float) -> str:
        """A change in a note, signed."""
        raise NotImplementedError

    # -- numbers
    def columns(self, result: EvaluationResult) -> dict[str, np.ndarray]:
        """Subject -> a value per query of ``result`` (NaN where not logged)."""
        raise NotImplementedError

    def units(self, result: EvaluationResult) -> np.ndarray | None:
        """The unit each query is resampled with (a code per query), or None: queries."""
        return None

    def group_stats(self, xs: np.ndarray, idx: np.ndarray | None, units: np.ndarray | None, stats: Sequence[str],
                    seed: int, resamples: int, confidence: float) -> dict[str, tuple[float, float, float]]:
        """Stat -> (estimate, interval low, high) of one group's values ``xs`` (the queries ``idx``; None: all)."""
        raise NotImplementedError

    def change(self, stat: str, cur: np.ndarray, old: np.ndarray, ok: np.ndarray, units: np.ndarray | None,
               seed: int, resamples: int, confidence: float) -> tuple[float, float, float, float]:
        """(baseline, candidate, interval low, high of the change) of ``stat`` over the queries ``ok`` of both."""
        raise NotImplementedError


def read_ceiling_gates(q: Quantity[G, C, R], r: ConfigReader, item: ConfigItem, taken: set[str]) -> tuple[G, ...]:
    """A gate list of the ship criteria (``latency:``, ``cost:``): ceilings and regression limits."""
    section, subject_key, regression_key = q.gate.SECTION, q.gate.SUBJECT, q.gate.REGRESSION
    if not isinstance(item.value, list) or not item.value:
        raise r.fail(section, item.line, f"must be a list of {section} gates; got {show_value(item.value)}", q.list_hint)
    keys = ("name", subject_key, *q.ceiling_keys, regression_key, "on", "segments", "min_queries", "severity",
            "label", "owner")
    out = []
    for i, sub in enumerate(item.value):
        at = f"{section}[{i}]"
        g = r.mapping(sub, at, keys)
        if subject_key not in g:
            raise r.fail(f"{at}.{subject_key}", sub.line, "is required", q.subject_hint)
        subject = r.text(g[subject_key], f"{at}.{subject_key}")
        ceilings: dict[str, float] = {}
        limits = {}
        for key in (*q.ceiling_keys, regression_key):
            if key in g:
                v = r.number(g[key], f"{at}.{key}", share=False)
                problem = q.limit_problem(v, subject)
                if problem:
                    raise r.fail(f"{at}.{key}", g[key].line, problem)
                limits[key] = v
                if key != regression_key:
                    ceilings[q.ceiling_keys[key]] = v
        if not limits:
            raise r.fail(at, sub.line, f"checks nothing for {q.nothing} {subject!r}", q.nothing_hint)
        name = r.text(g["name"], f"{at}.name") if "name" in g else f"{section}_{subject}"
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
        fields: dict[str, Any] = {subject_key: subject, regression_key: limits.get(regression_key)}
        out.append(q.gate(
            name=name, ceilings=ceilings, segments=segments,
            on=r.choice(g["on"], f"{at}.on", ON) if "on" in g else "ci_lower",
            min_queries=r.integer(g["min_queries"], f"{at}.min_queries", 1) if "min_queries" in g else 1,
            severity=r.choice(g["severity"], f"{at}.severity", SEVERITIES) if "severity" in g else "error",
            label=r.text(g["label"], f"{at}.label") if "label" in g else None,
            lines={k: v.line for k, v in g.items() if v.line is not None},
            owner=r.text(g["owner"], f"{at}.owner") if "owner" in g else None, **fields))
    return tuple(out)


def query_groups(result: EvaluationResult, by: Sequence[str]) -> list[tuple[str | None, np.ndarray]]:
    """(None, every query), then ("lang=de", the queries of that segment) for each field of ``by``."""
    groups: list[tuple[str | None, np.ndarray]] = [(None, np.arange(len(result.query_ids)))]
    for name in by:
        key, labels = segment_labels(result, name)
        values = ordered_labels(labels)
        groups += [(f"{display_field(key)}={label}", idx) for label, idx in zip(values, members_of(labels, values))]
    return groups


def _not_gated(q: Quantity[G, C, R], g: G, c: C) -> C:
    """A check of a segment with fewer than ``min_queries`` queries that log the quantity: shown, not gated."""
    counted = q.counted.format(n=c.n, subject=g.subject)
    return replace(c, status="skipped", note=f"only {counted} (min_queries {g.min_queries}): not gated")


def _ceiling_check(q: Quantity[G, C, R], g: G, stat: str, limit: float, base: dict[str, Any], small: bool,
                   conf: str) -> C:
    est, lo, hi = base["estimate"], base["ci_low"], base["ci_high"]
    value = {"ci_lower": lo, "estimate": est, "ci_upper": hi}[g.on]
    c = q.check(kind="max", status="pass", stat=stat, value=value, limit=limit, **base)
    s = g.subject
    if small:
        return _not_gated(q, g, c)
    if c.n == 0:
        return replace(c, status="warn", note=f"the run logs no {q.absent.format(subject=s)}")
    if math.isnan(value):
        needs = f"no {conf}: needs at least 2 {q.needs.format(subject=s)}"
        if c.segment is not None:
            return replace(c, status="skipped", note=needs)
        return replace(c, status="fail", note=f"{needs} and resamples > 0")
    if value <= limit + q.eps:
        note = ""
        if g.on == "ci_lower" and est > limit + q.eps:
            note = (f"{stat} {q.fmt_value(s, est)} is over {q.fmt_limit(s, limit)}, but within noise "
                    f"({conf} {q.fmt_range(s, lo, hi)})")
        return replace(c, note=note)
    return replace(c, status="fail")


def _regression_check(q: Quantity[G, C, R], g: G, stat: str, cur: np.ndarray, old: np.ndarray | None,
                      base: dict[str, Any], small: bool, conf: str, seed: int, resamples: int, confidence: float,
                      units: np.ndarray | None) -> C:
    """The change of ``stat`` from ``old`` to ``cur`` (the same queries) against the gate's limit (``units``: the
    unit of each query, for the kinds that resample other units than queries)."""
    limit = float(g.regression)  # type: ignore[arg-type]
    c = q.check(kind="regression", status="pass", stat=stat, value=math.nan, limit=limit,
                **{**base, "ci_low": math.nan, "ci_high": math.nan})
    s = g.subject
    if small:
        return _not_gated(q, g, c)
    if old is None:
        return replace(c, status="skipped", note=f"the baseline logs no {q.absent.format(subject=s)} per query")
    ok = ~(np.isnan(cur) | np.isnan(old))
    if ok.sum() == 0:
        return replace(c, status="warn" if c.segment is None else "skipped", note=q.none_in_both.format(subject=s))
    b, a, lo, hi = q.change(stat, cur, old, ok, units, seed, resamples, confidence)
    c = replace(c, n=int(ok.sum()), value=a - b, baseline=b, estimate=a, ci_low=lo, ci_high=hi)
    if a - b <= limit + q.eps:
        return c
    if math.isnan(lo):
        return replace(c, status="fail", note=f"grew by more than the limit; no {conf} to tell it from noise")
    if lo <= 0.0:
        return replace(c, note=f"grew by {q.fmt_change(s, a - b)}, beyond {q.fmt_limit(s, limit)}, but within "
                               f"noise ({conf} includes 0)")
    return replace(c, status="fail")


def decide_ceilings(q: Quantity[G, C, R], gates: Sequence[G], current: EvaluationResult,
                    baseline: EvaluationResult | None = None, *, seed: int = 0, resamples: int = 2000,
                    confidence: float = 0.95, baseline_summary: bool = False) -> tuple[R, ...]:
    """Check every gate on ``current`` (and against ``baseline`` when it is a run).

    ``baseline_summary``: the baseline given is a summary (no per-query values): regression limits are then
    shown as skipped, saying why (:attr:`Quantity.summary_note`), rather than left out."""
    conf = f"{fmt_confidence(confidence)} CI"
    cols = q.columns(current)
    units = q.units(current)
    old_cols = q.columns(baseline) if isinstance(baseline, EvaluationResult) else {}
    old_index = baseline.query_index() if isinstance(baseline, EvaluationResult) else {}
    results = []
    for g in gates:
        x = cols.get(g.subject, np.full(len(current.query_ids), math.nan))
        old: np.ndarray | None = None
        if g.subject in old_cols:  # the baseline's values in the candidate's query order
            src = old_cols[g.subject]
            old = np.asarray([src[old_index[qid]] if qid in old_index else math.nan for qid in current.query_ids])
        checks: list[C] = []
        for label, idx in query_groups(current, g.segments):
            xs = x[idx]
            n = int((~np.isnan(xs)).sum())
            small = label is not None and n < g.min_queries
            stats = q.group_stats(xs, None if label is None else idx, units, g.stats, seed, resamples, confidence)
            for stat in g.stats:
                est, lo, hi = stats[stat]
                base: dict[str, Any] = {"gate": g.name, g.SUBJECT: g.subject, "segment": label, "n": n,
                                        "estimate": est, "ci_low": lo, "ci_high": hi}
                if stat in g.ceilings:
                    checks.append(_ceiling_check(q, g, stat, g.ceilings[stat], base, small, conf))
                if g.regression is not None and isinstance(baseline, EvaluationResult):
                    checks.append(_regression_check(q, g, stat, xs, None if old is None else old[idx], base, small,
                                                    conf, seed, resamples, confidence,
                                                    None if units is None else units[idx]))
                elif g.regression is not None and baseline_summary and label is None:
                    checks.append(q.check(kind="regression", status="skipped", stat=stat, value=math.nan,
                                          limit=float(g.regression), note=q.summary_note, **base))
        failed = any(c.status == "fail" for c in checks)
        status = ("fail" if g.severity == "error" else "warn") if failed else (
            "warn" if any(c.status == "warn" for c in checks) else "pass")
        results.append(q.result(g, status, tuple(checks)))
    return tuple(results)
