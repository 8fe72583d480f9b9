"""TREC qrels and run files, and BEIR ``qrels/*.tsv`` (the one BEIR qrels reader: ``evaluate --gold``
and ``retrieve --beir`` both read through :func:`read_beir_qrels` and :func:`beir_qrels_file`).

Run lines are ``qid Q0 docno rank score tag``, exactly six fields (the rank column is not used, as
trec_eval does); qrels lines are ``qid iter docno grade``, exactly four. A line with another number of
fields is an input error naming the line and the count: never the first six fields of a longer line,
which would lose the row of a second line run into it (``cat`` of a file that lacks its last newline)
or misread an id holding a space. (``evaluate --trec`` takes trec_eval's own rule for run lines, text
after the sixth field ignored: :func:`trec_eval_lines`.) Fields are separated by ASCII whitespace
(space, tab, vertical tab, form feed: C's ``isspace``, as trec_eval reads them), so a no-break space or
a control character is part of an id; a line ends at ``\\n``, ``\\r\\n`` or a lone ``\\r``; a line whose
first field starts with ``#`` is a comment. Three readers, tried in turn, each giving the same result
on the files it accepts, or declining the file:

* the compiled line reader (``_native/c/lines.c``) for regular, uncompressed files (a pipe is copied to a
  regular file first, see :func:`~rankgate.io.source.local_copy`) (one delimiter, exactly
  the expected columns, printable ASCII ids, no byte >= 0x80 in any field, plain decimal numbers);
* pyarrow's multi-threaded CSV reader for other regular files (``.gz``, non-ASCII ids, ...), every
  column read and checked (UTF-8, no empty field, no whitespace inside one, no comment line);
* the line-by-line path for anything else: it accepts runs of whitespace and ``#`` comment lines,
  and names the bad line of a bad file (every error message comes from it or says the same).
"""

from __future__ import annotations

import itertools
import math
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np
import pyarrow as pa

from rankgate.errors import FileChangedError, InputError
from rankgate._util.arrow import arrow_of, np_of, strings_of
from rankgate.io.jsonl import NON_FINITE_HINT
from rankgate.model.gold_run import Gold, Run
from rankgate.io.source import Pread, changed_error, gzip_error, is_gzip, read_hook, text_lines


def _physical_lines(path: str) -> Iterator[tuple[int, str]]:
    """(line number, line without its end) of a text file whose lines end at ``\\n``, ``\\r\\n`` or a
    lone ``\\r``, as every reader of this module (and the compiled one, and pyarrow's) splits them: a
    file written with CR-only line ends reads line by line, never as one line. Numbered by those ends
    (a byte that is not UTF-8 is named by :func:`~rankgate.io.source.text_lines` on its ``\\n`` line)."""
    extra = 0  # lone \r met so far: each ends one more line
    for lineno, line in text_lines(path):
        if line.endswith("\n"):
            line = line[:-1]
        start = 0
        while (cut := line.find("\r", start)) >= 0:  # (one at a time: a CR-only file is one "\n" line)
            yield lineno + extra, line[start:cut]
            extra += 1
            start = cut + 1
        yield lineno + extra, line[start:] if start else line


_FIELD = re.compile(r"[^ \t\x0b\x0c]+")
"""A field of a TREC line: what lies between ASCII whitespace (space, tab, vertical tab, form feed; a
line's end is never inside a line). C's ``isspace``, as trec_eval reads lines: a no-break space, U+2028
or a control character such as 0x1c is part of a field (``str.split`` would split at them)."""
_NOT_SPLIT = re.compile(r"[\x1c-\x1f]")  # (ASCII that str.split splits at and trec_eval does not)


def _fields(line: str) -> list[str]:
    """The fields of a line (:data:`_FIELD`); ``str.split`` where it gives the same, which is most lines."""
    if line.isascii() and (line.isprintable() or not _NOT_SPLIT.search(line)):
        return line.split()
    return _FIELD.findall(line)


def _first_data_line(path: str) -> str | None:
    for _, line in _physical_lines(path):
        if _fields(line):
            return line
    return None


def _first_line_and_delimiter(path: str) -> tuple[str, str] | None:
    """The first non-blank line and the delimiter of a regular file (a tab if that line has one, else
    a space); None when there is no such line or it is a comment (no fast reader takes the file)."""
    first = _first_data_line(path)
    if first is None or _fields(first)[0].startswith("#"):
        return None
    return first, "\t" if "\t" in first else " "


def _fast_table(path: str, names: list[str], types: dict[str, Any], include: list[str]) -> pa.Table | None:
    """Read a regular, single-delimiter file with pyarrow; None when the file is not that regular."""
    shape = _first_line_and_delimiter(path)
    if shape is None:
        return None
    first, delim = shape
    parts = first.rstrip("\r\n").split(delim)
    if len(parts) != len(names) or any(p == "" or p != p.strip() for p in parts):
        return None
    import pyarrow.csv as pacsv

    # Read, not memory-mapped: a map of a file another program cuts short meanwhile ends the process
    # (the loader checks afterwards that the file did not change). gzip is recognised by content, as
    # every reader does (a file named .gz that is not gzip has been refused by text_lines above).
    compressed = is_gzip(path)
    source = pa.input_stream(path, compression="gzip") if compressed else pa.OSFile(path)
    try:
        table = pacsv.read_csv(
            source,
            read_options=pacsv.ReadOptions(column_names=names, block_size=1 << 26),
            parse_options=pacsv.ParseOptions(delimiter=delim, quote_char=False, escape_char=False, ignore_empty_lines=True),
            convert_options=pacsv.ConvertOptions(column_types=types, include_columns=include, strings_can_be_null=False),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError):
        return None  # irregular somewhere: the line-by-line path finds and names the bad line
    except OSError as exc:
        if compressed:  # truncated or damaged gzip data: never a shorter table
            raise gzip_error(path, exc) from None
        return None
    finally:
        source.close()
    for name in include:
        if table.column(name).null_count:
            return None
    if not all(_plain_strings(table.column(i), first=i == 0) for i in range(table.num_columns)):
        return None
    return table


_SPACES = np.array([0x09, 0x0B, 0x0C, 0x20], dtype=np.uint8)  # (the separators of :data:`_FIELD`)


def _plain_strings(column: pa.ChunkedArray, *, first: bool) -> bool:
    """Whether a text column read by pyarrow (split at one delimiter only) holds what the line-by-line
    reader reads: no empty value, none with whitespace inside (a tab in a space-separated file, a space
    in a tab-separated one, two delimiters in a row) and, in the first column, none starting with ``#``
    (a comment line, which is no row). Numbers are checked by their conversion; a dictionary-encoded
    column by its dictionaries."""
    dictionary = pa.types.is_dictionary(column.type)
    kind = column.type.value_type if dictionary else column.type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        return True
    width = np.dtype(np.int64 if pa.types.is_large_string(kind) else np.int32)
    for chunk in column.chunks:
        values = chunk.dictionary if dictionary else chunk
        if len(values) == 0:
            continue
        offsets = np.frombuffer(values.buffers()[1], dtype=width, count=len(values) + 1,
                                offset=values.offset * width.itemsize)
        if bool((offsets[1:] == offsets[:-1]).any()):
            return False
        data = np.frombuffer(values.buffers()[2], dtype=np.uint8)[offsets[0]:offsets[-1]]
        if bool((data <= 0x20).any()) and bool(np.isin(data, _SPACES).any()):
            return False
        if first and bool((data[offsets[:-1] - offsets[0]] == ord("#")).any()):
            return False
    return True


_PIECE = 1 << 30
"""Bytes per call of the compiled reader at most: the ids of one piece fit int32 offsets."""


def _opened(path: str, *, populate_below: int) -> tuple[Pread, Any, bytes] | None:
    """(the file opened for reads by offset, the file mapped for the compiled reader, its column
    delimiter); None when the reader is not built, the file is compressed, empty (or a pipe), starts
    with a comment, or cannot be opened or mapped (the other readers then read it, or say why they
    cannot). A file of fewer than ``populate_below`` bytes has every page mapped in one call where the
    system offers it (a larger one is read in parts whose pages are let go). Only the compiled reader
    touches the map, under its guard (see :meth:`~rankgate.io.source.Pread.mapped`)."""
    from rankgate._native import reader

    if reader is None or path.endswith(".gz") or is_gzip(path):
        return None
    shape = _first_line_and_delimiter(path)
    if shape is None:
        return None
    try:
        f = Pread(path)
    except OSError:
        return None
    mm = None if f.size == 0 or not f.regular else f.mapped(populate=f.size < populate_below)
    if mm is None:  # (also empty files, pipes and other files without a size)
        f.close()
        return None
    return f, mm, shape[1].encode()


def _mapped_lines(
    path: str, ncols: int, value_col: int, value_kind: int
) -> tuple[list[str], np.ndarray, np.ndarray, pa.Array | pa.ChunkedArray] | None:
    """(query ids in order of first appearance, int32 query code of each row, values, item ids) by
    the compiled line reader; None when it is not built, the file is compressed, empty or starts with
    a comment, or any line is not regular (the other readers then take the file and name a bad line).

    ``value_kind`` 0 reads column ``value_col`` as float64, 1 as int64. Files over 8 MB are read in
    pieces cut at line ends, two threads at a time (pieces of :data:`_RELEASE_PIECE` from
    :data:`_RELEASE_FROM` bytes, so that memory holds a few pieces of the file, not all of it); each
    piece's ids are one chunk of the result. A file changed meanwhile is an InputError.
    """
    import mmap

    opened = _opened(path, populate_below=_RELEASE_FROM)
    if opened is None:
        return None
    f, mm, delim = opened
    try:
        size = f.size
        release = size >= _RELEASE_FROM and hasattr(mmap, "MADV_DONTNEED")
        pieces = max(-(-size // _PIECE), 2 if size > 1 << 23 else 1)
        if release:  # pieces whose pages are let go once read: the file is not held in memory whole
            pieces = max(pieces, -(-size // _RELEASE_PIECE))
        got = _read_span(f, mm, 0, size, pieces, ncols, value_col, value_kind, delim, release=release)
        f.check()
        return got
    finally:
        mm.close()
        f.close()


_RELEASE_FROM = 1 << 27
"""Bytes from which a file read whole is read in pieces of :data:`_RELEASE_PIECE`."""
_RELEASE_PIECE = 1 << 25
_WINDOW = 1 << 16
"""Bytes read at a time when looking for a line's end or a query's change."""


def _line_end(f: Pread, at: int, end: int) -> int:
    """The offset just past the first ``\\n`` at or after ``at`` (before ``end``), or ``end``."""
    window = _WINDOW
    while at < end:
        chunk = f.read(at, min(window, end - at))
        k = chunk.find(b"\n")
        if k >= 0:
            return at + k + 1
        at += len(chunk)
        window *= 2
    return end


def _read_span(
    f: Pread, mm: Any, lo_byte: int, hi_byte: int, pieces: int, ncols: int, value_col: int, value_kind: int,
    delim: bytes, *, release: bool = False,
) -> tuple[list[str], np.ndarray, np.ndarray, pa.Array | pa.ChunkedArray] | None:
    """:func:`_mapped_lines` on the bytes ``[lo_byte, hi_byte)`` of the file ``f`` mapped as ``mm``
    (which start a line and end one, or the file), read in ``pieces`` pieces cut at line ends (found
    by reads of ``f``: only the compiled reader touches the map, under its guard), two threads at a
    time. ``release``: each piece's pages are let go once it is counted and once it is read (they come
    back from the page cache when read again), so that memory holds about two pieces of the file.
    A piece the compiled reader finds cut short (SIGBUS) is a :class:`FileChangedError`."""
    from rankgate._native import reader

    assert reader is not None
    cuts = [lo_byte]
    for i in range(1, pieces):
        cuts.append(_line_end(f, max(cuts[-1], lo_byte + (hi_byte - lo_byte) * i // pieces), hi_byte))
    cuts.append(hi_byte)
    spans = [(a, b) for a, b in itertools.pairwise(cuts) if b > a]
    if not spans:
        return None

    def run_all(fn: Callable[[int], Any]) -> list[Any]:
        try:
            if len(spans) == 1:
                return [fn(0)]
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=2) as pool:
                return list(pool.map(fn, range(len(spans))))
        except reader.FileCut:
            raise _cut(f) from None

    # Rows per piece at most: its lines (a piece other than the last ends with a newline). All
    # pieces write into one array each for codes and values, so nothing is copied afterwards.
    def let_go(i: int) -> None:
        if release:
            import mmap

            a, b = spans[i]
            start = a - a % mmap.PAGESIZE
            mm.madvise(mmap.MADV_DONTNEED, start, b - start)

    def count(i: int) -> int:
        n = reader.count_lines(mm, *spans[i])
        let_go(i)
        return n

    if len(spans) == 1:
        # One piece: no count, its rows are at most one per 2 * ncols bytes (ncols non-empty fields,
        # each followed by a separator or the line's end). The arrays are that long, but only the
        # pages the rows are written to are ever taken from the system.
        bounds = [(hi_byte - lo_byte) // (2 * ncols) + 1]
    else:
        bounds = run_all(count)
        bounds[-1] += 1  # the last line may have no newline
    starts = np.concatenate(([0], np.cumsum(bounds))).tolist()
    codes = np.empty(starts[-1], dtype=np.int32)
    values = np.empty(starts[-1], dtype=np.float64 if value_kind == 0 else np.int64)

    def read(i: int) -> tuple[int, list[str], pa.Array] | None:
        a, b = spans[i]
        lo, hi = starts[i], starts[i + 1]
        offsets = np.empty(hi - lo + 1, dtype=np.int32)
        data = np.empty(b - a + 16, dtype=np.uint8)  # (room for 16-byte copies)
        got = reader.read_lines(mm, a, b, ncols, value_col, value_kind, delim, codes[lo:hi], values[lo:hi], offsets, data)
        let_go(i)
        read_hook(f.path, a, b - a)
        if got is None:
            return None
        n, nbytes, qids = got
        ids = pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets[: n + 1]), pa.py_buffer(data[:nbytes])])
        return n, qids, ids

    got = run_all(read)
    parts = [part for part in got if part is not None]
    if len(parts) < len(got):
        return None
    rows = [part[0] for part in parts]
    if len(parts) == 1:
        return parts[0][1], codes[: rows[0]], values[: rows[0]], parts[0][2]
    qids = _merge_query_codes([part[1] for part in parts], codes, starts, rows)
    if all(n == bound for n, bound in zip(rows[:-1], bounds[:-1])):  # no blank lines: no gaps
        codes, values = codes[: starts[-2] + rows[-1]], values[: starts[-2] + rows[-1]]
    else:
        keep = [slice(lo, lo + n) for lo, n in zip(starts, rows)]
        codes = np.concatenate([codes[k] for k in keep])
        values = np.concatenate([values[k] for k in keep])
    return qids, codes, values, pa.chunked_array([part[2] for part in parts], type=pa.string())


def _cut(f: Pread) -> FileChangedError:
    """The error for a file the compiled reader found cut short while it was mapped."""
    try:
        f.check()
    except FileChangedError as exc:
        return exc
    return changed_error(f.path, f"{f.size:,} bytes when opened, fewer while it was read")


STREAM_BLOCK_BYTES = 1 << 26
"""Bytes of a TREC run read at once when it is read block by block (whole queries each)."""
_CUT_LINES = 1 << 20
"""Lines scanned at most for a change of query id after a block's nominal end (else no blocks)."""


def trec_run_blocks(path: str, block_bytes: int = STREAM_BLOCK_BYTES) -> Iterator[Run | None] | None:
    """The rows of a TREC run file as a :class:`Run` per block of about ``block_bytes``, each block
    cut where the query id changes from one line to the next, so that a file grouped by query gives
    each query's rows in one block. None when the compiled reader cannot take the file (compressed,
    empty, a comment first) or a query runs on past the scan limit; the iterator yields None when a
    block is not regular (the caller then reads the file whole, as :func:`read_trec_run`, whose
    readers name a bad line). Whether the blocks share queries (a file not grouped by query) is for
    the caller to check. The pages of a block read are let go, so memory holds one block at a time; a
    file changed meanwhile is a FileChangedError (at the block that finds it, or at the end)."""
    import mmap

    if not hasattr(mmap, "MADV_DONTNEED"):  # (pages are let go block by block)
        return None
    opened = _opened(path, populate_below=0)
    if opened is None:
        return None
    f, mm, delim = opened
    try:
        size = f.size
        cuts: list[int] | None = [0] if _grouped_head(f, delim) else None  # (shuffled: read whole at once)
        while cuts is not None and cuts[-1] < size:
            at = _query_cut(f, max(cuts[-1], cuts[-1] + block_bytes - 1), size, delim)
            if at < 0:  # (a query longer than the scan limit: read whole)
                cuts = None
            else:
                cuts.append(at)
    except BaseException:
        mm.close()
        f.close()
        raise
    if cuts is None:
        mm.close()
        f.close()
        return None
    return _blocks(f, mm, path, cuts, delim)


_HEAD_BYTES = 1 << 20


def _grouped_head(f: Pread, delim: bytes) -> bool:
    """Whether the file's first MiB of lines is grouped by query (no query id comes back after
    another one): a cheap look that spares a file in random order the read of its first block."""
    head = f.read(0, _HEAD_BYTES)
    lines = head.split(b"\n")[:-1] if f.size > _HEAD_BYTES else head.split(b"\n")
    seen: set[bytes] = set()
    last = None
    for line in lines:
        q = line.split(delim, 1)[0].strip()
        if not q or q == last:
            continue
        if q in seen:
            return False
        seen.add(q)
        last = q
    return True


def _query_cut(f: Pread, at: int, size: int, delim: bytes) -> int:
    """Start of the first line after the one holding byte ``at`` whose query id differs from the
    line before it (blank lines skipped), or ``size``; -1 after :data:`_CUT_LINES` lines without one.
    The lines are read a window at a time."""
    if at >= size:
        return size
    # The line holding byte ``at``: from the newline before it (looked for backwards) to its end.
    back = _WINDOW
    while True:
        lo = max(0, at - back)
        k = f.read(lo, at - lo).rfind(b"\n")
        if k >= 0 or lo == 0:
            line_start = lo + k + 1
            break
        back *= 2
    window = _WINDOW
    pos, prev, lines = line_start, None, -1  # (the line holding ``at`` sets ``prev`` and is not counted)
    while pos < size:
        chunk = f.read(pos, min(window, size - pos))
        last_nl = chunk.rfind(b"\n")
        if last_nl < 0 and pos + len(chunk) < size:  # a line longer than the window
            window *= 2
            continue
        body = chunk if pos + len(chunk) >= size else chunk[: last_nl + 1]
        start = 0
        while start < len(body):
            end = body.find(b"\n", start)
            line_end = len(body) if end < 0 else end
            q = _query_of(body, start, line_end, delim)
            if lines >= 0 and q and prev and q != prev:
                return pos + start
            prev = q or prev
            lines += 1
            if lines >= _CUT_LINES:
                return -1
            start = line_end + 1
        pos += len(body)
    return size


def _query_of(buf: bytes, start: int, end: int, delim: bytes) -> bytes:
    cut = buf.find(delim, start, end)
    return buf[start : end if cut < 0 else cut].strip()


def _blocks(f: Pread, mm: Any, path: str, cuts: list[int], delim: bytes) -> Iterator[Run | None]:
    """The blocks between ``cuts``; each next block is read on a thread while the caller scores the
    one before (the first on two threads, when it is large enough: nothing else is going on yet).
    After the last block the file is checked to be the one opened."""
    import mmap
    from contextlib import closing

    from rankgate.io.source import read_ahead

    page = mmap.PAGESIZE
    spans = list(itertools.pairwise(cuts))

    def read(i: int) -> tuple[list[str], np.ndarray, np.ndarray, pa.Array | pa.ChunkedArray] | None:
        a, b = spans[i]
        got = _read_span(f, mm, a, b, 2 if i == 0 and b - a > 1 << 23 else 1, 6, 4, 0, delim)
        mm.madvise(mmap.MADV_DONTNEED, a - a % page, b - (a - a % page))
        return got

    def good(got: Any) -> bool:  # regular, finite and grouped by query: else the file is read whole
        return got is not None and bool(np.isfinite(got[2]).all()) and bool((got[1][1:] >= got[1][:-1]).all())

    try:
        with closing(read_ahead(len(spans), read, good)) as parts:
            for got, ok in parts:
                if not ok:
                    yield None
                    return
                qids, codes, scores, ids = got
                if len(codes):
                    yield Run(query_ids=qids, r_query=codes, r_doc=ids, r_score=scores, source=path, ties="id")
        f.check()
    finally:
        mm.close()
        f.close()


def _merge_query_codes(piece_ids: list[list[str]], codes: np.ndarray, starts: list[int], rows: list[int]) -> list[str]:
    """The file's query ids in order of first appearance; each later piece's codes (``codes[starts[i]:
    starts[i] + rows[i]]``, numbered by that piece's own list) rewritten in place to index it."""
    qids = list(piece_ids[0])
    index = {q: i for i, q in enumerate(qids)}
    for i in range(1, len(piece_ids)):
        more = piece_ids[i]
        # A grouped file shares at most the query cut at a piece boundary; new ids take the next
        # codes in their order of first appearance.
        seen = [(j, index[q]) for j, q in enumerate(more) if q in index]
        fresh = np.ones(len(more), dtype=bool)
        remap = np.empty(len(more), dtype=np.int32)
        for j, code in seen:
            fresh[j] = False
            remap[j] = code
        remap[fresh] = np.arange(len(qids), len(qids) + len(more) - len(seen), dtype=np.int32)
        new = [q for q, f in zip(more, fresh.tolist()) if f] if seen else more
        index.update(zip(new, range(len(qids), len(qids) + len(new))))
        qids.extend(new)
        piece = codes[starts[i] : starts[i] + rows[i]]
        if remap.size and bool((np.diff(remap) == 1).all()):  # (grouped: the codes only move up) one add
            piece += remap[0]
        else:
            piece[:] = remap[piece]
    return qids


def _lines(path: str) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of each line that is neither blank nor a comment (first field ``#...``)."""
    for lineno, line in _physical_lines(path):
        parts = _fields(line)
        if not parts or parts[0].startswith("#"):
            continue
        yield lineno, parts


def _field_count_hint(n: int, shape: str, other: str) -> str:
    """What to do about a line of ``n`` fields where a line is ``shape`` (``other``: the file it may be)."""
    k = shape.count(" ") + 1
    if other:
        return f"a line is '{shape}'; is this {other}?"
    if n >= 2 * k - 1:  # (a tag run into the next line's query id: 2k - 1)
        return f"a line is '{shape}'; were two lines run together, as by cat of a file that lacks its last newline?"
    return f"a line is '{shape}'" + (" and nothing more; an id holds no whitespace" if n > k else "")


def _codes(column: pa.ChunkedArray | pa.Array) -> tuple[list[str], np.ndarray]:
    """(distinct values in order of first appearance, code of each row)."""
    import pyarrow.compute as pc

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    n = len(column)
    if n > 1:
        # Files are usually grouped by query: find the blocks with one comparison of neighbours.
        change = np_of(pc.not_equal(column.slice(1), column.slice(0, n - 1)), fill=True)
        starts = np.concatenate(([0], np.flatnonzero(change) + 1))
        heads = column.take(arrow_of(starts)).to_pylist() if starts.size * 4 <= n else []  # else: unsorted
        if heads and len(set(heads)) == len(heads):  # each value in one block: the blocks are the codes
            return heads, np.repeat(np.arange(starts.size, dtype=np.int64), np.diff(np.append(starts, n)))
    enc = pc.dictionary_encode(column)
    return enc.dictionary.to_pylist(), np_of(enc.indices, np.int64)


def _combine(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def _dictionary_codes(column: pa.ChunkedArray) -> tuple[list[str], np.ndarray]:
    """(distinct values in order of first appearance, int32 code of each row) of a column the CSV
    reader dictionary-encoded: each block has its own dictionary; unifying them keeps the first
    block's order and appends what later blocks add, which is the order of first appearance."""
    column = column.unify_dictionaries()
    if column.num_chunks == 0:
        return [], np.zeros(0, dtype=np.int32)
    codes = np.concatenate([np_of(chunk.indices, np.int32) for chunk in column.chunks])
    return column.chunk(0).dictionary.to_pylist(), codes


_TREC_EVAL_LINES: ContextVar[bool] = ContextVar("rankgate_trec_eval_lines", default=False)
_ROW_FIELDS = 11
"""Fields from which a run line holds a second line's (a tag run into the next query id: 6 + 5)."""


@contextmanager
def trec_eval_lines(on: bool = True) -> Iterator[None]:
    """Run files read in this thread meanwhile (``on``) take trec_eval's own rule for run lines: text
    after the sixth field is ignored (trec_eval's test suite has such lines), where rankgate otherwise
    refuses the line. A line of :data:`_ROW_FIELDS` fields or more is refused all the same: it holds a
    second line, whose row would be lost. ``evaluate --trec`` reads its run so."""
    token = _TREC_EVAL_LINES.set(on)
    try:
        yield
    finally:
        _TREC_EVAL_LINES.reset(token)


def read_trec_run(path: str) -> Run:
    mapped = _mapped_lines(path, 6, 4, 0)
    if mapped is not None and np.isfinite(mapped[2]).all():  # (1e400 reads as inf: the others name its line)
        qids, codes, scores, ids = mapped
        if len(codes) == 0:
            raise InputError("is empty", path=path, hint="a TREC run has lines 'qid Q0 docno rank score tag'")
        return Run(query_ids=qids, r_query=codes, r_doc=ids, r_score=scores, source=path, ties="id")
    # Query ids are dictionary-encoded by the reader itself, in parallel: int32 codes, and 10M id
    # strings are never built. The columns not kept are read too, to be checked as the line-by-line
    # reader checks them (the Q0 and tag columns dictionary-encoded: one value each, as a rule).
    text = pa.dictionary(pa.int32(), pa.string())
    table = _fast_table(
        path,
        ["q", "it", "d", "r", "s", "t"],
        {"q": text, "it": text, "d": pa.string(), "r": pa.string(), "s": pa.float64(), "t": text},
        ["q", "it", "d", "r", "s", "t"],
    )
    # (a score that is not finite: the line-by-line reader names its line, which pyarrow does not know)
    if table is not None and np.isfinite(np_of(table.column("s"))).all():
        if table.num_rows == 0:
            raise InputError("is empty", path=path, hint="a TREC run has lines 'qid Q0 docno rank score tag'")
        qids, codes = _dictionary_codes(table.column("q"))
        # Ids stay in the reader's blocks: they are parsed to numbers block by block and otherwise
        # read only for the few rows a message or a report names.
        return Run(query_ids=qids, r_query=codes, r_doc=table.column("d"), r_score=np_of(table.column("s")),
                   source=path, ties="id")
    qids = []
    index: dict[str, int] = {}
    rq: list[int] = []
    rd: list[str] = []
    rs: list[float] = []
    trailing = _TREC_EVAL_LINES.get()  # (the fast readers take six fields only: such a file is read here)
    for lineno, parts in _lines(path):
        if len(parts) != 6 and not (trailing and 6 < len(parts) < _ROW_FIELDS):
            raise InputError(
                f"has {len(parts)} columns; expected 6 (qid Q0 docno rank score tag)",
                path=path,
                line=lineno,
                hint=_field_count_hint(len(parts), "qid Q0 docno rank score tag",
                                       "a qrels file passed as --run" if len(parts) == 4 else ""),
            )
        q = parts[0]
        qi = index.get(q)
        if qi is None:
            qi = index[q] = len(qids)
            qids.append(q)
        try:
            if "_" in parts[4] or not parts[4].isascii():  # float() takes "1_0" and other scripts' digits
                raise ValueError(parts[4])
            score = float(parts[4])
        except ValueError:
            raise InputError(f"must be a number; got {parts[4]!r}", path=path, line=lineno, field="score (column 5)",
                             hint="a score is a decimal number such as 12.5, -3 or 1e-4") from None
        if not math.isfinite(score):
            raise InputError(f"must be a finite number; got {parts[4]!r}", path=path, line=lineno,
                             field="score (column 5)", hint=NON_FINITE_HINT)
        rq.append(qi)
        rd.append(parts[2])
        rs.append(score)
    if not rq:
        raise InputError("is empty", path=path, hint="a TREC run has lines 'qid Q0 docno rank score tag'")
    return Run(
        query_ids=qids,
        r_query=np.asarray(rq, dtype=np.int64),
        r_doc=strings_of(rd),
        r_score=np.asarray(rs, dtype=np.float64),
        source=path,
        ties="id",  # trec_eval's rule: the rank column is ignored
    )


def read_trec_qrels(path: str) -> Gold:
    mapped = _mapped_lines(path, 4, 3, 1)
    if mapped is not None:
        qids, codes, grades, ids = mapped
        if len(codes) == 0:
            raise InputError("is empty", path=path, hint=QRELS_HINT)
        gold = Gold(query_ids=qids, j_query=codes.astype(np.int64), j_doc=_combine(ids), j_grade=grades, source=path)
        return _unique_judgements(gold)
    # (the iter column, not kept, is read to be checked as the line-by-line reader checks it; the grades
    # as text: pyarrow reads "0x1" as an integer)
    text = pa.dictionary(pa.int32(), pa.string())
    table = _fast_table(
        path,
        ["q", "it", "d", "g"],
        {"q": pa.string(), "it": text, "d": pa.string(), "g": text},
        ["q", "it", "d", "g"],
    )
    read = None if table is None else _grades(table.column("g"))  # (as the line-by-line reader reads them)
    if table is not None and read is not None:
        if table.num_rows == 0:
            raise InputError("is empty", path=path, hint=QRELS_HINT)
        qids, codes = _codes(table.column("q"))
        gold = Gold(
            query_ids=qids,
            j_query=codes,
            j_doc=_combine(table.column("d")),
            j_grade=read,
            source=path,
        )
        return _unique_judgements(gold)
    return _gold_from_rows(path, _qrels_rows(path), QRELS_HINT)


QRELS_HINT = "TREC qrels have lines 'qid iter docno grade'"


def _unique_judgements(gold: Gold) -> Gold:
    """``gold`` (read by a fast reader), or the error of a pair judged twice as the line-by-line reader
    words it: both lines named (a fast reader knows rows, not lines: blank and comment lines are none)."""
    try:
        check_unique_judgements(gold)
    except InputError:
        assert gold.source is not None
        _gold_from_rows(gold.source, _qrels_rows(gold.source), QRELS_HINT)
        raise
    return gold


def _qrels_rows(path: str) -> Iterator[tuple[int, str, str, str]]:
    for lineno, parts in _lines(path):
        if len(parts) != 4:
            raise InputError(
                f"has {len(parts)} columns; expected 4 (qid iter docno grade)",
                path=path,
                line=lineno,
                hint=_field_count_hint(len(parts), "qid iter docno grade",
                                       "a run file passed as --gold" if len(parts) == 6 else ""),
            )
        yield lineno, parts[0], parts[2], parts[3]


BEIR_HINT = "BEIR qrels are 'query-id<TAB>corpus-id<TAB>score' lines, after an optional header"


def read_beir_qrels(path: str) -> Gold:
    """BEIR ``qrels/*.tsv``: ``query-id<TAB>corpus-id<TAB>score`` lines. The first line is a header
    when its score column is not a number (BEIR writes ``query-id corpus-id score``); a pair judged
    twice is an error naming both lines."""

    def rows() -> Iterator[tuple[int, str, str, str]]:
        first = True
        for lineno, line in _physical_lines(path):  # (a lone \r ends a line, as in TREC files)
            if not line.strip():
                continue
            parts = line.split("\t")
            if first:
                first = False
                if len(parts) == 3 and not _is_number(parts[2].strip()):
                    continue  # header
            if len(parts) != 3:
                raise InputError(
                    f"has {len(parts)} tab-separated columns; expected 3 (query-id corpus-id score)",
                    path=path,
                    line=lineno,
                    hint=BEIR_HINT,
                )
            yield lineno, parts[0].strip(), parts[1].strip(), parts[2].strip()

    return _gold_from_rows(path, rows(), BEIR_HINT, grade_field="score")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def beir_qrels_file(folder: str, split: str | None = None) -> str:
    """The qrels file of a BEIR folder, by one rule for every command:

    * ``qrels/<split>.tsv`` when the folder has a ``qrels/`` subfolder (BEIR's layout), ``split``
      being ``test`` unless another is asked for;
    * else ``qrels.tsv`` beside ``corpus.jsonl`` (only when no split is asked for).

    Anything else is an InputError listing the splits there are.
    """
    sub = os.path.join(folder, "qrels")
    top = os.path.join(folder, "qrels.tsv")
    if os.path.isdir(sub):
        chosen = os.path.join(sub, f"{split or 'test'}.tsv")
        if os.path.isfile(chosen):
            return chosen
        splits = sorted(name[: -len(".tsv")] for name in os.listdir(sub) if name.endswith(".tsv"))
        raise InputError(
            f"has no qrels/{split or 'test'}.tsv",
            path=folder,
            hint=f"available splits: {', '.join(splits) or 'none'}; pick one with --split (retrieve) "
            "or pass the .tsv file itself as --gold (evaluate)",
        )
    if os.path.isfile(top) and split is None:
        return top
    raise InputError(
        f"has no qrels/{split}.tsv" if split else "has no qrels/test.tsv or qrels.tsv",
        path=folder,
        hint="BEIR qrels live in qrels/<split>.tsv"
        + ("; qrels.tsv is read only when no split is asked for" if os.path.isfile(top) else ""),
    )


def has_beir_qrels(folder: str) -> bool:
    """Whether a folder holds qrels at all (``qrels/`` or ``qrels.tsv``)."""
    return os.path.isdir(os.path.join(folder, "qrels")) or os.path.exists(os.path.join(folder, "qrels.tsv"))


def _gold_from_rows(
    path: str, rows: Iterator[tuple[int, str, str, str]], hint: str, *, grade_field: str = "grade"
) -> Gold:
    qids: list[str] = []
    index: dict[str, int] = {}
    jq: list[int] = []
    jd: list[str] = []
    jg: list[int] = []
    seen: dict[tuple[int, str], int] = {}
    for lineno, q, d, g in rows:
        try:
            grade = _grade(g)
        except ValueError:
            raise InputError(
                f"must be an integer grade; got {g!r}", path=path, line=lineno, field=grade_field,
                hint="grades are integers; 0 or negative means judged not relevant",
            ) from None
        qi = index.get(q)
        if qi is None:
            qi = index[q] = len(qids)
            qids.append(q)
        if (qi, d) in seen:
            raise InputError(
                f"judges {d!r} for query {q!r} again (first on line {seen[(qi, d)]})",
                path=path,
                line=lineno,
                hint="keep one judgement per query and document",
            )
        seen[(qi, d)] = lineno
        jq.append(qi)
        jd.append(d)
        jg.append(grade)
    if not jq:
        raise InputError("is empty", path=path, hint=hint)
    return Gold(
        query_ids=qids,
        j_query=np.asarray(jq, dtype=np.int64),
        j_doc=strings_of(jd),
        j_grade=np.asarray(jg, dtype=np.int64),
        source=path,
    )


def _grade(text: str) -> int:
    """A grade's text as an integer (ValueError when it is not one: int() takes "1_0" and other scripts'
    digits, pyarrow takes "0x1"; trec_eval takes neither, nor more than 64 bits)."""
    if "_" in text or not text.isascii():
        raise ValueError(text)
    grade = int(text)
    if not -(1 << 63) <= grade < 1 << 63:
        raise ValueError(text)
    return grade


def _grades(column: pa.ChunkedArray) -> np.ndarray | None:
    """The grades of a dictionary-encoded text column (each distinct text read by :func:`_grade`), or
    None when one is not a grade (the line-by-line reader then names its line)."""
    parts = []
    for chunk in column.chunks:
        try:
            values = np.array([_grade(v) for v in chunk.dictionary.to_pylist()] or [0], dtype=np.int64)
        except ValueError:
            return None
        parts.append(values[np_of(chunk.indices, np.int64)])
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def check_unique_judgements(gold: Gold) -> None:
    """Raise if a (query, doc) pair is judged twice (fast path: checked on integer codes)."""
    from rankgate.model.ids import item_codes, segment_duplicates

    if len(gold.j_doc) == 0:
        return
    codes, _ = item_codes(gold.j_doc, strings_of([]))  # equal codes <=> equal ids
    q = gold.j_query
    if not bool((q[1:] < q[:-1]).any()):  # grouped by query, as qrels are: look within each query
        offsets = np.searchsorted(q, np.arange(len(gold.query_ids) + 1))
        repeats = segment_duplicates(codes, offsets)
        row = int(repeats[0]) if repeats.size else None
    else:  # sorted by (query, id) without arithmetic: id codes may be numbers up to 10**18
        order = np.lexsort((codes, q))
        later = order[1:][(q[order][1:] == q[order][:-1]) & (codes[order][1:] == codes[order][:-1])]
        row = int(later.min()) if later.size else None
    if row is not None:
        qid = gold.query_ids[int(q[row])]
        d = gold.j_doc[row].as_py()
        raise InputError(
            f"judges {d!r} for query {qid!r} twice", path=gold.source, line=row + 1,
            hint="keep one judgement per query and document",
        )
