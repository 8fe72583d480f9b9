"""The field map: where the trace readers find each canonical field.

The export-row readers (Langfuse, LangSmith) take every key. The span readers (OTLP, OpenTelemetry
SDK, Phoenix) take ``request`` and ``query`` (attribute names, tried before the defaults),
``documents`` (attribute prefixes of a retrieval span's documents), ``document`` (keys in one
flattened document: ``metadata.chunk_id``), ``feedback_names`` (span event names) and the feedback
and abort rules; ``stages`` is refused there. rankgate's own JSONL takes none (a field map is refused).

A YAML file (``--field-map FILE.yaml``) or a mapping. Every key is optional; what is given replaces
the default of the format being read (the defaults are :data:`DEFAULTS`)::

    request:                       # canonical request field -> dotted path in the trace's root row
      tenant: metadata.tenant
      index_version: metadata.index.version
    documents: output.documents    # where a retriever row keeps its documents
    document:                      # canonical item field -> dotted path in one document
      id: metadata.chunk_id
      score: metadata.relevance
    stages:                        # row names that hold the reranked / packed documents
      reranked: [rerank]
      packed: [context]
    feedback_names: [user-feedback, thumbs]   # score / feedback names that are user feedback
    negative_below: 0.5            # a numeric feedback value under this is negative
    negative_labels: [thumbs_down, bad]       # text feedback values that are negative
    abort_error_types: [client_abort, cancelled]   # error types / messages that mean a client abort

A path is the one field syntax of every command (:mod:`rankgate._util.fields`): keys joined by dots
(``metadata.tenant``), a key spelled with the dots found first (an OpenTelemetry attribute name); a JSON
string met on the way is parsed (Langfuse exports ``input``, ``output`` and ``metadata`` as JSON text). A
path that leads nowhere gives null.

The same map is said on the command line with ``--field NAME=PATH`` (:func:`field_map_of`): a request field
by its name (``tenant=metadata.tenant``) or as ``request.NAME``; a document field by its name where no request
field has it (``id=metadata.chunk_id``), else as ``document.NAME`` (``document.tenant``); ``documents`` and
``query``. A document field may name the list too: ``id=output.documents[*].metadata.chunk_id`` is
``documents: output.documents`` with ``document: {id: metadata.chunk_id}``. Rules and labels (stages,
feedback names, thresholds) are not fields: they stay in the file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from rankgate._util.fields import FieldPath, field_path, parse_fields
from rankgate.errors import ConfigError, F, UsageError
from rankgate.traces.cost import COST_FIELDS

__all__ = ["DEFAULTS", "DOCUMENT_FIELDS", "FIELD_NAMES", "REQUEST_FIELDS", "field_map_of", "load_field_map",
           "merge_field_maps", "resolve", "walk"]

REQUEST_FIELDS = ("request_id", "tenant", "surface", "conversation_id", "turn", "data_source", "query_text", "top_k",
                  "rewritten_query", "index_version", "corpus_version", "http_status", "error_type", "fallback",
                  "soft_deadline_ms", "retry_attempts", "retry_reason", "privacy_mode", "sensitive_tokens",
                  "leaked_tokens", "blocked", "secure_fields", "bypassed", "adapter", "cpu_ms", "memory_mb", "citations",
                  *COST_FIELDS)
DOCUMENT_FIELDS = ("id", "score", "doc_id", "version", "status", "source", "tenant", "deprecated", "text")
_TOP = ("request", "documents", "query", "document", "stages", "feedback_names", "negative_below", "negative_labels",
        "abort_error_types")

_META_REQUEST = {k: f"metadata.{k}" for k in REQUEST_FIELDS if k not in ("request_id", "query_text",
                                                                          "conversation_id")}
DEFAULTS: Mapping[str, Mapping[str, Any]] = {
    "langfuse": {
        "request": {"request_id": "metadata.request_id", "conversation_id": "session_id", **_META_REQUEST},
        "query": ["input.query", "input"],
        "documents": ["output.documents", "output"],
        "document": {"id": "id", "score": "score", "doc_id": "doc_id", "version": "version", "status": "status",
                     "source": "source", "tenant": "tenant", "deprecated": "deprecated"},
        "stages": {"reranked": ["rerank", "reranker", "rerank-documents"], "packed": ["pack", "context",
                                                                                      "context-packing"]},
        "feedback_names": ["user-feedback", "user_feedback", "feedback", "thumbs"],
    },
    "langsmith": {
        "request": {"request_id": "extra.metadata.request_id", "conversation_id": "extra.metadata.session_id",
                    **{k: f"extra.{v}" for k, v in _META_REQUEST.items()}},
        "query": ["inputs.query", "inputs.question", "inputs.input"],
        "documents": ["outputs.documents", "outputs.output", "outputs"],
        "document": {"id": "metadata.id", "score": "metadata.score", "doc_id": "metadata.doc_id",
                     "version": "metadata.version", "status": "metadata.status", "source": "metadata.source",
                     "tenant": "metadata.tenant", "deprecated": "metadata.deprecated"},
        "stages": {"reranked": ["rerank", "reranker", "compressor"], "packed": ["pack", "context",
                                                                                "context-packing"]},
        "feedback_names": ["user-feedback", "user_feedback", "feedback", "thumbs", "user_score"],
    },
}


@lru_cache(maxsize=256)
def _parsed(path: str) -> FieldPath:
    return field_path(path)


def walk(obj: Any, path: str) -> Any:
    """The value at a path (JSON text on the way is parsed); None when it leads nowhere."""
    return _parsed(path).get(obj, json_text=True)


_DOCUMENT_ONLY = tuple(f for f in DOCUMENT_FIELDS if f not in REQUEST_FIELDS)
#: The names ``--field`` takes for traces: every spelling :func:`field_map_of` reads.
FIELD_NAMES = (*REQUEST_FIELDS, *(f"request.{f}" for f in REQUEST_FIELDS), *_DOCUMENT_ONLY,
               *(f"document.{f}" for f in DOCUMENT_FIELDS), "documents", "query")
# conversation_id's old name (rankgate.traces.model.RENAMED_FIELDS) still reads
_OLD_NAMES = {"session": "conversation_id", "request.session": "request.conversation_id"}
_NAMES_SAID = (f"request fields ({', '.join(REQUEST_FIELDS)}; also as request.NAME), document fields "
               f"({', '.join(_DOCUMENT_ONLY)}; any as document.NAME, e.g. document.tenant), documents, query")


def field_map_of(fields: Any) -> dict[str, Any]:
    """``--field`` (``{name: path}`` or ``NAME=PATH`` texts) as a field map (the shape of :func:`load_field_map`'s),
    read with the one field syntax; a UsageError names the first flaw."""
    given = parse_fields(fields, FIELD_NAMES, command="traces", described=_NAMES_SAID, aliases=_OLD_NAMES)
    out: dict[str, Any] = {}
    listed: tuple[str, str] | None = None  # (the documents' list, the spec that named it)
    for name, path in given.items():
        spec = f"{name}={path}"
        parsed = field_path(path)
        section, _, key = name.rpartition(".")
        if name in REQUEST_FIELDS or name.removeprefix("request.") in REQUEST_FIELDS:  # (cost.usd has a dot)
            section, key = "request", name.removeprefix("request.")
        if not section:
            section = "request" if name in REQUEST_FIELDS else "document" if name in DOCUMENT_FIELDS else ""
        if section == "document":
            split = parsed.split_star()
            if split is not None:
                where, rest = split
                if not rest.steps or rest.has_star:
                    raise UsageError(f"{F.fields} {spec}: a document field names the documents' list once, then the "
                                     f"path in each document (e.g. {key}=output.documents[*].metadata.chunk_id)")
                if listed is not None and listed[0] != where.text:
                    raise UsageError(f"{F.fields} {spec} and {listed[1]} name two lists of documents; give one")
                listed, path = (where.text, spec), rest.text
            out.setdefault("document", {})[key] = path
            continue
        if parsed.has_star:
            raise UsageError(f"{F.fields} {spec}: {'a request field has one value' if section else name + ' is one path'}"
                             "; [*] reads a list of documents only (e.g. id=output.documents[*].metadata.chunk_id)")
        if section == "request":
            out.setdefault("request", {})[key] = path
        else:
            out[name] = [path]
    if listed is not None:
        if out.get("documents", [listed[0]]) != [listed[0]]:
            raise UsageError(f"{F.fields} {listed[1]} and documents={out['documents'][0]} name two lists of documents; "
                             "give one")
        out["documents"] = [listed[0]]
    return out


def merge_field_maps(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` applied to ``base`` (``request``/``document``/``stages`` key by key; everything else replaces)."""
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in base.items()}
    for k, v in over.items():
        out[k] = {**out.get(k, {}), **v} if k in ("request", "document", "stages") else v
    return out


def load_field_map(source: str | os.PathLike[str] | Mapping[str, Any]) -> dict[str, Any]:
    """The user's overrides, checked (unknown keys are a ConfigError naming them)."""
    path = "<field map>"
    if isinstance(source, Mapping):
        data: Any = dict(source)
    else:
        from rankgate._util.configfile import ConfigReader, plain, read_tree

        path = os.fspath(source)
        tree = read_tree(path, "field map")
        # Paths, row names and labels are text as written (negative_labels: [no, 0] are "no" and "0"
        # here, not YAML 1.1's False and 0); negative_below alone is a number, in decimal digits.
        if isinstance(tree.value, dict) and "negative_below" in tree.value:
            ConfigReader(path).decimal(tree.value["negative_below"], "negative_below")
        data = ({k: plain(v, as_written=k != "negative_below") for k, v in tree.value.items()}
                if isinstance(tree.value, dict) else plain(tree))
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError("must be a mapping of field-map keys", path=path, hint=f"keys: {', '.join(_TOP)}")
    for k, v in data.items():
        if k not in _TOP:
            raise ConfigError(f"is not a field-map key; keys: {', '.join(_TOP)}", path=path, field=str(k))
        if k == "request":
            if isinstance(v, dict) and "session" in v:  # conversation_id's old name still reads
                if "conversation_id" in v:
                    raise ConfigError("gives both conversation_id and session (its old name)", path=path,
                                      field="request.session", hint="keep request.conversation_id only")
                data[k] = v = {("conversation_id" if f == "session" else f): p for f, p in v.items()}
            _paths(v, REQUEST_FIELDS, path, k)
        elif k == "document":
            _paths(v, DOCUMENT_FIELDS, path, k)
        elif k in ("documents", "query"):
            if isinstance(v, str):
                data[k] = [v]
            elif not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
                raise ConfigError("must be a dotted path or a list of them", path=path, field=k)
            for p in data[k]:
                _syntax(p, path, k)
        elif k == "stages":
            if not isinstance(v, dict) or set(v) - {"reranked", "packed"} or not all(
                    isinstance(x, list) and all(isinstance(y, str) for y in x) for x in v.values()):
                raise ConfigError("must map reranked/packed to lists of row names", path=path, field=k)
        elif k == "negative_below":
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ConfigError(f"must be a number; got {v!r}", path=path, field=k)
        elif not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
            raise ConfigError("must be a list of strings", path=path, field=k)
    return data


def _paths(v: Any, allowed: tuple[str, ...], path: str, key: str) -> None:
    if not isinstance(v, dict):
        raise ConfigError("must map canonical fields to dotted paths", path=path, field=key)
    for f, p in v.items():
        if f not in allowed:
            raise ConfigError(f"is not a canonical field; fields: {', '.join(allowed)}", path=path, field=f"{key}.{f}")
        if not isinstance(p, str) or not p:
            raise ConfigError("must be a dotted path (text)", path=path, field=f"{key}.{f}")
        _syntax(p, path, f"{key}.{f}")


def _syntax(p: str, path: str, field: str) -> None:
    """A path of the file read with the one field syntax: a ConfigError naming the key when it is not one."""
    try:
        field_path(p, where="the path")
    except UsageError as exc:
        raise ConfigError(str(exc).removeprefix("the path: "), path=path, field=field) from None


def resolve(fmt: str, user: Mapping[str, Any] | None) -> dict[str, Any]:
    """The format's defaults with the user's overrides applied (``request``/``document``/``stages``
    merge key by key; everything else replaces)."""
    return merge_field_maps(DEFAULTS[fmt], user or {})
