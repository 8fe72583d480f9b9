"""The names of the input formats, with no import cost: the CLI builds its choices from these.

Which reader a name stands for is decided in :mod:`rankgate.data.load`; the shapes of the RAG tools'
files (RAGAS, DeepEval, LlamaIndex) in :mod:`rankgate.data.shapes`.
"""

from __future__ import annotations

__all__ = ["ANSWER_FIELDS", "ANSWER_FORMATS", "COLUMN_FIELDS", "GOLD_FORMATS", "RUN_FORMATS", "parse_columns"]

GOLD_FORMATS = ("jsonl", "trec", "beir", "parquet", "csv", "ragas", "deepeval", "llamaindex", "hf", "samples")
RUN_FORMATS = ("jsonl", "trec", "parquet", "csv", "ragas", "deepeval", "hf", "samples")

# Fields a CSV/TSV column can be mapped to with --columns FIELD=COLUMN,...
COLUMN_FIELDS = ("query_id", "chunk_id", "grade", "score", "rank", "query", "doc_version", "text", "note")
# Answers (rankgate answers): presets, and the fields --columns maps (see rankgate.data.answers)
ANSWER_FORMATS = ("auto", "rankgate", "ragas", "ragas_legacy", "deepeval")
ANSWER_FIELDS = ("query_id", "question", "answer", "contexts", "context_ids", "citations", "reference")


def parse_columns(spec: str | None, fields: tuple[str, ...] = COLUMN_FIELDS) -> dict[str, str] | None:
    """``"query_id=qid,chunk_id=doc"`` -> ``{"query_id": "qid", "chunk_id": "doc"}``; a UsageError
    names the first part that is not ``FIELD=COLUMN`` with a known field (one of ``fields``: the
    answers reader passes its own, :data:`rankgate.data.answers.ANSWER_FIELDS`)."""
    if spec is None:
        return None
    from ..errors import UsageError

    out: dict[str, str] = {}
    for part in spec.split(","):
        if not part.strip():
            continue
        name, eq, column = part.partition("=")
        name, column = name.strip(), column.strip()
        if not eq or not name or not column:
            raise UsageError(f"--columns: {part.strip()!r} is not FIELD=COLUMN (e.g. query_id=qid,chunk_id=doc,score=s)")
        if name not in fields:
            raise UsageError(f"--columns: unknown field {name!r}; fields: {', '.join(fields)}")
        if name in out:
            raise UsageError(f"--columns: field {name!r} is mapped twice")
        out[name] = column
    if not out:
        raise UsageError("--columns is empty; give FIELD=COLUMN pairs, e.g. query_id=qid,chunk_id=doc")
    return out
