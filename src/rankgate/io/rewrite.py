"""Runs that log a query rewrite: the original query's results and the rewritten query's, per record.

One JSON object per line::

    {"query_id": "q1",
     "original":  {"query": "kündigung projekte", "topk": [{"chunk_id": "a", "score": 3.1}, …]},
     "rewritten": {"query": "cancel subscription projects", "topk": […]}}

``original`` and ``rewritten`` are each an object with a ranking (``topk``, ``hits``, ``results`` …,
as in any run record, and optionally the ``query`` text) or the ranking itself (a list of items or
ids). Other fields (a final ``topk``, ``latency_ms`` …) are ignored here. Each side becomes a
:class:`~rankgate.io.Run`, so both are scored exactly as any run is.
"""

from __future__ import annotations

import os
from typing import Any

from rankgate.errors import InputError
from rankgate.io.jsonl import QUERY_ID_KEYS, RUN_LIST_KEYS
from rankgate.model.gold_run import Run

__all__ = ["SIDES", "RewriteRuns", "read_rewrite_runs"]

SIDES = ("original", "rewritten")


class RewriteRuns:
    """The two runs of a rewrite log, and the query texts of each side (query id -> text)."""

    def __init__(self, original: Run, rewritten: Run, texts: dict[str, dict[str, str]], source: str) -> None:
        self.original, self.rewritten, self.texts, self.source = original, rewritten, texts, source


def _side(obj: Any, side: str, path: str, line: int) -> tuple[list[Any], str | None]:
    if isinstance(obj, list):
        return obj, None
    if isinstance(obj, dict):
        key = next((k for k in RUN_LIST_KEYS if k in obj), None)
        if key is None or not isinstance(obj[key], list):
            raise InputError(f"field '{side}' has no ranking list", path=path, line=line, field=side,
                             hint=f"give '{side}': {{\"query\": …, \"topk\": [...]}} or the list of items itself")
        text = obj.get("query")
        return obj[key], text if isinstance(text, str) else None
    raise InputError(f"field '{side}' must be an object with a ranking or a list of items; got "
                     f"{type(obj).__name__}", path=path, line=line, field=side)


def read_rewrite_runs(path: str | os.PathLike[str]) -> RewriteRuns:
    """Read a rewrite log (see the module docs); every record needs both sides."""
    from rankgate.io.jsonl import json_objects
    from rankgate.io.load import load_run

    path = os.fspath(path)
    records: dict[str, list[dict[str, Any]]] = {s: [] for s in SIDES}
    texts: dict[str, dict[str, str]] = {s: {} for s in SIDES}
    lines: dict[str, int] = {}
    for lineno, obj in json_objects(path, "run", '{"query_id", "original", "rewritten"}'):
        qkey = next((k for k in QUERY_ID_KEYS if k in obj), None)
        qid = obj.get(qkey) if qkey else None
        if isinstance(qid, int) and not isinstance(qid, bool):
            qid = str(qid)
        if not isinstance(qid, str) or not qid:
            raise InputError("has no query id", path=path, line=lineno, field="query_id")
        if qid in lines:
            raise InputError(f"repeats query {qid!r} of line {lines[qid]}", path=path, line=lineno, field="query_id")
        lines[qid] = lineno
        for side in SIDES:
            if side not in obj:
                raise InputError(f"has no '{side}' field; a rewrite log gives both the original and the rewritten "
                                 "query's results", path=path, line=lineno, field=side,
                                 hint="or compare two run files: rankgate compare ORIGINAL REWRITTEN --rewrite")
            items, text = _side(obj[side], side, path, lineno)
            records[side].append({"query_id": qid, "topk": items})
            if text is not None:
                texts[side][qid] = text
    if not lines:
        raise InputError("has no records", path=path, hint="one JSON object per line with 'original' and 'rewritten'")
    runs = []
    for side in SIDES:
        try:
            run = load_run(records[side])
        except InputError as exc:  # point at the file, and at the record's line when known
            raise InputError(f"{side}: {exc.detail}", path=path, field=side, hint=exc.hint) from None
        run.source = f"{path}#{side}"
        runs.append(run)
    return RewriteRuns(runs[0], runs[1], texts, path)
