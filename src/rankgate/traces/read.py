"""Reading trace exports into the canonical tables: :func:`read_traces`.

Inputs are files or folders (a folder means every file under it, in sorted order: a Langfuse export
folder holds ``observations_v2/`` and ``scores/``). Each file's format is sniffed from its content
(:mod:`.formats.table`) unless ``format`` is given; gzip is recognised by content, pipes are copied
to a temporary file first, a UTF-8 byte-order mark is skipped (:mod:`rankgate.io.source`). The
files of one format are read together, so a reader can join rows across files (Langfuse scores to
their traces). Nothing is written.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from contextlib import ExitStack
from typing import Any

from rankgate._util import progress
from rankgate.errors import F, InputError, UsageError
from rankgate.traces.build import Builder
from rankgate.traces.formats.table import FORMAT_NAMES, FORMATS
from rankgate.traces.model import TraceTables

__all__ = ["detect_format", "read_traces"]

_READERS: Mapping[str, str] = {f.name: f.reader for f in FORMATS}  # name -> "module:function" (the table's column)


def _reader(name: str) -> Callable[..., None]:
    import importlib

    module, _, fn = _READERS[name].partition(":")
    return getattr(importlib.import_module(module), fn)


def _expand(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[str]:
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    out: list[str] = []
    for p in paths:
        p = os.fspath(p)
        if os.path.isdir(p):
            found = sorted(os.path.join(d, f) for d, _, fs in os.walk(p) for f in fs if not f.startswith("."))
            if not found:
                raise InputError("is a folder with no files", path=p, hint="point --traces at the export files")
            out.extend(found)
        else:
            out.append(p)
    if not out:
        raise UsageError("no trace inputs given")
    return out


def _first_record(path: str, label: str) -> Mapping[str, Any] | None:
    """The first record's keys source: a Parquet schema, the first JSONL line, or a JSON document's
    first element."""
    from rankgate.io.source import PARQUET_MAGIC, first_byte, magic, text_lines

    if magic(path) == PARQUET_MAGIC:
        import pyarrow.parquet as pq

        try:
            names = pq.read_schema(path).names
        except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for a damaged file
            raise InputError(f"is not a readable Parquet file ({exc})", path=label) from None
        return dict.fromkeys(names)
    head = first_byte(path)
    if head == b"[" or head == b"{":
        for n, line in text_lines(path):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except RecursionError:
                raise InputError("is nested too deeply to be a trace record", path=label, line=n) from None
            except json.JSONDecodeError:
                break  # not one object per line: a JSON document spread over lines
            if isinstance(obj, dict) and isinstance(obj.get("data"), list):
                obj = obj["data"]
            if isinstance(obj, list):
                obj = obj[0] if obj and isinstance(obj[0], dict) else None
            return obj if isinstance(obj, dict) else None
        from rankgate.io.source import open_text

        try:
            with open_text(path) as fh:
                text = fh.read()
            doc = json.JSONDecoder().raw_decode(text, len(text) - len(text.lstrip()))[0]  # the first document
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
            return None
        if isinstance(doc, dict) and isinstance(doc.get("data"), list):
            doc = doc["data"]
        if isinstance(doc, list):
            doc = doc[0] if doc and isinstance(doc[0], dict) else None
        return doc if isinstance(doc, dict) else None
    for _ in text_lines(path):  # UTF-16, bytes that are not UTF-8…: the reader's own error names them
        break
    return None


def detect_format(path: str, label: str | None = None) -> str:
    """The format name of one trace file, from its first record (see :mod:`.formats.table`)."""
    label = label or path
    from rankgate.traces.formats.otlp_proto import is_otlp_proto

    if is_otlp_proto(path, label):
        return "otlp"
    rec = _first_record(path, label)
    if rec is not None:
        for fmt in FORMATS:
            if any(k in rec for k in fmt.sniff):
                return fmt.name
    raise InputError(
        "is not a trace export rankgate recognises", path=label,
        hint=f"pass --traces-format, one of {', '.join(FORMAT_NAMES)} (see docs/traces.md)",
    )


# field-map keys a format cannot use (refused, never ignored): rankgate's own JSONL has fixed fields; span
# formats mark stages by span kind, not by span name
_FIELD_MAP_UNUSED: Mapping[str, tuple[str, ...]] = {
    "jsonl": ("request", "documents", "query", "document", "stages", "feedback_names", "negative_below",
              "negative_labels", "abort_error_types"),
    "otlp": ("stages",), "otel-sdk": ("stages",), "phoenix": ("stages",),
}


def _check_field_map(fm: Mapping[str, Any], fmt: str, source: Any) -> None:
    from rankgate.errors import ConfigError

    unused = [k for k in fm if k in _FIELD_MAP_UNUSED.get(fmt, ())]
    if unused:
        why = ("rankgate's own trace JSONL has fixed field names (docs/traces.md)" if fmt == "jsonl" else
               "span formats take stages from the span kind (RETRIEVER, RERANKER), not from span names")
        raise ConfigError(f"does not apply to {fmt} traces: {why}",
                          path=os.fspath(source) if isinstance(source, (str, os.PathLike)) else "<field map>",
                          field=unused[0], hint="remove it, or read only the formats it applies to")


def read_traces(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], *, format: str | None = None,
                on_error: str = "error", field_map: str | Mapping[str, Any] | None = None,
                fast: bool = True, engine_items: bool = False, rank1: bool = False,
                fields: Mapping[str, str] | None = None) -> TraceTables:
    """Read trace exports into :class:`TraceTables` (see the module docs).

    ``format``: one of :data:`FORMAT_NAMES`, or ``None`` to sniff each file. ``on_error``: ``"error"``
    (a row that cannot be used is an InputError naming file, line and field) or ``"skip"`` (such rows
    are counted by reason in ``TraceTables.skipped``, the first 20 listed). ``field_map``: a YAML file
    or a mapping overriding where the export-row readers find each canonical field (docs/traces.md,
    "Field map"). ``fields``: the same said as ``{name: path}`` (``--field``: ``{"id": "metadata.chunk_id"}``,
    :func:`rankgate.traces.fieldmap.field_map_of`), applied over ``field_map``. ``fast``: let large canonical inputs take the columnar path (same result).
    ``engine_items``: items of large rankgate Parquet files may stay in the file for a DuckDB analysis
    (``TraceTables.item_sources``, :mod:`.native`); ``TraceTables.all_items()`` reads them. ``rank1``:
    such files also keep each request's rank-1 scores from their check pass (``ItemSource.rank1``:
    what an analysis needing only the top-1 score reads instead of the items)."""
    from rankgate.io.source import check_file, local_copy

    if format is not None and format not in FORMAT_NAMES:
        raise UsageError(f"unknown trace format {format!r}; formats: {', '.join(FORMAT_NAMES)}")
    builder = Builder(on_error)
    options: dict[str, Any] = {"fast": fast, "engine_items": engine_items, "rank1": rank1}
    if field_map is not None or fields:
        from rankgate.traces.fieldmap import field_map_of, load_field_map, merge_field_maps

        fm = load_field_map(field_map) if field_map is not None else {}
        fm = options["field_map"] = merge_field_maps(fm, field_map_of(fields)) if fields else fm
        # the span readers (OTLP, SDK, Phoenix) take these three from the map too
        if "abort_error_types" in fm:
            options["abort_error_types"] = frozenset(x.strip().lower() for x in fm["abort_error_types"])
        if "negative_below" in fm:
            options["negative_below"] = float(fm["negative_below"])
        if "negative_labels" in fm:
            options["negative_labels"] = frozenset(x.strip().lower() for x in fm["negative_labels"])
    files = _expand(paths)
    with ExitStack() as stack:
        groups: dict[str, list[tuple[str, str]]] = {}
        # (a pipe is copied to a file first: that is the time this stage can take)
        with progress.stage(f"opening {os.path.basename(files[0]) if len(files) == 1 else f'{len(files):,} files'}"):
            for label in files:
                path = stack.enter_context(local_copy(label, "trace"))
                check_file(path, "trace")
                fmt = format or detect_format(path, label)
                groups.setdefault(fmt, []).append((path, label))
                builder.formats.append(fmt)
        for fmt, group in groups.items():
            if fmt not in _READERS:
                raise UsageError(f"the {fmt} trace format is not available in this version")
            if fields and fmt == "jsonl":
                raise UsageError(f"{F.fields} cannot apply to {group[0][1]}: rankgate's own trace JSONL has fixed "
                                 "field names (docs/traces.md)")
            if field_map is not None:
                _check_field_map(options["field_map"], fmt, field_map)
            what = os.path.basename(group[0][1]) if len(group) == 1 else f"{len(group):,} {fmt} files"
            with progress.stage(f"reading {what}", unit=_COUNTED.get(fmt, "records")):  # (the readers count)
                _reader(fmt)(group, builder, options)
    return builder.finish()


# what each format's reader counts as it reads (rankgate._util.progress)
_COUNTED: Mapping[str, str] = {"jsonl": "requests", "otlp": "spans", "otel-sdk": "spans", "phoenix": "spans",
                               "langfuse": "rows", "langsmith": "runs"}
