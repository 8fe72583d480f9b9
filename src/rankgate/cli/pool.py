"""``rankgate pool``: the unjudged items of several runs' top-k, with texts, to be labelled.

Writes JSONL, one item a line: ``query_id``, ``query``, ``id``, ``text``, ``runs``, ``best_rank``,
in gold order, then best rank, then the first run that retrieved it, then id (see
:mod:`rankgate.stats.pooling`). ``rankgate judge relevance`` reads it; labels come back as
``{query_id, id, grade}`` for ``rankgate evaluate --judged``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rankgate.cli.options import add_gold, add_out, add_ties
from rankgate.cli.outputs import Output

HELP = "write the unjudged items of several runs' top-k (with texts) for a judge or humans to label"
#: What the command writes (:mod:`rankgate.cli.outputs`).
OUTPUTS = {"out": Output("--out", required=True)}


def add_parser(sub: Any) -> None:
    p = sub.add_parser("pool", help=HELP, description=HELP + ". See docs/answers.md.")
    add_gold(p)
    p.add_argument("--runs", required=True, nargs="+", metavar="RUN", help="runs whose top items are pooled")
    p.add_argument("--depth", type=int, default=10, metavar="K", help="items of each run's ranking pooled (default 10)")
    p.add_argument("--corpus", metavar="PATH", help="corpus manifest: texts of items the runs did not log")
    add_ties(p)
    add_out(p, "the queue, JSONL", required=True, metavar="FILE")


def request(args: argparse.Namespace) -> Any:
    from rankgate.flows.pool import PoolRequest

    return PoolRequest(args.gold, tuple(args.runs), depth=args.depth, corpus=args.corpus, ties=args.ties)


def run(args: argparse.Namespace) -> int:
    from rankgate.cli.outputs import check_outputs
    from rankgate.flows.pool import run_pool

    req = request(args)
    planned = check_outputs(args, OUTPUTS, req)
    pooled = run_pool(req)
    planned.write({args.out: "".join(json.dumps(i.to_dict(), ensure_ascii=False, sort_keys=False) + "\n"
                                   for i in pooled.items)})
    print(f"wrote {args.out}: {len(pooled.items)} unjudged items of {pooled.queries} queries "
          f"(top {args.depth} of {len(args.runs)} runs)", file=sys.stderr)
    return 0
