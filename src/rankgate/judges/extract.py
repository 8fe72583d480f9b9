"""Tolerant JSON extraction from a model's reply (used only when the server did not enforce a schema).

Tried in order: the whole reply; each fenced code block (```json … ```); the first JSON object,
then the first JSON array, that decodes from some ``{`` / ``[`` in the text (prose around it is
ignored). None when nothing decodes.

A reply is data from outside: when a candidate nests deeper than the readers' limit
(:data:`rankgate.io.jsonl.MAX_DEPTH`, whatever Python's stack would allow) the reply is refused
with :class:`~.base.JudgeCallError` naming the limit (nothing is hunted for inside it), so it
becomes that call's ``judge_error`` and never ends the run.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

from rankgate.judges.base import JudgeCallError

__all__ = ["extract_json"]

_FENCE = re.compile(r"```[A-Za-z]*[ \t]*\n?(.*?)```", re.S)
_MAX_STARTS = 64


class _TooDeep(Exception):
    pass


def _decode(text: str, start: int | None = None) -> Any:
    """One candidate decoded (``raw_decode`` from ``start`` when given); ValueError if it does not
    decode, :class:`_TooDeep` if it nests deeper than the limit."""
    from rankgate.io.jsonl import MAX_DEPTH, json_depth

    try:
        value = json.loads(text) if start is None else json.JSONDecoder().raw_decode(text, start)[0]
    except RecursionError:
        raise _TooDeep from None
    # the same fixed limit as every reader, checked only when the text holds enough brackets to pass it
    if text.count("[") + text.count("{") > MAX_DEPTH and json_depth(value) > MAX_DEPTH:
        raise _TooDeep
    return value


def extract_json(text: str | None) -> Any | None:
    if not text or not text.strip():
        return None
    text = text.strip()
    try:
        fenced = (m.group(1).strip() for m in _FENCE.finditer(text))
        for candidate in itertools.chain((text,), fenced):
            try:
                return _decode(candidate)
            except ValueError:
                continue
        for opener in "{[":
            start, tried = text.find(opener), 0
            while start != -1 and tried < _MAX_STARTS:
                try:
                    return _decode(text, start)
                except ValueError:
                    start, tried = text.find(opener, start + 1), tried + 1
    except _TooDeep:  # not a value to hunt inside of: the reply is refused
        from rankgate.io.jsonl import MAX_DEPTH

        raise JudgeCallError(f"the reply's JSON nests deeper than {MAX_DEPTH} levels") from None
    return None
