"""The ``rankgate`` command: argument parsing and exit codes, nothing else.

Exit codes (README "Exit codes"):

* 0 ok; 1 a blocking gate failed (only ever from a gate outcome);
* 2 usage, input or output error (one line on stderr naming the file, no traceback, no partial
  output files);
* 3 rankgate could not finish: an internal error (a bug: one line asking for a report; the
  traceback only with ``--debug`` or ``RANKGATE_DEBUG=1``) or the machine ran out of memory;
* 130 interrupted (SIGINT, Ctrl-C), 143 terminated (SIGTERM); both clean up first: an output is
  either the old file or the whole new one, and no temporary file is left.

Sub-commands live in :mod:`rankgate.cli`, one module each, exposing ``add_parser(subparsers)``
and ``run(args) -> int`` (a command ``a-b`` lives in module ``a_b``); their heavy imports happen inside ``run`` so ``rankgate --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
from typing import Any, NoReturn
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from rankgate import __version__

# Order shown in --help. A module that is not present in this build is skipped.
COMMANDS = ("evaluate", "compare", "gate", "report", "retrieve", "demo", "metrics", "gold", "incident", "traces",
            "calibrate_abstention", "answers", "judge", "pool", "label", "stress", "validity", "history")

EXIT_OK, EXIT_GATE_FAILED, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143
DEBUG_ENV = "RANKGATE_DEBUG"
_DEBUG_HELP = "on an internal error, print the traceback (also: RANKGATE_DEBUG=1)"


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C's KeyboardInterrupt so the same clean-up runs."""


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # No prefix matching: `gate --run` once meant --run-format; an option is spelled whole or refused.
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:  # argparse's default exit code is 2 too; keep one line
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"rankgate: error: {message}\n")


class _Version(argparse.Action):
    """``--version``: the version and the active native build (``RANKGATE_NATIVE``), e.g.
    ``rankgate 0.2.0 (native: auto, kernels avx512f, reader plain)``."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> NoReturn:
        from rankgate._native import describe

        sys.stdout.write(f"rankgate {__version__} ({describe()})\n")
        parser.exit()


def _warn_unknown_native() -> None:
    """One line on stderr when RANKGATE_NATIVE holds none of its values (the library runs as auto)."""
    from rankgate._native import ENV, MODES, unknown_value

    if unknown_value is not None:
        print(f"rankgate: warning: {ENV}={unknown_value!r} is not one of {', '.join(MODES)}; running as auto",
              file=sys.stderr)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; with ``only`` (a command's module name), just that command's sub-parser:
    every command's takes ~0.1 s to import and build, paid by each run of one command."""
    parser = _Parser(
        prog="rankgate",
        description="Evaluate the retrieval half of a RAG system against a gold set, and gate releases on it.",
        epilog="Exit codes: 0 ok, 1 a blocking gate failed, 2 usage/input/output error, 3 internal error "
               "(or out of memory), 130 interrupted, 143 terminated.",
    )
    parser.add_argument("--version", action=_Version, help="show the version and the native build, and exit")
    parser.add_argument("--debug", action="store_true", help=_DEBUG_HELP)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    # Sub-parsers are added by each command module; aliases must map back to the module name.
    for name in COMMANDS if only is None else (only,):
        try:
            module = importlib.import_module(f"rankgate.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"rankgate.cli.{name}":
                continue
            raise
        module.add_parser(sub)
    for command in set(sub.choices.values()):
        # SUPPRESS: a sub-command that was not given --debug must not reset the top-level one.
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=_DEBUG_HELP)
    for name, actions in QUIET.items():
        if name in sub.choices:
            _add_quiet(sub.choices[name], actions)
    return parser


#: The long commands, which show progress on a terminal and take ``--quiet`` (None: the command itself; else its
#: actions that take it).
QUIET: dict[str, tuple[str, ...] | None] = {
    "evaluate": None, "compare": None, "gate": None, "report": None, "answers": None,
    "traces": ("analyze", "check", "sample", "judge"), "gold": ("stale", "remap", "plan"), "judge": ("relevance",),
    "validity": None, "history": ("add", "report", "compare"),
}


def _add_quiet(command: argparse.ArgumentParser, actions: tuple[str, ...] | None) -> None:
    from rankgate.cli.options import add_quiet

    if actions is None:
        add_quiet(command)
        return
    verbs = next(a for a in command._actions if isinstance(a, argparse._SubParsersAction))
    for action in actions:
        add_quiet(verbs.choices[action])


@contextmanager
def _progress(args: argparse.Namespace) -> Iterator[None]:
    """While a long command runs, its progress on the terminal (stderr a terminal, no ``--quiet``;
    :mod:`rankgate._util.progress`); the other commands leave it undecided."""
    if not hasattr(args, "quiet"):
        yield
        return
    from rankgate._util.progress import for_terminal, showing

    with showing(for_terminal(quiet=args.quiet)):
        yield


def _named_command(argv: Sequence[str]) -> str | None:
    """The module of the command ``argv`` runs, or None (no command or an unknown one: the full parser says
    which exist). The top-level options take no value, so the command is the first other word."""
    word = next((a for a in argv if not a.startswith("-")), "")
    name = word.replace("-", "_")
    return name if name in COMMANDS and "_" not in word else None


def _debug_from_env() -> bool:
    return os.environ.get(DEBUG_ENV, "").strip().lower() not in ("", "0", "false", "no", "off")


def main(argv: Sequence[str] | None = None) -> int:
    from rankgate._util.redact import registered, restore

    secrets = registered()
    try:
        return _main(argv)
    finally:  # the secrets this command registered are its own (a test may run many in one process)
        restore(secrets)


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = _debug_from_env() or "--debug" in argv
    command = "" if not argv else next((a for a in argv if a in COMMANDS), "")
    _warn_unknown_native()
    with _terminate_as_interrupt():
        try:
            parser = build_parser(_named_command(argv))
            args = parser.parse_args(argv)
            debug = _debug_from_env() or bool(getattr(args, "debug", False))
            command = getattr(args, "command", None) or ""
            if not command:
                parser.print_help()
                return EXIT_USAGE
            from rankgate._util.memory import keep_freed_memory
            from rankgate.errors import RankgateError

            keep_freed_memory()
            module = importlib.import_module(f"rankgate.cli.{command.replace('-', '_')}")
            real_stdout, sys.stdout = sys.stdout, _GuardedStdout(sys.stdout)
            try:
                with _progress(args):
                    code = int(module.run(args))
                sys.stdout.flush()  # a full disk shows here, while the error can still be reported
            except RankgateError as exc:
                from rankgate.cli.options import said_with_flags  # a flow names fields; the command, its options

                print(f"rankgate {command}: error: {_one_line(said_with_flags(exc, command))}", file=sys.stderr)
                return EXIT_USAGE
            finally:
                if isinstance(sys.stdout, _GuardedStdout):
                    sys.stdout = real_stdout
            if code not in (EXIT_OK, EXIT_GATE_FAILED, EXIT_USAGE):
                raise RuntimeError(f"command returned exit code {code}")
            return code
        except Terminated:
            print("rankgate: terminated", file=sys.stderr)
            return EXIT_TERMINATED
        except KeyboardInterrupt:
            print("rankgate: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
        except BrokenPipeError:
            return EXIT_OK
        except MemoryError:
            _traceback(debug)
            print(f"{_prefix(command)}: error: ran out of memory; use smaller inputs (or fewer --resamples), "
                  "or run on a machine with more memory", file=sys.stderr)
            return EXIT_INTERNAL
        except Exception as exc:  # noqa: BLE001 - the last-resort guard: a bug must never look like a verdict
            _traceback(debug)
            hint = "" if debug else "; rerun with --debug for the traceback"
            print(f"{_prefix(command)}: internal error: {type(exc).__name__}: {_one_line(str(exc))} "
                  f"— please report it{hint}", file=sys.stderr)
            return EXIT_INTERNAL


class _GuardedStdout:
    """Standard output that reports a failed write (a full disk, a dead terminal) as an output error
    naming stdout (exit 2), not as an internal error. A closed pipe stays a BrokenPipeError."""

    def __init__(self, stream: object) -> None:
        self._stream = stream

    def _guard(self, call: object, *args: object) -> object:
        try:
            return call(*args)  # type: ignore[operator]
        except BrokenPipeError:
            raise
        except OSError as exc:
            from rankgate.errors import OutputError

            raise OutputError(f"cannot write to standard output: {exc.strerror or exc}", path="<stdout>",
                              hint="free space on the disk stdout goes to, or redirect it elsewhere") from None

    def write(self, text: str) -> int:
        return self._guard(self._stream.write, text)  # type: ignore[attr-defined, return-value]

    def flush(self) -> None:
        self._guard(self._stream.flush)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def _prefix(command: str) -> str:
    return f"rankgate {command}" if command else "rankgate"


def _one_line(text: str, limit: int = 500) -> str:
    """``text`` on one line, secrets redacted (:mod:`rankgate._util.redact`), cut to ``limit`` characters."""
    from rankgate._util.redact import redact

    line = redact(" ".join(text.split()))
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _traceback(debug: bool) -> None:
    if debug:
        import traceback

        from rankgate._util.redact import redact

        sys.stderr.write(redact(traceback.format_exc()))


@contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """While the command runs, SIGTERM raises :class:`Terminated` (a KeyboardInterrupt), so the
    clean-up that Ctrl-C gets (temporary files removed, old outputs kept) runs for it too."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(_signum: int, _frame: object) -> None:
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def entry() -> None:
    """The ``rankgate`` executable and ``python -m rankgate``: :func:`main`, then leave at once.

    Once the command has returned, its files are written (atomically) and its output only needs
    flushing; tearing the interpreter down object by object after a 10M-row evaluation took a
    tenth of a second, so the process ends without it. Code that calls :func:`main` in-process
    (tests, scripts) gets the ordinary return value.
    """
    import os

    # numpy's OpenBLAS starts a thread per core at import, which spin for a while after each call:
    # 0.1-0.2 s of CPU a run for nothing (rankgate's sums are its own loops; no command multiplies
    # matrices large enough to want them). A user's own setting is kept.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from rankgate._util.pandas_guard import install

    install()  # pyarrow would import pandas for nothing (0.2-0.4 s where it is installed)
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # the reader went away; nothing more to say
        pass
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
