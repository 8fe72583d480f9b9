"""``rankgate evaluate``: score a run against a gold set."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from rankgate.flows.evaluate import load_doc_map  # noqa: F401 - the doc map reader, where callers find it
from rankgate.cli.options import (
    add_component_options,
    add_enforce_as_of,
    add_input_options,
    add_out,
    add_ranking,
    add_run,
    add_stats,
)
from rankgate.cli.outputs import Output

HELP = "score a run against a gold set: terminal table, metrics.csv, summary.json"


def add_parser(sub: Any) -> None:
    p = sub.add_parser("evaluate", help=HELP, description=HELP + ".")
    add_input_options(p)
    add_run(p)
    add_out(p, "write metrics.csv and summary.json into DIR")
    p.add_argument("--layout", choices=("default", "v0"), default="default",
                   help="layout of metrics.csv and summary.json: default, or v0 (the metrics spec's columns and "
                        "quality/operational/privacy summary; see docs/outputs.md)")
    p.add_argument("--by", action="append", default=[], metavar="FIELD",
                   help="also break means down by a gold field or tag (intent, lang, tags.tier…); repeatable")
    p.add_argument("--sweep", metavar="METRICS", help="k-sweep of these metrics (e.g. recall,ndcg) over --ks")
    p.add_argument("--ks", default="1,3,5,10,20", metavar="KS", help="cutoffs for --sweep (default 1,3,5,10,20)")
    add_enforce_as_of(p)
    add_ranking(p)
    add_component_options(p)
    p.add_argument("--judged", metavar="LABELS",
                   help="judge (or human) labels of items the gold set lacks, JSONL {query_id, id, grade} (from "
                        "`rankgate pool` + `rankgate judge relevance`): also report precision@k and ndcg@k as gold only "
                        "(lower bound) and gold + judge (upper bound), k = --k (default 10)")
    p.add_argument("--calibration", metavar="JSON",
                   help="with --judged: the judge's calibration file (rankgate judge calibrate) for the Rogan-Gladen "
                        "corrected estimate between the bounds")
    add_stats(p)
    p.add_argument("--json", action="store_true", help="print summary.json to stdout instead of the table")
    p.add_argument("--markdown", action="store_true", help="print the table as markdown")


def _import_reporting() -> None:
    """What the command needs after evaluating, imported while the inputs are parsed (pyarrow's
    readers release the GIL, so this thread runs alongside them)."""
    import rich.console  # noqa: F401

    from rankgate.stats import bootstrap as stats  # noqa: F401
    from rankgate.render import exports, terminal  # noqa: F401


OUT_FILES = ("metrics.csv", "summary.json")
#: What the command writes (:mod:`rankgate.cli.outputs`): both files into --out, or neither.
OUTPUTS = {"out": Output("--out", files=OUT_FILES)}


def request(args: argparse.Namespace) -> Any:
    """The evaluation the options ask for."""
    from rankgate.flows.evaluate import EvaluateRequest
    from rankgate.cli._requests import scoring, statistics

    stats = statistics(args)
    metrics = args.metrics
    if args.layout == "v0":  # the v0 layout's columns need its metrics
        from rankgate.metrics import parse_metrics
        from rankgate.render.layout_v0 import v0_metrics

        wanted = [str(m) for m in parse_metrics(metrics)]
        metrics = ",".join(wanted + [m for m in v0_metrics(args.k or 5) if m not in wanted])
    return EvaluateRequest(args.gold, args.run, scoring(args, metrics=metrics), stats, by=tuple(args.by),
                           sweep=args.sweep, ks=args.ks, enforce_as_of=args.enforce_as_of, routing=args.routing,
                           entity_linking=args.entity_linking, judged=args.judged, calibration=args.calibration,
                           ranking=args.ranking)


def run(args: argparse.Namespace) -> int:
    from rankgate.io.source import hash_ahead

    hash_ahead([args.gold, args.run])  # on the core the imports below leave free
    req = request(args)
    v0 = args.layout == "v0"
    from rankgate.cli.outputs import check_outputs

    planned = check_outputs(args, OUTPUTS, req)
    import threading

    warm = threading.Thread(target=_import_reporting, daemon=True)
    warm.start()
    from rankgate.flows.evaluate import run_evaluation

    csv: list[str] = []
    per_query: list[dict[str, Any]] = []
    wants_summary = bool(args.out or args.json)  # (the terminal and markdown views need none)

    def write_csv(result: Any) -> None:  # while the intervals are drawn
        if args.out:
            warm.join()
            from rankgate.render.exports import metrics_csv
            from rankgate.render.layout_v0 import v0_metrics_csv

            csv.append(v0_metrics_csv(result) if v0 else metrics_csv(result))
        if not v0 and wants_summary:  # (its per-query block, compressed by zlib, which lets go of the GIL)
            from rankgate.gating.baseline import per_query_dict

            per_query.append(per_query_dict(result))

    from rankgate.cli._requests import say

    evaluation = run_evaluation(req, on_warning=say("evaluate"), meanwhile=write_csv)
    warm.join()
    from rankgate.render.exports import segments_json, summary_dict, summary_json
    from rankgate.render.sections import summary_parts

    summary: dict[str, Any] = {}
    written: dict[str, str] = {}  # parts written as JSON text from their columns (segments: no dict per segment)
    if wants_summary and evaluation.segments is not None:
        text = segments_json(evaluation.segments)
        if text is not None:
            written["segments"] = text
    if wants_summary and v0:
        from rankgate.render.layout_v0 import v0_summary

        summary = v0_summary(evaluation.result, cis=evaluation.cis, extra=summary_parts(evaluation, skip=tuple(written)))
    elif wants_summary:
        summary = summary_dict(evaluation.result, cis=evaluation.cis, extra=summary_parts(evaluation, skip=tuple(written)),
                               per_query=per_query[0] if per_query else None)
    if args.out:
        # Both files or neither: a summary.json beside another run's metrics.csv would mislead.
        planned.write({os.path.join(args.out, "metrics.csv"): csv[0] if csv else "",
                       os.path.join(args.out, "summary.json"): summary_json(summary, written=written)})
    if args.json:
        sys.stdout.write(summary_json(summary, written=written))
    elif args.markdown:
        sys.stdout.write(_markdown(evaluation))
    else:
        _print(evaluation, args.out)
    return 0


def _markdown(ev: Any) -> str:
    from rankgate.render.markdown import evaluation_markdown
    from rankgate.render.sections import sections_markdown

    return "\n".join([evaluation_markdown(ev.result, ev.cis, ev.confidence), *sections_markdown(ev)])


def _print(ev: Any, out: str | None) -> None:
    from rich.console import Console

    from rankgate.render.sections import sections_renderables
    from rankgate.render.terminal import print_evaluation

    console = Console()
    print_evaluation(ev.result, ev.cis, ev.confidence, console=console)
    for part in sections_renderables(ev):
        console.print()
        console.print(part)
    if out:
        console.print(f"wrote {os.path.join(out, 'metrics.csv')} and {os.path.join(out, 'summary.json')}",
                      highlight=False, markup=False)
