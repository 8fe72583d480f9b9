"""Query rewriting: does the rewrite help or hurt, for which queries?

Given the results of the original query and of the rewritten one (a rewrite log,
:mod:`rankgate.io.rewrite`, or two run files), :func:`rewrite_effect` scores both against the gold
set and reports recall@k and nDCG@k of each with the paired change (rewritten − original) and its
bootstrap interval, per segment, and the queries the rewrite *broke*: recall@k lower with the rewrite
than without (ordered by the loss, then query id), with both query texts when logged. Queries it
*fixed* (recall@k higher) are counted too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rankgate.model.results import EvaluationResult
from rankgate.experiments.paired import PairedRow, nan_to_none, paired_rows
from rankgate.stats.options import Statistics, taken

__all__ = ["BrokenQuery", "RewriteEffect", "rewrite_effect"]


@dataclass(frozen=True)
class BrokenQuery:
    query_id: str
    recall_original: float
    recall_rewritten: float
    ndcg_original: float
    ndcg_rewritten: float
    original: str | None = None  # the query texts, when logged
    rewritten: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: (nan_to_none(v) if isinstance(v, float) else v) for k, v in vars(self).items()}


@dataclass(frozen=True)
class RewriteEffect:
    k: int
    original: EvaluationResult
    rewritten: EvaluationResult
    rows: tuple[PairedRow, ...]  # before = original, after = rewritten
    broken: tuple[BrokenQuery, ...]
    fixed: int
    labels: tuple[str, str] = ("original", "rewritten")
    texts: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"k": self.k, "labels": list(self.labels), "metrics": [r.to_dict() for r in self.rows],
                "broken": [b.to_dict() for b in self.broken], "broken_count": len(self.broken), "fixed_count": self.fixed,
                "definition": "change = rewritten - original, paired by query; a query is broken when its recall@k "
                              "is lower with the rewrite"}


def rewrite_effect(original: Any, rewritten: Any, evaluate: Callable[[Any, Sequence[str]], EvaluationResult], *,
                   k: int = 10, by: Sequence[str] = (),
                   statistics: Statistics | None = None, seed: int = 0, resamples: int = 2000,
                   confidence: float = 0.95, texts: Mapping[str, Mapping[str, str]] | None = None,
                   labels: tuple[str, str] = ("original", "rewritten")) -> RewriteEffect:
    """Score both sides with ``evaluate(run, metrics)`` and compare them (see the module docs)."""
    seed, resamples, confidence = taken(statistics, seed, resamples, confidence, caller="rewrite_effect",
                                         defaults=(0, 2000, 0.95))
    metrics = [f"recall@{k}", f"ndcg@{k}"]
    a, b = evaluate(original, metrics), evaluate(rewritten, metrics)
    rows = paired_rows(a, b, by=by, seed=seed, resamples=resamples, confidence=confidence)
    ra, rb = a[metrics[0]], b[metrics[0]]
    na, nb = a[metrics[1]], b[metrics[1]]
    with np.errstate(invalid="ignore"):
        worse = np.flatnonzero(rb < ra)
        fixed = int(np.sum(rb > ra))
    t = texts or {}
    broken = [BrokenQuery(a.query_ids[i], float(ra[i]), float(rb[i]), float(na[i]), float(nb[i]),
                          t.get("original", {}).get(a.query_ids[i]), t.get("rewritten", {}).get(a.query_ids[i]))
              for i in worse.tolist()]
    broken.sort(key=lambda q: (q.recall_rewritten - q.recall_original, q.query_id))
    return RewriteEffect(k, a, b, rows, tuple(broken), fixed, labels, dict(t))
