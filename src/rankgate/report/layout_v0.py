"""``--layout v0``: the metrics spec's file layout (per-query CSV and a grouped summary).

metrics.csv columns, one row per evaluated query::

    id, p_at_5, p_at_10, ndcg_10, mrr_10, cov_entities, p50_ms, p95_ms, errors, retries, privacy_leak

* ``p_at_5``, ``p_at_10``, ``ndcg_10``, ``mrr_10``: precision@5, precision@10, ndcg@10, mrr@10.
* ``cov_entities``: coverage_entities@k, k the evaluation's cutoff (``--k``, default 5); empty for a
  query without ``entities`` in the gold set or without retrieved texts.
* ``p50_ms``, ``p95_ms``: from the run's ``latency_ms``. One timing is a number (the total) or an
  object of stages (its ``total`` if given, else the sum of its stages). A query that logs several
  timings (a list of them, e.g. repeated calls) gets their 50th and 95th percentiles (linear
  interpolation, numpy's default); a query with one timing gets that timing in both columns.
* ``errors``, ``retries``: the run's per-query fields (a number, or a list whose length is counted);
  ``privacy_leak``: the run's per-query field, 1 for true and 0 for false.

A column the inputs do not provide is left empty and named in the summary's ``not_in_run`` with the
reason. summary.json::

    {"version": "v0",
     "quality":     {"p_at_5": {"mean", "ci_low", "ci_high", "n", "metric"}, …, "cov_entities": …},
     "operational": {"p50_ms", "p95_ms", "latency_timings", "latency_definition", "errors", "retries",
                     "queries_with_errors"},
     "privacy":     {"privacy_leak", "privacy_leak_rate", "queries"},
     "not_in_run": {column: reason},
     ...and the default layout's blocks ("metrics", "queries", "inputs", "options", "definitions" …),
     so the file also serves as a gate's --baseline}

The summary's ``p50_ms``/``p95_ms`` are percentiles over every logged timing of every evaluated query.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..results import EvaluationResult
from .exports import _float_column, _text_column, summary_dict

__all__ = ["V0_COLUMNS", "v0_metrics", "v0_metrics_csv", "v0_summary"]

V0_COLUMNS = ("id", "p_at_5", "p_at_10", "ndcg_10", "mrr_10", "cov_entities", "p50_ms", "p95_ms", "errors", "retries",
              "privacy_leak")
QUALITY = {"p_at_5": "precision@5", "p_at_10": "precision@10", "ndcg_10": "ndcg@10", "mrr_10": "mrr@10"}
LATENCY_DEFINITION = ("per query: latency_ms as logged (a number; an object's 'total', else the sum of its stages); "
                      "several timings per query: their p50/p95; one timing: that timing in both columns")


def v0_metrics(k: int = 5) -> list[str]:
    """The metric specs the layout needs (evaluate them, with any others)."""
    return [*QUALITY.values(), f"coverage_entities@{k}"]


def _cov_name(result: EvaluationResult) -> str:
    return next(m for m in result.metric_names if m.startswith("coverage_entities@"))


def _timing(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, Mapping):
        if "total" in value:
            return _timing(value["total"])
        parts = [t for t in map(_timing, value.values()) if t is not None]
        return math.fsum(parts) if parts else None
    return None


def _timings(value: Any) -> list[float]:
    if isinstance(value, list):
        out = [_timing(v) for v in value]
        return [t for t in out if t is not None]
    t = _timing(value)
    return [] if t is None else [t]


def _count(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, list):
        return float(len(value))
    return None


def _count_text(x: float) -> str:
    if math.isnan(x):
        return ""
    return str(int(x)) if x.is_integer() else repr(x)


def _columns(result: EvaluationResult) -> tuple[dict[str, list[float]], dict[str, str], list[list[float]]]:
    import numpy as np

    n = len(result.query_ids)
    nan = [math.nan] * n
    run_values: Mapping[str, list[Any]] = result.info.get("run_values", {})
    cols: dict[str, list[float]] = {name: result.values[spec].tolist() for name, spec in QUALITY.items()}
    cols["cov_entities"] = result.values[_cov_name(result)].tolist()
    missing: dict[str, str] = {}
    if all(math.isnan(x) for x in cols["cov_entities"]):
        missing["cov_entities"] = "no query has both entities (gold set) and retrieved texts (run)"
    timings = [_timings(v) for v in run_values.get("latency_ms", [None] * n)]
    if any(timings):
        cols["p50_ms"] = [float(np.percentile(t, 50)) if t else math.nan for t in timings]
        cols["p95_ms"] = [float(np.percentile(t, 95)) if t else math.nan for t in timings]
    else:
        cols["p50_ms"] = cols["p95_ms"] = nan
        missing["p50_ms"] = missing["p95_ms"] = "not in the run (no latency_ms field)"
    for name in ("errors", "retries", "privacy_leak"):
        values = [_count(v) for v in run_values.get(name, [None] * n)]
        if any(v is not None for v in values):
            cols[name] = [math.nan if v is None else v for v in values]
        else:
            cols[name] = nan
            missing[name] = f"not in the run (no {name} field)"
    return cols, missing, timings


def v0_metrics_csv(result: EvaluationResult) -> str:
    """The per-query table in the v0 layout (numbers as in the default layout; empty = no value)."""
    cols, _, _ = _columns(result)
    columns = [_text_column(result.query_ids)]
    columns += [_float_column(cols[name]) for name in V0_COLUMNS[1:8]]
    columns += [[_count_text(v) for v in cols[name]] for name in V0_COLUMNS[8:]]
    lines = [",".join(V0_COLUMNS)]
    lines.extend(map(",".join, zip(*columns)))
    return "\n".join(lines) + "\n"


def v0_summary(result: EvaluationResult, *, cis: Mapping[str, tuple[float, float]] | None = None,
               extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """summary.json in the v0 layout (see module docs)."""
    import numpy as np

    base = summary_dict(result, cis=cis, extra=extra)
    cols, missing, timings = _columns(result)
    quality: dict[str, Any] = {}
    for name, spec in [*QUALITY.items(), ("cov_entities", _cov_name(result))]:
        entry = dict(base["metrics"][spec])
        entry["metric"] = spec
        quality[name] = entry
    pooled = [t for ts in timings for t in ts]
    operational: dict[str, Any] = {
        "p50_ms": float(np.percentile(pooled, 50)) if pooled else None,
        "p95_ms": float(np.percentile(pooled, 95)) if pooled else None,
        "latency_timings": len(pooled),
        "latency_definition": LATENCY_DEFINITION,
    }
    for name in ("errors", "retries"):
        values = [v for v in cols[name] if not math.isnan(v)]
        total = math.fsum(values)
        operational[name] = (int(total) if total.is_integer() else total) if values else None
    errs = [v for v in cols["errors"] if not math.isnan(v)]
    operational["queries_with_errors"] = sum(1 for v in errs if v > 0) if errs else None
    leaks = [v for v in cols["privacy_leak"] if not math.isnan(v)]
    privacy = {
        "privacy_leak": sum(1 for v in leaks if v > 0) if leaks else None,
        "privacy_leak_rate": (sum(1 for v in leaks if v > 0) / len(leaks)) if leaks else None,
        "queries": len(leaks),
    }
    out: dict[str, Any] = {"version": "v0", "quality": quality, "operational": operational, "privacy": privacy,
                           "not_in_run": missing}
    for key, value in base.items():  # the default layout's blocks too, so it also serves as a --baseline
        out.setdefault(key, value)
    return out
