"""The names of the input formats, with no import cost: the CLI builds its choices from these.

Which reader a name stands for is decided in :mod:`rankgate.data.load`; the shapes of the RAG tools'
files (RAGAS, DeepEval, LlamaIndex) in :mod:`rankgate.data.shapes`.
"""

from __future__ import annotations

__all__ = ["ANSWER_FIELDS", "ANSWER_FORMATS", "COLUMN_FIELDS", "GOLD_FORMATS", "LIST_SEP_WORDS", "RUN_FORMATS", "parse_columns",
           "split_list_sep"]

GOLD_FORMATS = ("jsonl", "trec", "beir", "parquet", "csv", "ragas", "deepeval", "llamaindex", "hf", "samples")
RUN_FORMATS = ("jsonl", "trec", "parquet", "csv", "ragas", "deepeval", "hf", "samples")

# Fields a CSV/TSV column can be mapped to with --columns FIELD=COLUMN,...
COLUMN_FIELDS = ("query_id", "chunk_id", "grade", "score", "rank", "query", "doc_version", "text", "note")
# Not a column: the delimiter of lists joined in one cell (DeepEval's CSV/JSONL: "|"), as
# --columns list_sep=SEP; a delimiter that --columns itself uses is named by a word.
LIST_SEP = "list_sep"
LIST_SEP_WORDS = {"comma": ",", "semicolon": ";", "pipe": "|", "tab": "\t", "equals": "="}
MAX_LIST_SEP = 16
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
        if name == LIST_SEP:
            column = LIST_SEP_WORDS.get(column.lower(), column)
            if len(column) > MAX_LIST_SEP:
                raise UsageError(f"--columns: list_sep must be at most {MAX_LIST_SEP} characters; got {len(column)}")
        elif name not in fields:
            raise UsageError(f"--columns: unknown field {name!r}; fields: {', '.join(fields)} "
                             "(and list_sep, the delimiter of lists joined in one cell)")
        if name in out:
            raise UsageError(f"--columns: field {name!r} is mapped twice")
        out[name] = column
    if not out:
        raise UsageError("--columns is empty; give FIELD=COLUMN pairs, e.g. query_id=qid,chunk_id=doc")
    return out


def split_list_sep(columns: dict[str, str] | None) -> tuple[dict[str, str] | None, str | None]:
    """(the column map without ``list_sep``, the ``list_sep`` delimiter or None): the delimiter is an
    option of the RAG tools' readers, not a column, so a map holding only it maps no column."""
    if not columns or LIST_SEP not in columns:
        return columns, None
    rest = {k: v for k, v in columns.items() if k != LIST_SEP}
    sep = columns[LIST_SEP]
    if not isinstance(sep, str) or not sep or len(sep) > MAX_LIST_SEP:
        from ..errors import UsageError

        raise UsageError(f"list_sep must be a non-empty string of at most {MAX_LIST_SEP} characters; got {sep!r}"[:120])
    return rest or None, LIST_SEP_WORDS.get(sep.lower(), sep)
