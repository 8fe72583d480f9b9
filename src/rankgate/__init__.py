"""rankgate: evaluate the retrieval half of RAG systems against a gold set, and gate releases on it.

Public API (docs/python.md)::

    rankgate.evaluate(gold, run, metrics=["recall@5", "mrr", "ndcg@10"], by=["intent"], confidence=0.95)
        -> EvaluatedRun: an EvaluationResult with .means, .intervals, .segments, .to_pandas(), .to_arrow()
    rankgate.compare(gold, baseline, candidate, metrics=[...], by=[...]) -> ComparedRuns (.rows, .to_pandas())
    rankgate.report(gold, run, baseline=..., out="report.html") -> Report (the HTML report, written to out)
    rankgate.gate(config, gold, candidate, baseline) -> GateOutcome
    rankgate.load_gold(path), rankgate.load_run(path)
    rankgate.parse_metric("ndcg(gain=exp)@10")

Heavy libraries (numpy, pyarrow) load on first use, so ``import rankgate`` stays fast; pandas is never
needed (``to_pandas()`` imports it when called).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rankgate._util import moved as _moved

_moved.install()  # rankgate 0.1's module paths, for one release

__version__ = "0.1.0"

__all__ = [
    "EvaluationResult",
    "Metric",
    "MetricDefinition",
    "__version__",
    "compare",
    "evaluate",
    "gate",
    "load_gold",
    "load_run",
    "parse_metric",
    "register_metric",
    "report",
]

_LAZY = {
    "evaluate": ("rankgate.flows.api", "evaluate"),
    "compare": ("rankgate.flows.api", "compare"),
    "report": ("rankgate.render.api", "report"),
    "gate": ("rankgate.flows.gate", "gate"),
    "EvaluationResult": ("rankgate.model.results", "EvaluationResult"),
    "load_gold": ("rankgate.io", "load_gold"),
    "load_run": ("rankgate.io", "load_run"),
    "Metric": ("rankgate.metrics.spec", "Metric"),
    "MetricDefinition": ("rankgate.metrics.registry", "MetricDefinition"),
    "parse_metric": ("rankgate.metrics.spec", "parse_metric"),
    "register_metric": ("rankgate.metrics.registry", "register"),
}

if TYPE_CHECKING:  # pragma: no cover
    from rankgate.io import load_gold, load_run
    from rankgate.flows.api import compare, evaluate
    from rankgate.flows.gate import gate
    from rankgate.render.api import report
    from rankgate.metrics.registry import MetricDefinition
    from rankgate.metrics.registry import register as register_metric
    from rankgate.metrics.spec import Metric, parse_metric
    from rankgate.model.results import EvaluationResult


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'rankgate' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(target[0]), target[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
