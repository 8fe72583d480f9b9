"""metrics.csv (one row per query) and summary.json (means, CIs, counts, definitions, inputs).

Numbers are written in Python's shortest round-trip form; NaN (metric not applicable to a query) is
an empty CSV cell and ``null`` in JSON. Same result ⇒ byte-identical files.

Spreadsheet safety (OWASP "CSV injection"): a *text* cell (query id, segment field, tag, header) that
starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is written with a leading ``'``, so a
spreadsheet shows it as text instead of running it as a formula. Number columns are never changed,
and neither is a text cell that is a plain number (``-3``, ``+0.5``): a number is not a formula, and
a negative number must stay a number.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from rankgate.model.results import EvaluationResult

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_LINE_STARTS = tuple("\n" + c for c in FORMULA_START)


def _defused(text: str) -> str:
    """``text`` with a leading ``'`` when a spreadsheet would read it as a formula (see module docs)."""
    if text.startswith(FORMULA_START) and not _PLAIN_NUMBER.fullmatch(text):
        return "'" + text
    return text


def _cell(text: str) -> str:
    """CSV quoting (RFC 4180) for one text cell."""
    if any(c in text for c in ',"\n\r'):
        return '"' + text.replace('"', '""') + '"'
    return text


def _float_cells(values: Any) -> Any:
    """A float column as :func:`_float_column` or the compiled ``csv_rows`` takes it: the float64
    values themselves, or ``(texts, positions)`` when few distinct values repeat (most metrics take
    few values: hit@k two, precision@10 eleven), so that each distinct value is formatted once."""
    import numpy as np

    x = np.ascontiguousarray(values, dtype=np.float64)
    # A sample of the first values says whether the column is mostly distinct (nDCG, AP): then
    # the sort that finding the distinct values takes is not worth it. (The sample's distinct values
    # are counted from a sort: numpy's unique without an inverse imports numpy.ma, 10 ms.)
    if x.size < 1000 or _distinct(x[:1000]) > 500 or bool((np.signbit(x) & (x == 0)).any()):
        return x  # (unique would merge -0.0 with 0.0)
    distinct, where = np.unique(x, return_inverse=True)
    if distinct.size * 2 > x.size:
        return x
    return ["" if t == "nan" else t for t in map(repr, distinct.tolist())], where.astype(np.int64, copy=False)


def _distinct(x: Any) -> int:
    """How many distinct values ``x`` holds, NaN counted once (as ``np.unique`` counts them)."""
    import numpy as np

    s = np.sort(x)
    nan = np.isnan(s)
    return int(np.count_nonzero(s[1:] != s[:-1]) - max(int(nan.sum()) - 1, 0)) + 1 if s.size else 0


def _float_column(values: Any) -> list[str]:
    """Shortest round-trip text of each float (``repr``); empty for NaN (metric not applicable)."""
    import numpy as np

    cells = _float_cells(values)
    if isinstance(cells, tuple):
        table, where = cells
        return np.array(table, dtype=object)[where].tolist()
    texts = list(map(repr, cells.tolist()))
    return ["" if t == "nan" else t for t in texts] if bool(np.isnan(cells).any()) else texts


def _latency_cells(col: list[float | None], compiled: bool) -> Any:
    """A latency column: ``repr`` of each value, empty where a query logged none. For the compiled
    writer, float64 with NaN for none (which it writes empty), unless a logged value is itself NaN."""
    if compiled:
        import numpy as np

        values = np.array(col, dtype=np.float64)  # (None becomes NaN)
        if int(np.count_nonzero(np.isnan(values))) == col.count(None):
            return values
    return ["" if v is None else repr(float(v)) for v in col]


def _cost_order(cost: Mapping[str, Any]) -> dict[str, Any]:
    """The run's cost columns (``info["cost"]``: key -> a value per query, None or NaN where not logged) in the
    summary's order: the named keys first (:data:`rankgate.io.cost.COST_KEYS`), then the others as logged."""
    from rankgate.io.cost import COST_KEYS

    return {key: cost[key] for key in [*(k for k in COST_KEYS if k in cost), *(k for k in cost if k not in COST_KEYS)]}


def _cost_cells(col: Any, compiled: bool) -> Any:
    """A ``cost.<key>`` column: ``repr`` of each value as a float, empty where a query logged none (values are
    numbers >= 0, never NaN: :func:`rankgate.io.cost.check_costs`). For the compiled writer, float64 with NaN."""
    import numpy as np

    values = np.asarray(col, dtype=np.float64)  # (None becomes NaN)
    if compiled:
        return values
    return ["" if math.isnan(v) else repr(v) for v in values.tolist()]


def _text_column(values: Any) -> list[str]:
    values = values if isinstance(values, (list, tuple)) else list(values)
    cells = list(map(str, values)) if None not in values else ["" if v is None else str(v) for v in values]
    # One scan of the joined cells finds any that may start like a formula (a newline inside a cell
    # can only add false alarms, which the exact per-cell rule then settles).
    joined = "\n" + "\n".join(cells)
    if any(start in joined for start in _LINE_STARTS):
        cells = [_defused(c) for c in cells]
    joined = "".join(cells)  # one scan: most columns (query ids, languages) need no quoting at all
    if not any(c in joined for c in ',"\n\r'):
        return cells
    return [_cell(v) for v in cells]


def metrics_csv(result: EvaluationResult) -> str:
    """One row per evaluated query: query_id, every metric, segment fields, latency columns, a ``cost.<key>``
    column per key of the run's cost objects; for queries known by a hash of their question (``q:…``), the
    question itself in a ``query`` column."""
    fields = list(result.fields)
    latency: Mapping[str, list[float | None]] = result.info.get("latency_ms", {})
    texts: Mapping[str, str] | None = result.info.get("query_texts")  # ids that are hashes of the question
    header = ["query_id", *(["query"] if texts else []), *result.metric_names, *fields, *(f"latency_ms.{s}" for s in latency)]
    cost = _cost_order(result.info.get("cost") or {})
    header += [f"cost.{key}" for key in cost]
    from rankgate._native import kernels

    columns: list[Any] = [_text_column(result.query_ids)]
    if texts:
        columns.append(_text_column([texts.get(q) for q in result.query_ids]))
    floats = _float_cells if kernels is not None else _float_column
    columns += [floats(result.values[m]) for m in result.metric_names]
    columns += [_text_column(result.fields[f]) for f in fields]
    columns += [_latency_cells(col, kernels is not None) for col in latency.values()]
    columns += [_cost_cells(col, kernels is not None) for col in cost.values()]
    head = ",".join(_cell(_defused(h)) for h in header) + "\n"
    if kernels is not None:  # the same lines, built without a Python object per cell
        return head + kernels.csv_rows(columns, len(result.query_ids))
    return head + "".join(line + "\n" for line in map(",".join, zip(*columns)))


def summary_dict(
    result: EvaluationResult,
    *,
    cis: Mapping[str, tuple[float, float]] | None = None,
    extra: Mapping[str, Any] | None = None,
    per_query: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``summary.json``'s content. ``per_query``: its per-query block (:func:`rankgate.gating.baseline.per_query_dict`
    of ``result``) when the caller made it already (while the intervals were drawn)."""
    from rankgate import __version__

    data = result.to_dict()
    if cis:
        for name, (low, high) in cis.items():
            entry = data["metrics"].get(name)
            if entry is not None:
                entry["ci_low"] = None if math.isnan(low) else low
                entry["ci_high"] = None if math.isnan(high) else high
    data["options"] = {
        k: result.info[k] for k in ("level", "trec", "complete", "default_k", "duplicates_dropped", "ties") if k in result.info
    }
    # only when the ranking rule mattered, or raw-ranking rows were scored: other summaries keep their bytes
    for k in ("ties_differ", "rank_vs_score", "ranking"):
        if result.info.get(k):
            data["options"][k] = result.info[k]
    data["systems"] = {"run": result.info.get("run", {}), "gold": result.info.get("gold", {})}
    if result.info.get("notices"):  # how the inputs were read, when that can differ from what was meant
        data["notices"] = list(result.info["notices"])
    if result.info.get("near_misses"):
        data["near_misses"] = result.info["near_misses"]
    from rankgate.gating.baseline import per_query_dict

    data["per_query"] = per_query_dict(result) if per_query is None else dict(per_query)  # for a later gate's paired rule
    if extra:
        data.update(extra)
    data["rankgate_version"] = __version__
    return data


def summary_json(data: Mapping[str, Any], *, written: Mapping[str, str] | None = None) -> str:
    """``summary.json``'s text: ``data`` as indented JSON with sorted keys. ``written``: top-level keys whose
    value is given as its JSON text already (:func:`segments_json`), spliced in where ``data`` would have it;
    the text is the same as with the value in ``data``."""
    if not written:
        return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
    import uuid

    marks = {key: f"rankgate-{uuid.uuid4().hex}" for key in written}  # (a string no input can hold)
    text = json.dumps({**data, **marks}, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
    for key, mark in marks.items():
        text = text.replace(f'"{mark}"', written[key], 1)
    return text


def segments_json(summary: Any) -> str | None:
    """The ``segments`` part of ``summary.json`` (a :class:`~rankgate.stats.segments.SegmentSummary`'s ``to_dict()``) as
    :func:`summary_json` writes it at the top level, made from the summary's columns: the same text without a
    dict per segment (a field of 50,000 segments). None when the summary has no columns, or a number JSON
    cannot hold (then ``to_dict()`` and ``summary_json`` say so as before)."""
    from json.encoder import encode_basestring

    columns = summary.columns()
    if columns is None:
        return None
    out: list[str] = []
    # indent 2 per level: "segments" at 1, a field at 2, a label at 3, a metric at 4, its numbers at 5
    p2, p3, p4, p5 = ("\n" + " " * (2 * level) for level in (2, 3, 4, 5))
    fields = sorted(columns, key=lambda c: c.field)
    if not fields:
        return "{}"
    for f, col in enumerate(fields):
        out.append(("{" if f == 0 else ",") + p2 + encode_basestring(col.field) + ": ")
        k = len(col.labels)
        if not k:
            out.append("{}")
            continue
        metrics = sorted(range(len(col.metrics)), key=lambda j: col.metrics[j])
        names = [p4 + encode_basestring(col.metrics[j]) + ": {" for j in metrics]
        for i, label in enumerate(sorted(range(k), key=lambda i: col.labels[i])):
            out.append(("{" if i == 0 else ",") + p3 + encode_basestring(col.labels[label]) + ": ")
            if not metrics:
                out.append("{}")
                continue
            cells = []
            for name, j in zip(names, metrics):
                g = j * k + label
                numbers = [_number(col.ci_high[g]), _number(col.ci_low[g]), _number(col.mean[g])]
                if None in numbers:
                    return None
                cells.append(f'{name}{p5}"ci_high": {numbers[0]},{p5}"ci_low": {numbers[1]},{p5}"mean": {numbers[2]},'
                             f'{p5}"n": {int.__repr__(col.n[g])}{p4}}}')
            out.append("{" + ",".join(cells) + p3 + "}")
        out.append(p2 + "}")
    out.append("\n  }")
    return "".join(out)


def _number(x: float) -> str | None:
    """A float as JSON writes it (NaN as null); None for one it cannot hold (infinite)."""
    if x != x:
        return "null"
    if x in (math.inf, -math.inf):
        return None
    return float.__repr__(x)


def answers_csv(result: EvaluationResult, rows: Any) -> str:
    """``answers.csv``: one row per query: cell, verdicts, every metric with its status, statement count, judge errors."""
    a = result.info["answers"]
    answer_names = [m for m in result.metric_names if m not in a["retrieval_metrics"]]
    texts = result.info.get("query_texts")  # queries known by a hash of their question: the question too
    header = ["query_id", *(["query"] if texts else []), "cell", "retrieval", "answer", *a["retrieval_metrics"]]
    columns = [_text_column(result.query_ids)]
    if texts:
        columns.append(_text_column([texts.get(q) for q in result.query_ids]))
    columns += [_text_column([r.cell for r in rows]), _text_column([r.retrieval for r in rows]),
                _text_column([r.answer for r in rows])]
    columns += [_float_column(result.values[m]) for m in a["retrieval_metrics"]]
    for m in answer_names:
        header += [m, f"{m}.status"]
        columns += [_float_column(result.values[m]), _text_column(a["status"][m])]
    header += ["statements", "judge_errors"]
    columns.append(["" if n is None else str(n) for n in a["statements"]])
    columns.append(_text_column(["; ".join(e) for e in a["judge_errors"]]))
    lines = [",".join(header)] + [",".join(row) for row in zip(*columns)]
    return "\n".join(lines) + "\n"


def answers_summary(scored: Any) -> dict[str, Any]:
    """``summary.json`` of ``rankgate answers`` (as a dict) from :func:`rankgate.flows.answers.run_answers`' result:
    the evaluation summary with the answers, statistics (and segments) parts and the inputs."""
    summary = summary_dict(scored.result, cis=scored.cis, extra=scored.extra)
    summary["inputs"] = scored.inputs
    return summary
