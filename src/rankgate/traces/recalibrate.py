"""Recent production items people can label to recalibrate the judge (``rankgate judge recalibrate --traces``).

``rankgate traces sample`` (:mod:`rankgate.traces.sample`) proposes the requests *worth* labelling for the gold
set: negative feedback, fallbacks, low confidence. A judge's calibration needs the opposite: items like the ones
the judge labels every day, so that its agreement with people describes production. So the units here are every
usable request of the recent window, each with what it retrieved:

* **recent**: requests no older than ``days`` before the newest request in the traces (the traces' own clock,
  so the same files give the same sample whenever they are read);
* **usable**: not failed (``status`` error) and with query text (a redacted query cannot be judged);
* **its items**: the first ``depth`` items, by rank, of the request's last stage (``packed``, else
  ``reranked``, else ``candidate``: what the model read), each a pooling-queue line
  ``{query_id: "prod-<request_id>", query, id, text}`` with the item's ``rank`` and ``item_source``, the request's
  ``request_id`` and ``observed`` time, ``source: "production_log"`` and ``sample_reason: "judge_recalibration"``.
  The text comes from the corpus manifest; an item the corpus lacks (or holds without text) is left out and
  counted.

Strata are the values of the request fields asked for (:data:`rankgate.traces.sample.REQUEST_BY`) and, as
``source``, the item's source.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from rankgate.traces.model import TraceTables

__all__ = ["STRATIFY_FIELDS", "recent_units"]

#: What a production sample can be stratified by: the request's fields, and the retrieved item's source.
STRATIFY_FIELDS = ("tenant", "surface", "data_source", "conversation_id", "index_version", "corpus_version", "source")


def recent_units(tables: TraceTables, corpus: Any, *, days: int, depth: int,
                 stratify: Sequence[str]) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]], dict[str, int]]:
    """``(records, strata, left_out)`` of the recent window (module docs); ``left_out`` counts the requests
    outside the window, failed or without text, and the items without a text in the corpus."""
    from rankgate.errors import F, UsageError
    from rankgate.traces.model import current_field

    stratify = tuple(current_field(f, "stratify") for f in stratify)
    for f in stratify:
        if f not in STRATIFY_FIELDS:
            raise UsageError(f"{F.stratify}: cannot stratify production items by {f!r}; fields: "
                             f"{', '.join(STRATIFY_FIELDS)}")
    req = tables.requests.to_pydict()
    n_req = len(req["request_id"])
    left = {"older": 0, "failed or without text": 0, "not in the corpus": 0}
    if not n_req:
        return [], [], left
    newest: dt.datetime = max(req["ts"])
    start = newest - dt.timedelta(days=days)
    keep: dict[str, int] = {}
    for i in range(n_req):
        if req["ts"][i] < start:
            left["older"] += 1
        elif req["status"][i] == "error" or not req["query_text"][i]:
            left["failed or without text"] += 1
        else:
            keep[req["request_id"][i]] = i
    by_request: dict[str, dict[str, list[dict[str, Any]]]] = {}
    if keep:
        import pyarrow as pa
        import pyarrow.compute as pc

        it = tables.items
        rows = it.filter(pc.is_in(it["request_id"], pa.array(list(keep), pa.string()))).to_pylist()
        for row in rows:
            by_request.setdefault(row["request_id"], {}).setdefault(row["stage"], []).append(row)
    chosen: list[tuple[int, dict[str, Any]]] = []
    for rid in sorted(keep, key=lambda r: (req["ts"][keep[r]], r)):
        stages = by_request.get(rid, {})
        stage = next((s for s in ("packed", "reranked", "candidate") if stages.get(s)), None)
        if stage is None:
            continue
        seen: set[str] = set()
        for row in sorted(stages[stage], key=lambda x: x["rank"]):
            if row["item_id"] in seen:
                continue
            seen.add(row["item_id"])
            chosen.append((keep[rid], row))
            if len(seen) >= depth:
                break
    at = corpus.positions([row["item_id"] for _, row in chosen]).tolist() if chosen else []
    records: list[dict[str, Any]] = []
    strata: list[tuple[Any, ...]] = []
    for (i, row), pos in zip(chosen, at):
        text = corpus.text_at(pos) if pos >= 0 else None
        if text is None:
            left["not in the corpus"] += 1
            continue
        segment = {f: (row.get("source") if f == "source" else req[f][i]) for f in stratify}
        rec: dict[str, Any] = {"query_id": f"prod-{req['request_id'][i]}", "query": req["query_text"][i],
                               "id": row["item_id"], "text": text, "rank": row["rank"]}
        if row.get("source") is not None:
            rec["item_source"] = row["source"]
        rec["request_id"] = req["request_id"][i]
        for k in ("conversation_id", "turn"):  # (the conversation the request belongs to, when the trace says)
            if req[k][i] is not None:
                rec[k] = req[k][i]
        rec["observed"] = req["ts"][i].strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        rec["source"] = "production_log"
        rec["sample_reason"] = "judge_recalibration"
        if segment:
            rec["segment"] = segment
        records.append(rec)
        strata.append(tuple(segment.values()))
    return records, strata, left
