"""How far annotators agree, on the items two or more of them labelled (``rankgate label agreement``).

For every pair of annotators with items in common: their share of equal labels and Cohen's κ, weighted on a graded
scale of three or more grades (linear weights by default, quadratic as an option: a 2-vs-1 disagreement counts half
on 0–2) and unweighted on ``binary`` and on verdicts; over everyone, Fleiss' κ on the items two or more labelled. Each
κ has a percentile-bootstrap interval over items (:mod:`rankgate.stats.agreement`, the judge calibration's own
functions). The items they disagree on are listed, the widest disagreement first. With a judge's labels
(``{query_id, id, grade}``, as ``rankgate judge relevance`` writes them), each annotator is measured against the
judge the same way. Answers are measured twice, on ``faithful`` and on ``correct``; "no statement" / "no reference"
(null) is a category of its own.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rankgate.labels.scales import Scale
from rankgate.labels.store import LabelRow

__all__ = ["Agreement", "Facet", "PairAgreement", "measure"]


@dataclass(frozen=True)
class PairAgreement:
    first: str
    second: str                 # an annotator, or "judge"
    n: int
    agreement: float            # share of equal labels
    kappa: float
    kappa_ci: tuple[float, float]

    def to_dict(self) -> dict[str, Any]:
        return {"first": self.first, "second": self.second, "n": self.n, "agreement": _num(self.agreement),
                "kappa": _num(self.kappa), "kappa_ci": [_num(self.kappa_ci[0]), _num(self.kappa_ci[1])]}


@dataclass(frozen=True)
class Facet:
    """Agreement on one thing labelled: the grade, or one verdict."""

    name: str                               # grade, faithful, correct
    categories: int
    weights: str | None
    pairs: tuple[PairAgreement, ...]
    fleiss: float
    fleiss_ci: tuple[float, float]
    fleiss_items: int                       # items two or more annotators labelled
    disagreements: tuple[dict[str, Any], ...]
    judge: tuple[PairAgreement, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "categories": self.categories, "weights": self.weights,
                "pairs": [p.to_dict() for p in self.pairs], "fleiss_kappa": _num(self.fleiss),
                "fleiss_kappa_ci": [_num(self.fleiss_ci[0]), _num(self.fleiss_ci[1])], "fleiss_items": self.fleiss_items,
                "disagreements": list(self.disagreements), "judge": [p.to_dict() for p in self.judge]}


@dataclass(frozen=True)
class Agreement:
    scale: str
    annotators: tuple[str, ...]
    labels: int
    facets: tuple[Facet, ...]
    confidence: float
    resamples: int
    seed: int

    def to_dict(self) -> dict[str, Any]:
        return {"scale": self.scale, "annotators": list(self.annotators), "labels": self.labels,
                "facets": [f.to_dict() for f in self.facets], "confidence": self.confidence,
                "kappa_ci_method": f"percentile bootstrap over items, {self.resamples} resamples, seed {self.seed}"}


def _num(x: float) -> float | None:
    return None if math.isnan(x) else round(x, 6)


def _code(value: bool | int | None) -> int:
    """A verdict as a category: 0 no, 1 yes, 2 null (no statement / no reference)."""
    return 2 if value is None else int(value)


def measure(rows: Iterable[LabelRow], scale: Scale, *, judge: Mapping[tuple[str, str], int] | None = None,
            weights: str | None = "linear", confidence: float = 0.95, resamples: int = 2000, seed: int = 0,
            listed: int = 20) -> Agreement:
    """The agreement of the labels in force ``rows`` (module docs); ``listed``: how many disagreements to list."""
    from rankgate.errors import UsageError

    rows = list(rows)
    if judge is not None and scale.kind != "grade":
        raise UsageError("judge labels are grades of retrieved items; this database holds verdicts on answers")
    facets = ("grade",) if scale.kind == "grade" else ("faithful", "correct")
    out = []
    for facet in facets:
        ratings: dict[tuple[str, str], dict[str, int]] = {}
        for r in rows:
            value = r.grade if facet == "grade" else _code(r.faithful if facet == "faithful" else r.correct)
            if value is None:
                continue
            ratings.setdefault((r.item.query_id, r.item.item_id), {})[r.annotator] = int(value)
        k = scale.top + 1 if scale.kind == "grade" else 3
        w = weights if scale.kind == "grade" and k > 2 else None
        out.append(_facet(facet, ratings, k, w, judge if facet == "grade" else None, confidence, resamples, seed,
                          listed))
    return Agreement(scale.name, tuple(sorted({r.annotator for r in rows})), len(rows), tuple(out), confidence,
                     resamples, seed)


def _pair(a: str, b: str, x: Sequence[int], y: Sequence[int], k: int, weights: str | None, confidence: float,
          resamples: int, seed: int) -> PairAgreement:
    from rankgate.stats.agreement import cohen_kappa, kappa_ci

    same = sum(1 for u, v in zip(x, y) if u == v)
    return PairAgreement(a, b, len(x), same / len(x) if x else math.nan,
                         cohen_kappa(x, y, weights=weights, categories=k),
                         kappa_ci(x, y, weights=weights, categories=k, confidence=confidence, resamples=resamples,
                                  seed=seed))


def _facet(name: str, ratings: Mapping[tuple[str, str], Mapping[str, int]], k: int, weights: str | None,
           judge: Mapping[tuple[str, str], int] | None, confidence: float, resamples: int, seed: int,
           listed: int) -> Facet:
    import numpy as np

    from rankgate.stats.agreement import fleiss_ci, fleiss_kappa

    people = sorted({a for r in ratings.values() for a in r})
    pairs = []
    for a, b in itertools.combinations(people, 2):
        both = [key for key, r in ratings.items() if a in r and b in r]
        if both:
            pairs.append(_pair(a, b, [ratings[key][a] for key in both], [ratings[key][b] for key in both], k, weights,
                               confidence, resamples, seed))
    shared = [key for key, r in ratings.items() if len(r) >= 2]
    counts = np.zeros((len(shared), k), dtype=np.int64)
    for i, key in enumerate(shared):
        for v in ratings[key].values():
            counts[i, v] += 1
    fleiss = fleiss_kappa(counts) if shared else math.nan
    ci = fleiss_ci(counts, confidence=confidence, resamples=resamples, seed=seed) if shared else (math.nan, math.nan)
    apart = sorted((key for key in shared if len(set(ratings[key].values())) > 1),
                   key=lambda key: (-(max(ratings[key].values()) - min(ratings[key].values())), key))
    disagreements = tuple({"query_id": q, "id": d, "labels": dict(sorted(ratings[(q, d)].items()))}
                          for q, d in apart[:listed])
    versus = []
    if judge is not None:
        for a in people:
            keys = [key for key, r in ratings.items() if a in r and key in judge]
            if keys:
                versus.append(_pair(a, "judge", [ratings[key][a] for key in keys], [judge[key] for key in keys],
                                    max(k, 3), weights, confidence, resamples, seed))
    return Facet(name, k, weights, tuple(pairs), fleiss, ci, len(shared), disagreements, tuple(versus))
