"""Production retrieval traces: the canonical trace model and the readers of trace exports.

``read_traces(paths, format=None, on_error="error", field_map=None)`` reads rankgate's trace JSONL,
OTLP/JSON, OpenInference/Phoenix, Langfuse and LangSmith exports into :class:`TraceTables` (four
Arrow tables: requests, items, citations, feedback). See docs/traces.md. pyarrow is imported on use
of this package, not by ``import rankgate``.
"""

from __future__ import annotations

from .model import (
    CITATIONS_SCHEMA,
    FEEDBACK_SCHEMA,
    ITEMS_SCHEMA,
    REQUESTS_SCHEMA,
    SCHEMAS,
    STAGES,
    Skipped,
    TraceTables,
    check_tables,
    normalise_query,
    query_key,
)
from .read import detect_format, read_traces

__all__ = [
    "CITATIONS_SCHEMA",
    "FEEDBACK_SCHEMA",
    "ITEMS_SCHEMA",
    "REQUESTS_SCHEMA",
    "SCHEMAS",
    "STAGES",
    "Skipped",
    "TraceTables",
    "check_tables",
    "detect_format",
    "normalise_query",
    "query_key",
    "read_traces",
]
