"""The finished report as data: what :func:`rankgate.render.build.report` computes and the HTML
renderer (:mod:`rankgate.render.html`) shows. Plain frozen dataclasses; no rendering here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from rankgate.gating.diagnosis import Finding
    from rankgate.gating.decide import GateOutcome
    from rankgate.stats.segments import SegmentSummary

__all__ = [
    "Curve", "Item", "Judgement", "Latency", "Miss", "NoAnswer", "Offence", "PanelRow", "Report", "SourceRow", "Stages",
]

NAN = math.nan


@dataclass(frozen=True)
class PanelRow:
    """One metric of the retrieval panel; the baseline columns are NaN without a baseline."""

    metric: str
    mean: float
    n: int
    ci_low: float = NAN
    ci_high: float = NAN
    definition: str = ""
    baseline: float = NAN
    delta: float = NAN
    delta_low: float = NAN
    delta_high: float = NAN
    p_value: float = NAN
    verdict: str = ""


@dataclass(frozen=True)
class Latency:
    """Latency of one stage (or ``total``) over the evaluated queries that report it, in ms."""

    stage: str
    n: int
    median: float
    p90: float
    baseline_median: float = NAN
    baseline_p90: float = NAN


@dataclass(frozen=True)
class Curve:
    """A k-sweep curve (``recall``, ``ndcg``): mean per k, optional interval, and its knee."""

    metric: str
    ks: tuple[int, ...]
    means: tuple[float, ...]
    ci_low: tuple[float, ...] = ()
    ci_high: tuple[float, ...] = ()
    knee: int | None = None


@dataclass(frozen=True)
class Item:
    """One retrieved item as shown in a list: rank, id, score and what it is."""

    rank: int
    chunk_id: str
    score: float | None = None
    version: str | None = None
    snippet: str | None = None
    grade: int | None = None  # None: not judged for this query
    source: str | None = None
    flag: str = ""  # why it is listed: "forbidden", "newer than as_of 2026-05-01"


@dataclass(frozen=True)
class Judgement:
    chunk_id: str
    grade: int
    note: str | None = None
    rank: int = 0  # where the run has it (0: not retrieved)


@dataclass(frozen=True)
class Miss:
    """A query with no relevant chunk in the top 10."""

    query_id: str
    query: str | None
    labels: Mapping[str, str]
    gold: tuple[Judgement, ...]
    retrieved: tuple[Item, ...]
    first_relevant_rank: int  # 0: not in the list at all
    depth: int  # how many items the run returned for the query
    missing_from_run: bool = False
    lexical: tuple[Item, ...] | None = None
    lexical_rank: int | None = None  # first relevant rank in the lexical run (0: none)


@dataclass(frozen=True)
class Offence:
    """A query whose top k holds forbidden items or items newer than its as_of."""

    query_id: str
    query: str | None
    k: int
    as_of: str | None
    items: tuple[Item, ...]  # the offending items only


@dataclass(frozen=True)
class NoAnswer:
    query_id: str
    query: str | None
    flagged: bool  # counted by false_evidence@k
    top: tuple[Item, ...]


@dataclass(frozen=True)
class Stages:
    """Raw candidate list (``raw_topk``) against the final (reranked) list."""

    k_raw: int
    k: int
    queries: int  # queries with a raw list
    rows: tuple[tuple[str, float, float], ...]  # (metric, raw, final)
    # (metric, low, high, verdict): the paired interval of final − raw and its verdict (rankgate.stats.verdict)
    changes: tuple[tuple[str, float, float, str], ...] = ()
    confidence: float = 0.95


@dataclass(frozen=True)
class SourceRow:
    source: str
    items: int  # retrieved items from this source
    share_of_slots: float
    relevant: int  # relevant items found from this source
    share_of_found: float
    recall: float  # mean over answerable queries of (relevant found via this source) / |G|
    only_source: int  # queries whose relevant items found all come from this source


@dataclass(frozen=True)
class Report:
    """Everything the HTML report shows, computed once."""

    title: str
    version: str
    generated_at: str | None
    inputs: tuple[tuple[str, str, str | None], ...]  # (role, path, sha256)
    facts: tuple[tuple[str, str], ...]  # (what, value): system, index version, chunker, corpus version…
    counts: Mapping[str, Any]
    k: int
    level: str
    seed: int
    resamples: int
    confidence: float
    panel: tuple[PanelRow, ...]
    latency: tuple[Latency, ...] = ()
    artifacts: Any = None  # render.artifacts.RunArtifacts: each run's recorded index version, chunker, models
    experiments: tuple[tuple[str, str, str], ...] = ()  # (anchor, title, HTML section): freshness, rewrite, routing…
    run_label: str = "run"  # how charts and tables name the run (and baseline_label the baseline): the same form
    baseline_label: str | None = None
    changes_tested: int = 0  # the comparison's headline rows (every metric over all queries): one Holm family
    lexical_label: str | None = None
    lexical_panel: tuple[tuple[str, float], ...] = ()
    curves: tuple[Curve, ...] = ()
    baseline_curves: tuple[Curve, ...] = ()
    segment_knees: tuple[Any, ...] = ()  # each --by segment value's k-sweep knee (rankgate.stats.sweep.SegmentKnee)
    depth: int = 0
    rank_histogram: tuple[tuple[str, int], ...] = ()
    baseline_rank_histogram: tuple[tuple[str, int], ...] = ()
    segments: SegmentSummary | None = None
    segment_deltas: Mapping[tuple[str, str, str], float] = field(default_factory=dict)
    floors: Mapping[str, float] = field(default_factory=dict)
    segments_auto: bool = False
    misses: tuple[Miss, ...] = ()
    misses_total: int = 0
    offences_forbidden: tuple[Offence, ...] = ()
    offences_stale: tuple[Offence, ...] = ()
    forbidden_total: int = 0
    stale_total: int = 0
    forbidden_checked: int = 0
    stale_checked: int = 0
    stages: Stages | None = None
    sources: tuple[SourceRow, ...] = ()
    sources_from: str = ""
    no_answer: tuple[NoAnswer, ...] = ()
    false_evidence_metric: str = ""
    false_evidence_rate: float = NAN
    doc_level: Mapping[str, float] = field(default_factory=dict)  # chunk vs doc recall@10
    gate: GateOutcome | None = None
    findings: tuple[Finding, ...] = ()
    notes: tuple[str, ...] = ()
    incidents: Any = None  # report.incidents.IncidentView: the gold set's regression cases from incidents
    abstention: Any = None  # report.abstention.Abstention: the calibrate-abstention file, charted
    answers: Mapping[str, Any] | None = None  # layer two: the "answers" part of a rankgate answers summary
    bounds: Mapping[str, Any] | None = None  # precision/nDCG bounds of an incomplete gold set (evaluate --judged)
    input_notes: tuple[str, ...] = ()  # how the inputs were read (joined lists) and near-misses of text matching
    resample_unit: str = "queries"  # what the intervals resample: queries, or conversations (stats/clusters.py)
