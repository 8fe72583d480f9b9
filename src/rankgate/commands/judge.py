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

HELP = "label a pooling queue with a judge (relevance), or measure a judge against human labels (calibrate)"


def add_judge_arguments(p: argparse.ArgumentParser, *, repeats: bool = True) -> None:
    """The judge options every judged command takes (see docs/judges.md)."""
    from ..judges import MAX_REPEATS, MAX_RETRIES, MAX_WORKERS

    g = p.add_argument_group("judge")
    g.add_argument("--judge", default=None, metavar="NAME",
                   help="lexical (offline token-overlap baseline, the default), openai (any OpenAI-compatible "
                        "server) or package.module:Class (env RANKGATE_JUDGE)")
    g.add_argument("--judge-url", metavar="URL", help="OpenAI-compatible base URL, e.g. http://localhost:8000/v1 (env RANKGATE_JUDGE_URL)")
    g.add_argument("--judge-model", metavar="NAME", help="model name the server serves (env RANKGATE_JUDGE_MODEL)")
    g.add_argument("--judge-key-env", metavar="VAR", help="environment variable holding the API key (none for a local server; env RANKGATE_JUDGE_KEY_ENV)")
    g.add_argument("--workers", type=int, default=8, metavar="N",
                   help=f"calls in flight at once (default 8, at most {MAX_WORKERS})")
    g.add_argument("--timeout", type=float, default=60.0, metavar="S",
                   help="seconds one request may take in all, from connecting to the reply's last byte (default 60)")
    g.add_argument("--max-reply-bytes", type=int, default=None, metavar="N",
                   help="largest reply body read, after decompression (default 1000000); a larger one is a judge_error")
    g.add_argument("--retries", type=int, default=4, metavar="N", help=f"retries of a failed call (default 4, at most {MAX_RETRIES})")
    g.add_argument("--seed", type=int, default=0, help="seed sent with every call; sample i uses seed+i (default 0)")
    g.add_argument("--cache", metavar="DIR", help="judge cache folder (default $RANKGATE_CACHE_DIR or $XDG_CACHE_HOME/rankgate)")
    g.add_argument("--no-cache", action="store_true", help="neither read nor write the judge cache")
    g.add_argument("--refresh", action="store_true", help="ask again and overwrite cached answers")
    if repeats:
        g.add_argument("--repeats", type=int, default=1, metavar="N",
                       help=f"judge each item N times (seeds seed..seed+N-1) to measure the judge's variance "
                            f"(at most {MAX_REPEATS})")
    g.add_argument("--max-calls", type=int, default=None, metavar="N",
                   help="call budget of the run (default: none): once N calls were sent, every item left is a "
                        "judge_error 'call budget reached'; cache hits are free")
    g.add_argument("--dry-run", action="store_true", help="print calls, cache hits, approximate tokens and cost; call nothing")
    g.add_argument("--price-in", type=float, metavar="P", help="price per 1M input tokens: --dry-run estimates the cost, a run reports it from the server's usage")
    g.add_argument("--price-out", type=float, metavar="P", help="price per 1M output tokens (see --price-in)")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("judge", help=HELP, description=HELP + ". See docs/judges.md.")
    verbs = p.add_subparsers(dest="judge_command", metavar="ACTION", required=True, parser_class=type(p))
    r = verbs.add_parser("relevance", help="label each item of a pooling queue 2/1/0",
                         description="Label a pooling queue (rankgate pool) 2/1/0 with a judge. Exit 0; 2 bad input.")
    r.add_argument("queue", metavar="QUEUE", help="JSONL of {query_id, query, id, text}, as rankgate pool writes")
    r.add_argument("-o", "--out", metavar="FILE", help="labels JSONL ({query_id, id, grade}); required unless --dry-run")
    add_judge_arguments(r)
    c = verbs.add_parser("calibrate", help="agreement, weighted kappa, sensitivity/specificity against human labels",
                         description="Compare judge labels with human labels on the same items. Exit 0; 2 bad input.")
    c.add_argument("--human", required=True, metavar="JSONL", help="human labels {query_id, id, grade}")
    c.add_argument("--judge-labels", required=True, metavar="JSONL", help="the judge's labels (rankgate judge relevance -o)")
    c.add_argument("-o", "--out", metavar="FILE", help="write the calibration JSON here")
    c.add_argument("--task", default="context_relevance", help="the task the labels are for (default context_relevance)")
    c.add_argument("--relevant-at", type=int, default=1, choices=(1, 2),
                   help="grade from which an item counts as relevant for sensitivity/specificity (default 1)")
    c.add_argument("--weights", choices=("linear", "quadratic", "none"), default="linear",
                   help="kappa weights for graded labels (default linear)")
    c.add_argument("--confidence", type=float, default=0.95, help="interval level (default 0.95)")
    c.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples for kappa's interval (default 2000)")
    c.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    c.add_argument("--minimum", type=int, default=100, help="items below which a note says the sample is small (default 100)")


def request(args: argparse.Namespace) -> Any:
    """The flow's request the options describe: a RelevanceRequest or a CalibrationRequest."""
    from ..flows.judge import JudgeSpec
    from ..flows.judge import CalibrationRequest, RelevanceRequest

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
    from ..atomic import check_file, check_not_input, write_files
    from ..errors import UsageError
    from ..flows.judge import plan_relevance, run_relevance
    from ..judges import BUDGET_REACHED
    from ..judges.files import sidecar_path
    from ..report.judge import render_plan

    if not args.out and not args.dry_run:
        raise UsageError("give -o/--out FILE for the labels (or --dry-run to see what it would cost)")
    if args.out:
        check_file(args.out, option="--out")
        check_not_input(args.out, (args.queue,), option="--out")
        check_file(sidecar_path(args.out), option="--out")
    if args.dry_run:
        planned = plan_relevance(req)
        sys.stdout.write(render_plan([planned.plan], planned.identity, price_in=req.price_in, price_out=req.price_out,
                                     max_calls=planned.max_calls))
        return 0
    done = run_relevance(req)
    rows, meta = done.rows, done.meta
    write_files({args.out: "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                 sidecar_path(args.out): json.dumps(meta, indent=2, ensure_ascii=False) + "\n"})
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
    from ..atomic import check_file, check_not_input, write_text
    from ..flows.judge import run_calibration
    from ..report.judge import render_calibration

    if args.out:
        check_file(args.out, option="--out")
        check_not_input(args.out, (args.human, args.judge_labels), option="--out")
    body = run_calibration(req)
    sys.stdout.write(render_calibration(body, minimum=args.minimum))
    if body["not_judged"]:
        print(f"{body['not_judged']} human-labelled items have no judge label ({body['judge_errors']} judge errors); "
              f"they are left out", file=sys.stderr)
    if args.out:
        write_text(args.out, json.dumps({"calibration": body}, indent=2, ensure_ascii=False) + "\n")
        print(f"wrote {args.out}", file=sys.stderr)
    return 0
