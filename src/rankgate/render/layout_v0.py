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
* ``privacy_leak``: 1 when the query leaked, 0 when not: the run's per-query ``privacy_leak`` field
  (true/false), or, for a query whose gold entry lists ``must_not_retrieve``, one of those ids in
  its top k (``forbidden``: the query's own k, else ``--k``); either one makes it a leak.

A column the inputs do not provide is left empty and named in the summary's ``not_in_run`` with the
reason. summary.json has the metrics spec's keys with plain numbers (null when the inputs cannot
give one), and the details beside them::

    {"version": "v0",
     "quality":     {"p@5": 0.62, "ndcg@10": 0.71, "mrr@10": 0.66},
     "operational": {"p50_ms": 41.0, "p95_ms": 120.5, "error_rate": 0.004},
     "privacy":     {"leak_rate": 0.0},
     "quality_detail":     {"p@5": {"mean", "ci_low", "ci_high", "n", "metric"}, …, "p@10", "cov_entities"},
     "operational_detail": {"latency_timings", "latency_definition", "errors", "retries",
                            "queries_with_errors", "queries"},
     "privacy_detail":     {"queries_with_leak", "queries", "sources"},
     "not_in_run": {column: reason},
     ...and the default layout's blocks ("metrics", "queries", "inputs", "options", "definitions" …),
     so the file also serves as a gate's --baseline}

* ``p50_ms``/``p95_ms``: percentiles over every logged timing of every evaluated query.
* ``error_rate``: the share of the queries answered by the run (those missing from it are left out)
  with at least one error; a query without an ``errors`` value counts as none when the run logs
  ``errors`` for some query; null when it logs none.
* ``leak_rate``: the share of the queries answered by the run that leaked (see ``privacy_leak``),
  over those for which a leak can be told: every such query when the run logs ``privacy_leak``,
  else those whose gold entry lists ``must_not_retrieve``; null when neither is given.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from rankgate.model.results import EvaluationResult
from rankgate.render.exports import _float_column, _text_column, summary_dict
from rankgate.render.numbers import fmt_exact

__all__ = ["V0_COLUMNS", "v0_metrics", "v0_metrics_csv", "v0_summary"]

V0_COLUMNS = ("id", "p_at_5", "p_at_10", "ndcg_10", "mrr_10", "cov_entities", "p50_ms", "p95_ms", "errors", "retries",
              "privacy_leak")
QUALITY = {"p_at_5": "precision@5", "p_at_10": "precision@10", "ndcg_10": "ndcg@10", "mrr_10": "mrr@10"}
#: summary.json's keys (the metrics spec's) for the quality columns; the spec's own three come first.
SPEC_KEYS = {"p_at_5": "p@5", "ndcg_10": "ndcg@10", "mrr_10": "mrr@10", "p_at_10": "p@10", "cov_entities": "cov_entities"}
SPEC_QUALITY = ("p@5", "ndcg@10", "mrr@10")
LEAK_METRIC = "forbidden"  # must_not_retrieve in the top k (the query's k, else --k)
LATENCY_DEFINITION = ("per query: latency_ms as logged (a number; an object's 'total', else the sum of its stages); "
                      "several timings per query: their p50/p95; one timing: that timing in both columns")


def v0_metrics(k: int = 5) -> list[str]:
    """The metric specs the layout needs (evaluate them, with any others)."""
    return [*QUALITY.values(), f"coverage_entities@{k}", LEAK_METRIC]


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
    forbidden = result.values.get(LEAK_METRIC)
    if forbidden is not None and not all(math.isnan(x) for x in forbidden.tolist()):
        run_leak = cols["privacy_leak"]
        cols["privacy_leak"] = [max((x for x in (a, b) if not math.isnan(x)), default=math.nan)
                                for a, b in zip(run_leak, forbidden.tolist())]
        missing.pop("privacy_leak", None)
    elif "privacy_leak" in missing:
        missing["privacy_leak"] = "not in the run (no privacy_leak field), and no gold query lists must_not_retrieve"
    return cols, missing, timings


def _plain(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def run_missing(result: EvaluationResult) -> set[str]:
    """The per-query fields the run does not log at all (of errors, retries, privacy_leak)."""
    run_values: Mapping[str, list[Any]] = result.info.get("run_values", {})
    return {name for name in ("errors", "retries", "privacy_leak")
            if not any(_count(v) is not None for v in run_values.get(name, []))}


def v0_metrics_csv(result: EvaluationResult) -> str:
    """The per-query table in the v0 layout (numbers as in the default layout; empty = no value)."""
    cols, _, _ = _columns(result)
    columns = [_text_column(result.query_ids)]
    columns += [_float_column(cols[name]) for name in V0_COLUMNS[1:8]]
    columns += [[fmt_exact(v, whole=True) for v in cols[name]] for name in V0_COLUMNS[8:]]
    lines = [",".join(V0_COLUMNS)]
    lines.extend(map(",".join, zip(*columns)))
    return "\n".join(lines) + "\n"


def v0_summary(result: EvaluationResult, *, cis: Mapping[str, tuple[float, float]] | None = None,
               extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """summary.json in the v0 layout (see module docs)."""
    import numpy as np

    base = summary_dict(result, cis=cis, extra=extra)
    cols, missing, timings = _columns(result)
    detail: dict[str, Any] = {}
    for name, spec in [*QUALITY.items(), ("cov_entities", _cov_name(result))]:
        entry = dict(base["metrics"][spec])
        entry["metric"] = spec
        detail[SPEC_KEYS[name]] = entry
    quality = {key: _plain(detail[key].get("mean")) for key in SPEC_QUALITY}
    pooled = [t for ts in timings for t in ts]
    absent = set(result.missing_from_run)
    answered = [i for i, q in enumerate(result.query_ids) if q not in absent]  # queries the run answered
    op_detail: dict[str, Any] = {"latency_timings": len(pooled), "latency_definition": LATENCY_DEFINITION}
    for name in ("errors", "retries"):
        values = [v for v in cols[name] if not math.isnan(v)]
        total = math.fsum(values)
        op_detail[name] = (int(total) if total.is_integer() else total) if values else None
    logged = "errors" not in missing
    with_errors = sum(1 for i in answered if cols["errors"][i] > 0) if logged else None  # (NaN > 0 is False)
    op_detail["queries_with_errors"] = with_errors
    op_detail["queries"] = len(answered)
    operational: dict[str, Any] = {
        "p50_ms": float(np.percentile(pooled, 50)) if pooled else None,
        "p95_ms": float(np.percentile(pooled, 95)) if pooled else None,
        "error_rate": with_errors / len(answered) if with_errors is not None and answered else None,
    }
    run_logs_leaks = "privacy_leak" not in run_missing(result)
    judged = [i for i in answered if run_logs_leaks or not math.isnan(cols["privacy_leak"][i])]
    leaked = sum(1 for i in judged if cols["privacy_leak"][i] > 0)
    sources = [s for s, on in (("run privacy_leak", run_logs_leaks),
                               ("gold must_not_retrieve in the top k", LEAK_METRIC in result.values
                                and not all(math.isnan(x) for x in result.values[LEAK_METRIC].tolist()))) if on]
    privacy = {"leak_rate": leaked / len(judged) if judged else None}
    privacy_detail = {"queries_with_leak": leaked if judged else None, "queries": len(judged), "sources": sources}
    out: dict[str, Any] = {"version": "v0", "quality": quality, "operational": operational, "privacy": privacy,
                           "quality_detail": detail, "operational_detail": op_detail, "privacy_detail": privacy_detail,
                           "not_in_run": missing}
    for key, value in base.items():  # the default layout's blocks too, so it also serves as a --baseline
        out.setdefault(key, value)
    return out
