"""Small canonical trace tables built by hand, for the signal and monitor tests."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from rankgate.traces import SCHEMAS, TraceTables, check_tables, query_key

T0 = dt.datetime(2026, 5, 1, tzinfo=dt.timezone.utc)


def at(day: int = 0, hour: int = 0, minute: int = 0) -> dt.datetime:
    return T0 + dt.timedelta(days=day, hours=hour, minutes=minute)


def tables(requests: Iterable[Mapping[str, Any]], items: Iterable[Mapping[str, Any]] = (),
           citations: Iterable[Mapping[str, Any]] = (), feedback: Iterable[Mapping[str, Any]] = ()) -> TraceTables:
    """Canonical tables from dicts; a request needs ``request_id`` and ``ts`` (the rest is optional)."""
    reqs = []
    for i, r in enumerate(requests):
        r = dict(r)
        r.setdefault("query_key", query_key(r.get("query_text"), r.get("data_source"), r.get("top_k"), r.get("tenant")))
        r.setdefault("source_file", "t.jsonl")
        r.setdefault("source_line", i + 1)
        reqs.append(r)
    t = TraceTables(*(pa.Table.from_pylist(list(rows), schema=SCHEMAS[name])
                      for name, rows in (("requests", reqs), ("items", items), ("citations", citations),
                                         ("feedback", feedback))))
    check_tables(t)
    return t


def ranked(request_id: str, ids: Iterable[str], stage: str = "reranked", scores: Iterable[float] | None = None,
           **extra: Any) -> list[dict[str, Any]]:
    ids = list(ids)
    sc = list(scores) if scores is not None else [None] * len(ids)
    return [{"request_id": request_id, "stage": stage, "rank": i + 1, "item_id": x, "score": s, **extra}
            for i, (x, s) in enumerate(zip(ids, sc))]
