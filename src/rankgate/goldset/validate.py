"""``rankgate gold validate``: is this gold set fit to gate releases on? Pure: files in, a
:class:`ValidationReport` out; rendering lives in :mod:`rankgate.render.gold`.

Findings (``severity`` ``error`` blocks: the command exits 1; ``warning`` is shown only):

=====================  ========  =================================================================
kind                   severity  what
=====================  ========  =================================================================
schema                 error     a line the gold loader refuses (every such line, with its message)
duplicate              error     a query id seen on an earlier line
unmarked_no_answer     error     no relevant item, and not marked ``"no_answer": true``
unknown_chunk          error     a labelled chunk id absent from the corpus (``--corpus``)
unknown_must_not       error     a ``must_not_retrieve`` id absent from the corpus: it tests nothing
inactive_relevant      warning   a relevant item (grade >= 1) that is deprecated, superseded or retired
underpowered           warning   a gated segment whose queries cannot see the gate's ``regression_max``
baseline               warning   ``--baseline`` could not be used for a gate (no per-query values of its
                                 metric, another gold version); that gate falls back to the binomial figure
no_owner               warning   a gate without ``owner:`` in the ship criteria
bad_created            warning   a ``created`` that is not a date: the label's age is unknown (not 0)
future_created         warning   a ``created`` after the date ages are counted to (``--as-of``)
=====================  ========  =================================================================

Also reported, as facts: the mix of ``source_of_query`` and of tiers (``tier`` or ``tags.tier``), the
age of the labels (``created``, ``corpus_version``), and per segment of each gate's ``segments:`` the
number of answerable queries and the smallest drop the gate can see at that size: from the bootstrap
of a baseline run's per-query values in that segment when one is given
(:func:`rankgate.stats.power.min_detectable_drop_bootstrap`), else the binomial approximation
(:func:`rankgate.stats.power.min_detectable_drop`).
"""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rankgate.corpus import CorpusManifest
from rankgate.metrics.display import fmt_size
from rankgate.stats.power import min_detectable_drop, min_detectable_drop_bootstrap

if TYPE_CHECKING:  # the config is only read here; goldset sits below the gate layer
    from rankgate.gating.config import GateConfig
from rankgate.goldset.records import GoldFile

__all__ = ["Finding", "LabelAge", "SegmentPower", "ValidationReport", "validate_gold"]

ERROR, WARNING = "error", "warning"


@dataclass(frozen=True)
class Finding:
    severity: str
    kind: str
    message: str
    line: int | None = None
    query_id: str | None = None


@dataclass(frozen=True)
class SegmentPower:
    """One segment of a gate: its answerable queries and the smallest drop the gate can see."""

    gate: str
    metric: str
    field: str
    value: str
    queries: int
    min_queries: int
    level: float  # the share the figure assumes (the gate's threshold, else 0.5)
    detectable_drop: float
    regression_max: float | None
    method: str = "binomial"  # binomial | bootstrap (of the baseline's per-query values)
    spread: float = math.nan  # the per-query standard deviation the figure assumes (nan: none, too few values)

    @property
    def gated(self) -> bool:
        return self.queries >= self.min_queries

    @property
    def underpowered(self) -> bool:
        return self.gated and self.regression_max is not None and self.detectable_drop > self.regression_max


@dataclass(frozen=True)
class LabelAge:
    as_of: str
    dated: int
    undated: int
    oldest: str | None
    newest: str | None
    median_age_days: float | None
    by_corpus_version: tuple[tuple[str, int], ...]
    unreadable: int = 0  # of the undated: a ``created`` that is not a date (their age is unknown, never 0)
    future: int = 0  # dated after ``as_of``


@dataclass(frozen=True)
class ValidationReport:
    gold_path: str
    gold_sha256: str
    corpus_path: str | None
    config_path: str | None
    queries: int
    labels: int
    no_answer: int
    findings: tuple[Finding, ...]
    source_mix: tuple[tuple[str, int], ...]
    tier_mix: tuple[tuple[str, int], ...]
    age: LabelAge
    power: tuple[SegmentPower, ...]
    owners: tuple[tuple[str, str | None], ...]  # (gate name, owner)
    baseline_path: str | None = None
    confidence: float = 0.95  # of the smallest-visible-drop figures (the ship criteria's)
    must_not: int = 0  # must_not_retrieve ids (``labels`` counts the graded labels only)

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == ERROR)

    @property
    def warnings(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == WARNING)

    @property
    def exit_code(self) -> int:
        return 1 if self.errors else 0


def _mix(values: list[str | None]) -> tuple[tuple[str, int], ...]:
    counts = Counter("(not set)" if v is None else v for v in values)
    return tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _date(text: Any) -> dt.date | None:
    if not isinstance(text, str):
        return None
    try:
        return dt.date.fromisoformat(text[:10])
    except ValueError:
        return None


def _age(gold: GoldFile, as_of: dt.date) -> LabelAge:
    """Ages count only labels with a readable ``created`` date; the others are of unknown age (a
    label without a date is never taken as made today)."""
    dates = [d for d in (_date(q.fields.get("created")) for q in gold.queries) if d is not None]
    unreadable = sum(1 for q in gold.queries if q.fields.get("created") is not None and _date(q.fields["created"]) is None)
    ages = sorted((as_of - d).days for d in dates)
    median = None
    if ages:
        mid = len(ages) // 2
        median = float(ages[mid]) if len(ages) % 2 else (ages[mid - 1] + ages[mid]) / 2
    versions = Counter(str(q.fields.get("corpus_version", "(not set)")) for q in gold.queries)
    return LabelAge(as_of.isoformat(), len(dates), len(gold.queries) - len(dates),
                    min(dates).isoformat() if dates else None, max(dates).isoformat() if dates else None,
                    median, tuple(sorted(versions.items())), unreadable, sum(1 for d in dates if d > as_of))


def _segment_power(gold: GoldFile, config: GateConfig,
                   baseline: Mapping[str, Mapping[str, float]] | None = None, *, power: float = 0.8) -> list[SegmentPower]:
    """Each gate's groups (all queries, then each value of each ``segments:`` field) with the smallest drop it can
    see at ``power``: the figures of ``gold validate`` and of ``gold plan`` (:mod:`rankgate.goldset.plan`)."""
    from rankgate.stats.power import per_query_sd, share_sd
    from rankgate.stats.segments import ordered_labels

    answerable = [q for q in gold.queries if any(label.grade >= 1 for label in q.labels)]
    out = []
    for g in config.gates:
        if g.regression_max is None and g.threshold is None:
            continue  # a ceiling (max: 0) is not about detecting a drop
        level = g.threshold if g.threshold is not None else 0.5
        groups = [("all", "all queries", answerable)]
        for name in g.segments:
            members: dict[str, list[Any]] = {}
            for q in answerable:
                v = q.value(name)
                if v is not None:
                    members.setdefault(v, []).append(q)
            for value in ordered_labels(list(members)):
                groups.append((name, value, members[value]))
        values = None if baseline is None else baseline.get(g.metric)
        for name, value, qs in groups:
            n = len(qs)
            method, drop = "binomial", min_detectable_drop(n, level, confidence=config.confidence, power=power)
            spread = share_sd(level)
            xs: list[float] = []
            if values is not None:
                xs = [x for x in (values.get(q.query_id) for q in qs) if x is not None and not math.isnan(x)]
                boot = min_detectable_drop_bootstrap(xs, confidence=config.confidence, power=power)
                spread = per_query_sd(xs) if len(xs) >= 2 else math.nan
                if boot is None:  # no spread: the binomial figure at the baseline's level
                    boot = min_detectable_drop(len(xs), xs[0], confidence=config.confidence, power=power)
                    spread = share_sd(xs[0])
                method, drop = "bootstrap", boot
            at = level if method == "binomial" or not xs else math.fsum(xs) / len(xs)  # the baseline's level
            out.append(SegmentPower(g.name, g.metric, name, value, n, g.min_queries if name != "all" else 1,
                                    at, drop, g.regression_max, method, spread))
    return out


def validate_gold(gold: GoldFile, corpus: CorpusManifest | None = None, config: GateConfig | None = None,
                  *, as_of: dt.date | None = None, baseline: Mapping[str, Mapping[str, float]] | None = None,
                  baseline_path: str | None = None, baseline_notes: Sequence[str] = ()) -> ValidationReport:
    """Every check of the module docs; ``as_of`` (default: today, UTC) is the date label ages are counted to.
    ``baseline`` (metric -> query id -> value, from a baseline run or summary) turns the gates' smallest
    visible drops into bootstrap figures; ``baseline_notes`` are why parts of it could not be used."""
    as_of = as_of or dt.datetime.now(dt.timezone.utc).date()
    findings = [Finding(ERROR, p.kind, p.message, p.line, p.query_id) for p in gold.problems]
    findings += [Finding(WARNING, "baseline", note) for note in baseline_notes]
    if corpus is not None:
        for q in gold.queries:
            for label in q.labels:
                i = corpus.index_of(label.chunk_id)
                if i is None:
                    findings.append(Finding(ERROR, "unknown_chunk", f"labels {label.chunk_id!r}, which is not in the corpus",
                                            q.line, q.query_id))
                elif label.grade >= 1 and corpus.statuses[i] != "active":
                    by = corpus.superseded_by[i]
                    findings.append(Finding(WARNING, "inactive_relevant",
                                            f"counts {label.chunk_id!r} as relevant, but it is {corpus.statuses[i]}"
                                            + (f" (superseded by {by!r})" if by else ""), q.line, q.query_id))
            for cid in q.must_not_retrieve:
                if cid not in corpus:
                    findings.append(Finding(ERROR, "unknown_must_not",
                                            f"must not retrieve {cid!r}, which is not in the corpus: the check tests nothing",
                                            q.line, q.query_id))
    for q in gold.queries:
        created = q.fields.get("created")
        if created is None:
            continue
        d = _date(created)
        if d is None:
            findings.append(Finding(WARNING, "bad_created", f"created {str(created)[:40]!r} is not a date YYYY-MM-DD: "
                                    "the label's age is unknown", q.line, q.query_id))
        elif d > as_of:
            findings.append(Finding(WARNING, "future_created", f"created {d.isoformat()} is after {as_of.isoformat()}",
                                    q.line, q.query_id))
    power: list[SegmentPower] = []
    owners: list[tuple[str, str | None]] = []
    if config is not None:
        power = _segment_power(gold, config, baseline)
        if baseline is not None:
            for g in config.gates:
                if g.metric not in baseline and (g.regression_max is not None or g.threshold is not None):
                    findings.append(Finding(WARNING, "baseline", f"gate {g.name}: the baseline has no per-query "
                                            f"values of {g.metric}; its figures are the binomial approximation"))
        for g in config.gates:
            blind = [p for p in power if p.gate == g.name and p.underpowered]
            if blind:
                worst = max(blind, key=lambda p: p.detectable_drop)
                where = "all queries" if worst.field == "all" else f"{worst.field}={worst.value}"
                findings.append(Finding(WARNING, "underpowered",
                                        f"gate {g.name}: {len(blind)} of {sum(p.gate == g.name and p.gated for p in power)} "
                                        f"checked groups cannot see a regression of regression_max "
                                        f"({fmt_size(g.metric, g.regression_max)}); e.g. {where} has {worst.queries} "
                                        f"queries and the gate cannot see a drop under "
                                        f"{fmt_size(g.metric, worst.detectable_drop)}"))
        for g in config.gates:
            owners.append((g.name, g.owner))
            if g.owner is None:
                findings.append(Finding(WARNING, "no_owner", f"gate {g.name} ({g.metric}) has no owner"))
    findings.sort(key=lambda f: (f.severity != ERROR, f.line is None, f.line or 0, f.kind))
    tiers = [q.value("tier") for q in gold.queries]
    return ValidationReport(
        gold.path, gold.sha256, None if corpus is None else corpus.source, None if config is None else config.path,
        len(gold.queries), sum(len(q.labels) for q in gold.queries), sum(q.no_answer for q in gold.queries),
        tuple(findings), _mix([q.value("source_of_query") for q in gold.queries]),
        _mix(tiers) if any(t is not None for t in tiers) else (), _age(gold, as_of), tuple(power), tuple(owners),
        baseline_path, config.confidence if config is not None else 0.95,
        must_not=sum(len(q.must_not_retrieve) for q in gold.queries),
    )
