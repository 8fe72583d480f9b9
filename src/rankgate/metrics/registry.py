"""The metric registry: every metric is a :class:`MetricDefinition` registered by name.

A user adds a metric by subclassing :class:`MetricDefinition` (or writing any object with the same
attributes) and either calling :func:`register` or declaring an entry point in the group
``rankgate.metrics`` that points at the definition (an instance or a class)::

    [project.entry-points."rankgate.metrics"]
    my_metric = "mypackage.metrics:MyMetric"
"""

from __future__ import annotations

import difflib
import math
from typing import TYPE_CHECKING, ClassVar

from rankgate._util.constraints import Param
from rankgate.errors import MetricSpecError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from rankgate.metrics.context import EvalContext, QueryView
    from rankgate.metrics.spec import Metric

__all__ = [
    "MetricDefinition",
    "Param",
    "all_metrics",
    "changes",
    "get_metric",
    "register",
    "resolve_name",
    "suggest",
]


class MetricDefinition:
    """Base class of metric definitions: a declaration plus a kernel and a reference.

    Class attributes declare the metric; :meth:`compute` is the fast vectorised kernel over all
    queries; :meth:`reference` is the formula in plain Python for one query, used by tests to check
    the kernel.

    ``cutoff``: ``"never"`` (no ``@k``), ``"optional"`` (bare name means the whole ranking) or
    ``"query_k"`` (bare name means each query's ``k`` from the gold set, else the command's k).
    ``applies``: ``"answerable"`` (NaN on queries with no relevant item, 0 in trec mode),
    ``"no_answer"`` (only no-answer queries) or ``"all"``.
    ``higher_is_better`` is False for rates of something bad (forbidden, redundancy); ``unit`` is
    ``"share"`` for values in [0, 1] (shown as percentages), ``"score"`` (in [0, 1], shown as a
    number) or ``"count"`` (0 or more); any other unit is unbounded. ``bounds`` (low, high), when
    declared, overrides what the unit implies, e.g. ``bounds = (-1.0, 1.0)`` for a correlation.
    Gates and summaries ask :func:`metric_info` rather than these attributes.
    """

    name: ClassVar[str]
    aliases: ClassVar[tuple[str, ...]] = ()
    params: ClassVar[dict[str, Param]] = {}
    cutoff: ClassVar[str] = "query_k"
    applies: ClassVar[str] = "answerable"
    needs: ClassVar[frozenset[str]] = frozenset()
    summary: ClassVar[str] = ""
    formula: ClassVar[str] = ""
    trec_name: ClassVar[str | None] = None
    higher_is_better: ClassVar[bool] = True
    unit: ClassVar[str] = "share"
    bounds: ClassVar[tuple[float, float] | None] = None

    def compute(self, ctx: EvalContext, metric: Metric, k: np.ndarray) -> np.ndarray:
        """Per-query values (float64, NaN = not applicable) for all queries in ``ctx``."""
        raise NotImplementedError

    def reference(self, q: QueryView, metric: Metric, k: int | None) -> float:
        """The formula, spelled out for one query (slow; for tests and readers)."""
        raise NotImplementedError

    def describe(self, metric: Metric) -> str:
        """The exact definition used for ``metric``, for summary.json and reports."""
        text = f"{self.summary} {self.formula}".strip()
        params = ", ".join(f"{p}={metric.param(p)}" for p in sorted(self.params))
        if params:
            text += f" [{params}]"
        if metric.k is None and self.cutoff == "query_k":
            text += " [k: per-query k from the gold set, else the command's k]"
        elif metric.k is None and self.cutoff == "optional":
            text += " [no cutoff: the whole ranking]"
        return text


_REGISTRY: dict[str, MetricDefinition] = {}
_ALIASES: dict[str, str] = {}
_entry_points_loaded = False
_changes = 0  # registrations so far: what :mod:`.info` caches is valid for one count


def changes() -> int:
    """How many metrics have been registered so far (facts cached for an older count are stale)."""
    return _changes


def register(definition: MetricDefinition | type[MetricDefinition]) -> MetricDefinition:
    """Register a metric definition (an instance or a class); returns the instance."""
    if isinstance(definition, type):
        definition = definition()
    name = getattr(definition, "name", None)
    if not isinstance(name, str) or not name.isidentifier():
        raise MetricSpecError(f"metric definition {definition!r} needs a 'name' that is an identifier")
    for attr in ("compute", "cutoff", "applies", "params"):
        if not hasattr(definition, attr):
            raise MetricSpecError(f"metric definition {name!r} lacks '{attr}'; subclass rankgate.metrics.MetricDefinition")
    if definition.cutoff not in ("never", "optional", "query_k"):
        raise MetricSpecError(f"metric {name!r}: cutoff must be never|optional|query_k; got {definition.cutoff!r}")
    if definition.applies not in ("answerable", "no_answer", "all"):
        raise MetricSpecError(f"metric {name!r}: applies must be answerable|no_answer|all; got {definition.applies!r}")
    bounds = getattr(definition, "bounds", None)
    if bounds is not None and not (
        isinstance(bounds, tuple) and len(bounds) == 2
        and all(isinstance(b, (int, float)) and not isinstance(b, bool) and not math.isnan(b) for b in bounds)
        and bounds[0] < bounds[1]
    ):
        raise MetricSpecError(f"metric {name!r}: bounds must be a (low, high) pair of numbers with low < high; "
                              f"got {bounds!r}")
    key = name.lower()
    if key in _ALIASES and _ALIASES[key] != name:
        raise MetricSpecError(f"metric name {name!r} is already taken by {_ALIASES[key]!r}")
    global _changes
    _REGISTRY[name] = definition
    _ALIASES[key] = name
    _changes += 1
    for alias in definition.aliases:
        _ALIASES.setdefault(alias.lower(), name)
    return definition


_builtin_loaded = False


def _load_builtin() -> None:
    # (a flag, not a look-up of one name: importing one metrics module registers only its own metrics)
    global _builtin_loaded
    if not _builtin_loaded:
        _builtin_loaded = True
        from rankgate.metrics import answers as answer, compat, incomplete, rag, ranking, user_models  # noqa: F401  (registers on import)
        from rankgate.metrics import contract  # noqa: F401  (the sample contract's names for some of the above)
        from rankgate.metrics import abstention  # noqa: F401  (the answers' refusals: correct/false abstention …)


def _load_entry_points() -> None:
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    from rankgate._util.plugins import entry_point_objects

    for obj in entry_point_objects("rankgate.metrics", "metric").values():
        register(obj)


def resolve_name(name: str) -> str | None:
    """The registered name for ``name`` or one of its aliases (case-insensitive), else None."""
    _load_builtin()
    found = _ALIASES.get(name.lower())
    if found is None:
        _load_entry_points()
        found = _ALIASES.get(name.lower())
    return found


def get_metric(name: str) -> MetricDefinition:
    resolved = resolve_name(name)
    if resolved is None:
        raise MetricSpecError(f"unknown metric {name!r}")
    return _REGISTRY[resolved]


def all_metrics() -> list[MetricDefinition]:
    _load_builtin()
    _load_entry_points()
    return [_REGISTRY[n] for n in sorted(_REGISTRY)]


def suggest(name: str) -> str | None:
    _load_builtin()
    close = difflib.get_close_matches(name.lower(), list(_ALIASES), n=1, cutoff=0.6)
    return _ALIASES[close[0]] if close else None

