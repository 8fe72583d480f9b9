"""k-sweep: how a metric grows with the cutoff k (``recall@1, @3, @5, @10, @20``), and its area.

:func:`k_sweep` evaluates the run once with every ``metric@k`` spec, so the whole curve comes from
one pass over the data. :func:`sweep_from_result` builds the same curves from a result that already
holds those specs (to add a sweep to an evaluation without a second pass).

Area under the curve (``auc``): the trapezoidal area under ``(k, mean)`` between the smallest and
the largest k, divided by ``k_max − k_min``; that is the curve's average height over that range of
k, in the metric's own units (1.0 = perfect at every k). The measured points are joined by straight
lines, so the spacing of the ks matters: with ks 1,3,5,10,20 the stretch from 10 to 20 carries
10/19 of the weight. Compare areas only between sweeps over the same ks. With a single k the area is
that k's mean.

Knee (:func:`knee`): Kneedle over k ≤ 20, the k where the curve, scaled to the unit square, lies furthest
above the straight line from its first to its last point; past it a larger k buys little. With segment
fields (``by``), :func:`segment_knees` gives each segment value its own curve and knee: the mean at each k
over the segment's queries where the metric applies (the same values as the overall curve, grouped), so
two segments whose relevant chunks sit at different depths show different knees.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rankgate._util.jsonable import nan_to_none
from rankgate.errors import MetricSpecError, UsageError
from rankgate.model.results import EvaluationResult
from rankgate.stats.options import Statistics, taken

__all__ = ["KNEE_K_MAX", "KSweep", "SegmentKnee", "SweepCurve", "auc", "k_sweep", "knee", "parse_ks", "run_depth",
           "segment_knees", "sweep_from_result", "sweep_specs", "within_depth"]

DEFAULT_KS = (1, 3, 5, 10, 20)
KNEE_K_MAX = 20
"""The knee is looked for over k up to this: past 20 chunks a generator's context is rarely the question."""


def parse_ks(ks: str | Iterable[int]) -> tuple[int, ...]:
    """``"1,3,5"`` or ``[1, 3, 5]`` -> sorted distinct positive cutoffs."""
    from rankgate.metrics.spec import MAX_K

    items = str(ks).split(",") if isinstance(ks, str) else list(ks)
    out: set[int] = set()
    for item in items:
        text = str(item).strip()
        if not text:
            continue
        try:
            k = int(text)
        except ValueError:
            k = 0
        if k < 1 or isinstance(item, bool) or (isinstance(item, float) and not float(item).is_integer()):
            raise UsageError(f"cutoffs must be positive integers, e.g. 1,3,5,10,20; got {item!r}")
        if k > MAX_K:
            raise UsageError(f"cutoffs must be at most {MAX_K:,}; got {item!r}")
        out.add(k)
    if not out:
        raise UsageError("no cutoffs given; expected e.g. 1,3,5,10,20")
    return tuple(sorted(out))


def _families(metrics: str | Sequence[str]):
    from rankgate.metrics import parse_metrics

    parsed = parse_metrics(metrics if isinstance(metrics, str) else list(metrics))
    for m in parsed:
        if m.k is not None:
            raise MetricSpecError(f"sweep metrics are written without @k (the sweep adds it); got {str(m)!r}")
        if m.definition.cutoff == "never":
            raise MetricSpecError(f"metric {m.name!r} takes no cutoff, so it cannot be swept over k")
    return parsed


def sweep_specs(metrics: str | Sequence[str], ks: str | Iterable[int]) -> list[str]:
    """Every ``metric@k`` spec of the sweep, canonical, metric by metric."""
    return [str(dataclasses.replace(m, k=k)) for m in _families(metrics) for k in parse_ks(ks)]


def auc(ks: Sequence[int], values: Sequence[float]) -> float:
    """Normalised trapezoidal area (see the module docs); NaN if any value is NaN."""
    x = np.asarray(ks, dtype=np.float64)
    y = np.asarray(values, dtype=np.float64)
    if x.size == 0 or np.isnan(y).any():
        return math.nan
    if x.size == 1:
        return float(y[0])
    area = math.fsum(((x[1:] - x[:-1]) * (y[1:] + y[:-1]) / 2.0).tolist())
    return area / float(x[-1] - x[0])


def knee(ks: Sequence[int], means: Sequence[float], k_max: int = KNEE_K_MAX) -> int | None:
    """Kneedle over k ≤ ``k_max``: the k where the curve, scaled to the unit square, lies furthest
    above the straight line from its first to its last point; None for a flat or non-rising curve, or one
    of fewer than 3 points."""
    pts = [(k, m) for k, m in zip(ks, means) if k <= k_max and not math.isnan(m)]
    if len(pts) < 3:
        return None
    x0, y0 = pts[0]
    x1, y1 = pts[-1]
    if y1 - y0 <= 1e-12:
        return None
    best, best_k = 0.0, None
    for k, m in pts:
        d = (m - y0) / (y1 - y0) - (k - x0) / (x1 - x0)
        if d > best + 1e-12:
            best, best_k = d, k
    return best_k


@dataclass(frozen=True)
class SegmentKnee:
    """One segment value's curve of one metric over the sweep's ks, and its knee (None: flat, or too few ks)."""

    field: str  # the field's key in the result (tags.lang)
    label: str
    metric: str
    n: int  # queries of the segment where the metric applies (at the largest k)
    means: tuple[float, ...]
    knee: int | None


def segment_knees(result: EvaluationResult, curves: Sequence[SweepCurve], ks: Sequence[int],
                  by: str | Iterable[str]) -> tuple[SegmentKnee, ...]:
    """Each value of each field of ``by`` (``lang``, ``intent+lang``): its mean at every k of each curve and
    its knee; fields in ``by`` order, values as :func:`rankgate.stats.segments.ordered_labels` sorts them."""
    from rankgate.stats.segments import label_groups, segment_labels, split_fields

    out: list[SegmentKnee] = []
    for name in split_fields(by):
        key, labels = segment_labels(result, name)
        distinct, codes, _ = label_groups(labels)
        size = len(distinct)
        for c in curves:
            sums, counts = [], []
            for spec in c.specs:
                v = np.asarray(result.values[spec], dtype=np.float64)
                ok = ~np.isnan(v)
                sums.append(np.bincount(codes[ok], weights=v[ok], minlength=size))
                counts.append(np.bincount(codes[ok], minlength=size))
            for i, label in enumerate(distinct):
                means = tuple(float(s[i] / n[i]) if n[i] else math.nan for s, n in zip(sums, counts))
                out.append(SegmentKnee(key, label, c.metric, int(counts[-1][i]) if counts else 0, means, knee(ks, means)))
    return tuple(out)


@dataclass(frozen=True)
class SweepCurve:
    """One metric over the ks: means (NaN where it applies to no query), counts, intervals."""

    metric: str
    specs: tuple[str, ...]
    means: tuple[float, ...]
    n: tuple[int, ...]
    ci_low: tuple[float, ...]
    ci_high: tuple[float, ...]
    auc: float


@dataclass(frozen=True)
class KSweep:
    """Curves of several metrics over the same ks; :meth:`to_dict` for JSON, renderers in :mod:`rankgate.render.tables`."""

    ks: tuple[int, ...]
    curves: tuple[SweepCurve, ...]
    confidence: float = 0.95
    result: EvaluationResult | None = field(default=None, repr=False, compare=False)
    depth: int | None = None  # the run's longest ranking, when known: no k lies past it
    segments: tuple[SegmentKnee, ...] = ()  # each segment value's curve and knee (k_sweep's ``by``)

    def knees(self) -> dict[str, int | None]:
        """Each curve's knee over all queries (:func:`knee`)."""
        return {c.metric: knee(self.ks, c.means) for c in self.curves}

    def to_dict(self) -> dict[str, Any]:
        segments: dict[str, Any] = {}
        for s in self.segments:
            segments.setdefault(s.field, {}).setdefault(s.label, {})[s.metric] = {
                "n": s.n, "means": [nan_to_none(v) for v in s.means], "knee": s.knee}
        return {
            **({"knees": self.knees(), "segments": segments} if self.segments else {}),
            "ks": list(self.ks),
            **({} if self.depth is None else {"run_depth": self.depth}),
            "auc_method": "trapezoidal area under (k, mean) divided by (k_max - k_min)",
            "curves": {
                c.metric: {
                    "means": [nan_to_none(v) for v in c.means],
                    "n": list(c.n),
                    "ci_low": [nan_to_none(v) for v in c.ci_low],
                    "ci_high": [nan_to_none(v) for v in c.ci_high],
                    "auc": nan_to_none(c.auc),
                }
                for c in self.curves
            },
        }


def sweep_from_result(
    result: EvaluationResult,
    metrics: str | Sequence[str],
    ks: str | Iterable[int] = DEFAULT_KS,
    *,
    statistics: Statistics | None = None,
    seed: int = 0,
    resamples: int = 0,
    confidence: float = 0.95,
) -> KSweep:
    """Curves from a result that was evaluated with every ``metric@k`` of :func:`sweep_specs`.

    ``resamples > 0`` adds bootstrap intervals per point (as :func:`rankgate.stats.bootstrap.metric_cis`).
    """
    seed, resamples, confidence = taken(statistics, seed, resamples, confidence, caller="sweep_from_result",
                                         defaults=(0, 0, 0.95))
    from rankgate.stats.bootstrap import metric_cis

    ks_t = parse_ks(ks)
    curves = []
    for family in _families(metrics):
        specs = tuple(str(dataclasses.replace(family, k=k)) for k in ks_t)
        names = tuple(result.resolve_metric(s) for s in specs)
        summaries = [result.summary(s) for s in names]
        cis = metric_cis(result, seed=seed, resamples=resamples, confidence=confidence, metrics=names)
        means = tuple(s.mean for s in summaries)
        curves.append(SweepCurve(
            metric=str(family),
            specs=names,
            means=means,
            n=tuple(s.n for s in summaries),
            ci_low=tuple(cis[s][0] for s in names),
            ci_high=tuple(cis[s][1] for s in names),
            auc=auc(ks_t, means),
        ))
    return KSweep(ks_t, tuple(curves), confidence, result=result)


def k_sweep(
    gold: Any,
    run: Any,
    metrics: str | Sequence[str] = ("recall", "ndcg"),
    ks: str | Iterable[int] = DEFAULT_KS,
    *,
    evaluate_kwargs: Mapping[str, Any] | None = None,
    statistics: Statistics | None = None,
    seed: int = 0,
    resamples: int = 0,
    confidence: float = 0.95,
    by: str | Iterable[str] | None = None,
) -> KSweep:
    """Evaluate ``run`` once with every ``metric@k`` and return the curves.

    Args:
        gold, run: as for :func:`rankgate.evaluate` (paths or loaded objects).
        metrics: metric names without ``@k`` (``"recall,ndcg"``, ``["recall", "ndcg(gain=exp)"]``).
        ks: cutoffs (``"1,3,5,10,20"`` or a list); those past the run's depth (its longest ranking) are
            replaced by the depth itself, so a top-5 run is swept over 1, 3, 5.
        evaluate_kwargs: passed on to :func:`rankgate.evaluate` (``level``, ``doc_sep``, ``trec``…).
        resamples: bootstrap intervals per point when > 0.
        by: segment fields: each value's curve and knee too (:func:`segment_knees`).
    """
    seed, resamples, confidence = taken(statistics, seed, resamples, confidence, caller="k_sweep",
                                         defaults=(0, 0, 0.95))
    from rankgate.io import load_run
    from rankgate.scoring.engine import evaluate

    opts = dict(evaluate_kwargs or {})
    from rankgate.io.trec import trec_eval_lines

    with trec_eval_lines(bool(opts.get("trec"))):  # (trec: a TREC run's lines as trec_eval reads them)
        loaded = load_run(run, format=opts.get("run_format"), columns=opts.get("columns"), fields=opts.get("fields"))
    ks_t = within_depth(parse_ks(ks), run_depth(loaded))
    result = evaluate(gold, loaded, sweep_specs(metrics, ks_t), **dict(evaluate_kwargs or {}))
    sweep = sweep_from_result(result, metrics, ks_t, seed=seed, resamples=resamples, confidence=confidence)
    segments = segment_knees(result, sweep.curves, ks_t, by) if by else ()
    return dataclasses.replace(sweep, depth=run_depth(loaded), segments=segments)


def run_depth(run: Any) -> int:
    """The length of the run's longest ranking (0 for an empty run)."""
    codes = np.asarray(run.r_query)
    return int(np.bincount(codes).max()) if codes.size else 0


def within_depth(ks: Sequence[int], depth: int) -> tuple[int, ...]:
    """The cutoffs up to the run's depth, and the depth itself when some lay past it: past the depth a
    curve only repeats its last value. An empty run (depth 0) keeps the cutoffs asked for."""
    if depth <= 0 or all(k <= depth for k in ks):
        return tuple(ks)
    return tuple(sorted({k for k in ks if k <= depth} | {depth}))
