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

Then the headline figures against the polars peer (`peers/polars_traces.py`) at each of
`--headline-sizes` (default 100k and 1M requests, Parquet): `rankgate traces analyze --signals
headline`, the peer and the full analysis, alternated `--repeats` times (medians; the load average
before each run is recorded). Every figure of the peer (latency p50/p95/p99 per stage, errors per
1k, fallback and low-confidence shares, their counts) is checked equal to rankgate's headline
summary.json and to the full analysis'; a difference fails the benchmark. polars is a peer, never a
rankgate dependency: `--polars-python` names an interpreter that has it (default: this one).

The tables go to stdout; raw numbers to benchmarks/results/traces.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
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
    ap.add_argument("--headline-sizes", default="100000,1000000", help="requests per headline comparison; '' skips it")
    ap.add_argument("--repeats", type=int, default=3, help="alternated runs per tool in the headline comparison")
    ap.add_argument("--polars-python", default=sys.executable, help="a Python with polars, for the peer")
    ap.add_argument("--only-headline", action="store_true", help="only the headline comparison")
    a = ap.parse_args(argv)
    root = Path(a.work or tempfile.mkdtemp(prefix="rankgate-traces-bench-"))
    rankgate = [sys.executable, "-m", "rankgate", "traces", "analyze", "--abstention-threshold", "0.3", "--by",
                "tenant,source"]
    rows: list[dict] = []

    def run(label: str, size: int, fmt: str, cmd: list[str]) -> dict:
        print(f"running {label} on {size:,} requests ({fmt}) ...", file=sys.stderr, flush=True)
        load = os.getloadavg()[0]
        r = spawn(cmd, root / f"{label}-{size}-{fmt}".replace(" ", "_"), a.timeout)
        r.update(tool=label, requests=size, format=fmt, load=load)
        rows.append(r)
        print(f"  {r['wall']:.1f} s, {r['maxrss'] / 2**30:.2f} GiB, rc {r['rc']}", file=sys.stderr, flush=True)
        return r

    sizes = [int(x) for x in a.headline_sizes.split(",") if x.strip()]
    head = headline(a, root, sizes, run) if sizes else {"ok": True, "table": []}
    if a.only_headline:
        report(rows, head)
        return 0 if head["ok"] and all(r["rc"] == 0 for r in rows) else 1
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
    report(rows, head)
    return 0 if head["ok"] and all(r["rc"] == 0 for r in rows) else 1


def report(rows: list[dict], head: dict) -> None:
    print("| tool | requests | input | wall (s) | peak RSS (GiB) | load | rc |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['tool']} | {r['requests']:,} | {r['format']} | {r['wall']:.1f} | {r['maxrss'] / 2**30:.2f} "
              f"| {r.get('load', 0):.1f} | {r['rc']} |")
    if head["table"]:
        print()
        print("Medians of the alternated runs; wall seconds (CPU seconds, user + system); ratios to the peer.")
        print()
        print("| requests | rankgate --signals headline | polars peer | ratio (CPU ratio) | rankgate full "
              "| ratio (CPU ratio) | load average | figures equal |")
        print("|---:|---:|---:|---:|---:|---:|---|---|")
        for t in head["table"]:
            load = f"{min(t['load']):.1f}-{max(t['load']):.1f}" if t["load"] else "-"
            print(f"| {t['requests']:,} | {t['headline']:.2f} ({t['headline_cpu']:.2f}) | {t['peer']:.2f} "
                  f"({t['peer_cpu']:.2f}) | {t['headline'] / t['peer']:.2f}x ({t['headline_cpu'] / t['peer_cpu']:.2f}x) "
                  f"| {t['full']:.2f} ({t['full_cpu']:.2f}) | {t['full'] / t['peer']:.2f}x "
                  f"({t['full_cpu'] / t['peer_cpu']:.2f}x) | {load} | {t['equal']} |")
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    (out / "traces.json").write_text(json.dumps({"runs": rows, "headline": head["table"]}, indent=2) + "\n")


THRESHOLD = "0.3"
STAGES = ("parse", "retrieval", "rerank", "synthesis", "total")


def figures(summary: dict) -> dict:
    """The headline figures of a rankgate summary.json, named as the polars peer names them."""
    op, rt = summary["operational"], summary["retrieval"]
    out = {}
    for s in STAGES:
        lat = op["latency_ms"][s]
        out.update({f"{s}.p50": lat["p50"], f"{s}.p95": lat["p95"], f"{s}.p99": lat["p99"], f"{s}.n": lat["n"]})
    for name, k, n in (("error_rate_per_1k", "err_k", "err_n"), ("fallback_rate", "fallback_k", "fallback_n"),
                       ("low_confidence_rate", "lowconf_k", "scored_n")):
        v = op[name] if name in op else rt[name]
        out.update({name: v["value"], k: v["k"], n: v["n"]})
    return out


def compare(mine: dict, peer: dict) -> list[str]:
    """The figures that differ (quantiles and rates to 1e-12 relative; counts exactly)."""
    bad = []
    for name, v in mine.items():
        p = peer.get(name)
        same = v == p if isinstance(v, int) else (p is not None and math.isclose(v, p, rel_tol=1e-12, abs_tol=0))
        if not same:
            bad.append(f"{name}: rankgate {v!r}, peer {p!r}")
    return bad


def headline(a: argparse.Namespace, root: Path, sizes: list[int], run) -> dict:
    """rankgate --signals headline, the polars peer and the full analysis, alternated; figures compared."""
    ok = subprocess.run([a.polars_python, "-c", "import polars"], capture_output=True).returncode == 0
    if not ok:
        print(f"polars is not importable by {a.polars_python}: no headline comparison (pass --polars-python)",
              file=sys.stderr)
        return {"ok": False, "table": []}
    table, all_ok = [], True
    base = [sys.executable, "-m", "rankgate", "traces", "analyze", "--abstention-threshold", THRESHOLD]
    for size in sizes:
        f = str(data(root, size, ("parquet",)) / "parquet" / "traces.parquet")
        walls: dict[str, list[float]] = {"headline": [], "peer": [], "full": []}
        cpus: dict[str, list[float]] = {"headline": [], "peer": [], "full": []}
        loads: list[float] = []
        equal, exact, checked = True, 0, 0
        for i in range(a.repeats):
            cmds = {"headline": base + ["--signals", "headline", "--traces", f, "--out", str(root / f"hl-{size}-{i}")],
                    "peer": [a.polars_python, str(HERE / "peers" / "polars_traces.py"), f, THRESHOLD],
                    "full": base + ["--traces", f, "--out", str(root / f"full-{size}-{i}")]}
            order = list(cmds) if i % 2 == 0 else list(cmds)[::-1]
            res = {}
            for label in order:
                res[label] = run({"headline": "rankgate --signals headline", "peer": "polars peer",
                                  "full": "rankgate (full)"}[label], size, "parquet", cmds[label])
                walls[label].append(res[label]["wall"])
                cpus[label].append(res[label].get("cpu", float("nan")))
                loads.append(res[label]["load"])
            if any(r["rc"] != 0 for r in res.values()):
                equal = False
                continue
            peer = json.loads(res["peer"]["stdout"].strip().splitlines()[-1])
            for label in ("headline", "full"):
                mine = figures(json.loads((root / f"{'hl' if label == 'headline' else 'full'}-{size}-{i}"
                                           / "summary.json").read_text()))
                bad = compare(mine, peer)
                exact += sum(1 for k, v in mine.items() if peer.get(k) == v)
                checked += len(mine)
                if bad:
                    equal = False
                    print(f"{label} at {size:,} differs from the peer: " + "; ".join(bad[:5]), file=sys.stderr)
        all_ok &= equal
        table.append({"requests": size, "equal": f"{'yes' if equal else 'NO'} ({exact}/{checked} bit for bit)",
                      **{k: statistics.median(v) if v else float("nan") for k, v in walls.items()},
                      **{f"{k}_cpu": statistics.median(v) if v else float("nan") for k, v in cpus.items()},
                      "load": loads})
    return {"ok": all_ok, "table": table}


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    raise SystemExit(main())
