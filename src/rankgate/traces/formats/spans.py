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
  ``rankgate.tenant`` (or ``tenant.id``), ``rankgate.surface``, ``session.id`` (or
  ``gen_ai.conversation.id``), ``rankgate.index_version``, ``rankgate.corpus_version``,
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

from ..build import ABORT_ERROR_TYPES, Builder, Check

__all__ = ["Span", "assemble", "documents", "flatten_attrs"]

_STATUS_SYNONYMS = {"active": "active", "current": "active", "live": "active", "deprecated": "deprecated",
                    "superseded": "superseded", "retired": "retired", "deleted": "retired", "removed": "retired"}
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


def documents(attrs: dict[str, Any], prefix: str, chk: Check) -> list[dict[str, Any]] | None:
    """The documents under ``prefix``: a list value (or JSON string), or OpenInference's flattened
    ``prefix.N.document.field`` keys; None when the span has none."""
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
    return [_doc(chk, d, f"{prefix}[{i}]") for i, d in enumerate(docs)]


def _plain(d: dict[str, Any]) -> bool:
    """A document that is already flat: no nested object, no ``document.``/``metadata`` key (the
    general path would return it as it is)."""
    for k, v in d.items():
        if isinstance(v, dict) or k.startswith(_NESTING_KEYS):
            return False
    return True


_NESTING_KEYS = ("document.", "metadata")


def _doc(chk: Check, d: Any, where: str) -> dict[str, Any]:
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
        for k in [k for k in flat if k.startswith("metadata.")]:
            flat.setdefault(k[9:], flat[k])
    score = flat.get("score")
    status = flat.get("status")
    if status is not None:
        s = chk.string(status, where + ".status")
        status = None if s is None else _STATUS_SYNONYMS.get(s.strip().lower())
        if s is not None and status is None:
            raise chk.fail(where + ".status", f"is not a document status; got {s[:40]!r}",
                           hint="active, deprecated, superseded or retired")
    dep = flat.get("deprecated")
    if status is None and dep is not None and chk.boolean(dep, where + ".deprecated"):
        status = "deprecated"
    version = flat.get("version", flat.get("doc_version"))
    return {
        "item_id": chk.string(flat.get("id"), where + ".id", required=True, ids=True),
        "doc_id": chk.string(flat.get("doc_id"), where + ".doc_id", ids=True),
        "doc_version": chk.string(version if not isinstance(version, int) or isinstance(version, bool)
                                  else str(version), where + ".version"),
        "score": chk.number(score, where + ".score", strings=True),
        "status": status,
        "source": chk.string(flat.get("source"), where + ".source"),
        "tenant": chk.string(flat.get("tenant"), where + ".tenant"),
    }


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

    def attr(*keys: str) -> Any:
        for s in ordered:
            for k in keys:
                if s.attrs.get(k) is not None:
                    return s.attrs[k], Check(s.path, s.line)
        for k in keys:
            if root.resource.get(k) is not None:
                return root.resource[k], chk
        return None, chk

    def get(kind: str, *keys: str, **kw: Any) -> Any:
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

    def take(spans: list[Span], prefixes: tuple[str, ...], stage: str) -> bool:
        got = False
        for s in spans:
            c = Check(s.path, s.line)
            for p in prefixes:
                docs = documents(s.attrs, p, c)
                if docs is not None:
                    items.extend(dict(d, stage=stage) for d in docs)
                    got = True
                    break
        return got

    if not take(retrievers, ("gen_ai.retrieval.documents", "retrieval.documents"), "candidate"):
        take(rerankers, ("reranker.input_documents",), "candidate")
    take(rerankers, ("reranker.output_documents",), "reranked")
    take(ordered, ("rankgate.packed.documents",), "packed")

    req: dict[str, Any] = {"source_file": root.path, "source_line": root.line, "ts": root.start_us}
    rid, c = attr("rankgate.request_id")
    req["request_id"] = c.string(rid, "rankgate.request_id", ids=True) or root.trace_id
    req["trace_id"] = root.trace_id
    q = None
    for s in retrievers + rerankers:
        q = s.attrs.get("gen_ai.retrieval.query.text") or s.attrs.get("input.value") or s.attrs.get("reranker.query")
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
    req["data_source"] = get("string", "gen_ai.data_source.id")
    req["top_k"] = get("integer", "gen_ai.retrieval.top_k", "gen_ai.request.top_k", "reranker.top_k",
                       low=1, high=2**31 - 1, strings=True)
    req["tenant"] = get("string", "rankgate.tenant", "tenant.id")
    req["surface"] = get("string", "rankgate.surface")
    req["session"] = get("string", "session.id", "gen_ai.conversation.id", "rankgate.session", ids=True)
    for k in ("index_version", "corpus_version", "rewritten_query"):
        req[k] = get("string", "rankgate." + k)
    req["fallback"] = get("boolean", "rankgate.fallback")
    req["soft_deadline_ms"] = get("number", "rankgate.soft_deadline_ms", nonneg=True, strings=True)
    req["retry_attempts"] = get("integer", "rankgate.retry.attempts", "http.request.resend_count",
                                high=2**31 - 1, strings=True)
    req["retry_reason"] = get("string", "rankgate.retry.reason")
    req["privacy_mode"] = get("string", "rankgate.privacy.mode")
    for k in ("sensitive_tokens", "leaked_tokens", "secure_fields", "bypassed"):
        req[k] = get("integer", "rankgate.privacy." + k, strings=True)
    req["blocked"] = get("boolean", "rankgate.privacy.blocked")
    http = root.attrs.get("http.response.status_code", root.attrs.get("http.status_code"))
    if http is None:
        http, c = attr("http.response.status_code", "http.status_code")
    req["http_status"] = chk.integer(http, "http.response.status_code", low=100, high=599, strings=True)
    et = root.attrs.get("error.type")
    if et is None:
        et, c = attr("error.type")
    req["error_type"] = chk.string(et, "error.type")
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
    raw, c = attr("rankgate.citations")
    if raw is not None:
        raw = _json_value(c, raw, "rankgate.citations")
        citations.extend(c.citations(raw, "rankgate.citations", "a JSON list"))
    feedback: list[dict[str, Any]] = []
    for s in ordered:
        for name, ev in s.events:
            if name not in ("feedback", "rankgate.feedback"):
                continue
            c = Check(s.path, s.line)
            value, negative = c.feedback(ev.get("value"), "feedback.value", **_fb_opts(options))
            explicit = c.boolean(ev.get("negative"), "feedback.negative")
            feedback.append({"value": value, "negative": negative if explicit is None else explicit,
                             "reason": c.string(ev.get("reason"), "feedback.reason")})
    builder.add(req, items, citations, feedback)


def _fb_opts(options: dict[str, Any]) -> dict[str, Any]:
    out = {}
    if "negative_below" in options:
        out["negative_below"] = options["negative_below"]
    if "negative_labels" in options:
        out["negative_labels"] = options["negative_labels"]
    return out


def assemble_all(spans: list[Span], builder: Builder, options: dict[str, Any]) -> None:
    """Group spans by trace id (in order of first appearance) and assemble each trace."""
    traces: dict[str, list[Span]] = {}
    for s in spans:
        traces.setdefault(s.trace_id, []).append(s)
    for trace in traces.values():
        builder.guard(partial(assemble, trace, builder, options))

