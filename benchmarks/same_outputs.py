"""Every command's outputs, written to one folder, so that two versions of rankgate can be compared with ``diff -r``.

A structural change (issue 33: packages moved, options passed as values) must leave every output byte-identical.
This script runs the demo and the evaluate / compare / gate / report / traces / answers / gold commands on the
demo's files, the committed test data and the shared trec_eval fixtures, and keeps, per command, its output files,
its standard output and error, and its exit code::

    python benchmarks/same_outputs.py OUT_BEFORE --src /path/to/old/checkout/src
    python benchmarks/same_outputs.py OUT_AFTER
    diff -r OUT_BEFORE OUT_AFTER

``--src`` runs the rankgate found there (its compiled modules built in place) instead of the installed one.
Run times printed by the commands ("Done in 1.7 s.") are the only text normalised; everything else is compared
as written. The inputs are copied into OUT first, so paths in messages are the same for both versions.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("RANKGATE_SHARED", ROOT.parent / "shared"))
TIMES = re.compile(rb"\b\d+(\.\d+)? ?(s|ms|seconds)\b")

# name -> arguments of ``rankgate`` (run in OUT/work; paths relative to it)
COMMANDS: list[tuple[str, list[str]]] = [
    ("demo", ["demo", "--out", "demo"]),
    ("evaluate-jsonl", ["evaluate", "--gold", "demo/data/gold.jsonl", "--run", "demo/runs/candidate.jsonl",
                        "--by", "lang", "--out", "out/evaluate-jsonl"]),
    ("evaluate-trec", ["evaluate", "--gold", "in/qrels.test", "--run", "in/results.test", "--trec",
                       "--out", "out/evaluate-trec"]),
    ("evaluate-trec-json", ["evaluate", "--gold", "in/qrels.test", "--run", "in/results.test", "--trec",
                            "--json"]),
    ("evaluate-robust", ["evaluate", "--gold", "in/robust03.qrels", "--run", "in/robust03.run",
                         "--metrics", "map,ndcg@10,recall@100,mrr", "--out", "out/evaluate-robust"]),
    ("evaluate-bad", ["evaluate", "--gold", "demo/data/gold.jsonl", "--run", "in/bad.jsonl"]),
    ("compare", ["compare", "--gold", "demo/data/gold.jsonl", "demo/runs/baseline.jsonl",
                 "demo/runs/candidate.jsonl", "--by", "lang"]),
    ("compare-md", ["compare", "--gold", "tests-data/report/gold.jsonl", "tests-data/report/base.jsonl",
                    "tests-data/report/run.jsonl", "tests-data/report/bm25.jsonl", "--markdown", "-o", "out/compare.md"]),
    ("gate", ["gate", "--config", "demo/data/ship-criteria.yaml", "--gold", "demo/data/gold.jsonl",
              "--baseline", "demo/runs/baseline.jsonl", "--candidate", "demo/runs/candidate.jsonl",
              "--comment", "out/gate-comment.md", "--json-out", "out/gate.json", "--no-step-summary"]),
    ("gate-pass", ["gate", "--config", "tests-data/gate/ship-criteria.yaml", "--gold", "tests-data/gate/gold.jsonl",
                   "--baseline", "tests-data/gate/base.jsonl", "--candidate", "tests-data/gate/base.jsonl"]),
    ("report", ["report", "--gold", "demo/data/gold.jsonl", "--run", "demo/runs/candidate.jsonl",
                "--baseline", "demo/runs/baseline.jsonl", "--by", "lang", "--config",
                "demo/data/ship-criteria.yaml", "-o", "out/report.html"]),
    ("report-tests-data", ["report", "--gold", "tests-data/report/gold.jsonl", "--run", "tests-data/report/run.jsonl",
                           "--baseline", "tests-data/report/base.jsonl", "--config",
                           "tests-data/report/ship-criteria.yaml", "-o", "out/report2.html"]),
    ("traces", ["traces", "analyze", "--traces", "tests-data/producers/llamaindex.otlp.json", "--out", "out/traces"]),
    ("traces-langchain", ["traces", "analyze", "--traces", "tests-data/producers/langchain.otlp.pb", "--out", "out/traces-lc"]),
    ("answers", ["answers", "--answers", "demo/data/answers.jsonl", "--gold", "demo/data/gold.jsonl",
                 "--corpus", "demo/data/corpus.jsonl", "--out", "out/answers"]),
    ("gold-validate", ["gold", "validate", "--gold", "demo/data/gold.jsonl", "--corpus", "demo/data/corpus.jsonl"]),
    ("gold-stale", ["gold", "stale", "--gold", "demo/data/gold.jsonl", "--corpus", "demo/data/corpus.jsonl"]),
    ("gold-diff", ["gold", "diff", "tests-data/report/gold.jsonl", "tests-data/gate/gold.jsonl"]),
    ("metrics", ["metrics"]),
]


def _inputs(work: Path) -> None:
    shutil.copytree(ROOT / "tests" / "data", work / "tests-data")
    inp = work / "in"
    inp.mkdir()
    trec = SHARED / "fixtures" / "trec_eval"
    for name in ("qrels.test", "results.test"):
        shutil.copy(next(trec.rglob(name)), inp / name)
    robust = SHARED / "fixtures" / "robust03"
    qrels = sorted(p for p in robust.rglob("*") if p.is_file() and "qrel" in p.name.lower())
    runs = sorted(p for p in robust.rglob("*") if p.is_file() and "qrel" not in p.name.lower()
                  and p.suffix.lower() not in (".md", ".txt", ".json"))
    shutil.copy(qrels[0], inp / "robust03.qrels")
    shutil.copy(runs[0], inp / "robust03.run")
    (inp / "bad.jsonl").write_text('{"query_id": "q1", "results": [{"id": "d1"}]}\n{"query_id": 3}\n')
    gate = work / "tests-data" / "gate" / "ship-criteria.yaml"
    if not gate.exists():
        shutil.copy(work / "tests-data" / "report" / "ship-criteria.yaml", gate)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path, help="folder to write (must not exist)")
    p.add_argument("--src", type=Path, help="a checkout's src folder to run instead of the installed rankgate")
    args = p.parse_args(argv)
    if args.out.exists():
        p.error(f"{args.out} exists; give a new folder")
    work = args.out / "work"
    work.mkdir(parents=True)
    (work / "out").mkdir()
    _inputs(work)
    env = dict(os.environ, COLUMNS="100", NO_COLOR="1", RANKGATE_NO_PROGRESS="1", TZ="UTC", LC_ALL="C.UTF-8")
    env.pop("GITHUB_ACTIONS", None)
    if args.src:
        env["PYTHONPATH"] = str(args.src.resolve())
    logs = args.out / "logs"
    logs.mkdir()
    for name, cmd in COMMANDS:
        r = subprocess.run([sys.executable, "-m", "rankgate", *cmd], cwd=work, env=env, capture_output=True)
        (logs / f"{name}.stdout").write_bytes(TIMES.sub(b"<time>", r.stdout))
        (logs / f"{name}.stderr").write_bytes(TIMES.sub(b"<time>", r.stderr))
        (logs / f"{name}.rc").write_text(f"{r.returncode}\n")
        print(f"{name:20} exit {r.returncode}")
    for f in (work / "out").rglob("*"):
        if f.is_file() and f.suffix in (".md", ".txt", ".html"):
            f.write_bytes(TIMES.sub(b"<time>", f.read_bytes()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
