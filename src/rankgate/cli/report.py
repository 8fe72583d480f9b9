"""``rankgate report``: one self-contained HTML file that says what to fix.

::

    rankgate report --gold gold.jsonl --run run.jsonl [--baseline base.jsonl] [--by intent] \\
        [--config ship-criteria.yaml] [--compare-bm25 bm25_run.jsonl] -o report.html

Nothing heavy is imported at module level: the CLI builds its parser on every start.
"""

from __future__ import annotations

import argparse
from typing import Any

from rankgate.cli.options import add_component_options, add_enforce_as_of, add_input_options, add_out, add_run, add_stats
from rankgate.cli.outputs import Output

__all__ = ["OUTPUTS", "add_parser", "run"]

#: What the command writes (:mod:`rankgate.cli.outputs`).
OUTPUTS = {"out": Output("--out", required=True)}

HELP = "write a self-contained HTML report: retrieval panel, k-sweep, segments, top misses, diagnosis"
EPILOG = """\
The file opens from disk with no network: charts are inline SVG. Same inputs and seed give a
byte-identical file. See docs/report.md for every section and the diagnosis rules.
"""


def add_parser(sub: Any) -> None:
    p = sub.add_parser("report", help=HELP, description=HELP + ".", epilog=EPILOG)  # wrapped to the terminal
    add_input_options(p)
    add_run(p, help="the run to report on: JSONL, TREC run file, Parquet")
    p.add_argument("--baseline", metavar="RUN|SUMMARY",
                   help="a baseline run (deltas with paired CIs, both k-sweep curves) or a summary.json (means only)")
    p.add_argument("--by", action="append", default=None, metavar="FIELD",
                   help="segment field or tag (intent, lang, tags.tier…; a+b crosses); repeatable. "
                        "Default: intent, source_of_query and tags with 2–20 labels")
    p.add_argument("--queries", metavar="PATH",
                   help="a queries file (BEIR queries.jsonl, id<TAB>text, TREC topics): query texts shown beside ids when the gold set has none")
    p.add_argument("--config", metavar="YAML", help="ship criteria: adds the gate verdict and flags segments below its floors")
    p.add_argument("--compare-bm25", dest="lexical", metavar="RUN",
                   help="a lexical baseline run (e.g. BM25): its top 10 is shown beside each miss")
    p.add_argument("--min-score", type=float, default=None, metavar="X",
                   help="confidence line for false_evidence on no-answer queries (default: any returned item counts)")
    p.add_argument("--top-misses", type=int, default=50, metavar="N", help="misses (and offending queries) listed (default 50)")
    p.add_argument("--title", metavar="TEXT", help="report title (default: 'Retrieval report: <run file>')")
    p.add_argument("--generated-at", metavar="TEXT",
                   help="a date or build id to print in the header (none by default, so the file is reproducible)")
    p.add_argument("--answers", metavar="SUMMARY", help="summary.json of `rankgate answers`: adds the answers section "
                                                        "(layer two) and the diagnosis grid")
    p.add_argument("--judged", metavar="LABELS", help="judge labels of items the gold set lacks: adds precision/nDCG "
                                                      "bounds (as `rankgate evaluate --judged`)")
    p.add_argument("--calibration", metavar="JSON", help="with --judged: the judge's calibration (corrected estimate)")
    add_out(p, "the HTML file to write", required=True, metavar="HTML", old=("--output",))
    add_enforce_as_of(p)
    add_component_options(p)
    p.add_argument("--rewrite", metavar="LOG",
                   help="a rewrite log (records with 'original' and 'rewritten' results): adds the query-rewriting "
                        "section (recall@k, nDCG@k of each, the paired change, the queries the rewrite broke)")
    p.add_argument("--abstention", metavar="YAML",
                   help="a calibrate-abstention file: adds its risk-coverage curve and threshold (docs/traces.md)")
    add_stats(p)
    for action in p._actions:  # the shared option means "extra metrics" here
        if action.dest == "metrics":
            action.help = "extra metric specs for the panel, comma-separated (the panel's own set is always shown)"
    # None = not given, so the --config file's 'evaluate' options can apply (as in 'rankgate gate').
    p.set_defaults(metrics=None, level=None, doc_sep=None)


def request(args: argparse.Namespace) -> Any:
    """The report the options ask for; the ship criteria's ``evaluate`` options fill in what is not given."""
    from rankgate.flows.report import ReportRequest
    from rankgate.cli._requests import scoring, statistics

    stats = statistics(args)
    config = None
    level, doc_sep, k, ties = args.level, args.doc_sep, args.k, args.ties
    if args.config:
        from rankgate.gating.config import evaluate_options, load_config

        config = load_config(args.config)
        options = evaluate_options(config, {"level": level, "doc_sep": doc_sep, "k": k, "ties": ties})
        level, doc_sep, k, ties = (options.get(name) for name in ("level", "doc_sep", "k", "ties"))
    level = level or "chunk"
    doc_sep = "#" if doc_sep is None else doc_sep
    extra = tuple(m.strip() for m in (args.metrics or "").split(",") if m.strip())
    return ReportRequest(
        args.gold, args.run, scoring(args, metrics=args.metrics or "", level=level, doc_sep=doc_sep, k=k, ties=ties),
        stats, by=args.by, min_score=args.min_score, metrics=extra, top_misses=args.top_misses, title=args.title,
        generated_at=args.generated_at, queries=args.queries, baseline=args.baseline, lexical=args.lexical,
        config=config, enforce_as_of=args.enforce_as_of, routing=args.routing, entity_linking=args.entity_linking,
        rewrite=args.rewrite, answers=args.answers, judged=args.judged, calibration=args.calibration, judged_k=args.k,
    )


def run(args: argparse.Namespace) -> int:
    """Write the report; exit 0 even when the gate fails (``rankgate gate`` is the one that blocks)."""
    from rankgate.io.source import hash_ahead

    hash_ahead([args.gold, args.run])  # on the core the imports below leave free
    from rankgate.cli.outputs import check_outputs
    from rankgate.flows.report import run_report
    from rankgate.render.abstention import load_abstention
    from rankgate.cli._requests import say

    req = request(args)
    planned = check_outputs(args, OUTPUTS, req, also_reads=[args.abstention])  # (the command reads --abstention)
    abstention = load_abstention(args.abstention)  # checked before the evaluation, not after
    import threading

    threading.Thread(target=_import_charts, daemon=True).start()
    evaluated = run_report(req, on_warning=say("report"))
    from rankgate._util import progress

    with progress.stage(f"writing {args.out}"):
        from rankgate.render.build import assemble
        from rankgate.render.html import render_html

        report = assemble(evaluated)
        if abstention is not None:
            from dataclasses import replace

            report = replace(report, abstention=abstention)
        planned.write({args.out: render_html(report)})
    gate = "" if report.gate is None else f"; gate {'passed' if report.gate.passed else 'failed'}"
    print(f"wrote {args.out}: {len(report.findings)} findings, {report.misses_total} queries with no relevant "
          f"chunk in the {'top 10' if report.depth >= 10 else f'list (top {report.depth})'}{gate}")
    return 0


def _import_charts() -> None:
    """matplotlib (~0.4 s to import) and the modules that build the page (~0.1 s), imported while the
    inputs are read and scored: pyarrow's readers and the compiled kernels release the GIL, so this
    thread runs alongside them. Only imports: drawing waits for the report, so no figure or rc setting
    is shared between threads. A failure here is left for the main thread, which imports again."""
    try:
        from rankgate.render import build, html, incidents  # noqa: F401
        import matplotlib.backends.backend_svg  # noqa: F401
        import matplotlib.figure  # noqa: F401
        import matplotlib.ticker  # noqa: F401
    except Exception:  # noqa: BLE001 - the main thread imports again and reports it
        pass
