"""OTLP/JSON traces, and the OpenTelemetry Python SDK's ``span.to_json()`` look-alike.

**OTLP/JSON** (the collector's file exporter writes one ``ExportTraceServiceRequest`` per line):
``resourceSpans[] -> {resource.attributes[], scopeSpans[] -> {spans[]}}``; a span has ``traceId``,
``spanId``, ``parentSpanId`` (hex, any case; or base64, as exporters that use protobuf's JSON mapping
write bytes), ``name``, ``kind`` (1-5 or ``SPAN_KIND_*``),
``startTimeUnixNano``/``endTimeUnixNano`` (int64 as a string or a number), ``attributes[]`` of
``{key, value: AnyValue}``, ``events[]``, ``status {code, message}``. Phoenix's snake_case variant
(``resource_spans``, ``span_id``, ``string_value``, ``STATUS_CODE_ERROR``…) reads the same. Unknown
fields are ignored, as the OTLP specification asks.

**SDK look-alike**: one span object per record with ``context {trace_id, span_id}`` (``0x`` hex),
``parent_id``, ``kind: "SpanKind.SERVER"``, ISO ``start_time``/``end_time``, a flat ``attributes``
object, ``status {status_code, description}``, ``events [{name, timestamp, attributes}]`` and
``resource {attributes}``. Records may be JSON lines or pretty-printed documents one after another
(the console exporter's output).

**Binary OTLP** (protobuf: one serialized request, or the collector file exporter's ``format:
proto``) is recognised by content and read through :mod:`.otlp_proto` into the same JSON mapping.

Spans become requests by the join rule of :mod:`.spans`.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from rankgate._util import progress
from rankgate.errors import InputError
from rankgate.traces.build import Builder, Check, check_end, parse_iso
from rankgate.traces.formats.jsontext import json_values
from rankgate.traces.formats.spans import Span, assemble_all

__all__ = ["read_files", "read_sdk_files"]

_KINDS = {0: "UNSPECIFIED", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}
_STATUS = {0: "UNSET", 1: "OK", 2: "ERROR"}
_HEX = re.compile(r"[0-9a-fA-F]+")
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]+")


@functools.cache
def _snake(key: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", key).lower()


def _g(obj: dict[str, Any], key: str) -> Any:
    """``obj[key]`` by its lowerCamelCase or snake_case name."""
    v = obj.get(key)
    if v is None:
        v = obj.get(_snake(key))
    return v


def any_value(chk: Check, v: Any, field: str) -> Any:
    """An OTLP AnyValue as a Python value (int64 from text or number; arrays and kvlists nested)."""
    if not isinstance(v, dict):
        raise chk.fail(field, f"must be an AnyValue object; got {json.dumps(v)[:40]}")
    for key, conv in (("stringValue", None), ("boolValue", None), ("intValue", "int"), ("doubleValue", "float"),
                      ("arrayValue", "array"), ("kvlistValue", "kvlist"), ("bytesValue", None)):
        x = _g(v, key)
        if x is None:
            continue
        if conv == "int":
            return chk.integer(x, field, low=-(2**63), strings=True)
        if conv == "float":
            return chk.number(x, field, strings=True)
        if conv == "array":
            return [any_value(chk, e, field) for e in (_g(x, "values") or [])]
        if conv == "kvlist":
            return {_key(chk, kv, field): any_value(chk, kv.get("value", {}), field) for kv in (_g(x, "values") or [])}
        return x
    return None


def _key(chk: Check, kv: Any, field: str) -> str:
    if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
        raise chk.fail(field, "must be a list of {key, value}")
    return kv["key"]


def _attrs(chk: Check, raw: Any, field: str) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise chk.fail(field, "must be a list of {key, value}")
    return {_key(chk, kv, field): any_value(chk, kv.get("value", {}), f"{field}.{kv['key']}") for kv in raw}


_URLSAFE = str.maketrans("-_", "+/")
_ID_NAMES = {16: "span id", 32: "trace id"}


def _base64_id(v: str, n_bytes: int) -> str | None:
    """The hex of an id written in base64, as protobuf's JSON mapping writes bytes (standard or URL-safe
    alphabet, padded or not), when ``v`` is the canonical base64 of exactly ``n_bytes``; else None.
    Only the length decides that ``v`` is base64 (12 or 11 characters for a span id, 24 or 22 for a
    trace id, where hex ids have 16 and 32): any characters may appear, hex digits alone included."""
    import binascii

    unpadded = (4 * n_bytes + 2) // 3
    padded = -(-n_bytes // 3) * 4
    if len(v) == padded and v[unpadded:] == "=" * (padded - unpadded):
        v = v[:unpadded]
    if len(v) != unpadded or not _BASE64.fullmatch(v):
        return None
    std = v.translate(_URLSAFE)
    raw = binascii.a2b_base64(std + "=" * (padded - unpadded))
    # canonical only: the bits past the last byte are zero, so each id has one spelling (a changed
    # last character is a damaged id, not the same one)
    if len(raw) != n_bytes or binascii.b2a_base64(raw, newline=False)[:unpadded] != std.encode():
        return None
    return raw.hex()


def _hex_id(chk: Check, v: Any, field: str, length: int, *, required: bool,
            binary: bool = False) -> str | None:
    """An id as lower-case hex: ``length`` hex digits (``0x`` allowed), or base64 of ``length // 2``
    bytes, told apart by their length. ``binary``: ``v`` is the base64 protobuf's JSON mapping made of
    the bytes of a binary OTLP message, so a wrong size is named in bytes. An all-zero id is no id
    (OpenTelemetry's invalid id): None where the id is optional, an error where it is required."""
    if v is None or v == "":
        if required:
            raise chk.fail(field, "is missing")
        return None
    if not isinstance(v, str):
        raise chk.fail(field, f"must be a hex string; got {json.dumps(v)[:40]}")
    n_bytes = length // 2
    s = v[2:] if len(v) == length + 2 and v[:2] in ("0x", "0X") else v
    if len(s) == length and _HEX.fullmatch(s):
        s = s.lower()
    else:
        got = None if len(s) == length else _base64_id(v, n_bytes)
        if got is None:
            raise _bad_id(chk, v, field, length, binary)
        s = got
    if s.count("0") == length:
        if not required:
            return None
        shown = s if binary else v[:40]  # a binary id as its hex, not the base64 the reader made of it
        what = _ID_NAMES.get(length, "id")
        raise chk.fail(field, f"is all zeros ({shown!r}): OpenTelemetry's invalid {what}, which no exported "
                              "span has",
                       hint="the exporter or the export is damaged; export the spans again")
    return s


def _bad_id(chk: Check, v: str, field: str, length: int, binary: bool) -> InputError:
    import base64
    import binascii

    n_bytes = length // 2
    what = _ID_NAMES.get(length, "id")
    if binary:  # the reader's own base64 of the id's bytes
        try:
            size: int | None = len(base64.b64decode(v, validate=True))
        except (binascii.Error, ValueError):
            size = None
        if size is not None:
            return chk.fail(field, f"is {size} bytes; a {what} is {n_bytes} bytes",
                            hint="in binary OTLP a trace id is 16 bytes and a span id 8: the exporter or the "
                                 "export is damaged")
    unpadded = (4 * n_bytes + 2) // 3
    padded = -(-n_bytes // 3) * 4
    if len(v) == length or (len(v) == length + 2 and v[:2] in ("0x", "0X")):
        why = f"{len(v)} characters, not all hex digits"
    elif len(v) in (padded, unpadded):
        why = f"{len(v)} characters, not the base64 of {n_bytes} bytes"
    else:
        why = f"{len(v)} characters"
    return chk.fail(field, f"must be {length} hex digits or the base64 of {n_bytes} bytes ({padded} "
                           f"characters, {unpadded} without padding); got {v[:40]!r} ({why})",
                    hint="OTLP/JSON ids are hex; exporters that use protobuf's JSON mapping write base64")


def _nanos(chk: Check, v: Any, field: str, *, required: bool) -> int | None:
    n = chk.integer(v, field, low=0, strings=True)
    if n is None:
        if required:
            raise chk.fail(field, "is missing")
        return None
    return n // 1000


def _enum(v: Any, table: dict[int, str], prefix: str) -> str:
    if isinstance(v, int) and not isinstance(v, bool):
        return table.get(v, "UNSET" if table is _STATUS else "UNSPECIFIED")
    if isinstance(v, str):
        s = v.upper()
        for p in (prefix, "SPANKIND.", "STATUSCODE."):
            s = s.removeprefix(p)
        return s
    return "UNSET" if table is _STATUS else "UNSPECIFIED"


def _events(chk: Check, raw: Any, flat: bool) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for e in raw or []:
        if not isinstance(e, dict):
            raise chk.fail("events", "must be a list of objects")
        attrs = e.get("attributes") or {}
        out.append((str(e.get("name") or ""), attrs if flat else _attrs(chk, attrs, "events.attributes")))
    return out


def otlp_spans(obj: Any, chk: Check, *, binary: bool = False) -> list[Span]:
    """The spans of one ExportTraceServiceRequest. ``binary``: ``obj`` is a binary OTLP message in
    protobuf's JSON mapping (:mod:`.otlp_proto`), made for this call alone: its ids are named in
    bytes, and each span object is dropped from ``obj`` once read (a message of a million spans is
    not held twice)."""
    if not isinstance(obj, dict):
        raise chk.fail(None, f"must be an ExportTraceServiceRequest object; got {type(obj).__name__}")
    out = []
    rs_list = _g(obj, "resourceSpans")
    if not isinstance(rs_list, list):
        raise chk.fail("resourceSpans", "is missing or not a list", hint="one ExportTraceServiceRequest per line")
    for rs in rs_list:
        resource = _attrs(chk, (_g(rs, "resource") or {}).get("attributes"), "resource.attributes")
        for ss in _g(rs, "scopeSpans") or _g(rs, "instrumentationLibrarySpans") or []:
            sps = _g(ss, "spans") or []
            scope = (_g(ss, "scope") or _g(ss, "instrumentationLibrary") or {}) if isinstance(ss, dict) else {}
            scope_name = str(scope.get("name") or "") if isinstance(scope, dict) else ""
            for i, sp in enumerate(sps):
                if binary:
                    sps[i] = None
                if not isinstance(sp, dict):
                    raise chk.fail("spans", "must be a list of span objects")
                st = _g(sp, "status") or {}
                span = Span(
                    trace_id=_hex_id(chk, _g(sp, "traceId"), "traceId", 32,  # type: ignore[arg-type]
                                     required=True, binary=binary),
                    span_id=_hex_id(chk, _g(sp, "spanId"), "spanId", 16,  # type: ignore[arg-type]
                                    required=True, binary=binary),
                    parent_id=_hex_id(chk, _g(sp, "parentSpanId"), "parentSpanId", 16, required=False,
                                      binary=binary),
                    name=str(sp.get("name") or ""),
                    kind=_enum(sp.get("kind"), _KINDS, "SPAN_KIND_"),
                    start_us=_nanos(chk, _g(sp, "startTimeUnixNano"), "startTimeUnixNano", required=True),  # type: ignore[arg-type]
                    end_us=_nanos(chk, _g(sp, "endTimeUnixNano"), "endTimeUnixNano", required=False),
                    status=_enum(st.get("code"), _STATUS, "STATUS_CODE_"),
                    status_message=st.get("message") if isinstance(st.get("message"), str) else None,
                    attrs=_attrs(chk, sp.get("attributes"), "attributes"),
                    events=_events(chk, sp.get("events"), False),
                    resource=resource, path=chk.path, line=chk.line, scope=scope_name,
                )
                check_end(chk, span.start_us, span.end_us, "startTimeUnixNano", "endTimeUnixNano")
                out.append(span)
    return out


def sdk_span(obj: Any, chk: Check) -> Span:
    """One span of the Python SDK's ``to_json()``."""
    if not isinstance(obj, dict) or not isinstance(obj.get("context"), dict):
        raise chk.fail("context", "is missing", hint="an OpenTelemetry SDK span has context.trace_id/span_id")
    ctx = obj["context"]
    st = obj.get("status") or {}
    attrs = obj.get("attributes") or {}
    if not isinstance(attrs, dict):
        raise chk.fail("attributes", "must be an object")
    end = obj.get("end_time")
    span = Span(
        trace_id=_hex_id(chk, ctx.get("trace_id"), "context.trace_id", 32, required=True),  # type: ignore[arg-type]
        span_id=_hex_id(chk, ctx.get("span_id"), "context.span_id", 16, required=True),  # type: ignore[arg-type]
        parent_id=_hex_id(chk, obj.get("parent_id"), "parent_id", 16, required=False),
        name=str(obj.get("name") or ""), kind=_enum(obj.get("kind"), _KINDS, "SPAN_KIND_"),
        start_us=parse_iso(obj.get("start_time"), chk.path, chk.line, "start_time"),
        end_us=None if end is None else parse_iso(end, chk.path, chk.line, "end_time"),
        status=_enum(st.get("status_code"), _STATUS, "STATUS_CODE_"),
        status_message=st.get("description") if isinstance(st.get("description"), str) else None,
        attrs=dict(attrs), events=_events(chk, obj.get("events"), True),
        resource=dict((obj.get("resource") or {}).get("attributes") or {}), path=chk.path, line=chk.line,
    )
    check_end(chk, span.start_us, span.end_us, "start_time", "end_time")
    return span


def _read(files: list[tuple[str, str]], builder: Builder, options: dict[str, Any], parse: Any,
          id_field: str) -> None:
    spans: list[Span] = []
    for path, label in files:
        values = json_values(path, label, builder)
        binary = False
        if parse is otlp_spans:
            from rankgate.traces.formats.otlp_proto import is_otlp_proto, proto_messages

            if is_otlp_proto(path, label):
                values, binary = proto_messages(path, label, builder), True
        for n, obj in values:
            try:
                got = otlp_spans(obj, Check(label, n), binary=True) if binary else parse(obj, Check(label, n))
            except InputError as exc:
                builder.reject(exc)
                continue
            spans.extend(got if isinstance(got, list) else [got])
            progress.advance(len(got) if isinstance(got, list) else 1)  # (per message: its spans)
        obj = got = None  # the last message is not kept while the spans are joined
    assemble_all(spans, builder, options, id_field)


def read_files(files: list[tuple[str, str]], builder: Builder, options: dict[str, Any]) -> None:
    _read(files, builder, options, otlp_spans, "spanId")


def read_sdk_files(files: list[tuple[str, str]], builder: Builder, options: dict[str, Any]) -> None:
    _read(files, builder, options, sdk_span, "context.span_id")
