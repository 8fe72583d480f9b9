"""``rankgate label serve|export|agreement``: label a queue (or the runs' top k beside the gold set) in the browser,
write the labels back in the shapes rankgate reads, and measure how far the annotators agree. See docs/labels.md.

``serve`` prints the app's address (with its session token) and serves until Ctrl-C; every label is committed to the
database as it is given. ``export`` writes ``-o`` (and, with ``--into-gold``, adds the graded chunks to the gold set:
that file is read and rewritten by design, atomically, like ``incident add``). Exit codes: 0 done; 2 bad input (a
queue of another shape, a database of another queue or schema, a locked database, a second server on one database,
conflicts with the gold set).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rankgate.cli.options import GOLD_FILE_HELP, add_gold, add_json, add_out, add_stats, add_ties
from rankgate.cli.outputs import Output

HELP = "label queues in the browser (serve), write the labels back (export), measure agreement between annotators"

#: What each action writes (:mod:`rankgate.cli.outputs`). (``export --into-gold`` rewrites the gold set it reads, by
#: design: :func:`rankgate.flows.label.write_into_gold`, atomically.)
OUTPUTS = {"export": {"out": Output("--out")}, "agreement": {"json_out": Output("--json-out")}}
DB_HELP = "the labels database (SQLite; made on first use)"


def add_parser(sub: Any) -> None:
    p = sub.add_parser("label", help=HELP, description=HELP + ". See docs/labels.md.")
    verbs = p.add_subparsers(dest="label_command", metavar="ACTION", required=True, parser_class=type(p))

    s = verbs.add_parser("serve", help="serve the labelling app for a queue, or the browse view of runs",
                         description="Serve the labelling app on 127.0.0.1 and print its address (with this "
                                     "session's token). Exit 0 on Ctrl-C; 2 bad input.")
    s.add_argument("queue", nargs="?", metavar="QUEUE",
                   help="a queue rankgate writes: pool, gold sample, judge relevance's input, or answers (JSONL)")
    s.add_argument("--db", required=True, metavar="SQLITE", help=DB_HELP)
    s.add_argument("--annotator", metavar="NAME", help="label as NAME (default: each browser says who it is)")
    s.add_argument("--scale", choices=("0-3", "0-2", "binary", "verdict"),
                   help="grades offered (default 0-2 for relevance, the judge's scale; verdict for answers)")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    s.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 picks a free one)")
    s.add_argument("--allow-remote", action="store_true",
                   help="allow a --host other machines can reach (anyone with the address and token can label)")
    s.add_argument("--overlap", type=float, default=0.0, metavar="SHARE",
                   help="share of the items two annotators label, for agreement (default 0; e.g. 0.1)")
    s.add_argument("--guide", metavar="MD", help="labelling guidelines (markdown) shown beside each card")
    add_gold(s, required=False, help=GOLD_FILE_HELP + ": with --runs, the browse view")
    s.add_argument("--runs", nargs="+", metavar="RUN",
                   help="runs shown side by side (the first is the baseline, the last the candidate)")
    s.add_argument("--depth", type=int, default=10, metavar="K", help="items of each run's ranking shown (default 10)")
    s.add_argument("--by", metavar="FIELD", help="the gold field the browse view's segment filter uses")
    s.add_argument("--corpus", metavar="PATH", help="corpus manifest: texts of items the runs did not log")
    add_ties(s)

    e = verbs.add_parser("export", help="write the labels in the shapes rankgate reads (and into the gold set)",
                         description="Write one label per item: {query_id, id, grade} or {query_id, faithful, "
                                     "correct}, with provenance. Exit 0; 2 bad input or conflicts with the gold set.")
    e.add_argument("--db", required=True, metavar="SQLITE", help=DB_HELP)
    add_out(e, "the labels JSONL to write", metavar="FILE")
    e.add_argument("--into-gold", metavar="JSONL",
                   help="add the graded chunks to this gold set (atomically; conflicting grades refuse it, listed)")
    e.add_argument("--resolve", choices=("leave-out", "lowest", "highest"), default="leave-out",
                   help="items annotators disagree on: leave out (default), or take the lowest or highest label")
    e.add_argument("--all", dest="every", action="store_true",
                   help="every label on its own line (an audit file; readers need one label per item)")

    a = verbs.add_parser("agreement", help="Cohen's and Fleiss' kappa between annotators, and against a judge",
                         description="Agreement between annotators on the items two or more labelled, with "
                                     "bootstrap intervals, and the items they disagree on. Exit 0; 2 bad input.")
    a.add_argument("--db", required=True, metavar="SQLITE", help=DB_HELP)
    a.add_argument("--judge-labels", metavar="JSONL",
                   help="a judge's labels of the same items (rankgate judge relevance -o): each annotator against it")
    a.add_argument("--weights", choices=("linear", "quadratic", "none"), default="linear",
                   help="kappa weights on graded scales of three grades or more (default linear)")
    add_stats(a)
    add_json(a, "print the agreement as JSON on stdout")
    a.add_argument("--json-out", metavar="PATH", help="write the agreement as JSON to this file")


def request(args: argparse.Namespace) -> Any:
    from rankgate.flows.label import AgreementRequest, ExportRequest, ServeRequest

    if args.label_command == "serve":
        return ServeRequest(args.db, queue=args.queue, gold=args.gold, runs=tuple(args.runs or ()),
                            annotator=args.annotator, scale=args.scale, host=args.host, port=args.port,
                            allow_remote=args.allow_remote, overlap=args.overlap, guide=args.guide, depth=args.depth,
                            by=args.by, corpus=args.corpus, ties=args.ties)
    if args.label_command == "export":
        return ExportRequest(args.db, into_gold=args.into_gold, resolve=args.resolve, every=args.every)
    return AgreementRequest(args.db, judge_labels=args.judge_labels,
                            weights=None if args.weights == "none" else args.weights, seed=args.seed,
                            resamples=args.resamples, confidence=args.confidence)


def run(args: argparse.Namespace) -> int:
    return {"serve": _serve, "export": _export, "agreement": _agreement}[args.label_command](args)


def _serve(args: argparse.Namespace) -> int:
    from rankgate.flows.label import prepare_serve
    from rankgate.labels.server import run_server

    served = prepare_serve(request(args))
    try:
        for line in served.warnings:
            print(f"rankgate label: warning: {line}", file=sys.stderr)
        print(f"rankgate label: {served.what}; labels in {args.db}", file=sys.stderr)
        print(f"open {served.url}", flush=True)
        sys.stderr.flush()
        run_server(served.app, served.sock)
    finally:
        served.close()
    return 0


def _export(args: argparse.Namespace) -> int:
    from rankgate.cli.outputs import check_outputs
    from rankgate.errors import UsageError
    from rankgate.flows.label import run_export, write_into_gold

    req = request(args)
    if not args.out and not args.into_gold:
        raise UsageError("give -o/--out (the labels file), --into-gold (a gold set), or both")
    planned = check_outputs(args, OUTPUTS["export"], req)
    result = run_export(req)
    if args.out:
        planned.write({args.out: result.text})
    write_into_gold(req, result)
    left = len(result.disagreements)
    said = f"wrote {args.out}: {result.lines} {'labels' if args.every else 'items'} ({result.labels} labels in force)" \
        if args.out else f"read {result.labels} labels in force"
    if left:
        shown = ", ".join(f"{q}/{d}" if d else q for q, d in result.disagreements[:5])
        said += (f"; {left} items the annotators disagree on left out ({shown}{' …' if left > 5 else ''}): "
                 "--resolve lowest|highest takes one, label export --all shows every label")
    print(said, file=sys.stderr)
    merge = result.gold
    if merge is not None:
        line = (f"{args.into_gold}: added {merge.added} graded chunks to its queries and {merge.new_queries} new "
                f"queries ({merge.already} labels it already held)")
        if merge.no_relevant:
            line += (f"; {len(merge.no_relevant)} new queries left out, none of their chunks graded above 0 "
                     f"({', '.join(merge.no_relevant[:5])})")
        print(line, file=sys.stderr)
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    return 0


def _agreement(args: argparse.Namespace) -> int:
    import json

    from rankgate.cli.outputs import check_outputs
    from rankgate.flows.label import run_agreement
    from rankgate.render.labels import agreement_text

    req = request(args)
    planned = check_outputs(args, OUTPUTS["agreement"], req)
    result = run_agreement(req)
    data = json.dumps(result.agreement.to_dict(), indent=2, ensure_ascii=False) + "\n"
    if args.json_out:
        planned.write({args.json_out: data})
    sys.stdout.write(data if args.json else agreement_text(result.agreement))
    return 0
