"""Incidents: a retrieval trace in, a postmortem template out; a filled postmortem in, a regression
case for the gold set out. Pure: the command reads and writes the files; the template's markdown
is rendered by :mod:`rankgate.render.incident`.

**Trace** (one request, one JSON object; the fields of the trace model of docs/traces.md, so a line of
rankgate's trace JSONL can be saved as a file and used as is):

``request_id``        required
``query``             required, not empty (the text the user sent; ``query_text`` is accepted too)
``timestamp``, ``tenant``, ``trace_id``, ``rewritten_query``, ``corpus_version``, ``index_version``  optional
``retrieved``         list of items: ``stage`` (``candidate``, ``reranked`` or ``packed``), ``rank``,
                      ``id`` (chunk id), ``doc_id``, ``doc_version``, ``score``, ``status``, ``source``,
                      ``tenant``; all but ``stage`` and ``id`` optional
``citations``         list of ``{"id", "version"}`` (optional)
``feedback``          list of ``{"value", "reason"}`` (optional)

Any trace the trace readers know (OTLP, Phoenix, Langfuse, LangSmith, rankgate's JSONL) can be
given too; :func:`read_trace` then picks one request of it (``request_id``), see :func:`trace_from_tables`.

**Postmortem**: the markdown of :func:`rankgate.render.incident.postmortem_markdown`. Its fields are
``- key: value`` lines and ``- [x]`` boxes under ``## `` headings; a value still reading ``TODO`` is
unfilled. :func:`parse_postmortem` lists every problem at once; the command refuses the file (exit 2)
on any. A section heading, a ``- key:`` line or a ``relevant:``/``must_not_retrieve:`` list given twice
is refused: nothing may re-enter a part of the file that was already read.

Values taken from the trace reach the postmortem through :func:`pm_value` only: as written when they
are plain words, else as a one-line JSON string literal whose every character that markdown or this
parser could take as structure is a ``\\uXXXX`` escape (so no newline, ``|``, ``<``, ``-->``, ``[x]``,
``@`` or bidi control is ever written), read back exactly by :func:`read_pm_value`. The trace's
request id and query are also written in a fenced data block (``json rankgate-incident``, with
their SHA-256) that :func:`parse_postmortem` reads as data: the case's ``- query:`` must equal it.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from typing import Any

from rankgate.errors import InputError

__all__ = ["DATA_FENCE", "FAILURE_LINKS", "LIFECYCLE_STAGES", "STAGES", "Postmortem", "Trace", "TraceItem",
           "data_block", "parse_postmortem", "pm_value", "read_pm_value", "read_trace", "regression_case",
           "trace_from_tables"]

FAILURE_LINKS = ("query interpretation", "permissions", "candidate retrieval", "reranking", "context packing",
                 "generation", "citation", "corpus")
LIFECYCLE_STAGES = ("discover", "validate", "refresh", "retire")
STAGES = ("candidate", "reranked", "packed")
TODO = "TODO"
DATA_FENCE = "```json rankgate-incident"
REGENERATE = ("regenerate it: rankgate incident new --trace TRACE -o NEW.md, then copy your text into NEW.md "
              "(older postmortems have no trace data block)")

# -- values from the trace, written into the postmortem ----------------------------------------------
_WORD = r"[^\W_][\w.,;/#=+%?!'()-]*"
_PLAIN = re.compile(rf"{_WORD}(?: {_WORD})*")  # words: never markup, never a field, box or comment
_PLAIN_ITEM = re.compile(r"[^\W_][\w.;/#=+%-]*")  # one list item (a chunk id): no space, no colon
_SAFE = frozenset(" .,:;/?=+%$'()#_-")


def _quote(text: str) -> str:
    out = ['"']
    for ch in text:
        if (ch.isalnum() and ch.isprintable()) or ch in _SAFE:
            out.append(ch)
        elif ord(ch) > 0xFFFF:
            hi, lo = divmod(ord(ch) - 0x10000, 0x400)
            out.append(f"\\u{0xD800 + hi:04x}\\u{0xDC00 + lo:04x}")
        else:
            out.append(f"\\u{ord(ch):04x}")
    out.append('"')
    return "".join(out)


def pm_value(text: str, *, item: bool = False) -> str:
    """``text`` (a value from a trace) as written into the postmortem: as is when it is plain words
    (``item``: one word with no colon, for list items), else a one-line JSON string literal in which
    every character but letters, digits, spaces and ``.,:;/?=+%$'()#_-`` is a ``\\uXXXX`` escape. It
    cannot become a heading, field, box, list item, comment, HTML, mention or table cell, never reads
    as TODO, and :func:`read_pm_value` gives ``text`` back exactly."""
    plain = _PLAIN_ITEM if item else _PLAIN
    if plain.fullmatch(text) and TODO not in text:
        return text
    return _quote(text)


def read_pm_value(raw: str) -> str:
    """The value of a postmortem field or list item: a JSON string literal decoded, other text as is.
    ``ValueError`` for a literal that does not decode."""
    if raw.startswith('"'):
        value = json.loads(raw)
        if not isinstance(value, str):
            raise ValueError("not a string")
        return value
    return raw


def data_block(request_id: str, query: str) -> list[str]:
    """The fenced data block of the postmortem: the trace's request id and query, and their SHA-256."""
    data = {"format": 1, "request_id": request_id, "query": query, "sha256": _data_sha(request_id, query)}
    return [DATA_FENCE, json.dumps(data, ensure_ascii=True, sort_keys=True), "```"]


def _data_sha(request_id: str, query: str) -> str:
    return hashlib.sha256(json.dumps([request_id, query], ensure_ascii=False).encode("utf-8")).hexdigest()


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


def read_trace(path: str, request_id: str | None = None) -> Trace:
    """One request's trace. A file holding one JSON object of rankgate's request shape (see module
    docs) is read as such; any other trace export the trace readers know is read with
    :func:`rankgate.traces.read_traces` and the request ``request_id`` taken from it (a file of one
    request needs none). Bad content raises InputError naming the file and field; an id the file
    does not hold, or no id for a file of several requests, lists some that it holds."""
    import os

    from rankgate.io.source import check_file, first_byte, text_lines
    from rankgate.traces.read import read_traces

    if os.path.isdir(path):  # a Langfuse export folder
        return trace_from_tables(read_traces(path), request_id, path)
    check_file(path, "trace")
    if first_byte(path) not in (b"{", b"[") or _is_export(path) or _several_lines(path):
        return trace_from_tables(read_traces(path), request_id, path)
    text = "".join(line for _, line in text_lines(path))
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":  # one request per line: rankgate's trace JSONL
            return trace_from_tables(read_traces(path), request_id, path)
        raise InputError(f"is not valid JSON: {exc.msg}", path=path, line=exc.lineno,
                         hint="a trace is one JSON object: one request") from None
    except RecursionError:
        raise InputError("is nested too deeply to be a trace", path=path) from None
    trace = _own_trace(obj, path, text)
    if request_id is not None and request_id != trace.request_id:
        raise InputError(f"holds request {trace.request_id!r}, not {request_id!r}", path=path,
                         hint="drop --request-id, or give the file of that request")
    return trace


def _several_lines(path: str) -> bool:
    """Whether the file is JSONL: its first line is a whole JSON object and another line follows
    (read as far as the second line, so a large export is not read whole here)."""
    from rankgate.io.source import text_lines

    first = None
    for _, line in text_lines(path):
        if not line.strip():
            continue
        if first is not None:
            return True
        try:
            first = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            return False
        if not isinstance(first, dict):
            return False
    return False


def _is_export(path: str) -> bool:
    """Whether the trace readers take the file for another tool's export (its first record has
    the keys of OTLP, Phoenix, Langfuse, LangSmith…), not rankgate's request shape."""
    from rankgate.traces.read import detect_format

    try:
        return detect_format(path) != "jsonl"
    except InputError:
        return False


def _query_key(obj: dict[str, Any]) -> str:
    """Which of a request's two query fields the trace reader takes: ``query``, else ``query_text``."""
    return "query" if obj.get("query") is not None or "query_text" not in obj else "query_text"


def _query(obj: dict[str, Any], path: str, line: int | None) -> str:
    """A request's query as the trace reader takes it (:func:`_query_key`); an InputError naming the
    field as written, and ``line``, when it is missing, null, empty or only whitespace."""
    key = _query_key(obj)
    raw = obj.get(key)
    if raw is None:
        raise InputError("is missing" if key not in obj else "is null", path=path, line=line, field=key,
                         hint='the regression case needs the query the user sent: give it as "query" or '
                              '"query_text", or take the trace of a request that logged it')
    if isinstance(raw, str) and not raw.strip():
        raise InputError("is empty" if not raw else "is only whitespace", path=path, line=line, field=key,
                         hint=f'the regression case needs the query the user sent: write it in "{key}", or '
                              "take the trace of a request that logged it")
    return str(_str(obj, key, path, ""))


def _key_line(text: str, key: str) -> int | None:
    """The line of the first ``"key":`` in a request's JSON text (None when it has none)."""
    found = re.search(rf'"{re.escape(key)}"\s*:', text)
    return None if found is None else text.count("\n", 0, found.start()) + 1


def _own_trace(obj: Any, path: str, text: str = "") -> Trace:
    if not isinstance(obj, dict):
        raise InputError(f"must be a JSON object; got {type(obj).__name__}", path=path,
                         hint="a trace is one request; take one line of a trace JSONL")
    rid = _str(obj, "request_id", path, "", required=True)
    key = _query_key(obj)
    query = _query(obj, path, _key_line(text, key) if key in obj else None)
    from rankgate.traces.build import Check
    from rankgate.traces.formats.jsonl import parse_request

    parse_request(obj, Check(path, None), require_timestamp=False)  # one line of the trace JSONL, checked by its reader
    fields = {k: v for k in ("timestamp", "tenant", "trace_id", "rewritten_query", "corpus_version", "index_version")
              for v in [_str(obj, k, path, "")] if v is not None}
    return Trace(str(rid), str(query), tuple(_items(obj, path)), _pairs(obj, "citations", "id", "version", path),
                 _pairs(obj, "feedback", "value", "reason", path), fields)


SHOWN_IDS = 5


def _request_line(path: str, line: int | None) -> dict[str, Any] | None:
    """Line ``line`` of a text file as a request of rankgate's trace JSONL (an object with a
    ``request_id``), or None (another format, a binary file, no such line)."""
    from rankgate.io.source import text_lines

    if line is None:
        return None
    try:
        for n, text in text_lines(path):
            if n == line:
                obj = json.loads(text)
                return obj if isinstance(obj, dict) and "request_id" in obj else None
    except (InputError, OSError, ValueError, RecursionError):
        return None
    return None


def trace_from_tables(tables: Any, request_id: str | None, path: str) -> Trace:
    """The :class:`Trace` of request ``request_id`` in canonical trace tables
    (:class:`rankgate.traces.model.TraceTables`, read from ``path``); ``None`` when they hold one
    request."""
    import pyarrow.compute as pc

    requests = tables.requests
    ids = requests.column("request_id").to_pylist()
    if not ids:
        raise InputError("holds no request", path=path, hint="give the trace export of the incident's request")

    def some() -> str:
        shown = ", ".join(repr(i) for i in ids[:SHOWN_IDS])
        return shown + (f" … ({len(ids):,} in all)" if len(ids) > SHOWN_IDS else "")

    if request_id is None:
        if len(ids) > 1:
            raise InputError(f"holds {len(ids):,} requests; pick one with --request-id", path=path,
                             hint=f"requests in it: {some()}")
        request_id = ids[0]
    elif request_id not in ids:
        raise InputError(f"holds no request {request_id!r}", path=path, hint=f"requests in it: {some()}")
    row = requests.filter(pc.equal(requests.column("request_id"), request_id)).to_pylist()[0]
    query = row.get("query_text")
    if not query or not str(query).strip():
        source, line = row.get("source_file") or path, row.get("source_line")
        written = _request_line(source, line)
        if written is not None:  # rankgate's trace JSONL: the field as the user wrote it
            _query(written, source, line)
        raise InputError(f"request {request_id!r} has no query: its query text is empty or missing",
                         path=source, line=line,
                         hint="the regression case needs the query the user sent: take the trace of a request "
                              "that logged it (where an export keeps the query: docs/traces.md)")

    def rows(table: Any) -> list[dict[str, Any]]:
        return table.filter(pc.equal(table.column("request_id"), request_id)).to_pylist()

    items = tuple(TraceItem(r["stage"], r["rank"], r["item_id"], r["doc_id"], r["doc_version"], r["score"],
                            r["status"], r["source"], r["tenant"]) for r in rows(tables.all_items()))
    citations = tuple((str(r["item_id"] or r["doc_id"] or ""), r["version"]) for r in rows(tables.citations))
    feedback = tuple(("" if r["value"] is None else f"{r['value']:g}", r["reason"]) for r in rows(tables.feedback))
    fields = {k: str(row[k]) for k in ("tenant", "trace_id", "rewritten_query", "corpus_version", "index_version")
              if row.get(k) not in (None, "")}
    if row.get("ts") is not None:
        fields["timestamp"] = row["ts"].isoformat().replace("+00:00", "Z")
    return Trace(str(request_id), str(query), items, citations, feedback, fields)


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


class _Parsed:
    """A postmortem split into sections: ``sections`` maps a heading (lower case; ``""`` for the
    header) to its ``(line number, line)`` pairs outside comments and code fences; ``data`` holds the
    lines of the trace data blocks; ``repeated`` the headings met a second time ``(line, heading,
    first line)``."""

    def __init__(self, text: str) -> None:
        self.sections: dict[str, list[tuple[int, str]]] = {"": []}
        self.data: list[tuple[int, str]] = []
        self.data_blocks = 0
        self.repeated: list[tuple[int, str, int]] = []
        first: dict[str, int] = {}
        current = ""
        in_comment = False
        fence: str | None = None
        for n, line in enumerate(text.splitlines(), start=1):
            if fence is not None:
                if line.strip() == "```":
                    fence = None
                elif fence == DATA_FENCE:
                    self.data.append((n, line))
                continue
            if in_comment:
                in_comment = "-->" not in line
                continue
            if line.startswith("```"):
                fence = line.strip()
                if fence == DATA_FENCE:
                    self.data_blocks += 1
                continue
            if "<!--" in line:
                in_comment = "-->" not in line.split("<!--", 1)[1]
                continue
            if line.startswith("## "):
                current = line[3:].strip().lower()
                if current in first:
                    self.repeated.append((n, current, first[current]))
                first.setdefault(current, n)
                self.sections.setdefault(current, [])
                continue
            self.sections.setdefault(current, []).append((n, line))


def _unfilled(value: str | None) -> bool:
    return value is None or not value.strip() or (TODO in value and not value.startswith('"'))


def parse_postmortem(text: str, path: str) -> tuple[Postmortem | None, list[InputError]]:
    """The filled postmortem, or ``None`` and every problem found (each naming its line or section)."""
    parsed = _Parsed(text)
    sec = parsed.sections
    problems: list[InputError] = []

    def err(msg: str, line: int | None = None, field: str | None = None, hint: str | None = None) -> None:
        problems.append(InputError(msg, path=path, line=line, field=field, hint=hint))

    for n, name, first in parsed.repeated:
        err(f"section '## {name}' is given twice (first on line {first})", line=n,
            hint="keep one of each heading of the template")
    data = _trace_data(parsed, err)
    reported: set[tuple[str, str, int]] = set()

    def fields(name: str) -> dict[str, tuple[int, str]]:
        out: dict[str, tuple[int, str]] = {}
        for n, line in sec.get(name, []):
            m = _FIELD.match(line)
            if m is None:
                continue
            key = m.group(1)
            if key in out:
                if (name, key, n) not in reported:
                    reported.add((name, key, n))
                    err(f"is given twice in section '{name or 'header'}' (first on line {out[key][0]})", line=n,
                        field=key, hint="keep one line for each field")
                continue
            out[key] = (n, m.group(2))
        return out

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
        try:
            return read_pm_value(value)
        except ValueError:
            err(f"is not a readable quoted value: {value[:60]!r}", line=n, field=key,
                hint="write the value plainly, or as it was written by incident new")
            return None

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
    field("", "request_id")
    query = field("regression test", "query")
    if data is not None:
        request_id = fields("").get("request_id")
        if request_id is not None and _read(request_id[1]) != data["request_id"]:
            err("differs from the trace's request id in the trace data block", line=request_id[0], field="request_id",
                hint="put back the request id incident new wrote, or " + REGENERATE)
        if query is not None and query != data["query"]:
            n = fields("regression test")["query"][0]
            err("differs from the trace's query (the trace data block)", line=n, field="query",
                hint=f"the case's query is the trace's: write it back as '- query: {pm_value(data['query'])[:200]}'")
    relevant, must_not = _case_lists(sec.get("regression test", []), err)
    if not problems and not relevant:
        err("section 'regression test' lists no relevant chunk", hint="add '- chunk_id | grade 3 | why it answers' "
            "under 'relevant:'")
    if problems:
        return None, problems
    return Postmortem(str(incident_id), str(date), corpus_version, tenant, str(query), tuple(relevant),
                      tuple(must_not), link, stage, str(detectable).lower(), signal), []


def _read(raw: str) -> str | None:
    try:
        return read_pm_value(raw)
    except ValueError:
        return None


def _first_value(item: str) -> str | None:
    """The chunk id a must_not_retrieve line starts with (a quoted one may hold spaces)."""
    if not item.startswith('"'):
        return item.split()[0]
    try:
        value, _ = json.JSONDecoder().raw_decode(item)
    except (json.JSONDecodeError, RecursionError):
        return None
    return value if isinstance(value, str) else None


def _trace_data(parsed: _Parsed, err: Any) -> dict[str, str] | None:
    """The trace data block: ``{"request_id", "query"}``, or ``None`` (an error said why)."""
    if parsed.data_blocks != 1:
        if parsed.data_blocks == 0:
            err("has no trace data block ('" + DATA_FENCE + "')", field="trace data", hint=REGENERATE)
        else:
            err(f"holds {parsed.data_blocks} trace data blocks", line=parsed.data[0][0] if parsed.data else None,
                field="trace data", hint="keep the one incident new wrote")
        return None
    line = parsed.data[0][0] if parsed.data else None
    try:
        obj = json.loads("\n".join(text for _, text in parsed.data))
    except (json.JSONDecodeError, RecursionError):
        obj = None
    if (not isinstance(obj, dict) or obj.get("format") != 1 or not isinstance(obj.get("request_id"), str)
            or not isinstance(obj.get("query"), str)
            or obj.get("sha256") != _data_sha(obj["request_id"], obj["query"])):
        err("was changed: it no longer holds the trace's request id and query with their SHA-256", line=line,
            field="trace data", hint="incident add reads it as written by incident new; " + REGENERATE)
        return None
    return {"request_id": obj["request_id"], "query": obj["query"]}


def _case_lists(lines: list[tuple[int, str]], err: Any) -> tuple[list[tuple[str, int, str | None]], list[str]]:
    relevant: list[tuple[str, int, str | None]] = []
    must_not: list[str] = []
    mode = None
    opened: dict[str, int] = {}
    for n, line in lines:
        head = line.strip().lower()
        if head in ("relevant:", "must_not_retrieve:"):
            mode = head[:-1]
            if mode in opened:
                err(f"list '{head}' is given twice in section 'regression test' (first on line {opened[mode]})",
                    line=n, field=mode, hint="keep one list of each; put every chunk in it")
                mode = None  # nothing under a repeated list is read
                continue
            opened[mode] = n
            continue
        m = _ITEM.match(line)
        if not m or mode is None:
            continue
        item = m.group(1)
        if item.startswith("(") and item.endswith(")"):
            continue  # "(none)"
        if TODO in item and not item.startswith('"'):
            err(f"is not filled in: {item!r}", line=n, field=mode, hint="replace TODO, or delete the line")
            continue
        if mode == "must_not_retrieve":
            chunk = _first_value(item)
            if chunk is None:
                err(f"is not a readable chunk id: {item[:60]!r}", line=n, field=mode)
                continue
            must_not.append(chunk)
            continue
        parts = [p.strip() for p in item.split("|")]
        grade_m = re.fullmatch(r"grade\s+(\d+)", parts[1]) if len(parts) > 1 else None
        chunk = _read(parts[0])
        if not chunk or grade_m is None:
            err(f"must read 'chunk_id | grade N | note'; got {item!r}", line=n, field="relevant")
            continue
        relevant.append((chunk, int(grade_m.group(1)), " | ".join(parts[2:]) or None))
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
