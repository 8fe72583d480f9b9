"""Langfuse and LangSmith exports: rows of observations / runs, joined per trace through the field map.

**Langfuse** blob-storage export (JSON lines, JSON or Parquet; ``observations_v2/`` and ``scores/``,
optionally ``traces/``): an observation row has ``id, trace_id, type, parent_observation_id,
start_time, end_time, name, metadata, level, status_message, input, output`` (``input``, ``output``
and ``metadata`` may be JSON text). ``latency`` is ignored (seconds or milliseconds depending on
when the integration was created): durations come from ``start_time``/``end_time``. A score row
(``trace_id, name, value, string_value, data_type, comment``) is user feedback when its name is one
of the field map's ``feedback_names``; other scores (evaluations) are not feedback and are left out.

**LangSmith** runs (bulk export Parquet, or JSON/JSON lines from the API): ``id, trace_id,
parent_run_id, run_type, name, start_time, end_time, inputs, outputs, error, extra``; retriever
runs' ``outputs.documents`` are ``{page_content, type, metadata}``. Feedback rows (``run_id, key,
score, value, comment``) whose key is one of ``feedback_names`` attach to the run's trace.

The join (both): one trace is one request. Its root row (no parent, or a parent not in the trace;
the earliest if several) gives the time, ``total_ms`` and the request fields (paths of the field
map's ``request``, looked up in the root row, then the other rows in start order). Candidates are
the documents (``documents`` paths) of retriever rows (Langfuse type RETRIEVER, LangSmith run_type
retriever) whose name is not a reranked/packed stage name; rows named as ``stages.reranked`` /
``stages.packed`` give those stages. ``retrieval_ms``/``rerank_ms`` are wall-clock over those rows,
``synthesis_ms`` over GENERATION / llm rows, ``parse_ms`` over rows named ``parse``. A row with
level ERROR (Langfuse) or an ``error`` (LangSmith) makes the request an error; its status message or
error text naming an abort makes it a client abort.
"""

from __future__ import annotations

import json
from functools import partial
from dataclasses import dataclass
from typing import Any

from rankgate._util import progress
from rankgate.errors import InputError
from rankgate.traces.build import ABORT_ERROR_TYPES, Builder, Check, check_end, parse_iso
from rankgate.traces.fieldmap import resolve, walk

__all__ = ["read_langfuse", "read_langsmith"]

_STATUS = {"active": "active", "current": "active", "live": "active", "deprecated": "deprecated",
           "superseded": "superseded", "retired": "retired", "deleted": "retired", "removed": "retired"}


@dataclass
class Obs:
    trace_id: str
    id: str
    parent: str | None
    kind: str  # retriever, llm, span
    name: str
    start_us: int
    end_us: int | None
    row: dict[str, Any]
    error: str | None  # None: no error; "": an error without text
    path: str
    line: int | None


@dataclass
class Fb:
    trace_id: str
    value: Any
    reason: str | None
    path: str
    line: int | None


def _rows(path: str, label: str, builder: Builder) -> Any:
    from rankgate.traces.formats.phoenix import _rows as rows

    yield from rows(path, label, builder)


def _time(chk: Check, v: Any, field: str, required: bool) -> int | None:
    if v is None or v == "":
        if required:
            raise chk.fail(field, "is missing")
        return None
    return parse_iso(v, chk.path, chk.line, field)


def _wall(rows: list[Obs]) -> float | None:
    ends = [r.end_us for r in rows]
    if not rows or any(e is None for e in ends):
        return None
    return (max(e for e in ends if e is not None) - min(r.start_us for r in rows)) / 1000.0


def _first(row: dict[str, Any], paths: list[str]) -> Any:
    for p in paths:
        v = walk(row, p)
        if v is not None:
            return v
    return None


_TEXT_KEYS = ("page_content", "content", "text")


def _docs(o: Obs, fm: dict[str, Any], stage: str) -> list[dict[str, Any]]:
    """The documents of one row: the first ``documents`` path holding something decides. A list, or
    an object with a ``documents`` list, is read; anything else there (a JSON string cut short, a
    number, an object without documents) is an error naming the path, never an empty list."""
    chk = Check(o.path, o.line)
    raw = None
    for p in fm["documents"]:
        v = walk(o.row, p)
        if v is None:
            continue
        if isinstance(v, dict) and "documents" in v:
            v, p = v["documents"], p + ".documents"
        if isinstance(v, list):
            raw = v
            break
        if isinstance(v, dict) and not v:
            continue  # an empty object: this row returned nothing there
        got = (f"text that is not a JSON list ({v[:30]!r})" if isinstance(v, str)
               else f"{'an object without documents' if isinstance(v, dict) else type(v).__name__}")
        raise chk.fail(p, f"must be a list of documents; got {got}",
                       hint="the export was cut short or written another way; a field map's 'documents' "
                            "names where the documents are")
    if raw is None:
        return []
    out = []
    dm = fm["document"]
    for i, d in enumerate(raw):
        w = f"{o.name or o.kind}.documents[{i}]."
        if not isinstance(d, dict):
            raise chk.fail(w[:-1], f"must be an object; got {json.dumps(d)[:40]}")
        status = chk.string(walk(d, dm["status"]), w + "status")
        if status is not None:
            st = _STATUS.get(status.strip().lower())
            if st is None:
                raise chk.fail(w + "status", f"is not a document status; got {status[:40]!r}",
                               hint="active, deprecated, superseded or retired")
            status = st
        dep = walk(d, dm["deprecated"])
        if status is None and dep is not None and chk.boolean(dep, w + "deprecated"):
            status = "deprecated"
        version = walk(d, dm["version"])
        item_id = chk.string(walk(d, dm["id"]), w + dm["id"], ids=True)
        derived = False
        if item_id is None:
            tpath = dm.get("text")
            text = walk(d, tpath) if tpath else next((d[k] for k in _TEXT_KEYS if d.get(k) not in (None, "")), None)
            if text is None:
                raise chk.fail(w + dm["id"], "is missing",
                               hint="a document needs an id or its text (page_content); a field map can name "
                                    "where the id is (document: {id: metadata.chunk_id})")
            from rankgate.io.shapes import text_id

            item_id, derived = text_id(str(chk.string(text, w + (tpath or "text"), required=True))), True
        out.append({
            "stage": stage,
            "item_id": item_id,
            "doc_id": chk.string(walk(d, dm["doc_id"]), w + dm["doc_id"], ids=True),
            "doc_version": chk.string(str(version) if isinstance(version, int) and not isinstance(version, bool)
                                      else version, w + dm["version"]),
            "score": chk.number(walk(d, dm["score"]), w + dm["score"], strings=True),
            "status": status,
            "source": chk.string(walk(d, dm["source"]), w + dm["source"]),
            "tenant": chk.string(walk(d, dm["tenant"]), w + dm["tenant"]),
            "derived": derived,
        })
    return out


_KINDS = {"string": ("tenant", "surface", "conversation_id", "data_source", "rewritten_query", "index_version",
                     "corpus_version", "error_type", "retry_reason", "privacy_mode", "request_id", "adapter"),
          "bool": ("fallback", "blocked"),
          "int": ("top_k", "turn", "http_status", "retry_attempts", "sensitive_tokens", "leaked_tokens", "secure_fields",
                  "bypassed"),
          "float": ("soft_deadline_ms", "cpu_ms", "memory_mb")}
_RANGE = {"top_k": (1, 2**31 - 1), "turn": (1, 2**31 - 1), "http_status": (100, 599), "retry_attempts": (0, 2**31 - 1)}


@dataclass(frozen=True)
class Usage:
    """Where a format's rows log what they cost: per cost key, the paths tried in each row (the first
    present counts), summed over the rows of the kinds ``kinds`` (None: every row)."""

    paths: dict[str, tuple[str, ...]]
    kinds: frozenset[str] | None = None


# Langfuse keeps usage and cost on the generation/embedding observations themselves (parents hold none):
# the blob-storage export's usage_details/cost_details (maps; total_cost the sum), the API's camelCase names
LANGFUSE_USAGE = Usage({"tokens_in": ("usage_details.input", "usageDetails.input", "usage.input", "promptTokens"),
                        "tokens_out": ("usage_details.output", "usageDetails.output", "usage.output",
                                       "completionTokens"),
                        "usd": ("cost_details.total", "costDetails.total", "total_cost", "calculatedTotalCost")})
# LangSmith adds each run's tokens and cost up into its parents: only the llm runs are summed
LANGSMITH_USAGE = Usage({"tokens_in": ("prompt_tokens",), "tokens_out": ("completion_tokens",),
                         "usd": ("total_cost",)}, frozenset({"llm"}))


def _cost(trace: list[Obs], given: dict[str, list[tuple[Any, Check]]], usage: Usage | None) -> dict[str, Any]:
    """The request's cost columns: the field map's ``cost.<key>`` paths (``given``), else the rows' usage summed."""
    from rankgate.traces.cost import summed_cost

    parts = dict(given)
    for key, paths in (usage.paths.items() if usage is not None else ()):
        if key in parts:
            continue
        found = []
        for o in trace:
            if usage.kinds is not None and o.kind not in usage.kinds:  # type: ignore[union-attr]
                continue
            v = _first(o.row, list(paths))
            if v is not None:
                found.append((v, Check(o.path, o.line)))
        if found:
            parts[key] = found
    return summed_cost(parts)


def _assemble(trace: list[Obs], feedback: list[Fb], builder: Builder, fm: dict[str, Any],
              usage: Usage | None = None) -> None:
    trace = sorted(trace, key=lambda o: (o.start_us, o.id))
    ids = {o.id for o in trace}
    roots = [o for o in trace if not o.parent or o.parent not in ids]
    root = roots[0] if roots else trace[0]
    ordered = [root] + [o for o in trace if o is not root]
    chk = Check(root.path, root.line)
    names = {k: {n.lower() for n in v} for k, v in fm["stages"].items()}
    rr = [o for o in trace if o.name.lower() in names.get("reranked", set())]
    pk = [o for o in trace if o.name.lower() in names.get("packed", set())]
    ret = [o for o in trace if o.kind == "retriever" and o not in rr and o not in pk]
    items = [d for o in ret for d in _docs(o, fm, "candidate")]
    items += [d for o in rr for d in _docs(o, fm, "reranked")]
    items += [d for o in pk for d in _docs(o, fm, "packed")]

    req: dict[str, Any] = {"source_file": root.path, "source_line": root.line, "ts": root.start_us,
                           "trace_id": root.trace_id}
    cost_given: dict[str, list[tuple[Any, Check]]] = {}
    for f, path in fm["request"].items():
        if f == "citations":
            continue
        v, c = None, chk
        for o in ordered:
            v = walk(o.row, path)
            if v is not None:
                c = Check(o.path, o.line)
                break
        if f.startswith("cost."):  # (a cost key: checked with the others, rankgate.traces.cost)
            if v is not None:
                cost_given[f[5:]] = [(v, c)]
        elif f in _KINDS["string"]:
            req[f] = c.string(v, path, ids=f in ("request_id", "conversation_id"))
        elif f in _KINDS["bool"]:
            req[f] = c.boolean(v, path)
        elif f in _KINDS["int"]:
            lo, hi = _RANGE.get(f, (0, 2**63 - 1))
            req[f] = c.integer(v, path, low=lo, high=hi, strings=True)
        else:
            req[f] = c.number(v, path, nonneg=True, strings=True)
    req["request_id"] = req.get("request_id") or root.trace_id
    req.update(_cost(ordered, cost_given, usage))
    q = None
    for o in ret + rr:
        q = _first(o.row, fm["query"])
        if isinstance(q, dict):
            q = q.get("query")
        if isinstance(q, str):
            break
        q = None
    req["query_text"] = chk.string(q, "query")
    errs = [o for o in trace if o.error is not None]
    req["status"] = "error" if errs or (req.get("http_status") or 0) >= 500 or req.get("error_type") else "ok"
    aborts = {x.strip().lower() for x in fm.get("abort_error_types", ABORT_ERROR_TYPES)}
    msgs = [m.strip().lower() for m in [req.get("error_type"), *(o.error for o in errs)] if m]
    req["client_abort"] = req.get("http_status") == 499 or any(m in aborts for m in msgs)
    req["total_ms"] = _wall([root])
    req["retrieval_ms"] = _wall(ret)
    req["rerank_ms"] = _wall(rr)
    req["synthesis_ms"] = _wall([o for o in trace if o.kind == "llm"])
    req["parse_ms"] = _wall([o for o in trace if o.name.lower() == "parse"])

    citations = []
    cpath = fm["request"].get("citations")
    raw = walk(root.row, cpath) if cpath else None
    if raw is not None:
        citations.extend(chk.citations(raw, cpath))
    fbs = []
    kw: dict[str, Any] = {}
    if "negative_below" in fm:
        kw["negative_below"] = float(fm["negative_below"])
    if "negative_labels" in fm:
        kw["negative_labels"] = {x.lower() for x in fm["negative_labels"]}
    for f in feedback:
        c = Check(f.path, f.line)
        value, negative = c.feedback(f.value, "value", **kw)
        fbs.append({"value": value, "negative": negative, "reason": c.string(f.reason, "comment")})
    builder.add(req, items, citations, fbs)
    derived = sum(1 for it in items if it.get("derived"))
    if derived:
        builder.reading["derived_item_ids"] += derived


def dedupe(obs: list[Obs], builder: Builder) -> list[Obs]:
    """Each observation once: a row delivered twice with the same content (overlapping exports) is
    read once and counted in ``builder.reading``; the same id with different content is an error
    naming both places (in skip mode the second row is skipped)."""
    seen: dict[str, Obs] = {}
    out = []
    for o in obs:
        first = seen.get(o.id)
        if first is None:
            seen[o.id] = o
            out.append(o)
        elif first.row == o.row:
            builder.reading["duplicate_spans"] += 1
        else:
            builder.reject(InputError(
                f"observation {o.id!r} is already at {first.path}:{first.line} with different content",
                path=o.path, line=o.line, field="id",
                hint="two different rows cannot share an id; a row delivered twice must be identical"))
    return out


def _seen_before(row: dict[str, Any], seen: dict[str, tuple[dict[str, Any], str, int | None]], chk: Check,
                 builder: Builder) -> bool:
    """A feedback/score row with an id seen before: True (drop it) when it is the same row delivered
    again (counted as ``duplicate_feedback``); the same id with other content is an error naming both."""
    rid = row.get("id")
    if not isinstance(rid, (str, int)) or isinstance(rid, bool):
        return False
    first = seen.get(str(rid))
    if first is None:
        seen[str(rid)] = (row, chk.path, chk.line)
        return False
    if first[0] == row:
        builder.reading["duplicate_feedback"] += 1
        return True
    raise chk.fail("id", f"feedback row {str(rid)[:40]!r} is already at {first[1]}:{first[2]} with different content",
                   hint="two different rows cannot share an id; a row delivered twice must be identical")


def _join(obs: list[Obs], fbs: list[Fb], builder: Builder, fm: dict[str, Any], usage: Usage | None = None) -> None:
    traces: dict[str, list[Obs]] = {}
    for o in obs:
        traces.setdefault(o.trace_id, []).append(o)
    by_trace: dict[str, list[Fb]] = {}
    for f in fbs:
        if f.trace_id not in traces:
            builder.reject(InputError(f"feedback for trace {f.trace_id!r}, which is in no observation row",
                                      path=f.path, line=f.line, field="trace_id",
                                      hint="read the export's observations with its scores (the same hours)"))
            continue
        by_trace.setdefault(f.trace_id, []).append(f)
    with progress.stage(f"assembling {len(traces):,} traces", total=len(traces), unit="traces") as tally:
        for tid, rows in traces.items():
            builder.guard(partial(_assemble, rows, by_trace.get(tid, []), builder, fm, usage))
            tally.advance()


# -- Langfuse ------------------------------------------------------------------------------------------
def read_langfuse(files: list[tuple[str, str]], builder: Builder, options: dict[str, Any]) -> None:
    fm = resolve("langfuse", options.get("field_map"))
    names = {n.lower() for n in fm["feedback_names"]}
    obs: list[Obs] = []
    fbs: list[Fb] = []
    trace_rows: dict[str, dict[str, Any]] = {}
    seen_fb: dict[str, tuple[dict[str, Any], str, int | None]] = {}
    for path, label in files:
        for n, row in _rows(path, label, builder):
            chk = Check(label, n)
            try:
                if not isinstance(row, dict):
                    raise chk.fail(None, f"must be an object; got {type(row).__name__}")
                if row.get("type") is not None:
                    typ = chk.string(row.get("type"), "type")
                    kind = {"RETRIEVER": "retriever", "GENERATION": "llm"}.get(str(typ).upper(), "span")
                    level = str(row.get("level") or "DEFAULT").upper()
                    msg = row.get("status_message")
                    ob = Obs(
                        trace_id=str(chk.string(row.get("trace_id"), "trace_id", required=True, ids=True)),
                        id=str(chk.string(row.get("id"), "id", required=True, ids=True)),
                        parent=chk.string(row.get("parent_observation_id"), "parent_observation_id", ids=True),
                        kind=kind, name=str(row.get("name") or ""),
                        start_us=_time(chk, row.get("start_time"), "start_time", True),  # type: ignore[arg-type]
                        end_us=_time(chk, row.get("end_time"), "end_time", False), row=row,
                        error=(msg if isinstance(msg, str) else "") if level == "ERROR" else None,
                        path=label, line=n)
                    check_end(chk, ob.start_us, ob.end_us, "start_time", "end_time")
                    obs.append(ob)
                elif "data_type" in row or "string_value" in row or "observation_id" in row:
                    name = str(row.get("name") or "").lower()
                    if name not in names:
                        continue  # an evaluation score, not user feedback
                    if _seen_before(row, seen_fb, chk, builder):
                        continue
                    value = row.get("value") if row.get("value") is not None else row.get("string_value")
                    fbs.append(Fb(str(chk.string(row.get("trace_id"), "trace_id", required=True, ids=True)), value,
                                  chk.string(row.get("comment"), "comment"), label, n))
                elif row.get("id") is not None and "timestamp" in row:  # a traces/ row: the trace's own fields
                    trace_rows[str(row["id"])] = row
                else:
                    raise chk.fail(None, "is neither an observation (type) nor a score (data_type) row",
                                   hint="read observations_v2/ and scores/ of a Langfuse blob-storage export")
            except InputError as exc:
                builder.reject(exc)
    obs = dedupe(obs, builder)
    for o in obs:  # a trace row's metadata and session fill what the observations lack
        t = trace_rows.get(o.trace_id)
        if t is not None and not o.parent:
            o.row = {**{k: v for k, v in t.items() if v is not None}, **{k: v for k, v in o.row.items()
                                                                         if v is not None}}
    _join(obs, fbs, builder, fm, LANGFUSE_USAGE)


# -- LangSmith -----------------------------------------------------------------------------------------
def read_langsmith(files: list[tuple[str, str]], builder: Builder, options: dict[str, Any]) -> None:
    fm = resolve("langsmith", options.get("field_map"))
    names = {n.lower() for n in fm["feedback_names"]}
    obs: list[Obs] = []
    raw_fb: list[tuple[str, Any, Any, str, int | None]] = []
    seen_fb: dict[str, tuple[dict[str, Any], str, int | None]] = {}
    for path, label in files:
        for n, row in _rows(path, label, builder):
            chk = Check(label, n)
            try:
                if not isinstance(row, dict):
                    raise chk.fail(None, f"must be an object; got {type(row).__name__}")
                if "run_type" in row:
                    rid = str(chk.string(row.get("id"), "id", required=True, ids=True))
                    rt = str(chk.string(row.get("run_type"), "run_type", required=True)).lower()
                    err = row.get("error")
                    ob = Obs(
                        trace_id=str(chk.string(row.get("trace_id"), "trace_id", ids=True) or rid), id=rid,
                        parent=chk.string(row.get("parent_run_id"), "parent_run_id", ids=True),
                        kind={"retriever": "retriever", "llm": "llm"}.get(rt, "span"),
                        name=str(row.get("name") or ""),
                        start_us=_time(chk, row.get("start_time"), "start_time", True),  # type: ignore[arg-type]
                        end_us=_time(chk, row.get("end_time"), "end_time", False), row=row,
                        error=None if err in (None, "") else str(err), path=label, line=n)
                    check_end(chk, ob.start_us, ob.end_us, "start_time", "end_time")
                    obs.append(ob)
                elif "run_id" in row and "key" in row:
                    if str(row.get("key") or "").lower() not in names:
                        continue
                    if _seen_before(row, seen_fb, chk, builder):
                        continue
                    value = row.get("score") if row.get("score") is not None else row.get("value")
                    raw_fb.append((str(chk.string(row.get("run_id"), "run_id", required=True, ids=True)), value,
                                   row.get("comment"), label, n))
                else:
                    raise chk.fail(None, "is neither a run (run_type) nor a feedback (run_id, key) row",
                                   hint="export LangSmith runs with their run_type")
            except InputError as exc:
                builder.reject(exc)
    obs = dedupe(obs, builder)
    run_trace = {o.id: o.trace_id for o in obs}
    fbs = []
    for run_id, value, comment, label, n in raw_fb:
        tid = run_trace.get(run_id)
        if tid is None:
            builder.reject(InputError(f"feedback for run {run_id!r}, which is in no run row", path=label, line=n,
                                      field="run_id", hint="read the runs with their feedback"))
            continue
        fbs.append(Fb(tid, value, comment if isinstance(comment, str) else None, label, n))
    _join(obs, fbs, builder, fm, LANGSMITH_USAGE)
