"""Writing a command's outputs safely: checked before any work, written as one unit.

* :func:`check_file` / :func:`check_folder` refuse, before anything is computed, an output path that
  cannot be written (a folder where a file goes, a file where a folder goes, a device, a folder that
  is read-only or does not take new files): :class:`~rankgate.errors.OutputError`, exit 2.
* :func:`write_files` writes every output of one command as a unit: each file first goes to a hidden
  temporary file (``.rankgate-*.tmp``) in its own folder, then all of them are renamed into place.
  If anything fails — a full disk, a rename refused — the new temporary files are removed and the
  files already renamed are put back, so the folder holds all old outputs or all new ones, never a
  mix and never a partial file. SIGINT and SIGTERM that arrive while the unit is written are held
  and delivered once it is done (the write is short: the data is already in memory).
* :func:`write_bytes` / :func:`write_text` are the one-file case.
* An output path that is a symbolic link to a regular file is written through: the new content
  replaces the file the link points to (the temporary file goes to that file's folder), and the link
  stays a link. A gold set kept as ``gold.jsonl -> data/gold-v3.jsonl`` is updated where it lives.
  A link to nothing or to something other than a regular file is not followed (:func:`check_file`
  refuses it).
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from rankgate.errors import OutputError

__all__ = ["check_file", "check_folder", "check_not_input", "held_signals", "write_bytes", "write_files", "write_text"]

TEMP_PREFIX, TEMP_SUFFIX = ".rankgate-", ".tmp"
Data = bytes | str


# -- checks, before any work ----------------------------------------------------------------------
def check_file(path: str | os.PathLike[str], *, option: str | None = None) -> None:
    """Raise :class:`OutputError` unless ``path`` can be written as a regular file."""
    p = os.path.abspath(os.fspath(path))
    shown = os.fspath(path)
    if os.path.isdir(p):
        raise OutputError("is a folder; a file is written here", path=shown,
                          hint=f"give {option or 'the output'} a file name" + _inside(shown))
    if os.path.lexists(p) and not os.path.isfile(p):
        raise OutputError("exists and is not a regular file (a device, pipe or broken link)", path=shown,
                          hint=f"give {option or 'the output'} the path of a regular file; outputs are replaced, "
                               "not written through")
    _check_parent(os.path.dirname(p), shown, option)


def check_not_input(output: str | os.PathLike[str], inputs: Iterable[object], *, option: str | None = None) -> None:
    """Raise :class:`OutputError` if ``output`` is one of the ``inputs`` (``None`` entries skipped):
    writing it would replace data the command reads, e.g. ``retrieve -o gold.jsonl``."""
    if not os.path.isfile(output):
        return
    for item in inputs:
        if item is None or not isinstance(item, (str, os.PathLike)):
            continue
        try:
            same = os.path.isfile(item) and os.path.samefile(output, item)
        except OSError:
            same = False
        if same:
            raise OutputError(f"is also an input of this command ({os.fspath(item)})", path=os.fspath(output),
                              hint=f"give {option or 'the output'} another path, so the input is not overwritten")


def check_folder(path: str | os.PathLike[str], names: Iterable[str] = (), *, option: str | None = None) -> None:
    """Raise :class:`OutputError` unless ``path`` can be (or is) a folder taking the files ``names``."""
    p = os.path.abspath(os.fspath(path))
    shown = os.fspath(path)
    if os.path.lexists(p) and not os.path.isdir(p):
        raise OutputError("exists and is not a folder", path=shown,
                          hint=f"{option or 'the output'} names a folder to write into; choose another path")
    _check_parent(p, shown, option)
    for name in names:
        target = os.path.join(shown, name)
        if os.path.isdir(target) or (os.path.lexists(target) and not os.path.isfile(target)):
            raise OutputError(f"is in the way: {name} is written here as a file", path=target,
                              hint=f"move it away, or give {option or 'the output'} another folder")


def _inside(shown: str) -> str:
    return f", e.g. {os.path.join(shown, 'out')}" if shown else ""


def _check_parent(folder: str, shown: str, option: str | None = None) -> None:
    """The nearest existing folder on the way to ``folder`` must be a folder that takes new files."""
    probe = folder
    while not os.path.lexists(probe):
        up = os.path.dirname(probe)
        if up == probe:
            break
        probe = up
    if not os.path.isdir(probe):
        raise OutputError(f"cannot be written: {probe} is a file, not a folder", path=shown,
                          hint=f"give {option or 'the output'} a path inside a folder")
    # Asking the file system is the only reliable test (read-only mounts, ACLs, root, quotas):
    # create and remove an empty hidden file where the outputs will go.
    try:
        fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=TEMP_SUFFIX, dir=probe)
    except OSError as exc:
        raise OutputError(f"cannot be written: the folder {probe} does not take new files ({_reason(exc)})",
                          path=shown, hint=f"give {option or 'the output'} a path in a writable folder") from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(tmp)


def _reason(exc: OSError) -> str:
    return exc.strerror or (errno.errorcode.get(exc.errno or 0) or type(exc).__name__)


# -- signals ----------------------------------------------------------------------------------------
@contextlib.contextmanager
def held_signals() -> Iterator[None]:
    """Hold SIGINT and SIGTERM until the block is done, then deliver them to their handlers.

    Only the main thread can change handlers; elsewhere (and for handlers not set from Python) this
    holds nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    saved: dict[signal.Signals, Any] = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        old = signal.getsignal(sig)
        if old is None:
            continue
        saved[sig] = old
        signal.signal(sig, lambda signum, _frame: pending.append(signum))
    try:
        yield
    finally:
        for sig, old in saved.items():
            signal.signal(sig, old)
        if pending:
            signal.raise_signal(pending[0])


# -- writing ----------------------------------------------------------------------------------------
def write_files(files: Mapping[str, Data | None] | Mapping[Path, Data | None]
                | Mapping[str | os.PathLike[str], Data | None]) -> None:
    """Write every ``path -> data`` as one unit: all new files, or (on any failure) all old ones.

    ``str`` data is written as UTF-8; ``None`` removes the file at that path (if any) as part of the
    unit. Missing folders are created. OS errors become :class:`OutputError` naming the file.
    """
    items = [(_resolved(os.fspath(path)), data.encode("utf-8") if isinstance(data, str) else data)
             for path, data in files.items()]
    removals = [path for path, data in items if data is None]
    temps: list[tuple[str, str]] = []  # (temporary, target), not yet renamed
    done: list[tuple[str, str | None]] = []  # (target, backup of the old file or None), renamed
    with held_signals():
        try:
            for path, data in items:
                if data is not None:
                    temps.append((_write_temp(path, data), path))
            while temps:
                tmp, path = temps[0]
                backup = _backup(path)
                try:
                    os.replace(tmp, path)
                except OSError as exc:
                    if backup is not None:
                        with contextlib.suppress(OSError):
                            os.unlink(backup)
                    raise OutputError(f"cannot be written ({_reason(exc)})", path=path,
                                      hint="check the folder's permissions and free space") from None
                temps.pop(0)
                done.append((path, backup))
            for path in removals:
                if not os.path.lexists(path):
                    continue
                backup = _backup(path)
                try:
                    os.unlink(path)
                except OSError as exc:
                    raise OutputError(f"cannot be removed ({_reason(exc)})", path=path,
                                      hint="check the folder's permissions") from None
                if backup is not None:
                    done.append((path, backup))
        except BaseException:
            for tmp, _ in temps:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            for path, backup in reversed(done):  # put the old outputs back
                with contextlib.suppress(OSError):
                    if backup is None:
                        os.unlink(path)
                    else:
                        os.replace(backup, path)
            raise
        for _, backup in done:
            if backup is not None:
                with contextlib.suppress(OSError):
                    os.unlink(backup)


def _resolved(path: str) -> str:
    """``path``, or the regular file it links to (through every link) when it is a symbolic link."""
    if os.path.islink(path) and os.path.isfile(path):
        return os.path.realpath(path)
    return path


def _write_temp(path: str, data: bytes) -> str:
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=TEMP_SUFFIX, dir=folder)
    except OSError as exc:
        raise OutputError(f"cannot be written ({_reason(exc)})", path=path,
                          hint="choose a writable folder") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual permissions
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise OutputError(f"cannot be written ({_reason(exc)})", path=path,
                              hint="check the free space and the folder's permissions") from None
        raise
    return tmp


def _backup(path: str) -> str | None:
    """A hard link to the file now at ``path`` (to put it back if a later rename fails), or None."""
    if not os.path.isfile(path):
        return None
    folder = os.path.dirname(os.path.abspath(path))
    for attempt in range(100):
        name = os.path.join(folder, f"{TEMP_PREFIX}old-{os.getpid()}-{attempt}{TEMP_SUFFIX}")
        try:
            os.link(path, name)
            return name
        except FileExistsError:
            continue
        except OSError:  # a file system without hard links: no rollback for this file
            return None
    return None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (see :func:`write_files`)."""
    write_files({path: data})


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` as UTF-8, atomically."""
    write_files({path: text})
