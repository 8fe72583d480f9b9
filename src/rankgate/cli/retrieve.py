"""``rankgate retrieve``: run a built-in or your own retriever and write a run file.

::

    rankgate retrieve --corpus corpus.jsonl --gold gold.jsonl --retriever bm25 -o run.jsonl [--depth 100]
    rankgate retrieve --beir path/to/beir_folder --retriever bm25 -o run.jsonl
    rankgate retrieve --corpus corpus.jsonl --gold gold.jsonl --retriever mypkg.search:MyRetriever \\
        -O model=/models/e5 -o run.jsonl

This module imports nothing heavy at import time: the CLI builds its parser on every start.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rankgate.cli.options import add_gold, add_out, add_renamed
from rankgate.cli.options import parse_key_values as _parse_options
from rankgate.cli.outputs import Output

__all__ = ["OUTPUTS", "add_parser", "parse_texts", "request", "run"]

from rankgate.flows.retrieve import DEFAULT_TEXTS

#: What the command writes (:mod:`rankgate.cli.outputs`; the run is written by rankgate.retrieval.write_run).
OUTPUTS = {"out": Output("--out", required=True)}

_DESCRIPTION = """\
Index a corpus with a retriever, run the queries, and write a run JSONL file
that 'rankgate evaluate' scores. Give either --corpus with --gold (the gold
set's queries are run), or --beir with a BEIR folder (corpus.jsonl,
queries.jsonl, qrels).
"""

_EPILOG = """\
retrievers: bm25 (default), dense (needs: pip install 'rankgate[dense]'), the
presets bm25-multilingual and bm25-english, or your own as
package.module:ClassName.
examples:
  rankgate retrieve --corpus corpus.jsonl --gold gold.jsonl -o run.jsonl
  rankgate retrieve --beir scifact/ --retriever bm25 -O stemmer=en \\
      -O k1=0.9 -O b=0.4 -o run.jsonl
"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``retrieve`` sub-command to ``subparsers`` and return its parser."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "retrieve",
        help="run a retriever over a corpus and write a run file",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--corpus", type=Path, metavar="FILE", help="corpus JSONL, one chunk per line")
    source.add_argument("--beir", type=Path, metavar="FOLDER", help="BEIR folder: corpus, queries and qrels")
    add_gold(parser, required=False, help="gold JSONL whose queries to run (with --corpus)", metavar="FILE")
    parser.add_argument(
        "--split",
        default=None,
        help="BEIR qrels split, qrels/SPLIT.tsv (default: test; qrels.tsv in a folder without qrels/)",
    )
    parser.add_argument(
        "--retriever", default="bm25", metavar="NAME", help="bm25, dense, a preset, or package.module:Class"
    )
    parser.add_argument(
        "-O",
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="retriever option, repeatable; VALUE is read as JSON when it parses (1.2, true, null), "
        "'none' means null, anything else is a string",
    )
    add_out(parser, "run JSONL to write", required=True, metavar="FILE", old=("--output",))
    # (--k is a metric's cutoff in every command; here it was the depth, and still is for one release)
    add_renamed(parser, "--depth", old=("--k",), type=int, default=100, metavar="N",
                help="hits kept per query (default: 100)")
    parser.add_argument(
        "--texts",
        default=f"top-{DEFAULT_TEXTS}",
        metavar="none|top-N|all",
        help=f"which hits keep their chunk text in the run: none, the first N of each query, or all "
        f"(default: top-{DEFAULT_TEXTS}, what the report's top misses show and containment@k up to "
        f"k = {DEFAULT_TEXTS} read; ids, scores and versions are always written)",
    )
    parser.add_argument(
        "--reranker", default=None, metavar="NAME",
        help="rerank the first --rerank-depth hits with bm25, dense or package.module:Class (timed as the rerank stage)",
    )
    parser.add_argument("--rerank-depth", type=int, default=50, metavar="N", help="hits given to the reranker (default 50)")
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        metavar="N",
        help="run every query N times and write the median time of each stage (default 3; 1 times each "
        "query once). Ignored with --no-latency",
    )
    parser.add_argument(
        "--no-latency",
        action="store_true",
        help="leave latency out of the run, so the same inputs give a byte-identical file",
    )
    return parser


def parse_texts(value: str) -> int | None:
    """``--texts``: ``none`` -> 0, ``top-N`` (or ``N``) -> N, ``all`` -> None (no limit)."""
    from rankgate.errors import UsageError

    text = str(value).strip().lower()
    if text == "all":
        return None
    if text == "none":
        return 0
    number = text.removeprefix("top-")
    if number.isdigit() and int(number) >= 1:
        return int(number)
    raise UsageError(f"--texts must be none, all or top-N with N >= 1 (e.g. top-10); got {value!r}")


def request(args: argparse.Namespace) -> Any:
    from rankgate.flows.retrieve import RetrieveRequest

    return RetrieveRequest(corpus=args.corpus, beir=args.beir, gold=args.gold, split=args.split,
                           retriever=args.retriever, options=_parse_options(list(args.option)), k=args.depth,
                           texts=parse_texts(args.texts), reranker=args.reranker, rerank_depth=args.rerank_depth,
                           repeat=args.repeat, latency=not args.no_latency)


def run(args: argparse.Namespace) -> int:
    """Do the work of ``rankgate retrieve``; return the exit code (errors are raised for the CLI)."""
    from rankgate.cli.outputs import check_outputs
    from rankgate.flows.retrieve import run_retrieve
    from rankgate.retrieval import write_run

    req = request(args)
    check_outputs(args, OUTPUTS, req)
    done = run_retrieve(req)
    path = write_run(done.records, args.out)
    print(
        f"{path}: {len(done.records)} queries, up to {req.k} hits each, {done.chunks} chunks indexed "
        f"with {done.system} in {done.seconds:.1f} s"
        + (f" ({done.repeat} timings per query; the median is written)" if done.repeat > 1 else "")
    )
    return 0
