"""``rankgate validity`` on a million trace requests against ``rankgate traces analyze --signals headline`` on the same
file (the target: within 2x), medians of alternated runs.

    python benchmarks/validity.py WORK_DIR [--requests 1000000] [--queries 2000] [--repeats 3]

Makes (or reuses) ``WORK_DIR/traces/parquet/traces.parquet`` with trace_gen (one day, clean), a gold set of the
``--queries`` most asked query texts of the file (one relevant chunk each) and a run that finds it for about 70%
of them, then times both commands (wall clock, the command as a user runs it) and writes ``WORK_DIR/validity.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
THRESHOLD = "0.3"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("work")
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    work = Path(a.work)
    traces = work / "traces" / "parquet" / "traces.parquet"
    if not traces.exists():
        subprocess.run([sys.executable, str(HERE / "trace_gen.py"), str(work / "traces"), "--days", "1", "--per-day",
                        str(a.requests), "--formats", "parquet", "--clean"], check=True)
    gold, run = work / "gold.jsonl", work / "run.jsonl"
    if not gold.exists():
        import duckdb
        import numpy as np

        texts = [r[0] for r in duckdb.sql(
            f"SELECT query, count(*) AS n FROM read_parquet('{traces}') GROUP BY query ORDER BY n DESC, query "
            f"LIMIT {a.queries}").fetchall()]
        rng = np.random.default_rng(0)
        with gold.open("w") as g, run.open("w") as r:
            for i, t in enumerate(texts):
                g.write(json.dumps({"query_id": f"q{i}", "query": t, "relevant_chunks": [{"chunk_id": f"c{i}"}]}) + "\n")
                top = [f"c{i}"] if rng.random() < 0.7 else []
                top += [f"x{i}-{j}" for j in range(5 - len(top))]
                r.write(json.dumps({"query_id": f"q{i}", "topk": [{"chunk_id": c, "score": 1 - j / 10}
                                                                    for j, c in enumerate(top)]}) + "\n")
    cmds = {
        "headline": [sys.executable, "-m", "rankgate", "traces", "analyze", "--signals", "headline",
                     "--abstention-threshold", THRESHOLD, "--traces", str(traces), "--out", str(work / "hl"), "-q"],
        "validity": [sys.executable, "-m", "rankgate", "validity", "--gold", str(gold), "--run", str(run), "--traces",
                     str(traces), "--abstention-threshold", THRESHOLD, "--out", str(work / "v"), "-q"],
    }
    times: dict[str, list[float]] = {k: [] for k in cmds}
    for i in range(a.repeats):
        for name in (list(cmds) if i % 2 == 0 else list(cmds)[::-1]):
            t = time.perf_counter()
            subprocess.run(cmds[name], check=True, stdout=subprocess.DEVNULL)
            times[name].append(time.perf_counter() - t)
    med = {k: statistics.median(v) for k, v in times.items()}
    out = {"requests": a.requests, "queries": a.queries, "times_s": times, "median_s": med,
           "ratio": med["validity"] / med["headline"], "target": "validity within 2x of traces analyze --signals headline"}
    (work / "validity.json").write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
