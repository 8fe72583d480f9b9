"""Routing: does the router send each query to the index (source) it belongs to?

Inputs: the gold field ``expected_source`` (one source name per query) and the run's per-item
``source`` (which index or retriever each item came from). For each query with an expected source:

* its **chosen** source is the source that supplied most of its top-k items (ties: the source of the
  better-ranked item); a query with no item in its top k (or none with a source) is ``(none)``;
* it is **routed** correctly when the chosen source is the expected one.

Reported: coverage (the share of queries routed correctly, with a Wilson interval), the mean share
of top-k items from the expected source (bootstrap interval), the misroute matrix (expected ×
chosen, counts), per expected source the queries, coverage and recall@k (bootstrap interval), and
per source its share of all top-k slots and of the relevant items found, the numbers the diagnosis
rule ``router_skew`` reads (:func:`rankgate.gating.diagnosis.router_skew`); its findings come along.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rankgate.model.gold_run import Gold, Run
from rankgate.gating.diagnosis import Finding, Signals, SourceSignal, Thresholds, router_skew
from rankgate.errors import InputError
from rankgate.model.results import EvaluationResult
from rankgate.stats.bootstrap import bootstrap_ci, wilson_interval
from rankgate.experiments.paired import nan_to_none
from rankgate.experiments.stress import ranked_items
from rankgate.stats.options import Statistics, taken

__all__ = ["NONE", "Routing", "SourceRow", "routing_analysis"]

NONE = "(none)"


@dataclass(frozen=True)
class SourceRow:
    """One expected source: its queries, how many were routed to it, and their recall@k."""

    source: str
    queries: int
    routed: int
    coverage: float
    coverage_ci: tuple[float, float]
    recall: float
    recall_ci: tuple[float, float]
    recall_n: int


@dataclass(frozen=True)
class Routing:
    k: int
    queries: int  # queries with an expected source
    routed: int
    coverage: float
    coverage_ci: tuple[float, float]
    expected_share: float  # mean share of top-k items from the expected source
    expected_share_ci: tuple[float, float]
    matrix: tuple[tuple[str, str, int], ...]  # (expected, chosen, queries), sorted
    per_source: tuple[SourceRow, ...]
    slots: tuple[SourceSignal, ...]
    findings: tuple[Finding, ...]
    misrouted: tuple[tuple[str, str, str], ...]  # (query_id, expected, chosen), gold order

    def to_dict(self) -> dict[str, Any]:
        def ci(x: tuple[float, float]) -> list[float | None]:
            return [nan_to_none(x[0]), nan_to_none(x[1])]

        return {
            "k": self.k, "queries": self.queries, "routed": self.routed, "coverage": nan_to_none(self.coverage),
            "coverage_ci": ci(self.coverage_ci), "expected_share": nan_to_none(self.expected_share),
            "expected_share_ci": ci(self.expected_share_ci),
            "matrix": [{"expected": e, "chosen": c, "queries": n} for e, c, n in self.matrix],
            "per_source": [{"source": r.source, "queries": r.queries, "routed": r.routed,
                            "coverage": nan_to_none(r.coverage), "coverage_ci": ci(r.coverage_ci),
                            f"recall@{self.k}": nan_to_none(r.recall), "recall_ci": ci(r.recall_ci),
                            "recall_n": r.recall_n} for r in self.per_source],
            "slots": [{"source": s.source, "share_of_slots": s.share_of_slots, "share_of_found": s.share_of_found,
                       "items": s.items} for s in self.slots],
            "findings": [{"rule": f.rule, "severity": f.severity, "title": f.title} for f in self.findings],
            "misrouted": [{"query_id": q, "expected": e, "chosen": c} for q, e, c in self.misrouted],
            "definition": f"a query's chosen source supplies most of its top {self.k} items (ties: the better-ranked "
                          "item's); it is routed correctly when that is its expected_source",
        }


def _chosen(sources: Sequence[str | None]) -> str:
    named = [s for s in sources if s]
    if not named:
        return NONE
    counts = Counter(named)
    best = max(counts.values())
    return next(s for s in named if counts[s] == best)  # first (best-ranked) among the most frequent


def routing_analysis(gold: Gold, run: Run, recall: EvaluationResult, *, k: int,
                     statistics: Statistics | None = None, seed: int = 0,
                     resamples: int = 2000, confidence: float = 0.95,
                     thresholds: Thresholds | None = None) -> Routing:
    """The routing numbers of the module docs. ``recall``: ``run`` evaluated with ``recall@k``."""
    seed, resamples, confidence = taken(statistics, seed, resamples, confidence, caller="routing_analysis",
                                         defaults=(0, 2000, 0.95))
    expected = gold.field("expected_source")
    for qid, e in zip(gold.query_ids, expected):
        if e is not None and not (isinstance(e, str) and e.strip()):
            raise InputError(f"query {qid!r} has expected_source {e!r}; expected one source name (a string)"[:200],
                             path=gold.source, field="expected_source")
    if "source" not in run.items:
        raise InputError("has no 'source' on any retrieved item, so routing cannot be measured", path=run.source,
                         field="source", hint="log which index or retriever each item came from as 'source'")
    ranked = ranked_items(run, recall.info.get("ties"))  # the rule recall@k was scored by
    src_of: dict[tuple[str, str], str | None] = {}
    docs = run.r_doc.to_pylist()
    for qi, d, s in zip(run.r_query.tolist(), docs, run.items["source"]):
        src_of[(run.query_ids[qi], d)] = s
    judged = gold.judgements()
    rec = recall[f"recall@{k}"]
    rec_index = recall.query_index()
    rows: list[tuple[str, str, str, float, float]] = []  # qid, expected, chosen, share, recall
    slots: Counter[str] = Counter()
    found: Counter[str] = Counter()
    for qid, e in zip(gold.query_ids, expected):
        top = ranked.get(qid, [])[:k]
        srcs = [src_of.get((qid, d)) for d in top]
        for d, s in zip(top, srcs):
            slots[s or NONE] += 1
            if judged.get(qid, {}).get(d, 0) > 0:
                found[s or NONE] += 1
        if e is None:
            continue
        share = sum(1 for s in srcs if s == e) / len(srcs) if srcs else 0.0
        r = float(rec[rec_index[qid]]) if qid in rec_index else math.nan
        rows.append((qid, e, _chosen(srcs), share, r))
    if not rows:
        raise InputError("has no expected_source on any query, so routing cannot be measured", path=gold.source,
                         field="expected_source", hint="give each query the source (index) it should be sent to")
    n = len(rows)
    routed = sum(1 for _, e, c, _, _ in rows if e == c)
    matrix = Counter((e, c) for _, e, c, _, _ in rows)
    per_source = []
    for src in sorted({e for _, e, _, _, _ in rows}):
        mine = [r for r in rows if r[1] == src]
        ok = sum(1 for r in mine if r[2] == src)
        recs = np.asarray([r[4] for r in mine], dtype=np.float64)
        valid = recs[~np.isnan(recs)]
        per_source.append(SourceRow(src, len(mine), ok, ok / len(mine), wilson_interval(ok, len(mine), confidence=confidence),
                                    math.fsum(valid.tolist()) / valid.size if valid.size else math.nan,
                                    bootstrap_ci(recs, rng=seed, resamples=resamples, confidence=confidence),
                                    int(valid.size)))
    total_slots, total_found = sum(slots.values()), sum(found.values())
    signals = tuple(SourceSignal(s, slots[s] / total_slots, (found[s] / total_found) if total_found else 0.0, slots[s])
                    for s in sorted(slots) if total_slots)
    shares = np.asarray([r[3] for r in rows], dtype=np.float64)
    return Routing(
        k, n, routed, routed / n, wilson_interval(routed, n, confidence=confidence),
        math.fsum(shares.tolist()) / n, bootstrap_ci(shares, rng=seed, resamples=resamples, confidence=confidence),
        tuple(sorted((e, c, m) for (e, c), m in matrix.items())), tuple(per_source), signals,
        tuple(router_skew(Signals(sources=signals), thresholds or Thresholds())),
        tuple((q, e, c) for q, e, c, _, _ in rows if e != c))
