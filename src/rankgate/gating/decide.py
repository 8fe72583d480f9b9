"""Release gates: a pure decision from ship criteria, the candidate's result and a baseline.

:func:`decide` checks every gate of a :class:`~rankgate.gating.config.GateConfig` over all queries and
over each segment the gate names, and returns a :class:`GateOutcome` (exit code 0 when every
error-severity gate passes, 1 otherwise; warning-severity gates never change it). Loading the files and
evaluating the runs is the gate flow's (:func:`rankgate.flows.gate.gate`, also ``rankgate.gate``).

The checks of one gate (each over all queries, then each segment of its ``segments`` fields):

``threshold`` (floor)
    pass when the candidate's mean (``on: mean``) or the lower bound of its bootstrap interval
    (``on: ci_lower``) is at least ``threshold``.
``max`` (ceiling, for lower-is-better metrics such as ``forbidden@k``)
    pass when the mean (``on: mean``) or the interval's upper bound (``on: ci_upper``) is at most ``max``.
``regression_max`` against a baseline *run* (paired)
    **fail only when the candidate is worse than the baseline by more than ``regression_max`` AND the
    paired bootstrap interval of the change excludes zero.** A drop beyond the limit whose interval
    still includes zero passes with a note ("within noise").
``regression_max`` against a baseline *summary* (``summary.json`` or a ``--json`` outcome)
    when it carries per-query values of the same gold set (``per_query``, written by this version):
    the paired rule above, with exactly the numbers a baseline run gives. Otherwise no paired
    interval: fail when the mean dropped by more than ``regression_max``. The outcome says which
    rule decided (``baseline.rule``: ``paired`` or ``means``).

Segments with fewer than ``min_queries`` applicable queries are reported but not gated. A metric that
applies to no query (``forbidden@k`` on a gold set without ``must_not_retrieve``) makes the check a
warning, or a failure when the gate says ``not_applicable: error``. An interval that cannot be
computed (fewer than 2 queries) fails the check when it is over all queries. Segments skip both,
saying why. Comparisons allow 1e-9 of floating-point slack, so 0.85 meets a 0.85 floor however the
mean was summed.
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rankgate._util.jsonable import nan_to_none
from rankgate.gating.baseline import BaselineSummary, gold_sha256_of, load_baseline_summary, per_query_dict, ties_of
from rankgate.stats.paired import Comparison, QueryChange, compare
from rankgate.errors import ConfigError, UsageError
from rankgate.metrics.display import fmt_confidence, fmt_share
from rankgate.metrics.info import higher_is_better
from rankgate.gating.config import Gate, GateConfig, config_from_dict, load_config, parse_config
from rankgate.gating.critical import critical_checks, gate_status
from rankgate.model.results import EvaluationResult, run_label
from rankgate.stats.segments import SegmentSummary, display_field, field_key, segment_summary
from rankgate.stats.bootstrap import metric_cis

__all__ = [
    "BaselineSummary",
    "Check",
    "Gate",
    "GateConfig",
    "GateOutcome",
    "GateResult",
    "SegmentMove",
    "StaleCheck",
    "config_from_dict",
    "decide",
    "load_baseline_summary",
    "load_config",
    "parse_config",
    "worst_queries",
]

EPS = 1e-9
NAN = math.nan
VERDICT_PERMUTATIONS = 10000
"""Sign flips of the randomisation test behind the verdicts of a paired comparison (``rankgate compare``'s default,
so the gate and compare word one change alike); the gate's decision does not use them."""


# -- outcome ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Check:
    """One comparison of one gate, over all queries (``field is None``) or one segment.

    ``value`` is what was compared to ``limit``: the mean or an interval bound (``threshold``,
    ``max``), or the change from the baseline (``regression``; ``ci_low``/``ci_high`` are then the
    change's interval, and ``limit`` the largest allowed worsening).
    """

    gate: str
    kind: str  # threshold | max | regression
    status: str  # pass | fail | warn (could not be checked; does not block) | skipped
    metric: str
    field: str | None = None
    segment: str | None = None
    n: int = 0
    value: float = NAN
    limit: float = NAN
    mean: float = NAN
    ci_low: float = NAN
    ci_high: float = NAN
    baseline: float = NAN
    note: str = ""
    verdict: str = ""  # a regression against per-query values: the change's verdict (rankgate.stats.verdict)
    critical: Mapping[str, Any] | None = None  # a chosen value's check: its limits, on, severity, owner, warning


@dataclass(frozen=True)
class GateResult:
    gate: Gate
    status: str  # pass | fail (error severity) | warn (warning severity)
    checks: tuple[Check, ...]

    @property
    def failures(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.status == "fail")


@dataclass(frozen=True)
class SegmentMove:
    metric: str
    field: str
    segment: str
    n: int
    baseline: float
    current: float
    delta: float
    ci_low: float = NAN
    ci_high: float = NAN
    verdict: str = ""


@dataclass(frozen=True)
class StaleCheck:
    """The ship criteria's ``max_stale_labels``, checked on the gold set against the corpus.

    ``status``: ``pass``, ``fail`` (severity error: blocks), ``warn`` (over the limit, severity
    warning) or ``not_checked`` (the gate was not given the corpus; never a silent pass)."""

    status: str
    limit: str  # "2.0%" or "10 gold ids"
    severity: str = "error"
    owner: str | None = None
    stale: int = 0
    labels: int = 0  # gold ids: graded labels + must_not_retrieve ids (see rankgate.goldset.StaleReport)
    by_reason: Mapping[str, int] = field(default_factory=dict)
    corpus: str | None = None

    @property
    def share(self) -> float:
        return self.stale / self.labels if self.labels else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "limit": self.limit, "severity": self.severity, "owner": self.owner,
                "stale": self.stale, "labels": self.labels, "share": self.share if self.status != "not_checked" else None,
                "by_reason": dict(self.by_reason), "corpus": self.corpus}


def stale_check(config: GateConfig, report: Any | None) -> StaleCheck | None:
    """The stale-label check of ``config`` on a :class:`rankgate.goldset.StaleReport` (None: the
    corpus was not given); None when the ship criteria set no ``max_stale_labels``."""
    if config.max_stale_labels is None and config.max_stale_share is None:
        return None
    limit = (f"{config.max_stale_labels} gold ids" if config.max_stale_labels is not None
             else fmt_share(config.max_stale_share or 0.0))
    if report is None:
        return StaleCheck("not_checked", limit, config.stale_severity, config.stale_owner)
    # the config's limit decides, whatever limit the report was made with
    over = ((config.max_stale_labels is not None and len(report.stale) > config.max_stale_labels)
            or (config.max_stale_share is not None and report.share > config.max_stale_share + 1e-12))
    status = ("fail" if config.stale_severity == "error" else "warn") if over else "pass"
    return StaleCheck(status, limit, config.stale_severity, config.stale_owner, len(report.stale), report.labels,
                      {k: n for k, n in report.by_reason().items() if n}, os.path.basename(str(report.corpus_path)))


@dataclass(frozen=True)
class GateOutcome:
    """Everything the gate decided, and what a reviewer needs to see why. ``to_dict`` is the JSON."""

    passed: bool
    results: tuple[GateResult, ...]
    baseline_kind: str  # run | summary | none
    baseline_label: str
    candidate_label: str
    seed: int
    resamples: int
    confidence: float
    summary: Mapping[str, Any]
    movers: tuple[SegmentMove, ...] = ()
    queries: tuple[QueryChange, ...] = ()
    queries_kind: str = "regressed"  # regressed (vs a baseline run) | lowest (no per-query baseline)
    notes: tuple[str, ...] = ()
    counts: Mapping[str, Any] = field(default_factory=dict)
    rule: str = "none"  # how regressions were judged: paired (per-query values) | means (summary of means) | none
    query_texts: Mapping[str, str] = field(default_factory=dict)  # query id -> its text, for the listed queries
    gold_versions: tuple[str | None, str | None] = (None, None)  # gold sha256 of (baseline, candidate), when known
    latency: tuple[Any, ...] = ()  # LatencyGateResult of each latency gate (rankgate.experiments.latency)
    stale: StaleCheck | None = None  # max_stale_labels of the ship criteria, when set
    tie_rules: tuple[str | None, str | None] = (None, None)  # ranking rule of (baseline, candidate), when known
    holm_families: tuple[tuple[str | None, int], ...] = ()  # the paired comparison's (field or None, size) families
    cost: tuple[Any, ...] = ()  # CostGateResult of each cost gate (rankgate.experiments.cost)
    resampling: Mapping[str, Any] | None = None  # conversations resampled (stats/clusters.py), when the queries form them

    @property
    def ties_differ(self) -> bool:
        """True when baseline and candidate were ranked by different rules (``--ties``): equal scores
        were ordered one way on one side and another way on the other."""
        base, cand = self.tie_rules
        return base is not None and cand is not None and base != cand

    @property
    def gold_differs(self) -> bool:
        """True when the baseline was scored on another version of the gold set than the candidate."""
        base, cand = self.gold_versions
        return base is not None and cand is not None and base != cand

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able data (NaN as null). Its ``metrics`` and ``segments`` have the shape of
        ``summary.json``, so a saved outcome serves as the next run's baseline summary."""
        return {
            "passed": self.passed,
            "exit_code": self.exit_code,
            "baseline": {"kind": self.baseline_kind, "label": self.baseline_label, "rule": self.rule},
            "candidate": self.candidate_label,
            "statistics": {"seed": self.seed, "resamples": self.resamples, "confidence": self.confidence,
                           **({"resampling": dict(self.resampling)} if self.resampling else {})},
            "gates": [
                {
                    "name": r.gate.name,
                    "metric": r.gate.metric,
                    "title": r.gate.title,
                    "severity": r.gate.severity,
                    "on": r.gate.on,
                    "threshold": r.gate.threshold,
                    "max": r.gate.max,
                    "regression_max": r.gate.regression_max,
                    "segments": list(r.gate.segments),
                    "owner": r.gate.owner,
                    **({"critical_segments": [c.to_dict() for c in r.gate.critical]} if r.gate.critical else {}),
                    **({"metric_from_name": True} if r.gate.metric_from_name else {}),
                    **({"ranking": r.gate.ranking} if r.gate.ranking != "final" else {}),
                    "status": r.status,
                    "checks": [{k: nan_to_none(v) for k, v in vars(c).items() if k != "gate" and (k not in ("verdict", "critical") or v)}
                               for c in r.checks],
                }
                for r in self.results
            ],
            "metrics": self.summary.get("metrics", {}),
            "segments": self.summary.get("segments", {}),
            "segments_moved": [{k: nan_to_none(v) for k, v in vars(m).items()} for m in self.movers],
            "queries": {"kind": self.queries_kind,
                        "items": [{**{k: nan_to_none(v) for k, v in vars(q).items()}, "query": self.query_texts.get(q.query_id)}
                                  for q in self.queries]},
            "notes": list(self.notes),
            "counts": dict(self.counts),
            "per_query": self.summary.get("per_query"),
            "gold_versions": {"baseline": self.gold_versions[0], "candidate": self.gold_versions[1],
                              "differ": self.gold_differs},
            "tie_rules": {"baseline": self.tie_rules[0], "candidate": self.tie_rules[1], "differ": self.ties_differ},
            **({"latency": [r.to_dict() for r in self.latency]} if self.latency else {}),
            **({"cost": [r.to_dict() for r in self.cost]} if self.cost else {}),
            "stale_labels": None if self.stale is None else self.stale.to_dict(),
            **({"holm_families": [{"rows": "headline" if f is None else f, "size": n} for f, n in self.holm_families]}
               if self.holm_families else {}),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


# -- decide -------------------------------------------------------------------------------------
def decide(config: GateConfig, current: EvaluationResult, baseline: EvaluationResult | BaselineSummary | None = None,
           *, baseline_label: str | None = None, candidate_label: str | None = None,
           query_text: Mapping[str, str] | None = None, stale: Any | None = None,
           intervals: Mapping[str, tuple[float, float]] | None = None) -> GateOutcome:
    """Check every gate of ``config`` on ``current`` (pure: no I/O, same inputs ⇒ same outcome).

    ``query_text`` (query id -> text, e.g. the gold set's ``query`` field) lets the outcome show
    the listed queries' text beside their ids. ``stale`` is the gold set's
    :class:`~rankgate.goldset.StaleReport` against the corpus, for ``max_stale_labels``; without it
    that limit is reported as not checked. ``intervals``: the candidate's intervals already drawn with
    the config's seed, resamples and confidence (an evaluation's), so they are not drawn again; a
    gated metric they lack is drawn here (a metric's interval does not depend on the others drawn
    with it)."""
    if not isinstance(config, GateConfig):
        raise UsageError("decide() needs a GateConfig (from rankgate.gating.decide.load_config)")
    if not isinstance(current, EvaluationResult):
        raise UsageError("decide() needs the candidate's EvaluationResult (from rankgate.evaluate)")
    for m in config.metrics:
        if m not in current.values:
            raise UsageError(f"the candidate result has no {m}; evaluate it with every metric of the gate config")
    fields = {f: _field(config, current, f) for f in config.segment_fields}
    seed, B, conf = config.seed, config.resamples, config.confidence
    cis = {m: intervals[m] for m in config.metrics if m in intervals} if intervals else {}
    missing = [m for m in config.metrics if m not in cis]
    if missing:
        cis.update(metric_cis(current, seed=seed, resamples=B, confidence=conf, metrics=missing))
    segs = (segment_summary(current, list(dict.fromkeys(fields.values())), metrics=config.metrics, seed=seed,
                            resamples=B, confidence=conf) if fields else None)
    cmp: Comparison | None = None
    notes: list[str] = []
    from rankgate.scoring.engine import id_mismatch_line, ties_lines

    for side, res in (("candidate", current), ("baseline", baseline)):
        if not isinstance(res, EvaluationResult):
            continue
        for line in [id_mismatch_line(res), *ties_lines(res)]:
            if line:
                notes.append(f"The {side} run: {line.split(': ', 1)[1]}")
        from rankgate.io.nearmiss import near_miss_line

        for line in [*(res.info.get("notices") or ()), near_miss_line(res.info.get("near_misses"))]:
            if line:  # how the inputs were read (joined lists), near-misses of text matching
                notes.append(f"The {side} run: {line.removeprefix('warning: ')}")
    paired: EvaluationResult | None = None  # the baseline's per-query values, from a run or a summary
    means_metrics: set[str] = set()  # gated metrics a summary baseline has means of only
    rule = "none"
    versions: tuple[str | None, str | None] = (None, None)
    if isinstance(baseline, EvaluationResult):
        paired, kind, rule = baseline, "run", "paired"
        versions = (gold_sha256_of(baseline), gold_sha256_of(current))
    elif isinstance(baseline, BaselineSummary):
        kind, blabel = "summary", baseline_label or os.path.basename(baseline.source)
        versions = (baseline.gold_sha256, gold_sha256_of(current))
        why = "it has no per-query values"
        if baseline.per_query is not None:
            paired, why = baseline.per_query.paired_result(current, config.metrics, baseline.source)
        if paired is not None:
            rule = "paired"
            means_metrics = {g.metric for g in config.gates if g.metric not in paired.metric_names}
            # raw-ranking gates whose rows the summary lacks altogether (an evaluate without --ranking): said once
            no_raw = sorted(g.metric for g in config.gates if g.ranking != "final" and g.metric not in baseline.metrics)
            if no_raw:
                notes.append(f"The baseline summary has no {', '.join(no_raw)} (the raw candidates' values), so "
                             f"{'that gate checks' if len(no_raw) == 1 else 'those gates check'} no regression: write "
                             "the baseline's summary with rankgate evaluate --ranking both (its run needs raw_topk), or "
                             "gate against the baseline run.")
            if set(means_metrics) - set(no_raw):  # only those gates lose the paired test
                notes.append(f"Gates on {', '.join(sorted(set(means_metrics) - set(no_raw)))} are judged on the change "
                             "in means, without "
                             f"a paired confidence interval: the baseline summary {why[3:]}.")
        else:
            rule = "means"
            notes.append(f"The baseline is a summary of means only ({why}): regressions are judged on the change "
                         "in means, without a paired confidence interval.")
    elif baseline is None:
        kind, blabel = "none", ""
        if any(g.regression_max is not None for g in config.gates):
            notes.append("No baseline given: regression limits were not checked.")
    else:
        raise UsageError(f"baseline must be an EvaluationResult, a BaselineSummary or None; got {type(baseline).__name__}")
    clabel = run_label(current, candidate_label)
    if paired is not None:
        # p-values (as rankgate compare draws them) only word the verdicts; the regression rule decides by the interval
        cmp = compare(paired, current, metrics=[m for m in config.metrics if m in paired.metric_names], by=list(dict.fromkeys(fields.values())), seed=seed,
                      resamples=B, n_permutations=VERDICT_PERMUTATIONS, confidence=conf, primary=next((g.metric for g in config.gates if g.metric not in means_metrics), paired.metric_names[0]),
                      baseline_label=baseline_label if kind == "run" else blabel, candidate_label=candidate_label)
        if kind == "run":
            blabel = cmp.baseline_label
        clabel = cmp.candidate_label  # one naming for both runs (two of the same system go by file)
        if cmp.only_in_baseline or cmp.only_in_candidate:
            notes.append(f"{len(cmp.only_in_baseline)} queries only in the baseline and {len(cmp.only_in_candidate)} "
                         "only in the candidate were left out of the paired comparison")

    results = []
    for g in config.gates:
        by_means = rule == "means" or g.metric in means_metrics
        means_only = baseline if by_means else None
        checks = _checks_for(g, config, current, cis, segs, fields, None if by_means else cmp, means_only)
        if g.critical:  # chosen segment values, each by the same checks with its own limits (gating/critical.py)
            checks += critical_checks(g, config, segs, fields, functools.partial(
                _checks_for_one, config=config, current=current, cis=cis, fields=fields,
                cmp=None if by_means else cmp, summary=means_only))
        results.append(GateResult(g, gate_status(g, checks), tuple(checks)))
    latency = _ceiling_results("latency", config, current, baseline)
    cost = _ceiling_results("cost", config, current, baseline)
    freshness = stale_check(config, stale)
    passed = (not any(r.status == "fail" for r in (*results, *latency, *cost))
              and not (freshness is not None and freshness.status == "fail"))
    primary = _primary_metric(config, results)
    summary = _summary(current, config.metrics, cis, segs)
    movers = _movers(config, current, cmp, segs, baseline if rule == "means" else None, summary)
    if cmp is not None and paired is not None:
        queries, qkind = cmp.regressions, "regressed"
        if primary != cmp.primary and primary in paired.metric_names:  # list the queries of the metric that failed
            queries = compare(paired, current, metrics=[primary], resamples=0, n_permutations=0).regressions
    else:
        queries, qkind = worst_queries(current, primary), "lowest"
    counts = {
        "evaluated": len(current.query_ids),
        "missing_from_run": list(current.missing_from_run),
        "not_in_gold": len(current.not_in_gold),
        "no_answer": len(current.no_answer),
    }
    summary["per_query"] = per_query_dict(current, config.metrics)
    listed = tuple(queries[:10])
    texts = {q.query_id: t for q in listed for t in [(query_text or {}).get(q.query_id)] if isinstance(t, str) and t}
    return GateOutcome(passed, tuple(results), kind, blabel, clabel, seed, B, conf,
                       summary, movers, listed, qkind, tuple(notes), counts, rule, texts, versions, latency,
                       freshness, (ties_of(baseline) if baseline is not None else None, ties_of(current)),
                       cmp.holm_families if cmp is not None else (), cost,
                       resampling=_resampling_of(current, config.metrics))


def _resampling_of(current: EvaluationResult, metrics: Any) -> dict[str, Any] | None:
    """What the candidate's intervals resample when its queries form conversations (None: queries)."""
    from rankgate.stats.clusters import resampling

    found = resampling(current, list(metrics))
    return None if found is None else found.to_dict()


def _ceiling_results(kind: str, config: GateConfig, current: EvaluationResult, baseline: Any) -> tuple[Any, ...]:
    """The ``latency`` or ``cost`` gates of ``config`` (none: no work), decided on their intervals
    (:mod:`rankgate.experiments.ceilings`); a segment field the result lacks is named where the gate writes it."""
    gates = getattr(config, kind, ())
    if not gates:
        return ()
    from rankgate.experiments.cost import decide_cost
    from rankgate.experiments.latency import decide_latency

    decide_kind: Any = decide_latency if kind == "latency" else decide_cost
    for i, g in enumerate(gates):
        for name in g.segments:
            try:
                field_key(current, name)
            except UsageError as exc:
                raise ConfigError(str(exc), path=config.path, line=g.lines.get("segments"),
                                  field=f"{kind}[{i}].segments") from None
    return decide_kind(gates, current, baseline if isinstance(baseline, EvaluationResult) else None,
                       seed=config.seed, resamples=config.resamples, confidence=config.confidence,
                       baseline_summary=isinstance(baseline, BaselineSummary))


def _field(config: GateConfig, current: EvaluationResult, name: str) -> str:
    try:
        return field_key(current, name)
    except UsageError as exc:
        g = next(g for g in config.gates if name in g.segments or any(c.field == name for c in g.critical))
        i = config.gates.index(g)
        chosen = next((c for c in g.critical if c.field == name and name not in g.segments), None)
        line = g.lines.get("segments") if chosen is None else chosen.line
        raise ConfigError(str(exc), path=config.path, line=line, field=f"gates[{i}].segments") from None


def _scopes(g: Gate, fields: Mapping[str, str], segs: SegmentSummary | None):
    yield None, None
    if segs is None:
        return
    for name in g.segments:
        key = fields[name]
        for label in segs.sizes(key):  # (labels in order; a look-up each, not a pass over every row)
            if segs.get(key, label, g.metric) is not None:
                yield key, label


def _checks_for_one(g: Gate, one: Any, *, config: GateConfig, current: EvaluationResult, cis, fields, cmp,
                    summary) -> list[Check]:
    """:func:`_checks_for` over the segments ``one`` holds (a chosen value's, gating/critical.py)."""
    return _checks_for(g, config, current, cis, one, fields, cmp, summary)


def _checks_for(g: Gate, config: GateConfig, current: EvaluationResult, cis, segs, fields, cmp, summary) -> list[Check]:
    out: list[Check] = []
    hib = higher_is_better(g.metric)
    conf = f"{fmt_confidence(config.confidence)} CI"
    for key, label in _scopes(g, fields, segs):
        if key is None:
            s = current.summary(g.metric)
            mean, n, (lo, hi) = s.mean, s.n, cis[g.metric]
        else:
            row = segs.get(key, label, g.metric)
            mean, n, lo, hi = row.mean, row.n, row.ci_low, row.ci_high
        base = Check(g.name, "", "pass", g.metric, key, label, n, mean=mean, ci_low=lo, ci_high=hi)
        small = key is not None and n < g.min_queries
        for kind, limit in (("threshold", g.threshold), ("max", g.max)):
            if limit is None:
                continue
            value = mean if g.on == "mean" else (lo if g.on == "ci_lower" else hi)
            c = {"kind": kind, "limit": limit, "value": value}
            if small:
                out.append(_with(base, status="skipped", note=f"only {n} queries (min_queries {g.min_queries}): not gated", **c))
            elif math.isnan(value) and n == 0:
                out.append(_with(base, status=_not_applicable(g, key), note=NOT_APPLICABLE, **c))
            elif math.isnan(value):
                why = f"no {conf}: needs at least 2 queries and resamples > 0"
                out.append(_with(base, status="fail" if key is None else "skipped", note=why, **c))
            else:
                ok = value >= limit - EPS if kind == "threshold" else value <= limit + EPS
                out.append(_with(base, status="pass" if ok else "fail", **c))
        if g.regression_max is not None:
            out.append(_regression(g, base, hib, small, cmp, summary, conf, config.confidence))
    return out


NOT_APPLICABLE = "the metric applies to no query"


def _not_applicable(g: Gate, field_key: str | None) -> str:
    """A gate whose metric applies to no query (forbidden@k on a gold set without must_not_retrieve)
    warns, unless its ``not_applicable: error`` says it must block; a segment is skipped."""
    if field_key is not None:
        return "skipped"
    return "fail" if g.not_applicable == "error" else "warn"


def _with(check: Check, **changes: Any) -> Check:
    from dataclasses import replace

    return replace(check, **changes)


def _regression(g: Gate, base: Check, hib: bool, small: bool, cmp: Comparison | None,
                summary: BaselineSummary | None, conf: str, confidence: float = 0.95) -> Check:
    limit = g.regression_max
    assert limit is not None  # (only gates with a regression limit come here)
    c = _with(base, kind="regression", limit=limit, ci_low=NAN, ci_high=NAN)
    if small:
        return _with(c, status="skipped", note=f"only {base.n} queries (min_queries {g.min_queries}): not gated")
    if cmp is not None:
        row = cmp.row(g.metric, base.field, base.segment)
        if row is None or row.n == 0:
            return _with(c, status="skipped", note="no query where the metric applies in both runs")
        worse = -row.delta if hib else row.delta
        c = _with(c, n=row.n, mean=row.candidate, baseline=row.baseline, value=row.delta, ci_low=row.ci_low, ci_high=row.ci_high,
                  verdict=row.verdict(confidence))
        if worse <= limit + EPS:
            return c
        if math.isnan(row.ci_low):
            return _with(c, note=f"beyond the limit, but too few queries for a {conf}: not established")
        real = row.ci_high < 0 if hib else row.ci_low > 0
        if real:
            return _with(c, status="fail")
        return _with(c, note=f"beyond the limit but within noise: the {conf} of the change includes 0")
    if summary is not None:
        st = summary.lookup(g.metric, base.field, base.segment)
        if st is None or math.isnan(st.mean):
            where = "" if base.field is None else f" for {display_field(base.field)} = {base.segment}"
            if g.ranking != "final" and g.metric not in summary.metrics:  # (rankgate.metrics.rankings)
                return _with(c, status="skipped", note=(
                    f"the baseline summary has no {g.metric}, the raw candidates' value: write it with rankgate "
                    "evaluate --ranking both (on a baseline run with raw_topk), or gate against the baseline run"))
            return _with(c, status="skipped", note=f"the baseline summary has no {g.metric}{where}")
        if math.isnan(base.mean):
            return _with(c, status=_not_applicable(g, base.field), note=NOT_APPLICABLE)
        delta = base.mean - st.mean
        worse = -delta if hib else delta
        c = _with(c, baseline=st.mean, value=delta, note="baseline summary: change in means, no paired test")
        return _with(c, status="fail" if worse > limit + EPS else "pass")
    return _with(c, status="skipped", note="no baseline given")


def _primary_metric(config: GateConfig, results) -> str:
    if results:
        for wanted in ("fail", "warn"):
            for r in results:
                if r.status == wanted and any(c.status == "fail" for c in r.checks):
                    return r.gate.metric
    return config.gates[0].metric


def worst_queries(current: EvaluationResult, metric: str, top: int = 10) -> tuple[QueryChange, ...]:
    """The worst-scoring queries (no per-query baseline to compare with); perfect ones are left out."""
    from rankgate.metrics import metric_info

    v = current.values[metric]
    hib = higher_is_better(metric)
    low, high = metric_info(metric).bounds  # a perfect value is the bound in the good direction
    idx = [i for i in np.flatnonzero(~np.isnan(v)).tolist()
           if not (hib and v[i] >= high) and not (not hib and v[i] <= low)]
    idx.sort(key=lambda i: ((1.0 if hib else -1.0) * float(v[i]), current.query_ids[i]))
    ranks = current.first_relevant_rank
    missing = set(current.missing_from_run)
    return tuple(
        QueryChange(current.query_ids[i], metric, NAN, float(v[i]), NAN, None,
                    None if ranks is None else int(ranks[i]),
                    "missing from the run" if current.query_ids[i] in missing else "")
        for i in idx[:top]
    )


def _summary(current: EvaluationResult, metrics, cis, segs: SegmentSummary | None) -> dict[str, Any]:
    def clean(x: float) -> float | None:
        return None if math.isnan(x) else x

    out: dict[str, Any] = {"metrics": {}}
    for m in metrics:
        s = current.summary(m)
        out["metrics"][m] = {"mean": clean(s.mean), "n": s.n, "ci_low": clean(cis[m][0]), "ci_high": clean(cis[m][1])}
    out["segments"] = segs.to_dict() if segs is not None else {}
    return out


def _movers(config: GateConfig, current: EvaluationResult, cmp, segs, summary, cur_summary, top: int = 5):
    moves: list[SegmentMove] = []
    if cmp is not None:
        for r in cmp.rows:
            if r.field is not None and r.n > 0:
                moves.append(SegmentMove(r.metric, r.field, r.segment, r.n, r.baseline, r.candidate, r.delta,
                                         r.ci_low, r.ci_high, r.verdict(config.confidence)))
    elif segs is not None:
        gated = {(g.metric, field_key(current, f)) for g in config.gates for f in g.segments}
        for r in segs.rows:
            if r.n == 0 or (r.metric, r.field) not in gated:
                continue
            if summary is not None:
                st = summary.lookup(r.metric, r.field, r.label)
                b = NAN if st is None else st.mean
            else:
                b = cur_summary["metrics"][r.metric]["mean"]
                b = NAN if b is None else b
            moves.append(SegmentMove(r.metric, r.field, r.label, r.n, b, r.mean, r.mean - b))
    moves = [m for m in moves if not math.isnan(m.delta)]

    def badness(m: SegmentMove) -> tuple:
        worse = -m.delta if higher_is_better(m.metric) else m.delta
        return (-abs(m.delta) if cmp is not None or summary is not None else -worse, -worse, m.metric, m.field, m.segment)

    moves.sort(key=badness)
    return tuple(moves[:top])
