"""Every queue rankgate writes, read into one kind of item a person labels.

=================  ====================================================  ==========================================
shape              a line holds                                          written by
=================  ====================================================  ==========================================
``pool``           ``{query_id, query, id, text, runs, best_rank}``      ``rankgate pool``
``judge_queue``    ``{query_id, query, id, text}``                       the input of ``rankgate judge relevance``
``gold_sample``    ``{query_id, query, relevant_chunks: [{chunk_id,      ``rankgate gold sample``, ``traces sample``
                   grade: null, text?...}], sample_reason, tags...}``    (one item per chunk)
``answers``        ``{query_id, question|query, answer, contexts,        ``rankgate answers``' input (rankgate's own
                   reference?}``                                         shape): one verdict card per answer
=================  ====================================================  ==========================================

The first line decides the shape; every other line must have it (a file mixing shapes names the first line that
does not). A line may carry ``stratum`` (the progress bar counts per stratum; a gold sample's stratum is its
``sample_reason``), ``segment`` (else ``intent``, else the ``tags``) and ``why`` (why it was sampled; else said from
``sample_reason`` or the pool's ranks). ``(query_id, id)`` is an item's identity: a repeat is an input error naming
both lines, as ``rankgate judge relevance`` says it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from rankgate.errors import InputError

__all__ = ["SHAPES", "Queue", "QueueItem", "read_queue"]

SHAPES = ("pool", "judge_queue", "gold_sample", "answers")
#: What each shape is, for messages.
EXPECTED = ("{query_id, query, id, text} (rankgate pool, judge relevance's input), "
            "{query_id, query, relevant_chunks} (rankgate gold sample) or "
            "{query_id, question, answer, contexts} (answers to verdict)")
_REASONS = {"negative_feedback": "a user marked the answer bad", "fallback": "the app fell back",
            "low_confidence": "the top score was under the abstention threshold"}


@dataclass(frozen=True)
class QueueItem:
    """One thing a person labels: a chunk for a query (relevance), or an answer (verdicts)."""

    query_id: str
    item_id: str                              # "" for an answer
    kind: str                                 # "relevance" or "answer"
    source: str                               # the queue's shape, or "browse"
    stratum: str = ""
    payload: Mapping[str, Any] = field(default_factory=dict)  # query, text, segment, why, answer, contexts, …
    line: int | None = None


@dataclass(frozen=True)
class Queue:
    path: str
    sha256: str
    shape: str
    kind: str
    items: tuple[QueueItem, ...]


def _shape_of(obj: Mapping[str, Any]) -> str | None:
    if "query_id" not in obj:
        return None
    if isinstance(obj.get("relevant_chunks"), list):
        return "gold_sample"
    if "answer" in obj and ("question" in obj or "query" in obj):
        return "answers"
    if "id" in obj and "text" in obj:
        return "pool" if ("runs" in obj or "best_rank" in obj) else "judge_queue"
    return None


def _kind(shape: str) -> str:
    return "answer" if shape == "answers" else "relevance"


def _id(path: str, line: int, obj: Mapping[str, Any], key: str) -> str:
    value = obj.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value:
        got = "missing" if key not in obj else f"got {json.dumps(value)[:60]}"
        raise InputError(f"must be a non-empty string; {got}", path=path, line=line, field=key)
    return value


def _text(path: str, line: int, obj: Mapping[str, Any], key: str, *, required: bool = False) -> str | None:
    value = obj.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        got = "missing" if key not in obj else f"got {json.dumps(value)[:60]}"
        raise InputError(f"must be a string; {got}", path=path, line=line, field=key)
    return value


def _segment(obj: Mapping[str, Any]) -> str:
    for key in ("segment", "intent"):
        if isinstance(obj.get(key), (str, int)) and not isinstance(obj.get(key), bool):
            return str(obj[key])
    for key in ("segment", "tags"):  # (judge recalibrate writes the strata's fields as a segment object)
        tags = obj.get(key)
        if isinstance(tags, dict):
            return ", ".join(f"{k}={v}" for k, v in tags.items() if isinstance(v, (str, int, float)))
    return ""


def _stratum(obj: Mapping[str, Any], default: str = "") -> str:
    value = obj.get("stratum")
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return str(value)
    return default


def _why(obj: Mapping[str, Any], default: str) -> str:
    value = obj.get("why")
    return value if isinstance(value, str) else default


def _items(path: str, shape: str, line: int, obj: Mapping[str, Any]) -> Iterator[QueueItem]:
    q = _id(path, line, obj, "query_id")
    base = {"segment": _segment(obj)}
    if shape in ("pool", "judge_queue"):
        d = _id(path, line, obj, "id")
        text = _text(path, line, obj, "text", required=True)
        query = _text(path, line, obj, "query") or ""
        why = ""
        if shape == "pool":
            runs = obj.get("runs") if isinstance(obj.get("runs"), list) else []
            rank = obj.get("best_rank")
            why = "not in the gold set; retrieved" + (f" at rank {rank}" if isinstance(rank, int) else "") + \
                  (f" by {', '.join(str(r) for r in runs)}" if runs else "")
        yield QueueItem(q, d, "relevance", shape, _stratum(obj),
                        {**base, "query": query, "text": text, "why": _why(obj, why)}, line)
        return
    if shape == "gold_sample":
        query = _text(path, line, obj, "query") or ""
        reason: str = obj["sample_reason"] if isinstance(obj.get("sample_reason"), str) else ""
        why = _REASONS.get(reason, reason)
        if isinstance(obj.get("observed"), str):
            why += f" ({obj['observed'][:10]})" if why else obj["observed"][:10]
        record = {k: v for k, v in obj.items() if k != "relevant_chunks"}
        for i, chunk in enumerate(obj["relevant_chunks"]):
            if isinstance(chunk, str) and chunk:
                chunk = {"chunk_id": chunk}
            if not isinstance(chunk, dict):
                raise InputError(f"must be a chunk object {{chunk_id, grade}}; got {json.dumps(chunk)[:60]}", path=path,
                                 line=line, field=f"relevant_chunks[{i}]")
            d = _id(path, line, chunk, "chunk_id")
            text = chunk.get("text") if isinstance(chunk.get("text"), str) else None
            yield QueueItem(q, d, "relevance", shape, _stratum(obj, reason),
                            {**base, "query": query, "text": text, "why": _why(obj, why), "rank": chunk.get("rank"),
                             "chunk": chunk, "record": record}, line)
        return
    question = _text(path, line, obj, "question") if "question" in obj else _text(path, line, obj, "query")
    answer = _text(path, line, obj, "answer", required=True)
    contexts: list[str] = []
    raw = obj.get("contexts")
    if isinstance(raw, list):
        for c in raw:
            if isinstance(c, str):
                contexts.append(c)
            elif isinstance(c, dict):
                t = next((c[k] for k in ("text", "content", "context", "page_content") if isinstance(c.get(k), str)), None)
                cid = next((str(c[k]) for k in ("id", "chunk_id", "source", "doc_id") if isinstance(c.get(k), str)), "")
                contexts.append(t if t is not None else cid)
    reference = obj.get("reference") if isinstance(obj.get("reference"), str) and obj.get("reference") else None
    yield QueueItem(q, "", "answer", shape, _stratum(obj),
                    {**base, "query": question or "", "answer": answer, "contexts": contexts, "reference": reference,
                     "why": _why(obj, "")}, line)


def read_queue(path: str) -> Queue:
    """The queue at ``path`` (see the module docs), its items in file order."""
    from rankgate.io.jsonl import json_objects
    from rankgate.io.source import sha256_file

    shape: str | None = None
    items: list[QueueItem] = []
    seen: dict[tuple[str, str], int] = {}
    for line, obj in json_objects(path, "queue", EXPECTED.split(" (")[0]):
        found = _shape_of(obj)
        if shape is None:
            if found is None:
                keys = ", ".join(list(obj)[:8]) or "none"
                raise InputError(f"is not a queue rankgate writes (keys: {keys})", path=path, line=line,
                                 hint=f"a line holds {EXPECTED}")
            shape = found
        elif found != shape:
            raise InputError(f"is not a {shape} line like line 1 (it reads as {found or 'no queue shape'})", path=path,
                             line=line, hint="one queue shape per file; label each queue in its own database")
        for item in _items(path, shape, line, obj):
            key = (item.query_id, item.item_id)
            if key in seen:
                what = f"({key[0]!r}, {key[1]!r})" if key[1] else f"query {key[0]!r}"
                raise InputError(f"holds {what} again (first at line {seen[key]})", path=path, line=line,
                                 hint="each item once in a queue")
            seen[key] = line
            items.append(item)
    if shape is None or not items:
        raise InputError("holds no items to label", path=path, hint=f"a line holds {EXPECTED}")
    return Queue(path, sha256_file(path), shape, _kind(shape), tuple(items))


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
