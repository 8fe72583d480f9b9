"""The trace model: the four canonical tables every trace reader produces (docs/traces.md, "The model").

The analysis (signals, monitors, reports, engines) reads these tables only; nothing downstream knows
which export format the data came from.

``requests``   one row per request (request_id unique across all inputs)
``items``      retrieved items per request and stage (``candidate`` / ``reranked`` / ``packed``)
``citations``  what the answer cited
``feedback``   user feedback (``negative`` decided by the reader)

Every column is nullable except those marked NOT NULL below (``nullable=False`` in the schemas). A
signal whose input column is entirely null is "not measurable (no <column>)", never 0.

``query_key``: the hex SHA-256 of the normalised query text, the data source, top_k and the tenant,
joined by U+001F (an empty string for a missing part). Normalising: lower-case, then Unicode NFKC,
then every run of whitespace becomes one space (leading/trailing whitespace removed), then trailing
punctuation (Unicode categories P*) and the whitespace before it are stripped. A request without
query text gets the key of the empty text: requests with redacted text still pair by data source,
top_k and tenant, which the instability signal must keep in mind.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from rankgate.corpus.schema import STATUSES
from rankgate.errors import InputError

__all__ = [
    "CITATIONS_SCHEMA",
    "FEEDBACK_SCHEMA",
    "ITEMS_SCHEMA",
    "ITEM_STATUSES",
    "REQUESTS_SCHEMA",
    "RENAMED_FIELDS",
    "REQUEST_STATUSES",
    "SCHEMAS",
    "STAGES",
    "Skipped",
    "TraceTables",
    "check_tables",
    "current_field",
    "normalise_query",
    "query_key",
]

STAGES = ("candidate", "reranked", "packed")
ITEM_STATUSES = STATUSES  # a retrieved chunk has the statuses of the corpus manifest
REQUEST_STATUSES = ("ok", "error")

_TS = pa.timestamp("us", tz="UTC")


#: Request fields renamed, old name -> new name: the old name still reads (trace files, field maps, ``by``
#: and monitor segments) until rankgate 0.3. ``session`` became ``conversation_id`` (issue 37: one field for
#: the conversation a request belongs to, which gold sets and runs also carry).
RENAMED_FIELDS: Mapping[str, str] = {"session": "conversation_id"}
_NOTICED: set[str] = set()


def current_field(name: str, where: str) -> str:
    """``name`` under its current spelling; an old one (:data:`RENAMED_FIELDS`) is mapped, with a one-line
    notice on standard error (once per process and ``where``, e.g. "by", "monitor segments")."""
    new = RENAMED_FIELDS.get(name)
    if new is None:
        return name
    if where not in _NOTICED:
        import sys

        _NOTICED.add(where)
        print(f"rankgate: note: the field {name!r} ({where}) is now called {new!r}; the old name works until "
              f"rankgate 0.3", file=sys.stderr)
    return new


def _f(name: str, typ: pa.DataType, nullable: bool = True) -> pa.Field:
    return pa.field(name, typ, nullable=nullable)


REQUESTS_SCHEMA = pa.schema([
    _f("request_id", pa.string(), False),
    _f("trace_id", pa.string()),
    _f("ts", _TS, False),
    _f("tenant", pa.string()),
    _f("surface", pa.string()),
    _f("adapter", pa.string()),
    _f("conversation_id", pa.string()),
    _f("turn", pa.int32()),
    _f("data_source", pa.string()),
    _f("query_text", pa.string()),
    _f("query_key", pa.string(), False),
    _f("top_k", pa.int32()),
    _f("rewritten_query", pa.string()),
    _f("index_version", pa.string()),
    _f("corpus_version", pa.string()),
    _f("status", pa.string()),
    _f("http_status", pa.int32()),
    _f("error_type", pa.string()),
    _f("client_abort", pa.bool_()),
    _f("fallback", pa.bool_()),
    _f("parse_ms", pa.float64()),
    _f("retrieval_ms", pa.float64()),
    _f("rerank_ms", pa.float64()),
    _f("synthesis_ms", pa.float64()),
    _f("total_ms", pa.float64()),
    _f("soft_deadline_ms", pa.float64()),
    _f("cpu_ms", pa.float64()),
    _f("memory_mb", pa.float64()),
    _f("cost_tokens_in", pa.float64()),  # the request's cost object (rankgate.traces.cost): a column per named key
    _f("cost_tokens_out", pa.float64()),
    _f("cost_usd", pa.float64()),
    _f("cost_embed_ms", pa.float64()),
    _f("cost_rerank_ms", pa.float64()),
    _f("cost_other", pa.map_(pa.string(), pa.float64())),  # its other keys
    _f("retry_attempts", pa.int32()),
    _f("retry_reason", pa.string()),
    _f("privacy_mode", pa.string()),
    _f("sensitive_tokens", pa.int64()),
    _f("leaked_tokens", pa.int64()),
    _f("blocked", pa.bool_()),
    _f("secure_fields", pa.int64()),
    _f("bypassed", pa.int64()),
    _f("source_file", pa.string(), False),
    _f("source_line", pa.int64(), False),
])

ITEMS_SCHEMA = pa.schema([
    _f("request_id", pa.string(), False),
    _f("stage", pa.string(), False),
    _f("rank", pa.int32(), False),
    _f("item_id", pa.string(), False),
    _f("doc_id", pa.string()),
    _f("doc_version", pa.string()),
    _f("score", pa.float64()),
    _f("status", pa.string()),
    _f("source", pa.string()),
    _f("tenant", pa.string()),
])

CITATIONS_SCHEMA = pa.schema([
    _f("request_id", pa.string(), False),
    _f("item_id", pa.string()),
    _f("doc_id", pa.string()),
    _f("version", pa.string()),
])

FEEDBACK_SCHEMA = pa.schema([
    _f("request_id", pa.string(), False),
    _f("value", pa.float64()),
    _f("negative", pa.bool_(), False),
    _f("reason", pa.string()),
])

SCHEMAS: Mapping[str, pa.Schema] = {
    "requests": REQUESTS_SCHEMA,
    "items": ITEMS_SCHEMA,
    "citations": CITATIONS_SCHEMA,
    "feedback": FEEDBACK_SCHEMA,
}


@dataclass(frozen=True)
class Skipped:
    """Rows a reader could not use, in ``on_error="skip"`` mode: ``counts`` maps a reason (the field
    and what was wrong, without the offending value) to how many rows it cost; ``first`` holds the
    first 20 as ``(file, line, message)``. Empty in the default mode (a bad row is an error there)."""

    counts: Mapping[str, int] = field(default_factory=dict)
    first: tuple[tuple[str, int | None, str], ...] = ()

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def as_dict(self) -> dict[str, Any]:
        """The JSON-ready form for summaries: ``{"total", "by_reason", "first": [{file, line, reason}]}``."""
        return {
            "total": self.total,
            "by_reason": dict(sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))),
            "first": [{"file": f, "line": n, "reason": r} for f, n, r in self.first],
        }


@dataclass(frozen=True)
class TraceTables:
    """The four canonical tables (pyarrow Tables with the schemas above) and the skip report.

    ``item_sources``: more items, left in Parquet files for a DuckDB analysis to read in place
    (:class:`rankgate.traces.native.ItemSource`; only when :func:`~.read.read_traces` is asked with
    ``engine_items=True``). ``items`` then holds the other files' items only; :meth:`all_items`
    gives every item as one Arrow table.

    ``reading``: what the readers did to the input, counted: ``duplicate_spans`` (spans or observations
    delivered twice with the same content, read once), ``duplicate_feedback`` (Langfuse score or
    LangSmith feedback rows with an id, delivered twice) and ``derived_item_ids`` (documents logged
    without an id, given the id of their text, :func:`rankgate.io.shapes.text_id`). Only non-zero
    counts are present."""

    requests: pa.Table
    items: pa.Table
    citations: pa.Table
    feedback: pa.Table
    skipped: Skipped = field(default_factory=Skipped)
    formats: tuple[str, ...] = ()  # the format read from each input, in input order
    item_sources: tuple[Any, ...] = ()
    reading: Mapping[str, int] = field(default_factory=dict)

    def all_items(self) -> pa.Table:
        """``items`` with the items of ``item_sources`` read into it."""
        if not self.item_sources:
            return self.items
        # the sources are rankgate.traces.native.ItemSource values, which know how to read themselves
        return pa.concat_tables([self.items, type(self.item_sources[0]).read_all(self.item_sources)])

    def tables(self) -> dict[str, pa.Table]:
        return {"requests": self.requests, "items": self.items, "citations": self.citations, "feedback": self.feedback}


def check_tables(tables: TraceTables, *, deep: bool = True) -> None:
    """Raise ``ValueError`` when ``tables`` break the model: a schema other than the canonical one
    (names, types, order), a null in a NOT NULL column, a duplicate request_id, an unknown stage or
    item status, a rank below 1, or an item/citation/feedback row whose request is not in
    ``requests``. The analysis may call it on tables it is given. ``deep=False`` checks only the
    schemas and NOT NULL columns (what readers check on what they build: the rest holds by
    construction there, and the value checks cost seconds on 30M items)."""
    import pyarrow.compute as pc

    for name, schema in SCHEMAS.items():
        t = getattr(tables, name)
        if not isinstance(t, pa.Table):
            raise ValueError(f"{name}: expected a pyarrow.Table, got {type(t).__name__}")
        if t.schema.remove_metadata() != schema:
            raise ValueError(f"{name}: schema differs from the trace model:\n{t.schema}\nexpected:\n{schema}")
        for f in schema:
            if not f.nullable and t.column(f.name).null_count:
                raise ValueError(f"{name}.{f.name}: {t.column(f.name).null_count} null value(s) in a NOT NULL column")
    if not deep:
        return
    req = tables.requests
    if pc.count_distinct(req["request_id"]).as_py() != req.num_rows:
        raise ValueError("requests.request_id: duplicate request ids")
    stages = tables.items["stage"]
    if tables.items.num_rows and not pc.all(pc.is_in(stages, value_set=pa.array(STAGES))).as_py():
        raise ValueError(f"items.stage: a value other than {', '.join(STAGES)}")
    status = tables.items["status"].drop_null()
    if len(status) and not pc.all(pc.is_in(status, value_set=pa.array(ITEM_STATUSES))).as_py():
        raise ValueError(f"items.status: a value other than {', '.join(ITEM_STATUSES)} or null")
    if tables.items.num_rows and pc.min(tables.items["rank"]).as_py() < 1:
        raise ValueError("items.rank: a rank below 1")
    rstatus = req["status"].drop_null()
    if len(rstatus) and not pc.all(pc.is_in(rstatus, value_set=pa.array(REQUEST_STATUSES))).as_py():
        raise ValueError("requests.status: a value other than ok, error or null")
    ids = req["request_id"]
    for name in ("items", "citations", "feedback"):
        col = getattr(tables, name)["request_id"]
        if len(col) and not pc.all(pc.is_in(col, value_set=ids)).as_py():
            raise ValueError(f"{name}.request_id: a request id not in requests")


_WS = re.compile(r"\s+")


def normalise_query(text: str | None) -> str:
    """The query text as ``query_key`` sees it (see the module docs); ``None`` gives ``""``."""
    if not text:
        return ""
    t = unicodedata.normalize("NFKC", text.lower())
    t = _WS.sub(" ", t).strip()
    end = len(t)
    while end and (unicodedata.category(t[end - 1]).startswith("P") or t[end - 1].isspace()):
        end -= 1
    return t[:end]


def query_key(text: str | None, data_source: str | None = None, top_k: int | None = None,
              tenant: str | None = None) -> str:
    """Hex SHA-256 pairing "the same query" across requests (see the module docs)."""
    parts = (normalise_query(text), data_source or "", "" if top_k is None else str(int(top_k)), tenant or "")
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


def empty_tables(skipped: Skipped | None = None) -> TraceTables:
    """Four empty tables with the canonical schemas."""
    requests, items, citations, feedback = (s.empty_table() for s in SCHEMAS.values())
    return TraceTables(requests, items, citations, feedback, skipped=skipped or Skipped())


def duplicate_error(request_id: str, first: tuple[str, int], second: tuple[str, int]) -> InputError:
    """The error for a request id seen twice: names both places."""
    return InputError(
        f"request_id {request_id!r} is already used at {first[0]}:{first[1]}", path=second[0], line=second[1],
        field="request_id", hint="request ids must be unique across all trace inputs; remove the duplicate",
    )
