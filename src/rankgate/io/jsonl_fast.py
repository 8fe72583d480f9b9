"""Large JSONL runs and gold sets in one columnar pass: a compiled scanner for the common shape, else
pyarrow's JSON reader.

The fast path either returns exactly what the validating line-by-line parser (:mod:`.jsonl`) returns,
or ``None``, and the caller then runs that parser, which gives the result or names the offending line.

**First, the compiled scanner** (``_reader.read_jsonl``, :func:`_scan`) reads the shape retrievers
and ``rankgate retrieve`` write: each line one object of a query id (a string) and a ranking list of
``{item id, score}`` objects (a gold set: ``{item id, grade}``, the grade an integer), every key once
and no other key, in any order, with JSON whitespace anywhere, CRLF and blank lines. A run's items may
also give their ``rank``, and a run's line may hold other keys (``latency_ms``, ``index_version``…):
the scanner passes over their values and :func:`_other_fields` decodes them with :mod:`json`, all in
one call. Strings must be printable ASCII without escapes (so each is its bytes) and numbers are
converted exactly as Python converts them (correctly rounded; ``-0`` is the integer 0, ``-0.0`` stays
-0.0); anything else, down to one byte, makes it decline, silently, and pyarrow's path below takes the
file. It reads the file on two threads, in pieces read into buffers, in about a fifth of the CPU time of
pyarrow's path.

**Else, pyarrow's JSON reader.** It never changes a result or an error message, by construction:

* **Every line is read, every field is seen.** pyarrow infers the schema from the whole file, so a
  field that appears only on line 150,001 (``must_not_retrieve``, ``k``, ``tags``…) is in the table's
  schema and the fast path declines; nothing is taken from a sample of first lines. (The first lines
  only suggest column types, and a suggested type is checked strictly on every line.)
* **Types are strict.** pyarrow refuses a value of another JSON type (a grade ``"2"`` or ``true``, a
  query id ``1.5``, an object where an id is expected): the read fails and the fast path declines.
  Numbers are checked after the read: any non-finite number anywhere (``NaN``, ``Infinity``, ``Inf``,
  ``1e400``) and any ``-0`` score or rank makes it decline.
* **Nothing the parser refuses.** A table whose type nests deeper than :data:`~.jsonl.MAX_DEPTH`
  (the deepest line nests as deep) is declined; lines that might nest deeper than pyarrow's reader
  can take (it crashes) are measured before it sees them.
* **One object per line.** Every line that is not blank (nothing but spaces, tabs and ``\\r``: both
  readers skip it) must start with ``{`` and end with ``}`` (or ``}\\r``), and pyarrow must return as
  many rows as there are such lines, so an object spread over lines or two objects on one line take
  the validating parser.
* **Only what the validating parser would read, in the shape it reads it.** A field the fast path
  cannot reproduce exactly (both ``doc_version`` and ``version`` on items, notes that are not
  strings) makes it decline. Per-query floats and objects (the ``latency_ms`` that ``rankgate
  retrieve`` logs) are decoded from each line's own bytes by :mod:`json`, so key order and ``3``
  against ``3.0`` come out as the parser gives them; where the key cannot be located beyond doubt
  (see :func:`_json_values`) the fast path declines. A gold set's per-query fields (``k``, ``tags``,
  ``must_not_retrieve``, ``no_answer``…) are decoded the same way and handed to the parser's own
  field code (:func:`_gold_fields`).
* **It says why.** ``why=`` of the readers receives the reason of a large file's decline in a few
  words; the loaders print it on stderr once the validating parser has read the file.

Used for files of at least :data:`MIN_BYTES` (a parameter of the readers, so tests can force the
fast path on small files); smaller files go straight to the validating parser.
"""

from __future__ import annotations

import json
import operator
import os
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple, cast

import numpy as np
import pyarrow as pa

from rankgate.errors import FileChangedError, InputError
from rankgate.model.ranking import MAX_RANK
from rankgate._util.arrow import np_of
from rankgate.io.jsonl import (
    GRADE_KEYS,
    ITEM_ID_KEYS,
    MAX_DEPTH,
    QUERY_ID_KEYS,
    RELEVANT_KEYS,
    RUN_LIST_KEYS,
    SURROGATE_ESCAPE,
    json_depth,
)
from rankgate.io.producers import ITEM_MARKERS
from rankgate.model.gold_run import Gold, Run, joined_fields
from rankgate.io.source import Pread, changed_error, is_gzip, open_binary, read_hook

__all__ = ["MIN_BYTES", "read_gold_fast", "read_run_fast"]

MIN_BYTES = 1 << 20
"""Files from this size (1 MiB) take the fast path: already there, the validating parser costs more
than pyarrow's import and parse (a 6 MB gold set with per-query fields: 0.47 s against 0.14 s)."""
SAMPLE_LINES = 200
BLOCK = 1 << 20  # bytes per parse block (a line must fit in one)
_BOM = b"\xef\xbb\xbf"
_ITEM_TEXT = (("doc_version", "version"), ("text", "content"), ("source", None))
_MAX_EXACT = float(2**53)  # doubles hold every integer up to here exactly
_SAFE_DEPTH = 2048  # nesting pyarrow's reader takes without a crash (measured: 3000 in a worker thread)


# ---------------------------------------------------------------------------------------------------
# the file: bytes, line structure, UTF-8


def _file_bytes(path: str, min_bytes: int | None) -> pa.Buffer | None:
    """The file's bytes (read whole, or decompressed; without a BOM) when it is large enough."""
    try:
        if not os.path.isfile(path) or os.path.getsize(path) < (MIN_BYTES if min_bytes is None else min_bytes):
            return None  # small, or a pipe: the validating reader reads it as a stream
        if is_gzip(path):
            with open_binary(path) as fh:
                data = pa.py_buffer(fh.read())
        else:  # (read, not mapped: a map of a file cut short meanwhile would end the process)
            with Pread(path) as f:
                data = pa.py_buffer(f.read_whole())
                f.check()
    except FileChangedError:
        raise
    except (InputError, OSError, ValueError, pa.ArrowException):  # the validating reader explains
        return None
    if data.size >= 3 and data.slice(0, 3).to_pybytes() == _BOM:
        data = data.slice(3)
    return data


def _line_count(data: pa.Buffer) -> tuple[int, int] | None:
    """(number of lines, longest line) when each line is one ``{...}`` with nothing around it, else None."""
    bounds = _line_bounds(data)
    if bounds is None:
        return None
    starts, ends, _ = bounds
    return int(starts.size), int((ends - starts).max())


def _line_bounds(data: pa.Buffer, *, blank_ok: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | None:
    """Where each line starts and ends (byte offsets; an end is its line break's offset, so a ``\\r``
    before it belongs to the line), when each line is one ``{...}`` with nothing around it, else None.
    With ``blank_ok``, lines of nothing but spaces, tabs and ``\\r`` are skipped (pyarrow's reader
    skips them too, and the validating parser skips every blank line); the third item is then the
    1-based line number of each line kept (None when no line was skipped).

    Every line must start with ``{`` and end with ``}`` (or ``}\\r``). Outside a JSON string a ``}``
    can be followed by ``{`` only between top-level values (inside an object or array a ``,``, ``:``
    or closing bracket must come between), and inside a string a raw line break is not valid JSON;
    so each line break separates two top-level values. A parser that then returns as many values as
    there are lines has found exactly one on each line.
    """
    arr = np.frombuffer(data, dtype=np.uint8)
    n = arr.size
    step = 1 << 20
    parts = [np.flatnonzero(arr[s : s + step] == 10) + s for s in range(0, n, step)]
    breaks = np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)
    starts = np.concatenate(([0], breaks + 1))
    ends = np.append(breaks, n)
    if starts[-1] == n:  # a final line break ends the last line; it does not start an empty one
        starts, ends = starts[:-1], ends[:-1]
    numbers = None
    if blank_ok and starts.size:
        odd = np.flatnonzero((ends == starts) | (arr[starts] != ord("{")))
        if odd.size:
            blank = np.zeros(starts.size, dtype=bool)
            spaces = np.zeros(256, dtype=bool)
            spaces[[ord(" "), ord("\t"), ord("\r")]] = True
            for i in odd.tolist():
                blank[i] = bool(spaces[arr[starts[i] : ends[i]]].all())
            if blank.any():
                keep = ~blank
                numbers = np.flatnonzero(keep) + 1
                starts, ends = starts[keep], ends[keep]
    if starts.size == 0 or (ends - starts < 2).any() or (arr[starts] != ord("{")).any():
        return None
    last = arr[ends - 1]
    cr = last == ord("\r")
    if cr.any():
        if (ends[cr] - 2 <= starts[cr]).any():
            return None
        last = last.copy()
        last[cr] = arr[ends[cr] - 2]
    if (last != ord("}")).any():
        return None
    if not _shallow(arr, starts, ends):
        return None
    return starts, ends, numbers


def _shallow(arr: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> bool:
    """Whether every line nests shallowly enough for pyarrow's reader, which crashes on very deep
    nesting (the exact limit, :data:`~.jsonl.MAX_DEPTH`, is checked on the parsed table's type).

    A line nests at most as deep as it has ``[`` and ``{``, so only lines with more than
    :data:`_SAFE_DEPTH` are measured: by brackets outside strings when the line has no backslash
    (quotes then delimit strings), else by parsing it. (Brackets are counted for all long lines at
    once, a block of lines at a time: runs of 100 items make most lines long.)"""
    long_lines = np.flatnonzero(ends - starts > 2 * _SAFE_DEPTH)
    if long_lines.size == 0:
        return True
    counts = np.zeros(starts.size, dtype=np.int64)
    i, block = int(long_lines[0]), 16 << 20
    while i < starts.size:  # per line: how many of the block's bracket positions fall inside it
        j = max(i + 1, int(np.searchsorted(starts, starts[i] + block)))
        part = arr[starts[i] : ends[j - 1]]
        at = np.flatnonzero((part | 0x20) == ord("{"))  # "[" (0x5b) and "{" (0x7b), no other byte
        counts[i:j] = np.searchsorted(at, ends[i:j] - starts[i]) - np.searchsorted(at, starts[i:j] - starts[i])
        i = j
    for i in np.flatnonzero(counts > _SAFE_DEPTH).tolist():
        line = arr[starts[i] : ends[i]]
        opens = (line == ord("[")) | (line == ord("{"))
        if (line == ord("\\")).any():
            try:
                if json_depth(json.loads(line.tobytes())) > MAX_DEPTH:
                    return False
            except (ValueError, RecursionError):
                return False
            continue
        outside = (np.cumsum(line == ord('"')) & 1) == 0  # (a quote itself counts as inside)
        step = opens.astype(np.int8) - ((line == ord("]")) | (line == ord("}")))
        if int(np.cumsum(step * outside, dtype=np.int64).max()) > MAX_DEPTH:
            return False
    return True


def _type_depth(t: pa.DataType) -> int:
    """Containers along the deepest path of a parsed column: its values' deepest JSON nesting."""
    deepest, stack = 0, [(t, 0)]
    while stack:  # (not recursive: the nesting may be deeper than Python's stack)
        t, depth = stack.pop()
        if pa.types.is_struct(t):
            stack.extend((t.field(i).type, depth + 1) for i in range(t.num_fields))
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            stack.append((t.value_type, depth + 1))
        deepest = max(deepest, depth + (1 if pa.types.is_struct(t) or pa.types.is_list(t) or pa.types.is_large_list(t) else 0))
    return deepest


SURROGATE_BYTES = re.compile(rb"\\u[dD][89abcdefABCDEF]")
"""A surrogate escape anywhere: the line parser checks such strings (an unpaired one is refused)."""


def _surrogate_escape(data: pa.Buffer, mapped: Any) -> bool:
    """Whether :data:`SURROGATE_BYTES` occurs in ``data`` (the whole of ``mapped``, an ``mmap`` holding
    the bytes read, when that is not None). Every match starts with a backslash, and most files have
    none: the map's ``find`` skips to the first one far faster than the pattern's own scan."""
    start = 0
    if mapped is not None:
        start = mapped.find(b"\\")
        if start < 0:
            return False
    return SURROGATE_BYTES.search(memoryview(data), start) is not None


def _valid_utf8(data: pa.Buffer) -> bool:
    """Whether the bytes are UTF-8 (arrow's vectorised check: the JSON parser does not make it)."""
    offsets = pa.py_buffer(np.array([0, data.size], dtype=np.int64))
    try:
        pa.Array.from_buffers(pa.large_string(), 1, [None, offsets, data]).validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def _sample(data: pa.Buffer) -> list[dict[str, Any]]:
    """The first lines, parsed, to suggest column types (a wrong suggestion only makes the read fail)."""
    arr = np.frombuffer(data, dtype=np.uint8)
    breaks = np.flatnonzero(arr[: 1 << 20] == 10)[:SAMPLE_LINES]
    if breaks.size == 0:  # a first line longer than 1 MB: up to its end
        found = np.flatnonzero(arr == 10)[:1]
        breaks = found if found.size else np.array([data.size])
    head = data.slice(0, int(breaks[-1])).to_pybytes()
    out = []
    for line in head.split(b"\n"):
        if not line.strip(b" \t\r"):
            continue  # a blank line (the caller has checked the file's lines)
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            break
        if not isinstance(obj, dict):
            break
        out.append(obj)
    return out


class _File(NamedTuple):
    """A file the fast path read: its table, first lines, bytes and line bounds."""

    table: pa.Table
    sample: list[dict[str, Any]]
    data: pa.Buffer
    starts: np.ndarray
    ends: np.ndarray
    numbers: np.ndarray | None  # the line number of each row, when blank lines were skipped


def reader_scans() -> bool:
    """Whether the compiled scanner is there (it alone reads a file through a map)."""
    from rankgate._native import reader

    return reader is not None and hasattr(reader, "read_jsonl")


class _Source:
    """A JSONL file's bytes (a byte-order mark left out) for the fast readers. A plain file is mapped
    for the compiled scanner alone, whose scans are guarded (a page past the end of a file another
    program cut short meanwhile is a FileCut, not the end of the process); Python code reads it by
    offset, and whole (into anonymous memory) only when the checks and pyarrow's parse need it; a gzip
    file is decompressed whole. A file shorter than when it was opened is a FileChangedError "changed
    while it was read"; :meth:`check` says the same of a file changed in any way once it is read."""

    def __init__(self, path: str, f: Pread | None, data: pa.Buffer | None, base: int, size: int) -> None:
        self.path, self.f, self.base, self.size = path, f, base, size
        self._data, self._whole = data, None
        self.mm = f.mapped() if f is not None and reader_scans() else None

    def let_go(self, a: int, b: int) -> None:
        """The map's pages of bytes ``[a, b)`` let go (they come back from the page cache if read again)."""
        import mmap

        if self.mm is not None and hasattr(mmap, "MADV_DONTNEED"):
            lo = a + self.base - (a + self.base) % mmap.PAGESIZE
            self.mm.madvise(mmap.MADV_DONTNEED, lo, b + self.base - lo)

    def cut(self) -> FileChangedError:
        """The error for a file the compiled scanner found cut short while it was mapped."""
        if self.f is not None:
            try:
                self.f.check()
            except FileChangedError as exc:
                return exc
        return changed_error(self.path, "it is shorter than when it was opened")

    @property
    def plain(self) -> bool:
        """Whether the bytes are the file's own (not decompressed): offsets into them are the file's, less
        the byte-order mark."""
        return self.f is not None

    def whole(self) -> tuple[pa.Buffer, Any]:
        """(the bytes, the anonymous map holding them, or None): read whole on the first call."""
        if self._data is None:
            assert self.f is not None
            self._whole = self.f.read_whole()
            data = pa.py_buffer(self._whole)
            self._data = data.slice(self.base, self.size) if self.base or data.size != self.size else data
        return self._data, (self._whole if not self.base else None)

    def line_end(self, at: int) -> int:
        """The offset just past the first line break at or after ``at`` (the size if none)."""
        if self._data is not None:
            return _line_end(np.frombuffer(self._data, dtype=np.uint8), at)
        assert self.f is not None
        step = 1 << 16
        while at < self.size:
            chunk = self.f.read(self.base + at, min(step, self.size - at))
            k = chunk.find(b"\n")
            if k >= 0:
                return at + k + 1
            at += len(chunk)
            step *= 2
        return self.size

    def check(self) -> None:
        if self.f is not None:
            self.f.check()

    def close(self) -> None:
        if self.mm is not None:
            self.mm.close()
            self.mm = None
        if self.f is not None:
            self.f.close()


def _opened(path: str, min_bytes: int | None) -> _Source | None:
    """The file as a :class:`_Source` when it is large enough (at least ``min_bytes``, default
    :data:`MIN_BYTES`) and a regular file; None for a small file or a pipe (the validating reader reads
    it as a stream) or one that cannot be opened (it says why)."""
    try:
        plain = os.path.isfile(path) and not is_gzip(path)
    except (InputError, OSError, ValueError):
        plain = False
    if not plain:
        data = _file_bytes(path, min_bytes)
        return None if data is None else _Source(path, None, data, 0, data.size)
    try:
        f = Pread(path)
    except OSError:  # the validating reader explains
        return None
    if f.size < (MIN_BYTES if min_bytes is None else min_bytes) or f.size == 0 or not f.regular:
        f.close()
        return None
    try:
        base = 3 if f.size >= 3 and f.read(0, 3) == _BOM else 0
    except BaseException:
        f.close()
        raise
    return _Source(path, f, None, base, f.size - base)


def _read_table(path: str, min_bytes: int | None, schema: Any, found: _Source | None = None) -> _File | None:
    """The whole file as a table, or None when it is small, irregular or not exactly readable.
    ``found``: the file as :func:`_opened` gives it, when the caller has it already (and closes it)."""
    if found is None:
        found = _opened(path, min_bytes)
        if found is None:
            return None
        try:
            return _read_table(path, min_bytes, schema, found)
        finally:
            found.close()
    data, mapped = found.whole()
    bounds = _line_bounds(data, blank_ok=True)
    if bounds is None:
        return _no("a line holds something other than one JSON object (an object over two lines, two on one line)")
    if not _valid_utf8(data) or _surrogate_escape(data, mapped):  # (the parser names it)
        return _no("it is not UTF-8 or holds a surrogate escape")
    starts, ends, numbers = bounds
    lines, longest = int(starts.size), int((ends - starts).max())
    sample = _sample(data)
    if not sample:
        return _no("its first line is not a JSON object")
    import pyarrow.json as pj

    # pyarrow parses the bytes already read (they stay for the values the table does not hold).
    source: Any = pa.BufferReader(data)
    try:
        explicit = schema(sample)
        table = pj.read_json(
            source,
            # A line fits in a block. One thread: at 100k x 100 pyarrow's threaded parse took 40% more
            # CPU and twice the memory, and the gold set is parsed beside the run anyway.
            read_options=pj.ReadOptions(block_size=max(BLOCK, longest + 2), use_threads=False),
            parse_options=pj.ParseOptions(explicit_schema=explicit, unexpected_field_behavior="infer"),
        )
    except (pa.ArrowException, ValueError) as exc:  # a value of another type, bad JSON…: the parser explains
        text = str(exc).strip().splitlines()
        return _no("a value is not of the type the first lines have, or not JSON" +
                   (f" ({text[0][:120]})" if text else ""))
    if table.num_rows != lines:
        return _no("a line holds something other than one JSON object")
    if 1 + max((_type_depth(t) for t in table.schema.types), default=0) > MAX_DEPTH:
        return _no("a line nests too deep")  # the validating parser names the line
    # (The table stays in its parse blocks: a column is joined only when it is read, and a run's
    # item ids not at all, sparing a copy of the largest column.)
    if not _all_finite(table):
        return _no("it holds a number that is not finite")
    return _File(table, sample, data, starts, ends, numbers)


def _all_finite(table: pa.Table) -> bool:
    """No NaN or infinite number anywhere in the table, however deeply nested."""
    stack = [chunk for col in table.columns for chunk in col.chunks]
    while stack:
        arr = stack.pop()
        t = arr.type
        if pa.types.is_floating(t):
            if not np.isfinite(np_of(arr, np.float64, fill=0.0)).all():
                return False
        elif pa.types.is_struct(t):
            stack.extend(arr.field(i) for i in range(t.num_fields))
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            stack.append(arr.flatten())
    return True


# ---------------------------------------------------------------------------------------------------
# columns


def _one(col: pa.ChunkedArray) -> pa.Array:
    return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()


def _first(keys: tuple[str, ...], names: list[str]) -> str | None:
    """The key the validating parser would read: the first of ``keys`` the records have."""
    return next((k for k in keys if k in names), None)


def _ids(arr: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray | None:
    """Ids as strings exactly as ``str(value)`` gives them, or None when one is missing or empty."""
    import pyarrow.compute as pc

    if arr.null_count:
        return None
    if pa.types.is_integer(arr.type):
        arr = pc.cast(arr, pa.string())
    elif not pa.types.is_string(arr.type):
        return None
    for chunk in arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]:
        if len(chunk):  # empty ids: equal neighbouring offsets
            offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int32, count=len(chunk) + 1, offset=chunk.offset * 4)
            if bool((offsets[1:] == offsets[:-1]).any()):
                return None
    return arr


def _id_type(values: list[Any]) -> pa.DataType | None:
    if values and all(isinstance(v, str) for v in values):
        return pa.string()
    if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return pa.int64()
    return None


def _numbers(arr: pa.Array) -> np.ndarray | None:
    """A number column as float64 (nulls as NaN); None for other types, or when a ``-0`` would differ
    from what ``float(-0)`` gives."""
    if pa.types.is_null(arr.type):
        return np.full(len(arr), np.nan)
    if arr.type not in (pa.int64(), pa.float64()):
        return None
    values = np_of(arr, np.float64, fill=np.nan)
    if ((values == 0) & np.signbit(values)).any():
        return None
    return values


def _plain(arr: pa.Array) -> bool:
    """Values whose Python form is exactly what ``json.loads`` gives: strings, ints, bools, nulls."""
    t = arr.type
    if pa.types.is_list(t):
        t = t.value_type
    return pa.types.is_string(t) or t == pa.int64() or pa.types.is_boolean(t) or pa.types.is_null(t)


# ---------------------------------------------------------------------------------------------------
# the compiled scanner: the common shape, exactly


_PIECE = 1 << 30
"""Bytes per call of the compiled scanner at most: the item ids of one piece fit int32 offsets."""
_SPLIT = 1 << 23
"""Files larger than this are scanned in two pieces at least, on two threads."""


class _Scanned(NamedTuple):
    """A file of the common shape as the compiled scanner read it."""

    query_ids: list[str]
    counts: np.ndarray  # items per query
    lines: np.ndarray  # 1-based line of each query
    values: np.ndarray  # score (float64) or grade (int64) of each item
    ids: pa.Array | pa.ChunkedArray  # item ids
    ranks: np.ndarray | None = None  # a run's given rank of each item (NaN: none); None: no item has one
    fields: dict[str, list[Any]] | None = None  # a run's other per-query keys, as the parser reads them
    texts: int = 0  # items whose text is a string (items="lazy")
    spans: np.ndarray | None = None  # per query: its line's first byte and its newline, offsets in the file's bytes


RANK_KEYS = ("rank",)
"""The item key of a given rank in a run (any finite number, as the line-by-line parser reads it)."""
NULL_ITEM_KEYS = tuple(name for pair in _ITEM_TEXT for name in pair if name is not None)
"""A run item's text and version keys, which the scanner takes when their value is null (``rankgate
retrieve`` writes ``"doc_version": null`` on every item): the parser then keeps no column for them. A
value other than null makes the scanner decline (pyarrow's parse reads the texts)."""


_TEXT_KEYS = tuple(name for name in _ITEM_TEXT[1] if name is not None)  # ("text", "content")
_ITEM_BITS = {
    # which of NULL_ITEM_KEYS may hold a string that is passed over (checked, not kept), and which are
    # an item's text keys (counted; at most one of them in an item)
    True: (0, 0),  # item columns kept: a string declines (pyarrow's parse keeps them)
    False: ((1 << len(NULL_ITEM_KEYS)) - 1, 0),  # no item column is read
    "lazy": (sum(1 << i for i, k in enumerate(NULL_ITEM_KEYS) if k in _TEXT_KEYS),
             sum(1 << i for i, k in enumerate(NULL_ITEM_KEYS) if k in _TEXT_KEYS)),  # texts read later, from the lines
}


def _other_fields(others: tuple[bytes, list[str], bytes], nq: int) -> dict[str, list[Any]] | None:
    """A run's per-query keys other than the id and the list (``latency_ms``, ``index_version``…) as
    the parser puts them in ``Run.fields``: a column per key in order of first appearance, None where
    a query has no such key, each value as ``json.loads`` gives it (key order, 3 against 3.0). From
    what the scanner recorded (per key met: its query and name's code; the names; the values' text
    joined by line breaks, a value a line). None, for the parser to read the file, where that cannot
    be proven: a key twice in one line (the parser keeps the last value, at the first one's place), a
    value that is not one JSON value, not UTF-8, or holds a surrogate escape or a number too long (the
    parser names the line).

    A run's ``cost`` objects become columns (:func:`rankgate.io.cost.scanned_fields`) where that is
    proven the same; otherwise all values are decoded by one ``json.loads`` of ``[v1,v2,…]``: a value
    the scanner passed over holds no line break, so the array's elements are the values."""
    records, names, joined = others
    met = np.frombuffer(records, dtype=np.int64).reshape(-1, 2)
    if met.shape[0] == 0:
        return {}
    m = len(names)
    regular = (met.shape[0] == nq * m and len(set(met[:m, 1].tolist())) == m  # (the usual: every line, one order)
               and bool((met[:, 1].reshape(nq, m) == met[:m, 1]).all())
               and bool((met[:, 0].reshape(nq, m) == np.arange(nq)[:, None]).all()))
    pairs = met[:, 0] * m + met[:, 1]
    if not regular and np.unique(pairs).size != pairs.size:
        return None  # a key twice on a line
    if "cost" in names:  # (cost objects as columns, when that is proven the same: io/cost.py)
        from rankgate.io.cost import scanned_fields

        decoded = scanned_fields(met, names, joined, nq)
        if decoded is not None:
            return _checked_conversations(decoded)
    try:
        text = "[" + joined.decode("utf-8").replace("\n", ",") + "]"  # (a value a line; no value holds a break)
        if "\\u" in text and SURROGATE_ESCAPE.search(text):
            return None
        values = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(values, list) or len(values) != met.shape[0]:
        return None
    fields: dict[str, list[Any]] = {name: [None] * nq for name in names}
    columns = [fields[name] for name in names]
    for (q, code), value in zip(met.tolist(), values):
        columns[code][q] = value
    return _checked_conversations(fields)


def _checked_conversations(fields: dict[str, list[Any]]) -> dict[str, list[Any]] | None:
    """A run's ``conversation_id`` and ``turn`` columns checked and kept as the parser keeps them
    (:data:`~.jsonl.RUN_CONVERSATION_CHECKS`: an id as its text, a turn as an int), the other columns as
    they are; None, for the parser to name the line, when a value is not valid."""
    from rankgate.io.jsonl import RUN_CONVERSATION_CHECKS
    from rankgate.model.conversations import MAX_TURN

    for name, check in RUN_CONVERSATION_CHECKS.items():
        col = fields.get(name)
        if col is None:
            continue
        # the usual columns, already as the checks keep them (text ids, whole turns), in one pass
        if name == "conversation_id" and set(map(type, col)) <= {str, type(None)}:
            texts = [v for v in col if v is not None] if None in col else col
            if all(texts) and not any(map(str.isspace, texts)):
                continue
        if name == "turn" and all(v is None or (type(v) is int and 0 < v <= MAX_TURN) for v in col):
            continue
        try:
            fields[name] = [None if v is None else check(v, "", None) for v in col]
        except InputError:
            return None
    return fields


def _scan(found: _Source, list_keys: tuple[str, ...], value_keys: tuple[str, ...],
          value_kind: int, *, ranks: bool = False, extras: bool = False, items: bool | str = True) -> _Scanned | None:
    """The file (as :func:`_opened` gives it) read by the compiled scanner (``_reader.read_jsonl``), or
    None when it is not built or any line is not exactly of the common shape: one object of a query
    id (a string) and a list (``list_keys``) of objects of an item id (a string) and a number
    (``value_keys``; ``value_kind`` 0: any number, as float64; 1: an integer, as int64), each key
    once, in any order, strings of
    printable ASCII without escapes, blank lines and JSON whitespace anywhere a line allows it, and
    no query id twice. On such a file the validating parser can only give this result: every byte is
    ASCII, so each string is its bytes, and each number is converted as Python converts it.
    ``ranks``: an item may also give its rank (:data:`RANK_KEYS`), read as a score is; ``extras``: a
    line may hold other keys (a run's ``latency_ms``…), read as :func:`_other_fields` reads them, and
    an item its text or version keys when they are null (:data:`NULL_ITEM_KEYS`).

    Files over 8 MB are read in pieces cut at line ends, two threads at a time (the scan releases
    the GIL); each piece's item ids are one chunk of the result."""
    from rankgate._native import reader

    if reader is None or not hasattr(reader, "read_jsonl"):
        return None
    size = found.size
    pieces = max(-(-size // _PIECE), 2 if size > _SPLIT else 1)
    cuts = [0]
    for i in range(1, pieces):
        cuts.append(found.line_end(max(cuts[-1], size * i // pieces)))
    cuts.append(size)
    spans = [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]
    if not spans:
        return None

    def read(span: tuple[int, int]) -> tuple[_Scanned, int] | None:  # (a piece, and how many lines it has)
        return _scan_piece(found, span[0], span[1], list_keys, value_keys, value_kind, ranks=ranks, extras=extras,
                           items=items)

    if len(spans) == 1:
        got = [read(spans[0])]
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=2) as pool:
            got = list(pool.map(read, spans))
    parts = [part for part in got if part is not None]
    if len(parts) < len(got):
        return None
    found.let_go(0, size)  # (read and copied: let the pages go before joining the pieces)
    qids = [q for part, _ in parts for q in part.query_ids]
    if not qids or len(set(qids)) != len(qids):
        return None  # no query, or one on two lines: the parser names the file or the line
    if len(parts) == 1:
        return parts[0][0]._replace(query_ids=qids)
    first = np.cumsum([0] + [newlines for _, newlines in parts[:-1]]).tolist()  # lines before each piece
    ranked = any(part.ranks is not None for part, _ in parts)
    return _Scanned(qids, np.concatenate([part.counts for part, _ in parts]),
                    np.concatenate([part.lines + before for (part, _), before in zip(parts, first)]),
                    np.concatenate([part.values for part, _ in parts]),
                    pa.chunked_array([part.ids for part, _ in parts], type=pa.string()),
                    np.concatenate([np.full(part.values.size, np.nan) if part.ranks is None else part.ranks
                                    for part, _ in parts]) if ranked else None,
                    joined_fields([(part.fields or {}, len(part.query_ids)) for part, _ in parts]),
                    sum(part.texts for part, _ in parts),
                    np.concatenate([cast(np.ndarray, part.spans) for part, _ in parts]))


def _scan_piece(found: _Source, a: int, b: int, list_keys: tuple[str, ...], value_keys: tuple[str, ...],
                value_kind: int, *, ranks: bool = False, extras: bool = False,
                items: bool | str = True) -> tuple[_Scanned, int] | None:
    """:func:`_scan_span` on the bytes ``[a, b)`` of the file's data (whole lines): from the map, under
    the scanner's guard, or from the bytes read whole (a gzip file's, or a file the system would not
    map); the queries' line spans are offsets in the file's data, as a whole read gives them."""
    from rankgate._native import reader

    assert reader is not None
    if found.mm is not None:  # the map, under the scanner's guard
        try:
            got = _scan_span(found.mm, found.base + a, found.base + b, list_keys, value_keys, value_kind, ranks=ranks,
                             extras=extras, items=items)
        except reader.FileCut:
            raise found.cut() from None
        read_hook(found.path, found.base + a, b - a)
        shift = -found.base  # (offsets in the map: in the data, less the byte-order mark)
    else:
        got = _scan_span(found.whole()[0], a, b, list_keys, value_keys, value_kind, ranks=ranks, extras=extras,
                         items=items)
        shift = 0
    if got is None or not shift:
        return got
    part, newlines = got
    assert part.spans is not None
    return part._replace(spans=part.spans + shift), newlines


def _scan_span(data: Any, a: int, b: int, list_keys: tuple[str, ...], value_keys: tuple[str, ...],
               value_kind: int, *, ranks: bool = False, extras: bool = False,
               items: bool | str = True) -> tuple[_Scanned, int] | None:
    """The bytes ``[a, b)`` of ``data`` (whole lines) by the compiled scanner (see :func:`_scan`): the
    piece's queries (line numbers counted from its start) and how many line breaks it holds; None when
    it declines. ``items=False`` (with ``extras``): an item's text or version keys (:data:`NULL_ITEM_KEYS`)
    may also hold a string, which is checked as the parser reads it and not kept (the caller reads no
    item column); ``items="lazy"``: so may its text (``text`` or ``content``, one of them), counted, for
    :class:`LineTexts` to read later."""
    from rankgate._native import reader

    assert reader is not None
    # An item takes at least its braces, two keys with their quotes and colons, a comma and a
    # one-character id and value ({"id":"x","score":0}): the output holds as many.
    least = 13 + min(map(len, ITEM_ID_KEYS)) + min(map(len, value_keys))
    dtype = np.float64 if value_kind == 0 else np.int64
    bound = (b - a) // least + 1
    values = np.empty(bound, dtype=dtype)  # (pages never written are never touched)
    offsets = np.empty(bound + 1, dtype=np.int32)
    ids = np.empty(b - a + 16, dtype=np.uint8)  # (room for 16-byte copies)
    given = np.empty(bound, dtype=np.float64) if ranks else None
    got = reader.read_jsonl(data, a, b, QUERY_ID_KEYS, list_keys, ITEM_ID_KEYS, value_keys, value_kind,
                            values, offsets, ids, RANK_KEYS, given, extras, NULL_ITEM_KEYS if extras else None,
                            *(_ITEM_BITS[items] if extras else (0, 0)))
    if got is None:
        return None
    items_read, nbytes, newlines, qids, counts, lines, ranked, others, texts, spans = got
    # A run's r_order, as the parser sets it: the given ranks (NaN where an item has none), only when
    # some item has one. A rank of 2^53 or more is the parser's to name.
    order = given[:items_read] if given is not None and ranked else None
    if order is not None and bool((np.abs(order) >= MAX_RANK).any()):
        return None
    fields = _other_fields(others, len(qids)) if others[1] else {}
    if fields is None:
        return None
    chunk = pa.Array.from_buffers(pa.string(), items_read, [None, pa.py_buffer(offsets[: items_read + 1]),
                                                             pa.py_buffer(ids[:nbytes])])
    return _Scanned(qids, np.frombuffer(counts, dtype=np.int64), np.frombuffer(lines, dtype=np.int64),
                    values[:items_read], chunk, order, fields, texts,
                    np.frombuffer(spans, dtype=np.int64).reshape(-1, 2)), newlines


def _line_end(arr: np.ndarray, at: int) -> int:
    """The offset just past the first line break at or after ``at`` (the array's size if none)."""
    step = 1 << 16
    while at < arr.size:
        found = np.flatnonzero(arr[at : at + step] == 10)
        if found.size:
            return at + int(found[0]) + 1
        at += step
    return int(arr.size)


def _scan_run(found: _Source, path: str) -> Run | None:
    """A run of the common shape (``{"query_id": ..., "topk": [{"chunk_id": ..., "score": ...}]}``) by
    the compiled scanner, exactly as :func:`~.jsonl.parse_run_records` builds it; else None."""
    got = _scan(found, RUN_LIST_KEYS, ("score",), 0, ranks=True, extras=True)
    if got is None or got.values.size == 0:
        return None  # (no item at all: the parser gives a run without scores)
    return Run(query_ids=got.query_ids, r_query=np.repeat(np.arange(len(got.query_ids), dtype=np.int64), got.counts),
               r_doc=got.ids, r_score=got.values, r_order=got.ranks, fields=got.fields or {}, source=path,
               query_lines=got.lines)


class LineTexts(Sequence[Any]):
    """A run's item texts (``Run.items["text"]``), read from the file's lines only when asked: the
    values the line-by-line parser gives (an item's ``text``, else its ``content``, as ``str``; None
    where it has neither or null). A report shows the texts of a few rows; reading every text of a large
    run into Python strings cost more than the rest of its reading. A line is read (``read(start, end)``:
    its bytes) and decoded by ``json.loads`` when one of its rows is asked for, and kept (the last
    :data:`LINES_KEPT` lines).

    A line that is no longer the one scanned (the file was changed since) is an
    :class:`~rankgate.errors.InputError` naming the file: its items must be the scanned ones, id for id
    (``ids``: the run's item ids, row for row), and ``read`` gives None when the file's size or
    modification time (``os.fstat`` of the file opened) is no longer the one recorded before the scan.
    The ids cannot tell a rewrite that keeps every line's ids with other texts; the size and time tell
    it unless it also keeps the size and lands within the file system's timestamp granularity (that
    would take a digest of every line at the scan). A file renamed over the one read does not matter:
    the lines come from the file opened (a gzip file's from the bytes decompressed)."""

    LINES_KEPT = 4096

    def __init__(self, read: Callable[[int, int], bytes | None], line_starts: np.ndarray,
                 line_ends: np.ndarray, row_starts: np.ndarray, path: str, ids: pa.Array | pa.ChunkedArray) -> None:
        self._read = read
        self._starts, self._ends = line_starts, line_ends  # each query's line, as byte offsets for read
        self._rows = row_starts  # first row of each query, and the number of rows last
        self._path = path
        self._ids = ids
        self._lines: dict[int, list[str | None]] = {}

    def __len__(self) -> int:
        return int(self._rows[-1])

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        i = operator.index(i)
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("text row out of range")
        q = int(np.searchsorted(self._rows, i, side="right")) - 1
        return self._line(q)[i - int(self._rows[q])]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and not isinstance(other, (str, bytes)) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def _line(self, q: int) -> list[str | None]:
        got = self._lines.get(q)
        if got is None:
            first, n = int(self._rows[q]), int(self._rows[q + 1] - self._rows[q])
            line = self._read(int(self._starts[q]), int(self._ends[q]))
            try:
                obj = json.loads(line) if line is not None else None
                items = obj[next(k for k in RUN_LIST_KEYS if k in obj)] if obj is not None else None
                scanned = self._ids.slice(first, n)
                if items is not None and len(items) == n and _ids_are(items, scanned.to_pylist()):
                    got = [None if (v := item.get(_TEXT_KEYS[0], item.get(_TEXT_KEYS[1]))) is None else str(v)
                           for item in items]
            except (ValueError, TypeError, KeyError, AttributeError, StopIteration, RecursionError):
                got = None
            if got is None:
                from rankgate.io.source import changed_error

                raise changed_error(self._path, "its size or modification time is not the one it had when read"
                                    if line is None else "a line's items are not those read before")
            if len(self._lines) >= self.LINES_KEPT:
                self._lines.clear()
            self._lines[q] = got
        return got


def _ids_are(items: list[Any], ids: list[str]) -> bool:
    """Whether a line's items have the ids ``ids``, in order, as the parser reads them (an item's first
    id key; an integer as its digits)."""
    try:
        if [item[ITEM_ID_KEYS[0]] for item in items] == ids:  # (the usual line: one lookup an item)
            return True
    except (KeyError, TypeError):
        pass
    return [_item_id(item) for item in items] == ids


def _item_id(item: Any) -> str | None:
    if not isinstance(item, dict):
        return None
    for key in ITEM_ID_KEYS:
        if key in item:
            value = item[key]
            if isinstance(value, str):
                return value
            return str(value) if isinstance(value, int) and not isinstance(value, bool) else None
    return None


def read_run_lazy_texts(path: str, *, min_bytes: int | None = None) -> Run | None:
    """The run as :func:`read_run_fast` reads it, with its item texts in a :class:`LineTexts` (read from
    the lines when asked) instead of a list; None when the compiled scanner does not take the file
    this way: it must be of the common shape (:func:`_scan_run`) with items whose text is a string or
    null in one key (``text`` or ``content``, not both), and no other item column (a version or source
    that is not null). The caller then reads it as usual (without the scanner, which declined it)."""
    try:
        key = _file_key(path)
    except OSError:
        return None
    found = None if key in _declined_files else _opened(path, min_bytes)  # (the flag is the whole read's to take)
    if found is None:
        return None
    try:
        got = _scan(found, RUN_LIST_KEYS, ("score",), 0, ranks=True, extras=True, items="lazy")
        found.check()
    finally:
        found.close()
    if got is None:
        _declined_files.add(key)
    if got is None or got.values.size == 0:
        return None
    items: dict[str, Any] = {}
    if got.texts:
        assert got.spans is not None
        rows = np.concatenate(([0], np.cumsum(got.counts))).astype(np.int64)
        items["text"] = LineTexts(_line_reader(path, found, key[1:]),
                                  got.spans[:, 0].copy(), got.spans[:, 1].copy(), rows, path, got.ids)
    return Run(query_ids=got.query_ids, r_query=np.repeat(np.arange(len(got.query_ids), dtype=np.int64), got.counts),
               r_doc=got.ids, r_score=got.values, r_order=got.ranks, items=items, fields=got.fields or {}, source=path,
               query_lines=got.lines)


def _line_reader(path: str, found: _Source, stamp: tuple[int, int]) -> Callable[[int, int], bytes | None]:
    """Bytes ``[a, b)`` of the file's data: read from the file itself (kept open; a map held for the
    whole report would end the process if the file were cut short meanwhile), or from the bytes
    read when they are not the file's own (a gzip file's). None when the file read is no longer the
    one scanned: its size and modification time (``os.fstat`` after the read) are not ``stamp``."""
    if not found.plain:
        data = found.whole()[0]
        return lambda a, b: data.slice(a, b - a).to_pybytes()
    fh = open(path, "rb")  # noqa: SIM115 (open while the run lives)
    skip = found.base  # (a byte-order mark before the data)

    def read(a: int, b: int) -> bytes | None:
        got = os.pread(fh.fileno(), b - a, skip + a)
        info = os.fstat(fh.fileno())
        return got if (info.st_size, info.st_mtime_ns) == stamp else None

    return read


_declined_files: set[tuple[str, int, int]] = set()
"""Files a block of which the compiled scanner declined (path, size, mtime): their whole read, which
follows at once, skips the scanner, which would decline them again."""


def _file_key(path: str) -> tuple[str, int, int]:
    st = os.stat(path)
    return os.path.abspath(path), st.st_size, st.st_mtime_ns


def _was_declined(path: str) -> bool:
    try:
        key = _file_key(path)
    except OSError:
        return False
    if key in _declined_files:
        _declined_files.discard(key)
        return True
    return False


def jsonl_run_blocks(path: str, block_bytes: int, *, items: bool = True) -> Iterator[Run | None] | None:
    """A large plain JSONL run of the common shape as a :class:`Run` per block of about ``block_bytes``
    of whole lines (a line is a whole query), each read by the compiled scanner, the next block on a
    thread while the caller scores the one before; each block is the rows the scanner gives for the
    whole file, with its own line numbers. None when the scanner is not built or the file is not a
    plain file; the iterator yields None for a block the scanner declines (the caller then reads the
    file whole, and the readers there name a bad line). The pages of a block read are let go.
    ``items=False``: the caller reads no item column, so items whose text or version is a string are
    taken too (the strings are checked, not kept: each block's ``items`` is empty). Each block is
    read into reused buffers (never mapped); a file changed meanwhile is an InputError."""
    from rankgate._native import reader

    if reader is None or not hasattr(reader, "read_jsonl"):
        return None
    found = _opened(path, 1)
    if found is None:
        return None
    if found.mm is None:  # (compressed, or a file the system would not map: read whole)
        found.close()
        return None
    try:
        cuts = [0]
        while cuts[-1] < found.size:
            cuts.append(found.line_end(cuts[-1] + max(block_bytes, 1) - 1))
    except BaseException:
        found.close()
        raise
    return _jsonl_blocks(found, path, list(zip(cuts, cuts[1:])), items)


def _jsonl_blocks(found: _Source, path: str, spans: list[tuple[int, int]], items: bool) -> Iterator[Run | None]:
    from contextlib import closing

    from rankgate.io.source import read_ahead

    def read(i: int) -> tuple[_Scanned, int] | None:
        a, b = spans[i]
        got = _scan_piece(found, a, b, RUN_LIST_KEYS, ("score",), 0, ranks=True, extras=True, items=items)
        found.let_go(a, b)
        return got

    def good(got: tuple[_Scanned, int] | None) -> bool:  # (no item, or a query on two lines: read whole)
        return got is not None and (not got[0].query_ids or (got[0].values.size > 0
                                                            and len(set(got[0].query_ids)) == len(got[0].query_ids)))

    lines_before = 0
    try:
        with closing(read_ahead(len(spans), read, good)) as parts:
            for got, ok in parts:
                if not ok:
                    if got is None:  # the scanner declined: the whole read goes straight to pyarrow's parse
                        _declined_files.add(_file_key(path))
                    yield None
                    return
                assert got is not None
                part, newlines = got
                if part.query_ids:  # (else blank lines only)
                    yield Run(query_ids=part.query_ids,
                              r_query=np.repeat(np.arange(len(part.query_ids), dtype=np.int64), part.counts),
                              r_doc=part.ids, r_score=part.values, r_order=part.ranks, fields=part.fields or {},
                              source=path, query_lines=part.lines + lines_before)
                lines_before += newlines
        found.check()
    finally:
        found.close()


def _scan_gold(found: _Source, path: str) -> Gold | None:
    """A gold set of the common shape (``{"query_id": ..., "relevant_chunks": [{"chunk_id": ..., "grade":
    <integer>}]}``) by the compiled scanner, exactly as :func:`~.jsonl.parse_gold_records` builds it;
    else None (also when a query lists no relevant item or one item twice: the parser names it)."""
    from rankgate.model.ids import item_codes, segment_duplicates

    got = _scan(found, RELEVANT_KEYS, GRADE_KEYS, 1)
    if got is None:
        return None
    j_query = np.repeat(np.arange(len(got.query_ids), dtype=np.int64), got.counts)
    if not np.bincount(j_query[got.values >= 1], minlength=len(got.query_ids)).all():
        return None  # a query with no relevant item
    docs = _one(got.ids) if isinstance(got.ids, pa.ChunkedArray) else got.ids
    codes, _ = item_codes(docs, pa.array([], pa.string()))
    if segment_duplicates(codes, np.concatenate(([0], np.cumsum(got.counts)))).size:
        return None
    return Gold(query_ids=got.query_ids, j_query=j_query, j_doc=docs, j_grade=got.values, source=path)


# ---------------------------------------------------------------------------------------------------
# runs


def _run_schema(sample: list[dict[str, Any]]) -> pa.Schema | None:
    fields = []
    qkey = _first(QUERY_ID_KEYS, list(sample[0]))
    lkey = _first(RUN_LIST_KEYS, list(sample[0]))
    if qkey is None or lkey is None:
        return None
    qtype = _id_type([o.get(qkey) for o in sample])
    if qtype is not None:
        fields.append(pa.field(qkey, qtype))
    items = [it for o in sample if isinstance(o.get(lkey), list) for it in o[lkey]]
    if items and all(isinstance(it, dict) for it in items):
        ikey = _first(ITEM_ID_KEYS, list(items[0]))
        seen = {key for it in items for key in it}  # declared only if seen: presence matters below
        sub = [pa.field(name, pa.float64()) for name in ("score", "rank") if name in seen]
        sub += [pa.field(name, pa.string()) for pair in _ITEM_TEXT for name in pair if name in seen]
        itype = _id_type([it.get(ikey) for it in items]) if ikey else None
        if itype is not None:
            sub.insert(0, pa.field(ikey, itype))
        fields.append(pa.field(lkey, pa.list_(pa.struct(sub))))
    elif items:
        itype = _id_type(items)
        if itype is not None:
            fields.append(pa.field(lkey, pa.list_(itype)))
    return pa.schema(fields) if fields else None


def read_run_fast(path: str, *, min_bytes: int | None = None, why: list[str] | None = None) -> Run | None:
    """The run, or None when the file is smaller than ``min_bytes`` (default :data:`MIN_BYTES`) or the
    fast path cannot prove it reads it exactly as :func:`~rankgate.io.jsonl.parse_run_records` does.
    ``why`` (a list) receives the reason of a large file's decline, in a few words."""
    return _fast(path, min_bytes, _run_schema, _to_run, why, _scan_run)


def _fast(path: str, min_bytes: int | None, schema: Any, convert: Any, why: list[str] | None,
          scan: Any = None) -> Any:
    """``scan`` the file's bytes with the compiled scanner, or when it declines, read ``path`` with
    pyarrow's JSON reader and ``convert`` the table; or None (the decline's reason appended to
    ``why``). The parse's buffers are given back before the caller goes on."""
    _declined.reason = None
    found = _opened(path, min_bytes)
    if found is None:
        return None
    try:
        if scan is not None and not _was_declined(path):
            out = scan(found, path)
            if out is not None:
                found.check()
                return out
        read = _read_table(path, min_bytes, schema, found)
        found.check()
    finally:
        found.close()
    del found
    try:
        out = None if read is None else convert(read, path)
    except (pa.ArrowException, ValueError, TypeError):
        out = _no("a value could not be converted exactly")
    reason = _declined.reason or (_UNPROVEN if read is not None else None)
    if out is None and why is not None and reason:
        why.append(reason)
    if read is not None:
        del read
        pa.default_memory_pool().release_unused()  # the parse's buffers, freed: give them back before scoring
    return out


def _to_run(read: _File, path: str) -> Run | None:
    import pyarrow.compute as pc

    table, first_keys = read.table, list(read.sample[0])
    names = table.schema.names
    qkey, lkey = _first(QUERY_ID_KEYS, names), _first(RUN_LIST_KEYS, names)
    if qkey is None or lkey is None:
        return _no("it has no query id or ranking list")
    qcol = _ids(_one(table.column(qkey)))
    lists = table.column(lkey)  # (in its parse blocks: the item ids are kept as they are, not joined)
    if qcol is None or lists.null_count or not pa.types.is_list(lists.type):
        return _no("a query id or ranking list is missing, empty or of another type")
    if len(pc.unique(qcol)) != len(qcol):
        return _no("a query appears on two lines")
    lengths = np_of(pc.list_value_length(lists), np.int64)
    flat = pc.list_flatten(lists)
    if len(flat) == 0 or flat.null_count:
        return None  # no item at all, or a null item

    def positions() -> np.ndarray:  # 1-based place of each item in its list
        starts = np.concatenate(([0], np.cumsum(lengths)))[:-1]
        return np.arange(len(flat), dtype=np.float64) - np.repeat(starts, lengths) + 1

    run = Run(query_ids=qcol.to_pylist(), r_query=np.repeat(np.arange(len(qcol), dtype=np.int64), lengths),
              r_doc=pa.array([], pa.string()), source=path,
              query_lines=np.arange(1, len(qcol) + 1, dtype=np.int64) if read.numbers is None else read.numbers)
    if pa.types.is_struct(flat.type):
        inner = [flat.type.field(i).name for i in range(flat.type.num_fields)]
        if ITEM_MARKERS.intersection(inner):
            return _no(_PRODUCER_ITEMS)
        ikey = _first(ITEM_ID_KEYS, inner)
        docs = _ids(pc.struct_field(flat, ikey)) if ikey else None
        if docs is None:
            return None
        run.r_doc = docs
        score = _numbers(pc.struct_field(flat, "score")) if "score" in inner else np.full(len(flat), np.nan)
        ranked = "rank" in inner
        rank = _numbers(pc.struct_field(flat, "rank")) if ranked else None  # (no rank anywhere: no array of NaN)
        if score is None or (ranked and (rank is None or (np.abs(rank) >= MAX_RANK).any())):
            return None  # (the parser names a rank beyond 2^53)
        scored = ~np.isnan(score)
        if scored.all():
            run.r_score = score
            if rank is not None and not np.isnan(rank).all():  # given ranks (NaN: none) count under ties="input"
                run.r_order = rank
        elif not scored.any():
            run.r_order = positions() if rank is None else np.where(np.isnan(rank), positions(), rank)
        else:
            return None  # some items scored, others not: the parser names the first such item
        for name, alias in _ITEM_TEXT:
            present = [c for c in (name, alias) if c is not None and c in inner]
            if len(present) > 1:
                return None  # which one an item uses depends on keys a table cannot tell apart
            if present:
                col = pc.struct_field(flat, present[0])
                if not (pa.types.is_string(col.type) or pa.types.is_null(col.type)):
                    return None
                if col.null_count < len(col):
                    run.items[name] = col.to_pylist()
    else:
        docs = _ids(flat)
        if docs is None:
            return None
        run.r_doc = docs
        run.r_order = positions()
    extra = [n for n in names if n not in QUERY_ID_KEYS and n not in RUN_LIST_KEYS]
    extra.sort(key=lambda n: (first_keys.index(n) if n in first_keys else len(first_keys), names.index(n)))
    for name in extra:
        col = _one(table.column(name))
        if _plain(col):
            run.fields[name] = col.to_pylist()
            continue
        values = _json_values(read, name, col)  # floats and objects (``latency_ms``): as json.loads gives them
        if values is None:
            return _no(f"its per-query field {name!r} could not be located on every line beyond doubt")
        run.fields[name] = values
    if _checked_conversations(run.fields) is None:
        return _no("a conversation_id or turn is not valid (the line-by-line reader names it)")
    return run


_UNREADABLE = object()
_UNPROVEN = "a value could not be proven to read exactly as the line-by-line reader reads it"
_PRODUCER_ITEMS = "its items are LlamaIndex nodes or LangChain documents (rankgate.io.producers reads them)"
_declined = threading.local()  # why the last read on this thread declined (readers run on threads)


def _no(reason: str) -> Any:
    """Decline, saying why in a few words (``why`` of the readers)."""
    _declined.reason = reason
    return None

_SPACE = frozenset(b" \t\r\n")
_OPENERS = frozenset(b"{,")


def _decode_at(decode: Any, buf: memoryview, at: int, end: int) -> Any:
    """The JSON value starting at byte ``at`` of a line ending at ``end``: read from a short window
    first, which is only trusted when the value ends inside it (a number cut short would still read)."""
    for stop in (min(at + 256, end), end):
        text = bytes(buf[at:stop]).decode("utf-8", errors="ignore" if stop < end else "strict")
        try:
            value, used = decode(text)
        except ValueError:
            if stop == end:
                return _UNREADABLE
            continue
        if used < len(text) or stop == end:
            return value
    return _UNREADABLE


def _nested_names(t: pa.DataType) -> set[str]:
    """Every field name inside a column's type, at any depth."""
    out: set[str] = set()
    stack = [t]
    while stack:
        t = stack.pop()
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                out.add(t.field(i).name)
                stack.append(t.field(i).type)
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            stack.append(t.value_type)
    return out


def _json_values(read: _File, name: str, col: pa.Array) -> list[Any] | None:
    """A top-level field's values exactly as ``json.loads`` gives them, or None (see :func:`_located`)."""
    found = _located(read, name, col)
    return None if found is None else found[0]


def _located(read: _File, name: str, col: pa.Array) -> tuple[list[Any], np.ndarray, np.ndarray] | None:
    """``(values, lines, at)``: a top-level field's values exactly as ``json.loads`` gives them (key order, ints and floats),
    decoded from the line's own bytes, or None when that cannot be proven.

    The key is found where it is written literally after ``{`` or ``,`` (and spaces): a ``"`` preceded
    by those is not escaped, so it opens or closes a string, and in valid JSON a closing quote is not
    followed by a letter; the string it opens is followed by ``:``, so it is a key. The file's schema
    (inferred from every line) has no nested field of that name, so each such place is the top-level
    key. ``lines`` are the rows whose line writes the key, ``at`` where. There must be at most one per
    line (a repeated key is the parser's to resolve), one on every line where the table has a value
    (a key spelled with escapes is not found), and where the table has none the value found must be
    ``null``.
    """
    if any(name in _nested_names(t) for t in read.table.schema.types):
        return None
    key = re.compile(b'"' + re.escape(name.encode()) + rb'"[ \t\r\n]*:[ \t\r\n]*')  # a literal start: a fast scan
    buf = memoryview(read.data)
    found = []
    for m in key.finditer(buf):
        before = m.start() - 1
        while buf[before] in _SPACE:
            before -= 1
        if buf[before] in _OPENERS:
            found.append((m.start(), m.end()))
    if not found:
        return None
    at = np.fromiter((a for a, _ in found), dtype=np.int64, count=len(found))
    line = np.searchsorted(read.starts, at, side="right") - 1
    if (np.diff(line) <= 0).any():
        return None  # twice on one line
    values: list[Any] = [None] * len(col)
    valid = col.is_valid().to_numpy(zero_copy_only=False)
    if np.count_nonzero(valid) > len(found):
        return None  # a value on a line where the key is not written literally
    decode = json.JSONDecoder().raw_decode
    ends = read.ends.tolist()
    for (_, value_at), li in zip(found, line.tolist()):
        value = _decode_at(decode, buf, value_at, ends[li])
        if value is _UNREADABLE:
            return None
        if value is not None and not valid[li]:
            return None
        values[li] = value
    if any(v is None for v, ok in zip(values, valid.tolist()) if ok):
        return None  # a value the table has where no key was found
    return values, line, at


# ---------------------------------------------------------------------------------------------------
# gold sets


def _gold_schema(sample: list[dict[str, Any]]) -> pa.Schema | None:
    qkey = _first(QUERY_ID_KEYS, list(sample[0]))
    lkey = _first(RELEVANT_KEYS, list(sample[0]))
    if qkey is None or lkey is None:
        return None
    fields = []
    qtype = _id_type([o.get(qkey) for o in sample])
    if qtype is not None:
        fields.append(pa.field(qkey, qtype))
    items = [it for o in sample if isinstance(o.get(lkey), list) for it in o[lkey]]
    if items and all(isinstance(it, dict) for it in items):
        ikey, gkey = _first(ITEM_ID_KEYS, list(items[0])), _first(GRADE_KEYS, list(items[0]))
        sub = [pa.field("note", pa.string())] if any("note" in it for it in items) else []
        itype = _id_type([it.get(ikey) for it in items]) if ikey else None
        if itype is not None:
            sub.append(pa.field(ikey, itype))
        if gkey is not None:
            sub.append(pa.field(gkey, pa.float64()))
        fields.append(pa.field(lkey, pa.list_(pa.struct(sub))))
    elif items:
        itype = _id_type(items)
        if itype is not None:
            fields.append(pa.field(lkey, pa.list_(itype)))
    return pa.schema(fields) if fields else None


def read_gold_fast(path: str, *, min_bytes: int | None = None, why: list[str] | None = None) -> Gold | None:
    """A plain gold set (query id + judgements, nothing else), or None: for a small file, for any other
    field, or when the fast path cannot prove it reads it exactly as the validating parser does.
    ``why`` (a list) receives the reason of a large file's decline, in a few words."""
    return _fast(path, min_bytes, _gold_schema, _to_gold, why, _scan_gold)


def _to_gold(read: _File, path: str) -> Gold | None:
    import pyarrow.compute as pc

    from rankgate.model.ids import item_codes, segment_duplicates

    table = read.table
    names = table.schema.names
    qkey, lkey = _first(QUERY_ID_KEYS, names), _first(RELEVANT_KEYS, names)
    if qkey is None or lkey is None:
        return _no("it has no query id or judgement list")
    if any(n in RELEVANT_KEYS and n != lkey for n in names):
        return _no("its lines name their judgements by different keys")
    qcol = _ids(_one(table.column(qkey)))
    lists = _one(table.column(lkey))
    if qcol is None or not pa.types.is_list(lists.type) or len(pc.unique(qcol)) != len(qcol):
        return _no("a query id is missing, empty, repeated or of another type, or a judgement list is not a list")
    lengths = np_of(pc.list_value_length(lists), np.int64, fill=0)  # (null: no judgement, as the parser reads it)
    flat = lists.flatten()
    if flat.null_count:
        return None
    notes = None
    if pa.types.is_struct(flat.type):
        inner = [flat.type.field(i).name for i in range(flat.type.num_fields)]
        if ITEM_MARKERS.intersection(inner):
            return _no(_PRODUCER_ITEMS)
        ikey, gkey = _first(ITEM_ID_KEYS, inner), _first(GRADE_KEYS, inner)
        docs = _ids(pc.struct_field(flat, ikey)) if ikey else None
        if docs is None:
            return None
        if gkey is None:
            g = np.ones(len(flat), dtype=np.float64)
        else:
            gcol = flat.field(gkey)
            if gcol.null_count or not pa.types.is_floating(gcol.type):
                return None
            g = np_of(gcol, np.float64)
            if not np.array_equal(g, np.round(g)) or (np.abs(g) >= _MAX_EXACT).any():
                return None  # a non-integer or huge grade: reported with its line by the parser
        if "note" in inner:
            col = flat.field("note")
            if not (pa.types.is_string(col.type) or pa.types.is_null(col.type)):
                return None
            if col.null_count < len(col):
                notes = col.to_pylist()
    else:
        docs = _ids(flat)
        if docs is None:
            return None
        g = np.ones(len(flat), dtype=np.float64)
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    j_query = np.repeat(np.arange(len(qcol), dtype=np.int64), lengths)
    has_relevant = np.bincount(j_query[g >= 1], minlength=len(qcol)) > 0
    codes, _ = item_codes(docs, pa.array([], pa.string()))
    if segment_duplicates(codes, offsets).size:
        return _no("a query judges one item twice")
    extra = [n for n in names if n not in QUERY_ID_KEYS and n not in RELEVANT_KEYS]
    fields = _gold_fields(read, extra, has_relevant, lkey, path) if extra else {}
    if fields is None:
        return None
    if not extra and not has_relevant.all():
        return _no("a query lists no relevant item")  # the parser names it (or its no_answer)
    return Gold(
        query_ids=qcol.to_pylist(),
        j_query=j_query,
        j_doc=docs,
        j_grade=g.astype(np.int64),
        fields=fields,
        notes=notes,
        source=path,
    )


_ESCAPED_KEY = re.compile(rb'[{,][ \t\r\n]*"[^"\\\n]*\\.(?:[^"\\\n]|\\.)*"[ \t\r\n]*:')
"""A key written with an escape (or, harmlessly, text that looks like one inside a string)."""


def _gold_fields(read: _File, extra: list[str], has_relevant: np.ndarray, lkey: str,
                 path: str) -> dict[str, list[Any]] | None:
    """The gold set's per-query fields (``k``, ``tags``, ``must_not_retrieve``, ``no_answer``…) exactly
    as the validating parser builds them, or None.

    Each line's extra fields are decoded from its own bytes (:func:`_located`, which also tells where
    each key is written) and handed, in the line's key order, to the parser's own code
    (:func:`~.jsonl.gold_no_answer`, :func:`~.jsonl.gold_query_fields`); any error it raises is the
    parser's to report, with its line, so the fast path declines. A key the table has as null on a
    line where it is not written literally may still be present (spelled with escapes): when the file
    has any key written with an escape, the fast path declines."""
    from rankgate.io.jsonl import gold_no_answer, gold_query_fields

    n = read.table.num_rows
    per_line: list[list[tuple[int, str, Any]]] = [[] for _ in range(n)]
    sparse = False
    for name in extra:
        col = _one(read.table.column(name))
        found = _located(read, name, col)
        if found is None:
            return _no(f"its per-query field {name!r} could not be located on every line beyond doubt")
        values, lines, at = found
        sparse = sparse or len(lines) < n
        for li, pos in zip(lines.tolist(), at.tolist()):
            per_line[li].append((pos, name, values[li]))
    if sparse and _ESCAPED_KEY.search(memoryview(read.data)):
        return _no("a key is written with an escape")
    fields: dict[str, list[Any]] = {}

    def put(name: str, qi: int, value: Any) -> None:
        col = fields.get(name)
        if col is None:
            col = fields[name] = [None] * n
        col[qi] = value

    numbers = read.numbers.tolist() if read.numbers is not None else None
    relevant = has_relevant.tolist()
    try:
        for qi, found_here in enumerate(per_line):
            if not found_here:
                if not relevant[qi]:
                    return _no("a query lists no relevant item")  # the parser names it
                continue
            found_here.sort()
            obj = {name: value for _, name, value in found_here}
            line = numbers[qi] if numbers is not None else qi + 1
            no_answer = gold_no_answer(obj, relevant[qi], None, path, line)
            gold_query_fields(obj, qi, no_answer, put, path, line)
        if "turn" in fields:
            from rankgate.model.conversations import check_unique_turns

            check_unique_turns(fields.get("conversation_id") or [], fields["turn"], [""] * n, path)
    except InputError:
        return _no("a per-query field is not valid (the line-by-line reader names it)")
    return fields
