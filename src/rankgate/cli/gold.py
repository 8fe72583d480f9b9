"""``rankgate gold validate|stale|diff|remap|plan``: keep a gold set fit to gate on as the corpus moves.

Exit codes: ``validate`` 0 clean (warnings allowed), 1 a blocking finding, 2 unreadable input;
``stale`` 0, or 1 when ``max_stale_labels`` of the ship criteria is exceeded, 2 unreadable input;
``diff`` 0, 2 unreadable input; ``remap`` 0, 2 unreadable input. Reports go to stdout (markdown by
default); ``stale -o DIR`` also writes ``DIR/stale.csv`` atomically; ``remap -o FILE`` writes the
proposed gold set and its review list as one unit, never over the gold file. ``plan`` 0, 2 unreadable input or
ship criteria it cannot plan for (no ``regression_max``, a segment field the gold set lacks); it prints the plan
in words (``--json``: its JSON) and ``-o`` writes plan.csv. See docs/gold.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from typing import Any

from rankgate.cli.options import GOLD_FILE_HELP, add_gold
from rankgate.cli.outputs import Output

HELP = ("check a gold set (validate), find labels the corpus left behind (stale), compare two versions (diff), "
        "carry labels across a re-chunking (remap), size each gated segment (plan)")


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date YYYY-MM-DD; got {text!r}") from None


def add_parser(sub: Any) -> None:
    p = sub.add_parser("gold", help=HELP, description=HELP + ". See docs/gold.md.")
    verbs = p.add_subparsers(dest="gold_command", metavar="ACTION", required=True, parser_class=type(p))
    fmt: dict[str, Any] = {"choices": ("auto", "markdown", "text"), "default": "auto",
                           "help": "report format on stdout: text fitted to the terminal's width, or markdown "
                                   "(default auto: text on a terminal, markdown into a pipe or file)"}

    v = verbs.add_parser("validate", help="schema, duplicates, ids against the corpus, mix, label age, gate power, owners",
                         description="Check a gold set. Exit 0 clean (warnings allowed), 1 a blocking finding, 2 unreadable input.")
    add_gold(v, help=GOLD_FILE_HELP, metavar="JSONL")
    v.add_argument("--corpus", metavar="PATH", help="corpus manifest: JSONL, Parquet or a folder of them")
    v.add_argument("--config", metavar="YAML", help="ship criteria: segment sizes and owners of its gates")
    v.add_argument("--baseline", metavar="RUN|SUMMARY",
                   help="a baseline run or its summary.json (with per-query values): the smallest drop each gated "
                        "segment can see is then the bootstrap of its values, not the binomial approximation "
                        "(needs --config)")
    v.add_argument("--as-of", type=_date, metavar="YYYY-MM-DD", help="date label ages are counted to (default: today, UTC)")
    v.add_argument("--format", **fmt)

    s = verbs.add_parser("stale", help="labels whose chunk was retired, deprecated, superseded or changed",
                         description="List stale labels. Exit 0, or 1 above max_stale_labels of --config; 2 unreadable input.")
    add_gold(s, help=GOLD_FILE_HELP, metavar="JSONL")
    s.add_argument("--corpus", required=True, metavar="PATH", help="the new corpus manifest")
    s.add_argument("--since", metavar="PATH", help="the corpus the labels were made against (finds changed text and retired chunks)")
    s.add_argument("--config", metavar="YAML", help="ship criteria with max_stale_labels")
    s.add_argument("-o", "--out", metavar="DIR", help="write DIR/stale.csv (query_id, chunk_id, reason, …)")
    s.add_argument("--format", **fmt)

    d = verbs.add_parser("diff", help="queries added, removed and relabelled between two gold files",
                         description="Compare two versions of a gold set. Exit 0; 2 unreadable input.")
    d.add_argument("old", metavar="OLD", help="the earlier gold file")
    d.add_argument("new", metavar="NEW", help="the later gold file")
    d.add_argument("--format", **fmt)

    r = verbs.add_parser("remap", help="propose the new chunks that carry each labelled chunk's text after a re-chunking",
                         description="Propose a remapped gold set after a re-chunking. Never rewrites --gold. "
                                     "Exit 0; 2 unreadable input.")
    add_gold(r, help=GOLD_FILE_HELP, metavar="JSONL")
    r.add_argument("--old-corpus", required=True, metavar="PATH", help="the corpus the labels were made on (with text)")
    r.add_argument("--new-corpus", required=True, metavar="PATH", help="the re-chunked corpus (with text)")
    r.add_argument("-o", "--out", required=True, metavar="JSONL", help="the proposed gold set (not the --gold file)")
    r.add_argument("--review", metavar="MD", help="the review list (default: OUT with .review.md in place of .jsonl)")
    r.add_argument("--min-confidence", type=_share, default=0.8, metavar="X",
                   help="apply mappings with at least this confidence (0-1, default 0.8); the rest are listed for review")


    _add_plan(verbs)

    from rankgate.cli._traces_sample import add_parser as add_sample

    add_sample(verbs, plan=True)  # gold sample: the same as traces sample, and it samples to a plan's quotas


def _add_plan(verbs: Any) -> None:
    from rankgate._util.constraints import POWER
    from rankgate.cli.options import add_json, add_out, add_param, add_trace_field
    from rankgate.traces.formats.table import FORMAT_NAMES

    help = "how many labels each gated segment needs for its gate to see regression_max, and where a budget goes"
    p = verbs.add_parser("plan", help=help, description=help + ". Exit 0; 2 unreadable input or ship criteria "
                                                                 "without regression_max. See docs/gold.md.")
    add_gold(p, help=GOLD_FILE_HELP, metavar="JSONL")
    p.add_argument("--config", required=True, metavar="YAML",
                   help="ship criteria: the gates, their regression_max, segments, min_queries and confidence")
    p.add_argument("--baseline", metavar="RUN|SUMMARY",
                   help="a baseline run or its summary.json: each segment's spread from its per-query values "
                        "(default: a share at the gate's threshold, the most a metric in [0, 1] can vary)")
    p.add_argument("--traces", nargs="+", metavar="PATH",
                   help="trace exports (files or folders): each segment's share of production traffic, for segment "
                        "fields the traces carry (tenant, surface, data_source, …)")
    p.add_argument("--traces-format", dest="format", choices=FORMAT_NAMES, metavar="FORMAT",
                   help="override the traces' format detection: %(choices)s")
    p.add_argument("--field-map", metavar="YAML", help="where Langfuse/LangSmith rows keep each field, as a file")
    add_trace_field(p)
    p.add_argument("--on-error", choices=("error", "skip"), default="error",
                   help="a trace row that cannot be used: stop (default) or skip it and count it")
    p.add_argument("--budget", type=int, metavar="N",
                   help="split N new labels across the segments to make the largest traffic-weighted drop a gate "
                        "cannot see as small as it can be")
    add_param(p, POWER, help="the chance the gate sees a drop of its regression_max (default 0.8)")
    add_out(p, "write plan.csv (one row per gate and segment; gold sample --plan reads it)", metavar="CSV")
    add_json(p, "print the plan as JSON on stdout instead of in words")


def _share(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        x = -1.0
    if not 0.0 <= x <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1; got {text!r}")
    return x


def _text_width() -> int | None:
    """The width of text output, or None for markdown (``--format auto`` into a pipe or file).
    A terminal's own width, else ``COLUMNS``, else 80."""
    import os
    import shutil

    return shutil.get_terminal_size((80, 24)).columns if sys.stdout.isatty() else int(os.environ.get("COLUMNS", "") or 80)


def _render(args: argparse.Namespace, markdown: Any, text: Any, report: Any) -> str:
    fmt = args.format
    if fmt == "auto":
        fmt = "text" if sys.stdout.isatty() else "markdown"
    if fmt == "markdown":
        return str(markdown(report))
    try:
        width = max(40, _text_width() or 80)
    except ValueError:
        width = 80
    return str(text(report, width=width))


def request(args: argparse.Namespace) -> Any:
    from rankgate.flows.gold import DiffRequest, RemapRequest, StaleRequest, ValidateRequest

    if args.gold_command == "plan":
        from rankgate.cli.options import trace_fields
        from rankgate.flows.plan import PlanRequest

        return PlanRequest(args.gold, args.config, baseline=args.baseline, traces=tuple(args.traces or ()),
                           format=args.format, field_map=args.field_map, fields=trace_fields(args),
                           on_error=args.on_error, budget=args.budget, power=args.power)
    if args.gold_command == "validate":
        return ValidateRequest(args.gold, corpus=args.corpus, config=args.config, baseline=args.baseline,
                               as_of=args.as_of)
    if args.gold_command == "stale":
        return StaleRequest(args.gold, args.corpus, since=args.since, config=args.config)
    if args.gold_command == "diff":
        return DiffRequest(args.old, args.new)
    return RemapRequest(args.gold, args.old_corpus, args.new_corpus, min_confidence=args.min_confidence)


def run(args: argparse.Namespace) -> int:
    from rankgate.cli._traces_sample import run as _sample

    return {"validate": _validate, "stale": _stale, "diff": _diff, "remap": _remap,
            "sample": _sample, "plan": _plan}[args.gold_command](args)


def _validate(args: argparse.Namespace) -> int:
    from rankgate.flows.gold import run_validate
    from rankgate.render.gold import validate_markdown, validate_text

    report = run_validate(request(args))
    sys.stdout.write(_render(args, validate_markdown, validate_text, report))
    return int(report.exit_code)


def _stale(args: argparse.Namespace) -> int:
    import os

    from rankgate.cli.outputs import check_outputs
    from rankgate.flows.gold import run_stale
    from rankgate.render.gold import stale_csv, stale_markdown, stale_text

    req = request(args)
    planned = check_outputs(args, OUTPUTS["stale"], req)  # before any work
    report = run_stale(req)
    if args.out:
        planned.write({os.path.join(args.out, "stale.csv"): stale_csv(report)})
    sys.stdout.write(_render(args, stale_markdown, stale_text, report))
    return int(report.exit_code)


def _diff(args: argparse.Namespace) -> int:
    from rankgate.flows.gold import run_diff
    from rankgate.render.gold import diff_markdown, diff_text

    sys.stdout.write(_render(args, diff_markdown, diff_text, run_diff(request(args))))
    return 0


def _review_path(out: str) -> str:
    return out.removesuffix(".jsonl") + ".review.md"


#: What each action writes (:mod:`rankgate.cli.outputs`): ``stale`` its CSV into -o, ``remap`` the proposed gold set
#: and its review list (by default beside it), both or neither and never over the gold set or a corpus (``sample``:
#: rankgate.cli._traces_sample).
OUTPUTS = {"stale": {"out": Output("-o", files=("stale.csv",))}, "plan": {"out": Output("-o")},
           "remap": {"out": Output("-o", required=True),
                     "review": Output("--review", default=lambda args: _review_path(args.out))}}


def _remap(args: argparse.Namespace) -> int:
    from rankgate.cli.outputs import check_outputs
    from rankgate.flows.gold import run_remap
    from rankgate.render.gold import remap_review_markdown, remap_summary

    req = request(args)
    planned = check_outputs(args, OUTPUTS["remap"], req)  # never over the gold set or a corpus
    review = planned.paths["review"]
    done = run_remap(req)
    planned.write({args.out: done.text, review: remap_review_markdown(done.result, done.changed, done.conflicts)})
    sys.stdout.write(remap_summary(done.result, done.changed, args.out, review))
    return 0


def _plan(args: argparse.Namespace) -> int:
    from rankgate.cli.outputs import check_outputs
    from rankgate.flows.plan import run_plan
    from rankgate.render.gold_plan import plan_csv, plan_json, plan_text

    req = request(args)
    planned = check_outputs(args, OUTPUTS["plan"], req)  # never over an input
    plan = run_plan(req)
    if args.out:
        planned.write({args.out: plan_csv(plan)})
    sys.stdout.write(plan_json(plan) if args.json else plan_text(plan))
    return 0
