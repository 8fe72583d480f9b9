"""The baseline a gate compares with, when it is a summary rather than a run.

A summary is the ``summary.json`` of ``rankgate evaluate --out`` or the ``--json`` outcome of
``rankgate gate``: means (and intervals) per metric, and optionally per segment::

    {"metrics": {"recall@5": {"mean": 0.87, "n": 412, "ci_low": 0.84, "ci_high": 0.90}},
     "segments": {"tags.lang": {"de": {"recall@5": {"mean": 0.81, "n": 60, ...}}}}}

Segment fields may be named as the gold set has them (``tags.lang``) or as given to ``--by``
(``lang``). Without per-query values there is no paired test: a gate compares means only.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import InputError, RankgateError
from .segments import display_field

__all__ = ["BaselineSummary", "Stat", "is_summary_file", "load_baseline_summary"]

NAN = math.nan


@dataclass(frozen=True)
class Stat:
    mean: float
    n: int
    ci_low: float = NAN
    ci_high: float = NAN


@dataclass(frozen=True)
class BaselineSummary:
    """Means (and intervals) of a previous evaluation, read from its ``summary.json``.

    ``metrics``: canonical metric -> :class:`Stat`; ``segments``: field -> label -> metric -> Stat.
    """

    metrics: Mapping[str, Stat]
    segments: Mapping[str, Mapping[str, Mapping[str, Stat]]] = field(default_factory=dict)
    source: str = "<baseline summary>"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "<baseline summary>") -> BaselineSummary:
        if not isinstance(data, Mapping) or not isinstance(data.get("metrics"), Mapping):
            raise InputError("has no 'metrics' object; expected a summary.json from rankgate evaluate or gate --json",
                             path=source, field="metrics")
        if not data["metrics"]:
            raise InputError("is empty: a baseline summary has the mean of at least one metric", path=source,
                             field="metrics", hint="write it with rankgate evaluate --out or gate --json")

        def stat(metric: str, entry: Any, where: str) -> Stat:
            if not isinstance(entry, Mapping) or "mean" not in entry:
                raise InputError("must be an object with 'mean' and 'n'", path=source, field=where)
            low, high = _bounds(metric)
            vals = []
            for key in ("mean", "ci_low", "ci_high"):
                v = entry.get(key)
                if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                    raise InputError(f"must be a number or null; got {_short(v)}", path=source, field=f"{where}.{key}")
                x = NAN if v is None else float(v)
                if v is not None and not (math.isfinite(x) and low <= x <= high):
                    expected = "a finite number" if math.isinf(high) and math.isinf(low) else \
                        f"a number between {low:g} and {high:g}" if math.isfinite(high) else f"a number >= {low:g}"
                    raise InputError(f"must be {expected} (or null) for {metric}; got {_short(v)}", path=source,
                                     field=f"{where}.{key}", hint="was the file edited by hand? write it with "
                                     "rankgate evaluate --out or gate --json")
                vals.append(x)
            n = entry.get("n", 0)
            if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                raise InputError(f"must be a non-negative integer; got {_short(n)}", path=source, field=f"{where}.n")
            if vals[1] > vals[2]:
                raise InputError(f"is above ci_high ({vals[2]!r}); got {vals[1]!r}", path=source, field=f"{where}.ci_low")
            return Stat(vals[0], n, vals[1], vals[2])

        metrics = {_canonical(m): stat(_canonical(m), e, f"metrics.{m}") for m, e in data["metrics"].items()}
        segments: dict[str, dict[str, dict[str, Stat]]] = {}
        raw = data.get("segments") or {}
        if not isinstance(raw, Mapping):
            raise InputError("must be an object: field -> label -> metric", path=source, field="segments")
        for f, labels in raw.items():
            if not isinstance(labels, Mapping):
                raise InputError("must be an object: label -> metric", path=source, field=f"segments.{f}")
            for label, ms in labels.items():
                if ms is not None and not isinstance(ms, Mapping):
                    raise InputError("must be an object: metric -> mean and n", path=source,
                                     field=f"segments.{f}.{label}")
            segments[f] = {
                str(label): {_canonical(m): stat(_canonical(m), e, f"segments.{f}.{label}.{m}")
                             for m, e in (ms or {}).items()}
                for label, ms in labels.items()
            }
        return cls(metrics, segments, source)

    def lookup(self, metric: str, field_name: str | None = None, label: str | None = None) -> Stat | None:
        if field_name is None:
            return self.metrics.get(metric)
        for key in (field_name, display_field(field_name)):
            if key in self.segments:
                return self.segments[key].get(label or "", {}).get(metric)
        return None


def _bounds(metric: str) -> tuple[float, float]:
    """The range a known metric's mean lies in; any finite number for a metric this install lacks."""
    from .metrics import metric_info

    info = metric_info(metric)
    return info.bounds if info.known else (-math.inf, math.inf)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def _canonical(metric: str) -> str:
    try:
        from .metrics import parse_metric

        return str(parse_metric(metric))
    except RankgateError:  # a metric this install does not know: keep its name as written
        return metric


def load_baseline_summary(path: str) -> BaselineSummary:
    """Read a ``summary.json`` (from ``rankgate evaluate --out`` or ``rankgate gate --json``)."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        raise InputError("does not exist", path=path) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"is not valid JSON: {exc.msg}", path=path, line=exc.lineno) from None
    except UnicodeDecodeError:
        raise InputError("is not UTF-8 text", path=path, hint="a summary.json is written as UTF-8") from None
    except (RecursionError, ValueError) as exc:  # nesting too deep; an integer with too many digits
        raise InputError(f"cannot be read as a summary: {type(exc).__name__}", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot be read: {exc.strerror or exc}", path=path) from None
    return BaselineSummary.from_dict(data, path)


def is_summary_file(path: str) -> bool:
    """A JSON object with 'metrics' and no query id (a summary), rather than a run file."""
    if not os.path.isfile(path) or os.path.getsize(path) > 64 * 1024 * 1024:
        return False
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (ValueError, UnicodeDecodeError):
        return False
    # Any object with a 'metrics' key and no query id is meant as a summary, so a malformed one is
    # explained as a summary ("'metrics' must be an object"), not as a run missing its query_id.
    from .data.jsonl import QUERY_ID_KEYS

    return isinstance(data, dict) and "metrics" in data and not any(k in data for k in QUERY_ID_KEYS)
