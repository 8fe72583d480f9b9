"""``rankgate stress``: does the reranker hold up when hard negatives are put on top of its input?

::

    rankgate stress --gold gold.jsonl --run raw_top50.jsonl --corpus corpus.jsonl --reranker bm25 \\
        --negatives lexical --ranks 1,2,3 --n 100 --seed 0 --out stress/

Exit codes: 0 the reranker held up, 1 it failed (nDCG@5 dropped by more than --max-drop and the
paired interval of the change is below zero), 2 usage or input error.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from .options import add_gold, add_out, add_run, add_stats, add_ties

HELP = "reranker stress test: put hard negatives at given ranks of the reranker's input and measure the damage"
OUT_FILES = ("stress.json", "stress.md", "before.jsonl", "after.jsonl")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("stress", help=HELP, description=HELP + ". See docs/experiments.md.")
    add_gold(p)
    add_run(p, help="the first stage's run: the reranker's input (e.g. top 50)")
    p.add_argument("--corpus", metavar="FILE", help="corpus JSONL: the text of every item and negative (else the run's texts)")
    p.add_argument("--reranker", default="bm25", metavar="NAME", help="bm25 (default), dense, or package.module:Class")
    p.add_argument("-O", "--option", action="append", default=[], metavar="KEY=VALUE",
                   help="reranker option, repeatable (as for 'rankgate retrieve')")
    p.add_argument("--negatives", default="must-not", metavar="FILE|must-not|lexical",
                   help="hard negatives: the gold set's must_not_retrieve items (default), lexical near-misses from "
                        "--corpus, or a JSONL file of {query_id, negatives: [chunk_id, ...]}")
    p.add_argument("--ranks", default="1,2,3", metavar="R1,R2,...", help="input ranks the negatives are put at (default 1,2,3)")
    p.add_argument("--n", type=int, default=100, metavar="N", help="queries to stress, sampled with --seed (default 100; 0 = all)")
    p.add_argument("--depth", type=int, default=None, metavar="N", help="items of the run given to the reranker (default: all)")
    p.add_argument("--max-drop", type=float, default=0.05, metavar="X",
                   help="largest nDCG@5 drop the reranker may show (default 0.05); it fails beyond it when the "
                        "paired interval is below zero")
    p.add_argument("--by", action="append", default=[], metavar="FIELD", help="also per segment of a gold field or tag; repeatable")
    add_ties(p)
    add_stats(p, seed_help="seed of the sample and the bootstrap (default 0)")
    add_out(p, "folder for stress.json, stress.md, before.jsonl, after.jsonl", required=True)


def parse_ranks(text: str) -> tuple[int, ...]:
    from ..errors import UsageError

    parts = [p.strip() for p in str(text).split(",")]
    if not all(p.isdigit() and int(p) >= 1 for p in parts) or len(set(parts)) != len(parts):
        raise UsageError(f"--ranks must be distinct ranks >= 1 separated by commas, e.g. 1,2,3; got {text!r}")
    if len(parts) > 20:
        raise UsageError(f"--ranks takes at most 20 ranks; got {len(parts)}")
    return tuple(int(p) for p in parts)


def _negatives_file(path: str, gold_ids: set[str]) -> dict[str, list[str]]:
    from ..data.jsonl import json_objects
    from ..errors import InputError

    out: dict[str, list[str]] = {}
    for lineno, obj in json_objects(path, "negatives file", '{"query_id", "negatives"}'):
        if not isinstance(obj.get("query_id"), str):
            raise InputError("must be an object with a string 'query_id'", path=path, line=lineno,
                             hint='e.g. {"query_id": "q1", "negatives": ["doc_7#c2"]}')
        negs = obj.get("negatives")
        if not isinstance(negs, list) or not negs or not all(isinstance(x, str) and x for x in negs):
            raise InputError("field 'negatives' must be a non-empty list of chunk ids", path=path, line=lineno,
                             field="negatives")
        qid = obj["query_id"]
        if qid in out:
            raise InputError(f"lists query {qid!r} a second time", path=path, line=lineno, hint="one line per query")
        if qid not in gold_ids:
            raise InputError(f"names query {qid!r}, which is not in the gold set", path=path, line=lineno, field="query_id")
        out[qid] = list(dict.fromkeys(negs))
    if not out:
        raise InputError("has no negatives", path=path, hint='one JSON object per line: {"query_id": …, "negatives": […]}')
    return out


def run(args: argparse.Namespace) -> int:
    from ..atomic import check_folder, write_files
    from ..data import load_gold, load_run
    from ..errors import InputError, UsageError
    from ..experiments.stress import lexical_negatives, negatives_from_gold, ranked_items, stress_test
    from ..retrieval.base import Chunk, Query
    from ..retrieval.rerank import get_reranker
    from .options import check_stats_args
    from .options import parse_key_values as _parse_options

    check_stats_args(args)
    ranks = parse_ranks(args.ranks)
    if args.n < 0:
        raise UsageError(f"--n must be >= 0 (0 stresses every query); got {args.n}")
    if args.depth is not None and args.depth < 1:
        raise UsageError(f"--depth must be >= 1; got {args.depth}")
    if not 0.0 <= args.max_drop <= 1.0:
        raise UsageError(f"--max-drop must be between 0 and 1 (an nDCG@5 difference); got {args.max_drop}")
    mode = args.negatives
    if mode == "lexical" and not args.corpus:
        raise UsageError("--negatives lexical needs --corpus: near-misses are found in the corpus")
    check_folder(args.out, OUT_FILES, option="--out")
    reranker = get_reranker(args.reranker, **_parse_options(list(args.option or [])))
    gold = load_gold(args.gold)
    run_ = load_run(args.run)

    chunks: dict[str, Chunk] = {}
    texts = run_.items.get("text")
    if texts is not None:
        docs = run_.r_doc.to_pylist()
        versions = run_.items.get("doc_version") or [None] * len(docs)
        for cid, text, version in zip(docs, texts, versions):
            if isinstance(text, str) and cid not in chunks:
                chunks[cid] = Chunk(cid, text, doc_version=version)
    corpus: list[Chunk] = []
    if args.corpus:
        from ..retrieval.corpus import load_corpus

        corpus = load_corpus(args.corpus)
        chunks.update({c.chunk_id: c for c in corpus})
        index = getattr(reranker, "index", None)
        if callable(index):
            index(corpus)
    tags = gold.field("tags")
    queries: dict[str, Query] = {}
    for i, (qid, text) in enumerate(zip(gold.query_ids, gold.field("query"))):
        if isinstance(text, str) and text.strip():
            queries[qid] = Query(qid, text, dict(tags[i]) if isinstance(tags[i], dict) else {})
    if not queries:
        raise InputError("has no query texts; the reranker needs each query's text", path=gold.source, field="query",
                         hint="use a gold set with a 'query' field (JSONL) or a BEIR folder with queries.jsonl")
    if mode == "must-not":
        negatives = negatives_from_gold(gold)
    elif mode == "lexical":
        negatives = lexical_negatives(gold, corpus, queries, ranked_items(run_, args.ties), len(ranks))
    else:
        negatives = _negatives_file(mode, set(gold.query_ids))
    negatives = {q: v for q, v in negatives.items() if q in queries}
    result = stress_test(gold, run_, reranker, chunks=chunks, queries=queries, negatives=negatives,
                         negatives_name=mode if mode in ("must-not", "lexical") else os.path.basename(mode),
                         ranks=ranks, n=args.n or None, depth=args.depth, seed=args.seed, max_drop=args.max_drop,
                         by=args.by, n_resamples=args.resamples, confidence=args.confidence,
                         reranker_name=args.reranker, ties=args.ties)
    import json

    from ..report.experiments import stress_markdown, stress_renderable

    def jsonl(records: Any) -> str:
        return "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in records)

    write_files({
        os.path.join(args.out, "stress.json"): json.dumps(result.to_dict(), indent=2, sort_keys=True,
                                                          ensure_ascii=False, allow_nan=False) + "\n",
        os.path.join(args.out, "stress.md"): stress_markdown(result, args.confidence),
        os.path.join(args.out, "before.jsonl"): jsonl(result.before_records),
        os.path.join(args.out, "after.jsonl"): jsonl(result.after_records),
    })
    from rich.console import Console

    Console(width=None if sys.stdout.isatty() else 100, highlight=False).print(stress_renderable(result, args.confidence))
    return 0 if result.passed else 1
