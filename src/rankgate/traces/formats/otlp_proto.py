"""Binary OTLP: protobuf-encoded ``ExportTraceServiceRequest`` messages, recognised by content.

Two layouts are read:

* **one message**: the whole file is one serialized request (an OTLP/HTTP ``application/x-protobuf``
  body, or ``TracesData``, which has the same encoding);
* **length-prefixed messages**: the OpenTelemetry Collector's ``file`` exporter with ``format: proto``
  writes each message after its length as a 4-byte big-endian unsigned integer.

gzip is decompressed (:mod:`rankgate.io.source`); zstd is not read but named: a file compressed
whole is refused by :func:`~rankgate.io.source.open_binary` ("decompress it first"), and the file
exporter's ``compression: zstd``, each message compressed after its length, here. The framing is
checked before anything is parsed: a length beyond what the file holds, or beyond
:data:`MAX_MESSAGE_BYTES`, is an error naming the message, not an allocation; a length too short for
its message is named, with its offset, when the message does not parse. Messages are parsed with
``opentelemetry-proto`` (the ``otlp`` extra: ``pip install 'rankgate[otlp]'``), imported only when
such a file is read, and handed to the OTLP/JSON reader in protobuf's JSON mapping (ids in base64,
int64 as text), so both encodings give the same requests; the parsed message is dropped once mapped,
and the reader drops each span of the mapping once read. In messages, the "line" of an error is the
message's number (1 for a one-message file).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rankgate.errors import InputError
from rankgate.traces.build import Builder

__all__ = ["MAX_MESSAGE_BYTES", "is_otlp_proto", "proto_messages"]

MAX_MESSAGE_BYTES = 64 * 1024 * 1024  # one message; the collector's own receivers default to less
_PREFIX = 4
_RESOURCE_SPANS_TAG = 0x0A  # field 1 (resource_spans), length-delimited
_RESOURCE_SPANS_FIELDS = (0x0A, 0x12, 0x1A)  # resource, scope_spans, schema_url: length-delimited


def _varint(buf: bytes, pos: int) -> tuple[int, int] | None:
    value = shift = 0
    while pos < len(buf) and shift < 64:
        b = buf[pos]
        value |= (b & 0x7F) << shift
        pos += 1
        if not b & 0x80:
            return value, pos
        shift += 7
    return None


def _starts_request(buf: bytes, total: int) -> bool:
    """``buf`` (the first bytes of a message of ``total`` bytes) opens an ExportTraceServiceRequest:
    a resource_spans field whose length fits, holding a known field whose length fits in turn."""
    if not buf or buf[0] != _RESOURCE_SPANS_TAG:
        return False
    got = _varint(buf, 1)
    if got is None:
        return False
    n, pos = got
    if n == 0:
        return pos <= total
    if pos + n > total or pos >= len(buf) or buf[pos] not in _RESOURCE_SPANS_FIELDS:
        return False
    inner = _varint(buf, pos + 1)
    return inner is not None and inner[1] + inner[0] <= pos + n


def _layout(head: bytes, size: int | None) -> str | None:
    """``"framed"``, ``"single"`` or None (not binary OTLP) from the first bytes of the content."""
    if head[:1] in (b"{", b"[", b" ", b"\t", b"\r") or head[:3] == b"\xef\xbb\xbf" or head[:4] == b"PAR1":
        return None  # JSON, a byte-order mark, Parquet
    if len(head) > _PREFIX and head[0] != _RESOURCE_SPANS_TAG:
        n = int.from_bytes(head[:_PREFIX], "big")
        if 0 < n and _starts_request(head[_PREFIX:], n):
            return "framed"
        # a first length too short for the request after it (its first byte, under the cap, is a control
        # byte, so never text): framed still, and the reader names the message and the sizes
        if 0 < n <= MAX_MESSAGE_BYTES and _starts_request(head[_PREFIX:], (size or len(head)) - _PREFIX):
            return "framed"
    if _starts_request(head, size if size is not None else len(head)):
        return "single"
    return None


def _head(path: str) -> tuple[bytes, int]:
    """The first 64 KiB of the (decompressed) content, and its size when that is all (else a bound
    no message length reaches)."""
    from rankgate.io.source import open_binary

    with open_binary(path) as fh:
        head = fh.read(1 << 16)
        more = fh.read(1)
    return head, (1 << 62) if more else len(head)


def _cut_single(head: bytes, size: int) -> int | None:
    """The length a single request declares when the content opens like one but holds fewer bytes
    (a file cut short), else None. Text never qualifies: it must hold a byte that text does not."""
    if not head or head[0] != _RESOURCE_SPANS_TAG or size >= 1 << 62:
        return None
    got = _varint(head, 1)
    if got is None or got[0] + got[1] <= size or got[1] >= len(head) or head[got[1]] not in _RESOURCE_SPANS_FIELDS:
        return None
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return got[0] + got[1]
    binary = any(not c.isprintable() and c not in "\t\r\n" for c in text)
    return got[0] + got[1] if binary else None


def is_otlp_proto(path: str, label: str | None = None) -> bool:
    """Whether the (decompressed) content is binary OTLP in one of the two layouts. Text never is:
    JSON starts with ``{``, ``[`` or whitespace, and a leading newline is not followed by a valid
    message header. Content that opens like one binary request but was cut short is an InputError
    naming the sizes (not "not UTF-8 text", which is what a text reader would say of it)."""
    from rankgate.io.source import ZSTD_MAGIC

    head, size = _head(path)
    first = int.from_bytes(head[:_PREFIX], "big")
    if head[_PREFIX:2 * _PREFIX] == ZSTD_MAGIC and 0 < first <= MAX_MESSAGE_BYTES:
        raise InputError("holds zstd-compressed messages, each after a 4-byte length (the collector file "
                         "exporter's compression: zstd); rankgate does not read them", path=label or path,
                         hint="turn the file exporter's compression off; gzip the files afterwards if size "
                              "matters, which rankgate reads")
    if _layout(head, size) is not None:
        return True
    declared = _cut_single(head, size)
    if declared is not None:
        raise InputError(f"looks like one binary OTLP message (protobuf) of {declared:,} bytes, but the file holds "
                         f"{size:,}", path=label or path, hint="the file was cut short; copy or export it again")
    return False


_OVERRUN_FIELDS = 1 << 16  # top-level fields looked at, at most (a request has one per resource)


def _cut_varint(buf: bytes, pos: int) -> bool:
    """Whether the varint at ``pos`` is cut by the end of ``buf`` (not over-long)."""
    return all(b & 0x80 for b in buf[pos:pos + 10]) and len(buf) - pos < 10


def _overrun(body: bytes) -> tuple[int, int | None] | None:
    """(offset, end or None when a varint is cut) of the first top-level field of ``body`` that does
    not end within it: what a message whose length prefix is too short shows. None when the fields
    end within it, a field has no known wire type, or after :data:`_OVERRUN_FIELDS` fields."""
    pos, size = 0, len(body)
    for _ in range(_OVERRUN_FIELDS):
        if pos >= size:
            return None
        start = pos
        key = _varint(body, pos)
        if key is None:
            return (start, None) if _cut_varint(body, pos) else None
        wire, pos = key[0] & 7, key[1]
        if wire in (0, 2):
            got = _varint(body, pos)
            if got is None:
                return (start, None) if _cut_varint(body, pos) else None
            pos = got[1] + (got[0] if wire == 2 else 0)
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            return None  # groups (3, 4) or no wire type: not a matter of length
        if pos > size:
            return start, pos
    return None


def _read_exact(fh: Any, n: int) -> bytes:
    chunks, left = [], n
    while left:
        b = fh.read(min(left, 1 << 20))
        if not b:
            break
        chunks.append(b)
        left -= len(b)
    return b"".join(chunks)


def _raw_messages(path: str, label: str, builder: Builder) -> Iterator[tuple[int, int | None, bytes]]:
    """(number, byte offset of its length or None for a one-message file, bytes) of each message. A
    framing error ends the file: an error, or in skip mode one counted skip."""
    from rankgate.io.source import open_binary

    layout = _layout(*_head(path))
    with open_binary(path) as fh:
        if layout == "single":
            body = fh.read(MAX_MESSAGE_BYTES + 1)
            if len(body) > MAX_MESSAGE_BYTES:
                raise InputError(f"is one OTLP protobuf message larger than {MAX_MESSAGE_BYTES >> 20} MiB",
                                 path=label, line=1, hint="split the export, or use the collector's file "
                                                          "exporter, which writes one message per batch")
            yield 1, None, body
            return
        n = offset = 0
        while True:
            prefix = fh.read(_PREFIX)
            if not prefix:
                return
            n += 1
            if len(prefix) < _PREFIX:
                builder.reject(InputError(f"ends inside the length of message {n} ({len(prefix)} of 4 bytes)", path=label,
                                 line=n, hint="the file was cut short; copy or export it again"))
                return
            size_n = int.from_bytes(prefix, "big")
            if size_n > MAX_MESSAGE_BYTES:
                hint = "this is not a collector proto file, or it is damaged"
                if n > 1 and prefix[0] == _RESOURCE_SPANS_TAG:
                    hint = (f"the bytes at {offset:,} open a resource_spans field, as if they continued "
                            f"message {n - 1}: its length is likely too short; the file is damaged")
                builder.reject(InputError(f"message {n} declares {size_n:,} bytes, over the cap of "
                                 f"{MAX_MESSAGE_BYTES >> 20} MiB per message", path=label, line=n, hint=hint))
                return
            body = _read_exact(fh, size_n)
            if len(body) < size_n:
                builder.reject(InputError(f"message {n} declares {size_n:,} bytes but only {len(body):,} remain",
                                          path=label, line=n, hint="the file was cut short; copy or export it again"))
                return
            yield n, offset, body
            offset += _PREFIX + size_n


def _parser() -> Any:
    try:
        from google.protobuf.json_format import MessageToDict
        from google.protobuf.message import DecodeError
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    except ImportError:
        return None
    return ExportTraceServiceRequest, MessageToDict, DecodeError


def proto_messages(path: str, label: str, builder: Builder) -> Iterator[tuple[int, dict[str, Any]]]:
    """(message number, the request in protobuf's JSON mapping) of each message of a binary OTLP file;
    a message that does not parse is an error (in skip mode, counted and skipped). The framing is
    checked before the parser is imported."""
    parser = None
    for n, offset, body in _raw_messages(path, label, builder):
        if parser is None:
            parser = _parser()
            if parser is None:
                raise InputError("is binary OTLP (protobuf), which needs the opentelemetry-proto package",
                                 path=label, hint="pip install 'rankgate[otlp]', or export OTLP/JSON")
        request, to_dict, decode_error = parser
        msg = request()
        try:
            msg.ParseFromString(body)
            obj = to_dict(msg)
        except (decode_error, RecursionError, ValueError) as exc:
            over = _overrun(body) if offset is not None else None
            if over is not None:  # the length before the message is too short: the framing is lost
                runs = f"to byte {over[1]:,} of it at least" if over[1] is not None else "past them"
                builder.reject(InputError(
                    f"message {n} runs past its length: the length at byte {offset:,} says {len(body):,} "
                    f"bytes, but the message runs {runs}", path=label, line=n,
                    hint="the length is too short: the file is damaged, or was not written with a 4-byte "
                         "big-endian length before each message, as the collector's file exporter writes "
                         "format: proto"))
                return
            builder.reject(InputError(f"message {n} is not a valid OTLP protobuf ExportTraceServiceRequest "
                                      f"({str(exc)[:80]})", path=label, line=n,
                                      hint="the file is damaged or not binary OTLP traces"))
            continue
        del msg  # the parsed message (about 4x its bytes) is not kept while its spans are read
        yield n, obj
