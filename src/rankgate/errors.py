"""Exceptions raised by rankgate.

Every error a user can cause is a :class:`RankgateError`; the CLI turns it into a one-line message
on stderr and exit code 2. Anything else escaping is a bug in rankgate: the CLI's last-resort guard
prints one line naming it and exits 3 (the traceback only with ``--debug`` or ``RANKGATE_DEBUG=1``).

::

    RankgateError                 base class; never raised itself
    ├── UsageError                bad arguments or API use (a value out of bounds, fields that conflict)
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
*expected* (what would have been accepted) and, when there is one, a *hint* saying what to do. A
request's refusal names its fields as Python code writes them (``calibration needs human``); the command
line says the same with its flags (``--calibration-out needs --human``): see :class:`UsageError`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = ["ConfigError", "InputError", "JudgeError", "MetricSpecError", "OutputError", "RankgateError", "UsageError"]


class RankgateError(Exception):
    """Base class of every error a user of rankgate can cause."""


# A field in a message is its text between two NULs: no argument, path or repr() of a value holds one, so a
# field is never read out of what a user gave.
_MARK = "\x00"
_FIELD = re.compile(f"{_MARK}([^{_MARK}]*){_MARK}")


class FieldNames:
    """Fields of a request as a :class:`UsageError`'s message names them: ``F.human`` is the field ``human``,
    ``F("price_in")`` a field named at run time, ``F(negatives="lexical")`` the field given that value
    (``negatives='lexical'``, as Python code writes it)."""

    def __getattr__(self, name: str) -> str:
        if name.startswith("__"):
            raise AttributeError(name)
        return f"{_MARK}{name}{_MARK}"

    def __call__(self, name: str | None = None, /, **given: Any) -> str:
        if (name is None) == (len(given) != 1):
            raise TypeError("F(name) or F(field=value)")
        text = name if name is not None else "".join(f"{k}={v!r}" for k, v in given.items())
        return f"{_MARK}{text}{_MARK}"


#: ``F.human``: see :class:`FieldNames`.
F = FieldNames()


class UsageError(RankgateError):
    """Arguments or API use that cannot work (e.g. an unknown format name).

    A refusal of a request names the request's fields, each marked with :data:`F`::

        UsageError(f"{F.calibration} needs {F.human} (the human verdicts the judge is measured against)")

    ``str()`` gives the message as Python code names them (``calibration needs human (…)``); ``fields`` lists
    their names in order. :meth:`naming` gives it with each field named another way: the command line names
    each by its option (``--calibration-out needs --human (…)``, from ``rankgate.cli.options.FLAGS``), so one
    check speaks to both of the flows' callers.
    """

    def __init__(self, message: str) -> None:
        self.detail = message
        self.fields = tuple(m.group(1).partition("=")[0] for m in _FIELD.finditer(message))
        super().__init__(self.naming(lambda field: field))

    def naming(self, name: Callable[[str], str]) -> str:
        """The message with each field said as ``name(field)``; ``field`` is as marked: ``human``, or
        ``negatives='lexical'`` for a field given a value."""
        return _FIELD.sub(lambda m: name(m.group(1)), self.detail) if _MARK in self.detail else self.detail


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
