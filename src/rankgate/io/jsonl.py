"""JSONL gold sets and runs, in every shape DESIGN §2 accepts, validated line by line.

Gold lines: ``relevant_chunks`` (list of ``{"chunk_id", "grade", "note"}`` or of ids), or
``relevant`` / ``expected_output`` (a list of ids, or an ``{id: gain}`` map); plus the optional
per-query fields of DESIGN §2. Run lines: ``topk`` / ``retrieved`` / ``results`` / ``hits``: a list
of item objects (``chunk_id``/``id``/``doc_id``, ``score``, ``rank``, ``doc_version``, ``text``) or
of bare ids in rank order.

Lines are split on ``\n`` only (a ``\r`` before it is JSON whitespace), never on U+2028, U+2029 or
U+0085, which JSON allows raw inside strings. A UTF-8 byte-order mark at the start is ignored. Numbers
must be finite: ``NaN``, ``Infinity`` and ``1e400`` are refused as a score or rank, and integers must
fit in 64 bits (grades) or be at most :data:`MAX_K` (a per-query ``k``). A line may nest at most
:data:`MAX_DEPTH` levels deep.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from rankgate._util.constraints import plain
from rankgate.errors import InputError
from rankgate.io.producers import ITEM_MARKERS, no_id_error, producer_item
from rankgate.model.ranking import MAX_RANK
from rankgate._util.arrow import strings_of
from rankgate.model.gold_run import Gold, Run

QUERY_ID_KEYS = ("query_id", "qid", "id", "_id", "query-id")
ITEM_ID_KEYS = ("chunk_id", "doc_id", "id", "docid", "_id", "corpus_id", "corpus-id", "docno")
RELEVANT_KEYS = ("relevant_chunks", "relevant", "expected_output", "relevant_docs", "qrels")
RUN_LIST_KEYS = ("topk", "retrieved", "results", "hits", "ranking", "docs", "chunks", "retrieved_chunks", "nodes",
                 "source_nodes", "documents")
GRADE_KEYS = ("grade", "relevance", "rel", "gain", "label")
MAX_DEPTH = 512  # the deepest nesting a line may have (Python's own parser stops near 1000, by stack)
MAX_K = 1_000_000_000  # the largest cutoff (a per-query k or a metric's @k); the same as metrics/spec.py
_INT64 = 2**63
NON_FINITE_HINT = "NaN and infinite values cannot be ranked; drop the item or give it a finite value"
_SURROGATE = re.compile("[\ud800-\udfff]")
_HANDLED = frozenset(QUERY_ID_KEYS + RELEVANT_KEYS) | {
    "no_answer", "metadata", "k", "tags", "query", "question", "text", "input", "intent", "segment",
    "source_of_query", "created", "corpus_version", "as_of", "expected_answer", "must_not_retrieve", "entities",
    "conversation_id", "turn", "depends_on_turns",
}


def read_text(path: str) -> str:
    """The whole file (gzip transparently) as text, without a leading byte-order mark.

    Bytes that are not UTF-8 are an InputError naming their line, column and byte offset."""
    from rankgate.io.source import open_binary

    try:
        with open_binary(path) as fh:  # gzip by content; damaged gzip data is an InputError
            data = fh.read()
    except OSError as exc:
        raise InputError(f"cannot be read: {exc.strerror or exc}", path=path) from None
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise InputError("is UTF-16 text, not UTF-8", path=path, line=1, hint="save the file as UTF-8")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InputError(
            f"is not UTF-8 text (byte {data[exc.start]:#04x} at column {column}, byte offset {exc.start})",
            path=path, line=line, hint="save the file as UTF-8",
        ) from None
    return text[1:] if text.startswith("\ufeff") else text


def json_lines(text: str) -> list[str]:
    """The lines of a JSONL text: split on ``\n`` only, as JSON Lines defines them."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def iter_json_lines(lines: Iterable[str], path: str) -> Iterator[tuple[int, Any]]:
    """Yield (line number, parsed object) for each non-blank line; malformed JSON is an InputError."""
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"is not valid JSON: {exc.msg} at column {exc.colno}",
                path=path,
                line=lineno,
                hint="each line must be one JSON object",
            ) from None
        except (ValueError, RecursionError) as exc:  # an integer of thousands of digits, deep nesting
            if isinstance(exc, RecursionError):
                raise _too_deep(path, lineno) from None
            raise InputError("holds a number too long to read", path=path, line=lineno) from None
        # One fixed limit, whatever Python's stack allows: the fast path refuses the same lines.
        if line.count("[") + line.count("{") > MAX_DEPTH and json_depth(obj) > MAX_DEPTH:
            raise _too_deep(path, lineno)
        check_surrogates(line, obj, path, lineno)
        yield lineno, obj


SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")
"""A ``\\uD800``-``\\uDFFF`` escape: half of a pair (an emoji written ASCII-only) or an unpaired one."""


def check_surrogates(line: str, obj: Any, path: str, lineno: int | None) -> None:
    """Refuse a string holding an unpaired surrogate escape (``"\\ud800"``): JSON lets it through, but
    no UTF-8 output can hold it, so it would fail later while writing. Only lines with such an escape
    are walked."""
    if "\\u" not in line or not SURROGATE_ESCAPE.search(line):
        return
    stack = [(obj, "")]
    while stack:
        value, where = stack.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                stack.append((key, where or "a key"))
                stack.append((item, f"{where}.{key}" if where else str(key)))
        elif isinstance(value, list):
            stack.extend((item, f"{where}[{i}]") for i, item in enumerate(value))
        elif isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InputError(
                    f"holds an unpaired surrogate escape ({value[exc.start]!r}) that no UTF-8 text can hold",
                    path=path, line=lineno, field=where or None,
                    hint="fix the writer (a string cut in the middle of a surrogate pair), or drop the character",
                ) from None



def json_objects(path: str, what: str, shape: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line of a JSONL file of objects.

    The one reader of the small JSONL side files (labels, queues, negatives, rewrite logs): the file
    is checked and decoded like every input (gzip, BOM, UTF-8 named by line and byte); a line that is
    not JSON, not an object, or holds an unpaired surrogate is an :class:`InputError` naming it.
    ``what`` names the file in messages ("labels"), ``shape`` the object a line should hold
    ("{query_id, id, grade}").
    """
    from rankgate.io.source import check_file, text_lines

    check_file(path, what)
    for line, text in text_lines(path):
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError) as exc:
            detail = getattr(exc, "msg", None)
            raise InputError(f"is not valid JSON{': ' + detail if detail else ''}", path=path, line=line,
                             hint=f"one {shape} object per line") from None
        if not isinstance(obj, dict):
            raise InputError(f"must be a JSON object {shape}; got {type(obj).__name__}", path=path, line=line)
        check_surrogates(text, obj, path, line)
        yield line, obj

def _too_deep(path: str, lineno: int) -> InputError:
    return InputError(f"nests deeper than {MAX_DEPTH} levels", path=path, line=lineno,
                      hint="each line must be one JSON object of a few levels")


def json_depth(obj: Any) -> int:
    """How many containers deep a parsed JSON value nests (a scalar is 0, ``{"a": [1]}`` is 2)."""
    deepest, stack = 0, [(obj, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            value = list(value.values())
        elif not isinstance(value, list):
            continue
        deepest = max(deepest, depth)
        stack.extend((v, depth + 1) for v in value if isinstance(v, (dict, list)))
    return deepest


def summary_error(obj: Any, path: str, what: str) -> InputError | None:
    """The error for a rankgate summary.json passed where a run or gold set belongs, or None."""
    if isinstance(obj, dict) and "metrics" in obj and not any(k in obj for k in QUERY_ID_KEYS):
        return InputError(
            f"looks like a rankgate summary.json, not a {what}",
            path=path,
            hint="pass a summary as --baseline; "
            + ("--run takes the retriever's output (JSONL, TREC or Parquet)" if what == "run" else "--gold takes the judgements"),
        )
    return None


def _text(value: str, path: str, lineno: int, field: str) -> str:
    bad = None if value.isascii() else _SURROGATE.search(value)
    if bad:
        raise InputError(
            f"holds an unpaired surrogate escape ({ascii(bad.group())}); got {value!r}"[:200],
            path=path, line=lineno, field=field, hint="ids must be valid Unicode text",
        )
    return value


def _number(value: Any, path: str, lineno: int, field: str) -> float | None:
    """A score or rank: None, or a finite number (ints beyond float range are refused too)."""
    if value is None:
        return None
    if not isinstance(value, bool) and isinstance(value, (int, float)):
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if math.isfinite(number):
            return number
        shown = "an integer too large for a float" if isinstance(value, int) else repr(value)
        raise InputError(
            f"must be a finite number; got {shown}", path=path, line=lineno, field=field,
            hint=NON_FINITE_HINT,
        )
    if plain(value) is not value:  # a numpy scalar (in-memory data): its Python value
        return _number(plain(value), path, lineno, field)
    raise InputError(f"must be a number; got {value!r}"[:200], path=path, line=lineno, field=field)


def _query_id(obj: Any, path: str, lineno: int) -> str:
    if not isinstance(obj, dict):
        raise InputError(
            f"must be a JSON object; got {type(obj).__name__}",
            path=path,
            line=lineno,
            hint='e.g. {"query_id": "q1", ...}',
        )
    for key in QUERY_ID_KEYS:
        if key in obj:
            value = obj[key]
            if type(value) is not str:  # (an integer; in-memory data: a numpy integer or string)
                if isinstance(value, int) and not isinstance(value, bool):
                    return str(value)
                value = plain(value)
                if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
                    raise InputError(
                        f"must be a non-empty string; got {value!r}"[:200], path=path, line=lineno, field=key
                    )
                if not isinstance(value, str):
                    return str(value)
            elif value == "":
                raise InputError(f"must be a non-empty string; got {value!r}", path=path, line=lineno, field=key)
            return _text(value, path, lineno, key)
    raise InputError(
        "is missing",
        path=path,
        line=lineno,
        field="query_id",
        hint=f"every line needs a query id (one of: {', '.join(QUERY_ID_KEYS)})",
    )


def _grade(value: Any, path: str, lineno: int, field: str) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        if plain(value) is not value:  # a numpy scalar (in-memory data): its Python value
            return _grade(plain(value), path, lineno, field)
        raise InputError(
            f"must be an integer grade; got {value!r}"[:200],
            path=path,
            line=lineno,
            field=field,
            hint="grades are integers; a negative or 0 grade means judged not relevant",
        )
    if not -_INT64 <= value < _INT64:
        raise InputError(
            "must be an integer grade that fits in 64 bits; got one with "
            f"{len(str(abs(value)))} digits", path=path, line=lineno, field=field,
            hint="grades are small integers such as 0-3",
        )
    return value


def _item_id(item: dict[str, Any], path: str, lineno: int, field: str) -> str:
    for key in ITEM_ID_KEYS:
        if key in item:
            value = item[key]
            if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
                value = plain(value)  # (in-memory data: a numpy integer is an id)
                if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
                    raise InputError(f"must be a non-empty string; got {value!r}"[:200], path=path, line=lineno,
                                     field=f"{field}.{key}")
            return _text(value, path, lineno, f"{field}.{key}") if isinstance(value, str) else str(value)
    raise InputError(
        f"item {json.dumps(item)[:80]} has no id",
        path=path,
        line=lineno,
        field=field,
        hint=f"give each item one of: {', '.join(ITEM_ID_KEYS[:4])}",
    )


_KEPT_ITEM_KEYS = frozenset(("chunk_id", "doc_id", "score", "rank", "text", "content", "doc_version", "version", "source",
                             "note") + GRADE_KEYS)
"""rankgate's own item keys, kept when given beside a producer's item (a field map's ``chunk_id``, a ``rank``)."""


def _producer_item(item: Any, path: str, lineno: int, field: str) -> Any:
    """A producer's item (:mod:`rankgate.io.producers`: a LlamaIndex node, a LangChain document, their JSON
    dumps) as rankgate's item object; anything else unchanged, for the caller to read or refuse. An item
    without an id is an InputError naming what was looked at."""
    got = producer_item(item)
    if got is None:
        return item
    out: dict[str, Any] = {} if got.id is None else {"id": got.id}
    if got.score is not None:
        out["score"] = got.score
    if got.text is not None:
        out["text"] = got.text
    if isinstance(item, dict):
        out.update((k, v) for k, v in item.items() if k in _KEPT_ITEM_KEYS)
    if not any(k in out for k in ITEM_ID_KEYS):
        message, hint = no_id_error(got)
        raise InputError(message, path=path, line=lineno, field=field, hint=hint)
    return out


def _judgements(obj: dict[str, Any], path: str, lineno: int) -> tuple[list[tuple[str, int, str | None]], str | None]:
    key = next((k for k in RELEVANT_KEYS if k in obj), None)
    if key is None:
        return [], None
    value = obj[key]
    out: list[tuple[str, int, str | None]] = []
    if isinstance(value, dict):
        for doc, gain in value.items():
            if not isinstance(doc, str):  # (in-memory data: an integer key is an id)
                doc = _id_key(doc, path, lineno, key)
            out.append((_text(doc, path, lineno, key), _grade(gain, path, lineno, f"{key}.{doc}"), None))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if not isinstance(item, (str, int)) and (not isinstance(item, dict) or not ITEM_MARKERS.isdisjoint(item)):
                item = _producer_item(item, path, lineno, f"{key}[{i}]")  # a LlamaIndex node, a LangChain document
            if isinstance(item, (str, int)) and not isinstance(item, bool):
                out.append((_text(item, path, lineno, f"{key}[{i}]") if isinstance(item, str) else str(item), 1, None))
            elif isinstance(item, dict):
                doc = _item_id(item, path, lineno, f"{key}[{i}]")
                gk = next((g for g in GRADE_KEYS if g in item), None)
                grade = 1 if gk is None else _grade(item[gk], path, lineno, f"{key}[{i}].{gk}")
                note = item.get("note")
                out.append((doc, grade, None if note is None else str(note)))
            elif type(item).__module__ == "numpy" and isinstance(plain(item), (str, int)) and not isinstance(plain(item), bool):
                out.append((str(plain(item)), 1, None))  # (in-memory data: a numpy integer or string is an id)
            else:
                raise InputError(
                    f"items must be ids or objects; item {i} is {item!r}", path=path, line=lineno, field=key
                )
    elif value is None:
        return [], key
    else:
        raise InputError(
            f"must be a list of ids, a list of objects or an {{id: grade}} map; got {type(value).__name__}",
            path=path,
            line=lineno,
            field=key,
        )
    seen: set[str] = set()
    for doc, _, _ in out:
        if doc in seen:
            raise InputError(f"lists {doc!r} twice", path=path, line=lineno, field=key, hint="judge each id once")
        seen.add(doc)
    return out, key


def _id_key(value: Any, path: str, lineno: int, field: str) -> str:
    """An id given as a mapping's key that is not a string (in-memory data): an integer's digits."""
    value = plain(value)
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        raise InputError(f"keys must be ids (strings); got {value!r}"[:200], path=path, line=lineno, field=field)
    return str(value)


def _str_list(value: Any, path: str, lineno: int, field: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in value):
        value = [plain(v) for v in value] if isinstance(value, list) else value  # (in-memory data: numpy's ids)
        if not isinstance(value, list) or not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in value):
            raise InputError(f"must be a list of strings; got {value!r}"[:200], path=path, line=lineno, field=field)
    return [str(v) for v in value]


def _opt_str(value: Any, path: str, lineno: int, field: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, (dict, list)):
        raise InputError(f"must be a string; got {json.dumps(value)[:60]}", path=path, line=lineno, field=field)
    return str(value)


#: What a line read as gold (or as a run) needs, and what to do when the file is the other kind.
_SWAP_HINT = ("were --gold and --run swapped? --gold takes the judgements, --run (gate: --candidate, --baseline) the "
              "retriever's output")


def other_kind(obj: dict[str, Any], path: str, lineno: int, want: str) -> InputError | None:
    """Why a line read as ``want`` ("gold" or "run") lacks the list that kind needs, when the likely cause can be
    named, or None: the line is of the other kind (a run given as the gold set, or the reverse), or the list sits
    under a key rankgate does not read (``relevant_ids``), named with the nearest key it does read.

    Called only where the line would be refused anyway, so a file rankgate reads today reads the same."""
    import difflib

    wanted, other = (RELEVANT_KEYS, RUN_LIST_KEYS) if want == "gold" else (RUN_LIST_KEYS, RELEVANT_KEYS)
    found = next((k for k in other if k in obj), None)
    if found is not None:
        kind, items = ("a run", "retrieved") if want == "gold" else ("a gold set", "relevant")
        return InputError(f"looks like a line of {kind}, not of a {'gold set' if want == 'gold' else 'run'}: it lists "
                          f"{items} items under {found!r} and none under {', '.join(wanted[:3])} …", path=path,
                          line=lineno, hint=_SWAP_HINT)
    known = _HANDLED | frozenset(RUN_LIST_KEYS) if want == "gold" else frozenset(RUN_LIST_KEYS + QUERY_ID_KEYS)
    # a list (or map) under a key no reader knows: most likely the items, misnamed
    unknown = [str(k) for k, v in obj.items() if k not in known and isinstance(v, (list, dict))]
    if not unknown:
        return None
    near = [(key, difflib.get_close_matches(key, wanted, n=1, cutoff=0.6)) for key in unknown]
    key, close = next(((k, c) for k, c in near if c), near[0])
    guess = f"; did you mean {close[0]!r}?" if close else ""
    also = '; a query with no relevant item sets "no_answer": true' if want == "gold" else ""
    return InputError(f"has no {'relevant' if want == 'gold' else 'retrieved'} items: rankgate does not read the key "
                      f"{key!r}{guess}", path=path, line=lineno,
                      hint=f"the keys it reads for them: {', '.join(wanted)}{also}")


def gold_no_answer(obj: dict[str, Any], has_relevant: bool, rel_key: str | None, path: str, lineno: int) -> bool:
    """A gold line's ``no_answer``, checked against whether it lists a relevant item."""
    no_answer = obj.get("no_answer", False)
    if not isinstance(no_answer, bool):
        no_answer = plain(no_answer)  # (in-memory data: numpy's bool)
    if not isinstance(no_answer, bool):
        raise InputError(f"must be true or false; got {no_answer!r}", path=path, line=lineno, field="no_answer")
    if no_answer and has_relevant:
        raise InputError(
            "is true but the query lists relevant items", path=path, line=lineno, field="no_answer",
            hint="a no-answer query has no item with grade >= 1",
        )
    if not has_relevant and not no_answer:
        if rel_key is None:
            mistake = other_kind(obj, path, lineno, "gold")
            if mistake is not None:
                raise mistake
        got = "nothing" if rel_key is None else json.dumps(obj[rel_key])[:60]
        raise InputError(
            f"must list at least one relevant item; got {got}",
            path=path,
            line=lineno,
            field=rel_key or "relevant_chunks",
            hint='a query with no relevant chunk is a no-answer item: set "no_answer": true',
        )
    return no_answer


def gold_query_fields(obj: dict[str, Any], qi: int, no_answer: bool, put: Callable[[str, int, Any], None],
                      path: str, lineno: int) -> None:
    """Every per-query field of a gold line besides its id and judgements, through ``put(name, qi,
    value)`` in the order the fields are first met (the order of the gold set's field columns)."""
    if no_answer:
        put("no_answer", qi, True)
    meta = obj.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        raise InputError(f"must be an object; got {meta!r}"[:120], path=path, line=lineno, field="metadata")
    k = obj.get("k", (meta or {}).get("k"))
    if k is not None:
        if not isinstance(k, int):
            k = plain(k)  # (in-memory data: a numpy integer)
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
            shown = repr(k)[:40] if len(repr(k)) <= 40 else f"a number of {len(repr(k))} digits"
            raise InputError(f"must be a positive integer up to {MAX_K:,}; got {shown}", path=path, line=lineno, field="k")
        put("k", qi, k)
    for name in ("query", "question", "text", "input"):
        if name in obj and name not in RELEVANT_KEYS:
            put("query", qi, _opt_str(obj[name], path, lineno, name))
            break
    for name in ("intent", "segment", "source_of_query", "created", "corpus_version", "as_of", "expected_answer"):
        if name in obj:
            put(name, qi, _opt_str(obj[name], path, lineno, name))
    for name in ("must_not_retrieve", "entities"):
        if name in obj:
            put(name, qi, _str_list(obj[name], path, lineno, name))
    conversation_fields(obj, qi, put, path, lineno)
    tags = obj.get("tags")
    if tags is not None:
        if not isinstance(tags, dict) or any(isinstance(v, (dict, list)) for v in tags.values()):
            raise InputError(
                f"must be an object of scalar values; got {json.dumps(tags)[:80]}", path=path, line=lineno, field="tags"
            )
        put("tags", qi, {str(k2): (None if v is None else str(v)) for k2, v in tags.items()})
    for name, value in (meta or {}).items():
        if not isinstance(value, (str, int, float, bool)):
            value = plain(value)  # (in-memory data: numpy scalars are scalars too)
        if name != "k" and isinstance(value, (str, int, float, bool)):
            put(f"metadata.{name}", qi, str(value))
    for name, value in obj.items():
        # Other scalar fields (difficulty, owner, …) are kept so they can be used as segments.
        if name in _HANDLED:
            continue
        if not isinstance(value, (str, int, float)):
            value = plain(value)  # (in-memory data: numpy scalars are scalars too)
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            put(name, qi, str(value))


def conversation_fields(obj: dict[str, Any], qi: int, put: Callable[[str, int, Any], None], path: str,
                        lineno: int | None) -> None:
    """A gold line's or run line's ``conversation_id``, ``turn`` and (gold) ``depends_on_turns``, checked
    (:mod:`rankgate.model.conversations`) and kept through ``put``."""
    from rankgate.model.conversations import check_conversation_id, check_depends_on_turns, check_turn

    turn = check_turn(obj.get("turn"), path, lineno)
    for name, value in (("conversation_id", check_conversation_id(obj.get("conversation_id"), path, lineno)),
                        ("turn", turn),
                        ("depends_on_turns", check_depends_on_turns(obj.get("depends_on_turns"), turn, path, lineno))):
        if value is not None:
            put(name, qi, value)


def parse_gold_records(records: Iterable[tuple[int, Any]], path: str) -> Gold:
    """Build a :class:`Gold` from (line, object) pairs, validating each field."""
    import numpy as np

    qids: list[str] = []
    index: dict[str, int] = {}
    jq: list[int] = []
    jd: list[str] = []
    jg: list[int] = []
    notes: list[str | None] = []
    fields: dict[str, list[Any]] = {}
    query_lines: list[int] = []

    def put(name: str, qi: int, value: Any) -> None:
        col = fields.get(name)
        if col is None:
            col = fields[name] = [None] * len(qids)
        col[qi] = value

    for lineno, obj in records:
        query_lines.append(lineno)
        qid = _query_id(obj, path, lineno)
        if qid in index:
            raise InputError(
                f"repeats query id {qid!r} (first on an earlier line)",
                path=path,
                line=lineno,
                field="query_id",
                hint="each query appears once; merge its judgements into one line",
            )
        qi = index[qid] = len(qids)
        qids.append(qid)
        for col in fields.values():
            col.append(None)
        judged, rel_key = _judgements(obj, path, lineno)
        no_answer = gold_no_answer(obj, any(g >= 1 for _, g, _ in judged), rel_key, path, lineno)
        for doc, grade, note in judged:
            jq.append(qi)
            jd.append(doc)
            jg.append(grade)
            notes.append(note)
        gold_query_fields(obj, qi, no_answer, put, path, lineno)
    if not qids:
        raise InputError("has no queries", path=path, hint="a gold set needs at least one JSON line")
    if "turn" in fields:
        from rankgate.model.conversations import check_unique_turns

        check_unique_turns(fields.get("conversation_id") or [], fields["turn"], qids, path, query_lines)
    return Gold(
        query_ids=qids,
        j_query=np.asarray(jq, dtype=np.int64),
        j_doc=strings_of(jd),
        j_grade=np.asarray(jg, dtype=np.int64),
        fields=fields,
        notes=notes if any(n is not None for n in notes) else None,
        source=path,
    )


def _run_conversation(value: Any, path: str, line: int | None) -> str | None:
    from rankgate.model.conversations import check_conversation_id

    return check_conversation_id(value, path, line)


def _run_turn(value: Any, path: str, line: int | None) -> int | None:
    from rankgate.model.conversations import check_turn

    return check_turn(value, path, line)


# A run line's conversation fields, checked as the gold set's are (model/conversations.py); every other
# top-level field is kept as given.
RUN_CONVERSATION_CHECKS: dict[str, Callable[[Any, str, int | None], Any]] = {
    "conversation_id": _run_conversation, "turn": _run_turn}


def parse_run_records(records: Iterable[tuple[int, Any]], path: str) -> Run:
    """Build a :class:`Run` from (line, object) pairs."""
    import numpy as np

    qids: list[str] = []
    index: dict[str, int] = {}
    rq: list[int] = []
    rd: list[str] = []
    scores: list[float] = []
    orders: list[float] = []
    versions: list[Any] = []
    texts: list[Any] = []
    sources: list[Any] = []
    has_score: bool | None = None
    any_rank = False  # ranks given beside scores order a query under ties="input" (ranking.py)
    fields: dict[str, list[Any]] = {}
    lines: list[int] = []

    for lineno, obj in records:
        qid = _query_id(obj, path, lineno)
        if qid in index:
            raise InputError(
                f"repeats query id {qid!r}", path=path, line=lineno, field="query_id",
                hint="give each query's whole ranking on one line",
            )
        qi = index[qid] = len(qids)
        qids.append(qid)
        lines.append(lineno)
        for col in fields.values():
            col.append(None)
        key = next((k for k in RUN_LIST_KEYS if k in obj), None)
        if key is None:
            mistake = other_kind(obj, path, lineno, "run")
            if mistake is not None:
                raise mistake
            raise InputError(
                "has no ranking",
                path=path,
                line=lineno,
                field="topk",
                hint=f"give the retrieved items as one of: {', '.join(RUN_LIST_KEYS[:3])}",
            )
        items = obj[key]
        if not isinstance(items, list):
            raise InputError(f"must be a list; got {type(items).__name__}", path=path, line=lineno, field=key)
        for pos, item in enumerate(items, start=1):
            if not isinstance(item, (str, int)) and (not isinstance(item, dict) or not ITEM_MARKERS.isdisjoint(item)):
                item = _producer_item(item, path, lineno, f"{key}[{pos - 1}]")  # a LlamaIndex node, a LangChain document
            if isinstance(item, dict):
                doc = _item_id(item, path, lineno, f"{key}[{pos - 1}]")
                s = _number(item.get("score"), path, lineno, f"{key}[{pos - 1}].score")
                r = _number(item.get("rank"), path, lineno, f"{key}[{pos - 1}].rank")
                if r is not None and abs(r) >= MAX_RANK:
                    raise InputError(
                        f"must be below 2^53 ({MAX_RANK:,}); got {item.get('rank')!r}"[:200], path=path,
                        line=lineno, field=f"{key}[{pos - 1}].rank",
                        hint="beyond 2^53 neighbouring ranks cannot be told apart; number the items 1, 2, 3, …",
                    )
                version = item.get("doc_version", item.get("version"))
                text = item.get("text", item.get("content"))
                source = item.get("source")
            elif isinstance(item, (str, int)) and not isinstance(item, bool):
                doc = _text(item, path, lineno, f"{key}[{pos - 1}]") if isinstance(item, str) else str(item)
                s, r, version, text, source = None, None, None, None, None
            elif type(item).__module__ == "numpy" and isinstance(plain(item), (str, int)) and not isinstance(plain(item), bool):
                doc = str(plain(item))  # (in-memory data: a numpy integer or string is an id)
                s, r, version, text, source = None, None, None, None, None
            else:
                raise InputError(
                    f"items must be objects or ids; item {pos - 1} is {item!r}"[:160], path=path, line=lineno, field=key
                )
            this_has = s is not None
            if has_score is None:
                has_score = this_has
            elif has_score != this_has:
                raise InputError(
                    f"item {pos - 1} {'has' if this_has else 'lacks'} a score while earlier items "
                    f"{'do not' if this_has else 'have one'}",
                    path=path,
                    line=lineno,
                    field=f"{key}[{pos - 1}].score",
                    hint="give every item a score (ranked by score) or none (ranked by rank or list order)",
                )
            rq.append(qi)
            rd.append(doc)
            scores.append(s if s is not None else 0.0)
            orders.append(r if r is not None else float(pos) if not this_has else math.nan)
            any_rank = any_rank or r is not None
            versions.append(None if version is None else str(version))
            texts.append(None if text is None else str(text))
            sources.append(None if source is None else str(source))
        for name, value in obj.items():
            if name in RUN_LIST_KEYS or name in QUERY_ID_KEYS:
                continue
            column = fields.get(name)
            if column is None:
                column = fields[name] = [None] * len(qids)
            column[qi] = plain(value)  # (in-memory data: a numpy scalar as its Python value)
            if name in RUN_CONVERSATION_CHECKS:
                column[qi] = RUN_CONVERSATION_CHECKS[name](column[qi], path, lineno)
    if not qids:
        raise InputError("has no queries", path=path, hint="a run needs at least one JSON line")
    items_cols: dict[str, list[Any]] = {}
    for name, values in (("doc_version", versions), ("text", texts), ("source", sources)):
        if any(v is not None for v in values):
            items_cols[name] = values
    return Run(
        query_ids=qids,
        r_query=np.asarray(rq, dtype=np.int64),
        r_doc=strings_of(rd),
        r_score=np.asarray(scores, dtype=np.float64) if has_score else None,
        # With scores, the given ranks (NaN where an item has none) only count under ties="input" (ranking.py).
        r_order=np.asarray(orders, dtype=np.float64) if not has_score or any_rank else None,
        items=items_cols,
        fields=fields,
        source=path,
        query_lines=np.asarray(lines, dtype=np.int64),
    )
