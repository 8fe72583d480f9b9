"""``rankgate judge relevance|calibrate``: label a pooling queue 2/1/0, and measure a judge against humans.

``relevance QUEUE -o LABELS`` writes one ``{query_id, id, grade}`` line per queue item, in queue
order (a failed call: ``grade: null`` and ``judge_error``), and ``LABELS``' sidecar
``<name>.judge.json`` (the judge's identity, coverage, repeat variance, tokens); both as one unit.
``--dry-run`` prints calls, cache hits, approximate tokens and cost, calls nothing, writes nothing.
``calibrate --human H --judge-labels J [-o FILE]`` prints agreement, weighted κ, sensitivity,
specificity, Spearman and the largest disagreements, and writes the calibration JSON.
Judge options left out come from ``RANKGATE_JUDGE``, ``RANKGATE_JUDGE_URL``, ``RANKGATE_JUDGE_MODEL`` and
``RANKGATE_JUDGE_KEY_ENV`` when set (as for ``rankgate answers``).
Exit codes: 0 done (also with failed calls: they are rows, counted on stderr), 2 bad input or options.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rankgate._util.constraints import CONFIDENCE, RESAMPLES, SEED
from rankgate.cli.options import add_judge, add_out, add_param
from rankgate.cli.outputs import Output

HELP = "label a pooling queue with a judge (relevance), or measure a judge against human labels (calibrate)"


def _sidecar(labels: str) -> str:
    from rankgate.judges.files import sidecar_path

    return sidecar_path(labels)


#: What each action writes (:mod:`rankgate.cli.outputs`): ``relevance`` the labels and their sidecar beside them,
#: both or neither; ``calibrate`` the calibration file.
OUTPUTS = {"relevance": {"out": Output("--out", beside=_sidecar)}, "calibrate": {"out": Output("--out")}}


def add_parser(sub: Any) -> None:
    p = sub.add_parser("judge", help=HELP, description=HELP + ". See docs/judges.md.")
    verbs = p.add_subparsers(dest="judge_command", metavar="ACTION", required=True, parser_class=type(p))
    r = verbs.add_parser("relevance", help="label each item of a pooling queue 2/1/0",
                         description="Label a pooling queue (rankgate pool) 2/1/0 with a judge. Exit 0; 2 bad input.")
    r.add_argument("queue", metavar="QUEUE", help="JSONL of {query_id, query, id, text}, as rankgate pool writes")
    add_out(r, "labels JSONL ({query_id, id, grade}); required unless --dry-run", metavar="FILE")
    add_judge(r, repeats="to measure the judge's variance")
    c = verbs.add_parser("calibrate", help="agreement, weighted kappa, sensitivity/specificity against human labels",
                         description="Compare judge labels with human labels on the same items. Exit 0; 2 bad input.")
    c.add_argument("--human", required=True, metavar="JSONL", help="human labels {query_id, id, grade}")
    c.add_argument("--judge-labels", required=True, metavar="JSONL", help="the judge's labels (rankgate judge relevance -o)")
    add_out(c, "write the calibration JSON here", metavar="FILE")
    c.add_argument("--task", default="context_relevance", help="the task the labels are for (default context_relevance)")
    c.add_argument("--relevant-at", type=int, default=1, choices=(1, 2),
                   help="grade from which an item counts as relevant for sensitivity/specificity (default 1)")
    c.add_argument("--weights", choices=("linear", "quadratic", "none"), default="linear",
                   help="kappa weights for graded labels (default linear)")
    add_param(c, CONFIDENCE, help="interval level (default 0.95)")
    add_param(c, RESAMPLES, help="bootstrap resamples for kappa's interval (default 2000)")
    add_param(c, SEED, help="bootstrap seed (default 0)")
    c.add_argument("--minimum", type=int, default=100, help="items below which a note says the sample is small (default 100)")


def request(args: argparse.Namespace) -> Any:
    """The flow's request the options describe: a RelevanceRequest or a CalibrationRequest."""
    from rankgate.flows.judge import JudgeSpec
    from rankgate.flows.judge import CalibrationRequest, RelevanceRequest

    if args.judge_command == "relevance":
        spec = JudgeSpec(backend=args.judge, url=args.judge_url, model=args.judge_model, key_env=args.judge_key_env,
                         cache=args.cache, use_cache=not args.no_cache, refresh=args.refresh, workers=args.workers,
                         timeout=args.timeout, seed=args.seed, retries=args.retries, max_calls=args.max_calls,
                         max_reply_bytes=args.max_reply_bytes, progress=True)
        return RelevanceRequest(args.queue, judge=spec, repeats=args.repeats, price_in=args.price_in,
                                price_out=args.price_out)
    return CalibrationRequest(args.human, args.judge_labels, task=args.task, relevant_at=args.relevant_at,
                              weights=args.weights, confidence=args.confidence, resamples=args.resamples,
                              seed=args.seed)


def run(args: argparse.Namespace) -> int:
    req = request(args)
    return _relevance(args, req) if args.judge_command == "relevance" else _calibrate(args, req)


def _relevance(args: argparse.Namespace, req: Any) -> int:
    from rankgate.cli.outputs import check_outputs
    from rankgate.errors import UsageError
    from rankgate.flows.judge import plan_relevance, run_relevance
    from rankgate.judges import BUDGET_REACHED
    from rankgate.render.judge import render_plan

    if not args.out and not args.dry_run:
        raise UsageError("give -o/--out FILE for the labels (or --dry-run to see what it would cost)")
    outputs = check_outputs(args, OUTPUTS["relevance"], req)
    if args.dry_run:
        planned = plan_relevance(req)
        sys.stdout.write(render_plan([planned.plan], planned.identity, price_in=req.price_in, price_out=req.price_out,
                                     max_calls=planned.max_calls))
        return 0
    done = run_relevance(req)
    rows, meta = done.rows, done.meta
    outputs.write({args.out: "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                   _sidecar(args.out): json.dumps(meta, indent=2, ensure_ascii=False) + "\n"})
    print(f"wrote {args.out}: {meta['labelled']} of {len(rows)} items labelled by {meta['judge']['model']}"
          f" ({meta['cache_hits']} from the cache)", file=sys.stderr)
    if "cost" in meta:
        print(f"cost: {meta['cost']:,.4f} for {meta['tokens']['prompt']:,} prompt and "
              f"{meta['tokens']['completion']:,} completion tokens the server reported", file=sys.stderr)
    for warning in done.warnings:
        print(f"rankgate judge relevance: {warning}", file=sys.stderr)
    failed = [r for r in rows if r["grade"] is None and r.get("judge_error") != BUDGET_REACHED]
    if failed:  # (items the budget left out were said in the warning above)
        print(f"judge failed on {len(failed)} items (rows with judge_error), e.g. {failed[0]['query_id']} / "
              f"{failed[0]['id']}: {failed[0]['judge_error']}", file=sys.stderr)
    if req.repeats > 1:
        variance = done.variance
        share = "n/a" if variance.items == 0 else f"{variance.share:.1%}"
        print(f"repeat variance: {variance.changed} of {variance.items} items changed label across "
              f"{req.repeats} samples ({share})", file=sys.stderr)
    return 0


def _calibrate(args: argparse.Namespace, req: Any) -> int:
    from rankgate.cli.outputs import check_outputs
    from rankgate.flows.judge import run_calibration
    from rankgate.render.judge import render_calibration

    planned = check_outputs(args, OUTPUTS["calibrate"], req)
    body = run_calibration(req)
    sys.stdout.write(render_calibration(body, minimum=args.minimum))
    if body["not_judged"]:
        print(f"{body['not_judged']} human-labelled items have no judge label ({body['judge_errors']} judge errors); "
              f"they are left out", file=sys.stderr)
    if args.out:
        planned.write({args.out: json.dumps({"calibration": body}, indent=2, ensure_ascii=False) + "\n"})
        print(f"wrote {args.out}", file=sys.stderr)
    return 0
