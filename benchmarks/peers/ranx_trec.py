"""ranx as its users call it on TREC files; prints the means as rankgate's summary.json shape.

usage: python ranx_trec.py QRELS RUN

`Qrels.from_file` / `Run.from_file` with kind="trec", then one `evaluate`. ranx requires the run and
the qrels to hold the same queries (it raises otherwise), so the means are over every qrels query.
Set NUMBA_CACHE_DIR to choose where ranx's compiled kernels are cached.
"""

import json
import sys

from ranx import Qrels, Run, evaluate

METRICS = {
    "ndcg@10": "ndcg@10",
    "recall@100": "recall@100",
    "precision@10": "precision@10",
    "mrr@10": "mrr@10",
    "map@100": "map@100",
    "hit_rate@10": "hit@10",
}


def main() -> None:
    qrels_path, run_path = sys.argv[1:3]
    qrels = Qrels.from_file(qrels_path, kind="trec")
    run = Run.from_file(run_path, kind="trec")
    means = evaluate(qrels, run, list(METRICS))
    n = len(qrels)
    metrics = {name: {"mean": float(means[m]), "n": n} for m, name in METRICS.items()}
    json.dump({"metrics": metrics}, sys.stdout)


if __name__ == "__main__":
    main()
