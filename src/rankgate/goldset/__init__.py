"""Keeping a gold set alive against a moving corpus: validate it, find labels the corpus has left
behind, compare two versions of it, and carry its labels across a re-chunking. Every function is
pure and returns a result object; the renderers are in :mod:`rankgate.report.gold`, the commands in
:mod:`rankgate.commands.gold`."""

from __future__ import annotations

from .diff import GoldDiff, Relabel, diff_gold
from .power import min_detectable_drop
from .records import GoldFile, GoldQuery, Label, Problem, read_gold_file
from .remap import LabelRemap, Mapping, Remap, propose, remap_gold
from .stale import REASONS, StaleLabel, StaleReport, stale_labels
from .validate import Finding, LabelAge, SegmentPower, ValidationReport, validate_gold

__all__ = [
    "REASONS", "Finding", "GoldDiff", "GoldFile", "GoldQuery", "Label", "LabelAge", "LabelRemap", "Mapping",
    "Problem", "Relabel", "Remap",
    "SegmentPower", "StaleLabel", "StaleReport", "ValidationReport", "diff_gold", "min_detectable_drop",
    "propose", "read_gold_file", "remap_gold", "stale_labels", "validate_gold",
]
