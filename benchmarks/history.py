"""What `rankgate history` costs: recording a 100k-query summary, and the dashboard of 10,000 entries.

    python benchmarks/history.py                     # both cases, 3 rounds each
    python benchmarks/history.py --entries 2000 --rounds 1

Cases (each a fresh `rankgate` process, timed by spawn.py from spawn to exit, best of the rounds):

* ``add-100k``: `rankgate history add summary.json --store DIR` of an evaluate summary of 100,000 queries (six
  metrics, three segments, the packed per-query block) into a new store. Goal: 1 s.
* ``report-10k``: `rankgate history report` of a store of 10,000 entries (5,000 commits, each evaluate's summary
  and the gate outcome of the demo, with shifted numbers, a gold change and breaches). Goal: 5 s. The store is
  written in-process by the store's own writer (the `add` command's), which takes a while the first time; it is
  kept under --data-dir.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import measure, rankgate_exe  # noqa: E402

METRICS = ("hit@5", "recall@5", "precision@5", "mrr", "ndcg@10", "map@10")


def summary_100k(path: Path, n: int = 100_000) -> None:
    """An evaluate summary.json of ``n`` queries as rankgate writes it (packed per-query block)."""
    import numpy as np

    from rankgate.gating.baseline import per_query_dict
    from rankgate.model.results import EvaluationResult

    rng = np.random.default_rng(0)
    ids = tuple(f"q{i:07d}" for i in range(n))
    values = {m: rng.integers(0, 5, n).astype(np.float64) / 4 for m in METRICS}
    langs = tuple(("de", "en", "es")[i % 3] for i in range(n))
    result = EvaluationResult(query_ids=ids, metric_names=METRICS, values=values, fields={"tags.lang": langs},
                              first_relevant_rank=rng.integers(0, 20, n),
                              inputs={"gold": {"path": "gold.jsonl", "sha256": "a" * 64}})

    def stat(v: np.ndarray) -> dict:
        return {"mean": float(v.mean()), "n": int(v.size), "ci_low": float(v.mean()) - 0.01, "ci_high": float(v.mean()) + 0.01}

    segments = {"tags.lang": {lab: {m: stat(values[m][np.asarray(langs) == lab]) for m in METRICS} for lab in ("de", "en", "es")}}
    data = {"metrics": {m: stat(v) for m, v in values.items()}, "segments": segments,
            "inputs": {"gold": {"path": "gold.jsonl", "sha256": "a" * 64}, "run": {"path": "run.jsonl", "sha256": "b" * 64}},
            "options": {"ties": "input"}, "per_query": per_query_dict(result)}
    path.write_text(json.dumps(data), encoding="utf-8")


def store_10k(store: Path, entries: int) -> None:
    """A store of ``entries`` entries: evaluate's summary and the gate outcome of the demo at entries/2 commits."""
    from rankgate.demo.pipeline import run_demo
    from rankgate.history.entries import entry_of
    from rankgate.history.store import open_store

    demo = Path(tempfile.mkdtemp(prefix="rankgate-history-demo-"))
    try:
        run_demo(demo / "d", seed=0)
        summary = json.loads((demo / "d" / "candidate" / "summary.json").read_text(encoding="utf-8"))
        gate = json.loads((demo / "d" / "gate.json").read_text(encoding="utf-8"))
    finally:
        shutil.rmtree(demo, ignore_errors=True)
    s = open_store(str(store), create=True)
    t0 = 1_767_225_600_000_000  # 2026-01-01
    for i in range(entries // 2):
        sm, gt = copy.deepcopy(summary), copy.deepcopy(gate)
        shift = ((i * 7919) % 100 - 50) / 2000
        for block in (sm["metrics"], gt["metrics"]):
            r = block["recall@5"]
            r.update(mean=r["mean"] + shift, ci_low=r["ci_low"] + shift, ci_high=r["ci_high"] + shift)
        sm["inputs"]["run"]["sha256"] = f"{i:064x}"
        if i > entries // 4:
            sm["inputs"]["gold"]["sha256"] = gt["gold_versions"]["candidate"] = "f" * 64
        for g in gt["gates"]:
            g["owner"] = "search-quality" if g["name"] == "recall_at_5" else "ranking-team"
            g["status"] = "fail" if (i % 50) < 3 and g["name"] == "recall_at_5" else g["status"]
        when = t0 + i * 3_600_000_000
        commit = f"{i:040x}"
        for data in (sm, gt):
            entry = entry_of(data, f"{i}.json", f"{i:064x}")
            s.add(entry, commit=commit, branch="main", when_us=when, added_us=when)
        if i % 500 == 0:
            print(f"store: {2 * i:,} entries", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--entries", type=int, default=10_000)
    p.add_argument("--data-dir", type=Path, default=HERE / "data")
    p.add_argument("--timeout", type=float, default=600)
    args = p.parse_args(argv)
    exe = rankgate_exe()
    data = args.data_dir / "history"
    data.mkdir(parents=True, exist_ok=True)
    summary = data / "summary-100k.json"
    if not summary.exists():
        summary_100k(summary)
    store = data / f"store-{args.entries}"
    if not (store / "rankgate-history.json").exists():
        shutil.rmtree(store, ignore_errors=True)
        store_10k(store, args.entries)
    rows = []
    cases = {
        "add-100k": (lambda out: [exe, "history", "add", str(summary), "--store", str(out / "s"), "--commit", "abcd"], 1.0),
        f"report-{args.entries // 1000}k": (lambda out: [exe, "history", "report", "--store", str(store),
                                                          "-o", str(out / "dashboard.html")], 5.0),
    }
    for name, (cmd, goal) in cases.items():
        walls = []
        for _ in range(args.rounds):
            out = Path(tempfile.mkdtemp(prefix="rankgate-history-bench-"))
            try:
                r, _, err = measure(cmd(out), dict(os.environ), args.timeout)
                if r.rc != 0:
                    raise SystemExit(f"{name}: exited {r.rc}: {err.strip()[-500:]}")
                walls.append((r.wall, r.rss))
            finally:
                shutil.rmtree(out, ignore_errors=True)
        best = min(walls)
        rows.append(f"| {name} | {best[0]:.2f} | {goal:g} | {best[1] / 2**20:,.0f} MB | "
                    + "; ".join(f"{w:.2f}" for w, _ in walls) + " |")
    load = os.getloadavg()
    text = "\n".join([
        "# rankgate history", "",
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {os.cpu_count()} cores; load average {load[0]:.2f}; "
        f"summary {summary.stat().st_size / 2**20:.1f} MB; store of {args.entries:,} entries.", "",
        "| case | best s | goal s | RSS | rounds s |", "|---|---:|---:|---:|---|", *rows]) + "\n"
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
