"""Keeping a gold set alive against a moving corpus: validate it, find labels the corpus has left
behind, compare two versions of it, and carry its labels across a re-chunking. Every function is
pure and returns a result object; the renderers are in :mod:`rankgate.render.gold`, the commands in
:mod:`rankgate.cli.gold`."""

from __future__ import annotations

from rankgate.goldset.diff import GoldDiff, Relabel, diff_gold
from rankgate.stats.power import min_detectable_drop
from rankgate.goldset.records import GoldFile, GoldQuery, Label, Problem, read_gold_file
from rankgate.goldset.remap import LabelRemap, Mapping, Remap, propose, remap_gold
from rankgate.goldset.stale import REASONS, StaleLabel, StaleReport, stale_labels
from rankgate.goldset.validate import Finding, LabelAge, SegmentPower, ValidationReport, validate_gold

__all__ = [
    "REASONS", "Finding", "GoldDiff", "GoldFile", "GoldQuery", "Label", "LabelAge", "LabelRemap", "Mapping",
    "Problem", "Relabel", "Remap",
    "SegmentPower", "StaleLabel", "StaleReport", "ValidationReport", "diff_gold", "min_detectable_drop",
    "propose", "read_gold_file", "remap_gold", "stale_labels", "validate_gold",
]
