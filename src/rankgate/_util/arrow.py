"""numpy <-> pyarrow without pandas.

pyarrow's own conversions (``np.asarray(array)``, ``pa.array(ndarray)``, ``to_numpy``) import pandas
when it is installed (0.2–0.35 s) to check for pandas objects. These helpers build zero-copy views
from the buffers instead.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

_NUMPY = {
    pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64,
    pa.uint8(): np.uint8, pa.uint16(): np.uint16, pa.uint32(): np.uint32, pa.uint64(): np.uint64,
    pa.float32(): np.float32, pa.float64(): np.float64,
}


def np_of(arr: pa.Array | pa.ChunkedArray, dtype: type | None = None, fill: object = None) -> np.ndarray:
    """A numpy array of a primitive or boolean arrow array (a view where possible); nulls become
    ``fill`` (required when there are nulls)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    n, off = len(arr), arr.offset
    if arr.null_count:
        if fill is None:
            raise ValueError("np_of: the array has nulls; pass fill=")
        valid = np.unpackbits(np.frombuffer(arr.buffers()[0], dtype=np.uint8), bitorder="little")[off : off + n]
        out = np_of(_without_validity(arr), dtype).copy()
        out[valid == 0] = fill
        return out
    if pa.types.is_boolean(arr.type):
        bits = np.frombuffer(arr.buffers()[1], dtype=np.uint8)
        out = np.unpackbits(bits, bitorder="little")[off : off + n].astype(bool)
    else:
        kind = _NUMPY.get(arr.type)
        if kind is None:
            raise TypeError(f"np_of: unsupported type {arr.type}")
        out = np.frombuffer(arr.buffers()[1], dtype=kind, count=n, offset=off * np.dtype(kind).itemsize)
    return out if dtype is None else out.astype(dtype, copy=False)


def _without_validity(arr: pa.Array) -> pa.Array:
    return pa.Array.from_buffers(arr.type, len(arr), [None, *arr.buffers()[1:]], offset=arr.offset)


def arrow_of(values: np.ndarray) -> pa.Array:
    """A zero-copy arrow array over a 1-D numeric or boolean numpy array (no nulls)."""
    values = np.ascontiguousarray(values)
    if values.dtype == np.bool_:
        bits = np.packbits(values, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])
    kind = pa.from_numpy_dtype(values.dtype)
    return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(values)])


def none_contains(column: pa.Array | pa.ChunkedArray, text: str) -> bool:
    """True only when no string of ``column`` contains ``text`` (a non-empty text): its bytes are
    searched in each chunk's data buffer, the strings back to back. A match that spans two strings
    (or lies in a null's bytes) gives False, as does a column not of strings: the caller then takes
    each string as it is."""
    needle = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    if needle.size == 0:
        return False
    for chunk in column.chunks if isinstance(column, pa.ChunkedArray) else [column]:
        if chunk.type not in (pa.string(), pa.large_string()):
            return False
        if len(chunk) == 0:
            continue
        kind = np.int32 if chunk.type == pa.string() else np.int64
        bounds = np.frombuffer(chunk.buffers()[1], dtype=kind)[[chunk.offset, chunk.offset + len(chunk)]]
        data = chunk.buffers()[2]
        if data is None:
            continue
        hay = np.frombuffer(data, dtype=np.uint8)[int(bounds[0]) : int(bounds[1])]
        if hay.size < needle.size:
            continue  # (too short to hold it; a negative window end would count from the far end)
        at = np.flatnonzero(hay[: hay.size - needle.size + 1] == needle[0])  # candidates, then each next byte
        for j in range(1, needle.size):
            at = at[hay[at + j] == needle[j]]
        if at.size:
            return False
    return True


def strings_of(values: list[str]) -> pa.Array:
    """An arrow string array from a list of Python strings (no nulls), built from its buffers."""
    encoded = [v.encode("utf-8") for v in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=offsets[1:])
    data = b"".join(encoded)
    if offsets[-1] < 2**31:
        return pa.Array.from_buffers(pa.string(), len(encoded), [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)])
    return pa.Array.from_buffers(pa.large_string(), len(encoded), [None, pa.py_buffer(offsets), pa.py_buffer(data)]).cast(pa.string())


def take_rows(column: pa.Array | pa.ChunkedArray, rows: np.ndarray) -> pa.Array:
    """``column.take(rows)`` as one array. A chunked column (a file read in pieces) is taken chunk by
    chunk: pyarrow's take on a chunked array first joins its chunks, a copy of the whole column, to
    take a few rows of it."""
    rows = np.asarray(rows, dtype=np.int64)
    if not isinstance(column, pa.ChunkedArray):
        return column.take(arrow_of(rows))
    if column.num_chunks <= 1:
        return (column.chunk(0) if column.num_chunks else pa.array([], type=column.type)).take(arrow_of(rows))
    bounds = np.cumsum([0] + [len(c) for c in column.chunks])
    where = np.searchsorted(bounds, rows, side="right") - 1
    order = np.argsort(where, kind="stable")  # (rows of one chunk together, in their order)
    parts = []
    for c in np.unique(where).tolist():
        sel = order[np.searchsorted(where[order], c):np.searchsorted(where[order], c, side="right")]
        parts.append((sel, column.chunk(c).take(arrow_of(rows[sel] - int(bounds[c])))))
    taken = pa.concat_arrays([p for _, p in parts]) if parts else pa.array([], type=column.type)
    placed = np.concatenate([sel for sel, _ in parts]) if parts else np.zeros(0, np.int64)
    if bool((placed[1:] > placed[:-1]).all()):  # (rows ascending, as they usually are)
        return taken
    return taken.take(arrow_of(np.argsort(placed, kind="stable")))


def code_counts(codes: np.ndarray, n: int, *, part: int = 1 << 22) -> np.ndarray:
    """``np.bincount(codes, minlength=n)`` (int64 counts) without a whole int64 copy of int32 codes:
    bincount converts its input to machine integers, 80 MB for 10M rows; here a part at a time."""
    counts = np.zeros(n, dtype=np.int64)
    for lo in range(0, codes.size, part):
        chunk = np.bincount(codes[lo:lo + part], minlength=n)
        if chunk.size > counts.size:
            counts = np.concatenate((counts, np.zeros(chunk.size - counts.size, dtype=np.int64)))
        counts[:chunk.size] += chunk
    return counts
