"""Item ids as integers: one pass over the strings, integer work afterwards.

Two ways to get codes, both exact (equal codes ⇔ equal strings):

* ids that are all a shared prefix plus digits, either all of one width (``doc_000123``) or
  canonical numbers without leading zeros (``d123456``, ``184``, ``msmarco_passage_7``), are parsed
  to that number — no hashing at all;
* anything else is dictionary-encoded (one hash pass over the run's ids).

Gold ids are then mapped into the run's code space; a gold id that cannot occur in the run gets -1.
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa

from rankgate._util.arrow import arrow_of, np_of

__all__ = ["item_codes", "item_codes_ordered", "segment_duplicates"]


def _numeric_prefix(arr: pa.Array) -> tuple[str, np.ndarray] | None:
    """(prefix, numbers) when every id is one shared prefix + a canonical decimal number, else None.

    Canonical means the number prints back to exactly the same text (no sign, no leading zeros, no
    spaces), so the mapping id <-> number is one-to-one.
    """
    import pyarrow.compute as pc

    if len(arr) == 0 or arr.null_count:
        return None
    first = arr[0].as_py()
    cut = len(first)
    while cut > 0 and "0" <= first[cut - 1] <= "9":
        cut -= 1
    prefix = first[:cut]
    if cut == len(first) or len(first) - cut > 18:
        return None
    if prefix and not pc.all(pc.starts_with(arr, prefix)).as_py():
        return None
    rest = pc.utf8_slice_codeunits(arr, len(prefix)) if prefix else arr
    try:
        numbers = pc.cast(rest, pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if numbers.null_count or not pc.all(pc.equal(pc.cast(numbers, pa.string()), rest)).as_py():
        return None
    values = np_of(numbers, np.int64)
    if values.size and values.min() < 0:
        return None
    return prefix, values


def _canonical_numbers(ids: pa.Array, prefix: str) -> np.ndarray:
    """The number of each id that is ``prefix`` + a canonical decimal number; -1 for any other id."""
    import pyarrow.compute as pc

    out = np.full(len(ids), -1, dtype=np.int64)
    if len(ids) == 0:
        return out
    shaped = pc.match_substring_regex(ids, "^" + re.escape(prefix) + r"(0|[1-9][0-9]{0,17})$")
    mask = np_of(shaped, fill=False)
    if mask.any():
        rest = ids.filter(arrow_of(mask))
        rest = pc.utf8_slice_codeunits(rest, len(prefix)) if prefix else rest
        out[mask] = np_of(pc.cast(rest, pa.int64()), np.int64)
    return out


def _fixed_width(arr: pa.Array, out: np.ndarray | None = None) -> tuple[bytes, int, np.ndarray] | None:
    """(prefix, width, numbers) when every id has the same length and is prefix + digits
    (zero-padded ids such as ``doc_000123``): then id <-> number is one-to-one. ``out``: an int64
    array of ``len(arr)`` to write the numbers into."""
    if len(arr) == 0 or arr.null_count or arr.type != pa.string():
        return None
    n = len(arr)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32)[arr.offset : arr.offset + n + 1]
    width = int(offsets[1] - offsets[0])
    if width == 0 or int(offsets[-1]) - int(offsets[0]) != n * width:
        return None
    from rankgate._native import kernels

    if kernels is None and not (np.diff(offsets) == width).all():
        return None  # (the kernel checks the widths as it parses)
    data = np.frombuffer(arr.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]].reshape(n, width)
    first = data[0]
    cut = width
    while cut > 0 and 48 <= first[cut - 1] <= 57:
        cut -= 1
    digits = width - cut
    if digits == 0 or digits > 18:
        return None
    value = np.empty(n, dtype=np.int64) if out is None else out
    if kernels is not None:
        if not kernels.fixed_width_numbers(data.reshape(-1), offsets, width, cut, value):
            return None
        return first[:cut].tobytes(), width, value
    if cut and not (data[:, :cut] == first[:cut]).all():
        return None
    value[:] = 0
    for j in range(cut, width):  # column by column: no n x width int64 temporary
        col = data[:, j]
        if col.min() < 48 or col.max() > 57:
            return None
        value *= 10
        value += col
        value -= 48
    return first[:cut].tobytes(), width, value


def _fixed_width_gold(ids: pa.Array, prefix: bytes, width: int) -> np.ndarray:
    """Numbers of the gold ids that have the run's fixed-width shape; -1 for any other id."""
    whole = _fixed_width(ids)
    if whole is not None and whole[:2] == (prefix, width):  # usually: every gold id has the run's shape
        return whole[2]
    out = np.full(len(ids), -1, dtype=np.int64)
    if len(ids) == 0:
        return out
    import pyarrow.compute as pc

    lengths = np_of(pc.binary_length(ids), np.int64, fill=-1)
    mask = arrow_of(lengths == width)
    mask = pc.and_(mask, pc.starts_with(ids, prefix.decode()))
    idx = np.flatnonzero(np_of(mask, fill=False))
    if idx.size == 0:
        return out
    sub = ids.take(arrow_of(idx))
    found = _fixed_width(sub)
    if found is not None and found[0] == prefix:
        out[idx] = found[2]
        return out
    for i, text in zip(idx.tolist(), sub.to_pylist()):  # some candidates are not all digits
        tail = text.encode()[len(prefix):]
        if tail.isascii() and tail.isdigit():
            out[i] = int(tail)
    return out


def _fixed_width_chunked(ids: pa.ChunkedArray) -> tuple[bytes, int, np.ndarray] | None:
    """:func:`_fixed_width` over the chunks of a column, when all share one prefix and width."""
    shape: tuple[bytes, int] | None = None
    numbers = np.empty(len(ids), dtype=np.int64)
    at = 0
    for chunk in ids.chunks:
        if len(chunk) == 0:
            continue
        found = _fixed_width(chunk, out=numbers[at : at + len(chunk)])  # each chunk into its slice
        if found is None or (shape is not None and found[:2] != shape):
            return None
        shape = found[:2]
        at += len(chunk)
    if shape is None:
        return None
    return shape[0], shape[1], numbers


def item_codes(run_ids: pa.Array | pa.ChunkedArray, gold_ids: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(run codes, gold codes): int64, equal ⇔ same id; gold ids absent from the run's space get -1.

    ``run_ids`` may be chunked (as a CSV reader returns it): fixed-width ids are parsed chunk by
    chunk, without first copying the column into one array."""
    run_codes, gold_codes, _ = item_codes_ordered(run_ids, gold_ids)
    return run_codes, gold_codes


def item_codes_ordered(run_ids: pa.Array | pa.ChunkedArray, gold_ids: pa.Array) -> tuple[np.ndarray, np.ndarray, bool]:
    """:func:`item_codes`, and whether the run codes order as the ids do byte-wise (true of
    fixed-width ids: one prefix, digits of one width), so that they can stand in for the ids when
    ranking ties are broken. (``pyarrow.compute`` is imported only when the ids are not all of one
    shape: the import is a tenth of a small run's start-up.)"""
    if isinstance(run_ids, pa.ChunkedArray):
        fixed = _fixed_width_chunked(run_ids)
        if fixed is not None:
            prefix, width, run_codes = fixed
            return run_codes, _fixed_width_gold(gold_ids, prefix, width), True
        run_ids = run_ids.combine_chunks()
    fixed = _fixed_width(run_ids)
    if fixed is not None:
        prefix, width, run_codes = fixed
        return run_codes, _fixed_width_gold(gold_ids, prefix, width), True
    numeric = _numeric_prefix(run_ids)
    if numeric is not None:
        prefix_text, run_codes = numeric
        return run_codes, _canonical_numbers(gold_ids, prefix_text), False
    import pyarrow.compute as pc

    enc = pc.dictionary_encode(run_ids)
    run_codes = np_of(enc.indices, np.int64)
    found = pc.index_in(gold_ids, value_set=enc.dictionary)
    return run_codes, np_of(found, np.int64, fill=-1), False


def segment_duplicates(codes: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Rows (positions in ``codes``) that repeat an earlier code of the same segment.

    Segments are ``offsets[i]:offsets[i+1]``. Usually there is none: the compiled kernels say so in
    one pass (a bit per code, or a tiny hash per segment). Else short, similar-length segments are sorted row-wise in one
    padded 2-D array; otherwise one sort of (segment, code) keys.
    """
    n = codes.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    from rankgate._native import kernels

    if kernels is not None and kernels.segments_distinct(np.ascontiguousarray(codes, dtype=np.int64),
                                                         np.ascontiguousarray(offsets, dtype=np.int64)):
        return np.zeros(0, dtype=np.int64)
    lengths = np.diff(offsets)
    width = int(lengths.max())
    nseg = lengths.size
    rows: np.ndarray | None = None
    if width * nseg <= 2 * n + 1024:  # codes are >= 0, so negative padding never collides
        dtype = np.int32 if codes.max() < 2**31 - 1 else np.int64
        if (lengths == width).all():  # every segment equally long: a plain reshape, no scatter
            grid = codes.astype(dtype).reshape(nseg, width)
        else:
            pos = np.arange(n, dtype=np.int64) - np.repeat(offsets[:-1], lengths)
            seg = np.repeat(np.arange(nseg, dtype=np.int64), lengths)
            # Padding gets distinct negative values so it never looks like a repeat.
            grid = np.empty((nseg, width), dtype=dtype)
            grid[:] = -(np.arange(width, dtype=dtype) + 1)
            grid[seg, pos] = codes
        grid.sort(axis=1)
        bad = np.flatnonzero((grid[:, 1:] == grid[:, :-1]).any(axis=1))
        if bad.size == 0:
            return np.zeros(0, dtype=np.int64)
        # Only the segments with a repeat need the exact pass below.
        rows = np.concatenate([np.arange(offsets[i], offsets[i + 1]) for i in bad.tolist()])
    if rows is None:
        rows = np.arange(n, dtype=np.int64)
    seg = np.repeat(np.arange(nseg, dtype=np.int64), lengths)[rows]
    sub = codes[rows]
    order = np.lexsort((rows, sub, seg))
    same = (sub[order][1:] == sub[order][:-1]) & (seg[order][1:] == seg[order][:-1])
    return np.sort(rows[order[1:][same]])
