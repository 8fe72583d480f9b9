"""The labels of a database written back in the shapes rankgate reads, and merged into a gold set.

One line per item (queue order, then the items labelled from the browse view), with the label every annotator who
labelled it agrees on:

* relevance: ``{query_id, id, grade, note?}``, what ``rankgate evaluate --judged`` and ``rankgate judge calibrate
  --human`` read (both read the 0–2 scale: labels on ``0-3`` feed the gold set);
* answers: ``{query_id, faithful, correct, note?}``, what ``rankgate answers --human`` reads;

and the provenance beside them, which those readers pass over: ``queue`` (the queue file's name), ``source`` (its
shape, or ``browse``) and ``labelled_by``, each label as given (``annotator``, ``at``, ``via``, and the grade or
verdicts). Where annotators disagree, ``resolve`` decides: ``leave-out`` (the default: the item is not written, and is
counted so that the command can say so), ``lowest`` or ``highest``. ``every=True`` writes each label on its own line
instead (an audit file: readers that need one label per item refuse its repeats).

:func:`merge_into_gold` adds graded chunks to a JSONL gold set: a chunk for a query the gold set holds joins that
query's ``relevant_chunks``; a query it lacks (a gold sample's candidate) becomes a new line, its candidate record with
the labelled chunks (one without any relevant chunk is left out: the gold set would need it marked ``no_answer``).
A label that grades a chunk the gold set already grades otherwise is a conflict: nothing is written, and every
conflict is listed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rankgate.errors import InputError, UsageError
from rankgate.labels.store import LabelRow

__all__ = ["RESOLVE", "Exported", "GoldMerge", "export_lines", "merge_into_gold"]

RESOLVE = ("leave-out", "lowest", "highest")


@dataclass(frozen=True)
class Exported:
    records: tuple[dict[str, Any], ...]
    labels: int                                   # labels in force read
    disagreements: tuple[tuple[str, str], ...]    # items left out: (query_id, id)
    kind: str


def _value(row: LabelRow) -> Any:
    return row.grade if row.item.kind == "relevance" else (row.faithful, row.correct)


def _provenance(row: LabelRow) -> dict[str, Any]:
    out: dict[str, Any] = {"annotator": row.annotator, "at": row.at, "via": row.via}
    if row.item.kind == "relevance":
        out["grade"] = row.grade
    else:
        out["faithful"], out["correct"] = row.faithful, row.correct
    if row.note:
        out["note"] = row.note
    return out


def _resolved(rows: Sequence[LabelRow], resolve: str) -> Any:
    values = [_value(r) for r in rows]
    if all(v == values[0] for v in values):
        return values[0]
    if resolve == "leave-out":
        return None
    pick = min if resolve == "lowest" else max
    if rows[0].item.kind == "relevance":
        return pick(values)
    out = []
    for part in zip(*values):
        if any(p is None for p in part) and len(set(part)) > 1:
            return None  # "no statement" against a verdict: no order to resolve it by
        out.append(pick(part))
    return tuple(out)


def _line(rows: Sequence[LabelRow], value: Any, queue: str) -> dict[str, Any]:
    item = rows[0].item
    line: dict[str, Any] = {"query_id": item.query_id}
    if item.kind == "relevance":
        line.update({"id": item.item_id, "grade": value})
    else:
        line.update({"faithful": value[0], "correct": value[1]})
    notes = [r.note for r in rows if r.note]
    if notes:
        line["note"] = " | ".join(notes)
    line.update({"queue": queue, "source": item.source, "labelled_by": [_provenance(r) for r in rows]})
    return line


def export_lines(rows: Iterable[LabelRow], *, queue: str, kind: str, resolve: str = "leave-out",
                 every: bool = False) -> Exported:
    """The export of ``rows`` (:meth:`LabelStore.labels`, grouped by item in order): see the module docs."""
    if resolve not in RESOLVE:
        raise UsageError(f"resolve must be one of {', '.join(RESOLVE)}; got {resolve!r}")
    out: list[dict[str, Any]] = []
    left: list[tuple[str, str]] = []
    count = 0
    group: list[LabelRow] = []

    def flush() -> None:
        if not group:
            return
        if every:
            out.extend(_line([r], _value(r), queue) for r in group)
        else:
            value = _resolved(group, resolve)
            if value is None:
                left.append((group[0].item.query_id, group[0].item.item_id))
            else:
                out.append(_line(group, value, queue))
        group.clear()

    for row in rows:
        count += 1
        if group and (group[0].item.query_id, group[0].item.item_id) != (row.item.query_id, row.item.item_id):
            flush()
        group.append(row)
    flush()
    return Exported(tuple(out), count, tuple(left), kind)


# -- into the gold set -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GoldMerge:
    data: bytes                                    # the gold file as it is to be written
    added: int                                     # chunks added to queries the gold set held
    new_queries: int                               # queries appended
    already: int                                   # labels the gold set already held with the same grade
    no_relevant: tuple[str, ...] = ()              # new queries left out: no chunk graded above 0
    conflicts: tuple[str, ...] = field(default_factory=tuple)


def merge_into_gold(records: Sequence[Mapping[str, Any]], gold_path: str, payloads: Mapping[tuple[str, str],
                    Mapping[str, Any]]) -> GoldMerge:
    """``records`` (relevance export lines) merged into the JSONL gold set at ``gold_path`` (module docs);
    ``payloads``: each item's queue payload (a gold sample candidate's record and chunk). Raises an InputError
    listing every conflict; returns the bytes to write otherwise (the caller writes them atomically)."""
    from rankgate.goldset.records import read_gold_file
    from rankgate.io.jsonl import parse_gold_records

    if str(gold_path).endswith((".parquet", ".pq", ".tsv", ".csv", ".txt", ".qrels")):
        raise UsageError(f"{gold_path}: labels go into a JSONL gold set")
    parsed = read_gold_file(gold_path)
    problem = parsed.first_problem()
    if problem is not None:
        raise problem
    with open(gold_path, "rb") as fh:
        original = fh.read()
    raw = original.decode("utf-8-sig").split("\n")
    lines: list[str | dict[str, Any]] = list(raw[:-1] if raw and raw[-1] == "" else raw)
    where: dict[str, int] = {}
    for i, text in enumerate(lines):
        if isinstance(text, str) and text.strip():
            first = json.loads(text)
            where[str(first.get("query_id", first.get("qid", first.get("id"))))] = i
    conflicts: list[str] = []
    added = already = 0
    new: dict[str, dict[str, Any]] = {}
    for rec in records:
        q, d, grade = str(rec["query_id"]), str(rec["id"]), rec["grade"]
        chunk_extra = {k: v for k, v in (payloads.get((q, d), {}).get("chunk") or {}).items()
                       if k not in ("chunk_id", "grade", "text", "note")}
        entry: dict[str, Any] = {"chunk_id": d, "grade": grade, **chunk_extra}
        if rec.get("note"):
            entry["note"] = rec["note"]
        entry["labelled_by"] = ", ".join(p["annotator"] for p in rec.get("labelled_by", []))
        if q in where:
            i = where[q]
            held = lines[i]
            obj: dict[str, Any] = held if isinstance(held, dict) else json.loads(held)
            chunks = obj.get("relevant_chunks")
            if not isinstance(chunks, list):
                raise UsageError(f"{gold_path}:{i + 1}: query {q!r} keeps its labels outside relevant_chunks; labels go "
                                 "into gold sets written with relevant_chunks")
            have = {(c if isinstance(c, str) else c.get("chunk_id")): (1 if isinstance(c, str) else c.get("grade"))
                    for c in chunks}
            if d in have:
                if have[d] == grade:
                    already += 1
                else:
                    conflicts.append(f"{q}/{d}: gold {have[d]}, label {grade} (line {i + 1})")
                continue
            chunks.append(entry)
            lines[i] = obj
            added += 1
            continue
        if q not in new:
            payload = payloads.get((q, d), {})
            record = dict(payload.get("record") or {"query_id": q, "query": payload.get("query") or ""})
            record.pop("relevant_chunks", None)
            new[q] = {**{k: v for k, v in record.items() if k in ("query_id", "query")}, "relevant_chunks": [],
                      **{k: v for k, v in record.items() if k not in ("query_id", "query")}}
        new[q]["relevant_chunks"].append(entry)
    if conflicts:
        shown = "; ".join(conflicts[:10]) + (f"; and {len(conflicts) - 10} more" if len(conflicts) > 10 else "")
        raise InputError(f"grades {len(conflicts)} chunk{'s' if len(conflicts) > 1 else ''} otherwise than the labels: "
                         f"{shown}", path=gold_path,
                         hint="settle each in the gold set or in the labels (label export --resolve, or relabel), "
                              "then export again; nothing was written")
    kept = {q: r for q, r in new.items() if any((c.get("grade") or 0) > 0 for c in r["relevant_chunks"])}
    dropped = tuple(q for q in new if q not in kept)
    out_lines = [t if isinstance(t, str) else json.dumps(t, ensure_ascii=False) for t in lines]
    out_lines += [json.dumps(r, ensure_ascii=False) for r in kept.values()]
    # the merged set must read as a gold set (a chunk or query the labels add is checked as any line is)
    parse_gold_records([(i + 1, json.loads(t)) for i, t in enumerate(out_lines) if t.strip()], gold_path)
    data = "".join(t + "\n" for t in out_lines).encode("utf-8")
    if original.startswith(b"\xef\xbb\xbf"):
        data = b"\xef\xbb\xbf" + data
    return GoldMerge(data, added, len(kept), already, dropped, ())
