"""Where a field lives in a record: the one syntax of ``--field NAME=PATH``, its parser and its getter.

Every command that reads records written by someone else says where a field lives the same way:
``evaluate``/``compare``/``gate``/``report`` (where a gold line or a run line keeps its query id, an item's
id, text and score), ``answers`` (the answer, the contexts…) and ``traces`` (a request's tenant, a
document's id). Which names a command takes is the command's own table; the syntax, its checks and the
walk through a record are here, once.

A **spec** is ``NAME=PATH``; several are given as repeated options or joined by commas
(``id=metadata.doc_id,score=metadata.score``). A **path** is keys joined by dots (``metadata.doc_id``);
``[*]`` after a key takes every item of the list there (``hits[*].id``: the ``id`` of each hit), ``[N]``
the item at position N (from 0). A key holds any character but ``.``, ``[`` and ``]``. Reading a record,
a key spelled with the dots themselves is found first (``"metadata.doc_id"`` as one column of a flattened
table, one attribute name of an OpenTelemetry span), then the path is walked; a path that leads nowhere
gives None.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rankgate._util.constraints import Param, Shape, check
from rankgate.errors import F, UsageError

__all__ = ["FIELDS", "FieldPath", "field_path", "parse_fields"]

#: What a path is, as every refusal of one says it.
PATH_SYNTAX = ("keys joined by dots, [*] after a key for every item of a list, [N] for one item "
               "(e.g. metadata.doc_id, hits[*].id)")
_KEY = re.compile(r"[^.\[\]]+")
_INDEX = re.compile(r"\[(\*|\d+)\]")
MAX_PATH = 500  # characters: a path is a handful of keys, never a document


@dataclass(frozen=True)
class FieldPath:
    """One parsed path: ``steps`` are ``(key, None)``, ``(None, "*")`` or ``(None, "N")``, in order."""

    text: str
    steps: tuple[tuple[str | None, str | None], ...]
    _keys: tuple[str, ...] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # a path of keys only (most are): walked by a short loop, as the trace readers call it per document
        keys = tuple(k for k, _ in self.steps if k is not None)
        object.__setattr__(self, "_keys", keys if len(keys) == len(self.steps) else None)

    @property
    def head(self) -> str | None:
        """The first key (None when the path starts with an index)."""
        return self.steps[0][0] if self.steps else None

    @property
    def has_star(self) -> bool:
        return any(index == "*" for _, index in self.steps)

    def split_star(self) -> tuple[FieldPath, FieldPath] | None:
        """``hits[*].doc.id`` -> (``hits``, ``doc.id``): the list and the path in each of its items (the second
        empty for ``ids[*]``, whose items are the values); None without ``[*]``."""
        for i, (_, index) in enumerate(self.steps):
            if index == "*":
                before, after = self.steps[:i], self.steps[i + 1:]
                return FieldPath(_text(before), before), FieldPath(_text(after), after)
        return None

    def get(self, record: Any, *, json_text: bool = False) -> Any:
        """The value at this path in ``record`` (None where it leads nowhere; a list where it crosses a
        ``[*]``). ``json_text``: a JSON object or array met as text on the way is parsed (exports that keep
        ``input``/``output``/``metadata`` as JSON strings), and so is one found at the end."""
        if len(self.steps) > 1 and (type(record) is dict or isinstance(record, Mapping)) and self.text in record:
            value = record[self.text]  # a key spelled with the dots: a flattened column or attribute
        elif self._keys is not None:
            value = _keys(record, self._keys, json_text)
        else:
            value = _walk(record, self.steps, json_text)
        return _json(value) if json_text and isinstance(value, str) else value


def _text(steps: tuple[tuple[str | None, str | None], ...]) -> str:
    out = ""
    for key, index in steps:
        out += (("." if out else "") + key) if key is not None else f"[{index}]"
    return out


def _json(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def _keys(value: Any, keys: tuple[str, ...], json_text: bool) -> Any:
    """:func:`_walk` for a path of keys only."""
    for key in keys:
        if type(value) is not dict:
            if json_text and isinstance(value, str):
                value = _json(value)
            if not isinstance(value, Mapping):
                return None
        value = value.get(key)
        if value is None:
            return None
    return value


def _walk(value: Any, steps: tuple[tuple[str | None, str | None], ...], json_text: bool) -> Any:
    for i, (key, index) in enumerate(steps):
        if json_text and isinstance(value, str):
            value = _json(value)
        if value is None:
            return None
        if key is not None:
            value = value.get(key) if isinstance(value, Mapping) else None
        elif index == "*":
            if hasattr(value, "tolist") and not isinstance(value, list):
                value = value.tolist()  # (an array cell of a Parquet table)
            if not isinstance(value, (list, tuple)):
                return None
            return [_walk(v, steps[i + 1:], json_text) for v in value]
        else:
            n = int(index or 0)
            value = value[n] if isinstance(value, (list, tuple)) and n < len(value) else None
    return value


def field_path(path: Any, *, where: str = "") -> FieldPath:
    """``path`` parsed, or a UsageError saying what a path is (``where`` names it: ``--field id=…``)."""
    subject = where or "a field path"
    if not isinstance(path, str):
        raise UsageError(f"{subject}: a path is text ({PATH_SYNTAX}); got {type(path).__name__}")
    text = path.strip()
    if not text:
        raise UsageError(f"{subject}: the path is empty; a path is {PATH_SYNTAX}")
    if len(text) > MAX_PATH:
        raise UsageError(f"{subject}: the path is {len(text):,} characters long; a path is at most {MAX_PATH}")
    steps: list[tuple[str | None, str | None]] = []
    pos, flaw = 0, ""
    while pos < len(text) and not flaw:
        if steps and text[pos] == ".":
            pos += 1
            key = _KEY.match(text, pos)
            if key is None:
                flaw = "an empty key after a dot" if pos == len(text) or text[pos] in ".[" else "a ']' without its '['"
                break
        elif steps and text[pos] == "[":
            index = _INDEX.match(text, pos)
            if index is None:
                flaw = f"{text[pos:pos + 6]!r}: a list is read with [*] or [N], N a position from 0"
                break
            steps.append((None, index.group(1)))
            pos = index.end()
            continue
        elif steps:
            flaw = "a ']' without its '['" if text[pos] == "]" else f"{text[pos]!r} after an index: join keys with a dot, as in hits[*].id"
            break
        else:
            key = _KEY.match(text, pos)
            if key is None:
                flaw = "it starts with a dot" if text[0] == "." else "it starts with a list index: a path starts with a key"
                break
        name = key.group(0)
        if name != name.strip():
            flaw = f"the key {name!r} has spaces around it"
            break
        steps.append((name, None))
        pos = key.end()
    if not flaw:
        return FieldPath(text, tuple(steps))
    shown = text if len(text) <= 60 else text[:57] + "..."
    raise UsageError(f"{subject}: {shown!r} is not a path ({flaw}); a path is {PATH_SYNTAX}")


def _pairs(specs: Any, subject: str) -> list[tuple[str, Any, str]]:
    """(name, path, the spec as given) from a mapping, a ``NAME=PATH[,NAME=PATH…]`` text or several texts."""
    if isinstance(specs, Mapping):
        return [(str(k) if isinstance(k, str) else k, v, f"{k}={v}") for k, v in specs.items()]
    texts = [specs] if isinstance(specs, str) else list(specs) if isinstance(specs, Iterable) else None
    if texts is None or not all(isinstance(t, str) for t in texts):
        raise UsageError(f"{subject} must be a mapping of field names to paths (e.g. {{'id': 'metadata.doc_id'}}) or "
                         f"NAME=PATH text; got {type(specs).__name__}")
    out: list[tuple[str, Any, str]] = []
    for text in texts:
        for part in text.split(","):
            if not part.strip():
                continue
            name, eq, path = part.partition("=")
            if not eq or not name.strip() or not path.strip():
                raise UsageError(f"{subject}: {part.strip()!r} is not NAME=PATH (e.g. id=metadata.doc_id)")
            out.append((name.strip(), path.strip(), part.strip()))
    return out


def _specs(value: Any) -> Any:
    """A field map as given: a mapping of strings, one ``NAME=PATH`` text, or a list of them; None otherwise."""
    if isinstance(value, Mapping):
        return dict(value) if all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()) else None
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


#: A field map argument (``fields=``), its type checked at the door of every function and request taking one.
FIELDS = Param("fields", Shape("a mapping of field names to paths, e.g. {'id': 'metadata.doc_id'} (or NAME=PATH "
                               "texts)", _specs), None, optional=True)


def parse_fields(specs: Any, names: Iterable[str], *, command: str, subject: str | None = None,
                 aliases: Mapping[str, str] | None = None, plain: Iterable[str] = (),
                 described: str | None = None) -> dict[str, str]:
    """``specs`` (``"id=metadata.doc_id,score=s"``, a list of such texts, or ``{name: path}``) as ``{name: path}``,
    each name one of ``names`` (what ``command`` reads: named in the refusal of any other) and each path checked.
    ``aliases``: other spellings of a name (``chunk_id`` for ``id``), taken as the name. An empty result is
    refused: a map that maps nothing is a mistake. ``subject`` names the option in messages (default: the
    ``fields`` field, said ``--field`` on the command line). ``plain``: names whose value is no path (the
    answers' ``list_sep``, a delimiter), taken as given. ``described``: how a refusal names the accepted names
    when listing them one by one would be long."""
    specs = check(FIELDS, specs, caller=command, name=subject.strip("\x00") if subject else None)
    subject = subject or F.fields
    accepted, plain = tuple(names), tuple(plain)
    out: dict[str, str] = {}
    for name, path, given in _pairs(specs, subject):
        if not isinstance(name, str):
            raise UsageError(f"{subject}: a field name is text; got {name!r}")
        name = (aliases or {}).get(name, name)
        if name not in accepted:
            import difflib

            near = difflib.get_close_matches(name, accepted, n=1)
            mean = f" (did you mean {near[0]}?)" if near else ""
            raise UsageError(f"{subject}: unknown field {name!r} for {command}{mean}; it maps "
                             f"{described or ', '.join(accepted)}")
        if name not in plain:
            field_path(path, where=f"{subject} {given}")
        if name in out:
            raise UsageError(f"{subject}: {name} is given twice ({name}={out[name]} and {given})")
        out[name] = path.strip()
    if not out:
        raise UsageError(f"{subject} is empty; give NAME=PATH, e.g. id=metadata.doc_id")
    return out
