"""SIGTERM and SIGINT never tear the outputs: the folder holds all old or all new outputs, no temp file.

A 2M-row evaluation (a generated TREC run, one file for the whole module) is interrupted at seeded
random moments in a subprocess; a deterministic in-process test sends the signal in the middle of
writing the outputs, the moment where a torn write could happen.
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rankgate._util import atomic
from rankgate.cli.main import EXIT_INTERRUPTED, EXIT_TERMINATED, main

from .conftest import ROOT

pytestmark = [pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals"), pytest.mark.slow]

NQ, DEPTH, PATTERNS = 20_000, 100, 64  # 2,000,000 run rows
OLD = {"metrics.csv": b"old metrics\n", "summary.json": b'{"old": true}\n'}


def _generate(folder: Path) -> tuple[Path, Path]:
    """A TREC run of NQ x DEPTH rows and its qrels, built from a few query patterns (fast)."""
    rng = random.Random(7)
    patterns, judged = [], []
    for _ in range(PATTERNS):
        docs = rng.sample(range(1_000_000), DEPTH)
        patterns.append("".join(f"QID Q0 d{d} {r + 1} {DEPTH - r}.5 sys\n" for r, d in enumerate(docs)))
        rel = rng.sample(docs[:30], 2) + [rng.randrange(1_000_000)]
        judged.append("".join(f"QID 0 d{d} {1 + j % 2}\n" for j, d in enumerate(rel)))
    run, qrels = folder / "run.txt", folder / "qrels.txt"
    run.write_text("".join(patterns[i % PATTERNS].replace("QID", f"q{i}") for i in range(NQ)))
    qrels.write_text("".join(judged[(i * 7) % PATTERNS].replace("QID", f"q{i}") for i in range(NQ)))
    return qrels, run


def _state(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}


def _put_old(folder: Path) -> None:
    for p in folder.iterdir():
        p.unlink()
    for name, data in OLD.items():
        (folder / name).write_bytes(data)


@pytest.fixture(scope="module")
def big_inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return _generate(tmp_path_factory.mktemp("big"))


def _argv(qrels: Path, run: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "rankgate", "evaluate", "--gold", str(qrels), "--run", str(run),
            "--out", str(out), "--resamples", "200", "--json"]


def test_signals_at_random_moments_leave_all_old_or_all_new(big_inputs, tmp_path):
    qrels, run = big_inputs
    out = tmp_path / "out"
    out.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    started = time.perf_counter()
    done = subprocess.run(_argv(qrels, run, out), env=env, capture_output=True, check=False)
    full = time.perf_counter() - started
    assert done.returncode == 0, done.stderr.decode()
    new = _state(out)
    assert sorted(new) == sorted(OLD)
    _put_old(out)
    old = _state(out)

    rng = random.Random(20261123)
    signals = [signal.SIGTERM, signal.SIGINT, signal.SIGTERM]
    landed, runs = [], 0
    while signals and runs < 8:  # a run that finishes first (a busy machine's timing) is retried sooner
        runs += 1
        sig = signals[0]
        _put_old(out)
        proc = subprocess.Popen(_argv(qrels, run, out), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        begun = time.perf_counter()
        moment = begun + rng.uniform(0.4, 0.9) * full  # mostly after start-up: reading, scoring, writing
        while time.perf_counter() < moment and proc.poll() is None:
            time.sleep(0.005)
        if proc.poll() is None:
            proc.send_signal(sig)
            signals.pop(0)
        else:
            full = min(full, time.perf_counter() - begun)
        _, err = proc.communicate(timeout=60)
        state = _state(out)
        assert state in (old, new), f"torn outputs after {sig.name}: {sorted(state)}\n{err.decode()}"
        if proc.returncode != -sig:  # (-sig: the signal struck during Python's start-up, before rankgate ran)
            assert "Traceback" not in err.decode(), err.decode()
        expected = {signal.SIGTERM: EXIT_TERMINATED, signal.SIGINT: EXIT_INTERRUPTED}[sig]
        assert proc.returncode in (0, expected, -sig), (proc.returncode, err.decode())
        if proc.returncode != 0:
            landed.append((sig.name, proc.returncode, "new" if state == new else "old"))
    assert landed, "no signal arrived while rankgate was running"


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, EXIT_TERMINATED), (signal.SIGINT, EXIT_INTERRUPTED)])
def test_a_signal_while_writing_is_held_until_every_output_is_in_place(tmp_path, monkeypatch, capsys, sig, code):
    out = tmp_path / "out"
    out.mkdir()
    _put_old(out)
    real = atomic._write_temp
    calls = []

    def signal_after_first(path, data):
        tmp = real(path, data)
        calls.append(path)
        if len(calls) == 1:
            os.kill(os.getpid(), sig)  # arrives between the two temporary files
            time.sleep(0.05)
        return tmp

    monkeypatch.setattr(atomic, "_write_temp", signal_after_first)
    gold, run = ROOT / "examples" / "gold.jsonl", ROOT / "examples" / "run.jsonl"
    argv = ["evaluate", "--gold", str(gold), "--run", str(run), "--out", str(out), "--resamples", "20"]
    assert main(argv) == code
    assert len(calls) == 2
    names = sorted(p.name for p in out.iterdir())
    assert names == ["metrics.csv", "summary.json"]  # no temp file
    assert (out / "summary.json").read_bytes() != OLD["summary.json"]  # the unit finished: all new
    assert (out / "metrics.csv").read_bytes() != OLD["metrics.csv"]
    assert capsys.readouterr().err.strip() == ("rankgate: terminated" if sig == signal.SIGTERM else "rankgate: interrupted")


def test_sigterm_handler_is_restored_after_main(tmp_path):
    before = signal.getsignal(signal.SIGTERM)
    assert main(["metrics"]) == 0
    assert signal.getsignal(signal.SIGTERM) is before
