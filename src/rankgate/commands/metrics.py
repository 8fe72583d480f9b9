"""``rankgate metrics``: list every metric with its definition, parameters and trec_eval name."""

from __future__ import annotations

import argparse
from typing import Any

HELP = "list the metrics, their parameters and exact definitions"


def add_parser(sub: Any) -> None:
    p = sub.add_parser("metrics", help=HELP, description=HELP + ".")
    p.add_argument("--markdown", action="store_true", help="print a markdown table (as in the README)")


def run(args: argparse.Namespace) -> int:
    from ..metrics import all_metrics

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
