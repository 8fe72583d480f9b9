"""The ``cost`` object of a run record, checked where a run is scored.

A run may log, per query, what answering it cost: ``{"tokens_in": 1840, "tokens_out": 212, "usd":
0.0021, "embed_ms": 3.1, "rerank_ms": 41.0}``. The named keys (:data:`COST_KEYS`) are the ones the
outputs know how to write; any other key is kept as it is logged (a ``gpu_ms`` or ``index_reads``),
as long as its value is a number. The object is optional, and so is each key (a null value is a key
not logged for that query).

Every reader keeps ``cost`` as it finds it (a per-query field, like ``latency_ms``); :func:`check_costs`
then refuses what no summary could use, naming the file, the query's line and the key: an object that
is not one, a value that is not a number, a negative or non-finite number. It is called on every run
before it is scored, on the whole run and on each block of a run scored in blocks (a block that fails is
read again whole, whose error names the line).
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Any

import numpy as np

from rankgate.errors import InputError

__all__ = ["COST_FIELD", "COST_KEYS", "HINT", "MAX_COST_KEYS", "check_costs", "cost_value_problem", "scanned_fields"]

COST_FIELD = "cost"
#: The keys the outputs name and format (tokens as counts, usd as dollars, ``*_ms`` as milliseconds).
COST_KEYS = ("tokens_in", "tokens_out", "usd", "embed_ms", "rerank_ms")
HINT = ("give cost as an object of numbers >= 0, e.g. {\"tokens_in\": 1840, \"usd\": 0.0021, \"rerank_ms\": 41.0}; "
         "leave a key out (or null) where it was not measured")
#: Distinct keys a run's cost objects may name: each is a column, a summary row with its intervals and a gate's
#: subject, so a file that writes a new key per query (an id as a key) is refused instead of summarised.
MAX_COST_KEYS = 64


def check_costs(fields: dict[str, list[Any]], source: str, lines: Any = None) -> None:
    """Refuse a run's ``cost`` values that are not objects of numbers >= 0 (an :class:`InputError` naming
    ``source``, the query's line from ``lines`` (the run's ``query_lines``, when it has them) and the key).
    Nothing to do when the run logs no cost."""
    col = fields.get(COST_FIELD)
    if not col:
        return
    from rankgate.model.costs import CostColumn

    if isinstance(col, CostColumn):  # (the scanner's columns: checked as they were decoded, scanned_fields)
        return
    seen: set[str] = set()
    for q, value in enumerate(col):
        if value is None:
            continue
        if type(value) is not dict:
            raise _bad(source, lines, q, COST_FIELD, f"must be an object of numbers; got {_shown(value)}")
        for key, x in value.items():
            if key not in seen:
                seen.add(key)
                if len(seen) > MAX_COST_KEYS:
                    line = int(lines[q]) if lines is not None and q < len(lines) else None
                    raise InputError(f"is the {len(seen)}th distinct cost key of the run; at most {MAX_COST_KEYS} are "
                                     "summarised (each is a column, a summary row and a gate's subject)",
                                     path=source, line=line, field=f"{COST_FIELD}.{key}",
                                     hint="name what a query cost with the same few keys on every record (tokens_in, "
                                          "usd, rerank_ms…); an id or a text belongs in another field")
            problem = cost_value_problem(x)
            if problem is not None:
                raise _bad(source, lines, q, f"{COST_FIELD}.{key}", problem)


def cost_value_problem(x: Any) -> str | None:
    """What is wrong with one value of a cost object (None: nothing; a null is a key not measured): the one rule
    of run records and traces alike. A number >= 0 and finite as a float (an integer beyond the float range is
    refused as not finite, where it would fail the summaries' conversion)."""
    if x is None:
        return None
    if isinstance(x, bool) or not isinstance(x, Real):
        return f"must be a number; got {_shown(x)}"
    try:
        f = float(x)
    except OverflowError:
        return f"must be a finite number; got {_shown(x)}"
    return None if f >= 0.0 and f != math.inf else f"must be a number >= 0; got {_shown(x)}"


def _shown(value: Any) -> str:
    return repr(value)[:80]


def _bad(source: str, lines: Any, q: int, field: str, what: str) -> InputError:
    line = None
    if lines is not None and q < len(lines):
        line = int(lines[q])
    return InputError(what, path=source, line=line, field=field, hint=HINT)


# -- the compiled scanner's cost objects, decoded as columns ------------------------------------------------
# The scanner keeps the text of a line's other keys (cost, conversation_id, latency_ms…), a value a line
# (jsonl_fast._other_fields). Decoding 100,000 cost objects with json.loads, then checking them and splitting
# them into columns one by one, took longer than the rest of the read: here the cost objects are read by
# pyarrow's JSON reader as a column per key and checked column by column, and the other values decoded by one
# json.loads. Whatever this cannot prove the same as the parser's reading (an escape, a null, a value that is
# not a number >= 0, a duplicated key, a double too large to be an exact integer, a scanner that joins values
# otherwise) returns None, and the caller decodes every value as before (so errors stay check_costs's, with
# the query's line).

_EXACT = float(2 ** 53)  # a double at or above this may be an integer pyarrow did not keep exactly


def _blank(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> None:
    """Spaces over the bytes ``[starts[i], starts[i] + lengths[i])`` of ``data``, in a few whole-array steps (each
    numpy step may hand the interpreter to another thread: few of them, however many ranges)."""
    if not lengths.size:
        return
    longest = int(lengths.max())
    if longest <= 64:  # (ids, numbers: a table of a row per range)
        at = starts[:, None] + np.arange(longest)[None, :]
        data[at[np.arange(longest)[None, :] < lengths[:, None]]] = 32
        return
    before = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    data[np.arange(int(lengths.sum()), dtype=np.int64) + np.repeat(starts - before, lengths)] = 32


def _gathered(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> bytes:
    """The ranges ``[starts[i], starts[i] + lengths[i])`` of ``data``, each followed by a ``,`` (short ones padded
    with spaces before it: a table of a row per range), as one text."""
    longest = int(lengths.max())
    if longest <= 64:
        cols = np.arange(longest + 1)[None, :]
        table = data[np.minimum(starts[:, None] + cols, data.size - 1)]
        table[cols >= lengths[:, None]] = 32
        table[:, longest] = 44
        return table.tobytes()
    ends = np.cumsum(lengths + 1)
    out = np.full(int(ends[-1]), 44, dtype=np.uint8)
    before = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    at = np.arange(int(lengths.sum()), dtype=np.int64)
    out[at + np.repeat(ends - lengths - 1 - before, lengths)] = data[at + np.repeat(starts - before, lengths)]
    return out.tobytes()


def _numbers(arr: Any) -> tuple[np.ndarray, np.ndarray]:
    """A pyarrow int64 or float64 array's values (0 where null) and validity, from its buffers (pyarrow's compute
    functions would be set up for it: a quarter of a second, once per process)."""
    n, at = len(arr), arr.offset
    validity, data = arr.buffers()[:2]
    values = np.frombuffer(data, dtype=np.int64 if _is_int64(arr) else np.float64, count=at + n)[at:].copy()
    if not arr.null_count:
        return values, np.ones(n, dtype=bool)
    logged = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")[at:at + n].astype(bool)
    values[~logged] = 0
    return values, logged


def _is_int64(arr: Any) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_int64(arr.type))


def scanned_fields(met: np.ndarray, names: list[str], joined: bytes, nq: int) -> dict[str, Any] | None:
    """The scanner's other keys (``met``: per value its query and name's code; ``joined``: the values' text, a
    value a line) as the run's per-query fields, ``cost`` as a checked :class:`~rankgate.model.costs.CostColumn`,
    the others as lists of ``json.loads``'s values; None where that is not proven (see above)."""
    import json

    import pyarrow as pa
    import pyarrow.json as pj

    from rankgate.model.costs import CostColumn

    if COST_FIELD not in names or b"\\" in joined or not joined:
        return None
    b = np.frombuffer(joined, dtype=np.uint8)
    ends = np.append(np.flatnonzero(b == 10), b.size)
    if ends.size != met.shape[0]:
        return None  # (a scanner that joins its values by ',': json.loads reads them)
    starts = np.concatenate(([0], ends[:-1] + 1))
    is_cost = met[:, 1] == names.index(COST_FIELD)
    other = np.flatnonzero(~is_cost)
    # the cost objects, a line each (the other values' bytes blanked: pyarrow passes over blank lines)
    text = bytearray(joined)
    _blank(np.frombuffer(text, dtype=np.uint8), starts[other], ends[other] - starts[other])
    if b"null" in text:  # (the parser keeps a null as the key with None; pyarrow cannot tell it from no key)
        return None
    try:
        # (blocks of 1 MiB on arrow's threads: a key's type is unified over them, a whole number promoted to a
        # double where another line's is one, a key first met late given nulls before)
        table = pj.read_json(pa.BufferReader(pa.py_buffer(text)),
                             read_options=pj.ReadOptions(use_threads=True, block_size=1 << 20))
    except (pa.ArrowInvalid, ValueError):
        return None
    rows = np.flatnonzero(is_cost)
    if table.num_rows != rows.size:
        return None
    queries = met[rows, 0]
    if table.num_columns > MAX_COST_KEYS:
        return None  # (too many keys: the per-record check names the line of the first one over the limit)
    columns: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for key, col in zip(table.column_names, table.columns):
        if not (pa.types.is_int64(col.type) or pa.types.is_float64(col.type)):
            return None
        values, logged = _numbers(col.chunks[0] if col.num_chunks == 1 else pa.concat_arrays(col.chunks))
        if values.dtype.kind == "f" and not bool(((values >= 0.0) & (values < _EXACT)).all()):
            return None  # (a negative, or a double too large to be sure of: json.loads reads each)
        if values.dtype.kind == "i" and bool((values < 0).any()):
            return None
        if rows.size == nq and bool((queries == np.arange(nq)).all()):  # (every query logs a cost, in order)
            columns[str(key)] = (values, logged)
            continue
        full = np.zeros(nq, dtype=values.dtype)
        full[queries] = values
        mark = np.zeros(nq, dtype=bool)
        mark[queries] = logged
        columns[str(key)] = (full, mark)
    present = np.zeros(nq, dtype=bool)
    present[queries] = True
    fields: dict[str, Any] = {name: None for name in names}
    fields[COST_FIELD] = CostColumn(columns, present)
    if not other.size:
        return fields
    # the other values: one json.loads of their text (each value padded with spaces, then a ',')
    kept = _gathered(b, starts[other], ends[other] - starts[other])
    try:
        values_list = json.loads("[" + kept.decode("utf-8")[:-1] + "]")
    except (ValueError, RecursionError):
        return None
    if not isinstance(values_list, list) or len(values_list) != other.size:
        return None
    codes, m = met[:, 1], len(names)
    regular = (codes.size == nq * m and bool((codes.reshape(nq, m) == codes[:m]).all())
               and bool((met[:, 0] == np.repeat(np.arange(nq), m)).all()))  # every line: the same keys, one order
    if regular:
        pattern = [code for code in codes[:m].tolist() if names[code] != COST_FIELD]
        for j, code in enumerate(pattern):
            fields[names[code]] = values_list[j::len(pattern)]
        return fields
    at_other = np.full(codes.size, -1, dtype=np.int64)
    at_other[other] = np.arange(other.size)
    for code, name in enumerate(names):
        if name == COST_FIELD:
            continue
        column: list[Any] = [None] * nq
        at = np.flatnonzero(codes == code)
        for q, i in zip(met[at, 0].tolist(), at_other[at].tolist()):
            column[q] = values_list[i]
        fields[name] = column
    return fields
