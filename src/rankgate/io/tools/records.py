"""Containers of records: the files the RAG tools write, read into one list of ``Record`` values.

* JSON lines; a JSON array of objects; a JSON object holding the array under ``samples``,
  ``goldens``, ``test_cases`` or ``data`` (the shapes RAGAS, DeepEval and hand-written exports use);
* CSV/TSV with a header row (RAGAS ``to_csv``, DeepEval CSV, long tables);
* Parquet (``to_pandas().to_parquet()``, ``Dataset.to_parquet``);
* a Hugging Face ``datasets`` folder written by ``save_to_disk`` (Arrow stream files listed in
  ``state.json``), read with pyarrow alone.

Each record remembers where it came from (line of a text file, row of a table) so that an error can
point at it. What the records *mean* is decided elsewhere (:mod:`rankgate.io.shapes`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from rankgate.errors import InputError
from rankgate.io.source import open_text

__all__ = ["Record", "Records", "fail", "hf_data_files", "is_hf_folder", "read_records"]

WRAPPER_KEYS = ("samples", "goldens", "test_cases", "data")
HF_FILES = ("state.json", "dataset_info.json", "dataset_dict.json")


@dataclass(frozen=True)
class Record:
    """One record: its fields and where it is (``line`` of a text file, or ``row`` of a table)."""

    data: dict[str, Any]
    line: int | None = None
    row: int | None = None


@dataclass(frozen=True)
class Records:
    """The records of one file, its column names (in file order) and what kind of file it was."""

    path: str
    items: list[Record]
    columns: list[str]
    container: str  # "json", "jsonl", "csv", "parquet", "hf"
    top: dict[str, Any] | None = None  # a whole-file JSON object that is not a wrapper (LlamaIndex)


def fail(path: str, rec: Record | None, message: str, *, field: str | None = None, hint: str | None = None) -> InputError:
    """An InputError pointing at ``rec``: its line, or its row for tables."""
    if rec is not None and rec.line is None and rec.row is not None:
        message = f"(row {rec.row}) {message}"
    return InputError(message, path=path, line=None if rec is None else rec.line, field=field, hint=hint)


def is_hf_folder(path: str) -> bool:
    return os.path.isdir(path) and any(os.path.exists(os.path.join(path, f)) for f in HF_FILES)


def read_records(path: str, container: str | None = None) -> Records:
    """Read ``path`` (a file or a Hugging Face folder) into records; ``container`` forces the kind."""
    if container is None:
        container = container_of(path)
    if container == "hf":
        return _hf(path)
    if container == "parquet":
        return _table_records(path, _parquet_table(path), "parquet")
    if container == "csv":
        return _csv(path)
    return _json(path)


def container_of(path: str) -> str:
    if is_hf_folder(path):
        return "hf"
    ext = os.path.splitext(path.removesuffix(".gz"))[1].lower()
    if ext in (".parquet", ".pq"):
        return "parquet"
    if ext in (".csv", ".tsv"):
        return "csv"
    return "json"


def _text(path: str) -> str:
    try:
        with open_text(path) as fh:
            return fh.read()
    except UnicodeDecodeError:
        from rankgate.io.source import text_lines

        for _ in text_lines(path):  # names the line and byte
            pass
        raise InputError("is not UTF-8 text", path=path, hint="save the file as UTF-8") from None


def _columns(items: list[Record]) -> list[str]:
    seen: dict[str, None] = {}
    for rec in items:
        for key in rec.data:
            seen.setdefault(key, None)
    return list(seen)


def _json(path: str) -> Records:
    text = _text(path)
    stripped = text.lstrip()
    if stripped.startswith("["):
        items = _json_array(path, text)
        return Records(path, items, _columns(items), "json")
    if stripped.startswith("{"):
        first_line = stripped.split("\n", 1)[0]
        try:
            json.loads(first_line)
            whole = None  # a complete object on the first line: JSON lines
        except json.JSONDecodeError:
            whole = _parse_whole(path, text)
        except RecursionError:
            raise _too_deep(path, 1) from None
        if whole is None and "\n" not in stripped.rstrip():
            whole = _parse_whole(path, text)
        if isinstance(whole, dict):
            key = next((k for k in WRAPPER_KEYS if isinstance(whole.get(k), list)), None)
            if key is None:
                if {"queries", "corpus", "relevant_docs"} & set(whole):  # one object that is the dataset
                    return Records(path, [], list(whole), "json", top=whole)
                rows = _pandas_columns(whole)
                if rows is not None:
                    items = [Record(r, row=i) for i, r in enumerate(rows, start=1)]
                    return Records(path, items, list(whole), "json")
                at = 1 + text[: len(text) - len(stripped)].count("\n")
                return Records(path, [Record(whole, line=at)], list(whole), "json")
            items = []
            for i, obj in enumerate(whole[key]):
                if not isinstance(obj, dict):
                    raise InputError(f"must be a JSON object; got {type(obj).__name__}", path=path, field=f"{key}[{i}]")
                items.append(Record(obj, row=i + 1))
            return Records(path, items, _columns(items), "json")
    items = []
    # Lines end at \n only: U+2028, U+2029 and U+0085 are legal inside JSON strings.
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except RecursionError:
            raise _too_deep(path, lineno) from None
        except json.JSONDecodeError as exc:
            raise InputError(f"is not valid JSON: {exc.msg} at column {exc.colno}", path=path, line=lineno,
                             hint="each line must be one JSON object") from None
        except ValueError:  # an integer of thousands of digits
            raise InputError("holds a number too long to read", path=path, line=lineno) from None
        from rankgate.io.jsonl import check_surrogates

        check_surrogates(line, obj, path, lineno)
        if not isinstance(obj, dict):
            raise InputError(f"must be a JSON object; got {type(obj).__name__}", path=path, line=lineno)
        items.append(Record(obj, line=lineno))
    return Records(path, items, _columns(items), "jsonl")


def _pandas_columns(whole: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The rows of a JSON object pandas' ``DataFrame.to_json()`` writes by default (``orient="columns"``:
    each column an object from row index to value), or None when ``whole`` is not one: at least two
    columns, every one an object with the same row indexes, and field names of a dataset rankgate reads."""
    from rankgate.io.shapes import shape_of

    if len(whole) < 2 or shape_of(list(whole)) in (None, "llamaindex"):
        return None
    columns = list(whole.values())
    if not all(isinstance(c, dict) and c for c in columns):
        return None
    index = list(columns[0])
    if any(list(c) != index for c in columns[1:]):
        return None
    names = list(whole)
    return [{name: whole[name][i] for name in names} for i in index]


def _too_deep(path: str, line: int | None) -> InputError:
    return InputError("nests JSON values too deeply to read", path=path, line=line,
                      hint="samples are flat objects with lists of strings")


def _parse_whole(path: str, text: str) -> Any:
    from rankgate.io.jsonl import check_surrogates

    try:
        whole = json.loads(text)
        check_surrogates(text, whole, path, None)
        return whole
    except RecursionError:
        raise _too_deep(path, None) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"is not valid JSON: {exc.msg} at column {exc.colno}", path=path, line=exc.lineno) from None
    except ValueError:  # an integer of thousands of digits
        raise InputError("holds a number too long to read", path=path) from None


def _json_array(path: str, text: str) -> list[Record]:
    """The objects of a top-level JSON array, each with the line it starts on."""
    decoder = json.JSONDecoder()
    pos = text.index("[") + 1
    line = 1 + text.count("\n", 0, pos)
    items: list[Record] = []
    n = len(text)

    def skip(p: int) -> int:
        while p < n and text[p] in " \t\r\n":
            p += 1
        return p

    while True:
        start = skip(pos)
        line += text.count("\n", pos, start)
        if start < n and text[start] == "]":
            break
        try:
            obj, end = decoder.raw_decode(text, start)
        except RecursionError:
            raise _too_deep(path, line) from None
        except json.JSONDecodeError as exc:
            raise InputError(f"is not valid JSON: {exc.msg}", path=path, line=exc.lineno) from None
        except ValueError:  # an integer of thousands of digits
            raise InputError("holds a number too long to read", path=path, line=line) from None
        if not isinstance(obj, dict):
            raise InputError(f"must be a JSON object; got {type(obj).__name__}", path=path, line=line)
        items.append(Record(obj, line=line))
        line += text.count("\n", start, end)
        pos = skip(end)
        line += text.count("\n", end, pos)
        if pos < n and text[pos] == ",":
            pos += 1
            continue
        if pos < n and text[pos] == "]":
            break
        raise InputError("is not valid JSON: expected ',' or ']' after an array item", path=path, line=line)
    from rankgate.io.jsonl import check_surrogates

    for record in items:
        check_surrogates(text, record.data, path, record.line)
    return items


def sniff_delimiter(header: str, path: str) -> str:
    if path.removesuffix(".gz").lower().endswith(".tsv") or "\t" in header:
        return "\t"
    if ";" in header and "," not in header:
        return ";"
    return ","


def _csv(path: str) -> Records:
    import csv
    import io

    text = _text(path)
    text = text.removeprefix("\ufeff")  # a spreadsheet's byte-order mark
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sniff_delimiter(first, path))
    header: list[str] | None = None
    items: list[Record] = []
    start = 1
    try:
        for row in reader:
            line = start
            start = reader.line_num + 1
            if not any(cell.strip() for cell in row):
                continue
            if header is None:
                header = [h.strip() for h in row]
                dupes = sorted({h for h in header if header.count(h) > 1})
                if dupes:
                    raise InputError(f"header names column {dupes[0]!r} twice", path=path, line=line)
                continue
            if len(row) != len(header):
                raise InputError(f"has {len(row)} columns; the header has {len(header)}", path=path, line=line,
                                 hint="quote cells that hold the delimiter")
            items.append(Record(dict(zip(header, row)), line=line))
    except csv.Error as exc:
        raise InputError(f"is not valid CSV: {exc}", path=path, line=reader.line_num) from None
    if header is None:
        raise InputError("has no header row", path=path, hint="the first line names the columns")
    return Records(path, items, header, "csv")


def _parquet_table(path: str) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rankgate.io.source import DAMAGED, DAMAGED_HINT, is_damaged_parquet

    try:
        return pq.ParquetFile(path, page_checksum_verification=True).read()
    except (pa.ArrowInvalid, OSError) as exc:
        if is_damaged_parquet(exc):
            raise InputError(DAMAGED, path=path, hint=DAMAGED_HINT) from None
        raise InputError(f"is not a readable Parquet file: {exc}", path=path) from None


def _table_records(path: str, table: Any, container: str) -> Records:
    # pandas stores a DataFrame's index as a column of this name; it is not a field of the samples
    index_cols = [c for c in table.column_names if c.startswith("__index_level_")]
    if index_cols:
        table = table.drop(index_cols)
    rows = table.to_pylist()
    return Records(path, [Record(r, row=i + 1) for i, r in enumerate(rows)], list(table.column_names), container)


def hf_data_files(path: str) -> list[str]:
    """The Arrow files of a ``save_to_disk`` folder, in the order ``state.json`` lists them (else
    sorted by name)."""
    files: list[str] = []
    state = os.path.join(path, "state.json")
    if os.path.exists(state):
        try:
            with open(state, encoding="utf-8") as fh:
                files = [f["filename"] for f in json.load(fh).get("_data_files", [])]
        except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, AttributeError) as exc:
            raise InputError(f"is not a datasets state file: {exc}", path=state) from None
    if not files:
        files = sorted(f for f in os.listdir(path) if f.endswith(".arrow"))
    if not files:
        raise InputError("holds no .arrow files", path=path, hint="pass a folder written by Dataset.save_to_disk")
    return [os.path.join(path, name) for name in files]


def _hf(path: str) -> Records:
    """A ``save_to_disk`` folder: ``state.json`` lists the Arrow stream files, in order."""
    import pyarrow as pa

    if not os.path.isdir(path):
        raise InputError("is not a folder", path=path, hint="the hf format reads a folder written by Dataset.save_to_disk")
    if os.path.exists(os.path.join(path, "dataset_dict.json")):
        splits = sorted(d for d in os.listdir(path) if os.path.isdir(os.path.join(path, d)))
        raise InputError(f"is a DatasetDict folder with splits {', '.join(splits) or '(none)'}", path=path,
                         hint=f"pass one split's folder, e.g. {os.path.join(path, splits[0] if splits else 'test')}")
    tables = []
    for full in hf_data_files(path):
        try:
            with pa.OSFile(full) as source:  # (read, not mapped: see data.source.Pread)
                try:
                    tables.append(pa.ipc.open_stream(source).read_all())
                except pa.ArrowInvalid:
                    source.seek(0)
                    tables.append(pa.ipc.open_file(source).read_all())
        except (pa.ArrowInvalid, OSError) as exc:
            raise InputError(f"is not a readable Arrow file: {exc}", path=full) from None
    table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    return _table_records(path, table, "hf")
