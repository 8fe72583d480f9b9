"""Progress on a terminal (rankgate._util.progress): the long commands say what they are doing on stderr when it
is a terminal, never without one, never with --quiet, and never in what they write.

The commands run under a pseudo-terminal (their stderr is its slave end) and the test reads the master end as the
text arrives, with the time it came; the times are printed on failure, never asserted (a loaded machine is slow).
"""

from __future__ import annotations

import io
import json
import os
import re
import selectors
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rankgate._util import progress
from rankgate.cli.main import QUIET, build_parser, main
from rankgate.cli.options import QUIET_HELP

ROOT = Path(__file__).resolve().parents[1]
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def on_terminal(argv: list[str], cwd: Path, timeout: float = 120) -> tuple[int, list[tuple[float, str]], bytes]:
    """``python -m rankgate ARGV`` with stderr on a pseudo-terminal: (exit code, [(seconds since start, text read
    from the terminal)], stdout)."""
    import pty

    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm", "PYTHONPATH": str(ROOT / "src") + os.pathsep + str(ROOT),
           "COLUMNS": "120"}
    out = cwd / "stdout.txt"  # (a file, not a pipe nobody reads while the terminal is)
    start = time.monotonic()
    with out.open("wb") as stdout:
        proc = subprocess.Popen([sys.executable, "-m", "rankgate", *argv], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=stdout, stderr=slave)
    os.close(slave)
    seen: list[tuple[float, str]] = []
    deadline = start + timeout
    # (a selector, not select.select: in a long test run the descriptor's number can pass select's 1024)
    waiting = selectors.DefaultSelector()
    waiting.register(master, selectors.EVENT_READ)
    try:
        while time.monotonic() < deadline:
            ready = waiting.select(0.05)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # the slave end closed: the process is gone
                    break
                if not data:
                    break
                seen.append((time.monotonic() - start, data.decode("utf-8", "replace")))
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=timeout)  # (the process has closed the terminal, or the deadline passed)
    finally:
        waiting.close()
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    return code, seen, out.read_bytes()


def frames(seen: list[tuple[float, str]]) -> list[tuple[float, str]]:
    """Each line the terminal was shown, in order, escape codes removed: a progress line is rewritten in place
    (``\\r``), so every rewrite is a frame of its own."""
    out = []
    for at, text in seen:
        for piece in re.split(r"[\r\n]+", text):
            piece = ANSI.sub("", piece).strip()
            if piece:
                out.append((at, piece))
    return out


def timeline(seen: list[tuple[float, str]]) -> str:
    return "\n".join(f"{at:6.2f} {text}" for at, text in frames(seen))


def write_traces(path: Path, n: int) -> None:
    """``n`` requests of rankgate's trace JSONL (docs/traces.md), a few hundred bytes each."""
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps({
                "request_id": f"r{i}", "timestamp": f"2026-05-01T{(i // 60) % 24:02d}:{i % 60:02d}:00Z",
                "query": f"question {i % 300}", "tenant": "ab"[i % 2], "status": "ok",
                "timings_ms": {"retrieval": 40 + i % 17, "total": 800 + i % 91},
                "retrieved": [{"stage": "candidate", "rank": k + 1, "id": f"c{(i + k) % 700}",
                               "score": round(0.9 - k * 0.05, 3), "source": "kb"} for k in range(5)]}) + "\n")


def write_queue(path: Path, n: int = 10) -> None:
    """A pooling queue of ``n`` items, as ``rankgate pool`` writes it."""
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps({"query_id": f"q{i % 3}", "query": "how long is the refund window", "id": f"c{i}",
                                 "text": "The refund window is 30 days." if i % 2 else "Our office is in Berlin."})
                     + "\n")


@pytest.mark.slow  # (two runs of traces analyze, one in a fresh interpreter: about 3 s on two busy cores)
def test_traces_analyze_on_a_terminal_says_what_it_reads_while_it_reads(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    traces = tmp_path / "traces.jsonl"
    write_traces(traces, 3000)
    code, seen, stdout = on_terminal(["traces", "analyze", "--traces", "traces.jsonl", "--out", "tty"], tmp_path)
    shown = frames(seen)
    assert code == 0, timeline(seen)
    reading = [i for i, (_, text) in enumerate(shown) if text.startswith("reading traces.jsonl")]
    computing = [i for i, (_, text) in enumerate(shown) if text.startswith("computing the signals of 3,000 requests")]
    # the reading stage is on the terminal from the start of the reading, before the signals are computed
    assert reading and computing and reading[0] < computing[0], timeline(seen)
    counts = [int(m.group(1).replace(",", "")) for _, text in shown
              if (m := re.match(r"reading traces\.jsonl … ([\d,]+) requests", text))]
    assert counts == sorted(counts) and all(0 < c <= 3000 for c in counts), timeline(seen)
    assert b"reading" not in stdout and b"\x1b[K" not in stdout  # standard output is the panel's alone
    print(f"first progress {shown[0][0]:.2f} s after start; exit after {seen[-1][0]:.2f} s")  # (seen with -s)

    # the same command without a terminal: no progress at all, and the same files
    assert main(["traces", "analyze", "--traces", str(traces), "--out", str(tmp_path / "pipe")]) == 0
    err = capsys.readouterr().err
    assert "reading" not in err and "\r" not in err and "\x1b" not in err
    for name in ("signals.csv", "summary.json", "trace_report.html"):
        assert (tmp_path / "tty" / name).read_bytes() == (tmp_path / "pipe" / name).read_bytes(), name


def test_traces_analyze_counts_the_requests_it_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The same in this process, on a stream that says it is a terminal (fast enough for every run)."""
    traces = tmp_path / "traces.jsonl"
    write_traces(traces, 1500)
    term = Terminal()
    with monkeypatch.context() as m:
        m.setattr(sys, "stderr", term)
        m.setattr(progress, "REDRAW_S", 0.0)
        assert main(["traces", "analyze", "--traces", str(traces), "--out", str(tmp_path / "tty")]) == 0
    shown = lines_of(term.getvalue())
    counts = [int(m.group(1).replace(",", "")) for text in shown
              if (m := re.match(r"reading traces\.jsonl … ([\d,]+) requests", text))]
    assert sorted(set(counts)) == [1024, 1500] and counts == sorted(counts), shown  # per block of lines, then the rest
    assert shown.index(next(s for s in shown if s.startswith("reading traces.jsonl"))) < \
        shown.index("computing the signals of 1,500 requests …"), shown
    assert main(["traces", "analyze", "--traces", str(traces), "--out", str(tmp_path / "pipe"), "-q"]) == 0
    assert "reading" not in capsys.readouterr().err
    for name in ("signals.csv", "summary.json", "trace_report.html"):
        assert (tmp_path / "tty" / name).read_bytes() == (tmp_path / "pipe" / name).read_bytes(), name


def test_the_judge_bar_moves_on_every_completion_of_a_small_task(tmp_path: Path) -> None:
    write_queue(tmp_path / "queue.jsonl", 10)
    argv = ["judge", "relevance", "queue.jsonl", "--no-cache", "-o"]
    code, seen, _ = on_terminal([*argv, "tty.jsonl"], tmp_path)
    assert code == 0, timeline(seen)
    done = [int(m.group(1)) for _, text in frames(seen)
            if (m := re.match(r"judge context_relevance \[.*\] (\d+)/10 calls", text))]
    assert sorted(set(done)) == list(range(11)) and done == sorted(done), timeline(seen)  # 0/10 … 10/10, each once at least
    assert "10 of 10 items labelled" in timeline(seen)

    # --quiet on the terminal: the command's own lines only; and the labels are the same bytes
    code, seen, _ = on_terminal([*argv, "quiet.jsonl", "--quiet"], tmp_path)
    assert code == 0 and "10 of 10 items labelled" in timeline(seen)
    assert "judge context_relevance" not in timeline(seen) and "\x1b[K" not in "".join(t for _, t in seen)
    assert (tmp_path / "tty.jsonl").read_bytes() == (tmp_path / "quiet.jsonl").read_bytes()


def test_no_progress_without_a_terminal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_queue(tmp_path / "queue.jsonl", 10)
    assert main(["judge", "relevance", str(tmp_path / "queue.jsonl"), "--no-cache", "-o", str(tmp_path / "l.jsonl")]) == 0
    err = capsys.readouterr().err
    assert "10 of 10 items labelled" in err and "judge context_relevance" not in err and "\x1b" not in err


def test_every_long_command_takes_quiet_with_one_meaning() -> None:
    import argparse

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    for name, actions in QUIET.items():
        command = commands[name]
        targets = [command] if actions is None else [
            next(a for a in command._actions if isinstance(a, argparse._SubParsersAction)).choices[v] for v in actions]
        for target in targets:
            quiet = [a for a in target._actions if "--quiet" in a.option_strings]
            assert len(quiet) == 1 and quiet[0].option_strings == ["--quiet", "-q"], target.prog
            assert quiet[0].help == QUIET_HELP and isinstance(quiet[0], argparse._StoreTrueAction), target.prog
    assert build_parser("evaluate").parse_args(["evaluate", "--gold", "g", "--run", "r", "-q"]).quiet is True


# -- the reporter itself, on a stream that says it is a terminal ------------------------------------------------
class Terminal(io.StringIO):
    encoding = "utf-8"

    def isatty(self) -> bool:
        return True


def lines_of(text: str) -> list[str]:
    return [ANSI.sub("", p).strip() for p in re.split(r"[\r\n]+", text) if ANSI.sub("", p).strip()]


def test_a_library_call_shows_nothing() -> None:
    assert not progress.decided()
    with progress.stage("reading x", unit="rows") as stage:
        stage.advance(5)
        progress.advance(3)
    assert progress.current() is stage and stage.done == 0  # the shared quiet stage counts nothing
    assert progress.for_terminal(stream=io.StringIO()) is None  # not a terminal
    assert progress.for_terminal(quiet=True, stream=Terminal()) is None


def test_python_calls_are_quiet_even_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """The flows and the judge say nothing of their own accord: only the command line shows progress."""
    from rankgate.flows.evaluate import EvaluateRequest, run_evaluation
    from rankgate.judges import JudgeItem, open_judge

    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    data = ROOT / "tests" / "data" / "report"
    evaluation = run_evaluation(EvaluateRequest(str(data / "gold.jsonl"), str(data / "run.jsonl")))
    assert evaluation.cis  # (it did draw the intervals: a stage was opened, and not shown)
    with open_judge("lexical") as judge:
        judge.run("context_relevance", [JudgeItem(f"k{i}", {"question": "x?", "passage": "x"}) for i in range(10)])
    assert term.getvalue() == ""
    with open_judge("lexical", progress=True) as judge:  # (asked for: the judge's bar, on this terminal)
        judge.run("context_relevance", [JudgeItem(f"k{i}", {"question": "x?", "passage": "x"}) for i in range(10)])
    assert "10/10 calls" in term.getvalue()


def test_counts_bars_and_what_stays_on_the_terminal() -> None:
    term = Terminal()
    reporter = progress.Reporter(term, persist=0.0, redraw=0.0, tick=0)
    with progress.showing(reporter):
        with progress.stage("reading run.jsonl", unit="rows"):
            progress.advance(1000)
            progress.advance(1000)
            with progress.stage("assembling 4 traces", total=4, unit="traces") as inner:
                for _ in range(4):
                    inner.advance()
        with progress.stage("judge relevance", total=10, unit="calls") as bar:
            for _ in range(10):
                bar.advance()
    shown = lines_of(term.getvalue())
    assert "reading run.jsonl … 2,000 rows" in shown
    assert [s.split("] ")[1] for s in shown if s.startswith("assembling")] == [f"{i}/4 traces" for i in range(5)]
    assert [s.split("] ")[1] for s in shown if s.startswith("judge relevance [")] == [f"{i}/10 calls" for i in range(11)]
    # a stage that ends leaves its line with its time (``persist`` 0 here); a step inside another leaves none
    assert term.getvalue().count("\n") == 2
    assert re.search(r"reading run\.jsonl … 2,000 rows, \d+\.\d s\x1b\[K\n", term.getvalue())
    assert re.search(r"judge relevance … 10/10 calls, \d+\.\d s\x1b\[K\n", term.getvalue())


def test_other_writes_clear_the_line_first_and_everything_is_put_back(monkeypatch: pytest.MonkeyPatch) -> None:
    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)  # the warnings and the progress share one terminal
    before = sys.stdout, sys.stderr
    with progress.showing(progress.Reporter(term, persist=60, redraw=0.0, tick=0)):
        assert progress.decided() and sys.stderr is not term
        with progress.stage("scoring run.trec", unit="rows"):
            print("rankgate evaluate: a warning", file=sys.stderr)
            progress.advance()
        with progress.stage("quick"):
            pass
    assert (sys.stdout, sys.stderr) == before and not progress.decided()
    text = term.getvalue()
    # drawn, cleared before the warning, drawn again after it; a quick stage leaves nothing; cleared at the end
    assert text.startswith("\rscoring run.trec …\x1b[K\r\x1b[Krankgate evaluate: a warning\n")
    assert "\rscoring run.trec … 1 rows\x1b[K" in text
    assert "\rquick …\x1b[K" in text and not text.rstrip("\r\x1b[K").endswith("\n") and text.endswith("\r\x1b[K")
    assert text.count("\n") == 1
