"""Metrics: definitions, specs and the registry. See DESIGN §4 and ``rankgate metrics``."""

from __future__ import annotations

from .registry import MetricDefinition, Param, all_metrics, get_metric, register
from .spec import Metric, parse_metric, parse_metrics

__all__ = [
    "Metric",
    "MetricDefinition",
    "Param",
    "all_metrics",
    "get_metric",
    "parse_metric",
    "parse_metrics",
    "register",
]
