"""The trace export formats by name, with no import cost: the CLI builds ``--format`` choices from
this table, and :func:`rankgate.traces.read.detect_format` sniffs with it.

Each entry: the name, the file extensions it is guessed from (``.gz`` is stripped first: compression
is recognised by content), the container (``jsonl``, ``json`` or ``parquet``) and the sniff: field
names whose presence in the first record picks the format (checked in table order, first match wins).
Which module reads a name is decided in :mod:`rankgate.traces.read`.
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


FORMATS: tuple[TraceFormat, ...] = (
    TraceFormat("otlp", (".otlp.json", ".otlp.jsonl"), ("jsonl", "json"), ("resourceSpans", "resource_spans"),
                "OTLP/JSON: one ExportTraceServiceRequest per line (collector file exporter), camelCase or "
                "Phoenix's snake_case; GenAI retrieval and OpenInference RETRIEVER/RERANKER spans"),
    TraceFormat("phoenix", (), ("parquet", "jsonl", "json"), ("context.span_id", "span_kind"),
                "a Phoenix spans export (get_spans_dataframe, TraceDataset.save, REST /v1/projects/{id}/spans)"),
    TraceFormat("otel-sdk", (), ("jsonl", "json"), ("context",),
                "the OpenTelemetry Python SDK's span.to_json() / ConsoleSpanExporter output"),
    TraceFormat("langfuse", (), ("jsonl", "parquet", "json"), ("parent_observation_id", "observation_id", "data_type"),
                "a Langfuse blob-storage export: observations_v2 rows and scores rows"),
    TraceFormat("langsmith", (), ("jsonl", "parquet", "json"), ("run_type", "run_id"),
                "LangSmith runs (bulk export or API): retriever runs with their documents"),
    TraceFormat("jsonl", (".jsonl", ".ndjson", ".parquet"), ("jsonl", "parquet"), ("request_id",),
                "rankgate's trace JSONL (one request per line), or the same records as Parquet"),
)

FORMAT_NAMES = tuple(f.name for f in FORMATS)
