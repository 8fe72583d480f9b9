"""Opening input files: plain or gzip, UTF-8, regular files or pipes, with errors that say which
file, line and byte, and what to do.

The rules every text reader shares (TREC, BEIR, JSONL, doc maps, corpora):

* **Compression is recognised by content.** A file that starts with gzip's magic bytes is
  decompressed whatever its name (so ``--run <(cat run.gz)`` works); a file *named* ``*.gz`` that is
  not gzip data is refused. A truncated or damaged gzip stream is an error, never a shorter dataset.
* **Text is UTF-8.** A UTF-8 byte-order mark at the start is skipped (it is never part of the first
  id); a byte that is not UTF-8 is an error naming its line and byte; UTF-16 is named as such.
* **Lines end at ``\\n``** (``\\r\\n`` too); no other character splits a line.
* **Pipes** (FIFOs, ``<(...)`` process substitution, ``/dev/stdin``) have no size and can be read only
  once: :func:`local_copy` copies one into a temporary regular file (in ``$TMPDIR``), which the
  readers then read like any file; errors still name the pipe.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import stat
import threading
import zlib
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from typing import IO, Any, TypeVar

from ..errors import InputError

_T = TypeVar("_T")

GZIP_MAGIC = b"\x1f\x8b"
PARQUET_MAGIC = b"PAR1"
UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_GZIP_ERRORS = (EOFError, zlib.error, gzip.BadGzipFile)


def is_pipe(path: str) -> bool:
    """True for an existing path that is neither a regular file nor a folder (a FIFO, a character
    device such as ``/dev/stdin``, a socket): it has no size and can be read only once."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def magic(path: str, n: int = 4) -> bytes:
    """The first ``n`` bytes of a regular file (b"" when it cannot be read; never reads a pipe)."""
    if is_pipe(path):
        return b""
    try:
        with open(path, "rb") as fh:
            return fh.read(n)
    except OSError:
        return b""


def is_gzip(path: str) -> bool:
    """Whether a regular file holds gzip data (by its first bytes, not its name)."""
    return magic(path, 2) == GZIP_MAGIC


def check_file(path: str, what: str) -> None:
    """Refuse a missing, empty or misnamed file before any reader opens it (a pipe is not opened)."""
    if not os.path.exists(path):
        raise InputError("does not exist", path=path, hint=f"check the {what} path")
    if os.path.isdir(path) or is_pipe(path):
        return  # a pipe's size says nothing: it is read (see local_copy)
    if os.path.getsize(path) == 0:
        raise InputError("is empty", path=path, hint=f"the {what} file has no content")
    if path.endswith(".gz") and not is_gzip(path):
        raise _not_gzip(path)


def _not_gzip(path: str) -> InputError:
    return InputError(
        "is named *.gz but is not gzip-compressed", path=path,
        hint="rename it without .gz, or compress it with gzip",
    )


def gzip_error(path: str, exc: BaseException, line: int | None = None) -> InputError:
    """The InputError for a gzip stream that cannot be decompressed (from Python's gzip or pyarrow)."""
    text = str(exc)
    if isinstance(exc, EOFError) or "truncated" in text.lower() or "ended before" in text:
        return InputError(
            "is truncated: its gzip data ends before the end of the compressed stream", path=path, line=line,
            hint="the file was cut short, e.g. by an interrupted download or copy: fetch or compress it again",
        )
    return InputError(
        f"is not valid gzip data ({text or type(exc).__name__})", path=path, line=line,
        hint="the file is damaged: fetch or compress it again",
    )


class _GzipDataError(InputError):
    """Raised by the gzip layer of :func:`open_binary`; :func:`text_lines` adds the line."""


class _Gunzip(io.RawIOBase):
    """A gzip stream whose decompression errors are InputErrors naming the file."""

    def __init__(self, raw: IO[bytes], path: str) -> None:
        self._gz = gzip.GzipFile(fileobj=raw, mode="rb")
        self._raw = raw
        self._path = path

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        try:
            return self._gz.readinto(buffer)
        except _GZIP_ERRORS as exc:
            base = gzip_error(self._path, exc)
            raise _GzipDataError(base.detail, path=self._path, hint=base.hint) from None

    def close(self) -> None:
        try:
            self._gz.close()
            self._raw.close()
        finally:
            super().close()


def open_binary(path: str) -> IO[bytes]:
    """The file's bytes, decompressed when it is gzip data (see the module rules); works on pipes."""
    try:
        raw = open(path, "rb")  # noqa: SIM115 - returned to the caller
    except OSError as exc:
        raise InputError(f"cannot be opened: {exc.strerror or exc}", path=path) from None
    try:
        head = raw.peek(2)[:2]  # peek: a pipe's bytes are not consumed
    except OSError as exc:
        raw.close()
        raise InputError(f"cannot be read: {exc.strerror or exc}", path=path) from None
    if head == GZIP_MAGIC:
        return io.BufferedReader(_Gunzip(raw, path), 1 << 16)
    if path.endswith(".gz") and head:
        raw.close()
        raise _not_gzip(path)
    return raw


def open_text(path: str) -> IO[str]:
    """The file as UTF-8 text (gzip decompressed, a leading byte-order mark skipped); undecodable
    bytes raise UnicodeDecodeError, damaged gzip data an InputError. To name the line of a bad byte,
    read with :func:`text_lines`."""
    return io.TextIOWrapper(open_binary(path), encoding="utf-8-sig", errors="strict")


def text_lines(path: str) -> Iterator[tuple[int, str]]:
    """(line number, line) of a text file: lines end at ``\\n`` (``\\r\\n`` is given as ``\\n``), a
    leading UTF-8 byte-order mark is skipped, and a byte that is not UTF-8 is an InputError naming
    its line and byte. Each line is decoded on its own, so this needs no second pass (pipes work)."""
    lineno = 0
    with open_binary(path) as fh:
        try:
            for lineno, raw in enumerate(fh, start=1):
                if lineno == 1:
                    if raw.startswith(UTF8_BOM):
                        raw = raw[3:]
                        if not raw:  # the file is a byte-order mark and nothing else
                            return
                    elif raw[:2] in _UTF16_BOMS:
                        raise InputError(
                            "is UTF-16 text, not UTF-8", path=path, line=1, hint="save the file as UTF-8"
                        )
                    elif raw.startswith(PARQUET_MAGIC):
                        raise InputError(
                            "is a Parquet file, not text", path=path, line=1,
                            hint="name it *.parquet or pass --gold-format/--run-format parquet",
                        )
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise InputError(
                        f"is not UTF-8 text (byte {raw[exc.start]:#04x} at column {exc.start + 1})",
                        path=path, line=lineno, hint="save the file as UTF-8",
                    ) from None
                if line.endswith("\r\n"):
                    line = line[:-2] + "\n"
                yield lineno, line
        except _GzipDataError as exc:
            raise InputError(exc.detail, path=path, line=lineno + 1, hint=exc.hint) from None


def first_byte(path: str) -> bytes:
    """The first byte of the (decompressed) content that is not whitespace or a byte-order mark;
    b"" when there is none. Reads only as far as that byte."""
    with open_binary(path) as fh:
        block = fh.read(1 << 16)
        if block.startswith(UTF8_BOM):
            block = block[3:]
        while block:
            stripped = block.lstrip()
            if stripped:
                return stripped[:1]
            block = fh.read(1 << 16)
    return b""


def sha256_file(path: str) -> str:
    ahead = _taken_ahead(path)
    if ahead is not None:
        digest = ahead()
        if digest is not None:
            return digest
    h = hashlib.sha256()
    hash_file_into(h, path)
    return h.hexdigest()


_AHEAD_FROM = 1 << 22
"""Bytes from which :func:`hash_ahead` hashes a file (a smaller one costs less than a thread)."""
_AHEAD_KEPT = 8
"""Files hashed ahead that no one has asked for yet, at most (the oldest are forgotten)."""
_ahead: dict[tuple[int, ...], Any] = {}
_ahead_lock = threading.Lock()


def _file_key(info: os.stat_result) -> tuple[int, ...]:
    """What names one version of a file: the same key after a change is not to be expected."""
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def hash_ahead(paths: list[Any]) -> None:
    """Start hashing the large regular files among ``paths`` now, each on a thread of its own, for
    :func:`sha256_file` to take up later. A command calls it before its heavy imports, which keep
    one core busy for a quarter of a second while the other would wait. Anything else (a pipe, a
    folder, a missing file, a small file) is left to be hashed where it is read."""
    for path in paths:
        try:
            info = os.stat(path)
        except (OSError, TypeError, ValueError):
            continue
        if not stat.S_ISREG(info.st_mode) or info.st_size < _AHEAD_FROM:
            continue
        key = _file_key(info)
        done = threading.Event()
        box: list[str | None] = [None]

        def work(path: Any = path, done: threading.Event = done, box: list[str | None] = box) -> None:
            try:
                h = hashlib.sha256()
                hash_file_into(h, os.fspath(path))
                box[0] = h.hexdigest()
            except BaseException:  # (hashed again where it is asked for, and any error raised there)
                pass
            finally:
                done.set()

        def result(done: threading.Event = done, box: list[str | None] = box) -> str | None:
            done.wait()
            return box[0]

        with _ahead_lock:
            if key in _ahead:
                continue
            while len(_ahead) >= _AHEAD_KEPT:
                _ahead.pop(next(iter(_ahead)))
            _ahead[key] = result
        threading.Thread(target=work, daemon=True, name="rankgate-hash-ahead").start()


def _taken_ahead(path: str) -> Any:
    """The digest (a function to wait for it) of the file at ``path`` as it is now, when it was
    hashed ahead; None otherwise. Each is handed out once."""
    if not _ahead:
        return None
    try:
        info = os.stat(path)
    except (OSError, TypeError, ValueError):
        return None
    with _ahead_lock:
        return _ahead.pop(_file_key(info), None)


_HASH_MAPPED_FROM = 1 << 24  # bytes from which a regular file is hashed from maps of it
_HASH_WINDOW = 1 << 24  # bytes mapped at a time (a multiple of any page size)


def hash_file_into(h: Any, path: str) -> None:
    """Feed a file's bytes to ``h``. A large regular file is hashed from read-only maps of it, a
    window at a time (so that its pages never count as this process's memory all at once), not
    copied into buffers first: the copy cost a seventh of hashing a 360 MB run."""
    with open(path, "rb") as fh:
        info = os.fstat(fh.fileno())
        if info.st_size >= _HASH_MAPPED_FROM and stat.S_ISREG(info.st_mode) and \
                _hash_mapped(h, fh.fileno(), info.st_size, path):
            return
        for block in iter(lambda: fh.read(1 << 22), b""):
            h.update(block)


def _hash_mapped(h: Any, fd: int, size: int, path: str) -> bool:
    """``size`` bytes of ``fd`` into ``h`` from maps of it; False, with nothing fed, when the file
    system cannot map the file (it is then read). A file that gets shorter while it is hashed is an
    InputError naming it."""
    import mmap

    at = 0
    while at < size:
        try:
            window = mmap.mmap(fd, min(_HASH_WINDOW, size - at), access=mmap.ACCESS_READ, offset=at)
        except (OSError, ValueError):
            if at:
                raise InputError(f"changed while it was read: {size:,} bytes when opened, fewer at byte {at:,}",
                                 path=path, hint="evaluate a file that no other program is writing") from None
            return False
        with window:
            h.update(window)
        at += _HASH_WINDOW
    return True


@contextmanager
def local_copy(path: str, what: str) -> Iterator[str]:
    """``path`` itself for a regular file or folder; for a pipe, a temporary regular copy of what
    it delivers (named like the pipe, plus ``.gz`` when the data is gzip), removed afterwards.

    Errors raised while the copy is read name ``path``, not the copy."""
    if not is_pipe(path):
        yield path
        return
    import shutil
    import tempfile

    try:
        folder = tempfile.mkdtemp(prefix="rankgate-pipe-")
    except OSError as exc:
        raise _no_room(path, exc) from None
    try:
        name = os.path.basename(path) or what
        copy = os.path.join(folder, name)
        try:
            src = open(path, "rb")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise InputError(f"cannot be opened: {exc.strerror or exc}", path=path) from None
        with src:
            try:
                head = src.read(1 << 16)
                if head[:2] == GZIP_MAGIC and not name.endswith(".gz"):
                    copy += ".gz"
                with open(copy, "wb") as dst:
                    dst.write(head)
                    shutil.copyfileobj(src, dst, 1 << 20)
            except OSError as exc:
                raise _no_room(path, exc) from None
        try:
            check_file(copy, what)
            yield copy
        except InputError as exc:
            raise relabel(exc, copy, path) from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _no_room(path: str, exc: OSError) -> InputError:
    import tempfile

    return InputError(
        f"cannot be copied to a temporary file in {tempfile.gettempdir()}: {exc.strerror or exc}",
        path=path, hint="a pipe is read through a temporary copy: set TMPDIR to a writable folder with room",
    )


def relabel(exc: InputError, old: str, new: str) -> InputError:
    """``exc`` with the path ``old`` replaced by ``new`` (in its path and its text)."""
    return type(exc)(
        exc.detail.replace(old, new),
        path=new if exc.path == old else exc.path,
        line=exc.line,
        field=exc.field,
        hint=exc.hint.replace(old, new) if exc.hint else exc.hint,
    )


# -- Parquet page checksums ----------------------------------------------------------------------
# rankgate's own Parquet writers store a CRC per page (write_page_checksum) and its pyarrow readers
# check them (page_checksum_verification): a file damaged after it was written is refused instead of
# being read as other numbers. Files written without checksums cannot be checked this way.
DAMAGED = "is damaged: a page's checksum does not match its data"
DAMAGED_HINT = "copy or export the file again from its source; the bytes changed after it was written"


def is_damaged_parquet(exc: BaseException) -> bool:
    """Whether a Parquet read failed on a page checksum (pyarrow's message)."""
    return "checksum" in str(exc).lower() and "crc" in str(exc).lower()


class Resumed(Iterator[_T]):
    """The parts of an iterator whose first part was taken ahead (:meth:`take_first`), for a caller
    that reads the first part beside other work: the first part, or the error taking it raised, comes
    out of the first ``next()``, where it would have come out without the head start. ``close()``
    closes the iterator (a generator's map and read-ahead go then), as closing it itself would."""

    def __init__(self, parts: Iterator[_T]) -> None:
        self._parts = parts
        self._first: list[_T] = []
        self._error: Exception | None = None
        self._done = False

    @classmethod
    def take_first(cls, parts: Iterator[_T]) -> Resumed[_T]:
        out = cls(parts)
        try:
            out._first = [next(parts)]
        except StopIteration:
            out._done = True
        except Exception as exc:  # (raised where the caller would have met it)
            out._error = exc
        return out

    def __next__(self) -> _T:
        if self._error is not None:
            error, self._error = self._error, None
            self._done = True
            raise error
        if self._first:
            return self._first.pop()
        if self._done:
            raise StopIteration
        return next(self._parts)

    def close(self) -> None:
        self._first, self._error, self._done = [], None, True
        close = getattr(self._parts, "close", None)
        if close is not None:
            close()


def read_ahead(n: int, read: Callable[[int], _T],
               good: Callable[[_T], bool]) -> Generator[tuple[_T, bool], None, None]:
    """``(read(i), good(read(i)))`` for i = 0 … n - 1 in order, each next part read on a thread while
    the caller works on the one before, as long as ``good`` says so of it: after a part that is not
    good (the caller gives up there) nothing more is read. Closed early (``contextlib.closing``), it
    waits for a read still going on, so that what the reads use (a memory map) may be closed after it."""
    from concurrent.futures import Future, ThreadPoolExecutor

    if n < 1:
        return
    pool = ThreadPoolExecutor(max_workers=1)
    ahead: Future[_T] | None = None
    try:
        got = read(0)
        for i in range(n):
            ok = good(got)
            ahead = pool.submit(read, i + 1) if ok and i + 1 < n else None
            yield got, ok
            if ahead is None:
                return
            got = ahead.result()
            ahead = None
    finally:
        if ahead is not None:
            ahead.cancel() or ahead.exception()
        pool.shutdown(wait=True)
