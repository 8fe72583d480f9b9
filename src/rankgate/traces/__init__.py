"""Production retrieval traces: the canonical trace model and the readers of trace exports.

``read_traces(paths, format=None, on_error="error", field_map=None)`` reads rankgate's trace JSONL,
OTLP/JSON, OpenInference/Phoenix, Langfuse and LangSmith exports into :class:`TraceTables` (four
Arrow tables: requests, items, citations, feedback). See docs/traces.md. The names below load on
first use, so the CLI can read the format table (:mod:`.formats.table`) without pyarrow.
"""

from __future__ import annotations

import importlib
from typing import Any

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

_WHERE = {name: ".model" for name in __all__ if name not in ("detect_format", "read_traces")}
_WHERE.update(detect_format=".read", read_traces=".read")


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(importlib.import_module(_WHERE[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
