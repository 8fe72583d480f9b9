"""Opening input files: plain or gzip, UTF-8, regular files or pipes, with errors that say which
file, line and byte, and what to do.

The rules every text reader shares (TREC, BEIR, JSONL, doc maps, corpora):

* **Compression is recognised by content.** A file that starts with gzip's magic bytes is
  decompressed whatever its name (so ``--run <(cat run.gz)`` works); a file *named* ``*.gz`` that is
  not gzip data is refused. A truncated or damaged gzip stream is an error, never a shorter dataset.
  zstd-compressed content is named as such (not read: decompress it first).
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

from rankgate.errors import FileChangedError, InputError

_T = TypeVar("_T")

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
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


def zstd_error(path: str) -> InputError:
    """The InputError for zstd-compressed content (recognised by its magic bytes), which is not read."""
    return InputError(
        "is zstd-compressed; rankgate reads plain and gzip-compressed files", path=path,
        hint="decompress it first, e.g. with zstd -d, or compress it with gzip instead",
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
        head = raw.peek(4)[:4]  # peek: a pipe's bytes are not consumed
    except OSError as exc:
        raw.close()
        raise InputError(f"cannot be read: {exc.strerror or exc}", path=path) from None
    if head == ZSTD_MAGIC:
        raw.close()
        raise zstd_error(path)
    head = head[:2]
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


CHANGED_HINT = "evaluate a file no other program is writing: copy it first, or have its producer write a new file and rename it when done"


def changed_error(path: str, detail: str) -> FileChangedError:
    """The one error for a file that another program shortened or rewrote while rankgate read it."""
    return FileChangedError(f"changed while it was read: {detail}", path=path, hint=CHANGED_HINT)


def file_stamp(path: str) -> tuple[int, ...] | None:
    """What names this version of a regular file (None for anything else: a folder, a pipe)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return _file_key(info) if stat.S_ISREG(info.st_mode) else None


def check_unchanged(path: str, stamp: tuple[int, ...] | None) -> None:
    """An InputError when the regular file ``stamp`` (:func:`file_stamp`, taken before a read) named
    is not the one at ``path`` now: whatever reader read it, a result of two versions is never given."""
    if stamp is None:
        return
    now = file_stamp(path)
    if now != stamp:
        size = stamp[2]
        detail = (f"{size:,} bytes when opened, {now[2]:,} now" if now is not None and now[2] != size
                  else "it was written to or replaced meanwhile")
        raise changed_error(path, detail)


after_read: Callable[[str, int, int], None] | None = None
"""Tests only: called as ``after_read(path, offset, nbytes)`` after each piece a :class:`Pread` reads
or the compiled reader scans, so that a test can change the file between two pieces (no timing)."""


def read_hook(path: str, offset: int, nbytes: int) -> None:
    """Say that a piece of ``path`` was read (see :data:`after_read`)."""
    if after_read is not None:
        after_read(path, offset, nbytes)


class Pread:
    """A regular file read by offset into the caller's buffers (``os.preadv``): touching a page of a
    memory map past the end of a file that another process has since cut short ends the process with
    SIGBUS, whatever the code that touches it, so only the compiled reader's guarded scans read through
    a map (:meth:`mapped`). Here a piece that comes back short
    (the file is shorter than when it was opened) is an :class:`~rankgate.errors.InputError` "changed
    while it was read", and so is a file whose size, modification or change time differ at
    :meth:`check` (call it once everything is read): the result of a read never mixes two versions of a
    file without saying so."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        try:
            info = os.fstat(self.fd)
        except OSError:
            os.close(self.fd)
            raise
        self.size = info.st_size
        self.regular = stat.S_ISREG(info.st_mode)
        self._key = _file_key(info)

    def read_into(self, buf: Any, offset: int) -> None:
        """Fill the writable buffer ``buf`` (all of it) with the file's bytes from ``offset``."""
        view = memoryview(buf).cast("B")
        want, got = view.nbytes, 0
        while got < want:
            n = _pread_into(self.fd, view[got:], offset + got)
            if n <= 0:
                raise changed_error(self.path, f"{self.size:,} bytes when opened, none at byte {offset + got:,}")
            got += n
        read_hook(self.path, offset, want)

    def read(self, offset: int, n: int) -> bytes:
        """The file's bytes ``[offset, offset + n)`` (fewer only where the file ends at its size when opened)."""
        n = max(0, min(n, self.size - offset))
        buf = bytearray(n)
        self.read_into(buf, offset)
        return bytes(buf)

    def mapped(self, *, populate: bool = False) -> Any:
        """The file mapped read-only, for the compiled reader alone (None where it cannot be mapped).
        Only the compiled reader's scans touch it, under a guard that turns the SIGBUS of a page past
        the end of a file cut short meanwhile into an error (``_reader.FileCut``); Python code reads
        the file by offset (:meth:`read`), never through the map. ``populate``: every page mapped in
        one call where the system offers it, rather than a page fault per page."""
        import mmap

        try:
            if hasattr(mmap, "MAP_SHARED"):  # POSIX
                flags = mmap.MAP_SHARED | (getattr(mmap, "MAP_POPULATE", 0) if populate else 0)
                return mmap.mmap(self.fd, self.size, flags=flags, prot=mmap.PROT_READ)
            return mmap.mmap(self.fd, self.size, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            return None

    def read_whole(self) -> Any:
        """The whole file in anonymous memory (a writable ``mmap`` with ``find`` and ``madvise``, no file
        behind it: no one else can shorten it)."""
        import mmap

        # Every page made at once where the system offers it (faulting in fresh zero pages one by one
        # took as long as the copy itself).
        populate = getattr(mmap, "MAP_POPULATE", 0)
        if populate and hasattr(mmap, "MAP_ANONYMOUS"):
            whole = mmap.mmap(-1, max(self.size, 1), flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | populate)
        else:
            whole = mmap.mmap(-1, max(self.size, 1))
        try:
            # Pieces of at most 256 MiB: one pread of the whole is capped by the kernel anyway.
            for at in range(0, self.size, 1 << 28):
                self.read_into(memoryview(whole)[at:min(self.size, at + (1 << 28))], at)
        except BaseException:
            whole.close()
            raise
        return whole

    def check(self) -> None:
        """An InputError when the file is no longer the one opened (size, modification or change time)."""
        info = os.fstat(self.fd)
        if _file_key(info) != self._key:
            detail = (f"{self.size:,} bytes when opened, {info.st_size:,} now" if info.st_size != self.size
                      else "it was written to meanwhile")
            raise changed_error(self.path, detail)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Pread:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _pread_into(fd: int, view: memoryview, offset: int) -> int:
    if hasattr(os, "preadv"):
        return os.preadv(fd, [view], offset)
    data = os.pread(fd, view.nbytes, offset)  # (no preadv: one copy more)
    view[: len(data)] = data
    return len(data)


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


_HASH_PIECE = 1 << 21
"""Bytes read at a time into one reused buffer for the input hash (small enough to stay in the cache
between the read and the hash)."""


def hash_file_into(h: Any, path: str) -> None:
    """Feed a file's bytes to ``h``, read into one reused buffer (a new buffer per piece cost a
    seventh of hashing a 360 MB run in page faults; a memory map would end the process if another
    program cut the file short meanwhile). A regular file that changes while it is hashed is an
    InputError naming it."""
    with Pread(path) as f:
        if not f.regular:
            with os.fdopen(os.dup(f.fd), "rb") as fh:
                for block in iter(lambda: fh.read(1 << 22), b""):
                    h.update(block)
            return
        buf = bytearray(min(_HASH_PIECE, max(f.size, 1)))
        view = memoryview(buf)
        for at in range(0, f.size, len(buf)):
            piece = view[: min(len(buf), f.size - at)]
            f.read_into(piece, at)
            h.update(piece)
        f.check()


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
    closes the iterator (a generator's file and read-ahead go then), as closing it itself would."""

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
    waits for a read still going on, so that what the reads use (an open file, buffers) may be closed after it."""
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
