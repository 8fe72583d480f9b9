"""What a segment field costs by its number of values: ``--by`` a field of 10 values against one of 50,000.

    python benchmarks/segments_scaling.py                     # 100k queries x 20 docs, 3 rounds (~3 min)
    python benchmarks/segments_scaling.py --rounds 5 --cases evaluate,compare

The data (seeded, written once into benchmarks/data/segments-*): a gold set of N queries with two tags,
``few`` (10 values, N/10 queries each) and ``many`` (50,000 values: the first 50,000 queries one each, the
rest spread at random, so segments hold 1 to about 8 queries), and two TREC runs of the same queries.
Each round runs every case with ``--by few`` and then ``--by many`` as fresh processes (spawn.py: wall
time from spawn to exit, peak RSS of that process alone); the table gives the best round of each and the
ratio of the bests. The goal (issue 32): 50,000 values cost at most 2x the time of 10.

Cases: ``evaluate`` (the terminal table), ``evaluate-out`` (``--out DIR``: metrics.csv and a
summary.json that holds every segment), ``compare`` (two runs, the terminal table: paired intervals and
p-values of every segment).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import measure, rankgate_exe  # noqa: E402

SEED = 20261201
GENERATOR_VERSION = 2
CASES = ("evaluate", "evaluate-out", "compare")


def data_dir(root: Path, queries: int, depth: int, many: int) -> Path:
    params = {"version": GENERATOR_VERSION, "seed": SEED, "queries": queries, "depth": depth, "many": many}
    key = hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:10]
    folder = root / f"segments-{queries}-{key}"
    if (folder / "done").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    many_of = np.concatenate([np.arange(min(many, queries)), rng.integers(0, many, size=max(0, queries - many))])
    docs = 50 * depth
    with (folder / "gold.jsonl").open("w") as gold, (folder / "base.trec").open("w") as base, \
            (folder / "cand.trec").open("w") as cand:
        for i in range(queries):
            rel = [int(x) for x in rng.choice(docs, size=3, replace=False)]
            gold.write(json.dumps({"query_id": f"q{i}", "relevant_chunks": [{"chunk_id": f"d{x}", "grade": 1 + x % 3} for x in rel],
                                   "tags": {"few": f"f{i % 10}", "many": f"m{int(many_of[i]):05d}"}}) + "\n")
            # two versions of a retriever: the baseline finds a relevant item in most queries, the
            # candidate moves, loses or finds one in about half of them (most paired differences are not 0)
            ranked = [int(x) for x in rng.choice(docs, size=depth + 3, replace=False) if x not in rel][:depth]
            if rng.random() < 0.7:
                ranked[min(int(rng.geometric(0.3)) - 1, depth - 1)] = rel[0]
            other = list(ranked)
            if rng.random() < 0.5:
                j, k = (int(x) for x in rng.integers(0, depth, size=2))
                other[j], other[k] = other[k], other[j]
                if rng.random() < 0.3:
                    other[int(rng.integers(0, 5))] = rel[1]
            for out, items, tag in ((base, ranked, "base"), (cand, other, "cand")):
                out.writelines(f"q{i} Q0 d{d} {k + 1} {depth - k}.0 {tag}\n" for k, d in enumerate(items))
    (folder / "params.json").write_text(json.dumps(params))
    (folder / "done").write_text("")
    return folder


def commands(case: str, folder: Path, field: str, out: Path) -> list[str]:
    exe = rankgate_exe()
    gold, base, cand = (str(folder / n) for n in ("gold.jsonl", "base.trec", "cand.trec"))
    if case == "compare":
        return [exe, "compare", "--gold", gold, base, cand, "--by", field]
    cmd = [exe, "evaluate", "--gold", gold, "--run", base, "--by", field]
    return cmd + (["--out", str(out / f"{case}-{field}")] if case == "evaluate-out" else [])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--queries", type=int, default=100_000)
    p.add_argument("--depth", type=int, default=20, help="retrieved items per query in each run")
    p.add_argument("--many", type=int, default=50_000, help="values of the 'many' field")
    p.add_argument("--cases", default=",".join(CASES), help="comma list of " + ",".join(CASES))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--timeout", type=float, default=1800)
    p.add_argument("--data-dir", type=Path, default=HERE / "data")
    p.add_argument("--results", type=Path, default=HERE / "results" / "segments-scaling.md")
    args = p.parse_args(argv)
    folder = data_dir(args.data_dir, args.queries, args.depth, args.many)
    cases = [c for c in args.cases.split(",") if c]
    runs: dict[tuple[str, str], list] = {(c, f): [] for c in cases for f in ("few", "many")}
    lines_out: dict[tuple[str, str], int] = {}
    for i in range(args.rounds):
        out = Path(tempfile.mkdtemp(prefix="rankgate-segments-"))
        try:
            for case in cases:
                for field in ("few", "many"):
                    r, stdout, err = measure(commands(case, folder, field, out), dict(os.environ), args.timeout)
                    if r.rc != 0:
                        raise SystemExit(f"{case} --by {field} exited {r.rc}: {err.strip()[-500:]}")
                    runs[(case, field)].append(r)
                    lines_out[(case, field)] = stdout.count("\n")
                    print(f"round {i + 1}: {case} --by {field} {r.wall:.2f} s, {r.rss / 2**20:,.0f} MB, "
                          f"{lines_out[(case, field)]:,} lines", file=sys.stderr)
        finally:
            shutil.rmtree(out, ignore_errors=True)
    load = os.getloadavg()
    lines = [
        f"# --by 10 values against {args.many:,} values, {args.queries:,} queries x {args.depth} items",
        "",
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {os.cpu_count()} cores; load average {load[0]:.2f} at the "
        f"end (a shared machine: read the ratios, taken from the best of {args.rounds} rounds).",
        "",
        "| case | 10 values s | many values s | time ratio (goal <= 2x) | 10 values RSS | many values RSS | lines printed | rounds s |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for case in cases:
        few, many = runs[(case, "few")], runs[(case, "many")]
        tf, tm = min(x.wall for x in few), min(x.wall for x in many)
        mf, mm = min(x.rss for x in few), min(x.rss for x in many)
        per = "; ".join(f"{a.wall:.1f} / {b.wall:.1f}" for a, b in zip(few, many))
        lines.append(f"| {case} | {tf:.2f} | {tm:.2f} | {tm / tf:.2f}x | {mf / 2**20:,.0f} MB | {mm / 2**20:,.0f} MB | "
                     f"{lines_out[(case, 'few')]:,} / {lines_out[(case, 'many')]:,} | {per} |")
    text = "\n".join(lines) + "\n"
    print(text)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
