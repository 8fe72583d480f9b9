"""Gold sets and runs whose fields live elsewhere: the field map (``--field NAME=PATH``, ``fields=``) applied.

The syntax is :mod:`rankgate._util.fields` (dotted paths, ``[*]`` for every item of a list). The names,
one set for every command that reads gold sets and runs (evaluate, compare, gate, report):

=============  ========  ======================================================================
``query_id``   both      the query's id
``query``      both      the query's text
``id``         run       a retrieved item's id
``text``       run       a retrieved item's text
``score``      run       a retrieved item's score
``rank``       run       a retrieved item's rank
``relevant``   gold      a relevant item's id
``grade``      gold      a relevant item's grade
=============  ========  ======================================================================

An item's path is read in each item of the query's list (``id=metadata.doc_id``: the list is found by
its usual names, ``topk``, ``retrieved``, ``results``…; for a gold set ``relevant_chunks``,
``relevant``…), or names the list too (``id=hits[*].doc.id``; ``relevant=expected_ids[*]``, a list of ids).
``id`` (``relevant`` in a gold set) decides the list; an item field naming another list
(``text=retrieved_texts[*]`` beside ``id=retrieved_ids[*]``) is read by position from it.

A name applies to the files of its kind only (``id`` never to a gold set), so one map serves a gold set
and a run. ``query_id`` and ``query`` are read from the path where a line has it, else from the usual
names (a gold set and a run may keep the query id in different places); an item's id, grade and the
list a path names must be where the map says, or the line is an error naming the path.

JSON and JSON lines are read record by record (the line-by-line reader: the compiled scanner reads
fixed names); a table (CSV/TSV, Parquet, a Hugging Face folder, a DataFrame) takes each path as a column
name, a flattened one with dots included. Any other format is refused: its fields are known by position
(TREC) or by the format's own names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rankgate._util.fields import FieldPath, field_path, parse_fields
from rankgate.errors import F, InputError, UsageError
from rankgate.io.jsonl import GRADE_KEYS, ITEM_ID_KEYS, QUERY_ID_KEYS, RELEVANT_KEYS, RUN_LIST_KEYS

__all__ = ["FIELD_NAMES", "GOLD_FIELDS", "RUN_FIELDS", "TABLE_FORMATS", "check_fields", "fields_for", "map_records",
           "refusal", "table_columns"]

FIELD_NAMES = ("query_id", "query", "id", "text", "score", "rank", "relevant", "grade")
RUN_FIELDS = ("query_id", "query", "id", "text", "score", "rank")
GOLD_FIELDS = ("query_id", "query", "relevant", "grade")
#: The formats whose rows are tables: each path is a column (see :func:`table_columns`).
TABLE_FORMATS = ("csv", "parquet", "hf")
_TABLE_FIELD = {"query_id": "query_id", "query": "query", "id": "chunk_id", "text": "text", "score": "score",
                "rank": "rank", "relevant": "chunk_id", "grade": "grade"}
_QUERY_TEXT_KEYS = ("query", "question", "text", "input")


def check_fields(fields: Any, *, command: str = "rankgate.evaluate") -> dict[str, str] | None:
    """``fields`` (``{name: path}``, or ``NAME=PATH`` text) checked: the names of :data:`FIELD_NAMES`, each path
    one :func:`rankgate._util.fields.field_path` reads; None when not given. A UsageError names the first
    flaw, said for ``command``."""
    if fields is None:
        return None
    return parse_fields(fields, FIELD_NAMES, command=command)


def fields_for(fields: Mapping[str, str] | None, noun: str) -> dict[str, str]:
    """The names of ``fields`` that apply to a ``noun`` ("gold" or "run")."""
    names = GOLD_FIELDS if noun == "gold" else RUN_FIELDS
    return {k: v for k, v in (fields or {}).items() if k in names}


def refusal(path: str, description: str) -> UsageError:
    """The one-line refusal of a field map given for a file whose fields it cannot reach."""
    return UsageError(f"{F.fields} cannot apply to {path}: it is read as {description}, whose fields are known by "
                      "position or by the format's own names; a field map reads JSON/JSONL records and tables (CSV, "
                      "Parquet, Hugging Face)")


def table_columns(fields: Mapping[str, str], noun: str, columns: Mapping[str, str] | None) -> dict[str, str]:
    """The column map of a table read with ``fields`` (each path a column) merged into ``columns``."""
    out = dict(columns or {})
    for name, path in fields_for(fields, noun).items():
        if field_path(path).has_star:
            raise UsageError(f"{F.fields} {name}={path}: a table keeps one value per cell, so [*] cannot apply; "
                             "name the column")
        target = _TABLE_FIELD[name]
        if target in out and out[target] != path:
            raise UsageError(f"{F.fields} {name}={path} and {F.columns} {target}={out[target]} name two columns for "
                             f"one field; give one")
        out[target] = path
    return out


class _Item:
    """One item field of the map: where it is read (in each item, or by position from a list of its own)."""

    def __init__(self, name: str, text: str) -> None:
        parsed = field_path(text)
        split = parsed.split_star()
        self.name, self.text = name, text
        self.list: FieldPath | None = split[0] if split else None
        self.rest: FieldPath = split[1] if split else parsed


class _Plan:
    """A field map as it applies to the lines of one ``noun``'s file."""

    def __init__(self, fields: Mapping[str, str], noun: str) -> None:
        self.noun = noun
        self.query_id = field_path(fields["query_id"]) if "query_id" in fields else None
        self.query = field_path(fields["query"]) if "query" in fields else None
        self.primary = primary = "relevant" if noun == "gold" else "id"
        names = ("relevant", "grade") if noun == "gold" else ("id", "text", "score", "rank")
        self.items = {n: _Item(n, fields[n]) for n in names if n in fields}
        first = self.items.get(primary) or next((i for i in self.items.values() if i.list is not None), None)
        self.list = first.list if first is not None and first.list is not None else None
        self.defaults = RELEVANT_KEYS if noun == "gold" else RUN_LIST_KEYS
        self.key = "relevant_chunks" if noun == "gold" else "topk"

    def spec_of_list(self) -> str:
        """The map's entry that names the list, as the user gave it."""
        return next(f"{i.name}={i.text}" for i in self.items.values() if i.list is not None and self.list is not None
                    and i.list.text == self.list.text)

    def apply(self, obj: Any, path: str, line: int) -> Any:
        if not isinstance(obj, dict):
            return obj  # (the parser names what a line must be)
        out = dict(obj)
        if self.query_id is not None:
            value = self.query_id.get(obj)
            if value is not None:
                out = {"query_id": value, **{k: v for k, v in out.items() if k not in QUERY_ID_KEYS}}
            elif not any(k in obj for k in QUERY_ID_KEYS):
                raise InputError("is missing", path=path, line=line, field=self.query_id.text,
                                 hint=f"the field map says query_id={self.query_id.text}; every line needs a query id")
        if self.query is not None:
            value = self.query.get(obj)
            if value is not None:
                if self.noun == "gold":
                    out = {k: v for k, v in out.items() if k not in _QUERY_TEXT_KEYS}
                out["query"] = value
        if self.items:
            self._items(obj, out, path, line)
        return out

    def _items(self, obj: dict[str, Any], out: dict[str, Any], path: str, line: int) -> None:
        if self.list is not None:
            where = self.list.text
            raw = self.list.get(obj)
            if raw is None:
                if self.noun == "gold" and obj.get("no_answer") is True:
                    return  # (a no-answer query lists nothing)
                raise InputError("is missing", path=path, line=line, field=where,
                                 hint=f"the field map says {self.spec_of_list()}, where the "
                                      f"{'relevant' if self.noun == 'gold' else 'ranked'} items are")
        else:
            where = next((k for k in self.defaults if k in obj), "")
            if not where:
                return  # (the parser says the line has no ranking, or no judgements)
            raw = obj[where]
        raw = _listed(raw)
        if raw is None or (self.noun == "gold" and isinstance(obj.get(where), dict) and self.list is None):
            got = type(obj.get(where) if self.list is None else self.list.get(obj)).__name__
            raise InputError(f"must be a list for the field map's item fields; got {got}", path=path, line=line,
                             field=where)
        columns: dict[str, list[Any]] = {}
        for name, item in self.items.items():
            if item.list is not None and (self.list is None or item.list.text != self.list.text):
                values = _listed(item.list.get(obj))
                if values is None or len(values) != len(raw):
                    n = "nothing" if values is None else f"{len(values)} values"
                    raise InputError(f"has {n} for {len(raw)} items of {where}", path=path, line=line,
                                     field=item.list.text, hint=f"{name}={item.text} is read by position: give one "
                                                                "value per item")
                columns[name] = [item.rest.get(v) if item.rest.steps else v for v in values]
        for k in self.defaults:
            out.pop(k, None)
        out[self.key] = [self._item(raw, i, columns, where, path, line) for i in range(len(raw))]

    def _item(self, raw: list[Any], i: int, columns: dict[str, list[Any]], where: str, path: str, line: int) -> Any:
        item = raw[i]
        if isinstance(item, dict):
            new = dict(item)
        else:  # a bare id: its id is itself, unless the map reads it elsewhere
            new = {} if self.primary in self.items else {"chunk_id": item}
        for name, spec in self.items.items():
            if name in columns:
                value = columns[name][i]
                at = f"{spec.list.text if spec.list else where}[{i}]"
            else:
                value = spec.rest.get(item) if spec.rest.steps else item
                at = f"{where}[{i}]"
            at += f".{spec.rest.text}" if spec.rest.steps else ""
            if name in ("id", "relevant"):
                if value is None or isinstance(value, (dict, list)):
                    raise InputError("is missing" if value is None else f"must be an id; got {type(value).__name__}",
                                     path=path, line=line, field=at,
                                     hint=f"the field map says {name}={spec.text}")
                new = {"chunk_id": value, **{k: v for k, v in new.items() if k not in ITEM_ID_KEYS}}
            elif name == "grade":
                if value is None:
                    raise InputError("is missing", path=path, line=line, field=at,
                                     hint=f"the field map says grade={spec.text}")
                new = {k: v for k, v in new.items() if k not in GRADE_KEYS}
                new["grade"] = value
            else:
                for k in (("text", "content") if name == "text" else (name,)):
                    new.pop(k, None)
                if value is not None:
                    new[name] = value
        return new


def _listed(value: Any) -> list[Any] | None:
    if hasattr(value, "tolist") and not isinstance(value, list):
        value = value.tolist()
    if isinstance(value, tuple):
        value = list(value)
    return value if isinstance(value, list) else None


def map_records(records: Iterable[tuple[int, Any]], fields: Mapping[str, str], noun: str,
                path: str) -> list[tuple[int, Any]]:
    """``(line, record)`` pairs of a ``noun``'s file with the field map applied: each record in the shape the
    JSON lines parser reads (:mod:`rankgate.io.jsonl`), its line kept for errors."""
    plan = _Plan(fields_for(fields, noun), noun)
    return [(line, plan.apply(obj, path, line)) for line, obj in records]
