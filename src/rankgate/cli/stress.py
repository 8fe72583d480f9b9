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

from rankgate.cli.options import add_gold, add_out, add_run, add_stats, add_ties
from rankgate.cli.outputs import Output

HELP = "reranker stress test: put hard negatives at given ranks of the reranker's input and measure the damage"
OUT_FILES = ("stress.json", "stress.md", "before.jsonl", "after.jsonl")
#: What the command writes (:mod:`rankgate.cli.outputs`): the four files into --out, or none.
OUTPUTS = {"out": Output("--out", files=OUT_FILES, required=True)}


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
    from rankgate.errors import UsageError
    from rankgate.flows.stress import MAX_RANKS

    parts = [p.strip() for p in str(text).split(",")]
    if not all(p.isdigit() and int(p) >= 1 for p in parts) or len(set(parts)) != len(parts):
        raise UsageError(f"--ranks must be distinct ranks >= 1 separated by commas, e.g. 1,2,3; got {text!r}")
    if len(parts) > MAX_RANKS:
        raise UsageError(f"--ranks takes at most {MAX_RANKS} ranks; got {len(parts)}")
    return tuple(int(p) for p in parts)


def request(args: argparse.Namespace) -> Any:
    from rankgate.flows.stress import StressRequest
    from rankgate.cli.options import parse_key_values as _parse_options

    return StressRequest(args.gold, args.run, corpus=args.corpus, reranker=args.reranker,
                         reranker_options=_parse_options(list(args.option)), negatives=args.negatives,
                         ranks=parse_ranks(args.ranks), n=args.n, depth=args.depth, max_drop=args.max_drop,
                         by=tuple(args.by), ties=args.ties, seed=args.seed, resamples=args.resamples,
                         confidence=args.confidence)


def run(args: argparse.Namespace) -> int:
    from rankgate.cli.outputs import check_outputs
    from rankgate.flows.stress import run_stress

    req = request(args)
    planned = check_outputs(args, OUTPUTS, req)
    result = run_stress(req)
    import json

    from rankgate.render.experiments import stress_markdown, stress_renderable

    def jsonl(records: Any) -> str:
        return "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in records)

    planned.write({
        os.path.join(args.out, "stress.json"): json.dumps(result.to_dict(), indent=2, sort_keys=True,
                                                          ensure_ascii=False, allow_nan=False) + "\n",
        os.path.join(args.out, "stress.md"): stress_markdown(result, req.confidence),
        os.path.join(args.out, "before.jsonl"): jsonl(result.before_records),
        os.path.join(args.out, "after.jsonl"): jsonl(result.after_records),
    })
    from rich.console import Console

    Console(width=None if sys.stdout.isatty() else 100, highlight=False).print(stress_renderable(result, req.confidence))
    return 0 if result.passed else 1
