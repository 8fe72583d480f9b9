"""RANKGATE_NATIVE=auto|baseline|off: which compiled code runs, what ``--version`` says, and that the
switch changes no result (issue 33, item 5)."""

from __future__ import annotations

import importlib.util
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rankgate import _native as accel

BUILT = importlib.util.find_spec("rankgate._native._kernels") is not None and importlib.util.find_spec("rankgate._native._reader") is not None
needs_build = pytest.mark.skipif(not BUILT, reason="the compiled extensions are not built in this installation")
needs_loaded = pytest.mark.skipif(accel.kernels is None or accel.reader is None,
                                  reason="the compiled extensions are not loaded (RANKGATE_NATIVE=off, or not built)")


def _env(mode: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RANKGATE_NATIVE", "RANKGATE_PURE_PYTHON")}
    if mode is not None:
        env["RANKGATE_NATIVE"] = mode
    return env


def _python(code: str, mode: str | None, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**_env(mode), **extra},
                          timeout=120, check=False)


def _rankgate(args: list[str], mode: str | None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rankgate", *args], capture_output=True, text=True, encoding="utf-8",
                          env=_env(mode), cwd=cwd, timeout=300, check=False)


_WHAT = ("from rankgate import _accel as a; "
         "print(a.mode, a.kernels and a.kernels.variant(), a.reader and a.reader.variant())")


@needs_build
def test_baseline_takes_the_plain_variants_and_off_loads_nothing() -> None:
    assert _python(_WHAT, "baseline").stdout.split() == ["baseline", "plain", "plain"]
    assert _python(_WHAT, "off").stdout.split() == ["off", "None", "None"]
    assert _python(_WHAT, None, RANKGATE_PURE_PYTHON="1").stdout.split() == ["off", "None", "None"]  # the alias
    mode, kernels, reader = _python(_WHAT, "auto").stdout.split()
    assert mode == "auto" and kernels in ("avx512f", "avx2", "plain") and reader == "plain"  # (no CPU-specific reader path)
    unknown = _python(_WHAT + "; print(a.unknown_value)", "fast")
    assert unknown.returncode == 0 and unknown.stdout.split() == ["auto", kernels, reader, "fast"]


@needs_loaded
def test_set_baseline_switches_both_extensions() -> None:
    """Both extensions take the switch and say what it was; the reader has no CPU-specific path (its
    AVX-512 line splitter and newline count saved under 2% end to end: issue 33), so it stays plain."""
    assert accel.kernels is not None and accel.reader is not None
    assert not hasattr(accel.reader, "wide_lines")
    was_k, was_r = accel.kernels.set_baseline(True), accel.reader.set_baseline(True)
    try:
        assert (accel.kernels.variant(), accel.reader.variant()) == ("plain", "plain")
        assert accel.reader.set_baseline(False) is True
        assert accel.reader.variant() == "plain"
    finally:
        accel.kernels.set_baseline(was_k)
        accel.reader.set_baseline(was_r)
    assert accel.kernels.set_baseline(was_k) is was_k
    assert accel.reader.set_baseline(was_r) is was_r


def _state(seed: int) -> np.ndarray:
    return np.asarray(np.random.SFC64(seed).state["state"]["state"], dtype=np.uint64)


@needs_loaded
@pytest.mark.parametrize(("n", "rows", "group", "widths"), [
    (9000, 9, 4, [6, 13, 12, 11, 16, 7]),  # eight lanes in place and from a copy, then four
    (4097, 5, 2, [8, 1, 3]),
])
def test_every_variant_gives_the_same_bits(n: int, rows: int, group: int, widths: list[int]) -> None:
    """The AVX-512, AVX2 and plain variants are the same IEEE operations in the same order."""
    kernels = accel.kernels
    assert kernels is not None
    rng = np.random.default_rng(n)
    stacks = [np.ascontiguousarray(rng.random((n, w)) * 10.0 ** rng.integers(-3, 4, size=w)) for w in widths]
    results = {}
    before = kernels.set_baseline(False)
    try:
        for baseline in (False, True):
            kernels.set_baseline(baseline)
            outs = [np.empty((rows, w)) for w in widths]
            kernels.bootstrap_sums_blocks(_state(n), stacks, rows, outs, group)
            results[kernels.variant()] = [o.view(np.uint64).copy() for o in outs]
    finally:
        kernels.set_baseline(before)
    first, *others = results.values()
    for other in others:
        assert all(np.array_equal(a, b) for a, b in zip(first, other))


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """summary.json of one evaluate with intervals under each value of the switch (TREC files large enough
    for the compiled reader and the bootstrap's vector path)."""
    root = tmp_path_factory.mktemp("native")
    rng = random.Random(5)
    with open(root / "qrels.txt", "w") as qrels, open(root / "run.txt", "w") as run:
        for q in range(1500):
            for d in rng.sample(range(200), 4):
                qrels.write(f"q{q} 0 d{d} {rng.randint(0, 3)}\n")
            for rank, d in enumerate(rng.sample(range(200), 30)):
                run.write(f"q{q} Q0 d{d} {rank + 1} {rng.random() * 10:.6f} sys\n")
    summaries = {}
    for mode in ("auto", "baseline", "off"):
        out = _rankgate(["evaluate", "--gold", "qrels.txt", "--run", "run.txt", "--metrics",
                         "recall@10,ndcg@10,mrr,map,precision@5", "--resamples", "300", "--out", f"o_{mode}"],
                        mode, cwd=root)
        assert out.returncode == 0, out.stderr
        summaries[mode] = (root / f"o_{mode}" / "summary.json").read_bytes()
    return summaries


def test_baseline_writes_the_summary_auto_writes(evaluated: dict[str, bytes]) -> None:
    assert evaluated["baseline"] == evaluated["auto"]


@needs_build
@pytest.mark.xfail(strict=True, reason="issue 33 item 6: the fallback's bootstrap sums in BLAS's order, so the "
                                       "interval bounds differ in the last bits from the compiled code's")
def test_off_writes_the_summary_auto_writes(evaluated: dict[str, bytes]) -> None:
    assert evaluated["off"] == evaluated["auto"]


def test_version_names_the_native_build() -> None:
    from rankgate import __version__

    off = _rankgate(["--version"], "off")
    assert off.returncode == 0 and off.stdout == f"rankgate {__version__} (native: off)\n" and off.stderr == ""
    base = _rankgate(["--version"], "baseline")
    assert base.returncode == 0 and base.stdout.startswith(f"rankgate {__version__} (native: baseline")
    auto = _rankgate(["--version"], None)
    assert auto.returncode == 0 and auto.stdout.startswith(f"rankgate {__version__} (native: auto, ")
    if BUILT:
        assert base.stdout == f"rankgate {__version__} (native: baseline)\n"
        assert "kernels " in auto.stdout and "reader " in auto.stdout and "not built" not in auto.stdout


def test_an_unknown_value_runs_as_auto_with_one_line_on_stderr() -> None:
    out = _rankgate(["--version"], "fast")
    assert out.returncode == 0 and "(native: auto" in out.stdout
    assert out.stderr == ("rankgate: warning: RANKGATE_NATIVE='fast' is not one of auto, baseline, off; "
                          "running as auto\n")


def test_a_large_run_without_the_compiled_code_is_said_once(tmp_path, monkeypatch, capsys):
    """From LARGE_ROWS rows, a run read or scored without the compiled code says so in one line (the
    same numbers, slower, and how to get the compiled build); with it, or below, nothing is said."""
    import json

    import rankgate._native as accel
    from rankgate.cli.main import main

    gold, run = tmp_path / "gold.jsonl", tmp_path / "run.trec"
    gold.write_text("".join(json.dumps({"query_id": f"q{q}", "relevant_chunks": [{"chunk_id": f"d{q}-1", "grade": 1}]})
                            + "\n" for q in range(40)))
    run.write_text("".join(f"q{q} Q0 d{q}-{d} {d + 1} {1 - d / 100} sys\n" for q in range(40) for d in range(10)))
    monkeypatch.setattr(accel, "LARGE_ROWS", 400)
    args = ["evaluate", "--gold", str(gold), "--run", str(run), "-m", "mrr", "--resamples", "0"]

    def said() -> str:
        got = capsys.readouterr()
        return " ".join((got.out + got.err).split())  # (the terminal wraps long lines)

    assert main(args) == 0
    assert "without the compiled code" not in said() or accel.kernels is None
    monkeypatch.setattr(accel, "kernels", None)
    monkeypatch.setattr(accel, "mode", "auto")  # (not built)
    assert main(args) == 0
    text = said()
    assert text.count("400 rows without the compiled code (rankgate._native._kernels") == 1, text
    assert "not built: no C compiler at install time" in text
    assert "reinstall rankgate" in text
    monkeypatch.setattr(accel, "mode", "off")  # (switched off)
    assert main(args) == 0
    assert "RANKGATE_NATIVE=off or RANKGATE_PURE_PYTHON is set" in said()
    monkeypatch.setattr(accel, "LARGE_ROWS", 401)
    assert main(args) == 0
    assert "without the compiled code" not in said()


@pytest.mark.parametrize("name", ["_reader", "_kernels"])
def test_each_compiled_module_has_a_stub_naming_exactly_its_entry_points(name):
    """The .pyi beside each extension names every entry point the built module has and nothing else,
    with the same number of positional parameters as the entry point's docstring gives: a function
    added, removed or given another argument in the C fails here until its stub follows."""
    import ast
    import importlib
    import inspect
    import re
    from pathlib import Path

    import rankgate

    stub = ast.parse((Path(rankgate.__file__).parent / "_native" / f"{name}.pyi").read_text())
    stubbed = {node.name: node for node in stub.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    try:
        module = importlib.import_module(f"rankgate._native.{name}")
    except ImportError:
        pytest.skip(f"rankgate._native.{name} is not built in this installation: nothing to compare its stub with")
    built = {n for n, v in vars(module).items() if not n.startswith("_") and (callable(v) or inspect.isclass(v))}
    assert set(stubbed) == built
    for fname, node in stubbed.items():
        if not isinstance(node, ast.FunctionDef):
            continue
        doc = getattr(module, fname).__doc__ or ""
        head = re.match(rf"{fname}\(([^)]*)\)", doc)
        assert head is not None, f"{fname}'s docstring gives no signature"
        wanted = [a for a in re.split(r"[,\[\]]", head.group(1)) if a.strip()]
        args = node.args.posonlyargs + node.args.args
        assert len(args) == len(wanted), f"{name}.{fname}: stub has {len(args)} parameters, the C {len(wanted)}"
