"""The files of ``rankgate judge``: the pooling queue in, relevance labels out and back in.

Queue (written by ``rankgate pool``): JSON lines, each ``{"query_id", "query", "id", "text", ...}``
(other fields are kept out of the way). Labels: JSON lines ``{"query_id", "id", "grade"}`` with
``grade`` 2/1/0; a failed judge call is ``{"query_id", "id", "grade": null, "judge_error": "..."}``
(never a guessed grade; ``error`` is read as a synonym). Human labels for calibration use the same shape (``judge_error`` absent).
Beside the labels, ``<name>.judge.json`` records who labelled them (the judge's identity, coverage,
repeat variance, tokens used), which calibration copies into its output.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rankgate.errors import InputError

__all__ = ["QueueItem", "read_labels", "read_queue", "sidecar_path"]


@dataclass(frozen=True)
class QueueItem:
    query_id: str
    query: str
    id: str
    text: str
    line: int


def _objects(path: str, what: str, shape: str) -> Iterator[tuple[int, dict[str, Any]]]:
    from rankgate.io.jsonl import json_objects

    return json_objects(path, what, shape)

def _text(path: str, line: int, obj: dict[str, Any], key: str, *, allow_int: bool = False,
          allow_empty: bool = False) -> str:
    value = obj.get(key)
    if allow_int and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or (not allow_empty and not value):
        got = "missing" if key not in obj else f"got {json.dumps(value)[:60]}"
        raise InputError(f"must be a {'' if allow_empty else 'non-empty '}string; {got}", path=path, line=line,
                         field=key)
    return value


def read_queue(path: str) -> list[QueueItem]:
    """The pooling queue, in file order; a repeated (query_id, id) is an input error."""
    shape = "{query_id, query, id, text}"
    out: list[QueueItem] = []
    seen: dict[tuple[str, str], int] = {}
    for line, obj in _objects(path, "queue", shape):
        q = _text(path, line, obj, "query_id", allow_int=True)
        d = _text(path, line, obj, "id", allow_int=True)
        query = _text(path, line, obj, "query")
        text = _text(path, line, obj, "text", allow_empty=True)
        if (q, d) in seen:
            raise InputError(f"item ({q!r}, {d!r}) again (first at line {seen[(q, d)]})", path=path, line=line,
                             hint="each queue item once; rankgate pool writes it so")
        seen[(q, d)] = line
        out.append(QueueItem(q, query, d, text, line))
    return out


def read_labels(path: str) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], str]]:
    """Grades by (query_id, id), and the judge errors by (query_id, id), of a labels file."""
    shape = "{query_id, id, grade}"
    grades: dict[tuple[str, str], int] = {}
    errors: dict[tuple[str, str], str] = {}
    seen: dict[tuple[str, str], int] = {}
    for line, obj in _objects(path, "labels", shape):
        key = (_text(path, line, obj, "query_id", allow_int=True), _text(path, line, obj, "id", allow_int=True))
        if key in seen:
            raise InputError(f"labels ({key[0]!r}, {key[1]!r}) again (first at line {seen[key]})", path=path,
                             line=line)
        seen[key] = line
        grade = obj.get("grade")
        failure = obj.get("judge_error", obj.get("error"))
        if grade is None and isinstance(failure, str):
            errors[key] = failure
            continue
        if isinstance(grade, bool) or not isinstance(grade, int) or grade not in (0, 1, 2):
            raise InputError(f"must be 0, 1 or 2; got {json.dumps(grade)}", path=path, line=line, field="grade")
        grades[key] = grade
    return grades, errors


def sidecar_path(labels_path: str) -> str:
    """``labels.jsonl`` -> ``labels.judge.json`` (beside it)."""
    base, ext = os.path.splitext(labels_path)
    return (base if ext in (".jsonl", ".json", ".ndjson") else labels_path) + ".judge.json"


def file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
