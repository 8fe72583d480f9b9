"""What each metric declares about its values (:func:`metric_info`): its family, unit, direction and
bounds. Every module that treats metrics differently asks here, above the parser (:mod:`.spec`)
and the registry (:mod:`.registry`), which do not import it."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

from rankgate.errors import MetricSpecError
from rankgate.metrics.registry import changes, get_metric
from rankgate.metrics.spec import parse_metric

__all__ = ["UNIT_BOUNDS", "MetricInfo", "higher_is_better", "is_share", "metric_family", "metric_info"]

#: Values a metric of each unit can take, unless its definition declares ``bounds`` itself.
UNIT_BOUNDS: dict[str, tuple[float, float]] = {
    "share": (0.0, 1.0),
    "score": (0.0, 1.0),
    "count": (0.0, math.inf),
}


@dataclass(frozen=True)
class MetricInfo:
    """What a metric declares about its values: how to read and gate them.

    ``family`` is the registered name (``ndcg`` for ``ndcg(gain=exp)@10``); ``unit`` is ``share``,
    ``score``, ``count`` or a plug-in's own; ``bounds`` is the closed range of a per-query value
    (``(0, inf)`` for counts, ``(-inf, inf)`` when unknown); ``known`` is False for a name no
    installed metric has (then the defaults of a share are assumed for display only).
    """

    family: str
    unit: str
    higher_is_better: bool
    bounds: tuple[float, float]
    known: bool = True

    @property
    def is_share(self) -> bool:
        """Values in [0, 1] best read as percentages (``0.03`` is 3 pp)."""
        return self.unit == "share"

    @property
    def bounded(self) -> bool:
        """Both ends finite (a value can be perfect: e.g. recall 1.0)."""
        return math.isfinite(self.bounds[0]) and math.isfinite(self.bounds[1])

    @property
    def span(self) -> float:
        """The largest possible change between two values (``inf`` when unbounded)."""
        return self.bounds[1] - self.bounds[0]


@functools.lru_cache(maxsize=2048)
def _info(spec: str, changes: int) -> MetricInfo:
    """The facts of ``spec`` while the registry has seen ``changes`` registrations."""
    try:
        family = parse_metric(spec).name
    except MetricSpecError:  # a metric this install does not know: a family for display purposes
        family = spec.split("(", 1)[0].split("@", 1)[0].strip().lower()
        return MetricInfo(family, "share", True, UNIT_BOUNDS["share"], known=False)
    d = get_metric(family)
    unit = str(getattr(d, "unit", "share"))
    declared = getattr(d, "bounds", None)
    if declared is not None:
        low, high = (float(declared[0]), float(declared[1]))
    else:
        low, high = UNIT_BOUNDS.get(unit, (-math.inf, math.inf))
    return MetricInfo(family, unit, bool(getattr(d, "higher_is_better", True)), (low, high))


def metric_info(spec: Any) -> MetricInfo:
    """The declared facts of a metric spec (a string such as ``"recall@5"`` or a parsed metric).

    Everything that treats metrics differently (gate config bounds, comparisons' direction,
    percentages in reports) asks this, so a plug-in metric's declaration is obeyed everywhere. A row
    name of the raw candidates (``recall@50 (raw)``, :mod:`rankgate.metrics.rankings`) is its metric's.
    """
    from rankgate.metrics.rankings import split_ranked

    return _info(split_ranked(str(spec))[0], changes())


def metric_family(spec: Any) -> str:
    """The registered metric name of a spec (``ndcg(gain=exp)@10`` -> ``ndcg``)."""
    return metric_info(spec).family


def higher_is_better(spec: Any) -> bool:
    """False for rates of something bad (``forbidden@k``, ``redundancy@k``, ``false_evidence``)."""
    return metric_info(spec).higher_is_better


def is_share(spec: Any) -> bool:
    """True when the metric's values are shares in [0, 1] best read as percentages."""
    return metric_info(spec).is_share
