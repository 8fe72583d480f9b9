"""Tolerant JSON extraction from a model's reply (used only when the server did not enforce a schema).

Tried in order: the whole reply; each fenced code block (```json … ```); the first JSON object,
then the first JSON array, that decodes from some ``{`` / ``[`` in the text (prose around it is
ignored). None when nothing decodes.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["extract_json"]

_FENCE = re.compile(r"```[A-Za-z]*[ \t]*\n?(.*?)```", re.S)
_MAX_STARTS = 64


def extract_json(text: str | None) -> Any | None:
    if not text or not text.strip():
        return None
    text = text.strip()
    try:
        return json.loads(text)
    except ValueError:
        pass
    for match in _FENCE.finditer(text):
        try:
            return json.loads(match.group(1).strip())
        except ValueError:
            continue
    decoder = json.JSONDecoder()
    for opener in "{[":
        start, tried = text.find(opener), 0
        while start != -1 and tried < _MAX_STARTS:
            try:
                return decoder.raw_decode(text, start)[0]
            except ValueError:
                start, tried = text.find(opener, start + 1), tried + 1
    return None
