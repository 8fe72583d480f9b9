"""rankgate's own trace JSONL: one request per line (docs/traces.md, "rankgate trace JSONL").

::

    {"request_id": "r1", "timestamp": "2026-05-29T13:46:19.963Z", "query": "refund window?",
     "tenant": "acme", "surface": "chat", "conversation_id": "c-1", "data_source": "kb-main", "top_k": 5,
     "adapter": "llamaindex",
     "trace_id": "5b8e…", "rewritten_query": "…", "corpus_version": "c-42", "index_version": "ix-7",
     "status": "ok", "http_status": 200, "error_type": null, "client_abort": false, "fallback": false,
     "timings_ms": {"parse": 3.1, "retrieval": 41.0, "rerank": 12.5, "synthesis": 820.0, "total": 880.2},
     "soft_deadline_ms": 1500, "cpu_ms": 212.0, "memory_mb": 412.5, "retry": {"attempts": 0, "reason": null},
     "privacy": {"mode": "redact", "sensitive_tokens": 4, "leaked_tokens": 0, "blocked": false,
                 "secure_fields": 2, "bypassed": 0},
     "retrieved": [{"stage": "candidate", "rank": 1, "id": "kb/policy#3", "doc_id": "kb/policy",
                    "doc_version": "v3", "score": 0.82, "status": "active", "source": "policies", "tenant": "acme"}],
     "citations": [{"id": "kb/policy#3", "doc_id": "kb/policy", "version": "v3"}],
     "feedback": [{"value": 0, "reason": "wrong policy"}]}

Required: ``request_id`` (string or integer) and ``timestamp`` (ISO 8601; no offset means UTC).
Everything else is optional; ``query`` and ``query_text`` are the same field. ``client_abort``, when
not logged, is derived: HTTP 499 or an abort ``error_type`` (see :data:`..build.ABORT_ERROR_TYPES`).
Feedback ``value`` is a number (negative under 0.5) or a label (``thumbs_down``…); ``"negative":
true/false`` on a feedback entry overrides. ``conversation_id`` names the conversation the request
belongs to (``session``, its old name, still reads; a record with both is refused) and ``turn`` its
place in it (1 for the first). ``adapter`` names the framework or integration that
produced the trace (``llamaindex``, ``langchain``, ``custom``…; a segment: ``--by adapter``);
``cpu_ms`` (CPU time the process spent on the request) and ``memory_mb`` (the process's resident memory,
sampled at the request) are optional, non-negative numbers. ``cost`` is what the request cost, an object
of numbers >= 0 (``{"tokens_in": 1840, "tokens_out": 212, "usd": 0.0021, "embed_ms": 3.1, "rerank_ms":
41.0}``, other keys kept; see :mod:`rankgate.traces.cost`). Unknown fields are ignored. Blank lines are
skipped.
"""

from __future__ import annotations

import json
from typing import Any

from rankgate._util import progress
from rankgate.errors import InputError
from rankgate.traces.build import RESOURCE_FIELDS, Builder, Check, derive_abort, parse_iso
from rankgate.traces.cost import cost_columns

__all__ = ["parse_request", "read_jsonl"]

_REQ_STRINGS = ("tenant", "surface", "adapter", "conversation_id", "data_source", "trace_id", "rewritten_query", "corpus_version",
                "index_version", "error_type")
_TIMINGS = ("parse", "retrieval", "rerank", "synthesis", "total")
_PRIVACY_COUNTS = ("sensitive_tokens", "leaked_tokens", "secure_fields", "bypassed")
_ITEM_STRINGS = ("doc_id", "doc_version", "source", "tenant")


def _obj(chk: Check, v: Any, field: str) -> dict[str, Any]:
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise chk.fail(field, f"must be an object; got {json.dumps(v)[:40]}")
    return v


def _list(chk: Check, v: Any, field: str) -> list[Any]:
    if v is None:
        return []
    if not isinstance(v, list):
        raise chk.fail(field, f"must be a list; got {json.dumps(v)[:40]}")
    return v


def parse_request(obj: Any, chk: Check, *, require_timestamp: bool = True
                  ) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """One request object -> (request columns, items, citations, feedback); InputError on bad content.
    ``require_timestamp=False`` (one trace given alone, as ``incident new`` reads it) leaves ``ts`` None
    when the trace has no timestamp."""
    if not isinstance(obj, dict):
        raise chk.fail(None, f"must be a JSON object (one request); got {type(obj).__name__}")
    req: dict[str, Any] = {"source_file": chk.path, "source_line": chk.line}
    req["request_id"] = chk.string(obj.get("request_id"), "request_id", required=True, ids=True)
    if obj.get("timestamp") is None:
        if require_timestamp:
            raise chk.fail("timestamp", "is missing", hint="an ISO 8601 date-time, e.g. 2026-05-29T13:46:19Z")
        req["ts"] = None
    else:
        req["ts"] = parse_iso(obj["timestamp"], chk.path, chk.line, "timestamp")
    q = obj.get("query")
    req["query_text"] = chk.string(q if q is not None else obj.get("query_text"),
                                   "query" if q is not None else "query_text")
    for k in _REQ_STRINGS:
        req[k] = chk.string(obj.get(k), k)
    old = chk.string(obj.get("session"), "session")  # the field's old name (traces.model.RENAMED_FIELDS)
    if old is not None:
        if req["conversation_id"] is not None:
            raise chk.fail("session", "is the old name of conversation_id, which this record gives too",
                           hint="keep conversation_id and remove session")
        req["conversation_id"] = old
    req["top_k"] = chk.integer(obj.get("top_k"), "top_k", low=1, high=2**31 - 1)
    req["turn"] = chk.integer(obj.get("turn"), "turn", low=1, high=2**31 - 1)  # the request's place in its conversation
    status = chk.string(obj.get("status"), "status")
    if status is not None and status not in ("ok", "error"):
        raise chk.fail("status", f"must be ok or error; got {status[:40]!r}")
    req["status"] = status
    req["http_status"] = chk.integer(obj.get("http_status"), "http_status", low=100, high=599)
    abort = chk.boolean(obj.get("client_abort"), "client_abort")
    req["client_abort"] = abort if abort is not None else derive_abort(req["http_status"], req["error_type"])
    req["fallback"] = chk.boolean(obj.get("fallback"), "fallback")
    timings = _obj(chk, obj.get("timings_ms"), "timings_ms")
    for k in _TIMINGS:
        req[k + "_ms"] = chk.number(timings.get(k), "timings_ms." + k, nonneg=True)
    req["soft_deadline_ms"] = chk.number(obj.get("soft_deadline_ms"), "soft_deadline_ms", nonneg=True)
    for k in RESOURCE_FIELDS:  # the process's CPU time and memory for this request
        req[k] = chk.number(obj.get(k), k, nonneg=True)
    req.update(cost_columns(obj.get("cost"), chk))  # what the request cost (rankgate.traces.cost)
    retry = _obj(chk, obj.get("retry"), "retry")
    req["retry_attempts"] = chk.integer(retry.get("attempts"), "retry.attempts", high=2**31 - 1)
    req["retry_reason"] = chk.string(retry.get("reason"), "retry.reason")
    privacy = _obj(chk, obj.get("privacy"), "privacy")
    req["privacy_mode"] = chk.string(privacy.get("mode"), "privacy.mode")
    for k in _PRIVACY_COUNTS:
        req[k] = chk.integer(privacy.get(k), "privacy." + k)
    req["blocked"] = chk.boolean(privacy.get("blocked"), "privacy.blocked")

    items = []
    for i, it in enumerate(_list(chk, obj.get("retrieved"), "retrieved")):
        w = f"retrieved[{i}]."
        if not isinstance(it, dict):
            raise chk.fail(w[:-1], f"must be an object; got {json.dumps(it)[:40]}")
        row = {"stage": chk.stage(it.get("stage"), w + "stage"),
               "rank": chk.integer(it.get("rank"), w + "rank", low=1, high=2**31 - 1),
               "item_id": chk.string(it.get("id"), w + "id", required=True, ids=True),
               "score": chk.number(it.get("score"), w + "score"),
               "status": chk.item_status(it.get("status"), w + "status")}
        for k in _ITEM_STRINGS:
            row[k] = chk.string(it.get(k), w + k, ids=k == "doc_id")
        items.append(row)
    citations = chk.citations(_list(chk, obj.get("citations"), "citations"), "citations")
    feedback = []
    for i, f in enumerate(_list(chk, obj.get("feedback"), "feedback")):
        w = f"feedback[{i}]."
        if not isinstance(f, dict):
            raise chk.fail(w[:-1], f"must be an object; got {json.dumps(f)[:40]}")
        value, negative = chk.feedback(f.get("value"), w + "value")
        explicit = chk.boolean(f.get("negative"), w + "negative")
        feedback.append({"value": value, "negative": negative if explicit is None else explicit,
                         "reason": chk.string(f.get("reason"), w + "reason")})
    return req, items, citations, feedback


def _loads(line: str, path: str, n: int) -> Any:
    from rankgate.io.jsonl import MAX_DEPTH, json_depth

    try:
        obj = json.loads(line)
        if line.count("[") + line.count("{") > MAX_DEPTH and json_depth(obj) > MAX_DEPTH:
            raise RecursionError
        return obj
    except json.JSONDecodeError as exc:
        raise InputError(f"is not valid JSON: {exc.msg} (column {exc.colno})", path=path, line=n,
                         hint="each line of a trace JSONL is one request as a JSON object") from None
    except RecursionError:
        raise InputError("is nested too deeply to be a request", path=path, line=n) from None


def read_jsonl(path: str, builder: Builder, *, label: str | None = None) -> None:
    """Read every line of ``path`` into ``builder`` (``label`` names the file in messages)."""
    from rankgate.io.source import text_lines

    name = label or path
    n = 0
    try:
        for n, line in text_lines(path):
            if not n % 1024:
                progress.advance(1024)  # (lines, as requests: per block of them)
            if not line.strip():
                continue

            def one(line: str = line, n: int = n) -> None:
                obj = _loads(line, name, n)
                builder.add(*parse_request(obj, Check(name, n)))

            builder.guard(one)
        progress.advance(n % 1024)
    except InputError as exc:
        if label is not None and exc.path == path:
            from rankgate.io.source import relabel

            raise relabel(exc, path, label) from None
        raise


def read_files(files: list[tuple[str, str]], builder: Builder, options: dict[str, Any]) -> None:
    """The reader entry of :mod:`rankgate.traces.read`: each (path, label) in order, JSONL or Parquet.

    Large files take the columnar path (:mod:`rankgate.traces.columnar`) when it can reproduce the
    row reader's result exactly; otherwise the row reader runs (and, in skip mode, skips)."""
    from rankgate.io.source import PARQUET_MAGIC, magic

    tally = progress.current()  # (requests read: a file the row reader reads after all is counted again from its start)
    for path, label in files:
        parquet = magic(path) == PARQUET_MAGIC
        counted = tally.done
        if options.get("fast", True):  # (it succeeds only when no row is unusable, so skip mode may use it)
            min_bytes = options.get("min_bytes", MIN_BYTES)
            if parquet:
                part = _parquet_fast(path, label, min_bytes, engine_items=options.get("engine_items", False),
                                     rank1=options.get("rank1", False))
            else:
                part = _jsonl_fast(path, label, min_bytes)
            if part is not None and builder.add_tables(part):
                continue
        tally.set(counted)
        if parquet:
            read_parquet(path, builder, label=label)
        else:
            read_jsonl(path, builder, label=label)


MIN_BYTES = 4 << 20  # smaller files go straight to the row reader


def _jsonl_fast(path: str, label: str, min_bytes: int) -> Any:
    """The file through pyarrow's JSON reader, batch by batch, then :func:`columnar.convert`; None
    when the file is small or the row reader must decide (see :mod:`rankgate.io.jsonl_fast` for
    the line-structure checks shared with the gold/run readers)."""
    import pyarrow as pa
    import pyarrow.json as pj

    from rankgate.io.jsonl import MAX_DEPTH
    from rankgate.io.jsonl_fast import BLOCK, SURROGATE_BYTES, _file_bytes, _line_count, _type_depth, _valid_utf8
    from rankgate.traces.columnar import RECORD_SCHEMA, convert

    data = _file_bytes(path, min_bytes)
    if data is None:
        return None
    shape = _line_count(data)
    if shape is None or not _valid_utf8(data) or SURROGATE_BYTES.search(memoryview(data)):
        return None
    lines, longest = shape
    parts = []
    row = 1
    try:
        reader = pj.open_json(pa.BufferReader(data),
                              read_options=pj.ReadOptions(block_size=max(BLOCK * 16, longest + 2), use_threads=True),
                              parse_options=pj.ParseOptions(explicit_schema=RECORD_SCHEMA,
                                                            unexpected_field_behavior="infer"))
        cache: dict[Any, str] = {}
        for batch in reader:
            if 1 + max((_type_depth(t) for t in batch.schema.types), default=0) > MAX_DEPTH:
                return None
            part = convert(pa.Table.from_batches([batch]), label, row, cache)
            if part is None:
                return None
            parts.append(part)
            row += batch.num_rows
            progress.advance(batch.num_rows)
    except (pa.ArrowException, ValueError):  # a value of another type, bad JSON…: the row reader explains
        return None
    if row - 1 != lines:
        return None
    return _concat(parts)


def _concat(parts: list[Any]) -> Any:
    import pyarrow as pa

    from rankgate.traces.model import TraceTables, empty_tables

    if not parts:
        return empty_tables()
    if len(parts) == 1:
        return parts[0]
    return TraceTables(*(pa.concat_tables([getattr(p, n) for p in parts])
                         for n in ("requests", "items", "citations", "feedback")))


def _parquet_batches(path: str, label: str) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rankgate.io.source import DAMAGED, DAMAGED_HINT, is_damaged_parquet

    try:
        pf = pq.ParquetFile(path, page_checksum_verification=True)
        yield from pf.iter_batches(batch_size=65536)
    except (pa.ArrowException, OSError) as exc:
        if is_damaged_parquet(exc):
            raise InputError(DAMAGED, path=label, hint=DAMAGED_HINT) from None
        raise InputError(f"is not a readable Parquet file ({exc})", path=label) from None


def _parquet_fast(path: str, label: str, min_bytes: int, *, engine_items: bool = False, rank1: bool = False) -> Any:
    """The Parquet file through DuckDB's reader (several times faster than pyarrow's on nested
    list<struct> columns), block by block, then :func:`columnar.convert`; None when the row reader
    must decide (a type the columnar path does not take, a file DuckDB cannot read).

    ``engine_items``: when the file's items pass :func:`rankgate.traces.native.inspect`, leave them in
    the file for a DuckDB analysis (the tables' ``item_sources``) and convert the rest only; ``rank1``:
    with each request's rank-1 scores (``ItemSource.rank1``). The one pass over the items
    (:func:`rankgate.traces.native.read_items`: decoded once, checked, kept as compact columns for the
    analysis) runs on a second thread while this one converts the request columns (DuckDB leaves Python free while
    it works, and a file of one row group is decoded by one thread): the time of the longer of the
    two, not of both. Items the checks refuse send the file through the whole conversion after all."""
    import duckdb
    import pyarrow as pa

    from rankgate.traces.columnar import convert
    from rankgate.traces.model import TraceTables

    literal = "'" + path.replace("'", "''") + "'"

    tally = progress.current()
    counted = tally.done

    def read(con: Any, columns: str) -> list[Any] | None:
        parts = []
        row = 1
        cache: dict[Any, str] = {}
        reader = con.sql(f"SELECT {columns} FROM read_parquet({literal})").to_arrow_reader(1 << 17)
        for batch in reader:
            part = convert(pa.Table.from_batches([batch]), label, row, cache)
            if part is None:
                return None
            parts.append(part)
            row += batch.num_rows
            tally.set(counted + row - 1)  # (a second pass over the file counts from the same start)
        return parts

    con = duckdb.connect()
    try:
        con.execute("SET enable_progress_bar = false")
        source = parts = fields = None
        if engine_items and path == label:  # (a temporary copy would be gone by the time of the analysis)
            from rankgate.traces import native

            fields = native.item_fields(con, path)
        if fields is None:
            parts = read(con, "*")
        else:
            import concurrent.futures

            other = con.cursor()
            try:
                other.execute("SET enable_progress_bar = false")
                with concurrent.futures.ThreadPoolExecutor(1) as pool:
                    checked = pool.submit(native.read_items, other, path, label, fields, rank1=rank1)
                    try:
                        parts = read(con, "* EXCLUDE (retrieved)")
                    except BaseException:
                        other.interrupt()
                        raise
                    source = checked.result()
            finally:
                other.close()
            if parts is not None and source is None:  # the checks refused the items: convert them too
                parts = read(con, "*")
    except duckdb.Error:
        return None
    finally:
        con.close()
    if parts is None:
        return None
    out = _concat(parts)
    if source is not None:
        out = TraceTables(out.requests, out.items, out.citations, out.feedback, item_sources=(source,))
    return out


def read_parquet(path: str, builder: Builder, *, label: str | None = None) -> None:
    """The row reader on a Parquet file of trace records (row numbers are 1-based; a timestamp
    column is read as UTC instants, a naive one as UTC)."""
    import pyarrow as pa

    name = label or path
    row = 0
    for batch in _parquet_batches(path, name):
        if "timestamp" in batch.schema.names:
            i = batch.schema.get_field_index("timestamp")
            col = batch.column(i)
            if pa.types.is_timestamp(col.type):
                col = col.cast(pa.timestamp(col.type.unit)).cast(pa.timestamp("us"), safe=False).cast(
                    pa.timestamp("us", tz="UTC"))
                batch = batch.set_column(i, "timestamp", col)
        progress.advance(batch.num_rows)
        for obj in batch.to_pylist():
            row += 1

            def one(obj: Any = obj, row: int = row) -> None:
                builder.add(*parse_request(obj, Check(name, row)))

            builder.guard(one)
