"""Benchmark of the trace analysis, one command: `python benchmarks/traces.py`.

Generates seeded traces with `trace_gen.py` (7 days; 1M requests x 35 item rows by default: 20
candidates, 10 reranked, 5 packed), then times whole processes side by side in one run, each started
from `spawn.py` (wall time, peak RSS):

* `rankgate traces analyze` on Parquet and on JSONL (every signal, signals.csv, summary.json, the HTML
  report), DuckDB;
* the same on Spark (`--engine spark`, local mode) when pyspark and Java are installed;
* the pandas peer (`peers/pandas_traces.py`: the same signals written the way a user would) on the
  `--peer-size` set (default 100k requests: at 1M the exploded Python dicts need more memory than a
  shared 2-core machine should give), with rankgate on that set too, for the side-by-side ratio.

The total p95 latency and the error rate of rankgate and the peer are compared (they must agree).
The table goes to stdout; raw numbers to benchmarks/results/traces.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def spawn(cmd: list[str], out: Path, timeout: float) -> dict:
    res = subprocess.run([sys.executable, "-S", str(HERE / "spawn.py"), str(out) + ".out", str(out) + ".err",
                          str(timeout), *cmd], capture_output=True, text=True, check=True)
    r = json.loads(res.stdout)
    r["stdout"] = Path(str(out) + ".out").read_text()[-2000:]
    if r["rc"] != 0:
        r["stderr"] = Path(str(out) + ".err").read_text()[-2000:]
    return r


def data(root: Path, requests: int, formats: tuple[str, ...]) -> Path:
    d = root / f"traces-{requests}"
    if not all((d / f).exists() for f in formats):
        sys.path.insert(0, str(HERE))
        from trace_gen import Spec, generate

        generate(d, Spec(days=7, per_day=max(1, requests // 7), seed=0), formats=formats)
    return d


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--peer-size", type=int, default=100_000)
    ap.add_argument("--work", default=None, help="where the generated traces go (default: a temp folder)")
    ap.add_argument("--no-jsonl", action="store_true")
    ap.add_argument("--no-spark", action="store_true")
    ap.add_argument("--timeout", type=float, default=1800)
    a = ap.parse_args(argv)
    root = Path(a.work or tempfile.mkdtemp(prefix="rankgate-traces-bench-"))
    rankgate = [sys.executable, "-m", "rankgate", "traces", "analyze", "--abstention-threshold", "0.3", "--by",
                "tenant,source"]
    rows: list[dict] = []

    def run(label: str, size: int, fmt: str, cmd: list[str]) -> dict:
        print(f"running {label} on {size:,} requests ({fmt}) ...", file=sys.stderr, flush=True)
        r = spawn(cmd, root / f"{label}-{size}-{fmt}".replace(" ", "_"), a.timeout)
        r.update(tool=label, requests=size, format=fmt)
        rows.append(r)
        print(f"  {r['wall']:.1f} s, {r['maxrss'] / 2**30:.2f} GiB, rc {r['rc']}", file=sys.stderr, flush=True)
        return r

    fmts = ("parquet",) if a.no_jsonl else ("parquet", "jsonl")
    big = data(root, a.requests, fmts)
    for fmt in fmts:
        f = big / fmt / ("traces.parquet" if fmt == "parquet" else "traces.jsonl")
        run("rankgate (duckdb)", a.requests, fmt, rankgate + ["--traces", str(f), "--out", str(root / f"out-{fmt}")])
    if not a.no_spark:
        try:
            import pyspark  # noqa: F401

            run("rankgate (spark local[2])", a.requests, "parquet",
                rankgate + ["--engine", "spark", "--traces", str(big / "parquet" / "traces.parquet"), "--out",
                            str(root / "out-spark")])
        except ImportError:
            print("pyspark is not installed: no Spark row", file=sys.stderr)
    small = data(root, a.peer_size, ("parquet",))
    sf = small / "parquet" / "traces.parquet"
    mine = run("rankgate (duckdb)", a.peer_size, "parquet", rankgate + ["--traces", str(sf), "--out", str(root / "out-s")])
    peer = run("pandas peer", a.peer_size, "parquet", [sys.executable, str(HERE / "peers" / "pandas_traces.py"), str(sf)])
    if peer["rc"] == 0 and mine["rc"] == 0:
        p = json.loads(peer["stdout"].strip().splitlines()[-1])
        s = json.loads((root / "out-s" / "summary.json").read_text())
        agree = (s["operational"]["latency_ms"]["total"]["p95"] == p["total_p95_all"]
                 and abs(s["operational"]["error_rate_per_1k"]["value"] - p["error_rate_per_1k_all"]) < 1e-9)
        print(f"rankgate and the pandas peer agree on total p95 and the error rate: {agree}", file=sys.stderr)
    print("| tool | requests | input | wall (s) | peak RSS (GiB) | rc |")
    print("|---|---:|---|---:|---:|---:|")
    for r in rows:
        print(f"| {r['tool']} | {r['requests']:,} | {r['format']} | {r['wall']:.1f} | {r['maxrss'] / 2**30:.2f} | {r['rc']} |")
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "traces.json").write_text(json.dumps(rows, indent=2) + "\n")
    return 0 if all(r["rc"] == 0 for r in rows) else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    raise SystemExit(main())
