"""``rankgate compare``: runs on the same gold set, paired by query: what changed, and is it real.

Two runs give the detailed two-run comparison (segments, most-changed queries); three or more give
one table of every run against a baseline. ``--fuse`` builds a fused run from the runs given, writes
it (``--fused-run``) and compares it with them.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from typing import Any

from rankgate._util.constraints import PERMUTATIONS
from rankgate.cli.options import Misnamed, add_enforce_as_of, add_input_options, add_out, add_param, add_ranking, \
    add_stats
from rankgate.cli.outputs import Output, Planned

HELP = "compare runs: paired change per metric (and segment) with CI and p-value, most-changed queries; fuse runs"
#: What the command writes (:mod:`rankgate.cli.outputs`), both files or neither.
OUTPUTS = {"out": Output("--out"), "fused_run": Output("--fused-run")}


def add_parser(sub: Any) -> None:
    p = sub.add_parser("compare", help=HELP, description=HELP + ".")
    p.add_argument("runs", nargs="+", metavar="RUN",
                   help="runs to compare; the first is the baseline (e.g. main's retriever) unless --baseline names another")
    add_input_options(p, gold_required=False)
    p.add_argument("--baseline", metavar="NAME", help="the run to compare against: its file name or path as given")
    p.add_argument("--by", action="append", default=[], metavar="FIELD",
                   help="also compare per segment of a gold field or tag (intent, lang, intent+lang…); two runs only; repeatable")
    add_enforce_as_of(p)
    add_ranking(p)
    p.add_argument("--rewrite", action="store_true",
                   help="query rewriting: RUN is a rewrite log (records with 'original' and 'rewritten' results), or two "
                        "runs ORIGINAL REWRITTEN; adds recall@k and nDCG@k of each (k: --k, default 10), the paired "
                        "change per segment and the queries the rewrite broke")
    add_stats(p)
    add_param(p, PERMUTATIONS, metavar="N")
    p.add_argument("--top", type=int, default=10, metavar="N", help="most-regressed and most-improved queries to list (two runs; default 10)")
    p.add_argument("--fuse", metavar="METHOD",
                   help="fuse the runs into one and compare it too: rrf (k=60), rrf(k=N), combsum, combmnz")
    p.add_argument("--fused-run", metavar="PATH", help="with --fuse: write the fused run to PATH as JSONL (atomically)")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the comparison as JSON instead of the table")
    fmt.add_argument("--markdown", action="store_true", help="print the comparison as markdown")
    add_out(p, "write the output to PATH (atomically) instead of stdout", metavar="PATH", old=("--output",))
    p.add_argument("--run", action=Misnamed, say="compare takes its runs as arguments, the baseline first: "
                                                 "rankgate compare --gold GOLD BASELINE_RUN CANDIDATE_RUN")


def request(args: argparse.Namespace) -> Any:
    """The comparison the options ask for."""
    from rankgate.flows.compare import CompareRequest
    from rankgate.cli._requests import scoring, statistics

    stats = statistics(args)
    return CompareRequest(tuple(args.runs), args.gold, scoring(args), stats, baseline=args.baseline, by=tuple(args.by),
                          enforce_as_of=args.enforce_as_of, rewrite=args.rewrite, permutations=args.permutations,
                          top=args.top, fuse=args.fuse, fused_run=bool(args.fused_run), ranking=args.ranking)


def run(args: argparse.Namespace) -> int:
    from rankgate.cli.outputs import check_outputs
    from rankgate.flows.compare import run_comparison
    from rankgate.cli._requests import say

    req = request(args)
    planned = check_outputs(args, OUTPUTS, req)
    result = run_comparison(req, on_warning=say("compare"))
    if result.comparison is None:  # --fuse without --gold: the fused run only
        planned.write({args.fused_run: result.fused_jsonl or ""})
        sys.stderr.write(f"wrote the {result.fusion} fusion of {result.runs_fused} runs to {args.fused_run}\n")
        return 0
    from rankgate.render import compare as rc

    renderers = (rc.comparison_dict, rc.comparison_markdown, rc.comparison_renderable)
    if not result.two_runs:
        extra = {args.fused_run: result.fused_jsonl or ""} if args.fused_run else None
        return _emit(args, planned, result.comparison, *renderers, extra)
    if result.freshness:
        from rankgate.render.experiments import with_freshness

        renderers = with_freshness(*renderers, dict(result.freshness), result.confidence)
    elif result.rewrite is not None:
        from rankgate.render.sections import with_section

        renderers = with_section(*renderers, "rewrite", result.rewrite, result.confidence)
    if len(result.evaluations) == 2:  # the runs' recorded artifacts under the markdown, as the report shows them
        from rankgate.render.artifacts import comparison_artifacts_markdown

        base, cand = (e.result for e in result.evaluations)
        block = comparison_artifacts_markdown(cand, base, result.labels[1], result.labels[0])
        as_markdown = renderers[1]
        renderers = (renderers[0], lambda cmp: as_markdown(cmp) + block, renderers[2])
    return _emit(args, planned, result.comparison, *renderers)


def _emit(args: argparse.Namespace, planned: Planned, result: Any, as_dict: Any, as_markdown: Any, as_renderable: Any,
          extra_files: dict[str, str] | None = None) -> int:
    """Print or write the comparison; every file of the command (``extra_files`` too) as one unit."""
    if args.json:
        import json

        text = json.dumps(as_dict(result), indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
    elif args.markdown:
        text = as_markdown(result)
    else:
        text = None
    files = dict(extra_files or {})
    if args.out:
        files[args.out] = text if text is not None else _plain_table(as_renderable(result))
    if files:
        planned.write(files)
    if args.out:
        return 0
    if text is not None:
        sys.stdout.write(text)
        return 0
    from rich.console import Console

    tty = sys.stdout.isatty()
    # a terminal's width, or COLUMNS when set (rich reads it); 100 in a log or a pipe
    wide = tty or bool(os.environ.get("COLUMNS"))
    Console(width=None if wide else 100, color_system="auto" if tty else None, highlight=False).print(as_renderable(result))
    return 0


def _plain_table(renderable: Any) -> str:
    from rich.console import Console

    console = Console(width=100, color_system=None, force_terminal=False, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()
