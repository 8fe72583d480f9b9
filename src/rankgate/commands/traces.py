"""``rankgate traces analyze|check``: the retrieval signals of production traces, and monitors on them.

``analyze`` writes signals.csv (window × segment × signal, with n), summary.json (the whole period,
with ``operational.latency_ms.<stage>.{p50,p95,p99}``) and trace_report.html to ``--out``, and prints
the panel. ``check`` runs the monitors (``--monitors``, else the defaults) and exits 0 (no blocking
flag), 1 (a monitor of severity error flagged a window) or 2 (bad input). See docs/traces.md.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

HELP = "production retrieval traces: compute the signals (analyze), alert on them (check)"
OUT_FILES = ("signals.csv", "summary.json", "trace_report.html")


def _inputs(p: argparse.ArgumentParser) -> None:
    from ..traces.formats.table import FORMAT_NAMES

    p.add_argument("--traces", required=True, nargs="+", metavar="PATH", help="trace exports: files or folders")
    p.add_argument("--format", choices=FORMAT_NAMES, help="the export format (default: detected per file)")
    p.add_argument("--on-error", choices=("error", "skip"), default="error",
                   help="a row that cannot be used: stop with an error naming it (default), or skip it and "
                        "count it by reason in the outputs")
    p.add_argument("--field-map", metavar="YAML", help="where the export keeps each field (docs/traces.md)")
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
    p.add_argument("--k", type=int, default=10, metavar="K", help="list depth compared for instability (default 10)")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("traces", help=HELP, description=HELP + ". See docs/traces.md.")
    verbs = p.add_subparsers(dest="traces_command", metavar="ACTION", required=True, parser_class=type(p))
    a = verbs.add_parser("analyze", help="compute every signal per window and segment",
                         description="Compute the retrieval, operational and privacy signals of trace exports per "
                                     "window and segment; write signals.csv, summary.json and trace_report.html. "
                                     "Exit 0; 2 bad input.")
    _inputs(a)
    a.add_argument("--out", required=True, metavar="DIR", help="the folder to write into")
    a.add_argument("--monitors", metavar="YAML", help="monitors whose flags the HTML report marks (default: the defaults)")
    c = verbs.add_parser("check", help="run monitors on the signals; exit 1 if a blocking monitor flags a window",
                         description="Run the monitors on the signals of the traces. Exit 0 no blocking flag, "
                                     "1 a monitor of severity error flagged a window, 2 bad input.")
    _inputs(c)
    c.add_argument("--monitors", metavar="YAML", help="the monitors (default: rankgate's defaults, docs/traces.md)")
    c.add_argument("--summary", metavar="MD", help="write the markdown summary of the flags here")
    c.add_argument("--json", metavar="PATH", help="write the flags as JSON here")
    from . import traces_sample

    traces_sample.add_parser(verbs)


def run(args: argparse.Namespace) -> int:
    if args.traces_command == "sample":
        from . import traces_sample

        return int(traces_sample.run(args))
    return {"analyze": _analyze, "check": _check}[args.traces_command](args)


def _threshold(args: argparse.Namespace) -> float | None:
    from ..errors import UsageError

    if args.abstention and args.abstention_threshold is not None:
        raise UsageError("give --abstention or --abstention-threshold, not both")
    if args.abstention_threshold is not None:
        import math

        if not math.isfinite(args.abstention_threshold):
            raise UsageError(f"--abstention-threshold must be a finite number; got {args.abstention_threshold}")
        return float(args.abstention_threshold)
    if args.abstention:
        return read_abstention_threshold(args.abstention)
    return None


def read_abstention_threshold(path: str) -> float:
    """``abstention.threshold`` of the YAML file ``calibrate-abstention`` writes (one reader, shared
    with ``traces sample``)."""
    import math

    from ..errors import ConfigError
    from .traces_sample import read_threshold

    value = read_threshold(path)
    if not math.isfinite(value):
        raise ConfigError(f"must be a finite number; got {value!r}", path=path, field="abstention.threshold",
                          hint="write it with 'rankgate calibrate-abstention', or pass --abstention-threshold")
    return value


def _summarize(args: argparse.Namespace, by_extra: tuple[str, ...] = (), window: str | None = None) -> Any:
    from ..errors import UsageError
    from ..traces import read_traces
    from ..traces.engines import make_backend
    from ..traces.signals import SEGMENT_FIELDS, parse_window, summarize_traces

    by = tuple(f.strip() for f in args.by.split(",") if f.strip())
    for f in by:
        if f not in SEGMENT_FIELDS:
            raise UsageError(f"--by {f!r} is not a segment field; fields: {', '.join(SEGMENT_FIELDS)}")
    window = args.window or window or "1d"
    parse_window(window)
    if args.k < 1 or args.k > 100:
        raise UsageError(f"--k must be between 1 and 100; got {args.k}")
    if args.spark_master and args.engine != "spark":
        raise UsageError("--spark-master needs --engine spark")
    threshold = _threshold(args)
    manifest = None
    if args.corpus:
        from ..corpus import load_manifest

        manifest = load_manifest(args.corpus)
    # on DuckDB, items of large rankgate Parquet files stay in the file (rankgate.traces.native)
    tables = read_traces(args.traces, format=args.format, on_error=args.on_error, field_map=args.field_map,
                         engine_items=args.engine in (None, "duckdb"))
    backend = make_backend(args.engine, spark_master=args.spark_master)
    try:
        return summarize_traces(tables, by=tuple(dict.fromkeys(by + by_extra)), backend=backend, window=window,
                                threshold=threshold, manifest=manifest, k=args.k)
    finally:
        backend.close()


def _print(renderable: Any) -> None:
    from rich.console import Console

    tty = sys.stdout.isatty()
    Console(width=None if tty else 80, color_system="auto" if tty else None, highlight=False).print(renderable)


def _analyze(args: argparse.Namespace) -> int:
    from ..atomic import check_folder, write_files
    from ..traces.monitors import load_monitors
    from ..report.traces import signals_csv, summary_json, trace_panel
    from ..traces.monitors import check_monitors

    check_folder(args.out, OUT_FILES, option="--out")
    monitors = load_monitors(args.monitors)
    summary = _summarize(args, window=monitors.window)
    outcome = check_monitors(summary, monitors)
    files = {os.path.join(args.out, "signals.csv"): signals_csv(summary),
             os.path.join(args.out, "summary.json"): summary_json(summary)}
    from ..report.traces_html import trace_report_html

    files[os.path.join(args.out, "trace_report.html")] = trace_report_html(summary, outcome, monitors)
    write_files(files)
    _print(trace_panel(summary))
    sys.stdout.write(f"\nwrote {', '.join(os.path.basename(f) for f in files)} to {args.out}\n")
    return 0


def _check(args: argparse.Namespace) -> int:
    import json

    from ..atomic import check_file, check_not_input, write_files
    from ..traces.monitors import load_monitors
    from ..report.traces import check_markdown
    from ..traces.monitors import check_monitors

    for option, path in (("--summary", args.summary), ("--json", args.json)):
        if path:
            check_file(path, option=option)
            check_not_input(path, list(args.traces) + [args.monitors, args.corpus, args.abstention], option=option)
    monitors = load_monitors(args.monitors)
    summary = _summarize(args, monitors.segment_fields, window=monitors.window)
    outcome = check_monitors(summary, monitors)
    md = check_markdown(outcome, summary, monitors)
    files: dict[str, str] = {}
    if args.summary:
        files[args.summary] = md
    if args.json:
        files[args.json] = json.dumps({
            "exit_code": outcome.exit_code, "checked": outcome.checked, "unchecked": dict(outcome.unchecked),
            "not_measurable": dict(outcome.not_measurable),
            "flags": [{"monitor": f.monitor, "signal": f.signal, "window": f.window_iso, "segment": f.segment,
                       "value": f.value, "n": f.n, "rule": f.rule, "baseline": _finite(f.baseline), "statistic": _finite(f.statistic),
                       "severity": f.severity, "owner": f.owner, "detail": f.detail} for f in outcome.flags],
        }, indent=2, allow_nan=False) + "\n"
    if files:
        write_files(files)
    sys.stdout.write(md)
    return outcome.exit_code


def _finite(x: float | None) -> float | str | None:
    import math

    if x is None or math.isfinite(x):
        return x
    return "inf" if x > 0 else "-inf"
