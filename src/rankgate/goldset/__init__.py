"""Keeping a gold set alive against a moving corpus: validate it, find labels the corpus has left
behind, and compare two versions of it. Every function is pure and returns a result object; the
renderers are in :mod:`rankgate.report.gold`, the commands in :mod:`rankgate.commands.gold`."""

from __future__ import annotations

from .diff import GoldDiff, Relabel, diff_gold
from .power import min_detectable_drop
from .records import GoldFile, GoldQuery, Label, Problem, read_gold_file
from .stale import REASONS, StaleLabel, StaleReport, stale_labels
from .validate import Finding, LabelAge, SegmentPower, ValidationReport, validate_gold

__all__ = [
    "REASONS", "Finding", "GoldDiff", "GoldFile", "GoldQuery", "Label", "LabelAge", "Problem", "Relabel",
    "SegmentPower", "StaleLabel", "StaleReport", "ValidationReport", "diff_gold", "min_detectable_drop",
    "read_gold_file", "stale_labels", "validate_gold",
]
