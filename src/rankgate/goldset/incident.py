"""Incidents: a retrieval trace in, a postmortem template out; a filled postmortem in, a regression
case for the gold set out. Pure: the command reads and writes the files; the template's markdown
is rendered by :mod:`rankgate.report.incident`.

**Trace** (one request, one JSON object; the fields of the trace model of docs/traces.md, so a line of
rankgate's trace JSONL can be saved as a file and used as is):

``request_id``        required
``query``             required (the text the user sent; ``query_text`` is accepted too)
``timestamp``, ``tenant``, ``trace_id``, ``rewritten_query``, ``corpus_version``, ``index_version``  optional
``retrieved``         list of items: ``stage`` (``candidate``, ``reranked`` or ``packed``), ``rank``,
                      ``id`` (chunk id), ``doc_id``, ``doc_version``, ``score``, ``status``, ``source``,
                      ``tenant``; all but ``stage`` and ``id`` optional
``citations``         list of ``{"id", "version"}`` (optional)
``feedback``          list of ``{"value", "reason"}`` (optional)

**Postmortem**: the markdown of :func:`rankgate.report.incident.postmortem_markdown`. Its fields are
``- key: value`` lines and ``- [x]`` boxes under ``## `` headings; a value still reading ``TODO`` is
unfilled. :func:`parse_postmortem` lists every problem at once; the command refuses the file (exit 2)
on any.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from ..errors import InputError

__all__ = ["FAILURE_LINKS", "LIFECYCLE_STAGES", "STAGES", "Postmortem", "Trace", "TraceItem", "parse_postmortem",
           "read_trace", "regression_case"]

FAILURE_LINKS = ("query interpretation", "permissions", "candidate retrieval", "reranking", "context packing",
                 "generation", "citation", "corpus")
LIFECYCLE_STAGES = ("discover", "validate", "refresh", "retire")
STAGES = ("candidate", "reranked", "packed")
TODO = "TODO"


@dataclass(frozen=True)
class TraceItem:
    stage: str
    rank: int | None
    id: str
    doc_id: str | None = None
    doc_version: str | None = None
    score: float | None = None
    status: str | None = None
    source: str | None = None
    tenant: str | None = None


@dataclass(frozen=True)
class Trace:
    request_id: str
    query: str
    items: tuple[TraceItem, ...]
    citations: tuple[tuple[str, str | None], ...]  # (id, version)
    feedback: tuple[tuple[str, str | None], ...]  # (value, reason)
    fields: dict[str, str]  # timestamp, tenant, trace_id, rewritten_query, corpus_version, index_version


def _str(obj: dict[str, Any], key: str, path: str, where: str, *, required: bool = False) -> str | None:
    v = obj.get(key)
    if v is None or v == "":
        if required:
            raise InputError("is missing", path=path, field=where + key,
                             hint="a trace is one request as JSON; see docs/gold.md, 'The trace'")
        return None
    if isinstance(v, (dict, list, bool)):
        raise InputError(f"must be a string; got {json.dumps(v)[:60]}", path=path, field=where + key)
    return str(v)


def _items(obj: dict[str, Any], path: str) -> list[TraceItem]:
    raw = obj.get("retrieved", [])
    if not isinstance(raw, list):
        raise InputError(f"must be a list of retrieved items; got {type(raw).__name__}", path=path, field="retrieved")
    out = []
    for i, it in enumerate(raw):
        where = f"retrieved[{i}]."
        if not isinstance(it, dict):
            raise InputError(f"must be an object; got {json.dumps(it)[:60]}", path=path, field=where[:-1])
        stage = _str(it, "stage", path, where, required=True)
        if stage not in STAGES:
            raise InputError(f"must be one of {', '.join(STAGES)}; got {stage!r}", path=path, field=where + "stage")
        rank = it.get("rank")
        if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int) or rank < 1):
            raise InputError(f"must be a rank >= 1; got {rank!r}", path=path, field=where + "rank")
        score = it.get("score")
        if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))
                                  or not math.isfinite(score)):
            raise InputError(f"must be a finite number; got {score!r}", path=path, field=where + "score")
        opt = {k: _str(it, k, path, where) for k in ("doc_id", "doc_version", "status", "source", "tenant")}
        out.append(TraceItem(stage, rank, str(_str(it, "id", path, where, required=True)),
                             score=None if score is None else float(score), **opt))
    return out


def _pairs(obj: dict[str, Any], key: str, a: str, b: str, path: str) -> tuple[tuple[str, str | None], ...]:
    raw = obj.get(key, [])
    if not isinstance(raw, list) or not all(isinstance(x, dict) for x in raw):
        raise InputError("must be a list of objects", path=path, field=key)
    out = []
    for i, x in enumerate(raw):
        first = _str(x, a, path, f"{key}[{i}].", required=True)
        out.append((str(first), _str(x, b, path, f"{key}[{i}].")))
    return tuple(out)


def read_trace(path: str) -> Trace:
    """Read one request's trace (see module docs); bad content raises InputError naming the field."""
    from ..data.source import check_file, text_lines

    check_file(path, "trace")
    text = "".join(line for _, line in text_lines(path))
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"is not valid JSON: {exc.msg}", path=path, line=exc.lineno,
                         hint="a trace is one JSON object: one request") from None
    except RecursionError:
        raise InputError("is nested too deeply to be a trace", path=path) from None
    if not isinstance(obj, dict):
        raise InputError(f"must be a JSON object; got {type(obj).__name__}", path=path,
                         hint="a trace is one request; take one line of a trace JSONL")
    rid = _str(obj, "request_id", path, "", required=True)
    query = _str(obj, "query", path, "") or _str(obj, "query_text", path, "", required=True)
    from ..traces.build import Check
    from ..traces.formats.jsonl import parse_request

    parse_request(obj, Check(path, None), require_timestamp=False)  # one line of the trace JSONL, checked by its reader
    fields = {k: v for k in ("timestamp", "tenant", "trace_id", "rewritten_query", "corpus_version", "index_version")
              for v in [_str(obj, k, path, "")] if v is not None}
    return Trace(str(rid), str(query), tuple(_items(obj, path)), _pairs(obj, "citations", "id", "version", path),
                 _pairs(obj, "feedback", "value", "reason", path), fields)


# -- the filled postmortem ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Postmortem:
    incident_id: str
    date: str
    corpus_version: str | None
    tenant: str | None
    query: str
    relevant: tuple[tuple[str, int, str | None], ...]  # (chunk id, grade, note)
    must_not_retrieve: tuple[str, ...]
    failure_link: str
    lifecycle_stage: str
    detectable: str
    signal: str | None


_FIELD = re.compile(r"^\s*[-*]\s+([a-z_]+):\s*(.*?)\s*$")
_BOX = re.compile(r"^\s*[-*]\s+\[([ xX])\]\s+(.+?)\s*$")
_ITEM = re.compile(r"^\s*[-*]\s+(.+?)\s*$")


def _sections(text: str) -> dict[str, list[tuple[int, str]]]:
    out: dict[str, list[tuple[int, str]]] = {"": []}
    current = ""
    in_comment = False
    for n, line in enumerate(text.splitlines(), start=1):
        if "<!--" in line:
            in_comment = "-->" not in line
            continue
        if in_comment:
            in_comment = "-->" not in line
            continue
        if line.startswith("## "):
            current = line[3:].strip().lower()
            out.setdefault(current, [])
            continue
        out.setdefault(current, []).append((n, line))
    return out


def _unfilled(value: str | None) -> bool:
    return value is None or not value.strip() or TODO in value


def parse_postmortem(text: str, path: str) -> tuple[Postmortem | None, list[InputError]]:
    """The filled postmortem, or ``None`` and every problem found (each naming its line or section)."""
    sec = _sections(text)
    problems: list[InputError] = []

    def err(msg: str, line: int | None = None, field: str | None = None, hint: str | None = None) -> None:
        problems.append(InputError(msg, path=path, line=line, field=field, hint=hint))

    def fields(name: str) -> dict[str, tuple[int, str]]:
        return {m.group(1): (n, m.group(2)) for n, line in sec.get(name, []) for m in [_FIELD.match(line)] if m}

    def field(name: str, key: str, *, required: bool = True) -> str | None:
        got = fields(name).get(key)
        if got is None:
            if required:
                err(f"is missing from section '{name or 'header'}'", field=key, hint=f"add a line '- {key}: …'")
            return None
        n, value = got
        if _unfilled(value):
            if required:
                err("is not filled in", line=n, field=key, hint="replace TODO with the value")
            return None
        return value

    def prose(name: str) -> None:
        lines = [(n, line) for n, line in sec.get(name, []) if line.strip()]
        if name not in sec:
            err(f"has no section '## {name}'", hint="keep the template's headings")
        elif not lines or any(TODO in line for _, line in lines):
            err(f"section '{name}' is not filled in", line=lines[0][0] if lines else None,
                hint="replace TODO with what happened")

    def one_box(name: str, choices: tuple[str, ...], what: str) -> str:
        boxes = [(n, m.group(1) != " ", m.group(2).strip().lower()) for n, line in sec.get(name, [])
                 for m in [_BOX.match(line)] if m]
        ticked = [(n, label) for n, on, label in boxes if on]
        if len(ticked) != 1:
            got = "none is ticked" if not ticked else f"{len(ticked)} are ticked ({', '.join(t for _, t in ticked)})"
            err(f"section '{name}': tick exactly one {what}; {got}", line=boxes[0][0] if boxes else None,
                hint="write [x] in the box of the one that broke")
            return ""
        n, label = ticked[0]
        if label not in choices:
            err(f"section '{name}': {label!r} is not a {what}", line=n, hint=f"one of: {', '.join(choices)}")
            return ""
        return label

    incident_id = field("", "incident_id")
    date = field("", "date")
    if date is not None and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
        err(f"must be a date YYYY-MM-DD; got {date!r}", line=fields("")["date"][0], field="date")
    corpus_version = field("", "corpus_version", required=False)
    tenant = field("", "tenant", required=False)
    for name in ("summary", "root cause", "fix"):
        prose(name)
    link = one_box("failure-chain link that broke", FAILURE_LINKS, "failure-chain link")
    stage = one_box("lifecycle gap", LIFECYCLE_STAGES, "lifecycle stage")
    detectable = field("was it detectable", "detectable")
    if detectable is not None and detectable.lower() not in ("yes", "no"):
        err(f"must be yes or no; got {detectable!r}", line=fields("was it detectable")["detectable"][0],
            field="detectable")
    signal = field("was it detectable", "signal", required=detectable is not None and detectable.lower() == "yes")
    query = field("regression test", "query")
    relevant, must_not = _case_lists(sec.get("regression test", []), err)
    if not problems and not relevant:
        err("section 'regression test' lists no relevant chunk", hint="add '- chunk_id | grade 3 | why it answers' "
            "under 'relevant:'")
    if problems:
        return None, problems
    return Postmortem(str(incident_id), str(date), corpus_version, tenant, str(query), tuple(relevant),
                      tuple(must_not), link, stage, str(detectable).lower(), signal), []


def _case_lists(lines: list[tuple[int, str]], err: Any) -> tuple[list[tuple[str, int, str | None]], list[str]]:
    relevant: list[tuple[str, int, str | None]] = []
    must_not: list[str] = []
    mode = None
    for n, line in lines:
        head = line.strip().lower()
        if head in ("relevant:", "must_not_retrieve:"):
            mode = head[:-1]
            continue
        m = _ITEM.match(line)
        if not m or mode is None:
            continue
        item = m.group(1)
        if item.startswith("(") and item.endswith(")"):
            continue  # "(none)"
        if TODO in item:
            err(f"is not filled in: {item!r}", line=n, field=mode, hint="replace TODO, or delete the line")
            continue
        if mode == "must_not_retrieve":
            must_not.append(item.split()[0])
            continue
        parts = [p.strip() for p in item.split("|")]
        grade_m = re.fullmatch(r"grade\s+(\d+)", parts[1]) if len(parts) > 1 else None
        if not parts[0] or grade_m is None:
            err(f"must read 'chunk_id | grade N | note'; got {item!r}", line=n, field="relevant")
            continue
        relevant.append((parts[0], int(grade_m.group(1)), " | ".join(parts[2:]) or None))
    return relevant, must_not


def regression_case(pm: Postmortem, *, query_id: str | None = None) -> dict[str, Any]:
    """The gold record of a filled postmortem (``source_of_query: incident``)."""
    row: dict[str, Any] = {
        "query_id": query_id or pm.incident_id,
        "query": pm.query,
        "relevant_chunks": [{"chunk_id": c, "grade": g, **({"note": n} if n else {})} for c, g, n in pm.relevant],
        "must_not_retrieve": list(pm.must_not_retrieve),
        "source_of_query": "incident",
        "incident_id": pm.incident_id,
        "failure_link": pm.failure_link,
        "lifecycle_stage": pm.lifecycle_stage,
        "created": pm.date,
    }
    if pm.corpus_version:
        row["corpus_version"] = pm.corpus_version
    if pm.tenant:
        row["tags"] = {"tenant": pm.tenant}
    return row
