"""Load gold sets and runs from files or Python objects, detecting the format.

Formats: ``jsonl`` (also ``.json``, ``.ndjson``), ``trec``, ``beir`` (gold: ``qrels/*.tsv`` or a
BEIR folder), ``parquet`` (long tables). ``.gz`` is accepted for text formats. Detection uses the
extension, then the first character of the content (``{`` means JSON lines); ``format=`` overrides.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..errors import InputError, UsageError
from .jsonl import iter_json_lines, parse_gold_records, parse_run_records
from .models import Gold, Run
from .source import check_file, open_text, sniff

GOLD_FORMATS = ("jsonl", "trec", "beir", "parquet")
RUN_FORMATS = ("jsonl", "trec", "parquet")

GoldLike = Any  # path, Gold, {qid: {doc: grade}}, or an iterable of gold records
RunLike = Any  # path, Run, {qid: {doc: score}} / {qid: [ids]}, or an iterable of run records


def _detect(path: str, allowed: tuple[str, ...], what: str) -> str:
    p = path.removesuffix(".gz")
    ext = os.path.splitext(p)[1].lower()
    if os.path.isdir(path):
        if what == "gold" and (Path(path, "qrels").is_dir() or Path(path, "qrels.tsv").exists()):
            return "beir"
        raise InputError("is a folder", path=path, hint=f"pass the {what} file itself")
    if ext in (".parquet", ".pq"):
        return "parquet"
    if ext in (".jsonl", ".ndjson", ".json"):
        return "jsonl"
    if ext == ".tsv" and what == "gold":
        return "beir"
    first = sniff(path)
    if first in ("{", "["):
        return "jsonl"
    if first == "":
        raise InputError("is empty", path=path, hint=f"the {what} file has no content")
    return "trec"


def _check_format(fmt: str | None, allowed: tuple[str, ...], what: str) -> None:
    if fmt is not None and fmt not in allowed:
        raise UsageError(f"unknown {what} format {fmt!r}; expected one of: {', '.join(allowed)}")


def _json_records(path: str) -> Iterable[tuple[int, Any]]:
    """Records of a JSONL file; a .json file holding one array or object is accepted too."""
    try:
        with open_text(path) as fh:
            text = fh.read()
    except UnicodeDecodeError:
        raise InputError("is not UTF-8 text", path=path) from None
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"is not valid JSON: {exc.msg}", path=path, line=exc.lineno) from None
        return [(i, obj) for i, obj in enumerate(data, start=1)]
    return list(iter_json_lines(text.splitlines(), path))


def _as_mapping_records(data: Mapping[str, Any], kind: str) -> list[tuple[int, Any]]:
    """{qid: {doc: value}} or {qid: [ids]} -> records."""
    out = []
    for i, (qid, value) in enumerate(data.items(), start=1):
        if kind == "gold":
            rel = {str(d): g for d, g in value.items()} if isinstance(value, Mapping) else {str(d): 1 for d in value}
            rec = {"query_id": str(qid), "relevant": rel}
            if not any(isinstance(g, int) and g >= 1 for g in rel.values()):
                rec["no_answer"] = True
        else:
            if isinstance(value, Mapping):
                rec = {"query_id": str(qid), "topk": [{"chunk_id": str(d), "score": s} for d, s in value.items()]}
            else:
                rec = {"query_id": str(qid), "topk": list(value)}
        out.append((i, rec))
    return out


def load_gold(source: GoldLike, *, format: str | None = None, label: str = "<gold>") -> Gold:
    """Load a gold set from a path or Python data (see module docs for what is accepted)."""
    if isinstance(source, Gold):
        return source
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        _check_format(format, GOLD_FORMATS, "gold")
        check_file(path, "gold")
        fmt = format or _detect(path, GOLD_FORMATS, "gold")
        if fmt == "jsonl":
            from .jsonl_fast import read_gold_fast

            fast = read_gold_fast(path)
            return fast if fast is not None else parse_gold_records(_json_records(path), path)
        if fmt == "trec":
            from .trec import read_trec_qrels

            return read_trec_qrels(path)
        if fmt == "beir":
            from .trec import read_beir_qrels

            return read_beir_qrels(_beir_qrels_file(path))
        from .parquet import read_parquet_gold

        return read_parquet_gold(path)
    if isinstance(source, Mapping):
        return parse_gold_records(_as_mapping_records(source, "gold"), label)
    if isinstance(source, Iterable):
        return parse_gold_records(list(enumerate(source, start=1)), label)
    raise UsageError(f"cannot read a gold set from {type(source).__name__}; pass a path, a dict or a list of records")


def load_run(source: RunLike, *, format: str | None = None, label: str = "<run>") -> Run:
    """Load a run from a path or Python data (see module docs for what is accepted)."""
    if isinstance(source, Run):
        return source
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        _check_format(format, RUN_FORMATS, "run")
        check_file(path, "run")
        fmt = format or _detect(path, RUN_FORMATS, "run")
        if fmt == "jsonl":
            from .jsonl_fast import read_run_fast

            fast = read_run_fast(path)
            return fast if fast is not None else parse_run_records(_json_records(path), path)
        if fmt == "trec":
            from .trec import read_trec_run

            return read_trec_run(path)
        from .parquet import read_parquet_run

        return read_parquet_run(path)
    if isinstance(source, Mapping):
        return parse_run_records(_as_mapping_records(source, "run"), label)
    if isinstance(source, Iterable):
        return parse_run_records(list(enumerate(source, start=1)), label)
    raise UsageError(f"cannot read a run from {type(source).__name__}; pass a path, a dict or a list of records")


def _beir_qrels_file(path: str) -> str:
    if os.path.isfile(path):
        return path
    for candidate in ("qrels/test.tsv", "qrels.tsv", "qrels/dev.tsv", "qrels/train.tsv"):
        full = os.path.join(path, candidate)
        if os.path.exists(full):
            return full
    raise InputError("has no qrels/test.tsv or qrels.tsv", path=path, hint="pass the qrels .tsv file itself")
