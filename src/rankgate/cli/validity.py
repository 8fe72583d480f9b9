"""``rankgate validity``: does the offline metric on the gold set predict what users of the same queries meet in
production? Joins the gold queries with the production requests of the traces on a query key, and per offline
metric × online outcome (× segment) writes the bad-outcome rate when the metric misses and when it passes, their
difference and ratio with intervals, the AUC, the power to see a 10-point difference, and a verdict in words.

Writes summary.json, validity.csv and validity.md to ``--out`` (``--json``: summary.json on stdout instead of the
text). Exit 0 the analysis ran (whatever it found); 2 bad input (no gold query matches a request, no outcome the
traces can measure, options). See docs/validity.md.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from rankgate.cli.options import add_formats, add_gold, add_json, add_out, add_run, add_trace_field, trace_fields
from rankgate.cli.outputs import Output

HELP = "offline ↔ online validity: does the gold set's metric predict users' outcomes in production traces"
OUT_FILES = ("summary.json", "validity.csv", "validity.md")
#: What the command writes (:mod:`rankgate.cli.outputs`).
OUTPUTS = {"out": Output("--out", files=OUT_FILES, required=True)}


def add_parser(sub: Any) -> None:
    from rankgate.traces.formats.table import FORMAT_NAMES
    from rankgate.traces.validity import DEFAULT_METRICS, KEYS, OUTCOMES

    p = sub.add_parser("validity", help=HELP,
                       description=HELP + ". Writes summary.json, validity.csv and validity.md. Exit 0 the analysis "
                                          "ran; 2 bad input. See docs/validity.md.")
    add_gold(p)
    add_run(p, help="the run the gate scores, on the gold queries (its per-query values are the offline side)")
    add_formats(p)
    p.add_argument("--traces", required=True, nargs="+", metavar="PATH", help="trace exports: files or folders")
    p.add_argument("--traces-format", dest="traces_format", choices=FORMAT_NAMES, metavar="FORMAT",
                   help="the trace export format: %(choices)s (default: detected per file)")
    p.add_argument("--on-error", choices=("error", "skip"), default="error",
                   help="a trace row that cannot be used: stop with an error naming it (default), or skip it")
    p.add_argument("--field-map", metavar="YAML", help="where the trace export keeps each field (docs/traces.md)")
    add_trace_field(p)
    p.add_argument("--metrics", "-m", default=DEFAULT_METRICS, metavar="SPECS",
                   help=f"offline metrics, better high, comma-separated (default {DEFAULT_METRICS})")
    p.add_argument("--outcomes", default="", metavar="NAMES",
                   help=f"online outcomes, comma-separated: {', '.join(OUTCOMES)} (default: every one the traces "
                        "carry)")
    p.add_argument("--by", default="", metavar="FIELDS", help="gold-set fields to break the rows down by (lang, intent…)")
    p.add_argument("--key", choices=KEYS, default="text",
                   help="the join: text (the normalised query text's id, default) or query_key (the gold set's "
                        "query_key field against the traces' query_key)")
    p.add_argument("--fail-below", type=float, default=0.5, metavar="X",
                   help="a query misses a metric when its value is below X (default 0.5: a miss for hit@k)")
    p.add_argument("--effect", type=float, default=0.10, metavar="D",
                   help="the risk difference the power is stated for (default 0.10: 10 points)")
    p.add_argument("--confidence", type=float, default=0.95, help="of every interval (default 0.95)")
    p.add_argument("--abstention", metavar="YAML", help="the file 'rankgate calibrate-abstention' wrote: its "
                                                        "threshold defines the low-confidence outcome")
    p.add_argument("--abstention-threshold", type=float, metavar="SCORE",
                   help="top-1 score under which a request counts as low confidence (instead of --abstention)")
    p.add_argument("--engine", choices=("duckdb", "spark"), default="duckdb",
                   help="the trace engine (default duckdb)")
    p.add_argument("--spark-master", metavar="URL", help="with --engine spark: local[2] (default), spark://…, yarn")
    add_out(p, "the folder to write into", required=True)
    add_json(p, "print summary.json on stdout instead of the text")


def _names(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(x.strip() for x in text.split(",") if x.strip()))


def request(args: argparse.Namespace) -> Any:
    from rankgate.flows.validity import ValidityRequest

    return ValidityRequest(args.gold, args.run, tuple(args.traces), metrics=args.metrics, by=_names(args.by),
                           outcomes=_names(args.outcomes), key=args.key, fail_below=args.fail_below,
                           effect=args.effect, confidence=args.confidence, engine=args.engine,
                           spark_master=args.spark_master, gold_format=args.gold_format, run_format=args.run_format,
                           traces_format=args.traces_format, on_error=args.on_error, field_map=args.field_map,
                           abstention=args.abstention, abstention_threshold=args.abstention_threshold,
                           fields=trace_fields(args))


def run(args: argparse.Namespace) -> int:
    from rankgate._util import progress
    from rankgate.cli.outputs import check_outputs
    from rankgate.flows.validity import run_validity
    from rankgate.render.validity import validity_csv, validity_json, validity_markdown, validity_text

    req = request(args)
    planned = check_outputs(args, OUTPUTS, req)
    done = run_validity(req)
    data = validity_json(done)
    with progress.stage(f"writing {args.out}"):
        planned.write({os.path.join(args.out, "summary.json"): data,
                       os.path.join(args.out, "validity.csv"): validity_csv(done.analysis),
                       os.path.join(args.out, "validity.md"): validity_markdown(done)})
    if args.json:
        sys.stdout.write(data)
    else:
        sys.stdout.write(validity_text(done))
        sys.stdout.write(f"\nwrote {', '.join(OUT_FILES)} to {args.out}\n")
    return 0
