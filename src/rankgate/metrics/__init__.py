"""Metrics: definitions, specs and the registry. See DESIGN §4 and ``rankgate metrics``."""

from __future__ import annotations

from rankgate.metrics.info import MetricInfo, higher_is_better, is_share, metric_family, metric_info
from rankgate.metrics.registry import MetricDefinition, Param, all_metrics, get_metric, register
from rankgate.metrics.spec import Metric, parse_metric, parse_metrics

__all__ = [
    "Metric",
    "MetricDefinition",
    "MetricInfo",
    "Param",
    "all_metrics",
    "get_metric",
    "higher_is_better",
    "is_share",
    "metric_family",
    "metric_info",
    "parse_metric",
    "parse_metrics",
    "register",
]
