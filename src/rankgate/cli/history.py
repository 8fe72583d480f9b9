"""``rankgate history add|show|compare|report``: rankgate's summaries recorded over time (docs/history.md).

``add`` records summaries (evaluate's and answers' ``summary.json``, ``gate --json-out``'s outcome, ``traces
analyze``'s ``summary.json``) in a store folder; ``show`` prints each metric's trend; ``compare`` compares two
entries paired, as ``rankgate compare`` prints two runs; ``report`` writes the dashboard. Exit 0; 2 bad input.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from typing import Any

from rankgate._util.constraints import PERMUTATIONS
from rankgate.cli.options import add_json, add_out, add_param, add_stats, add_when
from rankgate.cli.outputs import Output

HELP = "record summaries over time (add), show their trends (show), compare two entries (compare), write the dashboard (report)"
#: What each action writes (:mod:`rankgate.cli.outputs`); ``add`` writes into its store, under the store's lock.
OUTPUTS = {"add": {}, "show": {}, "compare": {"out": Output("--out")}, "report": {"out": Output("--out", required=True)}}
STORE_HELP = "the history store: a folder of Parquet files (made by the first add)"


def add_parser(sub: Any) -> None:
    p = sub.add_parser("history", help=HELP, description=HELP + ". See docs/history.md.")
    verbs = p.add_subparsers(dest="history_command", metavar="ACTION", required=True, parser_class=type(p))
    a = verbs.add_parser("add", help="record summaries in the store (idempotent)",
                         description="Record rankgate summaries in a history store: evaluate's or answers' summary.json, "
                                     "gate --json-out's outcome, traces analyze's summary.json. An entry is keyed by "
                                     "its kind, the commit and the input hashes the summary records: the same key again "
                                     "replaces it (an unchanged file changes nothing). Exit 0; 2 bad input.")
    a.add_argument("files", nargs="+", metavar="FILE", help="the summaries to record")
    a.add_argument("--store", required=True, metavar="DIR", help=STORE_HELP)
    a.add_argument("--commit", metavar="SHA", help="the commit the summaries are of (default: $GITHUB_SHA, else this "
                                                   "folder's git HEAD)")
    a.add_argument("--branch", metavar="NAME", help="its branch (default: $GITHUB_REF_NAME, else git's current branch)")
    add_when(a, help="the entries' date, UTC ISO 8601 (2026-05-01 or 2026-05-01T09:30:00Z); default: now")
    s = verbs.add_parser("show", help="each metric's trend over the last entries",
                         description="Print each metric's newest value, its change and its trend over the last entries "
                                     "(over all queries, or per segment of --by). Exit 0; 2 bad input.")
    s.add_argument("--store", required=True, metavar="DIR", help=STORE_HELP)
    s.add_argument("--metric", metavar="M", help="only this metric (recall@5, ndcg@10, a trace signal…)")
    s.add_argument("--by", metavar="SEGMENT", help="per segment of this field (lang, tenant…) instead of all queries")
    s.add_argument("--last", type=int, default=12, metavar="N", help="points of each trend (default 12)")
    add_json(s, "print the entries and the series as JSON instead of the table")
    c = verbs.add_parser("compare", help="two entries compared paired by query, as rankgate compare prints two runs",
                         description="Compare two entries (an entry id, a commit, or a date: the newest entry at or "
                                     "before it) paired by query: the change per metric with its CI, p-value and "
                                     "verdict, and the most-changed queries. Exit 0; 2 bad input.")
    c.add_argument("a", metavar="A", help="the baseline entry: its id, a commit or a date")
    c.add_argument("b", metavar="B", help="the entry compared with it")
    c.add_argument("--store", required=True, metavar="DIR", help=STORE_HELP)
    c.add_argument("--kind", choices=("evaluate", "gate", "answers"),
                   help="only entries of this kind (default: evaluate's, then gate's, then answers')")
    add_stats(c)
    add_param(c, PERMUTATIONS, metavar="N")
    c.add_argument("--top", type=int, default=10, metavar="N", help="most-regressed and most-improved queries to list "
                                                                    "(default 10)")
    fmt = c.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the comparison as JSON instead of the table")
    fmt.add_argument("--markdown", action="store_true", help="print the comparison as markdown")
    add_out(c, "write the output to PATH (atomically) instead of stdout", metavar="PATH")
    r = verbs.add_parser("report", help="write the dashboard: trends with CIs, limits, version changes, owners",
                         description="Write one offline HTML page: per gated metric and segment a trend with its CI "
                                     "band, the gate's limit, where the gold set or corpus changed and the gate's "
                                     "outcomes; per owner the gates in breach, their recoveries against the 48-hour "
                                     "rule and a weekly review list. Exit 0; 2 bad input.")
    r.add_argument("--store", required=True, metavar="DIR", help=STORE_HELP)
    add_out(r, "the HTML file to write (e.g. dashboard.html)", required=True, metavar="PATH")
    r.add_argument("--title", default="rankgate history", metavar="TEXT", help="the page's title (default: rankgate history)")


def run(args: argparse.Namespace) -> int:
    return {"add": _add, "show": _show, "compare": _compare, "report": _report}[args.history_command](args)


def request(args: argparse.Namespace) -> Any:
    """The request of the action the options ask for."""
    from rankgate.flows import history as flow

    verb = args.history_command
    if verb == "add":
        return flow.HistoryAddRequest(tuple(args.files), args.store, args.commit, args.branch, args.when)
    if verb == "show":
        return flow.HistoryShowRequest(args.store, args.metric, args.by, args.last)
    if verb == "compare":
        from rankgate.cli._requests import statistics

        return flow.HistoryCompareRequest(args.store, args.a, args.b, args.kind, statistics(args), args.permutations,
                                          args.top)
    return flow.HistoryReportRequest(args.store, args.title)


def _add(args: argparse.Namespace) -> int:
    from rankgate.flows.history import run_add
    from rankgate.render.history import added_lines

    done = run_add(request(args))
    for line in added_lines(done):
        sys.stdout.write(line + "\n")
    return 0


def _show(args: argparse.Namespace) -> int:
    from rankgate.flows.history import run_show
    from rankgate.render.history import show_dict, show_renderable

    shown = run_show(request(args))
    if args.json:
        import json

        sys.stdout.write(json.dumps(show_dict(shown), indent=2, ensure_ascii=False, allow_nan=False) + "\n")
        return 0
    _print(show_renderable(shown))
    return 0


def _compare(args: argparse.Namespace) -> int:
    from rankgate.cli.outputs import check_outputs
    from rankgate.flows.history import run_compare
    from rankgate.render import compare as rc

    req = request(args)
    planned = check_outputs(args, OUTPUTS["compare"], req)
    done = run_compare(req)
    for line in done.warnings:
        print(f"rankgate history: warning: {line}", file=sys.stderr)
    cmp = done.comparison
    if args.json:
        import json

        text: str | None = json.dumps(rc.comparison_dict(cmp), indent=2, sort_keys=True, ensure_ascii=False,
                                      allow_nan=False) + "\n"
    elif args.markdown:
        text = rc.comparison_markdown(cmp)
    else:
        text = None
    if args.out:
        planned.write({args.out: text if text is not None else _plain(rc.comparison_renderable(cmp))})
        return 0
    if text is not None:
        sys.stdout.write(text)
        return 0
    _print(rc.comparison_renderable(cmp))
    return 0


def _report(args: argparse.Namespace) -> int:
    from rankgate.cli.outputs import check_outputs
    from rankgate.flows.history import run_report
    from rankgate.render.history import breach_lines, dashboard_html

    req = request(args)
    planned = check_outputs(args, OUTPUTS["report"], req)
    rep = run_report(req)
    planned.write({args.out: dashboard_html(rep)})
    for line in breach_lines(rep.breaches, rep.now_us):
        print(f"rankgate history: {line}", file=sys.stderr)
    print(f"wrote {args.out} ({len(rep.entries):,} entries, {len(rep.series):,} trends)", file=sys.stderr)
    return 0


def _print(renderable: Any) -> None:
    from rich.console import Console

    tty = sys.stdout.isatty()
    wide = tty or bool(os.environ.get("COLUMNS"))
    Console(width=None if wide else 120, color_system="auto" if tty else None, highlight=False).print(renderable)


def _plain(renderable: Any) -> str:
    from rich.console import Console

    console = Console(width=100, color_system=None, force_terminal=False, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()
