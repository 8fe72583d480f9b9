"""Reading the formats read as records: CSV/TSV with a header, the RAG tools' datasets (RAGAS,
DeepEval, LlamaIndex) and Hugging Face ``save_to_disk`` folders; and what the sniffers of
:mod:`rankgate.io.detect` ask of a file (its first line, the shape of its first record's fields).
When a forced format does not fit, :func:`explain` says which one does.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from rankgate.errors import InputError
from rankgate.model.gold_run import Gold, Run
from rankgate.io.tools.records import Records, container_of, read_records
from rankgate.io.shapes import describe_shape, shape_of

__all__ = ["explain", "first_line", "gold_from_objects", "json_shape", "read_gold", "read_run", "rows_of", "run_from_objects",
           "table_from_objects", "table_shape"]

TOOL_SHAPES = ("ragas", "deepeval", "llamaindex", "llamaindex_results")
_FORMAT_OF_SHAPE = {"table": "csv", "llamaindex_results": "llamaindex"}  # the format that reads a shape, where not its name
BEIR_HEADER = ("query-id", "corpus-id", "score")
TABLE_WORDS = frozenset({"query_id", "qid", "chunk_id", "doc_id", "docid", "score", "grade", "rank", "relevance",
                         "query-id", "corpus-id", "user_input", "input", "question", "retrieved_contexts", "retrieval_context"})


def first_line(path: str) -> str:
    from rankgate.io.source import open_text

    try:
        with open_text(path) as fh:
            for line in fh:
                if line.strip():
                    return line.lstrip("\ufeff")
    except (UnicodeDecodeError, OSError, EOFError):
        return ""
    return ""


def json_shape(path: str) -> str | None:
    """The shape of a JSON/JSONL file from its first record (the whole file only when the first
    line is not a complete JSON value, i.e. a pretty-printed file)."""
    first = first_line(path).strip()
    try:
        value = json.loads(first)
    except RecursionError:
        return None  # reading the file names the problem
    except json.JSONDecodeError:
        try:
            recs = read_records(path, "json")
        except InputError:
            return None
        return shape_of(recs.columns)
    except ValueError:  # an integer of thousands of digits: reading the file names the line
        return None
    if isinstance(value, list):
        value = next((v for v in value if isinstance(v, dict)), {})
    if isinstance(value, dict):
        wrapped = next((value[k] for k in ("samples", "goldens", "test_cases") if isinstance(value.get(k), list)), None)
        if wrapped:
            value = wrapped[0] if isinstance(wrapped[0], dict) else {}
        return shape_of(value)
    return None


def table_shape(path: str) -> str | None:
    if os.path.isdir(path):
        return None
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return shape_of(pq.read_schema(path).names)
    except (pa.ArrowInvalid, OSError):
        return None


def _check_shape(recs: Records, fmt: str, what: str) -> str:
    """The shape to read ``recs`` as; a forced tool format that does not fit is an error naming the
    shape seen and the format that fits."""
    seen = shape_of(recs.columns if recs.top is None else list(recs.top))
    if fmt in TOOL_SHAPES:
        if seen is not None and _FORMAT_OF_SHAPE.get(seen) == fmt:
            return seen  # (the llamaindex format reads RetrieverEvaluator results too)
        if seen not in (fmt, None):
            raise InputError(
                f"does not look like {describe_shape(fmt)}: its fields are {', '.join(_names(recs))}",
                path=recs.path, hint=f"this looks like {describe_shape(seen)}: use {_flag(what, seen)}")
        return fmt
    if seen is None:
        raise InputError(
            f"has fields {', '.join(_names(recs))}: none rankgate knows",
            path=recs.path,
            hint="a long table needs query_id and chunk_id columns (map yours with --columns query_id=COL,chunk_id=COL,...); "
                 "RAGAS needs user_input, DeepEval input with retrieval_context/context")
    return seen


def _names(recs: Records) -> list[str]:
    names = recs.columns if recs.top is None else list(recs.top)
    return names[:8] + (["…"] if len(names) > 8 else [])


def _flag(what: str, shape: str | None) -> str:
    fmt = _FORMAT_OF_SHAPE.get(shape or "", shape or "")
    return f"--{what}-format {fmt}"


def _records(path: str, fmt: str) -> Records:
    container = {"csv": "csv", "hf": "hf"}.get(fmt) or container_of(path)
    recs = read_records(path, container)
    if not recs.items and recs.top is None and recs.container != "csv":  # (a CSV's header says what was meant)
        raise InputError("has no records", path=path, hint="the file holds no samples or rows")
    return recs


def _csv_fast(path: str, fmt: str, kind: str, columns: Mapping[str, str] | None) -> Gold | Run | None:
    """A CSV long table through pyarrow (see :func:`rankgate.io.csvtable.read_csv_fast`), or None."""
    if fmt != "csv":
        return None
    import csv

    from rankgate.io.tools.records import sniff_delimiter

    first = first_line(path)
    delimiter = sniff_delimiter(first, path)
    try:
        header = [h.strip() for h in next(csv.reader([first], delimiter=delimiter))]
    except (csv.Error, StopIteration):
        return None
    if not columns and shape_of(header) != "table":
        return None
    from rankgate.io.csvtable import read_csv_fast

    return read_csv_fast(path, header, delimiter, kind, columns)


def read_gold(path: str, fmt: str, columns: Mapping[str, str] | None = None, list_sep: str | None = None) -> Gold:
    fast = _csv_fast(path, fmt, "gold", columns)
    if isinstance(fast, Gold):
        return fast
    recs = _records(path, fmt)
    shape = "table" if columns and fmt in ("csv", "hf", "parquet") else _check_shape(recs, fmt, "gold")
    return _gold_of(recs, shape, columns, list_sep)


def read_run(path: str, fmt: str, columns: Mapping[str, str] | None = None, list_sep: str | None = None) -> Run:
    fast = _csv_fast(path, fmt, "run", columns)
    if isinstance(fast, Run):
        return fast
    recs = _records(path, fmt)
    if fmt == "llamaindex" and (recs.top is not None or shape_of(recs.columns) == "llamaindex"):
        raise InputError("a LlamaIndex EmbeddingQAFinetuneDataset holds a gold set, not a run", path=path,
                         hint="pass it as --gold")
    shape = "table" if columns and fmt in ("csv", "hf", "parquet") else _check_shape(recs, fmt, "run")
    return _run_of(recs, shape, columns, list_sep)


def _gold_of(recs: Records, shape: str, columns: Mapping[str, str] | None = None, list_sep: str | None = None) -> Gold:
    if shape == "ragas":
        from rankgate.io.tools.ragas import read_ragas_gold

        return read_ragas_gold(recs, list_sep)
    if shape == "deepeval":
        from rankgate.io.tools.deepeval import read_deepeval_gold

        return read_deepeval_gold(recs, list_sep)
    if shape == "llamaindex":
        from rankgate.io.tools.llamaindex import read_llamaindex_gold

        return read_llamaindex_gold(recs)
    if shape == "llamaindex_results":
        from rankgate.io.tools.llamaindex import read_results_gold

        return read_results_gold(recs)
    if shape == "jsonl":
        from rankgate.io.jsonl import parse_gold_records

        return parse_gold_records([(r.line or r.row or i, r.data) for i, r in enumerate(recs.items, 1)], recs.path)
    from rankgate.io.csvtable import read_table_gold

    return read_table_gold(recs, columns)


def _run_of(recs: Records, shape: str, columns: Mapping[str, str] | None = None, list_sep: str | None = None) -> Run:
    if shape == "llamaindex":
        raise InputError("is a LlamaIndex EmbeddingQAFinetuneDataset: it holds a gold set, not a run", path=recs.path,
                         hint="pass it as --gold, and a retriever's output on its queries as --run")
    if shape == "llamaindex_results":
        from rankgate.io.tools.llamaindex import read_results_run

        return read_results_run(recs)
    if shape == "ragas":
        from rankgate.io.tools.ragas import read_ragas_run

        return read_ragas_run(recs, list_sep)
    if shape == "deepeval":
        from rankgate.io.tools.deepeval import read_deepeval_run

        return read_deepeval_run(recs, list_sep)
    if shape == "jsonl":
        from rankgate.io.jsonl import parse_run_records

        return parse_run_records([(r.line or r.row or i, r.data) for i, r in enumerate(recs.items, 1)], recs.path)
    from rankgate.io.csvtable import read_table_run

    return read_table_run(recs, columns)


def explain(path: str, what: str, fmt: str, exc: InputError) -> InputError:
    """``exc`` from reading ``path`` as a forced ``fmt``, with a hint naming the format that fits when
    the file's fields say it is another shape."""
    try:
        if os.path.isdir(path):
            return exc
        ext = container_of(path)
        if ext == "parquet":
            shape = table_shape(path)
        elif ext == "csv":
            recs = read_records(path, "csv")
            shape = shape_of(recs.columns)
        else:
            shape = json_shape(path)
    except Exception:  # noqa: BLE001  (the explanation must never hide the error itself)
        return exc
    if shape == "table" and fmt != "csv" and ext == "csv":
        return InputError(exc.detail, path=exc.path, line=exc.line, field=exc.field,
                          hint=f"this looks like {describe_shape(shape)} with a header: use --{what}-format csv")
    if shape in TOOL_SHAPES and _FORMAT_OF_SHAPE.get(shape, shape) != fmt:
        hint = f"this looks like {describe_shape(shape)}: use {_flag(what, shape)}"
        if shape == "llamaindex" and what == "run":
            hint = f"this looks like {describe_shape(shape)}, which holds a gold set: pass it as --gold"
        return InputError(exc.detail, path=exc.path, line=exc.line, field=exc.field, hint=hint)
    return exc


def rows_of(source: object) -> list:
    """The records of in-memory data: a list/iterable of dicts, a pandas DataFrame (``to_dict``), or a
    dataset object with ``to_list()`` (RAGAS ``EvaluationDataset``, Hugging Face ``Dataset``)."""
    if hasattr(source, "to_dict") and hasattr(source, "columns"):
        return list(source.to_dict(orient="records"))
    if hasattr(source, "to_list") and not isinstance(source, list):
        return list(source.to_list())
    rows = list(source)  # type: ignore[call-overload]
    if rows and not isinstance(rows[0], dict):
        from rankgate.io.producers import result_record

        if result_record(rows[0]) is not None:  # LlamaIndex RetrievalEvalResult objects: as their model_dump()
            rows = [result_record(r) or r for r in rows]
    return rows


def _object_records(source: object, label: str, fmt: str | None) -> Records | None:
    """Records of in-memory tool samples, or None when the data is in rankgate's own shapes."""
    from collections.abc import Mapping as _Mapping

    from rankgate.io.tools.records import Record

    if fmt is not None and fmt not in TOOL_SHAPES:
        return None
    if isinstance(source, _Mapping):
        if fmt == "llamaindex" or shape_of(source) == "llamaindex":
            return Records(label, [], list(source), "objects", top=dict(source))
        return None
    rows = source if isinstance(source, list) else []
    if not rows or not all(isinstance(r, dict) for r in rows):
        return None
    items = [Record(r, row=i) for i, r in enumerate(rows, start=1)]
    columns = list(dict.fromkeys(k for r in rows for k in r))
    shape = fmt if fmt in TOOL_SHAPES else shape_of(columns)
    return Records(label, items, columns, "objects") if shape in TOOL_SHAPES else None


def table_from_objects(source: object, rows: list, label: str, noun: str, fmt: str | None,
                       columns: Mapping[str, str] | None) -> Gold | Run | None:
    """A long table in memory, one row per query and item (a pandas DataFrame, or a list of dicts with
    ``query_id``, ``chunk_id`` or ``doc_id``, and ``grade``, or ``score``/``rank``), read by the rules of
    the CSV and Parquet long tables, rows counted from 1; a gold set's other columns are per-query fields
    (:func:`rankgate.io.csvtable.read_table_gold`). None for data of another shape."""
    from rankgate.io.csvtable import read_table_gold, read_table_run
    from rankgate.io.tools.records import Record

    if fmt not in (None, "csv") or not all(isinstance(r, dict) for r in rows):
        return None
    frame_columns = getattr(source, "columns", None) if hasattr(source, "to_dict") else None  # (a DataFrame's)
    frame = frame_columns is not None
    names = [str(c) for c in frame_columns] if frame_columns is not None else list(dict.fromkeys(str(k) for r in rows for k in r))
    shape = shape_of(names)
    # (a DataFrame of a table's columns lacking one, e.g. query_id moved to the index: the table's message)
    if shape != "table" and not (shape is None and (columns or frame and TABLE_WORDS.intersection(names))):
        return None
    recs = Records(label, [Record(r, row=i) for i, r in enumerate(rows, start=1)], names, "objects")
    return read_table_gold(recs, columns, query_fields=True) if noun == "gold" else read_table_run(recs, columns)


def gold_from_objects(source: object, label: str, fmt: str | None) -> Gold | None:
    """A gold set from in-memory tool samples; None when the data is in rankgate's own shapes."""
    recs = _object_records(source, label, fmt)
    return None if recs is None else _gold_of(recs, _check_shape(recs, fmt or "auto", "gold"))


def run_from_objects(source: object, label: str, fmt: str | None) -> Run | None:
    """A run from in-memory tool samples; None when the data is in rankgate's own shapes."""
    recs = _object_records(source, label, fmt)
    return None if recs is None else _run_of(recs, _check_shape(recs, fmt or "auto", "run"))
