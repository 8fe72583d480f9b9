"""JSON values of an export file, with their line numbers: JSON lines, one JSON document (an object,
or an array of objects, or ``{"data": [...]}`` as REST APIs answer), or JSON documents written one
after another (the OpenTelemetry SDK's console exporter pretty-prints each span)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from rankgate.errors import InputError
from rankgate.traces.build import Builder

__all__ = ["json_values"]


def _bad(label: str, line: int, exc: json.JSONDecodeError) -> InputError:
    return InputError(f"is not valid JSON: {exc.msg} (column {exc.colno})", path=label, line=line,
                      hint="the export must be JSON lines or one JSON document")


def json_values(path: str, label: str, builder: Builder) -> Iterator[tuple[int, Any]]:
    """(line, value) of each top-level record. A line that is not JSON in a JSON-lines file is an
    error naming it (in skip mode it is counted and skipped). Arrays are unpacked into their elements."""
    from rankgate.io.source import text_lines

    it = text_lines(path)
    first: tuple[int, str] | None = None
    for n, line in it:
        if line.strip():
            first = (n, line)
            break
    if first is None:
        return
    try:
        obj = json.loads(first[1])
    except RecursionError:
        raise InputError("is nested too deeply", path=label, line=first[0]) from None
    except json.JSONDecodeError:
        yield from _documents(path, label)
        return
    yield from _unpack(first[0], obj)
    for n, line in it:
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            builder.reject(_bad(label, n, exc))
            continue
        except RecursionError:
            builder.reject(InputError("is nested too deeply", path=label, line=n))
            continue
        yield from _unpack(n, obj)


def _unpack(line: int, obj: Any) -> Iterator[tuple[int, Any]]:
    if isinstance(obj, dict) and isinstance(obj.get("data"), list) and len(obj) <= 3:
        obj = obj["data"]
    if isinstance(obj, list):
        for x in obj:
            yield line, x
    else:
        yield line, obj


def _documents(path: str, label: str) -> Iterator[tuple[int, Any]]:
    from rankgate.io.source import text_lines

    text = "".join(line for _, line in text_lines(path))
    dec = json.JSONDecoder()
    pos, line = 0, 1
    size = len(text)
    while True:
        while pos < size and text[pos] in " \t\r\n":
            if text[pos] == "\n":
                line += 1
            pos += 1
        if pos >= size:
            return
        try:
            obj, end = dec.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise _bad(label, exc.lineno, exc) from None
        except RecursionError:
            raise InputError("is nested too deeply", path=label, line=line) from None
        yield from _unpack(line, obj)
        line += text.count("\n", pos, end)
        pos = end
