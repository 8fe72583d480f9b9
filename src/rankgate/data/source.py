"""Opening input files: plain or gzip, UTF-8, with errors that say which file and why."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
from collections.abc import Iterator
from typing import IO

from ..errors import InputError


def check_file(path: str, what: str) -> None:
    if not os.path.exists(path):
        raise InputError("does not exist", path=path, hint=f"check the {what} path")
    if os.path.isdir(path):
        return
    if os.path.getsize(path) == 0:
        raise InputError("is empty", path=path, hint=f"the {what} file has no content")


def open_text(path: str) -> IO[str]:
    """Open a text file (``.gz`` transparently) as UTF-8; undecodable bytes are an InputError."""
    try:
        if path.endswith(".gz"):
            return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="strict")
        return open(path, encoding="utf-8", errors="strict")
    except OSError as exc:
        raise InputError(f"cannot be opened: {exc.strerror or exc}", path=path) from None


def text_lines(path: str) -> Iterator[tuple[int, str]]:
    """(line number, line) of a text file read as :func:`open_text` reads it; undecodable bytes are
    an InputError naming their line."""
    lineno = 0
    try:
        with open_text(path) as fh:
            for lineno, line in enumerate(fh, start=1):
                yield lineno, line
    except UnicodeDecodeError:
        bad, column, byte = lineno + 1, 0, 0
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rb") as raw:  # decoding runs ahead of the lines: find the line itself
            for bad, data in enumerate(raw, start=1):
                try:
                    data.decode("utf-8")
                except UnicodeDecodeError as exc:
                    column, byte = exc.start + 1, data[exc.start]
                    break
        raise InputError(
            f"is not UTF-8 text (byte {byte:#04x} at column {column})", path=path, line=bad,
            hint="save the file as UTF-8",
        ) from None


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def sniff(path: str) -> str:
    """First non-blank character of the (decompressed) file, or '' when there is none."""
    try:
        with open_text(path) as fh:
            for line in fh:
                s = line.strip()
                if s:
                    return s[0]
    except UnicodeDecodeError:
        raise InputError("is not UTF-8 text", path=path, hint="is it a Parquet file? name it *.parquet") from None
    except (OSError, EOFError) as exc:
        raise InputError(f"cannot be read: {exc}", path=path) from None
    return ""
