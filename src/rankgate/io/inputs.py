"""Which files an input path stands for: a file is itself; a BEIR folder given as the gold set is the
qrels file read from it, and its ``queries.jsonl`` holds the query texts. Used to hash exactly the
files that were read (summary.json, the report's header) and to show BEIR queries by their text.
"""

from __future__ import annotations

import json
import os
from typing import Any

from rankgate.errors import InputError
from rankgate.io.source import hash_file_into, sha256_file, text_lines

__all__ = ["beir_folder", "beir_query_texts", "gold_files", "hashed", "read_query_texts", "run_files", "sha256_files"]

QUERIES = ("queries.jsonl", "queries.jsonl.gz")


def gold_files(source: Any) -> list[str]:
    """The files a gold path is read from: the path itself, a BEIR folder's qrels file, or the Arrow
    files of a Hugging Face ``save_to_disk`` folder."""
    if not isinstance(source, (str, os.PathLike)):
        return []
    path = os.fspath(source)
    if os.path.isfile(path):
        return [path]
    hf = _hf_files(path)
    if hf:
        return hf
    if os.path.isdir(path):
        from rankgate.io.trec import beir_qrels_file

        try:
            return [beir_qrels_file(path)]
        except InputError:
            return []
    return []


def beir_folder(source: Any) -> str | None:
    """The BEIR folder a gold path belongs to (the folder, or the one holding ``qrels/``), when it
    has a ``queries.jsonl``; else None."""
    if not isinstance(source, (str, os.PathLike)):
        return None
    path = os.path.abspath(os.fspath(source))
    if os.path.isdir(path):
        candidates = [path]
    elif path.removesuffix(".gz").endswith(".tsv"):
        parent = os.path.dirname(path)
        candidates = [os.path.dirname(parent), parent] if os.path.basename(parent) == "qrels" else [parent]
    else:
        return None
    for folder in candidates:
        if any(os.path.isfile(os.path.join(folder, name)) for name in QUERIES):
            return folder
    return None


def beir_query_texts(folder: str) -> tuple[str, dict[str, str]]:
    """(path of queries.jsonl, ``{_id: text}``) of a BEIR folder; bad lines are an InputError naming them."""
    path = next(os.path.join(folder, n) for n in QUERIES if os.path.isfile(os.path.join(folder, n)))
    texts: dict[str, str] = {}
    seen: dict[str, int] = {}
    for lineno, line in text_lines(path):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"is not valid JSON: {exc.msg} at column {exc.colno}", path=path, line=lineno,
                             hint='each line is a BEIR query: {"_id": "1", "text": "..."}') from None
        if not isinstance(obj, dict) or not isinstance(obj.get("_id"), (str, int)) or isinstance(obj.get("_id"), bool):
            raise InputError("must be an object with a string '_id'", path=path, line=lineno, field="_id",
                             hint='each line is a BEIR query: {"_id": "1", "text": "..."}')
        text = obj.get("text")
        if text is not None and not isinstance(text, str):
            raise InputError(f"must be a string; got {type(text).__name__}", path=path, line=lineno, field="text")
        qid = str(obj["_id"])
        if qid in seen:
            raise InputError(f"repeats query id {qid!r} of line {seen[qid]}", path=path, line=lineno, field="_id",
                             hint="each query appears once in queries.jsonl")
        seen[qid] = lineno
        texts[qid] = text or ""
    return path, texts


QUERY_ID_KEYS = ("_id", "query_id", "qid", "id")
QUERY_TEXT_KEYS = ("text", "query", "question", "title")
QUERIES_HINT = ('give one query per line: JSONL {"_id": "q1", "text": "..."} (BEIR; also query_id/qid/id and '
                'query/question), "q1<TAB>text" (TSV), or TREC topics (<top> <num> <title>)')


def read_query_texts(path: str) -> dict[str, str]:
    """``{query_id: text}`` from a queries file given with ``--queries``: BEIR ``queries.jsonl`` (or
    any JSONL with an id and a text field), a TSV of ``id<TAB>text`` (MS MARCO ``queries.tsv``), or
    TREC topics (``<top>`` … ``<num> Number: 301`` … ``<title> text``; the title is the text).

    Bad lines are an InputError naming the line; a query id given twice is one too."""
    import re

    lines = list(text_lines(path))
    first = next((line.strip() for _, line in lines if line.strip()), "")
    texts: dict[str, str] = {}
    seen: dict[str, int] = {}

    def put(qid: str, text: str, lineno: int) -> None:
        if qid in seen:
            raise InputError(f"repeats query id {qid!r} of line {seen[qid]}", path=path, line=lineno,
                             hint="each query appears once in the queries file")
        seen[qid] = lineno
        texts[qid] = " ".join(text.split())

    if first.startswith("{"):
        for lineno, line in lines:
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"is not valid JSON: {exc.msg} at column {exc.colno}", path=path, line=lineno,
                                 hint=QUERIES_HINT) from None
            key = next((k for k in QUERY_ID_KEYS if isinstance(obj, dict) and k in obj), None)
            tkey = next((k for k in QUERY_TEXT_KEYS if isinstance(obj, dict) and k in obj), None)
            if key is None or tkey is None:
                raise InputError("needs a query id and a text field", path=path, line=lineno, hint=QUERIES_HINT)
            qid, text = obj[key], obj[tkey]
            if not isinstance(qid, (str, int)) or isinstance(qid, bool) or not isinstance(text, str):
                raise InputError(f"needs a string or integer '{key}' and a string '{tkey}'", path=path, line=lineno,
                                 field=key, hint=QUERIES_HINT)
            put(str(qid), text, lineno)
    elif first.lower().startswith("<top>") or first.lower().startswith("<num>"):
        num, num_line, in_title = None, 0, False
        title: list[str] = []
        for lineno, line in lines:
            low = line.strip().lower()
            if low.startswith("<num>"):
                m = re.match(r"<num>\s*(?:number:)?\s*(\S+)", line.strip(), re.IGNORECASE)
                if not m:
                    raise InputError("has <num> without a topic number", path=path, line=lineno, hint=QUERIES_HINT)
                num, num_line, title, in_title = m.group(1).removesuffix("</num>"), lineno, [], False
            elif low.startswith("<title>"):
                title, in_title = [line.strip()[7:].removesuffix("</title>")], True
                title[0] = re.sub(r"^\s*topic:\s*", "", title[0], flags=re.IGNORECASE)
            elif low.startswith("<") and in_title:
                in_title = False
            elif in_title and low:
                title.append(line.strip())
            if low.startswith("</top>"):
                if num is None:
                    raise InputError("ends a topic that has no <num>", path=path, line=lineno, hint=QUERIES_HINT)
                put(num, " ".join(title), num_line)
                num = None
    else:
        for lineno, line in lines:
            if not line.strip():
                continue
            parts = line.rstrip("\r\n").split("\t", 1) if "\t" in line else line.strip().split(None, 1)
            if len(parts) != 2 or not parts[0].strip():
                raise InputError("is not 'id<TAB>text'", path=path, line=lineno, hint=QUERIES_HINT)
            put(parts[0].strip(), parts[1], lineno)
    if not texts:
        raise InputError("holds no queries", path=path, hint=QUERIES_HINT)
    return texts


def run_files(source: Any) -> list[str]:
    """The files a run path is read from: the path itself, or a ``save_to_disk`` folder's Arrow files."""
    if not isinstance(source, (str, os.PathLike)):
        return []
    path = os.fspath(source)
    return [path] if os.path.isfile(path) else _hf_files(path)


def _hf_files(path: str) -> list[str]:
    from rankgate.io.tools.records import hf_data_files, is_hf_folder

    if not is_hf_folder(path):
        return []
    try:
        return hf_data_files(path)
    except InputError:
        return []


def sha256_files(paths: list[str]) -> str:
    """The sha256 of one file, or of several files' bytes in the given order (a dataset in shards)."""
    if len(paths) == 1:
        return sha256_file(paths[0])
    import hashlib

    h = hashlib.sha256()
    for p in paths:
        hash_file_into(h, p)
    return h.hexdigest()


def hashed(paths: list[str], base: str | None = None) -> list[dict[str, str]]:
    """``[{"path", "sha256"}]`` for each file; paths relative to ``base`` when given."""
    return [{"path": os.path.relpath(p, base) if base else p, "sha256": sha256_file(p)} for p in paths]
