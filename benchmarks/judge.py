"""Judge client throughput and cache speed against the fake OpenAI-compatible server.

    python benchmarks/judge.py                       # 10,000 answers x 5 contexts = 50,000 calls, 20 ms each
    python benchmarks/judge.py --answers 1000        # quicker

The fake server (tests/fake_openai.py) runs in its own process and sleeps ``--latency`` seconds
per request; the client judges ``answers x contexts`` context_relevance items with ``--workers``
calls in flight, into an empty cache, then again from the cache. Pass: the first run's wall time is
within 1.5x of ``calls x latency / workers`` and the cached run takes under 3 s. Exit 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--answers", type=int, default=10_000)
    ap.add_argument("--contexts", type=int, default=5)
    ap.add_argument("--latency", type=float, default=0.02)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--json", metavar="FILE", help="also write the numbers here")
    args = ap.parse_args()

    from rankgate.judges import JudgeItem, coverage, open_judge

    server = subprocess.Popen([sys.executable, "-m", "tests.fake_openai", str(args.latency)], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().strip()  # type: ignore[union-attr]
        items = [JudgeItem(f"q{a}\x1fc{c}", {"question": f"question {a}: what does policy {a % 97} say about refunds?",
                                             "passage": f"Passage {c} of answer {a}. " + "Refund policy text. " * 20})
                 for a in range(args.answers) for c in range(args.contexts)]
        calls = len(items)
        ideal = calls * args.latency / args.workers
        with tempfile.TemporaryDirectory() as cache:
            with open_judge("openai", url=url, model="fake-model", cache_dir=cache, workers=args.workers,
                            timeout_s=30.0, progress=True) as judge:
                start = time.perf_counter()
                first = judge.run("context_relevance", items)
                cold = time.perf_counter() - start
            with open_judge("openai", url=url, model="fake-model", cache_dir=cache, workers=args.workers) as judge:
                start = time.perf_counter()
                second = judge.run("context_relevance", items)
                warm = time.perf_counter() - start
            cache_mb = os.path.getsize(os.path.join(cache, "judge-cache.sqlite3")) / 1e6
    finally:
        server.terminate()
        server.wait()
    ok_cold = cold <= 1.5 * ideal
    ok_warm = warm < 3.0
    result = {"calls": calls, "latency_s": args.latency, "workers": args.workers, "ideal_s": round(ideal, 2),
              "cold_s": round(cold, 2), "cold_ratio": round(cold / ideal, 3), "cached_s": round(warm, 2),
              "coverage": coverage(first), "all_cached": all(j.cached for j in second),
              "cache_mb": round(cache_mb, 1), "cpus": os.cpu_count(), "python": platform.python_version(),
              "load_avg_1m": round(os.getloadavg()[0], 2)}
    print(f"{calls:,} calls, {args.latency * 1000:g} ms each, {args.workers} workers")
    print(f"  cold run   {cold:8.2f} s  (ideal {ideal:.2f} s; ratio {cold / ideal:.3f}; limit 1.5)  "
          f"{'ok' if ok_cold else 'TOO SLOW'}")
    print(f"  cached run {warm:8.2f} s  (limit 3 s)  {'ok' if ok_warm else 'TOO SLOW'}")
    print(f"  coverage {result['coverage'][0]:,}/{result['coverage'][1]:,}, cache {cache_mb:.1f} MB, "
          f"load average {result['load_avg_1m']} on {os.cpu_count()} cores")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0 if ok_cold and ok_warm and result["all_cached"] else 1


if __name__ == "__main__":
    sys.exit(main())
