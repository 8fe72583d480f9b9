"""Writes the demo's production traces, ``src/rankgate/demo/data/traces.jsonl`` (rankgate trace JSONL), from the
demo's gold set and its baseline retriever (the configuration in production): ``python benchmarks/demo_traces.py``.

Two weeks of requests for the gold queries (1 + Poisson(5) each, the text as users type it: sometimes in capitals
or with a trailing question mark), each with the top score of its candidates, a fallback flag and, for about 70% of
them, a thumbs up or down. A query the baseline misses at recall@5 gets a thumbs down with probability 0.40 and
falls back with probability 0.15; one it finds, 0.12 and 0.04: the link `rankgate validity` should find in the
demo. Each request also names the adapter that served it (``llamaindex`` for about two in three, else
``langchain``: the team is moving between frameworks) and the process's CPU time (``cpu_ms``, log-normal around
150 ms) and memory (``memory_mb``, about 420 MB), drawn from a second seeded stream so the fields above are
the same draws as before; neither depends on whether the query is missed. Seeded, so the file is the same on every run (it is checked in; this script documents how it was made).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "rankgate" / "demo" / "data" / "traces.jsonl"


def main() -> None:
    from rankgate.demo.pipeline import ROLES, _retrieve  # noqa: F401 - the demo's own retrieval
    from rankgate.flows.evaluate import EvaluateRequest, Scoring, Statistics, run_evaluation
    from rankgate.io import load_gold
    from rankgate.retrieval import demo_configs, load_corpus, load_gold_queries

    data = ROOT / "src" / "rankgate" / "demo" / "data"
    gold = load_gold(str(data / "gold.jsonl"))
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "baseline.jsonl"
        _retrieve(demo_configs()["baseline"], load_corpus(data / "corpus.jsonl"), load_gold_queries(data / "gold.jsonl"),
                  run)
        ev = run_evaluation(EvaluateRequest(gold, str(run), Scoring(metrics=["recall@5"]), Statistics(resamples=0)))
    recall = dict(zip(ev.result.query_ids, ev.result["recall@5"].tolist()))
    texts = dict(zip(gold.query_ids, gold.field("query")))
    rng = np.random.default_rng(36)
    ops = np.random.default_rng(37)  # adapter and process samples: a stream of their own
    start = np.datetime64("2026-05-04T00:00:00")
    lines = []
    r = 0
    for q in gold.query_ids:
        miss = not recall[q] >= 0.5  # (a no-answer query, NaN, counts as a miss here: it has nothing to find)
        for _ in range(1 + int(rng.poisson(5))):
            r += 1
            ts = start + np.timedelta64(int(rng.integers(0, 14 * 86400)), "s")
            text = texts[q]
            if rng.random() < 0.2:
                text = text.capitalize() + "?"
            rec: dict[str, object] = {"request_id": f"req-{r:05d}", "timestamp": f"{ts}Z", "query": text,
                                      "data_source": "help-centre", "top_k": 5,
                                      "fallback": bool(rng.random() < (0.15 if miss else 0.04)),
                                      "retrieved": [{"stage": "candidate", "rank": 1, "id": "top",
                                                     "score": round(float(rng.uniform(0.2, 0.6) if miss
                                                                          else rng.uniform(0.4, 0.9)), 3)}]}
            rec["adapter"] = "llamaindex" if ops.random() < 0.65 else "langchain"
            rec["cpu_ms"] = round(float(ops.lognormal(np.log(150.0), 0.35)), 1)
            rec["memory_mb"] = round(float(ops.normal(420.0, 18.0)) + (35.0 if rec["adapter"] == "langchain" else 0.0), 1)
            if rng.random() < 0.7:
                rec["feedback"] = [{"value": 0 if rng.random() < (0.40 if miss else 0.12) else 1}]
            lines.append(json.dumps(rec, ensure_ascii=False))
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(lines)} requests to {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
