"""The trace export formats by name, with no import cost: the CLI builds ``--traces-format`` choices from
this table, and :func:`rankgate.traces.read.detect_format` sniffs with it.

Each entry: the name, the file extensions it is guessed from (``.gz`` is stripped first: compression
is recognised by content), the container (``jsonl``, ``json`` or ``parquet``) and the sniff: field
names whose presence in the first record picks the format (checked in table order, first match wins),
a description, and the reader as ``"module:function"`` (imported only when a file of that format is
read by :func:`rankgate.traces.read.read_traces`; it takes ``(files: list[(path, label)], builder,
options)``).
"""

from __future__ import annotations

__all__ = ["FORMATS", "FORMAT_NAMES", "TraceFormat"]

from typing import NamedTuple


class TraceFormat(NamedTuple):
    name: str
    extensions: tuple[str, ...]
    containers: tuple[str, ...]
    sniff: tuple[str, ...]  # any of these top-level keys (or columns) in the first record
    description: str
    reader: str


_F = "rankgate.traces.formats."
FORMATS: tuple[TraceFormat, ...] = (
    TraceFormat("otlp", (".otlp.json", ".otlp.jsonl"), ("jsonl", "json"), ("resourceSpans", "resource_spans"),
                "OTLP/JSON: one ExportTraceServiceRequest per line (collector file exporter), camelCase or "
                "Phoenix's snake_case; GenAI retrieval and OpenInference RETRIEVER/RERANKER spans", _F + "otlp:read_files"),
    TraceFormat("phoenix", (), ("parquet", "jsonl", "json"), ("context.span_id", "span_kind"),
                "a Phoenix spans export (get_spans_dataframe, TraceDataset.save, REST /v1/projects/{id}/spans)",
                _F + "phoenix:read_files"),
    TraceFormat("otel-sdk", (), ("jsonl", "json"), ("context",),
                "the OpenTelemetry Python SDK's span.to_json() / ConsoleSpanExporter output", _F + "otlp:read_sdk_files"),
    TraceFormat("langfuse", (), ("jsonl", "parquet", "json"), ("parent_observation_id", "observation_id", "data_type"),
                "a Langfuse blob-storage export: observations_v2 rows and scores rows", _F + "observations:read_langfuse"),
    TraceFormat("langsmith", (), ("jsonl", "parquet", "json"), ("run_type", "run_id"),
                "LangSmith runs (bulk export or API): retriever runs with their documents",
                _F + "observations:read_langsmith"),
    TraceFormat("jsonl", (".jsonl", ".ndjson", ".parquet"), ("jsonl", "parquet"), ("request_id",),
                "rankgate's trace JSONL (one request per line), or the same records as Parquet", _F + "jsonl:read_files"),
)

FORMAT_NAMES = tuple(f.name for f in FORMATS)
