"""Exceptions raised by rankgate.

Every error a user can cause is a :class:`RankgateError`; the CLI turns it into a one-line message
on stderr and exit code 2. Anything else escaping is a bug in rankgate: the CLI's last-resort guard
prints one line naming it and exits 3 (the traceback only with ``--debug`` or ``RANKGATE_DEBUG=1``).

::

    RankgateError                 base class; never raised itself
    ├── UsageError                bad arguments or API use (unknown option value, conflicting flags)
    │   └── MetricSpecError       a metric spec that does not parse, or an unknown metric name
    ├── InputError                bad content in a file or in-memory record: knows path, line, field
    │   └── ConfigError           bad gate/config file: knows path, line, key
    ├── OutputError               an output path that cannot be written (a folder where a file goes,
    │                             a read-only folder, a full disk): knows the path and what to do
    └── JudgeError                a judge that could not give a label: its server, key, model or answers
        └── JudgeCallError        one call that failed for good, after its retries and re-ask
                                  (defined in :mod:`rankgate.judges.base`, which redacts its message)

A :class:`JudgeError` is normally data, not an exception that ends a run: the judge client turns each
failed call into that item's ``judge_error`` and the run goes on. One that escapes to the CLI (a
user's code calling a backend directly) exits 2 like any other RankgateError: it is about the user's
judge setup (a server down, a wrong key, a model that answers nonsense), which the user fixes, not a
bug in rankgate (exit 3).

Messages follow one shape: *where* (``path:line``), *what* (the field and what was given),
*expected* (what would have been accepted) and, when there is one, a *hint* saying what to do.
"""

from __future__ import annotations

__all__ = ["ConfigError", "InputError", "JudgeError", "MetricSpecError", "OutputError", "RankgateError", "UsageError"]


class RankgateError(Exception):
    """Base class of every error a user of rankgate can cause."""


class UsageError(RankgateError):
    """Arguments or API use that cannot work (e.g. an unknown format name)."""


class MetricSpecError(UsageError):
    """A metric spec that does not parse, or names no known metric."""


class InputError(RankgateError):
    """Bad input content. Carries where it was found so the message can point at it.

    ``path`` is the file (or a label such as ``<gold>`` for in-memory data), ``line`` is 1-based
    (``None`` when the format has no lines), ``field`` is the offending field or column.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        field: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.path = path
        self.line = line
        self.field = field
        self.hint = hint
        self.detail = message
        super().__init__(self._render())

    def _render(self) -> str:
        where = ""
        if self.path is not None:
            where = str(self.path)
            if self.line is not None:
                where += f":{self.line}"
            where += ": "
        text = where
        if self.field is not None:
            text += f"field '{self.field}' "
        text += self.detail
        if self.hint:
            text += f" ({self.hint})"
        return text


class FileChangedError(InputError):
    """An input file that another program shortened or rewrote while it was read (exit 2). Never a
    reason to read the file another way: a reader that falls back on its other errors lets this one
    through."""


class ConfigError(InputError):
    """Bad configuration file (gate criteria). ``field`` holds the dotted key path."""


class OutputError(RankgateError):
    """An output that cannot be written: ``path`` is the file or folder, ``hint`` says what to do.

    Commands check every output path before computing anything, so this is usually raised up front;
    raised while writing (a disk that filled up), no output of the command is left half-written.
    """

    def __init__(self, message: str, *, path: str | None = None, hint: str | None = None) -> None:
        self.path = path
        self.hint = hint
        self.detail = message
        text = f"{path}: {message}" if path is not None else message
        super().__init__(f"{text} ({hint})" if hint else text)


class JudgeError(RankgateError):
    """A judge that could not give a label (see :class:`rankgate.judges.base.JudgeCallError`)."""
