"""Load gold sets and runs from files or Python objects, detecting the format.

Formats: ``jsonl`` (also ``.json``, ``.ndjson``), ``trec``, ``beir`` (gold: ``qrels/*.tsv`` or a
BEIR folder, see :func:`~rankgate.data.trec.beir_qrels_file`), ``parquet`` (long tables). gzip is
accepted for text formats. Detection uses the extension, then the content: Parquet's magic bytes,
else the first byte that is not whitespace or a byte-order mark (``{`` or ``[`` means JSON lines,
anything else TREC), then the field names (:mod:`rankgate.data.tools`: ``csv`` for CSV/TSV with a
header, ``columns=`` mapping its columns; ``ragas`` and ``deepeval``, gold and run in one file;
``llamaindex``, a gold set; ``hf``, a Hugging Face ``save_to_disk`` folder; ``samples``, the sample
contract's YAML/JSON samples and outputs, see :mod:`rankgate.data.contract`, also for ``.yaml``/``.yml``
files); ``format=`` overrides.
Pipes are read through a temporary copy (:func:`~rankgate.data.source.local_copy`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import InputError, UsageError
from .formats import GOLD_FORMATS, RUN_FORMATS, split_list_sep
from .jsonl import iter_json_lines, json_lines, parse_gold_records, parse_run_records, read_text, summary_error
from .models import Gold, Run
from .source import PARQUET_MAGIC, check_file, first_byte, is_pipe, local_copy, magic

GoldLike = Any  # path, Gold, {qid: {doc: grade}}, or an iterable of gold records
RunLike = Any  # path, Run, {qid: {doc: score}} / {qid: [ids]}, or an iterable of run records


def _detect(path: str, allowed: tuple[str, ...], what: str) -> str:
    p = path.removesuffix(".gz")
    ext = os.path.splitext(p)[1].lower()
    if os.path.isdir(path):
        from .trec import has_beir_qrels

        if what == "gold" and has_beir_qrels(path):
            return "beir"
        raise InputError("is a folder", path=path, hint=f"pass the {what} file itself")
    if ext in (".parquet", ".pq") or magic(path) == PARQUET_MAGIC:
        return "parquet"
    if ext in (".jsonl", ".ndjson", ".json"):
        return "jsonl"
    if ext == ".tsv" and what == "gold":
        return "beir"
    if ext in (".yaml", ".yml"):
        return "samples"
    first = first_byte(path)
    if first in (b"{", b"["):
        return "jsonl"
    if not first:
        raise InputError("is empty", path=path, hint=f"the {what} file has no content")
    return "trec"


def _check_format(fmt: str | None, allowed: tuple[str, ...], what: str) -> None:
    if fmt is not None and fmt not in allowed:
        raise UsageError(f"unknown {what} format {fmt!r}; expected one of: {', '.join(allowed)}")


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


def _as_mapping_records(data: Mapping[str, Any], kind: str) -> list[tuple[int, Any]]:
    """{qid: {doc: value}} or {qid: [ids]} -> records."""
    out = []
    for i, (qid, value) in enumerate(data.items(), start=1):
        if kind == "gold":
            rel = {str(d): g for d, g in value.items()} if isinstance(value, Mapping) else {str(d): 1 for d in value}
            rec: dict[str, Any] = {"query_id": str(qid), "relevant": rel}
            if not any(isinstance(g, int) and g >= 1 for g in rel.values()):
                rec["no_answer"] = True
        else:
            if isinstance(value, Mapping):
                rec = {"query_id": str(qid), "topk": [{"chunk_id": str(d), "score": s} for d, s in value.items()]}
            else:
                rec = {"query_id": str(qid), "topk": list(value)}
        out.append((i, rec))
    return out


def load_gold(source: GoldLike, *, format: str | None = None, label: str = "<gold>",
              columns: Mapping[str, str] | None = None) -> Gold:
    """Load a gold set from a path or Python data (see module docs for what is accepted).

    ``columns``: for a table with a header, which column holds each field (``{"query_id": "qid"}``)."""
    if isinstance(source, Gold):
        return source
    if isinstance(source, (str, os.PathLike)):
        return _load_path(os.fspath(source), "gold", format, columns)
    from . import tools

    if format is not None:
        _check_format(format, GOLD_FORMATS, "gold")
    if isinstance(source, Mapping) and format in (None, "samples"):
        from .contract import gold_from_value, is_contract_value

        if format == "samples" or is_contract_value(source, "gold"):  # {"samples": [...]}: the sample contract
            return gold_from_value(dict(source), label)
    if isinstance(source, Mapping):
        tool_gold = tools.gold_from_objects(source, label, format)
        return tool_gold if tool_gold is not None else parse_gold_records(_as_mapping_records(source, "gold"), label)
    if isinstance(source, Iterable) or hasattr(source, "to_list") or hasattr(source, "to_dict"):
        rows = tools.rows_of(source)
        tool_gold = tools.gold_from_objects(rows, label, format)
        return tool_gold if tool_gold is not None else parse_gold_records(list(enumerate(rows, start=1)), label)
    raise UsageError(f"cannot read a gold set from {type(source).__name__}; pass a path, a dict or a list of records")


def load_run(source: RunLike, *, format: str | None = None, label: str = "<run>",
             columns: Mapping[str, str] | None = None) -> Run:
    """Load a run from a path or Python data (see module docs for what is accepted).

    ``columns``: for a table with a header, which column holds each field (``{"score": "s"}``)."""
    if isinstance(source, Run):
        return source
    if isinstance(source, (str, os.PathLike)):
        return _load_path(os.fspath(source), "run", format, columns)
    from . import tools

    if format is not None:
        _check_format(format, RUN_FORMATS, "run")
    if isinstance(source, Mapping) and (format == "samples" or (format is None and _outputs_mapping(source))):
        from .contract import run_from_value

        return run_from_value(dict(source), label)  # {sample id: {"retrieved": [...]}}: the sample contract
    if isinstance(source, Mapping):
        tool_run = tools.run_from_objects(source, label, format)
        if tool_run is not None:
            return tool_run
        run = parse_run_records(_as_mapping_records(source, "run"), label)
        if any(isinstance(v, Mapping) for v in source.values()):
            run.ties = "id"  # {query_id: {doc_id: score}}, pytrec_eval's shape: a score map, not an order
        return run
    if isinstance(source, Iterable) or hasattr(source, "to_list") or hasattr(source, "to_dict"):
        rows = tools.rows_of(source)
        tool_run = tools.run_from_objects(rows, label, format)
        return tool_run if tool_run is not None else parse_run_records(list(enumerate(rows, start=1)), label)
    raise UsageError(f"cannot read a run from {type(source).__name__}; pass a path, a dict or a list of records")


def _outputs_mapping(source: Mapping[str, Any]) -> bool:
    """A mapping of sample id to the sample contract's output with at least one ``{"retrieved": …}``
    (a mapping of bare id lists reads the same either way), or a ``samples`` list carrying outputs."""
    from .contract import is_contract_value

    if "samples" in source:
        return is_contract_value(source, "run")
    return is_contract_value(source, "run") and any(isinstance(v, Mapping) for v in source.values())


def _load_path(path: str, noun: str, format: str | None, columns: Mapping[str, str] | None) -> Any:
    """A gold set (``noun="gold"``) or run from a file, folder or pipe: detect the format, then read it."""
    from . import tools

    gold = noun == "gold"
    formats = GOLD_FORMATS if gold else RUN_FORMATS
    _check_format(format, formats, noun)
    check_file(path, noun)
    if is_pipe(path):  # read once into a local copy, then as a file
        return _from_pipe(path, noun, lambda local: _load_path(local, noun, format, columns))
    if format is None and os.path.isdir(path) and tools.is_hf_folder(path):
        fmt = "hf"
    else:
        fmt = format or tools.refine(path, _detect(path, formats, noun), noun)
    if fmt == "samples":
        from .contract import read_contract_gold, read_contract_run

        return read_contract_gold(path) if gold else read_contract_run(path)
    columns, list_sep = split_list_sep(dict(columns) if columns else None)
    # a LlamaIndex file is a gold set only: its run reader says so
    if fmt in tools.RECORD_FORMATS or (columns and fmt == "parquet") or (not gold and fmt == "llamaindex"):
        return tools.read_gold(path, fmt, columns, list_sep) if gold else tools.read_run(path, fmt, columns, list_sep)
    read = _load_gold_path if gold else _load_run_path
    if format is None:
        return read(path, fmt)
    try:
        return read(path, fmt)
    except InputError as exc:
        raise tools.explain(path, noun, fmt, exc) from None


def _pandas_rows(path: str) -> list[tuple[int, Any]] | None:
    """The rows of a file pandas' default ``DataFrame.to_json()`` wrote (one object per column), or
    None for any other file; read only after the file failed to read as records."""
    from .records import _pandas_columns
    from .source import open_text

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


def _load_gold_path(path: str, fmt: str) -> Gold:
    if fmt == "jsonl":
        from .jsonl_fast import read_gold_fast

        def read(p: str) -> Any:
            fast = read_gold_fast(p)
            return fast if fast is not None else parse_gold_records(_json_records(p, "gold set"), p)

        got = _json_or_pandas(path, read)
        return got if isinstance(got, Gold) else parse_gold_records(got, path)
    if fmt == "trec":
        from .trec import read_trec_qrels

        return read_trec_qrels(path)
    if fmt == "beir":
        from .trec import read_beir_qrels

        return read_beir_qrels(_beir_qrels_file(path))
    from .parquet import read_parquet_gold

    return read_parquet_gold(path)


def _load_run_path(path: str, fmt: str) -> Run:
    if fmt == "jsonl":
        from .jsonl_fast import read_run_fast

        def read_run(p: str) -> Any:
            fast = read_run_fast(p)
            return fast if fast is not None else parse_run_records(_json_records(p), p)

        got = _json_or_pandas(path, read_run)
        return got if isinstance(got, Run) else parse_run_records(got, path)
    if fmt == "trec":
        from .trec import read_trec_run

        return read_trec_run(path)
    from .parquet import read_parquet_run

    return read_parquet_run(path)


def _from_pipe(path: str, what: str, load: Any) -> Any:
    """Load from a pipe through a temporary regular copy; the result and its errors name the pipe."""
    with local_copy(path, what) as local:
        loaded = load(local)
    loaded.source = path
    return loaded


def _beir_qrels_file(path: str) -> str:
    from .trec import beir_qrels_file

    return path if os.path.isfile(path) else beir_qrels_file(path)
