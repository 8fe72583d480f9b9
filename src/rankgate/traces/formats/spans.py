"""Spans -> requests: the join rule shared by the OTLP, OpenTelemetry SDK and Phoenix readers.

One trace (all spans with the same trace id, across every input file of the format) is one request.

* **Root.** The span with no parent, or whose parent is not in the trace (the earliest-starting
  one if several). Its start is the request time, its duration ``total_ms``; its
  ``http.response.status_code`` (or the older ``http.status_code``) and ``error.type`` are the
  request's HTTP status and error type (else the first span carrying them).
* **Status.** ``error`` when any span has status code ERROR, or the HTTP status is 5xx, or an
  ``error.type`` is set; ``ok`` otherwise. ``client_abort``: HTTP 499, or an ``error.type`` or ERROR
  status message naming an abort (``client_abort``, ``cancelled``…, see the field map).
* **Candidates.** Retrieval spans (``gen_ai.operation.name = retrieval``, or OpenInference
  ``openinference.span.kind = RETRIEVER``), in start order: their documents
  (``gen_ai.retrieval.documents`` as a JSON string or an array of kvlists, or OpenInference
  ``retrieval.documents.N.document.*``) are the candidates, ranked in order across spans. Query text:
  ``gen_ai.retrieval.query.text``, else ``input.value``; data source ``gen_ai.data_source.id``; top_k
  ``gen_ai.retrieval.top_k`` or ``gen_ai.request.top_k``. ``retrieval_ms`` is the wall-clock time from
  the first retrieval span's start to the last one's end.
* **Reranked.** RERANKER spans: ``reranker.output_documents`` (their ``reranker.input_documents`` are
  the candidates when no retrieval span carries documents); ``rerank_ms`` as above.
* **Synthesis.** LLM spans (OpenInference ``LLM``, or ``gen_ai.operation.name`` chat /
  text_completion / generate_content) give ``synthesis_ms``.
* **Explicit stages.** A span with ``rankgate.stage`` = parse | retrieval | rerank | synthesis gives
  that stage's time (wall clock over such spans), overriding the rules above.
* **Packed, citations, feedback, request fields** ride on any span as ``rankgate.*`` attributes
  (root first, then spans in start order; resource attributes last): ``rankgate.packed.documents``
  and ``rankgate.citations`` (JSON lists), feedback as span events named ``feedback`` (attributes
  ``value``, ``reason``, ``negative``), ``rankgate.request_id`` (default: the trace id),
  ``rankgate.tenant`` (or ``tenant.id``), ``rankgate.surface``, ``rankgate.adapter`` (else the framework
  an OpenInference or OpenLLMetry instrumentation scope names: ``openinference.instrumentation.llama_index``
  gives ``llamaindex``), ``rankgate.cpu_ms``, ``rankgate.memory_mb``, the ``conversation_id`` from
  ``session.id`` (or ``gen_ai.conversation.id``, ``rankgate.conversation_id``; ``rankgate.session`` is its
  old name), ``rankgate.turn``, ``rankgate.index_version``, ``rankgate.corpus_version``,
  ``rankgate.rewritten_query``, ``rankgate.fallback``, ``rankgate.soft_deadline_ms``,
  ``rankgate.retry.attempts`` (or ``http.request.resend_count``), ``rankgate.retry.reason``,
  ``rankgate.privacy.{mode,sensitive_tokens,leaked_tokens,blocked,secure_fields,bypassed}``.
* **Documents** are objects with ``id`` (required) and optional ``score``, ``doc_id``, ``version``
  (or ``doc_version``), ``status``, ``deprecated`` (true means status deprecated), ``source``,
  ``tenant``; each may also sit in ``metadata`` (an object or a JSON string), as OpenInference logs it.
"""

from __future__ import annotations

import json
from functools import partial
import re
from dataclasses import dataclass, field
from typing import Any

from rankgate._util import progress
from rankgate.corpus.schema import STATUS_SYNONYMS
from rankgate.errors import InputError
from rankgate.traces.build import ABORT_ERROR_TYPES, RESOURCE_FIELDS, Builder, Check

__all__ = ["Span", "adapter_of", "assemble", "documents", "flatten_attrs"]

_LLM_OPS = {"chat", "text_completion", "generate_content", "completion"}
_FLAT_DOC = re.compile(r"^(?P<prefix>.+?)\.(?P<n>\d+)\.(?P<rest>.+)$")
DOC_PREFIXES = ("gen_ai.retrieval.documents", "retrieval.documents", "reranker.input_documents",
                "reranker.output_documents", "rankgate.packed.documents")


@dataclass
class Span:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: str  # SERVER, CLIENT, INTERNAL, PRODUCER, CONSUMER, UNSPECIFIED
    start_us: int
    end_us: int | None
    status: str  # OK, ERROR, UNSET
    status_message: str | None
    attrs: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    resource: dict[str, Any] = field(default_factory=dict)
    path: str = ""
    line: int | None = None
    scope: str = ""  # the instrumentation scope's name (OTLP), where an instrumentation library names itself


def flatten_attrs(obj: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested attribute objects (Phoenix's un-flattened columns) as dotted keys; lists stay values."""
    out: dict[str, Any] = {}
    for k, v in obj.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten_attrs(v, key + "."))
        else:
            out[key] = v
    return out


def _json_value(chk: Check, v: Any, field: str) -> Any:
    if isinstance(v, str):
        try:
            return json.loads(v)
        except (json.JSONDecodeError, RecursionError):
            raise chk.fail(field, "is not valid JSON", hint="a JSON-string attribute must hold a JSON list") from None
    return v


def documents(attrs: dict[str, Any], prefix: str, chk: Check,
              document_map: dict[str, str] | None = None) -> list[dict[str, Any]] | None:
    """The documents under ``prefix``: a list value (or JSON string), or OpenInference's flattened
    ``prefix.N.document.field`` keys; None when the span has none. ``document_map``: the field map's
    ``document`` paths (canonical field -> key in the flattened document). A document without an id
    but with its text (``content``, ``page_content`` or ``text``) gets the id of its text
    (:func:`rankgate.io.shapes.text_id`) and ``derived: True``."""
    if prefix in attrs and attrs[prefix] is not None:
        raw = _json_value(chk, attrs[prefix], prefix)
        if not isinstance(raw, list):
            raise chk.fail(prefix, f"must be a list of documents; got {type(raw).__name__}")
        docs = raw
    else:
        found: dict[int, dict[str, Any]] = {}
        head = prefix + "."
        for k, v in attrs.items():
            if k.startswith(head):
                m = _FLAT_DOC.match(k)
                if m and m.group("prefix") == prefix:
                    found.setdefault(int(m.group("n")), {})[m.group("rest")] = v
        if not found:
            return None
        docs = [found[i] for i in sorted(found)]
    return [_doc(chk, d, f"{prefix}[{i}]", document_map) for i, d in enumerate(docs)]


def _plain(d: dict[str, Any]) -> bool:
    """A document that is already flat: no nested object, no ``document.``/``metadata`` key (the
    general path would return it as it is)."""
    for k, v in d.items():
        if isinstance(v, dict) or k.startswith(_NESTING_KEYS):
            return False
    return True


_NESTING_KEYS = ("document.", "metadata")


_TEXT_KEYS = ("content", "page_content", "text")


def _doc(chk: Check, d: Any, where: str, dm: dict[str, str] | None = None) -> dict[str, Any]:
    if not isinstance(d, dict):
        raise chk.fail(where, f"must be an object; got {json.dumps(d)[:40]}")
    if _plain(d):
        flat = d
    else:
        flat = flatten_attrs(d)
        flat = {(k.removeprefix("document.")): v for k, v in flat.items()}
        meta = flat.get("metadata")
        meta = _json_value(chk, meta, where + ".metadata") if meta is not None else {}
        if not isinstance(meta, dict):
            meta = {}
        for k, v in flatten_attrs(meta).items():
            flat.setdefault(k, v)
            flat.setdefault("metadata." + k, v)
        for k in [k for k in flat if k.startswith("metadata.")]:
            flat.setdefault(k[9:], flat[k])
    if dm:  # the field map's document paths, looked up as flattened keys, then walked in the document
        from rankgate.traces.fieldmap import walk

        flat = dict(flat)
        for f, path in dm.items():
            key = "version" if f == "version" else f
            v = flat.get(path)
            flat[key] = walk(d, path) if v is None else v
            if f == "version":
                flat.pop("doc_version", None)
    where_of = {f: where + "." + ((dm or {}).get(f) or f) for f in ("id", "score", "doc_id", "version", "status",
                                                                    "deprecated", "source", "tenant", "text")}
    score = flat.get("score")
    status = flat.get("status")
    if status is not None:
        s = chk.string(status, where_of["status"])
        status = None if s is None else STATUS_SYNONYMS.get(s.strip().lower())
        if s is not None and status is None:
            raise chk.fail(where_of["status"], f"is not a document status; got {s[:40]!r}",
                           hint="active, deprecated, superseded or retired")
    dep = flat.get("deprecated")
    if status is None and dep is not None and chk.boolean(dep, where_of["deprecated"]):
        status = "deprecated"
    version = flat.get("version", flat.get("doc_version"))
    item_id = chk.string(flat.get("id"), where_of["id"], ids=True)
    derived = False
    if item_id is None:
        text = flat.get("text") if (dm or {}).get("text") else next(
            (flat[k] for k in _TEXT_KEYS if flat.get(k) not in (None, "")), None)
        if text is None:
            raise chk.fail(where_of["id"], "is missing",
                           hint="a document needs an id or its text (content); a field map can name "
                                "where the id is (document: {id: metadata.chunk_id})")
        from rankgate.io.shapes import text_id

        item_id, derived = text_id(str(chk.string(text, where_of["text"], required=True))), True
    return {
        "item_id": item_id,
        "doc_id": chk.string(flat.get("doc_id"), where_of["doc_id"], ids=True),
        "doc_version": chk.string(version if not isinstance(version, int) or isinstance(version, bool)
                                  else str(version), where_of["version"]),
        "score": chk.number(score, where_of["score"], strings=True),
        "status": status,
        "source": chk.string(flat.get("source"), where_of["source"]),
        "tenant": chk.string(flat.get("tenant"), where_of["tenant"]),
        "derived": derived,
    }


# instrumentation scopes whose name says which framework produced the spans: OpenInference's
# (openinference.instrumentation.llama_index) and OpenLLMetry's (opentelemetry.instrumentation.langchain)
_SCOPE_PREFIXES = ("openinference.instrumentation.", "opentelemetry.instrumentation.")


def adapter_of(trace: list[Span]) -> str | None:
    """The framework a trace's instrumentation scope names (``llama_index`` -> ``llamaindex``,
    ``langchain``, ``haystack``…: lower case, without ``_``/``-``), from the first span (in start order)
    whose scope is an OpenInference or OpenLLMetry instrumentation; None when none is."""
    for s in trace:
        for prefix in _SCOPE_PREFIXES:
            if s.scope.startswith(prefix) and len(s.scope) > len(prefix):
                return s.scope[len(prefix):].split(".")[0].lower().replace("_", "").replace("-", "")
    return None


def _wall(spans: list[Span]) -> float | None:
    ends = [s.end_us for s in spans if s.end_us is not None]
    if not spans or len(ends) != len(spans):
        return None
    return (max(ends) - min(s.start_us for s in spans)) / 1000.0


def assemble(trace: list[Span], builder: Builder, options: dict[str, Any]) -> None:
    """One trace's spans -> one request in ``builder`` (see the module docs for the join rule)."""
    trace = sorted(trace, key=lambda s: (s.start_us, s.span_id))
    ids = {s.span_id for s in trace}
    roots = [s for s in trace if not s.parent_id or s.parent_id not in ids]
    root = roots[0] if roots else trace[0]
    chk = Check(root.path, root.line)
    aborts = options.get("abort_error_types", ABORT_ERROR_TYPES)
    ordered = [root] + [s for s in trace if s is not root]

    fm = options.get("field_map") or {}
    user = fm.get("request") or {}

    def attr(*keys: str) -> Any:
        for s in ordered:
            for k in keys:
                if s.attrs.get(k) is not None:
                    return s.attrs[k], Check(s.path, s.line)
        for k in keys:
            if root.resource.get(k) is not None:
                return root.resource[k], chk
        return None, chk

    def get(kind: str, *keys: str, field: str | None = None, **kw: Any) -> Any:
        if field is not None and user.get(field):  # the field map names the attribute: it comes first
            keys = (user[field], *keys)
        v, c = attr(*keys)
        fn = getattr(c, kind)
        return fn(v, keys[0], **kw)

    def kind_of(s: Span) -> str:
        return str(s.attrs.get("openinference.span.kind") or "").upper()

    def op(s: Span) -> str:
        return str(s.attrs.get("gen_ai.operation.name") or "").lower()

    retrievers = [s for s in trace if op(s) == "retrieval" or kind_of(s) == "RETRIEVER"]
    rerankers = [s for s in trace if kind_of(s) == "RERANKER" or op(s) == "rerank"]
    llms = [s for s in trace if kind_of(s) == "LLM" or op(s) in _LLM_OPS]

    items: list[dict[str, Any]] = []
    dm = fm.get("document")

    def take(spans: list[Span], prefixes: tuple[str, ...], stage: str) -> bool:
        got = False
        for s in spans:
            c = Check(s.path, s.line)
            for p in prefixes:
                docs = documents(s.attrs, p, c, dm)
                if docs is not None:
                    items.extend(dict(d, stage=stage) for d in docs)
                    got = True
                    break
        return got

    if not take(retrievers, (*fm.get("documents", ()), "gen_ai.retrieval.documents", "retrieval.documents"),
                "candidate"):
        take(rerankers, ("reranker.input_documents",), "candidate")
    take(rerankers, ("reranker.output_documents",), "reranked")
    take(ordered, ("rankgate.packed.documents",), "packed")

    req: dict[str, Any] = {"source_file": root.path, "source_line": root.line, "ts": root.start_us}
    req["request_id"] = get("string", "rankgate.request_id", field="request_id", ids=True) or root.trace_id
    req["trace_id"] = root.trace_id
    q = None
    qkeys = (*fm.get("query", ()), *((user["query_text"],) if user.get("query_text") else ()),
             "gen_ai.retrieval.query.text", "input.value", "reranker.query")
    for s in retrievers + rerankers:
        q = next((s.attrs[k] for k in qkeys if s.attrs.get(k)), None)
        if q is not None:
            c = Check(s.path, s.line)
            break
    if isinstance(q, str) and q.lstrip().startswith("{"):
        try:
            parsed = json.loads(q)
            q = parsed.get("query", q) if isinstance(parsed, dict) else q
        except json.JSONDecodeError:
            pass
    req["query_text"] = chk.string(q, "gen_ai.retrieval.query.text")
    req["data_source"] = get("string", "gen_ai.data_source.id", field="data_source")
    req["top_k"] = get("integer", "gen_ai.retrieval.top_k", "gen_ai.request.top_k", "reranker.top_k", field="top_k",
                       low=1, high=2**31 - 1, strings=True)
    req["tenant"] = get("string", "rankgate.tenant", "tenant.id", field="tenant")
    req["surface"] = get("string", "rankgate.surface", field="surface")
    req["adapter"] = get("string", "rankgate.adapter", field="adapter") or adapter_of(trace)
    for k in RESOURCE_FIELDS:
        req[k] = get("number", "rankgate." + k, field=k, nonneg=True, strings=True)
    req.update(span_cost(ordered, llms, user))
    req["conversation_id"] = get("string", "session.id", "gen_ai.conversation.id", "rankgate.conversation_id",
                                 "rankgate.session", field="conversation_id", ids=True)
    req["turn"] = get("integer", "rankgate.turn", field="turn", low=1, high=2**31 - 1, strings=True)
    for k in ("index_version", "corpus_version", "rewritten_query"):
        req[k] = get("string", "rankgate." + k, field=k)
    req["fallback"] = get("boolean", "rankgate.fallback", field="fallback")
    req["soft_deadline_ms"] = get("number", "rankgate.soft_deadline_ms", field="soft_deadline_ms", nonneg=True, strings=True)
    req["retry_attempts"] = get("integer", "rankgate.retry.attempts", "http.request.resend_count", field="retry_attempts",
                                high=2**31 - 1, strings=True)
    req["retry_reason"] = get("string", "rankgate.retry.reason", field="retry_reason")
    req["privacy_mode"] = get("string", "rankgate.privacy.mode", field="privacy_mode")
    for k in ("sensitive_tokens", "leaked_tokens", "secure_fields", "bypassed"):
        req[k] = get("integer", "rankgate.privacy." + k, field=k, strings=True)
    req["blocked"] = get("boolean", "rankgate.privacy.blocked", field="blocked")
    http_keys = ((user["http_status"],) if user.get("http_status") else ()) + ("http.response.status_code",
                                                                                 "http.status_code")
    http = next((root.attrs[k] for k in http_keys if root.attrs.get(k) is not None), None)
    hc = chk
    if http is None:
        http, hc = attr(*http_keys)
    req["http_status"] = hc.integer(http, http_keys[0], low=100, high=599, strings=True)
    et_keys = ((user["error_type"],) if user.get("error_type") else ()) + ("error.type",)
    et = next((root.attrs[k] for k in et_keys if root.attrs.get(k) is not None), None)
    ec = chk
    if et is None:
        et, ec = attr(*et_keys)
    req["error_type"] = ec.string(et, et_keys[0])
    errors = [s for s in trace if s.status == "ERROR"]
    req["status"] = "error" if (errors or (req["http_status"] or 0) >= 500 or req["error_type"]) else "ok"
    msgs = [m.strip().lower() for m in [req["error_type"], *(s.status_message for s in errors)] if m]
    abort = req["http_status"] == 499 or any(m in aborts for m in msgs)
    req["client_abort"] = abort
    req["total_ms"] = _wall([root])
    timing = {"retrieval": _wall(retrievers), "rerank": _wall(rerankers), "synthesis": _wall(llms), "parse": None}
    for stage in timing:
        tagged = [s for s in trace if s.attrs.get("rankgate.stage") == stage]
        if tagged:
            timing[stage] = _wall(tagged)
        req[stage + "_ms"] = timing[stage]

    citations: list[dict[str, Any]] = []
    ckey = user.get("citations") or "rankgate.citations"
    raw, c = attr(ckey)
    if raw is not None:
        raw = _json_value(c, raw, ckey)
        citations.extend(c.citations(raw, ckey, "a JSON list"))
    feedback: list[dict[str, Any]] = []
    fb_names = {n.lower() for n in fm.get("feedback_names", ("feedback", "rankgate.feedback"))}
    for s in ordered:
        for name, ev in s.events:
            if name.lower() not in fb_names:
                continue
            c = Check(s.path, s.line)
            value, negative = c.feedback(ev.get("value"), "feedback.value", **_fb_opts(options))
            explicit = c.boolean(ev.get("negative"), "feedback.negative")
            feedback.append({"value": value, "negative": negative if explicit is None else explicit,
                             "reason": c.string(ev.get("reason"), "feedback.reason")})
    builder.add(req, items, citations, feedback)
    derived = sum(1 for it in items if it.get("derived"))
    if derived:
        builder.reading["derived_item_ids"] += derived


#: The token counts of an LLM span, by cost key: the GenAI semantic conventions' names, then their older names,
#: then OpenInference's (the first present on a span counts).
TOKEN_ATTRIBUTES = {"tokens_in": ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt"),
                    "tokens_out": ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens",
                                   "llm.token_count.completion")}
_COST_PREFIX = "rankgate.cost."


def span_cost(ordered: list[Span], llms: list[Span], user: dict[str, Any]) -> dict[str, Any]:
    """The request's cost columns (:mod:`rankgate.traces.cost`): a field map's ``cost.<key>`` attribute or a
    ``rankgate.cost.<key>`` attribute (the first span carrying it, root first), else for the token counts the
    sum over the LLM spans of :data:`TOKEN_ATTRIBUTES`."""
    from rankgate.traces.cost import COST_FIELDS, summed_cost

    parts: dict[str, list[tuple[Any, Check]]] = {}
    named = {user[f]: f.split(".", 1)[1] for f in COST_FIELDS if user.get(f)}
    for by_map in (True, False):  # (the field map's attributes first)
        for s in ordered:
            for k, v in s.attrs.items():
                key = named.get(k) if by_map else (k[len(_COST_PREFIX):] if k.startswith(_COST_PREFIX) else None)
                if key and v is not None and key not in parts:
                    parts[key] = [(v, Check(s.path, s.line))]
    for key, names in TOKEN_ATTRIBUTES.items():
        if key in parts:
            continue
        found = []
        for s in llms:
            v = next((s.attrs[n] for n in names if s.attrs.get(n) is not None), None)
            if v is not None:
                found.append((v, Check(s.path, s.line)))
        if found:
            parts[key] = found
    return summed_cost(parts)


def _fb_opts(options: dict[str, Any]) -> dict[str, Any]:
    out = {}
    if "negative_below" in options:
        out["negative_below"] = options["negative_below"]
    if "negative_labels" in options:
        out["negative_labels"] = options["negative_labels"]
    return out


def _content(s: Span) -> tuple[Any, ...]:
    """What a span says, without where it was read."""
    return (s.trace_id, s.span_id, s.parent_id, s.name, s.kind, s.start_us, s.end_us, s.status, s.status_message,
            s.attrs, s.events, s.resource)


def assemble_all(spans: list[Span], builder: Builder, options: dict[str, Any], id_field: str = "spanId") -> None:
    """Group spans by trace id (in order of first appearance) and assemble each trace.

    A span delivered twice (the same trace and span id with the same content: collectors deliver at
    least once, hourly exports overlap) is read once and counted in ``builder.reading``; the same ids
    with different content are an error naming both places (in skip mode the second is skipped)."""
    traces: dict[str, list[Span]] = {}
    seen: dict[tuple[str, str], Span] = {}
    for s in spans:
        key = (s.trace_id, s.span_id)
        first = seen.get(key)
        if first is not None:
            if _content(first) == _content(s):
                builder.reading["duplicate_spans"] += 1
            else:
                builder.reject(InputError(
                    f"span {s.span_id!r} of trace {s.trace_id!r} is already at {first.path}:{first.line} "
                    "with different content", path=s.path, line=s.line, field=id_field,
                    hint="two different spans cannot share an id; a span delivered twice must be identical"))
            continue
        seen[key] = s
        traces.setdefault(s.trace_id, []).append(s)
    with progress.stage(f"assembling {len(traces):,} traces", total=len(traces), unit="traces") as tally:
        for trace in traces.values():
            builder.guard(partial(assemble, trace, builder, options))
            tally.advance()

