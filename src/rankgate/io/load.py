"""Load gold sets and runs from files or Python data, detecting the format.

The formats are one table, :data:`rankgate.io.formats.FORMATS` (``jsonl``, also ``.json`` and
``.ndjson``; ``trec``; ``beir``, gold only: ``qrels/*.tsv`` or a BEIR folder, see
:func:`~rankgate.io.trec.beir_qrels_file`; ``parquet``, long tables; ``csv``, CSV/TSV with a header,
``columns=`` mapping its columns; ``ragas`` and ``deepeval``, gold and run in one file; ``llamaindex``,
a gold set; ``hf``, a Hugging Face ``save_to_disk`` folder; ``samples``, the sample contract's YAML/JSON
samples and outputs, see :mod:`rankgate.io.tools.contract`), plus any row a plug-in adds. gzip is accepted
for text formats. :func:`rankgate.io.detect.detect` picks the row (extension, then the content);
``format=`` overrides. Pipes are read through a temporary copy (:func:`~rankgate.io.source.local_copy`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

from rankgate._util.constraints import Param, plain
from rankgate.errors import FileChangedError, InputError, RankgateError, UsageError
from rankgate.io.detect import call, check_format, detect
from rankgate.io.formats import split_list_sep
from rankgate.io.jsonl import iter_json_lines, json_lines, parse_gold_records, parse_run_records, read_text, summary_error
from rankgate.model.gold_run import Gold, Run
from rankgate.io.source import check_file, check_unchanged, file_stamp, is_pipe, local_copy

#: What :func:`load_gold` reads: a path (file, folder or pipe), a loaded :class:`Gold` (kept as it is),
#: ``{query_id: {doc_id: grade}}`` or the sample contract's mapping, an iterable of gold records, or a long
#: table or dataset object (a DataFrame, a RAGAS or Hugging Face dataset: iterable, read by its rows).
GoldInput = str | os.PathLike[str] | Gold | Mapping[str, Any] | Iterable[Any]
#: What :func:`load_run` reads: a path, a loaded :class:`Run`, ``{query_id: {doc_id: score}}`` or
#: ``{query_id: [doc_id, …]}``, an iterable of run records, or a long table or dataset object.
RunInput = str | os.PathLike[str] | Run | Mapping[str, Any] | Iterable[Any]


def _json_records(path: str, what: str = "run") -> list[tuple[int, Any]]:
    """Records of a JSONL file; a .json file holding one array or object is accepted too."""
    text = read_text(path)
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"is not valid JSON: {exc.msg}", path=path, line=exc.lineno) from None
        except (ValueError, RecursionError):
            raise InputError("is not JSON that can be read (a number too long or nesting too deep)", path=path) from None
        return [(i, obj) for i, obj in enumerate(data, start=1)]
    try:
        records = list(iter_json_lines(json_lines(text), path))
    except InputError:
        _refuse_summary(text, path, what)  # a pretty-printed summary.json does not parse line by line
        raise
    if records:
        error = summary_error(records[0][1], path, what)
        if error is not None:
            raise error
    return records


def _refuse_summary(text: str, path: str, what: str) -> None:
    try:
        whole = json.loads(text)
    except (ValueError, RecursionError):
        return
    error = summary_error(whole, path, what)
    if error is not None:
        raise error


def _gain(value: Any) -> float:
    """A grade of a ``{qid: {doc: grade}}`` map as a number (numpy's and whole floats too), to tell a query
    with a relevant item from a no-answer one; anything else is 0 here and refused by the parser."""
    value = plain(value)
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value else 0


def _as_mapping_records(data: Mapping[str, Any], kind: str) -> list[tuple[int, Any]]:
    """{qid: {doc: value}} or {qid: [ids]} -> records."""
    out = []
    for i, (qid, value) in enumerate(data.items(), start=1):
        if kind == "gold":
            if not isinstance(value, Mapping):
                value = list(value)
                if not all(isinstance(d, (str, int)) for d in value):  # objects (LlamaIndex nodes, LangChain
                    # documents): the parser reads their ids
                    out.append((i, {"query_id": str(qid), "relevant": value, **({} if value else {"no_answer": True})}))
                    continue
            rel = {str(d): g for d, g in value.items()} if isinstance(value, Mapping) else {str(d): 1 for d in value}
            rec: dict[str, Any] = {"query_id": str(qid), "relevant": rel}
            if not any(_gain(g) >= 1 for g in rel.values()):
                rec["no_answer"] = True
        else:
            if isinstance(value, Mapping):
                rec = {"query_id": str(qid), "topk": [{"chunk_id": str(d), "score": s} for d, s in value.items()]}
            else:
                rec = {"query_id": str(qid), "topk": list(value)}
        out.append((i, rec))
    return out


_NOUNS = {"gold": "gold set", "run": "run"}
_LABEL = Param("label", str, "<gold>", help="the name messages give in-memory data")


def load_gold(source: GoldInput, *, format: str | None = None, label: str = "<gold>",
              columns: Mapping[str, str] | None = None, fields: Mapping[str, str] | None = None) -> Gold:
    """Load a gold set from a path or Python data (see module docs for what is accepted).

    ``columns``: for a table with a header, which column holds each field (``{"query_id": "qid"}``).
    ``fields``: where each field lives (``{"relevant": "labels[*].doc_id"}``, :mod:`rankgate.io.mapped`)."""
    gold = _load(source, "gold", *_checked("load_gold", format, label, columns), _fields("load_gold", fields))
    if "turn" in gold.fields:  # (the JSONL parser names the line; other readers the two queries)
        from rankgate.model.conversations import check_unique_turns

        check_unique_turns(gold.fields.get("conversation_id") or [], gold.fields["turn"], gold.query_ids, gold.source)
    return gold


def load_run(source: RunInput, *, format: str | None = None, label: str = "<run>",
             columns: Mapping[str, str] | None = None, fields: Mapping[str, str] | None = None) -> Run:
    """Load a run from a path or Python data (see module docs for what is accepted).

    ``columns``: for a table with a header, which column holds each field (``{"score": "s"}``).
    ``fields``: where each field lives (``{"id": "metadata.doc_id"}``, :mod:`rankgate.io.mapped`)."""
    return _load(source, "run", *_checked("load_run", format, label, columns), _fields("load_run", fields))


def _fields(caller: str, fields: Any) -> dict[str, str] | None:
    """``fields`` checked (names and paths; a UsageError naming the first flaw); None when not given."""
    if fields is None:
        return None
    from rankgate.io.mapped import check_fields

    return check_fields(fields, command=caller)


def _checked(caller: str, format: Any, label: Any, columns: Any) -> tuple[str | None, str, Mapping[str, str] | None]:
    """The options of :func:`load_gold` and :func:`load_run`, checked (a UsageError naming the parameter)."""
    from rankgate._util.constraints import COLUMNS, TEXT, check

    return (check(TEXT, format, caller=caller, name="format"), check(_LABEL, label, caller=caller),
            check(COLUMNS, columns, caller=caller))


def load_run_lazy_texts(source: Any, *, format: str | None = None,
                        columns: Mapping[str, str] | None = None, fields: Mapping[str, str] | None = None) -> Run | None:
    """A JSONL run file of the common shape with its item texts left in the file until something asks
    for one (:func:`rankgate.io.jsonl_fast.read_run_lazy_texts`: the same values, read from their
    lines); None for anything else (not a regular JSONL file, a column or field map, a shape the scanner
    does not take this way), which :func:`load_run` reads as usual, naming any error."""
    if not isinstance(source, (str, os.PathLike)) or columns or fields or format not in (None, "jsonl"):
        return None
    from rankgate.io.jsonl_fast import read_run_lazy_texts

    path = os.fspath(source)
    stamp = file_stamp(path)
    try:
        if is_pipe(path) or not os.path.isfile(path) or detect(path, "run", format).name != "jsonl":
            return None
        got = read_run_lazy_texts(path)
    except FileChangedError:
        raise
    except (OSError, RankgateError):  # (read as usual: its reader names the error)
        check_unchanged(path, stamp)
        return None
    check_unchanged(path, stamp)
    return got


STREAM_FROM_BYTES = 1 << 27
"""TREC and JSONL run files from this size (128 MiB, about 36,000 queries x 100 in TREC: two blocks)
are read block by block, each block read while the one before is scored: less memory and less work
than reading whole."""


_R = TypeVar("_R")


def gold_first(gold: Any, read_run: Callable[[], _R]) -> tuple[Gold, _R]:
    """``read_run()`` here while ``gold`` (a future of the gold set) is read on a thread; an error in
    the gold set is raised first, as if the gold set had been read first, then the run's. (``read_run``
    may read a part of the run: its first block.)"""
    try:
        r = read_run()
        run_error: RankgateError | None = None
    except RankgateError as exc:
        run_error = exc
    g = gold.result()
    if run_error is not None:
        raise run_error
    return g, r


def run_blocks(source: Any, *, format: str | None = None, columns: Mapping[str, str] | None = None,
               from_bytes: int | None = None, block_bytes: int | None = None,
               items: bool = True, fields: Mapping[str, str] | None = None) -> Iterator[Run | None] | None:
    """A large TREC or JSONL run file's rows in blocks of whole queries (see
    :func:`rankgate.io.trec.trec_run_blocks` and :func:`rankgate.io.jsonl_fast.jsonl_run_blocks`),
    or None when ``source`` is not a regular TREC or JSONL run file of at least ``from_bytes`` bytes
    (default :data:`STREAM_FROM_BYTES`) that the compiled readers take: :func:`load_run` then reads it.
    ``items=False``: the caller reads no item column (texts, versions), which a JSONL run's blocks then
    leave out. A field map (``fields``) is read line by line: None."""
    if not isinstance(source, (str, os.PathLike)) or columns or fields or format not in (None, "trec", "jsonl"):
        return None
    path = os.fspath(source)
    try:
        if is_pipe(path) or not os.path.isfile(path) or os.path.getsize(path) < (STREAM_FROM_BYTES if from_bytes is None else from_bytes):
            return None
        name = detect(path, "run", format).name
    except (OSError, RankgateError):  # reading it whole says what is wrong
        return None
    from rankgate.io import trec

    try:  # (an error the first look finds, such as a first line that is not UTF-8: the whole read names it)
        if name == "trec":
            return trec.trec_run_blocks(path, block_bytes or trec.STREAM_BLOCK_BYTES)
        if name == "jsonl":
            from rankgate.io.jsonl_fast import jsonl_run_blocks

            return jsonl_run_blocks(path, block_bytes or trec.STREAM_BLOCK_BYTES, items=items)
    except FileChangedError:
        raise
    except RankgateError:
        return None
    return None


def _load(source: Any, noun: str, format: str | None, label: str, columns: Mapping[str, str] | None,
          fields: Mapping[str, str] | None = None) -> Any:
    """A gold set (``noun="gold"``) or run from a path or Python data (``fields``: the field map)."""
    gold = noun == "gold"
    if isinstance(source, Gold if gold else Run):
        return source
    if isinstance(source, (str, os.PathLike)):
        return _load_path(os.fspath(source), noun, format, columns, fields)
    from rankgate.io.mapped import fields_for

    if fields_for(fields, noun):
        return _load_mapped_objects(source, noun, format, label, columns, fields_for(fields, noun))
    from rankgate.io.tools import read as tools

    check_format(format, noun)
    if isinstance(source, Mapping) and format in (None, "samples") and (format == "samples" or _contract_mapping(source, noun)):
        from rankgate.io.tools.contract import gold_from_value, run_from_value

        # {"samples": [...]} / {sample id: {"retrieved": [...]}}: the sample contract
        return gold_from_value(dict(source), label) if gold else run_from_value(dict(source), label)
    from_objects = tools.gold_from_objects if gold else tools.run_from_objects
    parse = parse_gold_records if gold else parse_run_records
    if isinstance(source, Mapping):
        tool = from_objects(source, label, format)
        if tool is not None:
            return tool
        loaded: Any = parse(_as_mapping_records(source, noun), label)
        if not gold and any(isinstance(v, Mapping) for v in source.values()):
            loaded.ties = "id"  # {query_id: {doc_id: score}}, pytrec_eval's shape: a score map, not an order
        return loaded
    if isinstance(source, Iterable) or hasattr(source, "to_list") or hasattr(source, "to_dict"):
        rows = tools.rows_of(source)
        tool = from_objects(rows, label, format)
        if tool is None:  # a long table (a DataFrame with query_id, chunk_id, grade or score columns)
            tool = tools.table_from_objects(source, rows, label, noun, format, columns)
        return tool if tool is not None else parse(list(enumerate(rows, start=1)), label)
    raise UsageError(f"cannot read a {_NOUNS[noun]} from {type(source).__name__}; pass a path, a dict or a list of records")


def _contract_mapping(source: Mapping[str, Any], noun: str) -> bool:
    """Whether in-memory data is in the sample contract's shape. For a run: a mapping of sample id to
    the contract's output with at least one ``{"retrieved": …}`` (a mapping of bare id lists reads the
    same either way), or a ``samples`` list carrying outputs."""
    from rankgate.io.tools.contract import is_contract_value

    if noun == "gold" or "samples" in source:
        return is_contract_value(source, noun)
    return is_contract_value(source, "run") and any(isinstance(v, Mapping) for v in source.values())


def _load_path(path: str, noun: str, format: str | None, columns: Mapping[str, str] | None,
               fields: Mapping[str, str] | None = None) -> Any:
    """A gold set (``noun="gold"``) or run from a file, folder or pipe: find its row in the format
    table (:func:`rankgate.io.detect.detect`), then read it with the row's reader (with a field map
    that applies: JSON records mapped, or a table's columns named; any other format refused)."""
    check_format(format, noun)
    check_file(path, noun)
    if is_pipe(path):  # read once into a local copy, then as a file
        return _from_pipe(path, noun, lambda local: _load_path(local, noun, format, columns, fields))
    row = detect(path, noun, format)
    from rankgate.io.mapped import TABLE_FORMATS, fields_for, refusal, table_columns

    mine = fields_for(fields, noun)
    if mine and row.name in TABLE_FORMATS:
        columns = table_columns(mine, noun, columns)
    elif mine and (row.name == "jsonl" or (format is None and _json_file(path))):
        stamp = file_stamp(path)
        loaded = _read_mapped_json(path, noun, mine)
        check_unchanged(path, stamp)
        return loaded
    elif mine:
        raise refusal(path, row.description)
    reader = getattr(row, noun)
    columns, list_sep = split_list_sep(dict(columns) if columns else None)
    if reader is None:  # a format that holds the other noun only (a LlamaIndex dataset is a gold set)
        other = "run" if noun == "gold" else "gold"
        raise InputError(f"{row.description} holds a {_NOUNS[other]}, not a {_NOUNS[noun]}", path=path,
                         hint=f"pass it as --{other}")
    # Every reader: a file cut short or rewritten while it was read is never a result, and its read's
    # error (a line cut in two, a damaged page) is reported as what it is.
    stamp = file_stamp(path)
    try:
        loaded = call(reader, path, row.name, columns, list_sep)
    except InputError as exc:
        check_unchanged(path, stamp)
        if format is None or not row.explain:
            raise
        from rankgate.io.tools import read as tools

        raise tools.explain(path, noun, row.name, exc) from None
    check_unchanged(path, stamp)
    return loaded


def _pandas_rows(path: str) -> list[tuple[int, Any]] | None:
    """The rows of a file pandas' default ``DataFrame.to_json()`` wrote (one object per column), or
    None for any other file; read only after the file failed to read as records."""
    from rankgate.io.tools.records import _pandas_columns
    from rankgate.io.source import open_text

    try:
        with open_text(path) as fh:  # one line (pandas writes no newline inside): else not such a file
            head = fh.read(1 << 16)
            if not head.lstrip().startswith("{") or "\n" in head.strip():
                return None
        text = read_text(path).strip()
        whole = json.loads(text) if text.startswith("{") and "\n" not in text else None
    except (InputError, ValueError, RecursionError, OSError):
        return None
    if not isinstance(whole, dict) or summary_error(whole, path, "run") is not None:  # (a summary.json says so)
        return None
    rows = _pandas_columns(whole)
    return None if rows is None else list(enumerate(rows, start=1))


def _json_or_pandas(path: str, read: Any) -> Any:
    """``read(path)``; when that fails on a file pandas wrote with its default ``to_json()``, its rows."""
    try:
        return read(path)
    except InputError:
        rows = _pandas_rows(path)
        if rows is None:
            raise
        return rows


def _json_file(path: str) -> bool:
    """Whether ``path`` is named as JSON or JSON lines (``.json``, ``.jsonl``, ``.ndjson``, gzipped or not)."""
    from rankgate.io.formats import get_format

    name = path.lower().removesuffix(".gz")
    return name.endswith(get_format("jsonl").extensions)


def _read_mapped_json(path: str, noun: str, fields: Mapping[str, str]) -> Any:
    """A JSON or JSONL file read record by record with the field map applied (:mod:`rankgate.io.mapped`):
    the validating parser, never the compiled scanner, which reads fixed names."""
    from rankgate.io.mapped import map_records

    records = _json_or_pandas(path, lambda p: _json_records(p, _NOUNS[noun]))
    parse = parse_gold_records if noun == "gold" else parse_run_records
    return parse(map_records(records, fields, noun, path), path)


def _load_mapped_objects(source: Any, noun: str, format: str | None, label: str, columns: Mapping[str, str] | None,
                         fields: Mapping[str, str]) -> Any:
    """In-memory records (a list of dicts, a ``{query_id: …}`` mapping) with the field map applied; a DataFrame
    is a table, each path a column."""
    from rankgate.io.mapped import map_records, table_columns

    check_format(format, noun)
    if hasattr(source, "to_dict") and hasattr(source, "columns"):  # (a DataFrame: its columns named)
        return _load(source, noun, format, label, table_columns(fields, noun, columns))
    if isinstance(source, Mapping):
        records = _as_mapping_records(source, noun)
    elif isinstance(source, Iterable):
        from rankgate.io.tools import read as tools

        records = list(enumerate(tools.rows_of(source), start=1))
    else:
        raise UsageError(f"cannot read a {_NOUNS[noun]} from {type(source).__name__}; pass a path, a dict or a "
                         "list of records")
    parse = parse_gold_records if noun == "gold" else parse_run_records
    loaded: Any = parse(map_records(records, fields, noun, label), label)
    if noun == "run" and isinstance(source, Mapping) and any(isinstance(v, Mapping) for v in source.values()):
        loaded.ties = "id"  # ({query_id: {doc_id: score}}: a score map, as _load reads it)
    return loaded


# The built-in readers the format table names ("rankgate.io.load:read_…"), each called as
# read(path, name, columns, list_sep)

def _say_declined(path: str, why: list[str]) -> None:
    """One line on stderr when a large JSONL file takes the line-by-line reader, and why."""
    if why:
        import sys

        print(f"rankgate: note: {path}: read line by line (slower) because {why[0]}", file=sys.stderr)


def _fast_or_parsed(fast: Callable[..., Any], parse: Callable[..., Any], what: str) -> Callable[[str], Any]:
    """A reader of a JSONL file: the fast path, or the validating parser, which says why it ran."""

    def read(p: str) -> Any:
        why: list[str] = []
        got = fast(p, why=why)
        if got is not None:
            return got
        parsed = parse(_json_records(p, what), p)
        _say_declined(p, why)  # (after the parse: a file it refuses gets its one error line only)
        return parsed

    return read


def read_jsonl_gold(path: str, fmt: str, columns: Mapping[str, str] | None, list_sep: str | None) -> Gold:
    from rankgate.io.jsonl_fast import read_gold_fast

    got = _json_or_pandas(path, _fast_or_parsed(read_gold_fast, parse_gold_records, "gold set"))
    return got if isinstance(got, Gold) else parse_gold_records(got, path)


def read_jsonl_run(path: str, fmt: str, columns: Mapping[str, str] | None, list_sep: str | None) -> Run:
    from rankgate.io.jsonl_fast import read_run_fast

    got = _json_or_pandas(path, _fast_or_parsed(read_run_fast, parse_run_records, "run"))
    return got if isinstance(got, Run) else parse_run_records(got, path)


def read_trec_gold(path: str, fmt: str, columns: Mapping[str, str] | None, list_sep: str | None) -> Gold:
    from rankgate.io.trec import read_trec_qrels

    return read_trec_qrels(path)


def read_trec_run(path: str, fmt: str, columns: Mapping[str, str] | None, list_sep: str | None) -> Run:
    from rankgate.io.trec import read_trec_run

    return read_trec_run(path)


def read_beir_gold(path: str, fmt: str, columns: Mapping[str, str] | None, list_sep: str | None) -> Gold:
    from rankgate.io.trec import read_beir_qrels

    return read_beir_qrels(_beir_qrels_file(path))


def read_parquet_gold(path: str, fmt: str, columns: Mapping[str, str] | None, list_sep: str | None) -> Gold:
    if columns:  # a long table whose columns are mapped: read as records
        from rankgate.io.tools.read import read_gold

        return read_gold(path, fmt, columns, list_sep)
    from rankgate.io.parquet import read_parquet_gold as read

    return read(path)


def read_parquet_run(path: str, fmt: str, columns: Mapping[str, str] | None, list_sep: str | None) -> Run:
    if columns:
        from rankgate.io.tools.read import read_run

        return read_run(path, fmt, columns, list_sep)
    from rankgate.io.parquet import read_parquet_run as read

    return read(path)


def read_samples_gold(path: str, fmt: str, columns: Mapping[str, str] | None, list_sep: str | None) -> Gold:
    from rankgate.io.tools.contract import read_contract_gold

    return read_contract_gold(path)


def read_samples_run(path: str, fmt: str, columns: Mapping[str, str] | None, list_sep: str | None) -> Run:
    from rankgate.io.tools.contract import read_contract_run

    return read_contract_run(path)


def _from_pipe(path: str, what: str, load: Any) -> Any:
    """Load from a pipe through a temporary regular copy; the result and its errors name the pipe."""
    with local_copy(path, what) as local:
        loaded = load(local)
    loaded.source = path
    return loaded


def _beir_qrels_file(path: str) -> str:
    from rankgate.io.trec import beir_qrels_file

    return path if os.path.isfile(path) else beir_qrels_file(path)
