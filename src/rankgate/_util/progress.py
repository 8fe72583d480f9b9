"""Progress on a terminal: a line per stage of a long command, and a count or bar for its loops.

The command line decides whether progress is shown: on when standard error is a terminal and ``--quiet``
was not given (:func:`for_terminal`), and it makes that reporter the process's for the command
(:func:`showing`). The code below the command line only says what it is doing, through this module's
functions: :func:`stage` opens a stage (``reading traces.jsonl``, ``reading and scoring run.jsonl``,
``judge relevance``) and :func:`advance` counts what the innermost open stage has done (requests and
spans read, judge calls answered). When no reporter is showing (a library call from Python, a log file, a
pipe, ``--quiet``) both do nothing, cheaply: a stage is a shared object whose methods return at once.

What a terminal sees, on standard error only (never standard output, never a file):

* the innermost open stage on one line, rewritten in place: ``reading traces.jsonl … 120,000 requests 2.1 s``,
  or with a total a bar, ``judge relevance [#####-----] 5/10 calls``;
* a stage that took a second or more leaves its last line (``reading traces.jsonl … 700,000 requests, 35.2 s``);
  a quicker one leaves nothing, and so does a step of an enclosing stage (``assembling 20,000 traces``
  while ``reading traces.otlp.jsonl``);
* the line is redrawn at most ten times a second (and at each whole percent of a known total, so a bar
  of ten moves on every one), and every half second while nothing is counted (the time goes on), so that
  no long command stays silent; counting costs one addition and a clock read per call, and the
  callers count per batch, not per row.

Anything else written to the terminal while a line is shown (a warning on stderr, the table on stdout)
clears the line first: :func:`showing` wraps ``sys.stderr`` (and ``sys.stdout`` when it is the
terminal too) for the time of the command. Nothing here imports rich.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

__all__ = ["Reporter", "Stage", "advance", "current", "decided", "for_terminal", "showing", "stage"]

PERSIST_S = 1.0
"""A stage that took at least this long leaves its last line on the terminal."""
REDRAW_S = 0.1
"""The shortest time between two redraws of a count (ten a second)."""
TICK_S = 0.5
"""How often the line is redrawn while nothing is counted, so that the time shown goes on."""
_BAR = 20  # cells of a bar


class Stage:
    """One stage of a command: what it does (``label``), how much is done (``done``, in ``unit``) out of
    ``total`` when known. Open it with ``with``; count with :meth:`advance` (or :func:`advance`)."""

    __slots__ = ("label", "unit", "total", "done", "start", "_reporter", "_next_time", "_next_count")

    def __init__(self, reporter: Reporter | None, label: str, total: int | None = None, unit: str = "") -> None:
        self.label = label
        self.unit = unit
        self.total = total
        self.done = 0
        self.start = 0.0
        self._reporter = reporter
        self._next_time = 0.0
        self._next_count = 0

    def advance(self, n: int = 1) -> None:
        """``n`` more units done; the line is redrawn when it is due (see the module's docs)."""
        self.done += n
        if self._reporter is not None and (self.done >= self._next_count or time.monotonic() >= self._next_time):
            self._reporter._redraw(self)

    def set(self, done: int) -> None:
        """``done`` units done in all (a reader that starts a file again, another way, counts from where it began)."""
        self.advance(done - self.done)

    def set_total(self, total: int | None) -> None:
        """The total, once it is known (a bar from then on)."""
        self.total = total
        if self._reporter is not None:
            self._next_count = self.done
            self._reporter._redraw(self)

    def __enter__(self) -> Stage:
        if self._reporter is not None:
            self._reporter._open(self)
        return self

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        if self._reporter is not None:
            self._reporter._close(self, failed=kind is not None)


class _QuietStage(Stage):
    """The stage every call gets when no reporter is showing: each method returns at once (it counts
    nothing, being shared)."""

    __slots__ = ()

    def advance(self, n: int = 1) -> None:
        pass

    def set(self, done: int) -> None:
        pass

    def set_total(self, total: int | None) -> None:
        pass


_QUIET = _QuietStage(None, "")


class Reporter:
    """Draws the innermost open stage on ``stream`` (a terminal) and keeps the finished long ones.

    ``persist``: seconds after which a finished stage keeps its line; ``redraw``: the shortest time between
    two redraws of a count; ``tick``: how often the line is redrawn while nothing is counted.
    """

    def __init__(self, stream: TextIO, *, persist: float | None = None, redraw: float | None = None,
                 tick: float | None = None) -> None:
        import threading

        self.stream = stream
        self.persist = PERSIST_S if persist is None else persist
        self.redraw = REDRAW_S if redraw is None else redraw
        self.tick = TICK_S if tick is None else tick
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
        self._ellipsis, self._cells = ("…", "█░") if encoding in ("utf8", "utf8sig") else ("...", "#-")
        self._stack: list[Stage] = []
        self._lock = threading.RLock()
        self._shown = False      # a line of ours is on the terminal (the cursor at its end)
        self._mid_line = False   # someone else's text ends without a newline: draw nothing until it does
        self._closed = False
        self._wake = threading.Event()
        self._ticker: Any = None

    # -- what the stages say ---------------------------------------------------------------------
    def _open(self, stage: Stage) -> None:
        stage.start = time.monotonic()
        with self._lock:
            self._stack.append(stage)
            self._draw(stage)
        if self._ticker is None and self.tick > 0:
            import threading

            self._ticker = threading.Thread(target=self._tick, name="rankgate-progress", daemon=True)
            self._ticker.start()

    def _close(self, stage: Stage, *, failed: bool) -> None:
        with self._lock:
            if stage in self._stack:
                self._stack.remove(stage)
            took = time.monotonic() - stage.start
            # (a step of an enclosing stage leaves nothing: that stage's line says how long the whole took)
            if not failed and not self._stack and took >= self.persist and not self._mid_line:
                self._write("\r" + self._fit(self._line(stage, took, final=True)) + "\x1b[K\n")
                self._shown = False
            else:
                self._clear()
            if self._stack:
                self._draw(self._stack[-1])

    def _redraw(self, stage: Stage) -> None:
        with self._lock:
            if self._stack and self._stack[-1] is stage:
                self._draw(stage)
            else:  # an outer stage counting while an inner one is shown: its count shows when it is back on top
                self._schedule(stage, time.monotonic())

    def _tick(self) -> None:
        while not self._closed:
            self._wake.wait(self.tick)
            with self._lock:
                if self._closed:
                    return
                if self._stack:
                    self._draw(self._stack[-1])

    # -- the terminal ------------------------------------------------------------------------------
    @staticmethod
    def _next_percent(stage: Stage) -> int:
        """The count at which a bar of ``stage.total`` reaches its next whole percent (each unit, for 100 or fewer)."""
        total = stage.total or 1
        return max(stage.done + 1, -(-(stage.done * 100 // total + 1) * total // 100))

    def _schedule(self, stage: Stage, now: float) -> None:
        """When ``stage`` is next redrawn as it counts: after ``redraw`` seconds, or at its next whole percent."""
        stage._next_time = now + self.redraw
        stage._next_count = self._next_percent(stage) if stage.total else 1 << 62

    def _draw(self, stage: Stage) -> None:
        now = time.monotonic()
        self._schedule(stage, now)
        if self._closed or self._mid_line:
            return
        self._write("\r" + self._fit(self._line(stage, now - stage.start)) + "\x1b[K")
        self._shown = True

    def _line(self, stage: Stage, took: float, *, final: bool = False) -> str:
        """``label … 12,345 spans 2.1 s``; with a total ``label [#####-----] 5/10 calls 2.1 s``; ``final``:
        ``label … 12,345 spans, 2.1 s`` (``label … 2.1 s`` when nothing was counted)."""
        parts = [stage.label]
        count = f"{stage.done:,}" if stage.total is None else f"{stage.done:,}/{stage.total:,}"
        if stage.total and not final:
            filled = min(_BAR, stage.done * _BAR // stage.total)
            parts.append("[" + self._cells[0] * filled + self._cells[1] * (_BAR - filled) + "]")
        else:
            parts.append(self._ellipsis)
        counted = bool(stage.done or stage.total)
        if counted:
            parts.append(f"{count} {stage.unit}".rstrip() + ("," if final else ""))
        if final or took >= 1:  # (the time of a line still drawn: once it is worth reading)
            parts.append(f"{took:.1f} s" if took < 60 else f"{int(took) // 60} min {int(took) % 60:02d} s")
        return " ".join(parts)

    def _fit(self, text: str) -> str:
        """``text`` cut to the terminal's width (a line that wraps cannot be rewritten in place)."""
        try:
            width = os.get_terminal_size(self.stream.fileno()).columns
        except (OSError, ValueError, AttributeError):
            width = 0
        width = width or 80  # (a terminal that does not say its size)
        return text if len(text) < width else text[: max(width - 2, 1)] + self._ellipsis[0]

    def _clear(self) -> None:
        if self._shown:
            self._write("\r\x1b[K")
            self._shown = False

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a terminal gone away: progress is not worth an error
            self._closed = True

    # -- other writers -----------------------------------------------------------------------------
    def _before_other(self) -> None:
        self._clear()

    def _after_other(self, text: str) -> None:
        if text:
            self._mid_line = not text.endswith("\n")

    def close(self) -> None:
        """Clear the line and stop drawing (the finished stages' lines stay)."""
        with self._lock:
            self._clear()
            self._closed = True
            self._stack.clear()
        self._wake.set()


class _Sharing:
    """A text stream that clears the progress line before each write of someone else's text (a warning,
    the table): the line and the text never mix on the terminal."""

    def __init__(self, stream: TextIO, reporter: Reporter) -> None:
        self._stream = stream
        self._reporter = reporter

    def write(self, text: str) -> int:
        with self._reporter._lock:
            self._reporter._before_other()
            n = self._stream.write(text)
            self._reporter._after_other(text)
            return n

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


_reporter: Reporter | None = None
_decided = False  # the command line said whether to show progress (a judge's own bar then asks nothing)


def for_terminal(quiet: bool = False, stream: TextIO | None = None) -> Reporter | None:
    """The reporter a command shows progress with: one drawing on ``stream`` (standard error) when it is a
    terminal and not ``quiet``, else None (nothing is shown)."""
    stream = sys.stderr if stream is None else stream
    if quiet or os.environ.get("TERM") == "dumb":
        return None
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        return None
    return Reporter(stream) if tty else None


@contextmanager
def showing(reporter: Reporter | None) -> Iterator[Reporter | None]:
    """Make ``reporter`` the process's for the time of the block (None: show nothing, and no library code
    asks the terminal itself); standard error, and standard output when it is a terminal too, clear the
    line before each write. The line is cleared at the end."""
    global _reporter, _decided
    previous = _reporter, _decided
    _reporter, _decided = reporter, True
    streams = (sys.stdout, sys.stderr)
    try:
        if reporter is not None:
            sys.stderr = _Sharing(sys.stderr, reporter)
            if _isatty(streams[0]):
                sys.stdout = _Sharing(sys.stdout, reporter)
        yield reporter
    finally:
        if reporter is not None:
            reporter.close()
            sys.stdout, sys.stderr = streams
        _reporter, _decided = previous


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def decided() -> bool:
    """Whether the command line decided about progress (:func:`showing`): code that would otherwise show a
    bar of its own on a terminal (a library judge asked for ``progress=True``) then leaves it to that."""
    return _decided


def stage(label: str, *, total: int | None = None, unit: str = "") -> Stage:
    """A stage to open with ``with``: ``with stage("reading run.jsonl", unit="rows") as s: ... s.advance(n)``.
    Shown only while a reporter is showing (:func:`showing`); otherwise a stage that does nothing."""
    reporter = _reporter
    if reporter is None:
        return _QUIET
    return Stage(reporter, label, total, unit)


def current() -> Stage:
    """The innermost open stage (a quiet one when none is open or nothing is shown): what a loop deep in a
    reader counts into, once per batch, without knowing the stage's name."""
    reporter = _reporter
    if reporter is None or not reporter._stack:
        return _QUIET
    return reporter._stack[-1]


def advance(n: int = 1) -> None:
    """Count ``n`` more units done in the innermost open stage (nothing when none is shown)."""
    reporter = _reporter
    if reporter is not None and reporter._stack:
        reporter._stack[-1].advance(n)
