"""rankgate trace records -> canonical tables, columnar: the fast path of the JSONL and Parquet readers.

:func:`convert` takes the records as one Arrow table (from pyarrow's JSON reader with
:data:`RECORD_SCHEMA`, or from a Parquet file) and either returns exactly the tables the validating
row-by-row reader (:func:`rankgate.traces.formats.jsonl.parse_request`) would build, or ``None``; the
caller then runs that reader, which gives the result or names the offending line. It never changes a
result or an error message, by construction: every check the row reader makes is made here on whole
columns, and anything the row reader would refuse, or that this path cannot reproduce exactly (a
timestamp with surrounding blanks, a type other than the expected one, a feedback label, ranks on
some items of a stage but not others is fine, but a NaN is not) makes it decline.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rankgate.io.cost import COST_KEYS
from rankgate.traces.build import ABORT_ERROR_TYPES, MAX_INT32, NEGATIVE_BELOW, RESOURCE_FIELDS
from rankgate.traces.cost import COST_COLUMNS, COST_OTHER
from rankgate.traces.model import (
    CITATIONS_SCHEMA,
    FEEDBACK_SCHEMA,
    ITEM_STATUSES,
    ITEMS_SCHEMA,
    REQUESTS_SCHEMA,
    STAGES,
    TraceTables,
    query_key,
)

__all__ = ["RECORD_SCHEMA", "convert"]

_S, _I, _F, _B = pa.string(), pa.int64(), pa.float64(), pa.bool_()
_ITEM = pa.struct([("stage", _S), ("rank", _I), ("id", _S), ("doc_id", _S), ("doc_version", _S), ("score", _F),
                   ("status", _S), ("source", _S), ("tenant", _S)])
RECORD_SCHEMA = pa.schema([
    ("request_id", _S), ("timestamp", _S), ("query", _S), ("query_text", _S),
    *((k, _S) for k in ("tenant", "surface", "adapter", "conversation_id", "session", "data_source", "trace_id",
                        "rewritten_query", "corpus_version", "index_version", "error_type", "status")),
    ("top_k", _I), ("turn", _I), ("http_status", _I), ("client_abort", _B), ("fallback", _B),
    ("timings_ms", pa.struct([(k, _F) for k in ("parse", "retrieval", "rerank", "synthesis", "total")])),
    ("soft_deadline_ms", _F), ("cpu_ms", _F), ("memory_mb", _F), ("cost", pa.struct([(k, _F) for k in COST_KEYS])),
    ("retry", pa.struct([("attempts", _I), ("reason", _S)])),
    ("privacy", pa.struct([("mode", _S), ("sensitive_tokens", _I), ("leaked_tokens", _I), ("blocked", _B),
                           ("secure_fields", _I), ("bypassed", _I)])),
    ("retrieved", pa.list_(_ITEM)),
    ("citations", pa.list_(pa.struct([("id", _S), ("doc_id", _S), ("version", _S)]))),
    ("feedback", pa.list_(pa.struct([("value", _F), ("reason", _S), ("negative", _B)]))),
])

_ISO = (r"^(?P<y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2})[T ](?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})"
        r"(?:[.,](?P<f>\d{1,9}))?\s*(?P<off>Z|z|[+-]\d{2}(?::?\d{2})?)?$")


@functools.cache
def _aborts() -> pa.Array:
    # (built on first use: the first pa.array call of a process makes pyarrow look for pandas)
    return pa.array(sorted(ABORT_ERROR_TYPES), pa.string())


class _Decline(Exception):
    """The row reader must decide (it reproduces the result or names the problem)."""


def _kind(t: pa.DataType) -> str:
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "s"
    if pa.types.is_dictionary(t):
        return "s" if _kind(t.value_type) == "s" else "?"
    if pa.types.is_integer(t):
        return "i"
    if pa.types.is_floating(t):
        return "f"
    if pa.types.is_boolean(t):
        return "b"
    if pa.types.is_null(t):
        return "n"
    return "?"


def _conform(arr: pa.Array, want: pa.DataType) -> pa.Array:
    """``arr`` as ``want`` when the row reader would read its values the same way, else _Decline."""
    t = arr.type
    if pa.types.is_null(t):
        return pa.nulls(len(arr), want)
    if pa.types.is_struct(want):
        if not pa.types.is_struct(t):
            raise _Decline
        children = dict(zip([f.name for f in t], arr.flatten()))  # (flatten applies the struct's nulls)
        out = [_conform(children[f.name], f.type) if f.name in children else pa.nulls(len(arr), f.type)
               for f in want]
        return pa.StructArray.from_arrays(out, fields=list(want))
    if pa.types.is_list(want):
        if not (pa.types.is_list(t) or pa.types.is_large_list(t)):
            raise _Decline
        lens = _np(pc.list_value_length(arr), np.int64, 0)
        offsets = pa.array(np.r_[0, np.cumsum(lens)].astype(np.int32))
        return pa.ListArray.from_arrays(offsets, _conform(arr.flatten(), want.value_type))
    k, kw = _kind(t), _kind(want)
    if k == "?" or (k != kw and not (k == "i" and kw == "f")):
        raise _Decline
    if pa.types.is_dictionary(t):
        arr = arr.dictionary_decode()
    try:
        return arr.cast(want, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        raise _Decline from None


def _np(arr: pa.Array, dtype: Any, fill: Any) -> np.ndarray:
    return np.asarray(pc.fill_null(arr, fill).to_numpy(zero_copy_only=False), dtype=dtype)


def _strings(arr: pa.Array) -> pa.Array:
    """'' reads as missing (the column is copied only when it holds one)."""
    if len(arr) == arr.null_count:
        return arr
    if pc.min(pc.binary_length(arr)).as_py() != 0:
        return arr
    return pc.if_else(pc.equal(arr, ""), pa.scalar(None, pa.string()), arr)


def _require(cond: Any) -> None:
    if not bool(cond):
        raise _Decline


def _all(mask: pa.Array) -> bool:
    return bool(pc.all(pc.fill_null(mask, True)).as_py() in (True, None))


def _finite(arr: pa.Array, *, nonneg: bool = False) -> pa.Array:
    v = _np(arr, np.float64, 0.0)
    _require(np.isfinite(v).all())
    if nonneg:
        _require((v >= 0).all())
    return arr


def _int_range(arr: pa.Array, low: int, high: int) -> pa.Array:
    v = arr.drop_null()
    if len(v):
        _require(pc.min(v).as_py() >= low and pc.max(v).as_py() <= high)
    return arr


def _days_from_civil(y: np.ndarray, m: np.ndarray, d: np.ndarray) -> np.ndarray:
    y = y - (m <= 2)
    era = np.floor_divide(y, 400)
    yoe = y - era * 400
    doy = (153 * (m + np.where(m > 2, -3, 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _timestamps(arr: pa.Array) -> np.ndarray:
    """Microseconds since the epoch, UTC, from ISO text or an Arrow timestamp column (naive = UTC)."""
    _require(arr.null_count == 0)
    if pa.types.is_timestamp(arr.type):
        a = arr.cast(pa.timestamp(arr.type.unit))  # drop the zone: the values are UTC instants already
        return _np(a.cast(pa.timestamp("us"), safe=False).cast(pa.int64()), np.int64, 0)
    _require(_kind(arr.type) == "s")
    arr = arr.cast(pa.string()) if not pa.types.is_dictionary(arr.type) else arr.dictionary_decode().cast(pa.string())
    _require(not pc.any(pc.match_substring_regex(arr, r"^\s|\s$")).as_py())
    parts = pc.extract_regex(arr, _ISO)
    _require(parts.null_count == 0)

    def col(name: str) -> np.ndarray:
        return _np(pc.cast(parts.field(name), pa.int64()), np.int64, 0)

    y, mo, d, h, mi, s = (col(k) for k in ("y", "mo", "d", "h", "mi", "s"))
    leap = ((y % 4 == 0) & (y % 100 != 0)) | (y % 400 == 0)
    mdays = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])[np.clip(mo, 0, 12)] + ((mo == 2) & leap)
    _require(((mo >= 1) & (mo <= 12) & (d >= 1) & (d <= mdays) & (h < 24) & (mi < 60) & (s < 61) & (y >= 1)).all())
    frac = pc.utf8_slice_codeunits(pc.binary_join_element_wise(pc.fill_null(parts.field("f"), ""), "000000", ""),
                                   0, 6)
    us = _np(pc.cast(frac, pa.int64()), np.int64, 0)
    secs = _days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + np.minimum(s, 59)
    off = parts.field("off")
    has = pc.and_(pc.is_valid(off), pc.invert(pc.is_in(off, pa.array(["Z", "z", ""]))))
    if pc.any(has).as_py():
        digits = pc.replace_substring(pc.utf8_slice_codeunits(off, 1, 10), ":", "")
        oh = _np(pc.cast(pc.if_else(has, pc.utf8_slice_codeunits(digits, 0, 2), "0"), pa.int64()), np.int64, 0)
        om_txt = pc.if_else(has, pc.utf8_slice_codeunits(digits, 2, 4), "0")
        om = _np(pc.cast(pc.if_else(pc.equal(om_txt, ""), "0", om_txt), pa.int64()), np.int64, 0)
        _require((oh <= 23).all() and (om <= 59).all())
        sign = np.where(_np(pc.starts_with(pc.fill_null(off, ""), "+"), bool, False), 1, -1)
        hv = _np(has, bool, False)
        secs = secs - np.where(hv, sign * (oh * 3600 + om * 60), 0)
    return secs * 1_000_000 + us


def _ranks(req_idx: np.ndarray, stage_code: np.ndarray, ranks: pa.Array) -> pa.Array:
    """Logged ranks, or the item's input position within its request and stage when absent."""
    if ranks.null_count == 0:
        return ranks.cast(pa.int32())
    key = req_idx.astype(np.int64) * 3 + stage_code
    order = np.argsort(key, kind="stable")
    sk = key[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sk)) + 1]
    first = np.repeat(starts, np.diff(np.r_[starts, len(sk)]))
    pos = np.empty(len(key), np.int64)
    pos[order] = np.arange(len(sk)) - first + 1
    return pc.if_else(pc.is_null(ranks), pa.array(pos), ranks).cast(pa.int32())


def convert(table: pa.Table, path: str, first_line: int = 1, cache: dict[Any, str] | None = None
            ) -> TraceTables | None:
    """The canonical tables of ``table``'s records (row i is line/row ``first_line + i``), or None.
    ``cache`` keeps query keys between blocks of one read."""
    try:
        return _convert(table, path, first_line, {} if cache is None else cache)
    except _Decline:
        return None


def _col(table: pa.Table, name: str) -> pa.Array:
    want = RECORD_SCHEMA.field(name).type
    if name not in table.column_names:
        return pa.nulls(table.num_rows, want)
    c = table.column(name)
    arr = c.chunk(0) if c.num_chunks == 1 else c.combine_chunks()
    if name == "timestamp":
        return arr
    return _conform(arr, want)


_COST_MAP = pa.map_(pa.string(), pa.float64())


def _cost(table: pa.Table) -> dict[str, pa.Array]:
    """The cost columns (:mod:`rankgate.traces.cost`) of the records' ``cost`` objects: the named keys a column
    each, the others as a map sorted by key (the row reader's order). Anything the row reader would refuse
    (a value that is not a number >= 0, an object that is not one) declines."""
    n = table.num_rows
    out: dict[str, pa.Array] = {c: pa.nulls(n, _F) for c in COST_COLUMNS}
    out[COST_OTHER] = pa.nulls(n, _COST_MAP)
    if "cost" not in table.column_names:
        return out
    c = table.column("cost")
    arr = c.chunk(0) if c.num_chunks == 1 else c.combine_chunks()
    if pa.types.is_null(arr.type):
        return out
    _require(pa.types.is_struct(arr.type))
    names = [f.name for f in arr.type]
    _require(len(set(names)) == len(names))
    children = dict(zip(names, arr.flatten()))  # (flatten applies the struct's nulls)
    for k, col in zip(COST_KEYS, COST_COLUMNS):
        if k in children:
            out[col] = _finite(_conform(children[k], _F), nonneg=True)
    extra = sorted(k for k in names if k not in COST_KEYS)
    if not extra:
        return out
    values = [_finite(_conform(children[k], _F), nonneg=True) for k in extra]
    valid = np.stack([_np(pc.is_valid(v), bool, False) for v in values], axis=1)
    if not valid.any():
        return out
    numbers = np.stack([_np(v, np.float64, 0.0) for v in values], axis=1)
    counts = valid.sum(axis=1)
    offsets = pa.array(np.r_[0, np.cumsum(counts)].astype(np.int32),
                       mask=np.r_[counts == 0, False])  # (a request with no other key: null, as the row reader)
    keys = pa.array(np.broadcast_to(np.array(extra, dtype=object), valid.shape)[valid], pa.string())
    out[COST_OTHER] = pa.MapArray.from_arrays(offsets, keys, pa.array(numbers[valid], _F))
    return out


def _query_keys(parts: list[pa.Array], cache: dict[Any, str]) -> pa.Array:
    encoded = [pc.dictionary_encode(a) for a in parts]
    codes = [_np(e.indices, np.int64, -1) + 1 for e in encoded]  # 0 = null
    sizes = [len(e.dictionary) + 1 for e in encoded]
    if float(np.prod(np.array(sizes, dtype=np.float64))) < 2**62:
        key = np.zeros(len(codes[0]), np.int64)
        for c, size in zip(codes, sizes):
            key = key * size + c
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        uniq = np.stack([c[first] for c in codes], axis=1)
    else:
        uniq, inverse = np.unique(np.stack(codes, axis=1), axis=0, return_inverse=True)
    # each distinct row as a tuple of its four values (code 0 = None), built column by column
    values = []
    for j, e in enumerate(encoded):
        table = np.empty(len(e.dictionary) + 1, dtype=object)
        table[0] = None
        table[1:] = e.dictionary.to_pylist()
        values.append(table[uniq[:, j]].tolist())
    keys = []
    for parts_ in zip(*values):
        k = cache.get(parts_)
        if k is None:
            k = cache[parts_] = query_key(*parts_)
        keys.append(k)
    return pa.array(keys, pa.string()).take(pa.array(inverse.reshape(-1)))


def _convert(table: pa.Table, path: str, first_line: int, cache: dict[Any, str]) -> TraceTables:
    n = table.num_rows
    rid = _col(table, "request_id")
    _require(rid.null_count == 0 and not pc.any(pc.equal(rid, "")).as_py())
    ts = _timestamps(_col(table, "timestamp"))
    q, qt = _col(table, "query"), _col(table, "query_text")
    query = pc.if_else(pc.is_valid(q), _strings(q), _strings(qt))
    cols: dict[str, Any] = {"request_id": rid, "ts": pa.array(ts, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
                            "query_text": query}
    for k in ("tenant", "surface", "adapter", "conversation_id", "data_source", "trace_id", "rewritten_query",
              "corpus_version", "index_version", "error_type"):
        cols[k] = _strings(_col(table, k))
    old = _strings(_col(table, "session"))  # conversation_id's old name; a record with both: the row reader says so
    if old.null_count != len(old):
        _require(not pc.any(pc.and_(pc.is_valid(old), pc.is_valid(cols["conversation_id"]))).as_py())
        cols["conversation_id"] = pc.coalesce(cols["conversation_id"], old)
    cols["top_k"] = _int_range(_col(table, "top_k"), 1, MAX_INT32).cast(pa.int32())
    cols["turn"] = _int_range(_col(table, "turn"), 1, MAX_INT32).cast(pa.int32())
    status = _strings(_col(table, "status"))
    _require(_all(pc.is_in(status, pa.array(["ok", "error"]))))
    cols["status"] = status
    http = _int_range(_col(table, "http_status"), 100, 599)
    cols["http_status"] = http.cast(pa.int32())
    et = cols["error_type"]
    derived = pc.or_(pc.fill_null(pc.equal(http, 499), False),
                     pc.fill_null(pc.is_in(pc.utf8_lower(pc.utf8_trim_whitespace(et)), _aborts()), False))
    derived = pc.if_else(pc.and_(pc.is_null(http), pc.is_null(et)), pa.scalar(None, pa.bool_()), derived)
    if pc.any(pc.is_in(pc.utf8_trim_whitespace(et), _aborts())).as_py() or not pc.all(pc.is_null(et)).as_py():
        # Python's str.strip/lower and Arrow's agree on ASCII; anything else goes to the row reader
        _require(_all(pc.string_is_ascii(et)))
    logged = _col(table, "client_abort")
    cols["client_abort"] = pc.if_else(pc.is_valid(logged), logged, derived)
    cols["fallback"] = _col(table, "fallback")
    tm = _col(table, "timings_ms")
    for k in ("parse", "retrieval", "rerank", "synthesis", "total"):
        cols[k + "_ms"] = _finite(tm.field(k), nonneg=True)
    cols["soft_deadline_ms"] = _finite(_col(table, "soft_deadline_ms"), nonneg=True)
    for k in RESOURCE_FIELDS:
        cols[k] = _finite(_col(table, k), nonneg=True)
    cols.update(_cost(table))
    retry = _col(table, "retry")
    cols["retry_attempts"] = _int_range(retry.field("attempts"), 0, MAX_INT32).cast(pa.int32())
    cols["retry_reason"] = _strings(retry.field("reason"))
    pv = _col(table, "privacy")
    cols["privacy_mode"] = _strings(pv.field("mode"))
    for k in ("sensitive_tokens", "leaked_tokens", "secure_fields", "bypassed"):
        cols[k] = _int_range(pv.field(k), 0, 2**63 - 1)
    cols["blocked"] = pv.field("blocked")
    # query_key: one hash per distinct (text, data source, top_k, tenant), cached across blocks
    cols["query_key"] = _query_keys([cols[k] for k in ("query_text", "data_source", "top_k", "tenant")], cache)
    cols["source_file"] = pa.array(np.full(n, path, dtype=object), pa.string()) if n else pa.array([], pa.string())
    cols["source_line"] = pa.array(np.arange(first_line, first_line + n, dtype=np.int64))
    requests = pa.Table.from_arrays([cols[f.name].cast(f.type) for f in REQUESTS_SCHEMA], schema=REQUESTS_SCHEMA)

    # items
    ret = _col(table, "retrieved")
    parent = _np(pc.list_parent_indices(ret), np.int64, 0)
    it = ret.flatten()
    stage = it.field("stage")
    _require(stage.null_count == 0 and _all(pc.is_in(stage, pa.array(STAGES))))
    item_id = it.field("id")
    _require(item_id.null_count == 0 and not pc.any(pc.equal(item_id, "")).as_py())
    rank = _int_range(it.field("rank"), 1, MAX_INT32)
    score = _finite(it.field("score"))
    st = _strings(it.field("status"))
    _require(_all(pc.is_in(st, pa.array(ITEM_STATUSES))))
    stage_code = _np(pc.index_in(stage, pa.array(STAGES)), np.int64, 0)
    rids = rid.take(pa.array(parent))
    items = pa.Table.from_arrays(
        [rids, stage, _ranks(parent, stage_code, rank), item_id, _strings(it.field("doc_id")),
         _strings(it.field("doc_version")), score, st, _strings(it.field("source")), _strings(it.field("tenant"))],
        schema=ITEMS_SCHEMA)
    # citations
    cit = _col(table, "citations")
    cp = pa.array(_np(pc.list_parent_indices(cit), np.int64, 0))
    c = cit.flatten()
    cid, cdoc = _strings(c.field("id")), _strings(c.field("doc_id"))
    _require(not pc.any(pc.and_(pc.is_null(cid), pc.is_null(cdoc))).as_py())
    citations = pa.Table.from_arrays([rid.take(cp), cid, cdoc, _strings(c.field("version"))], schema=CITATIONS_SCHEMA)
    # feedback
    fb = _col(table, "feedback")
    fp = pa.array(_np(pc.list_parent_indices(fb), np.int64, 0))
    f = fb.flatten()
    value = _finite(f.field("value"))
    _require(value.null_count == 0)
    neg = pc.if_else(pc.is_valid(f.field("negative")), f.field("negative"), pc.less(value, NEGATIVE_BELOW))
    feedback = pa.Table.from_arrays([rid.take(fp), value, neg, _strings(f.field("reason"))], schema=FEEDBACK_SCHEMA)
    return TraceTables(requests, items, citations, feedback)

