"""metrics.csv (one row per query) and summary.json (means, CIs, counts, definitions, inputs).

Numbers are written in Python's shortest round-trip form; NaN (metric not applicable to a query) is
an empty CSV cell and ``null`` in JSON. Same result ⇒ byte-identical files.
"""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any, Mapping

from ..results import EvaluationResult


def _num(x: float) -> str:
    return "" if math.isnan(x) else repr(float(x))


def metrics_csv(result: EvaluationResult) -> str:
    """One row per evaluated query: query_id, every metric, segment fields, latency columns."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    fields = list(result.fields)
    latency: Mapping[str, list[float | None]] = result.info.get("latency_ms", {})
    header = ["query_id", *result.metric_names, *fields, *(f"latency_ms.{s}" for s in latency)]
    writer.writerow(header)
    cols = [result.values[m].tolist() for m in result.metric_names]
    seg_cols = [result.fields[f] for f in fields]
    lat_cols = list(latency.values())
    for i, q in enumerate(result.query_ids):
        row: list[Any] = [q]
        row.extend(_num(c[i]) for c in cols)
        row.extend("" if c[i] is None else c[i] for c in seg_cols)
        row.extend("" if c[i] is None else repr(c[i]) for c in lat_cols)
        writer.writerow(row)
    return buf.getvalue()


def summary_dict(
    result: EvaluationResult,
    *,
    cis: Mapping[str, tuple[float, float]] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    from .. import __version__

    data = result.to_dict()
    if cis:
        for name, (low, high) in cis.items():
            entry = data["metrics"].get(name)
            if entry is not None:
                entry["ci_low"] = None if math.isnan(low) else low
                entry["ci_high"] = None if math.isnan(high) else high
    data["options"] = {
        k: result.info[k] for k in ("level", "trec", "complete", "default_k", "duplicates_dropped") if k in result.info
    }
    data["systems"] = {"run": result.info.get("run", {}), "gold": result.info.get("gold", {})}
    if extra:
        data.update(extra)
    data["rankgate_version"] = __version__
    return data


def summary_json(data: Mapping[str, Any]) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
