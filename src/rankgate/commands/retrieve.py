"""``rankgate retrieve``: run a built-in or your own retriever and write a run file.

::

    rankgate retrieve --corpus corpus.jsonl --gold gold.jsonl --retriever bm25 -o run.jsonl [--k 100]
    rankgate retrieve --beir path/to/beir_folder --retriever bm25 -o run.jsonl
    rankgate retrieve --corpus corpus.jsonl --gold gold.jsonl --retriever mypkg.search:MyRetriever \\
        -O model=/models/e5 -o run.jsonl

This module imports nothing heavy at import time: the CLI builds its parser on every start.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from .options import add_gold
from .options import parse_key_values as _parse_options

__all__ = ["add_parser", "keep_texts", "parse_texts", "run"]

# The report lists the top 10 of each missed query with its text, and containment@k and
# coverage_entities@k read the text of the top k; 10 covers both at the usual cut-offs.
DEFAULT_TEXTS = 10

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
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="FILE", help="run JSONL to write")
    parser.add_argument("--k", type=int, default=100, metavar="N", help="hits kept per query (default: 100)")
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


def keep_texts(records: list[dict[str, Any]], limit: int | None) -> list[dict[str, Any]]:
    """Drop ``text`` from every hit past the first ``limit`` of each query (None: keep all)."""
    if limit is None:
        return records
    out = []
    for record in records:
        hits = record.get("topk")
        if isinstance(hits, list) and any(isinstance(h, dict) and "text" in h for h in hits[limit:]):
            hits = [h if i < limit or not isinstance(h, dict) else {k: v for k, v in h.items() if k != "text"}
                    for i, h in enumerate(hits)]
            record = {**record, "topk": hits}
        out.append(record)
    return out


def run(args: argparse.Namespace) -> int:
    """Do the work of ``rankgate retrieve``; return the exit code (errors are raised for the CLI)."""
    from rankgate.atomic import check_file, check_not_input
    from rankgate.errors import UsageError
    from rankgate.retrieval import load_beir, load_corpus, load_gold_queries, retrieve, write_run

    options = _parse_options(list(args.option or []))
    texts = parse_texts(args.texts)
    from rankgate.metrics.spec import MAX_K

    if not 1 <= args.k <= MAX_K:  # as every other cutoff: a run's depth, not a number to allocate blindly
        raise UsageError(f"--k must be between 1 and {MAX_K:,}; got {args.k}"[:120])
    from rankgate.retrieval.api import MAX_REPEAT

    if not 1 <= args.repeat <= MAX_REPEAT:
        raise UsageError(f"--repeat must be between 1 and {MAX_REPEAT}; got {args.repeat} (3 to 5 timings give a steady median)")
    if args.beir is not None and args.gold is not None:
        raise UsageError("--gold cannot be combined with --beir: a BEIR folder brings its own queries")
    if args.beir is None and args.gold is None:
        raise UsageError("--corpus needs --gold: the gold set whose queries to run")
    check_file(args.output, option="--output")
    check_not_input(args.output, (args.corpus, args.gold), option="--output")
    if args.beir is not None:
        collection = load_beir(args.beir, split=args.split)
        chunks, queries = collection.chunks, collection.queries
    else:
        chunks, queries = load_corpus(args.corpus), load_gold_queries(args.gold)
    start = time.perf_counter()
    repeat = 1 if args.no_latency else args.repeat
    reranker = None
    if args.reranker:
        from rankgate.retrieval.rerank import get_reranker

        if args.rerank_depth < 1:
            raise UsageError(f"--rerank-depth must be >= 1; got {args.rerank_depth}")
        reranker = get_reranker(args.reranker)
    records = retrieve(chunks, queries, args.retriever, k=args.k, options=options, latency=not args.no_latency,
                       repeat=repeat, reranker=reranker, rerank_depth=args.rerank_depth)
    elapsed = time.perf_counter() - start
    path = write_run(keep_texts(records, texts), args.output)
    system = records[0]["system"] if records else args.retriever
    print(
        f"{path}: {len(records)} queries, up to {args.k} hits each, {len(chunks)} chunks indexed "
        f"with {system} in {elapsed:.1f} s" + (f" ({repeat} timings per query; the median is written)" if repeat > 1 else "")
    )
    return 0
