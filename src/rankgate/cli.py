"""The ``rankgate`` command: argument parsing and exit codes, nothing else.

Exit codes: 0 ok, 1 a gate failed, 2 usage or input error (one line on stderr, no traceback, no
partial output files). Sub-commands live in :mod:`rankgate.commands`, one module each, exposing
``add_parser(subparsers)`` and ``run(args) -> int``; their heavy imports happen inside ``run`` so
``rankgate --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from . import __version__

# Order shown in --help. A module that is not present in this build is skipped.
COMMANDS = ("evaluate", "compare", "gate", "report", "retrieve", "demo", "metrics")

EXIT_OK, EXIT_GATE_FAILED, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's default exit code is 2 too; keep one line
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"rankgate: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="rankgate",
        description="Evaluate the retrieval half of a RAG system against a gold set, and gate releases on it.",
    )
    parser.add_argument("--version", action="version", version=f"rankgate {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    # Sub-parsers are added by each command module; aliases must map back to the module name.
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"rankgate.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"rankgate.commands.{name}":
                continue
            raise
        module.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return EXIT_USAGE
    from ._memory import keep_freed_memory
    from .errors import RankgateError

    keep_freed_memory()
    try:
        module = importlib.import_module(f"rankgate.commands.{args.command}")
        return int(module.run(args))
    except RankgateError as exc:
        print(f"rankgate {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("rankgate: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK


def entry() -> None:
    """The ``rankgate`` executable and ``python -m rankgate``: :func:`main`, then leave at once.

    Once the command has returned, its files are written (atomically) and its output only needs
    flushing; tearing the interpreter down object by object after a 10M-row evaluation took a
    tenth of a second, so the process ends without it. Code that calls :func:`main` in-process
    (tests, scripts) gets the ordinary return value.
    """
    import os

    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # the reader went away; nothing more to say
        pass
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
