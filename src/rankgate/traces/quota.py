"""Production traffic per gated segment, and production queries sampled to a label plan's quotas
(``rankgate gold plan --traces`` and ``rankgate gold sample --plan``; docs/gold.md, "How many labels").

A gate's segment field matches a trace field when it names one of the request fields rankgate reads
(:data:`rankgate.traces.sample.REQUEST_BY`: tenant, surface, data_source, conversation_id, index_version,
corpus_version), as the gold set names it (``tenant``, ``tags.tenant`` or ``metadata.tenant``); a joined field
``a+b`` matches when each part does, and its value is the parts joined by `` / `` as segments write it.

**Traffic** (:func:`segment_traffic`) counts every request (failed ones too: they are traffic) by its value of
the field; requests without one are not counted for that field.

**Sampling to quotas** (:func:`sample_to_quotas`): a candidate is a request that did not fail and carries query
text, each distinct query (``query_key``) once, from its earliest request, as ``gold sample`` proposes them.
For each segment of the plan in turn (its order), the candidates of that segment not taken yet are shuffled
with the seed and the first ``quota`` taken: a uniform sample of the segment's production queries, so the
labels describe the traffic the gate stands for. Each record is a gold-set candidate as ``gold sample`` writes
them, with ``"sample_reason": "plan"`` and ``"plan_segment": "tenant=acme"``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rankgate.traces.model import RENAMED_FIELDS, TraceTables

__all__ = ["QuotaSample", "sample_to_quotas", "segment_traffic", "trace_field"]


def trace_field(name: str) -> tuple[str, ...] | None:
    """The request fields a segment field names (one, or each part of ``a+b``), or None when any part is not
    one the traces carry."""
    from rankgate.traces.sample import REQUEST_BY

    parts = []
    for part in name.split("+"):
        part = part.strip()
        for prefix in ("tags.", "metadata."):
            part = part.removeprefix(prefix)
        part = RENAMED_FIELDS.get(part, part)  # (a plan's segment may still say session)
        if part not in REQUEST_BY:
            return None
        parts.append(part)
    return tuple(parts)


def _values(req: Mapping[str, list[Any]], parts: tuple[str, ...], i: int) -> str | None:
    got = [req[p][i] for p in parts]
    return None if any(v is None or v == "" for v in got) else " / ".join(str(v) for v in got)


def segment_traffic(tables: TraceTables, fields: Sequence[str]) -> dict[str, dict[str, int]]:
    """Requests per value of each of ``fields`` the traces carry (module docs); a field no request has a value
    of is left out, as one the traces do not carry."""
    wanted = {f: trace_field(f) for f in fields}
    columns = sorted({p for parts in wanted.values() if parts for p in parts})
    req = tables.requests.select(columns).to_pydict() if columns else {}
    n = tables.requests.num_rows
    out: dict[str, dict[str, int]] = {}
    for f, parts in wanted.items():
        if parts is None:
            continue
        counts: dict[str, int] = {}
        for i in range(n):
            v = _values(req, parts, i)
            if v is not None:
                counts[v] = counts.get(v, 0) + 1
        if counts:
            out[f] = dict(sorted(counts.items()))
    return out


@dataclass(frozen=True)
class QuotaSample:
    records: tuple[dict[str, Any], ...]
    short: tuple[tuple[str, str, int, int], ...]   # (field, value, quota, found) where the traces had too few
    untracked: tuple[tuple[str, str, int], ...]    # (field, value, quota) of fields the traces do not carry


def sample_to_quotas(tables: TraceTables, quotas: Mapping[tuple[str, str], int], *, seed: int = 0,
                     depth: int = 20) -> QuotaSample:
    """Production queries for each segment's quota (module docs)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from rankgate.traces.sample import _record

    req = tables.requests.to_pydict()
    ids = req["request_id"]
    first: dict[str, int] = {}
    for i in sorted(range(len(ids)), key=lambda i: (req["ts"][i], ids[i])):
        if req["status"][i] == "error" or not req["query_text"][i]:
            continue
        first.setdefault(req["query_key"][i], i)
    candidates = sorted(first.values(), key=lambda i: ids[i])
    rng = np.random.default_rng(seed)
    taken: set[int] = set()
    picked: list[tuple[int, str]] = []
    short: list[tuple[str, str, int, int]] = []
    untracked: list[tuple[str, str, int]] = []
    for (f, value), quota in quotas.items():
        if quota <= 0:
            continue
        parts = trace_field(f)
        if parts is None:
            untracked.append((f, value, quota))
            continue
        pool = [i for i in candidates if i not in taken and _values(req, parts, i) == value]
        pool = [pool[j] for j in rng.permutation(len(pool)).tolist()][:quota]
        if len(pool) < quota:
            short.append((f, value, quota, len(pool)))
        taken.update(pool)
        picked += [(i, f"{f}={value}") for i in pool]
    keep = [ids[i] for i, _ in picked]
    index = {rid: i for i, rid in enumerate(ids)}
    items: dict[int, list[dict[str, Any]]] = {i: [] for i, _ in picked}
    if keep:
        it = tables.items
        for row in it.filter(pc.is_in(it["request_id"], pa.array(keep, pa.string()))).to_pylist():
            items[index[row["request_id"]]].append(row)
    records = []
    for i, segment in picked:
        rec = _record(i, "plan", req, items[i], depth)
        rec["plan_segment"] = segment
        records.append(rec)
    return QuotaSample(tuple(records), tuple(short), tuple(untracked))
