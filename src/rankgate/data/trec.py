"""TREC qrels and run files, and BEIR ``qrels/*.tsv`` (the one BEIR qrels reader: ``evaluate --gold``
and ``retrieve --beir`` both read through :func:`read_beir_qrels` and :func:`beir_qrels_file`).

Run lines are ``qid Q0 docno rank score tag`` (columns past the sixth are ignored and the rank column
is not used, as trec_eval does); qrels lines are ``qid iter docno grade``. Three readers, tried in
turn, each giving the same result on the files it accepts:

* the compiled line reader (``_reader.c``) for regular, uncompressed files (a pipe is copied to a
  regular file first, see :func:`~rankgate.data.source.local_copy`) (one delimiter, exactly
  the expected columns, printable ASCII ids, plain decimal numbers): two threads over a memory map;
* pyarrow's multi-threaded CSV reader for other regular files (``.gz``, non-ASCII ids, ...);
* the line-by-line path for anything else: it accepts any whitespace and ``#`` comment lines, and
  names the bad line of a bad file.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import InputError
from .arrow import arrow_of, np_of, strings_of
from .jsonl import NON_FINITE_HINT
from .models import Gold, Run
from .source import gzip_error, is_gzip, text_lines


def _first_data_line(path: str) -> str | None:
    for _, line in text_lines(path):
        if line.strip():
            return line
    return None


def _first_line_and_delimiter(path: str) -> tuple[str, str] | None:
    """The first non-blank line and the delimiter of a regular file (a tab if that line has one, else
    a space); None when there is no such line or it is a comment (no fast reader takes the file)."""
    first = _first_data_line(path)
    if first is None or first.lstrip().startswith("#"):
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

    # A memory map reads straight from the page cache; a plain read copies the file into fresh
    # buffers, which on large files costs more kernel time than the parsing itself. gzip is
    # recognised by content, as every reader does (a file named .gz that is not gzip has been
    # refused by text_lines above).
    compressed = is_gzip(path)
    source = pa.input_stream(path, compression="gzip") if compressed else pa.memory_map(path)
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
    return table


_PIECE = 1 << 30
"""Bytes per call of the compiled reader at most: the ids of one piece fit int32 offsets."""


def _mapped(path: str, *, populate_below: int) -> tuple[Any, int, bytes] | None:
    """(the file mapped read-only, its size, its column delimiter) for the compiled line reader; None
    when the reader is not built, the file is compressed, empty (or a pipe), starts with a comment, or
    cannot be mapped (the other readers then read it, or say why they cannot). A file of fewer than
    ``populate_below`` bytes has every page mapped in one call where the system offers it, rather than
    a page fault per page (a larger one is read in parts whose pages are let go)."""
    from .._accel import reader

    if reader is None or path.endswith(".gz") or is_gzip(path):
        return None
    shape = _first_line_and_delimiter(path)
    if shape is None:
        return None
    import mmap

    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size == 0:  # (also pipes and other files without a size)
                return None
            if hasattr(mmap, "MAP_SHARED"):  # POSIX
                flags = mmap.MAP_SHARED | (getattr(mmap, "MAP_POPULATE", 0) if size < populate_below else 0)
                mm = mmap.mmap(fh.fileno(), 0, flags=flags, prot=mmap.PROT_READ)
            else:
                mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    return mm, size, shape[1].encode()


def _mapped_lines(
    path: str, ncols: int, value_col: int, value_kind: int
) -> tuple[list[str], np.ndarray, np.ndarray, pa.Array | pa.ChunkedArray] | None:
    """(query ids in order of first appearance, int32 query code of each row, values, item ids) by
    the compiled line reader; None when it is not built, the file is compressed, empty or starts with
    a comment, or any line is not regular (the other readers then take the file and name a bad line).

    ``value_kind`` 0 reads column ``value_col`` as float64, 1 as int64. Files over 8 MB are read in
    pieces cut at line ends, two threads at a time; each piece's ids are one chunk of the result.
    """
    import mmap

    opened = _mapped(path, populate_below=_RELEASE_FROM)
    if opened is None:
        return None
    mm, size, delim = opened
    release = size >= _RELEASE_FROM and hasattr(mmap, "MADV_DONTNEED")
    try:
        pieces = max(-(-size // _PIECE), 2 if size > 1 << 23 else 1)
        if release:  # pieces whose pages are let go once read: the file is not held in memory whole
            pieces = max(pieces, -(-size // _RELEASE_PIECE))
        return _read_span(mm, 0, size, pieces, ncols, value_col, value_kind, delim, release=release)
    finally:
        mm.close()


_RELEASE_FROM = 1 << 27
"""Bytes from which a file read whole is read in pieces of :data:`_RELEASE_PIECE` whose pages are let go
once read (as the blocks of a run read block by block are)."""
_RELEASE_PIECE = 1 << 25


def _read_span(
    mm: Any, lo_byte: int, hi_byte: int, pieces: int, ncols: int, value_col: int, value_kind: int, delim: bytes,
    *, release: bool = False,
) -> tuple[list[str], np.ndarray, np.ndarray, pa.Array | pa.ChunkedArray] | None:
    """:func:`_mapped_lines` on the bytes ``[lo_byte, hi_byte)`` of a mapped file (which start a line
    and end one, or the file), read in ``pieces`` pieces cut at line ends, two threads at a time.
    ``release``: each piece's pages are let go once it is counted and once it is read (they come back
    from the page cache when read again), so that memory holds about two pieces of the file."""
    from .._accel import reader

    assert reader is not None
    size = hi_byte
    cuts = [lo_byte]
    for i in range(1, pieces):
        at = mm.find(b"\n", max(cuts[-1], lo_byte + (hi_byte - lo_byte) * i // pieces), hi_byte)
        cuts.append(size if at < 0 else at + 1)
    cuts.append(size)
    spans = [(a, b) for a, b in itertools.pairwise(cuts) if b > a]
    if not spans:
        return None

    def run_all(fn: Callable[[int], Any]) -> list[Any]:
        if len(spans) == 1:
            return [fn(0)]
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=2) as pool:
            return list(pool.map(fn, range(len(spans))))

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
        if got is None:
            return None
        n, nbytes, qids = got
        ids = pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets[: n + 1]), pa.py_buffer(data[:nbytes])])
        return n, qids, ids

    parts = run_all(read)
    if any(part is None for part in parts):
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
    the caller to check. The pages of a block read are let go, so memory holds one block at a time."""
    import mmap

    if not hasattr(mmap, "MADV_DONTNEED"):  # (pages are let go block by block)
        return None
    opened = _mapped(path, populate_below=0)
    if opened is None:
        return None
    mm, size, delim = opened
    if not _grouped_head(mm, size, delim):  # (a shuffled file: read whole at once, no block read first)
        mm.close()
        return None
    cuts = [0]
    while cuts[-1] < size:
        at = _query_cut(mm, max(cuts[-1], cuts[-1] + block_bytes - 1), size, delim)
        if at < 0:
            mm.close()
            return None
        cuts.append(at)
    return _blocks(mm, path, cuts, delim)


_HEAD_BYTES = 1 << 20


def _grouped_head(mm: Any, size: int, delim: bytes) -> bool:
    """Whether the file's first MiB of lines is grouped by query (no query id comes back after
    another one): a cheap look that spares a file in random order the read of its first block."""
    head = bytes(mm[: min(size, _HEAD_BYTES)])
    lines = head.split(b"\n")[:-1] if size > _HEAD_BYTES else head.split(b"\n")
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


def _query_cut(mm: Any, at: int, size: int, delim: bytes) -> int:
    """Start of the first line after the one holding byte ``at`` whose query id differs from the
    line before it (blank lines skipped), or ``size``; -1 after :data:`_CUT_LINES` lines without one."""
    if at >= size:
        return size
    end = mm.find(b"\n", at)
    if end < 0:
        return size
    prev = _query_of(mm, mm.rfind(b"\n", 0, end) + 1, end, delim)
    pos = end + 1
    for _ in range(_CUT_LINES):
        if pos >= size:
            return size
        end = mm.find(b"\n", pos)
        line_end = size if end < 0 else end
        q = _query_of(mm, pos, line_end, delim)
        if q and prev and q != prev:
            return pos
        prev = q or prev
        pos = line_end + 1
    return -1


def _query_of(mm: Any, start: int, end: int, delim: bytes) -> bytes:
    cut = mm.find(delim, start, end)
    return bytes(mm[start : end if cut < 0 else cut]).strip()


def _blocks(mm: Any, path: str, cuts: list[int], delim: bytes) -> Iterator[Run | None]:
    """The blocks between ``cuts``; each next block is read on a thread while the caller scores the
    one before (the first on two threads, when it is large enough: nothing else is going on yet)."""
    import mmap
    from contextlib import closing

    from .source import read_ahead

    page = mmap.PAGESIZE
    spans = list(itertools.pairwise(cuts))

    def read(i: int) -> tuple[list[str], np.ndarray, np.ndarray, pa.Array | pa.ChunkedArray] | None:
        a, b = spans[i]
        got = _read_span(mm, a, b, 2 if i == 0 and b - a > 1 << 23 else 1, 6, 4, 0, delim)
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
    finally:
        mm.close()


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
    for lineno, line in text_lines(path):
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        yield lineno, parts


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


def read_trec_run(path: str) -> Run:
    mapped = _mapped_lines(path, 6, 4, 0)
    if mapped is not None and np.isfinite(mapped[2]).all():  # (1e400 reads as inf: the others name its line)
        qids, codes, scores, ids = mapped
        if len(codes) == 0:
            raise InputError("is empty", path=path, hint="a TREC run has lines 'qid Q0 docno rank score tag'")
        return Run(query_ids=qids, r_query=codes, r_doc=ids, r_score=scores, source=path, ties="id")
    # Query ids are dictionary-encoded by the reader itself, in parallel: int32 codes, and 10M id
    # strings are never built.
    table = _fast_table(
        path,
        ["q", "it", "d", "r", "s", "t"],
        {"q": pa.dictionary(pa.int32(), pa.string()), "d": pa.string(), "s": pa.float64()},
        ["q", "d", "s"],
    )
    if table is not None:
        if table.num_rows == 0:
            raise InputError("is empty", path=path, hint="a TREC run has lines 'qid Q0 docno rank score tag'")
        qids, codes = _dictionary_codes(table.column("q"))
        scores = np_of(table.column("s"))
        if not np.isfinite(scores).all():  # one rule in every format: NaN and infinite scores cannot be ranked
            bad = int(np.flatnonzero(~np.isfinite(scores))[0])
            raise InputError(f"must be a finite number; got {scores[bad]}", path=path, line=bad + 1,
                             field="score (column 5)", hint=NON_FINITE_HINT)
        # Ids stay in the reader's blocks: they are parsed to numbers block by block and otherwise
        # read only for the few rows a message or a report names.
        return Run(query_ids=qids, r_query=codes, r_doc=table.column("d"), r_score=scores, source=path, ties="id")
    qids = []
    index: dict[str, int] = {}
    rq: list[int] = []
    rd: list[str] = []
    rs: list[float] = []
    for lineno, parts in _lines(path):
        if len(parts) < 6:
            raise InputError(
                f"has {len(parts)} columns; expected 6 (qid Q0 docno rank score tag)",
                path=path,
                line=lineno,
                hint="is this a qrels file passed as --run?" if len(parts) == 4 else None,
            )
        q = parts[0]
        qi = index.get(q)
        if qi is None:
            qi = index[q] = len(qids)
            qids.append(q)
        try:
            score = float(parts[4])
        except ValueError:
            raise InputError(f"must be a number; got {parts[4]!r}", path=path, line=lineno, field="score (column 5)") from None
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
            raise InputError("is empty", path=path, hint="TREC qrels have lines 'qid iter docno grade'")
        gold = Gold(query_ids=qids, j_query=codes.astype(np.int64), j_doc=_combine(ids), j_grade=grades, source=path)
        check_unique_judgements(gold)
        return gold
    table = _fast_table(
        path,
        ["q", "it", "d", "g"],
        {"q": pa.string(), "d": pa.string(), "g": pa.int64()},
        ["q", "d", "g"],
    )
    if table is not None:
        if table.num_rows == 0:
            raise InputError("is empty", path=path, hint="TREC qrels have lines 'qid iter docno grade'")
        qids, codes = _codes(table.column("q"))
        gold = Gold(
            query_ids=qids,
            j_query=codes,
            j_doc=_combine(table.column("d")),
            j_grade=np_of(table.column("g"), np.int64),
            source=path,
        )
        check_unique_judgements(gold)
        return gold
    return _gold_from_rows(path, _qrels_rows(path), "TREC qrels have lines 'qid iter docno grade'")


def _qrels_rows(path: str) -> Iterator[tuple[int, str, str, str]]:
    for lineno, parts in _lines(path):
        if len(parts) != 4:
            raise InputError(
                f"has {len(parts)} columns; expected 4 (qid iter docno grade)",
                path=path,
                line=lineno,
                hint="is this a run file passed as --gold?" if len(parts) >= 6 else None,
            )
        yield lineno, parts[0], parts[2], parts[3]


BEIR_HINT = "BEIR qrels are 'query-id<TAB>corpus-id<TAB>score' lines, after an optional header"


def read_beir_qrels(path: str) -> Gold:
    """BEIR ``qrels/*.tsv``: ``query-id<TAB>corpus-id<TAB>score`` lines. The first line is a header
    when its score column is not a number (BEIR writes ``query-id corpus-id score``); a pair judged
    twice is an error naming both lines."""

    def rows() -> Iterator[tuple[int, str, str, str]]:
        first = True
        for lineno, line in text_lines(path):
            if not line.strip():
                continue
            parts = line.rstrip("\r\n").split("\t")
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
            if "_" in g or not g.isascii():  # int() takes "1_0" and other scripts' digits; trec_eval does not
                raise ValueError(g)
            grade = int(g)
            if not -(1 << 63) <= grade < 1 << 63:
                raise ValueError(g)
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


def check_unique_judgements(gold: Gold) -> None:
    """Raise if a (query, doc) pair is judged twice (fast path: checked on integer codes)."""
    from .ids import item_codes, segment_duplicates

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
