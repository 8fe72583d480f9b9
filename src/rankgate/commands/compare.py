"""``rankgate compare``: two runs on the same gold set, paired by query: what changed, and is it real."""

from __future__ import annotations

import argparse
import sys
from typing import Any

HELP = "compare two runs: paired change per metric and segment with CI and p-value, most-changed queries"


def add_parser(sub: Any) -> None:
    from .evaluate import add_input_options, add_stats_options

    p = sub.add_parser("compare", help=HELP, description=HELP + ".")
    p.add_argument("baseline", metavar="BASELINE_RUN", help="the run to compare against (e.g. main's retriever)")
    p.add_argument("candidate", metavar="CANDIDATE_RUN", help="the run being proposed")
    add_input_options(p)
    p.add_argument("--by", action="append", default=[], metavar="FIELD",
                   help="also compare per segment of a gold field or tag (intent, lang, intent+lang…); repeatable")
    add_stats_options(p)
    p.add_argument("--permutations", type=int, default=10000, metavar="N",
                   help="sign flips of the paired randomisation test (default 10000; 0 turns p-values off)")
    p.add_argument("--top", type=int, default=10, metavar="N", help="most-regressed and most-improved queries to list (default 10)")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the comparison as JSON instead of the table")
    fmt.add_argument("--markdown", action="store_true", help="print the comparison as markdown")
    p.add_argument("--output", "-o", metavar="PATH", help="write the output to PATH (atomically) instead of stdout")


def run(args: argparse.Namespace) -> int:
    from ..compare import compare
    from ..data import load_gold
    from ..errors import UsageError
    from .evaluate import check_stats_args, evaluate_from_args

    check_stats_args(args)
    if args.permutations < 0:
        raise UsageError(f"--permutations must be >= 0; got {args.permutations}")
    if args.top < 0:
        raise UsageError(f"--top must be >= 0; got {args.top}")
    gold = load_gold(args.gold, format=args.gold_format)
    base = evaluate_from_args(args, args.baseline, gold=gold)
    cand = evaluate_from_args(args, args.candidate, gold=gold)
    result = compare(base, cand, by=args.by, seed=args.seed, n_resamples=args.resamples,
                     n_permutations=args.permutations, confidence=args.confidence, top=args.top)
    if args.json:
        import json

        text = json.dumps(result.to_dict(), indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
    elif args.markdown:
        text = result.markdown()
    else:
        text = None
    if args.output:
        from ..atomic import write_text

        write_text(args.output, text if text is not None else _plain_table(result))
        return 0
    if text is not None:
        sys.stdout.write(text)
        return 0
    from rich.console import Console

    tty = sys.stdout.isatty()
    Console(width=None if tty else 100, color_system="auto" if tty else None, highlight=False).print(result.table())
    return 0


def _plain_table(result: Any) -> str:
    from rich.console import Console

    console = Console(width=100, color_system=None, force_terminal=False, record=True, file=_Null())
    console.print(result.table())
    return console.export_text()


class _Null:
    def write(self, _: str) -> int:
        return 0

    def flush(self) -> None:
        pass
