"""RANKGATE_NATIVE=auto|baseline|off: which compiled code runs, what ``--version`` says, and that the
switch changes no result (issue 33, item 5): every output byte for byte, off's included (item 6)."""

from __future__ import annotations

import importlib.util
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rankgate import _native as accel

BUILT = all(importlib.util.find_spec(f"rankgate._native.{name}") is not None for name in ("_kernels", "_reader", "_remap"))
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


@needs_build
def test_the_remap_kernels_load_under_auto_and_baseline_and_are_named_only_when_not_built() -> None:
    """rankgate._native._remap takes the switch as the other two do (without set_baseline it would not load
    under baseline) and has no CPU-specific path; ``--version`` names it only when it is missing."""
    what = "from rankgate import _native as a; print(a.mode, a.remap and a.remap.variant(), a.describe())"
    assert _python(what, "auto").stdout.split()[:2] == ["auto", "plain"]
    assert _python(what, "baseline").stdout.split() == ["baseline", "plain", "native:", "baseline"]
    assert _python(what, "off").stdout.split()[:2] == ["off", "None"]
    missing = "import rankgate._native as a; a.remap = None; print(a.describe())"
    assert _python(missing, "baseline").stdout == "native: baseline, remap not built\n"


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


def _trec_inputs(root: Path, queries: int, ranked: int, seed: int) -> None:
    """qrels.txt and run.txt in ``root``: ``queries`` queries of four judged and ``ranked`` ranked documents."""
    rng = random.Random(seed)
    with open(root / "qrels.txt", "w") as qrels, open(root / "run.txt", "w") as run:
        for q in range(queries):
            for d in rng.sample(range(200), 4):
                qrels.write(f"q{q} 0 d{d} {rng.randint(0, 3)}\n")
            for rank, d in enumerate(rng.sample(range(200), ranked)):
                run.write(f"q{q} Q0 d{d} {rank + 1} {rng.random() * 10:.6f} sys\n")


def _segmented_inputs(root: Path, queries: int, seed: int) -> None:
    """gold.jsonl, base.jsonl and cand.jsonl in ``root``: a ``shop`` tag whose segments run from one query to
    many (the bootstrap's compositions of small groups, its tables of one size, every sign-flip path) and a
    ``lang`` tag; the candidate finds a relevant document in its top five more often."""
    rng = random.Random(seed)
    with open(root / "gold.jsonl", "w") as gold, open(root / "base.jsonl", "w") as base, \
            open(root / "cand.jsonl", "w") as cand:
        for q in range(queries):
            relevant = rng.sample(range(300), 4)
            gold.write(json.dumps({"query_id": f"q{q}", "tags": {
                "shop": f"s{min(int(rng.expovariate(0.02)), 400):03d}", "lang": rng.choice(["de", "en", "fr"])},
                "relevant_chunks": [{"chunk_id": f"d{d}", "grade": rng.randint(1, 3)} for d in relevant]}) + "\n")
            for run, hit in ((base, 0.0), (cand, 0.3)):
                docs = rng.sample([d for d in range(300) if d != relevant[0]], 20)
                if rng.random() < hit:
                    docs[rng.randrange(5)] = relevant[0]
                run.write(json.dumps({"query_id": f"q{q}", "topk": [
                    {"chunk_id": f"d{d}", "score": round(1 - i / 40, 4)} for i, d in enumerate(docs)]}) + "\n")


def _outputs(root: Path, commands: dict[str, list[str]]) -> dict[str, dict[str, str | bytes]]:
    """Per value of the switch, every output of ``commands`` (a name -> rankgate's arguments), each run in a
    folder of its own for that value with the inputs one level up (so paths in messages are the same): what
    each command prints and returns, and every file it writes."""
    got: dict[str, dict[str, str | bytes]] = {}
    for mode in accel.MODES:
        where = root / mode
        where.mkdir()
        outputs: dict[str, str | bytes] = {}
        for name, args in commands.items():
            out = _rankgate(args, mode, cwd=where)
            assert out.returncode == 0, f"{mode}: rankgate {' '.join(args)}\n{out.stderr}"
            outputs[f"{name} (printed)"], outputs[f"{name} (said)"] = out.stdout, out.stderr
        outputs.update((str(f.relative_to(where)), f.read_bytes()) for f in sorted(where.rglob("*")) if f.is_file())
        got[mode] = outputs
    return got


def _differing(a: dict[str, str | bytes], b: dict[str, str | bytes]) -> list[str]:
    return [name for name in sorted(set(a) | set(b)) if a.get(name) != b.get(name)]


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str | bytes]]:
    """Every output of one evaluate with intervals under each value of the switch (TREC files large enough
    for the compiled reader and the bootstrap's vector path), and of an evaluate and a compare by a tag whose
    segments have every size from one query up."""
    root = tmp_path_factory.mktemp("native")
    _trec_inputs(root, 1500, 30, seed=5)
    _segmented_inputs(root, 800, seed=7)
    return _outputs(root, {
        "evaluate": ["evaluate", "--gold", "../qrels.txt", "--run", "../run.txt", "--metrics",
                     "recall@10,ndcg@10,mrr,map,precision@5", "--resamples", "300", "--out", "trec"],
        "evaluate by shop": ["evaluate", "--gold", "../gold.jsonl", "--run", "../cand.jsonl", "--by", "shop",
                             "--resamples", "500", "--out", "shop"],
        "compare by shop": ["compare", "--gold", "../gold.jsonl", "../base.jsonl", "../cand.jsonl", "--by", "shop",
                            "--resamples", "500", "--permutations", "1000", "--json", "-o", "compare.json"],
    })


@pytest.mark.slow  # (the full tier: heavy, and what it guards is covered lighter by default)
def test_baseline_writes_every_output_auto_writes(evaluated: dict[str, dict[str, str | bytes]]) -> None:
    assert {"trec/summary.json", "trec/metrics.csv", "shop/summary.json", "compare.json"} <= set(evaluated["auto"])
    assert _differing(evaluated["baseline"], evaluated["auto"]) == []


@pytest.mark.slow  # (the full tier: heavy, and what it guards is covered lighter by default)
def test_off_writes_every_output_auto_writes(evaluated: dict[str, dict[str, str | bytes]]) -> None:
    """The fallbacks add the bootstrap's products in the compiled code's order (stats.bootstrap._chained_sums)
    and read, rank and score as it does: the same bytes, intervals included."""
    assert _differing(evaluated["off"], evaluated["auto"]) == []


@pytest.mark.slow
def test_every_build_writes_the_same_outputs_on_larger_data(tmp_path: Path) -> None:
    """The same on more queries (the fallback's sums of many resamples at once, in several groups of them) with
    the default resamples and permutations, and for report. The run stays under LARGE_ROWS rows: from there
    the fallback says on stderr that it ran without the compiled code."""
    _trec_inputs(tmp_path, 30_000, 30, seed=11)
    _segmented_inputs(tmp_path, 6000, seed=13)
    got = _outputs(tmp_path, {
        "evaluate": ["evaluate", "--gold", "../qrels.txt", "--run", "../run.txt", "--metrics",
                     "hit@5,recall@10,ndcg@10,mrr,map,precision@5", "--out", "trec"],
        "evaluate by shop": ["evaluate", "--gold", "../gold.jsonl", "--run", "../cand.jsonl", "--by", "shop",
                             "--out", "shop"],
        "compare by shop": ["compare", "--gold", "../gold.jsonl", "../base.jsonl", "../cand.jsonl", "--by", "shop",
                            "--json", "-o", "compare.json"],
        "report": ["report", "--gold", "../gold.jsonl", "--run", "../cand.jsonl", "--baseline", "../base.jsonl",
                   "--by", "lang", "-o", "report.html"],
    })
    assert {"trec/summary.json", "trec/metrics.csv", "compare.json", "report.html"} <= set(got["auto"])
    assert _differing(got["baseline"], got["auto"]) == []
    assert _differing(got["off"], got["auto"]) == []


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
    """From LARGE_ROWS rows, a run read or scored without the compiled code says so in one line on stderr (the
    same numbers, slower, and how to get the compiled build), not in the files it writes; with it, or below,
    nothing is said."""
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
    # said on stderr only: the files written are the ones every build writes (issue 33, item 6)
    assert main([*args, "--out", str(tmp_path / "out")]) == 0
    assert "400 rows without the compiled code" in said()
    assert "without the compiled code" not in (tmp_path / "out" / "summary.json").read_text()
    monkeypatch.setattr(accel, "mode", "off")  # (switched off)
    assert main(args) == 0
    assert "RANKGATE_NATIVE=off or RANKGATE_PURE_PYTHON is set" in said()
    monkeypatch.setattr(accel, "LARGE_ROWS", 401)
    assert main(args) == 0
    assert "without the compiled code" not in said()


@pytest.mark.parametrize("name", ["_reader", "_kernels", "_remap"])
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
