"""Evaluation samples of the RAG tools (RAGAS, DeepEval) as a gold set and a run.

A sample is one question with the contexts a retriever returned and the contexts that should have
been returned, so one file holds both the gold set and the run. Each tool is declared once (a
:class:`ToolShape` in its own module); this module turns samples into the records rankgate's JSONL
reader validates, so the result is the same :class:`~rankgate.io.Gold` / :class:`~rankgate.io.Run`
as from any other format.

* Query id: the sample's ``query_id`` / ``id`` / ``qid`` / ``sample_id`` field when it has one,
  else ``"q:"`` + a hash of its normalised question (see :func:`rankgate.io.shapes.text_id`), so
  two files of the same questions line up whatever their order.
* Items: the ``*_ids`` field when the file has ids for the side being read (for a file holding both
  sides, only when it has ids for both, so that the two sides are matched the same way, or when that
  side has no texts at all); otherwise the texts, matched by :func:`~rankgate.io.shapes.text_id`. Retrieved items are ranked in list
  order (the tools log no scores); their texts are kept for the report.
* A sample with nothing listed as retrieved (null, an empty cell) is not in the run: it is reported
  as missing from the run, not scored as an empty ranking. An empty list is an empty ranking.
"""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from rankgate.io.jsonl import parse_gold_records, parse_run_records
from rankgate.model.gold_run import Gold, Run
from rankgate.io.tools.records import Record, Records, fail
from rankgate.io.shapes import text_id

__all__ = ["ListStats", "ToolShape", "gold_from_samples", "list_field", "list_notices", "query_ids", "run_from_samples",
           "with_list_sep"]

ID_KEYS = ("query_id", "id", "qid", "sample_id")
RUN_PASSTHROUGH_SKIP = frozenset({"query", "question"})


@dataclass(frozen=True)
class ToolShape:
    """Where one tool keeps each part of a sample."""

    name: str  # as in --gold-format
    label: str  # as users know it
    query_keys: tuple[str, ...]
    gold_ids: str | None
    gold_texts: tuple[str, ...]
    run_ids: str | None
    run_texts: tuple[str, ...]
    answer_keys: tuple[str, ...]
    tool_keys: frozenset[str]  # the tool's own fields (not kept as segments)
    id_keys: tuple[str, ...] = ID_KEYS
    list_sep: str | None = None  # how a CSV cell joins a list, when it is not a list literal
    saved_sep: str | None = None  # the same, in files the tool wrote itself (told apart by saved_marker)
    saved_marker: str | None = None  # a field only the tool's own export writes
    gold_hint: str = ""
    unwrap: Callable[[str], str] | None = None  # a context's text from the way the tool saved it, if it wraps it


def _sep(records: Records, shape: ToolShape) -> str | None:
    if shape.saved_marker is not None and shape.saved_marker in records.columns:
        return shape.saved_sep
    return shape.list_sep


def with_list_sep(shape: ToolShape, sep: str | None) -> ToolShape:
    """``shape`` reading joined lists on ``sep`` (the user's choice) in every file; unchanged for None."""
    return shape if sep is None else replace(shape, list_sep=sep, saved_sep=sep)


class ListStats:
    """What reading the list fields of one file met, for the notices of :func:`list_notices`."""

    def __init__(self) -> None:
        self.joined = 0  # cells split on the delimiter
        self.holding: dict[str, int] = {}  # per field: list entries (not split) that contain the delimiter
        self.example: dict[str, str] = {}


def _list(records: Records, rec: Record, key: str, sep: str | None, stats: ListStats | None = None) -> list[str] | None:
    """A list-of-strings field: a JSON/Arrow list, or in a CSV cell a JSON or Python list literal (as
    pandas writes it) or, for tools that join lists with a separator, the joined text."""
    value = rec.data.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        s = value.strip()
        if not s:
            return None
        if s.startswith("["):
            try:
                value = json.loads(s)
            except RecursionError:
                raise fail(records.path, rec, "nests lists too deeply to read", field=key) from None
            except json.JSONDecodeError:
                try:
                    value = ast.literal_eval(s)
                except (ValueError, SyntaxError, MemoryError, RecursionError):
                    raise fail(records.path, rec, f"is not a list literal: {s[:60]!r}", field=key,
                               hint="write lists as JSON, e.g. [\"text one\", \"text two\"]") from None
        elif sep is not None:
            value = [part.strip() for part in s.split(sep) if part.strip()]
            if stats is not None and sep in s:
                stats.joined += 1
        else:
            value = [value]
    if isinstance(value, tuple) or (hasattr(value, "tolist") and not isinstance(value, (str, list))):
        value = list(value.tolist() if hasattr(value, "tolist") else value)  # a numpy array from a DataFrame
    if not isinstance(value, list) or not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in value):
        raise fail(records.path, rec, f"must be a list of strings; got {json.dumps(value, default=str)[:80]}", field=key)
    out = [str(v) for v in value]
    if stats is not None and sep is not None and not isinstance(rec.data.get(key), str):
        holding = [v for v in out if sep in v]
        if holding:
            stats.holding[key] = stats.holding.get(key, 0) + len(holding)
            stats.example.setdefault(key, holding[0])
    return out


def list_notices(records: Records, shape: ToolShape, stats: ListStats, sep: str | None) -> list[str]:
    """The sentences to show about lists joined by a delimiter in this file (none for a tool that
    writes real lists): one for a file whose cells were split, one per field whose whole contexts
    hold the delimiter (the same dataset saved as CSV or JSON lines would cut them)."""
    if sep is None:
        return []
    out = []
    name = os.path.basename(records.path) or records.path  # (the file's name: a PR comment shows it too)
    if stats.joined:
        own = shape.saved_marker is not None  # a tool whose own CSV/JSONL join lists (DeepEval)
        out.append(f"{name}: lists are joined by {sep!r} in this file"
                   + (f" (as {shape.label}'s CSV and JSON lines write them)" if own else "")
                   + f", so a context that itself contains {sep!r} is read as two; "
                   + (f"{shape.label}'s JSON (save_as(\"json\")) keeps each context whole: prefer it"
                      if own else "a JSON list keeps each context whole: prefer it")
                   + " (another delimiter: --columns list_sep=...)")
    for key, n in stats.holding.items():
        example = stats.example[key]
        example = example if len(example) <= 60 else example[:59] + "…"
        out.append(f"warning: {name}: {n} {key} {'entry contains' if n == 1 else 'entries contain'} {sep!r} "
                   f"(e.g. {example!r}): read whole here, but the same dataset saved as CSV or JSON lines joins "
                   f"lists with {sep!r} and cuts them, so it would score differently there; keep JSON")
    return out


def _given(records: Records) -> frozenset[str]:
    """The fields with a value in some sample: a column that is null or empty everywhere (as an
    export writes an unset field) counts as absent."""
    return frozenset(k for rec in records.items for k, v in rec.data.items() if v is not None and not (isinstance(v, str) and not v))


def _present(records: Records, keys: tuple[str, ...] | list[str]) -> str | None:
    given = _given(records)
    return next((k for k in keys if k in given), None)


def _query_ids(records: Records, shape: ToolShape) -> list[tuple[str, str | None]]:
    """(query id, question text) of each sample; a repeated id is an error naming both places."""
    out: list[tuple[str, str | None]] = []
    seen: dict[str, Record] = {}
    for rec in records.items:
        text = next((rec.data[k] for k in shape.query_keys if rec.data.get(k) not in (None, "")), None)
        if text is not None and not isinstance(text, str):
            raise fail(records.path, rec, f"must be a string; got {json.dumps(text, default=str)[:60]}", field=shape.query_keys[0])
        given = next((rec.data[k] for k in shape.id_keys if rec.data.get(k) not in (None, "")), None)
        if given is not None:
            if isinstance(given, bool) or not isinstance(given, (str, int)):
                raise fail(records.path, rec, f"must be a string; got {given!r}", field="query_id")
            qid = str(given)
        elif text is None:
            raise fail(records.path, rec, "is missing", field=shape.query_keys[0],
                       hint=f"every {shape.label} sample needs its question (or a query_id field)")
        else:
            qid = "q:" + text_id(text)[2:]
        if qid in seen:
            where = seen[qid].line or seen[qid].row
            what = "id" if given is not None else f"{shape.query_keys[0]} (after normalising whitespace and case)"
            raise fail(records.path, rec, f"repeats the {what} of {'line' if seen[qid].line else 'row'} {where}",
                       field="query_id" if given is not None else shape.query_keys[0],
                       hint="give each sample a distinct query_id field, or drop the repeat")
        seen[qid] = rec
        out.append((qid, text))
    return out


def _use_ids(records: Records, own_ids: str | None, own_texts: tuple[str, ...], other_ids: str | None,
             other_texts: tuple[str, ...]) -> bool:
    """Ids when this side has them and the other side is matched by ids too (or is absent); texts
    otherwise, unless this side has no texts to match."""
    given = _given(records)
    if own_ids is None or own_ids not in given:
        return False
    other_present = (other_ids in given) or any(k in given for k in other_texts)
    own_texts_present = any(k in given for k in own_texts)
    return other_ids in given or not other_present or not own_texts_present


def _items(records: Records, rec: Record, shape: ToolShape, ids_key: str | None, texts_keys: tuple[str, ...],
           use_ids: bool, stats: ListStats | None = None) -> tuple[list[str], list[str | None]] | None:
    """(ids, texts) of one side of a sample, or None when the sample does not give that side."""
    text_key = next((k for k in texts_keys if k in rec.data), None)
    texts = _list(records, rec, text_key, _sep(records, shape), stats) if text_key else None
    if texts is not None and shape.unwrap is not None:
        texts = [shape.unwrap(t) for t in texts]
    if use_ids and ids_key is not None:
        ids = _list(records, rec, ids_key, _sep(records, shape))
        if ids is None:
            if texts:
                raise fail(records.path, rec, "is empty while other samples give ids", field=ids_key,
                           hint=f"give {ids_key} for every sample, or drop the column to match {text_key} by text")
            return None
        if texts is not None and len(texts) == len(ids):
            return ids, list(texts)
        return ids, [None] * len(ids)
    if texts is None:
        return None
    return [text_id(t) for t in texts], list(texts)


def _check_not_empty(records: Records, shape: ToolShape) -> None:
    if not records.items:
        raise fail(records.path, None, f"has no {shape.label} samples", hint="the file holds a header or wrapper but no rows")


def gold_from_samples(records: Records, shape: ToolShape) -> Gold:
    path = records.path
    _check_not_empty(records, shape)
    side = _present(records, ([shape.gold_ids] if shape.gold_ids else []) + list(shape.gold_texts))
    if side is None:
        wanted = " or ".join(([shape.gold_ids] if shape.gold_ids else []) + list(shape.gold_texts))
        raise fail(path, records.items[0] if records.items else None,
                   f"has no {wanted}: this {shape.label} file lists no relevant contexts, so it holds no gold set",
                   hint=shape.gold_hint)
    use_ids = _use_ids(records, shape.gold_ids, shape.gold_texts, shape.run_ids, shape.run_texts)
    stats = ListStats()
    out: list[tuple[int, dict[str, Any]]] = []
    for i, (rec, (qid, text)) in enumerate(zip(records.items, _query_ids(records, shape)), start=1):
        no_answer = rec.data.get("no_answer") in (True, "true", "True", "1", 1)
        got = _items(records, rec, shape, shape.gold_ids, shape.gold_texts, use_ids, stats)
        if not got or not got[0]:
            if not no_answer:
                key = shape.gold_ids if use_ids else next((k for k in shape.gold_texts if k in _given(records)), side)
                raise fail(path, rec, "is empty" if got is not None else "is missing", field=key,
                           hint='list the contexts that answer the question; a question the corpus cannot answer: '
                                'set "no_answer": true')
            docs: list[Any] = []
        else:
            # The same text twice is one item. An item known by its text keeps that text as its note,
            # so that a report can show what should have been retrieved (its id is only a hash).
            first = dict(zip(reversed(got[0]), reversed(got[1])))
            docs = [d if first[d] is None or use_ids else {"chunk_id": d, "note": first[d]} for d in dict.fromkeys(got[0])]
        obj: dict[str, Any] = {"query_id": qid, "relevant": docs}
        if no_answer:
            obj["no_answer"] = True
        if text is not None:
            obj["query"] = text
        answer = next((rec.data[k] for k in shape.answer_keys if rec.data.get(k) not in (None, "")), None)
        if isinstance(answer, list):
            answer = answer[0] if answer else None
        if answer is not None:
            obj["expected_answer"] = str(answer)
        for key, value in rec.data.items():
            if (key not in shape.tool_keys and key not in shape.id_keys and key not in obj and key != "no_answer"
                    and isinstance(value, (str, int, float)) and not isinstance(value, bool) and value != ""):
                obj[key] = value
        out.append((rec.line or rec.row or i, obj))
    gold = parse_gold_records(out, path)
    gold.notices.extend(list_notices(records, shape, stats, _sep(records, shape)))
    return gold


def run_from_samples(records: Records, shape: ToolShape) -> Run:
    path = records.path
    _check_not_empty(records, shape)
    side = _present(records, ([shape.run_ids] if shape.run_ids else []) + list(shape.run_texts))
    if side is None:
        wanted = " or ".join(([shape.run_ids] if shape.run_ids else []) + list(shape.run_texts))
        raise fail(path, records.items[0] if records.items else None,
                   f"has no {wanted}: this {shape.label} file lists no retrieved contexts, so it holds no run",
                   hint="log what the retriever returned for each question")
    use_ids = _use_ids(records, shape.run_ids, shape.run_texts, shape.gold_ids, shape.gold_texts)
    stats = ListStats()
    out: list[tuple[int, dict[str, Any]]] = []
    for i, (rec, (qid, _)) in enumerate(zip(records.items, _query_ids(records, shape)), start=1):
        got = _items(records, rec, shape, shape.run_ids, shape.run_texts, use_ids, stats)
        if got is None:
            continue  # nothing logged: the query is missing from the run
        topk = [{"chunk_id": d} if t is None else {"chunk_id": d, "text": t} for d, t in zip(*got)]
        obj: dict[str, Any] = {"query_id": qid, "topk": topk}
        for key, value in rec.data.items():
            if key not in shape.tool_keys and key not in shape.id_keys and key not in RUN_PASSTHROUGH_SKIP and value is not None:
                obj.setdefault(key, value)
        out.append((rec.line or rec.row or i, obj))
    if not out:
        raise fail(path, None, f"lists no retrieved contexts for any sample (field {side})",
                   hint="log what the retriever returned for each question")
    run = parse_run_records(out, path)
    run.notices.extend(list_notices(records, shape, stats, _sep(records, shape)))
    return run


def list_field(records: Records, rec: Record, key: str, shape: ToolShape) -> list[str] | None:
    """A list-of-strings field of one sample, read as the gold and run readers read it (JSON/Arrow
    list, or a CSV cell holding a list literal or the tool's joined text); None when absent or empty."""
    return _list(records, rec, key, _sep(records, shape))


def query_ids(records: Records, shape: ToolShape) -> list[tuple[str, str | None]]:
    """(query id, question text) of each sample, as the gold and run readers give them (so answers,
    gold set and run of the same samples share ids); a repeated id is an error naming both places."""
    return _query_ids(records, shape)
