"""Phoenix spans exports: the spans dataframe (``get_spans_dataframe``, ``TraceDataset.save`` Parquet,
or the same rows as JSON/JSON lines) and the REST ``/v1/projects/{id}/spans`` answer.

A row is one span: ``context.trace_id``, ``context.span_id`` (or a ``context`` object), ``parent_id``,
``name``, ``span_kind`` (the OpenInference kind: RETRIEVER, RERANKER, LLM, CHAIN…), ``start_time``,
``end_time`` (timestamps or ISO text), ``status_code``, ``status_message``, ``events``, and the
attributes as ``attributes.*`` columns (or one ``attributes`` object). Phoenix un-flattens the
semantic-convention prefixes, so ``attributes.retrieval.documents`` is a list of
``{"document.id", "document.score", "document.content", "document.metadata"}``; both that and the
flattened ``retrieval.documents.N.document.*`` keys are read. Spans join into requests by the rule
of :mod:`.spans`.
"""

from __future__ import annotations

import json
from typing import Any

from rankgate._util import progress
from rankgate.errors import InputError
from rankgate.traces.build import Builder, Check, check_end, parse_iso
from rankgate.traces.formats.jsontext import json_values
from rankgate.traces.formats.spans import Span, assemble_all, flatten_attrs

__all__ = ["phoenix_span", "read_files"]


def _rows(path: str, label: str, builder: Builder) -> Any:
    from rankgate.io.source import PARQUET_MAGIC, magic

    if magic(path) != PARQUET_MAGIC:
        for value in json_values(path, label, builder):
            progress.advance()  # (rows read: a span, an observation, a run; each far dearer to read than to count)
            yield value
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    row = 0
    try:
        pf = pq.ParquetFile(path, page_checksum_verification=True)
        for batch in pf.iter_batches(batch_size=8192):
            for i, f in enumerate(batch.schema):
                if pa.types.is_timestamp(f.type):
                    col = batch.column(i)
                    col = col.cast(pa.timestamp(f.type.unit)).cast(pa.timestamp("us"), safe=False).cast(
                        pa.timestamp("us", tz="UTC"))
                    batch = batch.set_column(i, f.name, col)
            progress.advance(batch.num_rows)
            for rec in batch.to_pylist():
                row += 1
                yield row, rec
    except (pa.ArrowException, OSError) as exc:
        from rankgate.io.source import DAMAGED, DAMAGED_HINT, is_damaged_parquet

        if is_damaged_parquet(exc):
            raise InputError(DAMAGED, path=label, hint=DAMAGED_HINT) from None
        raise InputError(f"is not a readable Parquet file ({exc})", path=label) from None


def _time(chk: Check, v: Any, field: str) -> int | None:
    if v is None:
        return None
    return parse_iso(v, chk.path, chk.line, field)


def phoenix_span(rec: Any, chk: Check) -> Span:
    from rankgate.traces.formats.otlp import _hex_id

    if not isinstance(rec, dict):
        raise chk.fail(None, f"must be a span object; got {type(rec).__name__}")
    attrs_obj = rec.get("attributes")
    flat = flatten_attrs({k: v for k, v in rec.items() if k != "attributes"})
    attrs = {k[11:]: v for k, v in flat.items() if k.startswith("attributes.") and v is not None}
    if isinstance(attrs_obj, dict):
        attrs.update({k: v for k, v in flatten_attrs(attrs_obj).items() if v is not None})
    kind = rec.get("span_kind")
    if isinstance(kind, str) and kind and "openinference.span.kind" not in attrs:
        attrs["openinference.span.kind"] = kind.upper()
    events_raw = rec.get("events")
    if isinstance(events_raw, str):
        try:
            events_raw = json.loads(events_raw) if events_raw.strip() else []
        except json.JSONDecodeError:
            raise chk.fail("events", "is not valid JSON") from None
    events = [(str(e.get("name") or ""), e.get("attributes") or {}) for e in events_raw or [] if isinstance(e, dict)]
    status = str(rec.get("status_code") or "UNSET").upper().replace("STATUS_CODE_", "")
    start = _time(chk, flat.get("start_time"), "start_time")
    if start is None:
        raise chk.fail("start_time", "is missing")
    span = Span(
        trace_id=_hex_id(chk, flat.get("context.trace_id"), "context.trace_id", 32, required=True),  # type: ignore[arg-type]
        span_id=_hex_id(chk, flat.get("context.span_id"), "context.span_id", 16, required=True),  # type: ignore[arg-type]
        parent_id=_hex_id(chk, rec.get("parent_id"), "parent_id", 16, required=False),
        name=str(rec.get("name") or ""), kind="UNSPECIFIED", start_us=start,
        end_us=_time(chk, flat.get("end_time"), "end_time"), status=status,
        status_message=rec.get("status_message") or None, attrs=attrs, events=events,
        path=chk.path, line=chk.line,
    )
    check_end(chk, span.start_us, span.end_us, "start_time", "end_time")
    return span


def read_files(files: list[tuple[str, str]], builder: Builder, options: dict[str, Any]) -> None:
    spans: list[Span] = []
    for path, label in files:
        for n, rec in _rows(path, label, builder):
            try:
                spans.append(phoenix_span(rec, Check(label, n)))
            except InputError as exc:
                builder.reject(exc)
    assemble_all(spans, builder, options, "context.span_id")
