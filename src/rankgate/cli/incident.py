"""``rankgate incident new|add``: turn a production incident into a regression case of the gold set.

``new`` writes the postmortem template prefilled from one request's retrieval trace; ``add`` checks
the filled postmortem and appends its regression case to the gold file, atomically (the gold file is
the old one or the old one plus the new line, never anything in between). Exit codes: 0 done; 2 bad
input (an unfilled field, an unticked failure-chain link, a duplicate case, an unreadable file).
See docs/gold.md, "The incident loop".
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rankgate.cli.options import GOLD_FILE_HELP, add_gold
from rankgate.cli.outputs import Output

HELP = "turn an incident into a regression case: write a postmortem from a trace (new), add it to the gold set (add)"


#: What each action writes (:mod:`rankgate.cli.outputs`): ``new`` the postmortem. (``add`` appends to the --gold
#: file it reads, by design: :func:`rankgate.flows.incident.run_incident_add` writes it, atomically.)
OUTPUTS = {"new": {"out": Output("-o", required=True)}}


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


def request(args: argparse.Namespace) -> Any:
    from rankgate.flows.incident import IncidentAddRequest, IncidentNewRequest

    if args.incident_command == "new":
        return IncidentNewRequest(args.trace, request_id=args.request_id, gold=args.gold, id=args.id, date=args.date)
    return IncidentAddRequest(args.postmortem, args.gold, corpus=args.corpus)


def run(args: argparse.Namespace) -> int:
    return {"new": _new, "add": _add}[args.incident_command](args)


def _new(args: argparse.Namespace) -> int:
    from rankgate.cli.outputs import check_outputs
    from rankgate.flows.incident import run_incident_new
    from rankgate.render.incident import postmortem_markdown

    req = request(args)
    planned = check_outputs(args, OUTPUTS["new"], req)
    found = run_incident_new(req)
    planned.write({args.out: postmortem_markdown(found.trace, incident_id=found.incident_id, date=found.date)})
    sys.stdout.write(f"wrote {args.out}: fill every TODO, tick the failure-chain link and the lifecycle gap, then\n"
                     f"  rankgate incident add {args.out} --gold {args.gold or 'GOLD'}\n")
    return 0


def _add(args: argparse.Namespace) -> int:
    import os

    from rankgate.flows.incident import run_incident_add
    from rankgate.goldset.incident import pm_value

    added = run_incident_add(request(args))
    sys.stdout.write(f"added incident {pm_value(added.incident_id)} to {os.path.basename(args.gold)} as query "
                     f"{pm_value(added.query_id)} "
                     f"({added.failure_link}; lifecycle gap: {added.lifecycle_stage})\n")
    return 0
