"""Per-query latency gathering scales linearly: evaluate with two latency stages at n and 4n queries.

    python benchmarks/latency_scaling.py            # 25k and 100k queries

A quadratic regression (one list of every query built per query) took ~40 s at 100k queries; the linear
code takes well under a second. Prints both times and their ratio (about 4 when linear).
"""

from __future__ import annotations

import sys
import time


def _time(n: int) -> float:
    from rankgate import evaluate
    from rankgate.io import load_run

    gold = {f"q{i}": {f"d{i}": 1} for i in range(n)}
    run = load_run([{"query_id": f"q{i}", "topk": [f"d{i}"], "latency_ms": {"retrieve": 1.0, "rerank": 2.0}}
                    for i in range(n)])
    start = time.perf_counter()
    evaluate(gold, run, "hit@1")
    return time.perf_counter() - start


def main() -> int:
    small, large = 25_000, 100_000
    t_small, t_large = _time(small), _time(large)
    print(f"{small:,} queries: {t_small:.3f} s; {large:,} queries: {t_large:.3f} s; ratio {t_large / t_small:.1f} "
          "(about 4 when linear, about 16 when quadratic)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
