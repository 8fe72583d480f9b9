"""pytrec_eval as its users call it on TREC files; prints the means as rankgate's summary.json shape.

usage: python pytrec_eval_trec.py QRELS RUN

Its own parsers (`parse_qrel`, `parse_run` on file objects), then one `RelevanceEvaluator.evaluate`.
Means are taken over every query in the qrels: a query missing from the run counts as 0, as rankgate
does by default (pytrec_eval itself only returns the queries it found in the run).
pytrec_eval's `recip_rank` has no rank cutoff, so it is reported as "mrr", not "mrr@10".
"""

import json
import sys

import pytrec_eval

MEASURES = {
    "ndcg_cut_10": "ndcg@10",
    "recall_100": "recall@100",
    "P_10": "precision@10",
    "recip_rank": "mrr",
    "map_cut_100": "map@100",
    "success_10": "hit@10",
}


def main() -> None:
    qrels_path, run_path = sys.argv[1:3]
    with open(qrels_path) as f:
        qrels = pytrec_eval.parse_qrel(f)
    with open(run_path) as f:
        run = pytrec_eval.parse_run(f)
    per_query = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES)).evaluate(run)
    n = len(qrels)
    metrics = {
        name: {"mean": sum(per_query[q][m] for q in qrels if q in per_query) / n, "n": n}
        for m, name in MEASURES.items()
    }
    json.dump({"metrics": metrics, "queries_in_run": len(per_query)}, sys.stdout)


if __name__ == "__main__":
    main()
