"""``rankgate traces analyze|check``: the retrieval signals of production traces, and monitors on them.

``analyze`` writes signals.csv (window × segment × signal, with n), summary.json (the whole period,
with ``operational.latency_ms.<stage>.{p50,p95,p99}``) and trace_report.html to ``--out``, and prints
the panel; ``--signals`` other than ``all`` computes only the selected groups and writes the first two. ``check`` runs the monitors (``--monitors``, else the defaults) and exits 0 (no blocking
flag), 1 (a monitor of severity error flagged a window) or 2 (bad input). See docs/traces.md.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from rankgate.cli.options import add_json, add_out, add_renamed, add_trace_field, trace_fields
from rankgate.cli.outputs import Output

HELP = "production retrieval traces: compute the signals (analyze), alert on them (check)"
OUT_FILES = ("signals.csv", "summary.json", "trace_report.html")
#: What each action writes (:mod:`rankgate.cli.outputs`), all of it or none (``sample``: rankgate.cli._traces_sample).
OUTPUTS = {"analyze": {"out": Output("--out", files=OUT_FILES, required=True)},
           "check": {"summary": Output("--summary"), "json_out": Output("--json-out")}}


def _inputs(p: argparse.ArgumentParser) -> None:
    from rankgate.traces.formats.table import FORMAT_NAMES

    p.add_argument("--traces", required=True, nargs="+", metavar="PATH", help="trace exports: files or folders")
    # (--format is the report's format on stdout elsewhere; an input's format is --<input>-format)
    add_renamed(p, "--traces-format", old=("--format",), dest="format", choices=FORMAT_NAMES, metavar="FORMAT",
                help="the export format: %(choices)s (default: detected per file)")
    p.add_argument("--on-error", choices=("error", "skip"), default="error",
                   help="a row that cannot be used: stop with an error naming it (default), or skip it and "
                        "count it by reason in the outputs")
    p.add_argument("--field-map", metavar="YAML", help="where the export keeps each field, as a file (docs/traces.md); "
                                                       "also the stages, feedback and abort rules")
    add_trace_field(p)
    p.add_argument("--window", default=None, metavar="SPAN", help="window width: 15m, 1h, 1d (default), 1w")
    p.add_argument("--by", default="", metavar="FIELDS",
                   help="segments, comma-separated: tenant, surface, data_source, source, index_version, ...")
    p.add_argument("--engine", choices=("duckdb", "spark"), default="duckdb", help="the engine (default duckdb)")
    p.add_argument("--spark-master", metavar="URL", help="with --engine spark: local[2] (default), spark://…, yarn")
    p.add_argument("--abstention", metavar="YAML", help="the file 'rankgate calibrate-abstention' wrote: its "
                                                        "threshold defines low confidence")
    p.add_argument("--abstention-threshold", type=float, metavar="SCORE",
                   help="top-1 score under which a request counts as low confidence (instead of --abstention)")
    p.add_argument("--corpus", metavar="MANIFEST", help="corpus manifest: item status and each document's current "
                                                        "version (stale citations)")
    # (--k is a metric's cutoff in every command; here it was the depth, and still is for one release)
    add_renamed(p, "--instability-depth", old=("--k",), dest="k", type=int, default=10, metavar="N",
                help="list depth compared for instability (default 10)")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("traces", help=HELP, description=HELP + ". See docs/traces.md.")
    verbs = p.add_subparsers(dest="traces_command", metavar="ACTION", required=True, parser_class=type(p))
    a = verbs.add_parser("analyze", help="compute every signal per window and segment",
                         description="Compute the retrieval, operational and privacy signals of trace exports per "
                                     "window and segment; write signals.csv, summary.json and trace_report.html "
                                     "(--signals: only some groups, without the report). Exit 0; 2 bad input.")
    _inputs(a)
    add_out(a, "the folder to write into", required=True)
    a.add_argument("--monitors", metavar="YAML", help="monitors whose flags the HTML report marks (default: the defaults)")
    a.add_argument("--signals", default="all", metavar="GROUPS",
                   help="what to compute: all (default), headline (latency quantiles, error rate, fallback and "
                        "low-confidence shares), or a comma list of signal groups (docs/traces.md); anything but "
                        "all writes summary.json and signals.csv only")
    c = verbs.add_parser("check", help="run monitors on the signals; exit 1 if a blocking monitor flags a window",
                         description="Run the monitors on the signals of the traces. Exit 0 no blocking flag, "
                                     "1 a monitor of severity error flagged a window, 2 bad input.")
    _inputs(c)
    c.add_argument("--monitors", metavar="YAML", help="the monitors (default: rankgate's defaults, docs/traces.md)")
    c.add_argument("--summary", metavar="MD", help="write the markdown summary of the flags here")
    add_json(c, "print the flags as JSON on stdout instead of the markdown summary",
             out_help="write the flags as JSON to PATH")
    c.add_argument("--judge-dir", metavar="DIR", help="the folder 'rankgate traces judge -o' wrote: its "
                                                       "judge.* signals join the monitors' (docs/traces.md, 'judge')")
    from rankgate.cli import _traces_sample as traces_sample

    traces_sample.add_parser(verbs)
    from rankgate.cli import _traces_judge as traces_judge

    traces_judge.add_parser(verbs)


def run(args: argparse.Namespace) -> int:
    if args.traces_command == "sample":
        from rankgate.cli import _traces_sample as traces_sample

        return int(traces_sample.run(args))
    if args.traces_command == "judge":
        from rankgate.cli import _traces_judge as traces_judge

        return int(traces_judge.run(args))
    return {"analyze": _analyze, "check": _check}[args.traces_command](args)


def request(args: argparse.Namespace) -> Any:
    from rankgate.flows.traces import TracesRequest

    return TracesRequest(tuple(args.traces), format=args.format, on_error=args.on_error, field_map=args.field_map,
                         fields=trace_fields(args),
                         window=args.window, by=tuple(f.strip() for f in args.by.split(",") if f.strip()),
                         engine=args.engine, spark_master=args.spark_master, abstention=args.abstention,
                         abstention_threshold=args.abstention_threshold, corpus=args.corpus, k=args.k,
                         monitors=args.monitors, signals=getattr(args, "signals", None),
                         judge_dir=getattr(args, "judge_dir", None))


def _print(renderable: Any) -> None:
    from rich.console import Console

    tty = sys.stdout.isatty()
    Console(width=None if tty else 80, color_system="auto" if tty else None, highlight=False).print(renderable)


def _analyze(args: argparse.Namespace) -> int:
    from rankgate.cli.outputs import check_outputs
    from rankgate.flows.traces import run_analyze
    from rankgate.render.traces import signals_csv, summary_json, trace_panel

    req = request(args)
    planned = check_outputs(args, OUTPUTS["analyze"], req)
    done = run_analyze(req)
    from rankgate._util import progress

    with progress.stage(f"writing {args.out}"):
        files = {os.path.join(args.out, "signals.csv"): signals_csv(done.summary),
                 os.path.join(args.out, "summary.json"): summary_json(done.summary, done.outcome)}
        if done.outcome is not None:  # the report shows every signal and the monitors' flags: only for the whole analysis
            from rankgate.render.traces_html import trace_report_html

            files[os.path.join(args.out, "trace_report.html")] = trace_report_html(done.summary, done.outcome,
                                                                                   done.monitors)
        planned.write(files)
    _print(trace_panel(done.summary))
    sys.stdout.write(f"\nwrote {', '.join(os.path.basename(f) for f in files)} to {args.out}\n")
    return 0


def _check(args: argparse.Namespace) -> int:
    import json

    from rankgate.cli.outputs import check_outputs
    from rankgate.flows.traces import run_check
    from rankgate.render.traces import check_markdown

    req = request(args)
    planned = check_outputs(args, OUTPUTS["check"], req)
    done = run_check(req)
    outcome = done.outcome
    assert outcome is not None  # (check always runs the monitors)
    md = check_markdown(outcome, done.summary, done.monitors)
    files: dict[str, str] = {}
    if args.summary:
        files[args.summary] = md
    data = ""
    if args.json or args.json_out:
        data = json.dumps({
            "exit_code": outcome.exit_code, "checked": outcome.checked, "unchecked": dict(outcome.unchecked),
            "not_measurable": dict(outcome.not_measurable),
            "power": [p.to_dict() for p in outcome.power],
            "flags": [{"monitor": f.monitor, "signal": f.signal, "window": f.window_iso, "segment": f.segment,
                       "value": f.value, "n": f.n, "rule": f.rule, "baseline": _finite(f.baseline), "statistic": _finite(f.statistic),
                       "severity": f.severity, "owner": f.owner, "detail": f.detail} for f in outcome.flags],
        }, indent=2, allow_nan=False) + "\n"
    if args.json_out:
        files[args.json_out] = data
    if files:
        planned.write(files)
    sys.stdout.write(data if args.json else md)
    return int(outcome.exit_code)


def _finite(x: float | None) -> float | str | None:
    import math

    if x is None or math.isfinite(x):
        return x
    return "inf" if x > 0 else "-inf"
