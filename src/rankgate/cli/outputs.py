"""What each command writes, declared once; checked against what it reads before any work; written as one unit.

A command module declares its outputs in a module-level ``OUTPUTS``: the option's field in the parsed
arguments (``out``, ``json``, ``calibration_out``…) -> an :class:`Output`, a file or a folder and the file
names written into it. A command with actions (``gold stale``, ``gold remap``) declares one table per
action, by action name. :func:`check_outputs`, called before the command reads or computes anything,
checks every output the options name, in the table's order:

* it can be written as a file or a folder (:func:`rankgate._util.atomic.check_file`,
  :func:`~rankgate._util.atomic.check_folder`);
* it is none of the request's inputs (its ``inputs()``, and any file the command reads itself): writing it
  would replace data the command reads (:func:`~rankgate._util.atomic.check_not_input`). An output declared
  with ``replaces=("baseline",)`` may replace the file that request field names: a baseline summary
  rolled forward (``gate --baseline gate.json --json-out gate.json``);
* no two outputs name the same file.

Each refusal is an :class:`~rankgate.errors.OutputError` or a :class:`~rankgate.errors.UsageError`
naming the option: exit 2, nothing written. What :func:`check_outputs` returns, :class:`Planned`, writes
a run's files as one unit (:meth:`Planned.write`: all new files, or on any failure all old ones), and
only the files it checked.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # pragma: no cover
    from typing import Protocol

    from rankgate.flows._inputs import FilePath

    class Reads(Protocol):
        """A flow's request: it names the files it reads."""

        def inputs(self) -> tuple[FilePath, ...]: ...

__all__ = ["Output", "Planned", "check_outputs"]


class Output(NamedTuple):  # (a named tuple: the command line imports this module on every start)
    """One output option of a command.

    ``option``: the flag as messages name it (``--out``, ``-o``). ``files``: the names written into the
    folder the option names; None when the option names a file. ``beside``: a further file written with
    the option's file, from its path (the judge's labels and their sidecar). ``replaces``: fields of the
    request whose files this output may replace. ``default``: the path when the option is not given, from
    the parsed arguments (``gold remap``'s review list beside ``-o``). ``required``: the option is required
    and the command always writes it, so an empty path is checked (and refused where it names no file); an
    optional output given as an empty path is not written."""

    option: str
    files: tuple[str, ...] | None = None
    beside: Callable[[str], str] | None = None
    replaces: tuple[str, ...] = ()
    default: Callable[[argparse.Namespace], str | None] | None = None
    required: bool = False

    def path(self, args: argparse.Namespace, name: str) -> str | None:
        """The path the options give this output (the field ``name``), or None when it is not written."""
        value = getattr(args, name, None)
        if value is None and self.default is not None:
            value = self.default(args)
        return None if value is None or (value == "" and not self.required) else os.fspath(value)

    def targets(self, path: str) -> list[str]:
        """The files written: the file itself (and the one beside it), or each file in the folder."""
        if self.files is not None:
            return [os.path.join(path, name) for name in self.files]
        return [path] + ([self.beside(path)] if self.beside is not None else [])


class Planned:
    """The outputs of one run, checked: each output's path by field (:attr:`paths`), and the files they may
    write (absolute)."""

    def __init__(self, paths: Mapping[str, str], files: frozenset[str]) -> None:
        self.paths = paths
        self.files = files

    def write(self, files: Mapping[str, str | bytes]) -> None:
        """Write ``path -> data`` as one unit (:func:`rankgate._util.atomic.write_files`): all of them or,
        on any failure, none. Every path must be one :func:`check_outputs` checked."""
        from rankgate._util.atomic import write_files

        unchecked = [path for path in files if os.path.abspath(path) not in self.files]
        if unchecked:
            raise RuntimeError(f"{unchecked[0]} is not a declared output of this command; declare it in OUTPUTS")
        write_files(files)


def check_outputs(args: argparse.Namespace, outputs: Mapping[str, Output], request: Reads | None = None,
                  also_reads: Iterable[object] = ()) -> Planned:
    """Check every output the options name (see the module docs) and return them as :class:`Planned`.

    ``request``: the flow's request, whose ``inputs()`` no output may be; ``also_reads``: files the command
    reads besides the request's (None entries are skipped)."""
    from rankgate._util.atomic import check_file, check_folder, check_not_input

    extra = tuple(also_reads)
    paths: dict[str, str] = {}
    owners: dict[str, tuple[str, str]] = {}  # a file written (absolute) -> (its option, its path as given)
    for name, out in outputs.items():
        path = out.path(args, name)
        if path is None:
            continue
        inputs = (*_inputs(request, out.replaces), *extra)
        if out.files is not None:
            check_folder(path, out.files, option=out.option)
        for target in out.targets(path):
            if out.files is None:
                check_file(target, option=out.option)
            check_not_input(target, inputs, option=out.option)
        paths[name] = path
        for target in out.targets(path):
            seen = owners.setdefault(os.path.abspath(target), (out.option, target))
            if seen[0] != out.option:
                from rankgate.errors import UsageError

                raise UsageError(f"{seen[0]} and {out.option} name the same file {seen[1]}; give each its own file")
    return Planned(paths, frozenset(owners))


def _inputs(request: Reads | None, replaces: tuple[str, ...]) -> tuple[FilePath, ...]:
    """The request's inputs, less the files of the fields an output may replace."""
    if request is None:
        return ()
    if replaces:
        import dataclasses

        assert dataclasses.is_dataclass(request) and not isinstance(request, type)  # (a flow's request)
        request = dataclasses.replace(request, **{name: None for name in replaces})
    return request.inputs()
