"""``rankgate pool``: the unjudged items of several runs' top-k, with texts, to be labelled.

Writes JSONL, one item a line: ``query_id``, ``query``, ``id``, ``text``, ``runs``, ``best_rank``,
in gold order, then best rank, then the first run that retrieved it, then id (see
:mod:`rankgate.pooling`). ``rankgate judge relevance`` reads it; labels come back as
``{query_id, id, grade}`` for ``rankgate evaluate --judged``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from .options import add_gold, add_out, add_ties

HELP = "write the unjudged items of several runs' top-k (with texts) for a judge or humans to label"


def add_parser(sub: Any) -> None:
    p = sub.add_parser("pool", help=HELP, description=HELP + ". See docs/answers.md.")
    add_gold(p)
    p.add_argument("--runs", required=True, nargs="+", metavar="RUN", help="runs whose top items are pooled")
    p.add_argument("--depth", type=int, default=10, metavar="K", help="items of each run's ranking pooled (default 10)")
    p.add_argument("--corpus", metavar="PATH", help="corpus manifest: texts of items the runs did not log")
    add_ties(p)
    add_out(p, "the queue, JSONL", required=True, metavar="FILE")


def run(args: argparse.Namespace) -> int:
    from ..atomic import check_file, check_not_input, write_text
    from ..data import load_gold, load_run
    from ..pooling import pool_queue

    check_file(args.out, option="--out")
    check_not_input(args.out, (args.gold, *args.runs, args.corpus), option="--out")
    if args.depth < 1:
        from ..errors import UsageError

        raise UsageError(f"--depth must be a positive integer; got {args.depth}")
    gold = load_gold(args.gold)
    runs = [load_run(path) for path in args.runs]
    corpus = None
    if args.corpus:
        from ..corpus import load_manifest

        corpus = load_manifest(args.corpus)
    labels = _labels(args.runs)
    items = pool_queue(gold, runs, labels, depth=args.depth, corpus=corpus, ties=args.ties)
    write_text(args.out, "".join(json.dumps(i.to_dict(), ensure_ascii=False, sort_keys=False) + "\n" for i in items))
    queries = len({i.query_id for i in items})
    print(f"wrote {args.out}: {len(items)} unjudged items of {queries} queries "
          f"(top {args.depth} of {len(runs)} runs)", file=sys.stderr)
    return 0


def _labels(paths: list[str]) -> list[str]:
    """Short names of the runs: file names, with the folder when two share a name."""
    names = [os.path.basename(p) for p in paths]
    if len(set(names)) < len(names):
        names = [os.path.normpath(p) for p in paths]
    return names
