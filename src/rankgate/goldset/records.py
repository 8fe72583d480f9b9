"""Reading a gold file for the gold-set commands: every query with its labels and line, and *every*
schema problem of the file rather than the first.

The checks are the gold loader's own (:func:`rankgate.io.jsonl.parse_gold_records`): the whole
file is parsed in one pass first; only when that pass refuses the file is it parsed again line by line
to collect each bad line's message, so a clean file costs one parse and a dirty one is reported in
full. Duplicated query ids are reported naming the line of the first occurrence. A query with no
relevant item that lacks ``"no_answer": true`` is kept (its labels are still checked) and reported as
its own kind of problem.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from rankgate.errors import InputError

__all__ = ["GoldFile", "GoldQuery", "Label", "Problem", "read_gold_file"]


@dataclass(frozen=True)
class Label:
    chunk_id: str
    grade: int
    note: str | None = None


@dataclass(frozen=True)
class GoldQuery:
    query_id: str
    line: int | None
    labels: tuple[Label, ...]
    must_not_retrieve: tuple[str, ...] = ()
    no_answer: bool = False
    fields: dict[str, Any] = field(default_factory=dict)  # source_of_query, created, corpus_version, tags, …

    def value(self, name: str) -> str | None:
        """A segment value as the gates read it: the field itself, else ``tags.<name>``,
        else ``metadata.<name>``; ``a+b`` joins the parts with `` / `` as segments do."""
        if "+" in name:
            parts = [self.value(p.strip()) for p in name.split("+")]
            return None if any(p is None for p in parts) else " / ".join(p for p in parts if p is not None)
        if name.startswith("tags."):
            return (self.fields.get("tags") or {}).get(name[5:])
        v = self.fields.get(name)
        if v is None:
            v = (self.fields.get("tags") or {}).get(name)
        if v is None:
            v = self.fields.get(f"metadata.{name}")
        return None if v is None else str(v)


@dataclass(frozen=True)
class Problem:
    """A line the gold loader refuses. ``kind``: ``schema``, ``duplicate`` or ``unmarked_no_answer``."""

    kind: str
    message: str
    line: int | None
    query_id: str | None = None


@dataclass(frozen=True)
class GoldFile:
    path: str
    sha256: str
    queries: tuple[GoldQuery, ...]
    problems: tuple[Problem, ...]

    def first_problem(self) -> InputError | None:
        """The first problem as the error the gold loader would raise, for commands that need a clean file."""
        if not self.problems:
            return None
        p = self.problems[0]
        more = len(self.problems) - 1
        hint = "run 'rankgate gold validate' to list every problem" + (f" ({more} more)" if more else "")
        return InputError(p.message, path=self.path, line=p.line, hint=hint)


def _queries_of(gold: Any, lines: list[int | None]) -> list[GoldQuery]:
    docs = gold.j_doc.to_pylist()
    grades = gold.j_grade.tolist()
    notes = gold.notes or [None] * len(docs)
    per_query: list[list[Label]] = [[] for _ in gold.query_ids]
    for qi, d, g, n in zip(gold.j_query.tolist(), docs, grades, notes):
        per_query[qi].append(Label(d, g, n))
    names = list(gold.fields)
    out = []
    for qi, qid in enumerate(gold.query_ids):
        f = {name: gold.fields[name][qi] for name in names if gold.fields[name][qi] is not None}
        must_not = tuple(f.pop("must_not_retrieve", None) or ())
        no_answer = bool(f.pop("no_answer", False))
        out.append(GoldQuery(qid, lines[qi], tuple(per_query[qi]), must_not, no_answer, f))
    return out


def gold_file_of(gold: Any, path: str, sha256: str = "") -> GoldFile:
    """A :class:`GoldFile` of a gold set already loaded (any format the loader reads), for checks
    that need its labels only (no line numbers)."""
    return GoldFile(path, sha256, tuple(_queries_of(gold, [None] * len(gold.query_ids))), ())


def _message(exc: InputError) -> str:
    text = (f"field '{exc.field}' " if exc.field else "") + exc.detail
    return text + (f" ({exc.hint})" if exc.hint else "")


def _collect(records: list[tuple[int, Any]], json_problems: list[Problem], path: str) -> tuple[list[GoldQuery], list[Problem]]:
    """The slow path: each line on its own, so every bad line is reported."""
    from rankgate.io.jsonl import parse_gold_records

    problems = list(json_problems)
    queries: list[GoldQuery] = []
    first_line: dict[str, int] = {}
    for lineno, obj in records:
        kind = None
        try:
            one = parse_gold_records([(lineno, obj)], path)
        except InputError as exc:
            retry = dict(obj) if isinstance(obj, dict) else None
            one = None
            if retry is not None and retry.get("no_answer") in (None, False):
                retry["no_answer"] = True
                try:
                    one = parse_gold_records([(lineno, retry)], path)
                    kind = "unmarked_no_answer"
                except InputError:
                    one = None
            if one is None:
                problems.append(Problem("schema", _message(exc), lineno))
                continue
        query = _queries_of(one, [lineno])[0]
        if kind == "unmarked_no_answer":
            query = GoldQuery(query.query_id, lineno, query.labels, query.must_not_retrieve, False, query.fields)
            problems.append(Problem(kind, "has no relevant item (grade >= 1) and is not marked \"no_answer\": true",
                                    lineno, query.query_id))
        if query.query_id in first_line:
            problems.append(Problem("duplicate", f"repeats query id {query.query_id!r} of line {first_line[query.query_id]}",
                                    lineno, query.query_id))
            continue
        first_line[query.query_id] = lineno
        queries.append(query)
    problems.sort(key=lambda p: (p.line or 0))
    return queries, problems


def read_gold_file(path: str | os.PathLike[str], lines: list[tuple[str, Any]] | None = None) -> GoldFile:
    """Read a JSONL gold file (``.gz`` too) with every problem listed; a Parquet gold set is read by
    the gold loader (its first problem is an error). Unreadable files raise :class:`InputError`.
    A pipe (``<(zcat gold.jsonl.gz)``) is read once, through a temporary copy.

    ``lines``: when given, receives ``(text, object)`` for every line that is valid JSON, in file
    order (the text without its line end), for commands that rewrite the file keeping its lines."""
    from rankgate.io.source import local_copy

    path = os.fspath(path)
    with local_copy(path, "gold") as local:
        found = _read_gold_file(local, lines)
    return found if local == path else GoldFile(path, found.sha256, found.queries, found.problems)


def _read_gold_file(path: str, lines: list[tuple[str, Any]] | None = None) -> GoldFile:
    from rankgate.io.jsonl import MAX_DEPTH, check_surrogates, json_depth
    from rankgate.io.source import check_file, sha256_file, text_lines

    check_file(path, "gold")
    if os.path.isdir(path):
        raise InputError("is a folder", path=path, hint="pass the gold JSONL file itself")
    digest = sha256_file(path)
    if path.endswith((".parquet", ".pq")):
        from rankgate.io.load import load_gold

        gold = load_gold(path)
        return GoldFile(path, digest, tuple(_queries_of(gold, [None] * len(gold))), ())
    from rankgate.io.tools.contract import contract_gold_records, is_samples_file

    if is_samples_file(path):  # the sample contract's samples (YAML or JSON): each sample checked on its own
        if lines is not None:
            raise InputError("holds the sample contract's samples, which this command cannot rewrite in place",
                             path=path, hint="rewriting keeps JSON lines: convert the samples to a rankgate JSONL gold set")
        queries, problems = _collect(contract_gold_records(path), [], path)
        return GoldFile(path, digest, tuple(queries), tuple(problems))
    records: list[tuple[int, Any]] = []
    json_problems: list[Problem] = []
    for lineno, line in text_lines(path):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            json_problems.append(Problem("schema", f"is not valid JSON: {exc.msg} at column {exc.colno}", lineno))
            continue
        except RecursionError:
            json_problems.append(Problem("schema", f"nests deeper than {MAX_DEPTH} levels", lineno))
            continue
        except ValueError:  # an integer of thousands of digits
            json_problems.append(Problem("schema", "holds a number too long to read", lineno))
            continue
        if line.count("[") + line.count("{") > MAX_DEPTH and json_depth(obj) > MAX_DEPTH:
            json_problems.append(Problem("schema", f"nests deeper than {MAX_DEPTH} levels", lineno))
            continue
        check_surrogates(line, obj, path, lineno)
        records.append((lineno, obj))
        if lines is not None:
            lines.append((line.rstrip("\r\n"), obj))
    if not records and not json_problems:
        raise InputError("has no queries", path=path, hint="a gold set needs at least one JSON line")
    if not json_problems:
        from rankgate.io.jsonl import parse_gold_records

        try:
            gold = parse_gold_records(records, path)
        except InputError:
            pass
        else:
            return GoldFile(path, digest, tuple(_queries_of(gold, [n for n, _ in records])), ())
    queries, problems = _collect(records, json_problems, path)
    return GoldFile(path, digest, tuple(queries), tuple(problems))
