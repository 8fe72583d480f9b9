"""``rankgate metrics``: list every metric with its definition, parameters and trec_eval name."""

from __future__ import annotations

import argparse
from typing import Any

HELP = "list the metrics, their parameters and exact definitions"


def add_parser(sub: Any) -> None:
    p = sub.add_parser("metrics", help=HELP, description=HELP + ".")
    p.add_argument("--markdown", action="store_true", help="print a markdown table (as in the README)")
    p.add_argument("--compat", choices=("ragas", "llamaindex", "trec_eval"), metavar="TOOL",
                   help="for each metric of TOOL (ragas, llamaindex, trec_eval), the rankgate spec that gives the same "
                        "per-query value, and when")


def run(args: argparse.Namespace) -> int:
    if args.compat:
        return _compat(args.compat, args.markdown)
    from rankgate.metrics import all_metrics

    rows = []
    for d in all_metrics():
        spec = d.name + ("@k" if d.cutoff != "never" and not getattr(d, "per_sample_k", False) else "")
        params = ", ".join(f"{p.name}={p.default}" for p in d.params.values())
        rows.append((spec, params, d.summary, d.formula, (d.trec_name or "").replace("{k}", "k")))
    if args.markdown:
        print("| metric | parameters | what it says | definition | trec_eval |")
        print("|---|---|---|---|---|")
        for spec, params, summary, formula, trec in rows:
            print(f"| `{spec}` | {params or '—'} | {summary} | {formula} | {trec or '—'} |")
        return 0
    for spec, params, summary, formula, trec in rows:
        print(spec + (f"  ({params})" if params else ""))
        print(f"    {summary}")
        print(f"    {formula}")
        if trec:
            print(f"    trec_eval: {trec}")
    return 0


def _compat(tool: str, markdown: bool) -> int:
    from rankgate.metrics.compat import compat_rows

    rows = compat_rows(tool)
    if markdown:
        print(f"| {tool} | rankgate | equal when |")
        print("|---|---|---|")
        for theirs, ours, when in rows:
            print(f"| `{theirs}` | `{ours}` | {when or '—'} |")
        return 0
    width = max([len(f"{tool} metric")] + [len(r[0]) for r in rows])
    spec_width = max([len("rankgate")] + [len(r[1]) for r in rows])
    print(f"{tool} metric".ljust(width) + "  " + "rankgate".ljust(spec_width) + "  equal when")
    for theirs, ours, when in rows:
        print(f"{theirs.ljust(width)}  {ours.ljust(spec_width)}  {when}".rstrip())
    if tool != "trec_eval":
        print("K: the length of the returned lists (similarity_top_k); N: any cutoff at least as long as the "
              "longest list")
    return 0
