"""What `rankgate report` costs beside `rankgate evaluate` on the same files, measured in one run.

    python benchmarks/report_cost.py                   # 100k x 100 TREC and 10k x 100 JSONL with texts, 3 rounds
    python benchmarks/report_cost.py --rounds 5 --cases 100k-trec

Each round runs evaluate, then report, as fresh processes (spawn.py: wall time from spawn to exit,
peak RSS of that process alone), so a noisy neighbour slows both alike; the table gives the best
round of each (the least disturbed) and the ratio of the bests, with every round's times beside.
evaluate is timed as in run.py (six metrics, 2,000-resample CIs, --out); report with its defaults
(panel, k-sweep with CIs, segments, top misses, diagnosis, HTML). The goals: report at most 2x the
evaluate time and 1.5x its peak memory on 100k TREC files, at most 3x the time on JSONL with texts.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import generate  # noqa: E402
from run import METRICS, measure, rankgate_exe  # noqa: E402

CASES = {  # name: (dataset, format, goal on time, goal on memory)
    "100k-trec": ("100k", "trec", 2.0, 1.5),
    "10k-jsonl-texts": ("10k", generate.TEXTS, 3.0, None),
}


def commands(gold: Path, run: Path, out: Path) -> dict[str, list[str]]:
    exe = rankgate_exe()
    return {
        "evaluate": [exe, "evaluate", "--gold", str(gold), "--run", str(run), "--metrics", METRICS, "--out", str(out / "ev")],
        "report": [exe, "report", "--gold", str(gold), "--run", str(run), "-o", str(out / "report.html")],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default=",".join(CASES), help="comma list of " + ",".join(CASES))
    p.add_argument("--rounds", type=int, default=3, help="rounds of evaluate then report (best of them is shown)")
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--data-dir", type=Path, default=HERE / "data")
    p.add_argument("--results", type=Path, default=HERE / "results" / "report-cost.md")
    args = p.parse_args(argv)
    rows = []
    for name in args.cases.split(","):
        size, fmt, time_goal, mem_goal = CASES[name]
        spec = generate.SPECS[size]
        generate.ensure(args.data_dir, spec, [fmt], log=lambda m: print(m, file=sys.stderr))
        gold, run = generate.paths(args.data_dir, spec, fmt)
        runs: dict[str, list] = {"evaluate": [], "report": []}
        for i in range(args.rounds):
            out = Path(tempfile.mkdtemp(prefix="rankgate-report-cost-"))
            try:
                for tool, cmd in commands(gold, run, out).items():
                    r, _, err = measure(cmd, dict(os.environ), args.timeout)
                    if r.rc != 0:
                        raise SystemExit(f"{name}: {tool} exited {r.rc}: {err.strip()[-500:]}")
                    runs[tool].append(r)
                    print(f"{name} round {i + 1}: {tool} {r.wall:.2f} s, {r.rss / 2**20:,.0f} MB", file=sys.stderr)
            finally:
                shutil.rmtree(out, ignore_errors=True)
        ev_t, rep_t = (min(x.wall for x in runs[t]) for t in ("evaluate", "report"))
        ev_m, rep_m = (min(x.rss for x in runs[t]) for t in ("evaluate", "report"))
        rows.append((name, spec, ev_t, rep_t, ev_m, rep_m, time_goal, mem_goal, runs))
    load = os.getloadavg()
    lines = [
        "# rankgate report beside rankgate evaluate, same files, one run",
        "",
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {os.cpu_count()} cores; load average "
        f"{load[0]:.2f} at the end (a shared machine: read the ratios, taken from the best of {args.rounds} rounds).",
        "",
        "| case | evaluate s | report s | time ratio (goal) | evaluate RSS | report RSS | memory ratio (goal) | rounds: evaluate / report s |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, spec, ev_t, rep_t, ev_m, rep_m, tg, mg, runs in rows:
        per = "; ".join(f"{a.wall:.1f} / {b.wall:.1f}" for a, b in zip(runs["evaluate"], runs["report"]))
        lines.append(
            f"| {name} ({spec.n_queries:,} x {spec.docs_per_query}) | {ev_t:.2f} | {rep_t:.2f} | {rep_t / ev_t:.2f}x (<= {tg:g}x) "
            f"| {ev_m / 2**20:,.0f} MB | {rep_m / 2**20:,.0f} MB | {rep_m / ev_m:.2f}x"
            f"{'' if mg is None else f' (<= {mg:g}x)'} | {per} |")
    text = "\n".join(lines) + "\n"
    print(text)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
