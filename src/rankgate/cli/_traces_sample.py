"""``rankgate traces sample`` and ``rankgate gold sample``: production queries worth labelling, written
as gold-set candidates (see :mod:`rankgate.traces.sample` and docs/traces.md, "sample"). Exit 0;
2 bad input or options.

``add_arguments(parser)`` and ``run(args)`` are shared by both commands; ``rankgate traces`` wires
the ``sample`` action with :func:`add_parser`.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rankgate._util.constraints import SEED
from rankgate.cli.options import add_param, add_renamed, add_trace_field, trace_fields
from rankgate.cli.outputs import Output

#: What the action writes (:mod:`rankgate.cli.outputs`).
OUTPUTS = {"out": Output("-o", required=True)}
HELP = "write production queries worth labelling (low confidence, fallback, negative feedback) as gold candidates"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from rankgate.traces.formats.table import FORMAT_NAMES

    p.add_argument("--traces", required=True, nargs="+", metavar="PATH",
                   help="trace exports: files or folders (see docs/traces.md)")
    add_renamed(p, "--traces-format", old=("--format",), dest="format", choices=FORMAT_NAMES, metavar="FORMAT",
                help="override format detection: %(choices)s")
    p.add_argument("--field-map", metavar="YAML", help="where Langfuse/LangSmith rows keep each field, as a file")
    add_trace_field(p)
    p.add_argument("--on-error", choices=("error", "skip"), default="error",
                   help="a trace row that cannot be used: stop (default) or skip it and count it")
    p.add_argument("--abstention", metavar="YAML",
                   help="the calibrate-abstention file: requests whose top score is under its threshold are candidates")
    p.add_argument("--abstention-threshold", type=float, metavar="SCORE",
                   help="top-1 score under which a request is a low-confidence candidate (instead of --abstention)")
    p.add_argument("--corpus", metavar="PATH",
                   help="corpus manifest (JSONL, Parquet or a folder): each candidate chunk gets its text and "
                        "corpus status; chunks it lacks are marked \"in_corpus\": false and listed")
    p.add_argument("--n", type=int, default=None, help="how many candidates (default 50)")
    add_param(p, SEED, help="the sampling seed (default 0)")
    p.add_argument("--by", default=None, metavar="FIELDS",
                   help="request fields to stratify by besides reason and source (default: tenant)")
    p.add_argument("-o", "--out", required=True, metavar="JSONL", help="the candidates file to write")


def add_parser(verbs: Any, *, plan: bool = False) -> None:
    """The ``sample`` action under a command's sub-parsers; ``plan``: with ``--plan`` (``gold sample``)."""
    p = verbs.add_parser("sample", help=HELP, description=HELP + ". Exit 0; 2 bad input.")
    add_arguments(p)
    if plan:
        p.add_argument("--plan", metavar="CSV",
                       help="the plan.csv of 'rankgate gold plan -o': sample each segment's labels to add (its budget "
                            "share when the plan split one) from its production queries, instead of --n, --by and "
                            "the reasons")


def request(args: argparse.Namespace) -> Any:
    from rankgate.flows.traces import SampleRequest

    plan = getattr(args, "plan", None)
    if plan is not None and (args.n is not None or args.by is not None):
        from rankgate.errors import UsageError

        raise UsageError("--plan sets how many queries each segment gets; leave out --n and --by")
    by = "tenant" if args.by is None else args.by
    return SampleRequest(tuple(args.traces), format=args.format, field_map=args.field_map, on_error=args.on_error,
                         fields=trace_fields(args),
                         abstention=args.abstention, abstention_threshold=args.abstention_threshold,
                         corpus=args.corpus, n=50 if args.n is None else args.n, seed=args.seed,
                         by=tuple(f.strip() for f in by.split(",") if f.strip()), plan=plan)


def run(args: argparse.Namespace) -> int:
    import json

    from rankgate.cli.outputs import check_outputs
    from rankgate.flows.traces import run_sample

    req = request(args)
    planned = check_outputs(args, OUTPUTS, req)
    sampled = run_sample(req)
    recs = sampled.records
    planned.write({args.out: "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs)})
    if req.plan is not None:
        _plan_summary(args.out, sampled)
        return 0
    counts: dict[str, int] = {}
    for r in recs:
        counts[r["sample_reason"]] = counts.get(r["sample_reason"], 0) + 1
    detail = ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none found"
    skipped = f"; {sampled.skipped} unusable rows skipped" if sampled.skipped else ""
    note = ("" if sampled.threshold is not None else
            " (no --abstention or --abstention-threshold: low-confidence requests not sampled)")
    sys.stdout.write(f"wrote {len(recs)} candidates to {args.out} ({detail}){note}{skipped}; "
                     f"fill each grade, then rankgate gold validate\n")
    missing = sampled.missing
    if missing:
        shown = ", ".join(missing[:5]) + (" …" if len(missing) > 5 else "")
        sys.stdout.write(f"{len(missing)} candidate chunks are not in the corpus {args.corpus} (marked "
                         f"\"in_corpus\": false): {shown}\n")
    return 0


def _plan_summary(out: str, sampled: Any) -> None:
    """What ``gold sample --plan`` wrote, per segment, and the quotas it could not fill."""
    from rankgate.render.gold_plan import sample_lines

    sys.stdout.write("".join(line + "\n" for line in sample_lines(out, sampled)))
