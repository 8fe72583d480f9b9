"""``rankgate incident new|add``: turn a production incident into a regression case of the gold set.

``new`` writes the postmortem template prefilled from one request's retrieval trace; ``add`` checks
the filled postmortem and appends its regression case to the gold file, atomically (the gold file is
the old one or the old one plus the new line, never anything in between). Exit codes: 0 done; 2 bad
input (an unfilled field, an unticked failure-chain link, a duplicate case, an unreadable file).
See docs/gold.md, "The incident loop".
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from typing import Any

from .options import GOLD_FILE_HELP, add_gold

HELP = "turn an incident into a regression case: write a postmortem from a trace (new), add it to the gold set (add)"


def add_parser(sub: Any) -> None:
    p = sub.add_parser("incident", help=HELP, description=HELP + ". See docs/gold.md.")
    verbs = p.add_subparsers(dest="incident_command", metavar="ACTION", required=True, parser_class=type(p))
    n = verbs.add_parser("new", help="write the postmortem template, prefilled from a retrieval trace",
                         description="Write a postmortem template prefilled from one request's trace. Exit 0; 2 bad input.")
    n.add_argument("--trace", required=True, metavar="FILE",
                   help="the request's trace: one request as JSON, or any trace export rankgate reads (OTLP, Phoenix, "
                        "Langfuse, LangSmith, trace JSONL; see docs/gold.md)")
    n.add_argument("--request-id", metavar="ID",
                   help="the request to take from a trace file of several (a file of one request needs none)")
    add_gold(n, required=False, help=GOLD_FILE_HELP + ": refuses an incident id it already holds", metavar="JSONL")
    n.add_argument("--id", metavar="ID", help="the incident id (default: inc-<request_id>)")
    n.add_argument("--date", metavar="YYYY-MM-DD", help="the incident's date (default: the trace's, else today, UTC)")
    n.add_argument("-o", "--out", required=True, metavar="MD", help="the postmortem file to write")

    a = verbs.add_parser("add", help="check a filled postmortem and append its regression case to the gold set",
                         description="Append the regression case of a filled postmortem to the gold set, atomically. "
                                     "Exit 0; 2 unfilled fields, a duplicate or bad input.")
    a.add_argument("postmortem", metavar="POSTMORTEM", help="the filled postmortem (markdown)")
    add_gold(a, help=GOLD_FILE_HELP + " to append to", metavar="JSONL")
    a.add_argument("--corpus", metavar="PATH", help="corpus manifest: the case's chunk ids must be in it")


def run(args: argparse.Namespace) -> int:
    return {"new": _new, "add": _add}[args.incident_command](args)


def _existing(gold_path: str) -> tuple[Any, set[str], set[str]]:
    from ..goldset import read_gold_file

    gold = read_gold_file(gold_path)
    problem = gold.first_problem()
    if problem is not None:
        raise problem
    ids = {q.query_id for q in gold.queries}
    incidents = {str(q.fields["incident_id"]) for q in gold.queries if q.fields.get("incident_id") is not None}
    return gold, ids, incidents


def _new(args: argparse.Namespace) -> int:
    from ..atomic import check_file, check_not_input, write_text
    from ..errors import UsageError
    from ..goldset.incident import read_trace
    from ..report.incident import postmortem_markdown

    check_file(args.out, option="-o")
    check_not_input(args.out, (args.trace, args.gold), option="-o")
    trace = read_trace(args.trace, args.request_id)
    incident_id = args.id or f"inc-{trace.request_id}"
    date = args.date or (trace.fields.get("timestamp") or "")[:10]
    try:
        date = dt.date.fromisoformat(date).isoformat()
    except ValueError:
        if args.date:
            raise UsageError(f"--date must be YYYY-MM-DD; got {args.date!r}") from None
        date = dt.datetime.now(dt.timezone.utc).date().isoformat()
    if args.gold:
        _, ids, incidents = _existing(args.gold)
        if incident_id in ids or incident_id in incidents:
            raise UsageError(f"{args.gold} already holds incident {incident_id!r}; give --id another id")
    write_text(args.out, postmortem_markdown(trace, incident_id=incident_id, date=date))
    sys.stdout.write(f"wrote {args.out}: fill every TODO, tick the failure-chain link and the lifecycle gap, then\n"
                     f"  rankgate incident add {args.out} --gold {args.gold or 'GOLD'}\n")
    return 0


def _add(args: argparse.Namespace) -> int:
    import json
    import os

    from ..atomic import write_bytes
    from ..data.jsonl import parse_gold_records
    from ..data.source import check_file, sha256_file, text_lines
    from ..errors import InputError, UsageError
    from ..goldset.incident import parse_postmortem, pm_value, regression_case

    check_file(args.postmortem, "postmortem")
    text = "".join(line for _, line in text_lines(args.postmortem))
    pm, problems = parse_postmortem(text, args.postmortem)
    if pm is None:
        first = problems[0]
        more = len(problems) - 1
        if more:
            first = InputError(first.detail, path=first.path, line=first.line, field=first.field,
                               hint=(first.hint + "; " if first.hint else "") + f"{more} more unfilled or invalid")
        raise first
    if str(args.gold).endswith((".parquet", ".pq")):
        raise UsageError(f"{args.gold}: incident add appends to a JSONL gold set")
    gold, ids, incidents = _existing(args.gold)
    digest = gold.sha256
    if pm.incident_id in incidents or pm.incident_id in ids:
        raise InputError(f"already holds incident {pm.incident_id!r}", path=args.gold, field="incident_id",
                         hint="each incident is added once; give the postmortem another incident_id for a new case")
    record = regression_case(pm)
    chunks = [c for c, _, _ in pm.relevant] + list(pm.must_not_retrieve)
    if args.corpus:
        from ..corpus import load_manifest

        corpus = load_manifest(args.corpus)
        absent = [c for c in chunks if c not in corpus]
        if absent:
            shown = ", ".join(pm_value(c, item=True) for c in absent[:5])  # one line, whatever the ids hold
            raise InputError(f"names chunks that are not in the corpus: {shown}", path=args.postmortem,
                             field="regression test", hint=f"check the ids against {args.corpus}")
    lines = sum(1 for _ in text_lines(args.gold))
    parse_gold_records([(lines + 1, record)], args.postmortem)  # the case is a valid gold line
    with open(args.gold, "rb") as fh:
        data = fh.read()
    if sha256_file(args.gold) != digest:
        raise InputError("changed while the case was prepared", path=args.gold, hint="run incident add again")
    if data and not data.endswith(b"\n"):
        data += b"\n"
    line = json.dumps(record, ensure_ascii=False) + "\n"
    write_bytes(args.gold, data + line.encode("utf-8"))
    sys.stdout.write(f"added incident {pm_value(pm.incident_id)} to {os.path.basename(args.gold)} as query "
                     f"{pm_value(record['query_id'])} "
                     f"({pm.failure_link}; lifecycle gap: {pm.lifecycle_stage})\n")
    return 0
