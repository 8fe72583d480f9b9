"""What logging cost and conversations costs: a 100k-query JSONL run with a ``cost`` object and a
``conversation_id`` on every record against the same run without them (issue 37: at most 1.1x).

    python benchmarks/cost_fields.py                  # 100k queries x 20 items, 3 rounds each
    python benchmarks/cost_fields.py --queries 20000  # smaller

Each round runs ``rankgate evaluate --gold G --run R --out DIR`` in a fresh process (the command as a user
runs it, summary.json, metrics.csv and the cost section included) and, in this process, reads the run alone
(:func:`rankgate.io.load_run`, the compiled scanner's path). Prints the median of each (wall seconds, and the
evaluate processes' CPU seconds, user + system, which another process on the machine disturbs less), the
spread (lowest and highest round) and the ratios, says whether the compiled scanner took both files, and
exits 1 when the median wall ratio of evaluate is above 1.1.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time

LIMIT = 1.1


def _write(folder: str, n: int, items: int) -> tuple[str, str, str]:
    rng = random.Random(0)
    gold, plain, costed = (os.path.join(folder, name) for name in ("gold.jsonl", "plain.jsonl", "costed.jsonl"))
    with open(gold, "w") as g, open(plain, "w") as p, open(costed, "w") as c:
        for i in range(n):
            g.write(json.dumps({"query_id": f"q{i}", "relevant_chunks": [{"chunk_id": f"d{(i * 7) % 5000}", "grade": 1}]})
                    + "\n")
            rec = {"query_id": f"q{i}", "topk": [{"chunk_id": f"d{(i * 7 + j * 13) % 5000}", "score": round(1 - j / 50, 4)}
                                                 for j in range(items)]}
            p.write(json.dumps(rec) + "\n")
            tokens = 1200 + rng.randint(0, 900)
            rec["cost"] = {"tokens_in": tokens, "tokens_out": 180 + rng.randint(0, 60),
                           "usd": round(tokens * 2.5e-7 + 1.2e-4, 7), "embed_ms": round(2 + rng.random(), 3),
                           "rerank_ms": round(30 + rng.random() * 20, 3)}
            rec["conversation_id"] = f"c{i // 4}"
            c.write(json.dumps(rec) + "\n")
    return gold, plain, costed


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _evaluate(gold: str, run: str, out: str) -> tuple[float, float]:
    """Wall and CPU seconds of one ``rankgate evaluate`` process."""
    cpu, start = _cpu(), time.perf_counter()
    subprocess.run([sys.executable, "-m", "rankgate", "evaluate", "--gold", gold, "--run", run, "--out", out],
                   check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start, _cpu() - cpu


def _load(run: str) -> float:
    from rankgate.io import load_run

    start = time.perf_counter()
    load_run(run)
    return time.perf_counter() - start


def _scanned(run: str) -> bool:
    from rankgate.io import jsonl_fast

    found = jsonl_fast._opened(run, 0)
    try:
        return found is not None and jsonl_fast._scan_run(found, run) is not None
    finally:
        if found is not None:
            found.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=100_000)
    ap.add_argument("--items", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        gold, plain, costed = _write(folder, args.queries, args.items)
        sizes = {name: os.path.getsize(path) / 1e6 for name, path in (("plain", plain), ("costed", costed))}
        print(f"{args.queries:,} queries x {args.items} items: {sizes['plain']:.0f} MB without, "
              f"{sizes['costed']:.0f} MB with cost and conversation_id; compiled scanner takes "
              f"plain: {_scanned(plain)}, costed: {_scanned(costed)}")
        times: dict[str, list[float]] = {k: [] for k in ("plain", "costed", "cpu plain", "cpu costed", "load plain",
                                                          "load costed")}
        for r in range(args.rounds):  # (interleaved: a machine's drift touches both alike)
            for name, run in (("plain", plain), ("costed", costed)):
                wall, cpu = _evaluate(gold, run, os.path.join(folder, f"out-{name}-{r}"))
                times[name].append(wall)
                times[f"cpu {name}"].append(cpu)
                times[f"load {name}"].append(_load(run))
        med = {name: statistics.median(v) for name, v in times.items()}

        def line(what: str, key: str, limit: str = "") -> float:
            a, b = times[f"{key}plain"], times[f"{key}costed"]
            ratio = med[f"{key}costed"] / med[f"{key}plain"]
            print(f"{what}: {med[f'{key}plain']:.2f} s without ({min(a):.2f}-{max(a):.2f}), {med[f'{key}costed']:.2f} s "
                  f"with ({min(b):.2f}-{max(b):.2f}): ratio {ratio:.2f}{limit}")
            return ratio

        ratio = line("evaluate, wall", "", f", limit {LIMIT}")
        line("evaluate, CPU ", "cpu ")
        line("load_run, wall", "load ")
    return 0 if ratio <= LIMIT else 1


if __name__ == "__main__":
    sys.exit(main())
